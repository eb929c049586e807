"""Placement (TapFinger) generators: the paper's synthetic workloads.

Presets ``synthetic-3``, ``synthetic-6``, ``hetero-6`` and ``sjf-ablation`` (the ``testbed``
preset lives with the trace readers). See ``docs/generators.md``.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.model import MAX_ARRIVAL_STEP, MAX_ITEMS, MAX_PENDING, MAX_TIME, MAX_UNITS
from edgebench.instances.generators import (
    Param,
    as_choice,
    as_float,
    as_int,
    check_cells,
    check_seed,
    make_meta,
    r4,
    resolve_params,
)

GENERATOR = "edgebench.instances.generators.placement:generate_placement"
SOURCE = "TapFinger paper (seed 001)"
REFERENCE = ("Y. Li, X. Zhang, T. Zeng, J. Duan, C. Wu, D. Wu, X. Chen, 'Task Placement and Resource "
             "Allocation for Edge Machine Learning: A GNN-based Multi-Agent Reinforcement Learning Paradigm' "
             "(TapFinger); synthetic workload of the paper's evaluation and the authors' public simulator")

#: task types of the paper's synthetic workload: SyntheticType fields + minimum (cpu, gpu)
ML_TYPES: dict[str, dict[str, Any]] = {
    # image classification, resource-insensitive: 0.25 per step -> 4 steps whenever the minimum is met
    "ic": {"perf": {"base": 0.25, "gpu_scale": None, "cpu_per_gpu": None, "curvature": 1.2}, "minimum": [2, 1]},
    # language modelling, resource-sensitive: w = tanh(min(gpu, 2 cpu) / 16) * sqrt(1.2 - progress)
    "lm": {"perf": {"base": 0.0, "gpu_scale": 16.0, "cpu_per_gpu": 0.5, "curvature": 1.2}, "minimum": [2, 1]},
}
#: the task-selection ablation: both need 3 CPU + 3 GPU and gain nothing from more
SJF_TYPES: dict[str, dict[str, Any]] = {
    "short": {"perf": {"base": 1.0, "gpu_scale": None, "cpu_per_gpu": None, "curvature": 1.2}, "minimum": [3, 3]},
    "long": {"perf": {"base": 0.1, "gpu_scale": None, "cpu_per_gpu": None, "curvature": 1.2}, "minimum": [3, 3]},
}

_PRESETS: dict[str, dict[str, Any]] = {
    "synthetic-3": {"clusters": 3, "capacity": [16, 16], "rate": 2.0, "types": ML_TYPES, "noise": 0.1},
    "synthetic-6": {"clusters": 6, "capacity": [16, 16], "rate": 4.0, "types": ML_TYPES, "noise": 0.1},
    "hetero-6": {"clusters": 6, "capacity": [[4, 4], [8, 8], [12, 12], [16, 16], [24, 24], [32, 32]], "rate": 6.0,
                 "types": ML_TYPES, "noise": 0.1},
    "sjf-ablation": {"clusters": 3, "capacity": [16, 16], "rate": 2.0, "types": SJF_TYPES, "noise": 0.0},
}

PRESETS = tuple(_PRESETS)


def _check_capacity(v: Any) -> list:
    """[cpu, gpu] for every cluster, or one [cpu, gpu] per cluster."""
    def pair(x: Any) -> list[int]:
        if not isinstance(x, (list, tuple)) or len(x) != 2:
            raise TypeError("expected [cpu, gpu] or a list of [cpu, gpu] pairs")
        out = []
        for y in x:
            if isinstance(y, bool) or not isinstance(y, numbers.Integral) or not 0 < int(y) <= MAX_UNITS:
                raise ValueError(f"capacities must be integers in 1..{MAX_UNITS}")
            out.append(int(y))
        return out

    if isinstance(v, (list, tuple)) and len(v) > 0 and all(isinstance(x, (list, tuple)) for x in v):
        return [pair(x) for x in v]
    return pair(v)


def _spec(preset: str) -> dict[str, Param]:
    d = _PRESETS[preset]
    types = d["types"]

    def check_probs(v: Any) -> dict[str, float]:
        if not isinstance(v, dict) or not v:
            raise TypeError("expected a mapping type -> probability")
        out = {}
        for k, p in v.items():
            if k not in types:
                raise ValueError(f"unknown task type {k!r} (types: {', '.join(types)})")
            out[k] = as_float(0.0, 1.0)(p)
        total = sum(out.values())
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"probabilities must sum to 1, got {total}")
        return {k: out.get(k, 0.0) for k in types}

    return {
        "clusters": Param(d["clusters"], as_int(1, 1000), "number of edge clusters"),
        "capacity": Param(d["capacity"], _check_capacity, "[cpu, gpu] of every cluster or one pair per cluster"),
        "rate": Param(d["rate"], as_float(0.0, None, lo_open=True), "Poisson arrivals per step"),
        "num_tasks": Param(None, as_int(1, MAX_ITEMS), "number of tasks (default 64 x clusters)"),
        "type_probs": Param({k: 1.0 / len(types) for k in types}, check_probs, "probability of each task type"),
        "noise": Param(d["noise"], as_float(0.0, 1.0, hi_open=True), "progress noise amplitude"),
        "noise_model": Param("multiplicative", as_choice("multiplicative", "additive"),
                             "multiplicative: gain x (1 + eps); additive (the authors'): max(gain + eps, 0)"),
        "switching_overhead": Param(0.5, as_float(0.0, 1.0), "fraction of a step lost on re-allocation"),
        "pending_size": Param(10, as_int(1, MAX_PENDING), "pending window per cluster"),
        "step_seconds": Param(10.0, as_float(0.0, MAX_TIME, lo_open=True), "seconds per timestep"),
        "variant": Param("single", as_choice("single", "multi"), "single- or multi-task version"),
        "max_eligible": Param(3, as_int(1, 1000), "a task is visible to 1..max_eligible clusters"),
    }


def generate_placement(preset: str, *, seed: int = 0, **overrides: Any):
    """One TapFinger synthetic instance (see module doc and docs/generators.md)."""
    if preset not in _PRESETS:
        raise InputError(f"unknown placement preset {preset!r} (known: {', '.join(_PRESETS)})", field="preset")
    seed = check_seed(seed)
    spec = _spec(preset)
    # a per-cluster capacity list given without `clusters` sets the number of clusters
    if "capacity" in overrides and "clusters" not in overrides:
        cap = _check_capacity_or_error(preset, overrides["capacity"])
        if isinstance(cap[0], list):
            overrides = {**overrides, "clusters": len(cap)}
    p = resolve_params(preset, spec, overrides)
    n_clusters = p["clusters"]
    if isinstance(p["capacity"][0], list):
        if len(p["capacity"]) != n_clusters:
            key = "clusters" if "clusters" in overrides and "capacity" not in overrides else "capacity"
            raise InputError(f"capacity lists {len(p['capacity'])} clusters but clusters={n_clusters}", field=key)
        caps = [list(c) for c in p["capacity"]]
    else:
        caps = [list(p["capacity"]) for _ in range(n_clusters)]
    if p["num_tasks"] is None:
        p["num_tasks"] = 64 * n_clusters
    eligible = min(p["max_eligible"], n_clusters)
    check_cells(2 * n_clusters + p["num_tasks"] * (4 + eligible),
                f"2 x {n_clusters} clusters + {p['num_tasks']} tasks x (4 + {eligible} eligible)")
    types = _PRESETS[preset]["types"]
    names = list(types)
    probs = np.array([p["type_probs"][k] for k in names], dtype=float)
    probs = probs / probs.sum()

    fitting: dict[str, list[int]] = {}
    for k in names:
        mc, mg = types[k]["minimum"]
        fitting[k] = [n for n, (c, g) in enumerate(caps) if mc <= c and mg <= g]
        if probs[names.index(k)] > 0 and not fitting[k]:
            raise InputError(f"task type {k!r} needs {mc} cpu / {mg} gpu, more than any cluster has", field="capacity")

    rng = np.random.default_rng(seed)
    noise_seed = int(rng.integers(0, 2**31 - 1))
    tasks = []
    step = 0
    while len(tasks) < p["num_tasks"]:
        if step > MAX_ARRIVAL_STEP:
            raise InputError(f"rate {p['rate']:g} is too low: {p['num_tasks']} tasks do not arrive by step "
                             f"{MAX_ARRIVAL_STEP} (the format's limit)", field="rate")
        arrivals = int(rng.poisson(p["rate"]))
        for _ in range(min(arrivals, p["num_tasks"] - len(tasks))):
            kind = names[int(rng.choice(len(names), p=probs))]
            pool = fitting[kind]
            count = int(rng.integers(1, min(p["max_eligible"], len(pool)) + 1))
            chosen = sorted(int(c) for c in rng.choice(pool, size=count, replace=False))
            mc, mg = types[kind]["minimum"]
            tasks.append({"arrival": step, "type": kind, "minimum": {"cpu": mc, "gpu": mg}, "eligible": chosen})
        step += 1

    used = [k for k in names if p["type_probs"][k] > 0]
    perf_types = {}
    for k in used:
        t = types[k]["perf"]
        perf_types[k] = {key: (r4(val) if isinstance(val, float) else val) for key, val in t.items()}
    data = {
        "format_version": 1,
        "family": "placement",
        "id": f"placement-{preset}-s{seed}",
        "name": f"placement {preset}: {n_clusters} clusters, {len(tasks)} tasks, rate {p['rate']:g}/step "
                f"(seed {seed})",
        "meta": make_meta(GENERATOR, preset, _recorded(p), seed, SOURCE, REFERENCE),
        "placement": {
            "clusters": [{"name": f"c{n}", "capacity": {"cpu": c, "gpu": g}} for n, (c, g) in enumerate(caps)],
            "tasks": tasks,
            "performance": {"kind": "synthetic", "types": perf_types},
            "step_seconds": r4(p["step_seconds"]),
            "switching_overhead": r4(p["switching_overhead"]),
            "noise": r4(p["noise"]),
            "noise_seed": noise_seed,
            "noise_model": p["noise_model"],
            "pending_size": p["pending_size"],
            "variant": p["variant"],
        },
    }
    return io.instance_from_dict(data)


def _recorded(p: dict[str, Any]) -> dict[str, Any]:
    """The resolved parameters as recorded in ``meta.params``: ``noise_model`` (added after
    sets shipped) only when it is not the default, so that every earlier instance regenerates
    byte for byte."""
    return {k: v for k, v in p.items() if not (k == "noise_model" and v == "multiplicative")}


def _check_capacity_or_error(preset: str, v: Any) -> list:
    try:
        return _check_capacity(v)
    except (TypeError, ValueError) as exc:
        raise InputError(f"bad value {v!r} for parameter 'capacity' of preset {preset!r}: {exc}",
                         field="capacity") from None
