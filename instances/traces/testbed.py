"""TapFinger test-bed profiles -> measured (table) performance model and the ``testbed``
placement preset.

The profiles file has no header; each line is one measured run: task type, CPU cores, GPUs,
completion seconds, then one quoted ``"(elapsed_seconds, validation_loss)"`` pair per epoch
(none for inference). :func:`read_profiles` averages the repeats of each (type, cpu, gpu)
cell and checks that every type covers a full cpu x gpu grid; :func:`generate_testbed`
builds the paper's test-bed setting on top of it. Choices: docs/traces.md.
"""

from __future__ import annotations

import csv
import math
import os
import re
from typing import Any

import numpy as np

from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.model import Instance
from edgebench.instances.traces import (
    json_safe,
    merge_params,
    p_float,
    p_int,
    source_files,
    trace_file,
)

PROFILES_FILE = "tapfinger_testbed_profiles.csv"
REFERENCE = ("Y. Li, X. Zhang, T. Zeng, J. Duan, C. Wu, D. Wu, X. Chen: Task Placement and Resource Allocation "
             "for Edge Machine Learning: A GNN-based Multi-Agent Reinforcement Learning Paradigm (TapFinger)")
TERMS = f"research use; cite {REFERENCE}"
TRACE = "TapFinger test-bed task profiles (Table 2 of the paper)"

_PAIR = re.compile(r"^\(\s*([^,()]+?)\s*,\s*([^,()]+?)\s*\)$")

COLUMNS = ("task", "cpu", "gpu", "completion_seconds")

DEFAULTS: dict[str, Any] = {
    "profiles": None,          # path; None = default_traces_dir()/tapfinger_testbed_profiles.csv
    "clusters": 3,
    "capacity": {"cpu": 16, "gpu": 8},
    "rate": None,              # Poisson arrivals per step; None = 0.5 x clusters (1.5 for 3, 3 for 6)
    "num_tasks": None,         # None = 64 x clusters
    "types": None,             # None = every profiled type
    "min_cpu": 2,
    "min_gpu": 1,
    "max_eligible": 3,         # each task is visible to a random 1..max_eligible clusters
    "step_seconds": 10.0,
    "switching_overhead": 0.5,
    "noise": 0.0,
    "noise_seed": None,        # None = the seed
    "pending_size": 10,
    "variant": "single",
}


def _num(value: str, *, file: str, row: int, column: str, integer: bool) -> float | int:
    v = value.strip()
    if v == "":
        raise InputError("empty value", file=file, field=f"row {row}, column {column}")
    try:
        x = float(v)
    except ValueError:
        raise InputError(f"not a number: {v!r}", file=file, field=f"row {row}, column {column}") from None
    if not math.isfinite(x):
        raise InputError(f"not a finite number: {v!r}", file=file, field=f"row {row}, column {column}")
    if integer:
        if not x.is_integer():
            raise InputError(f"not an integer: {v!r}", file=file, field=f"row {row}, column {column}")
        x = int(x)
    if x <= 0:
        raise InputError(f"must be positive, got {v}", file=file, field=f"row {row}, column {column}")
    return x


