"""Trace readers: real public data turned into validated instances.

* :mod:`.alibaba`   Alibaba cluster-trace-gpu-v2023 (openb) pods + GPU nodes -> placement
* :mod:`.testbed`   TapFinger test-bed profiles -> table performance model / placement preset
* :mod:`.daggen`    daggen DOT DAGs -> offloading
* :mod:`.wfcommons` WfCommons WfFormat JSON -> offloading
* :mod:`.cli`       the ``edgebench convert`` sub-command

The trace files are never copied into the project: they are read from
:func:`default_traces_dir` (``../shared/traces`` beside the checkout, or ``$EDGEBENCH_TRACES``)
or from any path the caller gives. Every converted instance records in ``meta`` the
converter, all its parameters, the seed, the source files with their sha256 and the data's
terms of use. How each trace maps to the instance format is documented in ``docs/traces.md``.

This module also holds what the readers share: parameter checking and the offloading server
model used by both DAG readers (daggen and WfCommons).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from edgebench.errors import InputError
from edgebench.instances.model import find_cycle  # noqa: F401  (re-exported for the readers)

ENV_VAR = "EDGEBENCH_TRACES"

__all__ = [
    "ENV_VAR",
    "default_traces_dir",
    "trace_file",
    "file_sha256",
    "source_files",
    "merge_params",
    "params_tag",
    "RawTask",
    "RawWorkflow",
    "OFFLOADING_DEFAULTS",
    "build_offloading",
]


# --------------------------------------------------------------------------------------
# Where the traces are
# --------------------------------------------------------------------------------------


def default_traces_dir() -> Path | None:
    """The folder of real traces: ``$EDGEBENCH_TRACES`` if set (None if that is not a
    folder), else the first existing of ``./../shared/traces`` (from the working directory)
    and ``<repository root>/../shared/traces``; None when there is none."""
    env = os.environ.get(ENV_VAR)
    if env:
        p = Path(env).expanduser()
        return p if p.is_dir() else None
    repo_root = Path(__file__).resolve().parents[2]
    for cand in (Path.cwd() / ".." / "shared" / "traces", repo_root.parent / "shared" / "traces"):
        if cand.is_dir():
            return cand.resolve()
    return None


def trace_file(name: str, given: str | os.PathLike | None = None, *, what: str = "trace file") -> Path:
    """``given`` if not None, else ``default_traces_dir()/name``; InputError saying where it
    looked when the file does not exist."""
    if given is not None:
        p = Path(given)
        if not p.is_file():
            raise InputError(f"{what} not found", file=str(p))
        return p
    base = default_traces_dir()
    if base is None:
        raise InputError(f"{what} {name!r} not given and no traces folder found (looked for ${ENV_VAR}, "
                         f"{Path.cwd() / '..' / 'shared' / 'traces'} and "
                         f"{Path(__file__).resolve().parents[3] / 'shared' / 'traces'})")
    p = base / name
    if not p.is_file():
        raise InputError(f"{what} not found in the traces folder {base}", file=str(p))
    return p


# --------------------------------------------------------------------------------------
# Provenance
# --------------------------------------------------------------------------------------


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None
    return h.hexdigest()


def source_files(paths: Iterable[str | os.PathLike]) -> list[dict[str, str]]:
    """``[{"name": file name, "sha256": ...}]`` for the meta of a converted instance."""
    return [{"name": Path(p).name, "sha256": file_sha256(p)} for p in paths]


# --------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------


def merge_params(defaults: Mapping[str, Any], given: Mapping[str, Any], *, what: str) -> dict[str, Any]:
    """defaults updated by ``given``; an unknown key is an InputError naming it."""
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise InputError(f"unknown parameter {unknown[0]!r} for {what} (known: {', '.join(sorted(defaults))})",
                         field=f"params.{unknown[0]}")
    out = dict(defaults)
    out.update(given)
    return out


def p_int(params: Mapping[str, Any], name: str, *, minimum: int | None = None, maximum: int | None = None,
          optional: bool = False) -> int | None:
    v = params[name]
    if v is None and optional:
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise InputError(f"expected an integer, got {v!r}", field=f"params.{name}")
    if minimum is not None and v < minimum:
        raise InputError(f"must be at least {minimum}, got {v}", field=f"params.{name}")
    if maximum is not None and v > maximum:
        raise InputError(f"must be at most {maximum}, got {v}", field=f"params.{name}")
    return v


def p_float(params: Mapping[str, Any], name: str, *, minimum: float | None = None, positive: bool = False,
            maximum: float | None = None, below: float | None = None, optional: bool = False) -> float | None:
    v = params[name]
    if v is None and optional:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise InputError(f"expected a finite number, got {v!r}", field=f"params.{name}")
    v = float(v)
    if positive and v <= 0:
        raise InputError(f"must be positive, got {v:g}", field=f"params.{name}")
    if minimum is not None and v < minimum:
        raise InputError(f"must be at least {minimum:g}, got {v:g}", field=f"params.{name}")
    if maximum is not None and v > maximum:
        raise InputError(f"must be at most {maximum:g}, got {v:g}", field=f"params.{name}")
    if below is not None and v >= below:
        raise InputError(f"must be below {below:g}, got {v:g}", field=f"params.{name}")
    return v


def p_bool(params: Mapping[str, Any], name: str) -> bool:
    v = params[name]
    if isinstance(v, str) and v.lower() in ("true", "false", "yes", "no", "1", "0"):
        return v.lower() in ("true", "yes", "1")
    if not isinstance(v, bool):
        raise InputError(f"expected true or false, got {v!r}", field=f"params.{name}")
    return v


def params_tag(params: Mapping[str, Any], defaults: Mapping[str, Any]) -> str:
    """"" when every parameter has its default, else "-p" + 6 hex digits of their hash: keeps
    instance ids distinct when the same trace is converted with other parameters."""
    changed = {k: json_safe(v) for k, v in params.items() if k in defaults and v != defaults[k]}
    if not changed:
        return ""
    text = json.dumps(changed, sort_keys=True, default=str)
    return "-p" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:6]


def json_safe(value: Any) -> Any:
    """Parameters as recorded in meta: paths become strings, tuples lists."""
    if isinstance(value, os.PathLike):
        return str(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


# --------------------------------------------------------------------------------------
# Shared by the DAG readers: raw workflows and the offloading server model
# --------------------------------------------------------------------------------------


@dataclass
class RawTask:
    """One task read from a DAG trace, before the server model is applied."""

    name: str
    #: execution time in seconds on a speed-1 server
    work: float
    cpu: float | None = None
    mem: float | None = None
    #: None: the converter draws one of its generic image names
    image: str | None = None
    #: bytes read from the workflow's source before the task starts (entry tasks only)
    input_bytes: float = 0.0


@dataclass
class RawWorkflow:
    name: str
    tasks: list[RawTask]
    #: (src, dst, bytes) by task index
    edges: list[tuple[int, int, float]] = field(default_factory=list)
    file: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


#: parameters of the offloading server model shared by daggen and WfCommons conversions
OFFLOADING_DEFAULTS: dict[str, Any] = {
    "servers": 4,            # edge servers (a cloud is added unless cloud=false)
    "cloud": True,
    "speed_min": 1.0,        # edge server speeds ~ U[speed_min, speed_max]
    "speed_max": 2.0,
    "cloud_speed": 4.0,
    "cloud_distance": 10.0,  # distance cloud <-> every edge server
    "edge_cpu_min": 4,       # edge server CPU cores ~ U{edge_cpu_min..edge_cpu_max}
    "edge_cpu_max": 8,
    "edge_mem_min": 4,       # edge server memory ~ U{edge_mem_min..edge_mem_max}
    "edge_mem_max": 8,
    "data_unit": 1e6,        # bytes per data unit (MB)
    "bandwidth": 100.0,      # data units per second
    "image_prob": 0.5,       # each edge server holds each image with this probability
    "image_pull_delay": 0.5,
    "arrival_rate": None,    # several workflows: None = all arrive at 0, else Poisson (per second)
}


def build_offloading(workflows: Sequence[RawWorkflow], params: Mapping[str, Any], rng,
                     generic_images: Sequence[str] = ()) -> dict[str, Any]:
    """The offloading payload (plain dict) for ``workflows`` under the server model.

    Random draws, in this order: edge server positions (U[0,1]^2), speeds, CPU, memory; the
    image of every task without one (uniform over ``generic_images``); which images each edge
    server holds; each workflow's source server; the arrival gaps.
    """
    n_edge = p_int(params, "servers", minimum=1)
    cloud = p_bool(params, "cloud")
    s_lo = p_float(params, "speed_min", positive=True)
    s_hi = p_float(params, "speed_max", positive=True)
    if s_hi < s_lo:
        raise InputError(f"speed_max {s_hi:g} is below speed_min {s_lo:g}", field="params.speed_max")
    cloud_speed = p_float(params, "cloud_speed", positive=True)
    cloud_dist = p_float(params, "cloud_distance", minimum=0.0)
    c_lo = p_int(params, "edge_cpu_min", minimum=1)
    c_hi = p_int(params, "edge_cpu_max", minimum=c_lo)
    m_lo = p_int(params, "edge_mem_min", minimum=1)
    m_hi = p_int(params, "edge_mem_max", minimum=m_lo)
    unit = p_float(params, "data_unit", positive=True)
    bandwidth = p_float(params, "bandwidth", positive=True)
    image_prob = p_float(params, "image_prob", minimum=0.0, maximum=1.0)
    pull = p_float(params, "image_pull_delay", minimum=0.0)
    rate = p_float(params, "arrival_rate", positive=True, optional=True)

    pos = rng.uniform(0.0, 1.0, size=(n_edge, 2))
    speeds = rng.uniform(s_lo, s_hi, size=n_edge)
    cpus = rng.integers(c_lo, c_hi + 1, size=n_edge)
    mems = rng.integers(m_lo, m_hi + 1, size=n_edge)

    task_images: list[list[str]] = []
    for wf in workflows:
        row = []
        for t in wf.tasks:
            if t.image is not None:
                row.append(t.image)
            else:
                if not generic_images:
                    raise InputError(f"task {t.name!r} has no image and no generic images are configured",
                                     file=wf.file)
                row.append(generic_images[int(rng.integers(len(generic_images)))])
        task_images.append(row)
    all_images = sorted(set(generic_images) | {img for row in task_images for img in row})

    held: list[list[str]] = []
    for _ in range(n_edge):
        mask = rng.random(len(all_images)) < image_prob
        if all_images and not mask.any() and image_prob > 0:
            mask[int(rng.integers(len(all_images)))] = True
        held.append([img for img, m in zip(all_images, mask) if m])

    servers = []
    for i in range(n_edge):
        servers.append({"name": f"edge{i}", "cpu": float(cpus[i]), "mem": float(mems[i]),
                        "images": held[i], "speed": round(float(speeds[i]), 4), "is_cloud": False})
    if cloud:
        servers.append({"name": "cloud", "cpu": 0.0, "mem": 0.0, "images": [], "speed": cloud_speed,
                        "is_cloud": True})
    s = len(servers)
    distance = [[0.0] * s for _ in range(s)]
    for i in range(n_edge):
        for j in range(n_edge):
            if i != j:
                distance[i][j] = round(float(math.dist(pos[i], pos[j])), 4)
    if cloud:
        for i in range(n_edge):
            distance[i][n_edge] = cloud_dist
            distance[n_edge][i] = cloud_dist

    sources = [int(rng.integers(n_edge)) for _ in workflows]
    arrivals = [0.0] * len(workflows)
    if rate is not None:
        t = 0.0
        for w in range(1, len(workflows)):
            t += float(rng.exponential(1.0 / rate))
            arrivals[w] = round(t, 6)

    out_wfs = []
    for w, wf in enumerate(workflows):
        tasks = []
        for k, t in enumerate(wf.tasks):
            cpu = 1.0 if t.cpu is None else float(t.cpu)
            mem = 1.0 if t.mem is None else float(t.mem)
            fn = {"image": task_images[w][k], "cpu": cpu, "mem": mem, "exec_time": float(t.work)}
            task = {"name": t.name, "functions": [fn]}
            if t.input_bytes > 0:
                task["input_data"] = t.input_bytes / unit
            tasks.append(task)
        edges = [{"src": a, "dst": b, "data": float(d) / unit} for a, b, d in sorted(wf.edges)]
        out_wfs.append({"name": wf.name, "arrival": arrivals[w], "source": sources[w], "tasks": tasks,
                        "edges": edges})
    return {"servers": servers, "distance": distance, "bandwidth": bandwidth, "image_pull_delay": pull,
            "workflows": out_wfs}