def read_runs(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Every measured run: ``{"row", "task", "cpu", "gpu", "seconds", "epochs": [(elapsed, loss)]}``.
    Rows are lines of the file (1-based); columns are task, cpu, gpu, completion_seconds, then
    epoch 1, epoch 2, ..."""
    file = str(path)
    try:
        fh = open(path, newline="", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=file) from None
    runs = []
    with fh:
        reader = csv.reader(fh)
        try:
            for cells in reader:
                row = reader.line_num
                if not cells or all(not c.strip() for c in cells):
                    continue
                if len(cells) < 4:
                    raise InputError(f"{len(cells)} values; expected task, cpu, gpu, completion_seconds",
                                     file=file, field=f"row {row}, column {COLUMNS[len(cells)]}")
                task = cells[0].strip()
                if not task:
                    raise InputError("empty task type", file=file, field=f"row {row}, column task")
                cpu = _num(cells[1], file=file, row=row, column="cpu", integer=True)
                gpu = _num(cells[2], file=file, row=row, column="gpu", integer=True)
                secs = _num(cells[3], file=file, row=row, column="completion_seconds", integer=False)
                epochs = []
                for k, cell in enumerate(cells[4:], start=1):
                    m = _PAIR.match(cell.strip())
                    try:
                        if m is None:
                            raise ValueError
                        pair = (float(m.group(1)), float(m.group(2)))
                    except ValueError:
                        raise InputError(f"expected \"(elapsed_seconds, loss)\", got {cell!r}", file=file,
                                         field=f"row {row}, column epoch {k}") from None
                    epochs.append(pair)
                runs.append({"row": row, "task": task, "cpu": cpu, "gpu": gpu, "seconds": secs, "epochs": epochs})
        except csv.Error as exc:
            raise InputError(f"malformed CSV: {exc}", file=file, field=f"row {reader.line_num}") from None
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text: {exc.reason}", file=file) from None
    if not runs:
        raise InputError("no runs in the file", file=file)
    return runs


def read_profiles(path: str | os.PathLike) -> dict[str, Any]:
    """The TablePerformance payload dict: ``{"kind": "table", "types": {name: {"entries":
    [{"cpu", "gpu", "seconds"}]}}}``, seconds = mean completion time over the repeats of a
    cell, entries sorted by (cpu, gpu). A type whose cells do not form a full cpu x gpu grid
    is an InputError naming the first missing cell."""
    file = str(path)
    runs = read_runs(path)
    cells: dict[str, dict[tuple[int, int], list[float]]] = {}
    for r in runs:
        cells.setdefault(r["task"], {}).setdefault((r["cpu"], r["gpu"]), []).append(r["seconds"])
    types = {}
    for name in sorted(cells):
        grid = cells[name]
        cpus = sorted({c for c, _ in grid})
        gpus = sorted({g for _, g in grid})
        for c in cpus:
            for g in gpus:
                if (c, g) not in grid:
                    raise InputError(f"type {name!r} has no run at cpu {c} x gpu {g}: the profile must cover the "
                                     f"full grid cpu {cpus[0]}..{cpus[-1]} x gpu {gpus[0]}..{gpus[-1]}",
                                     file=file, field=f"type {name}, cpu {c}, gpu {g}")
        entries = [{"cpu": c, "gpu": g, "seconds": float(np.mean(grid[(c, g)]))} for c in cpus for g in gpus]
        types[name] = {"entries": entries}
    return {"kind": "table", "types": types}


def profile_repeats(path: str | os.PathLike) -> dict[str, int]:
    """Smallest number of repeats per cell, per type."""
    counts: dict[str, dict[tuple[int, int], int]] = {}
    for r in read_runs(path):
        d = counts.setdefault(r["task"], {})
        d[(r["cpu"], r["gpu"])] = d.get((r["cpu"], r["gpu"]), 0) + 1
    return {name: min(d.values()) for name, d in sorted(counts.items())}


def _capacities(value: Any, n: int) -> list[dict[str, int]]:
    def one(v: Any, field: str) -> dict[str, int]:
        if isinstance(v, dict):
            if set(v) - {"cpu", "gpu"} or not {"cpu", "gpu"} <= set(v):
                raise InputError("a capacity is {\"cpu\": int, \"gpu\": int}", field=field)
            c, g = v["cpu"], v["gpu"]
        elif isinstance(v, (list, tuple)) and len(v) == 2 and not any(isinstance(x, (list, dict)) for x in v):
            c, g = v
        else:
            raise InputError(f"a capacity is {{\"cpu\": int, \"gpu\": int}} or [cpu, gpu], got {v!r}", field=field)
        out = {}
        for key, x in (("cpu", c), ("gpu", g)):
            if isinstance(x, bool) or not isinstance(x, int) or x < 1:
                raise InputError(f"{key} must be a positive integer, got {x!r}", field=field)
            out[key] = x
        return out

    if isinstance(value, (list, tuple)) and value and all(isinstance(v, (dict, list, tuple)) for v in value):
        if len(value) != n:
            raise InputError(f"{len(value)} capacities for {n} clusters", field="params.capacity")
        return [one(v, f"params.capacity[{i}]") for i, v in enumerate(value)]
    cap = one(value, "params.capacity")
    return [dict(cap) for _ in range(n)]


def poisson_arrivals(rng: np.random.Generator, rate: float, count: int) -> list[int]:
    """Arrival steps of ``count`` tasks when each step brings Poisson(rate) new tasks."""
    out: list[int] = []
    t = 0
    while len(out) < count:
        k = int(rng.poisson(rate))
        out.extend([t] * min(k, count - len(out)))
        t += 1
    return out


def generate_testbed(*, seed: int = 0, **overrides: Any) -> Instance:
    """The paper's test-bed setting as a placement instance (preset ``testbed``): 3 clusters
    of 16 CPU / 8 GPU, Poisson arrivals at 1.5 per step (3 for 6 clusters), 64 tasks per
    cluster, types uniform over the profiled ones, minimum 2 CPU + 1 GPU, each task eligible
    on a random 1..3 clusters, 10 s steps, switching overhead 0.5, no noise, pending window
    10, performance = the measured table. Unknown override key -> InputError naming it."""
    p = merge_params(DEFAULTS, overrides, what="the testbed preset")
    seed = p_int({"seed": seed}, "seed", minimum=0)
    path = trace_file(PROFILES_FILE, p["profiles"], what="test-bed profiles")
    perf = read_profiles(path)

    n = p_int(p, "clusters", minimum=1)
    caps = _capacities(p["capacity"], n)
    rate = p_float(p, "rate", positive=True, optional=True)
    if rate is None:
        rate = 0.5 * n
    num_tasks = p_int(p, "num_tasks", minimum=1, optional=True)
    if num_tasks is None:
        num_tasks = 64 * n
    min_cpu = p_int(p, "min_cpu", minimum=0)
    min_gpu = p_int(p, "min_gpu", minimum=0)
    max_elig = p_int(p, "max_eligible", minimum=1)
    step_seconds = p_float(p, "step_seconds", positive=True)
    overhead = p_float(p, "switching_overhead", minimum=0.0, maximum=1.0)
    noise = p_float(p, "noise", minimum=0.0, below=1.0)
    noise_seed = p_int(p, "noise_seed", minimum=0, optional=True)
    if noise_seed is None:
        noise_seed = seed
    pending = p_int(p, "pending_size", minimum=1)
    if p["variant"] not in ("single", "multi"):
        raise InputError(f"must be 'single' or 'multi', got {p['variant']!r}", field="params.variant")
    types = p["types"]
    if types is None:
        types = sorted(perf["types"])
    else:
        if isinstance(types, str):
            types = [types]
        if not isinstance(types, (list, tuple)) or not types:
            raise InputError(f"expected a non-empty list of type names, got {types!r}", field="params.types")
        for t in types:
            if t not in perf["types"]:
                raise InputError(f"type {t!r} is not in the profiles ({', '.join(sorted(perf['types']))})",
                                 field="params.types")
        types = list(types)
    perf = {"kind": "table", "types": {t: perf["types"][t] for t in sorted(set(types))}}

    rng = np.random.default_rng(seed)
    arrivals = poisson_arrivals(rng, rate, num_tasks)
    kinds = rng.integers(len(types), size=num_tasks)
    tasks = []
    for j in range(num_tasks):
        k = int(rng.integers(1, min(max_elig, n) + 1))
        eligible = sorted(int(c) for c in rng.choice(n, size=k, replace=False))
        tasks.append({"arrival": arrivals[j], "type": types[int(kinds[j])],
                      "minimum": {"cpu": min_cpu, "gpu": min_gpu}, "eligible": eligible})

    payload = {
        "clusters": [{"name": f"cluster{i}", "capacity": caps[i]} for i in range(n)],
        "tasks": tasks,
        "performance": perf,
        "step_seconds": step_seconds,
        "switching_overhead": overhead,
        "noise": noise,
        "noise_seed": noise_seed,
        "pending_size": pending,
        "variant": p["variant"],
    }
    recorded = dict(p, profiles=path.name, capacity=caps, rate=rate, num_tasks=num_tasks, types=types,
                    noise_seed=noise_seed)
    meta = {
        "generator": "edgebench.instances.traces.testbed:generate_testbed",
        "preset": "testbed",
        "params": json_safe(recorded),
        "seed": seed,
        "source": {"trace": TRACE, "files": source_files([path])},
        "reference": REFERENCE,
        "terms": TERMS,
    }
    data = {
        "format_version": 1,
        "family": "placement",
        "id": f"placement-testbed-s{seed}",
        "name": f"TapFinger test-bed: {num_tasks} tasks on {n} clusters (seed {seed})",
        "meta": meta,
        "placement": payload,
    }
    return io.instance_from_dict(data, file=str(path))


__all__ = ["read_runs", "read_profiles", "profile_repeats", "generate_testbed", "poisson_arrivals", "DEFAULTS",
           "PROFILES_FILE"]
