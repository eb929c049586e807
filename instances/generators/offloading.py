"""Offloading (patent) generators: random workflow DAGs on edge servers.

Presets ``heft-random`` (Topcuoglu et al.'s random DAGs in the classic exec_times / edge
cost form), ``daggen`` (a daggen-style DAG on edge servers with cached images plus a
cloud) and ``edge-poisson`` (a Poisson stream of small daggen-style workflows). The
patent's worked example is in :mod:`edgebench.instances.generators.patent`. See
``docs/generators.md``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.model import MAX_ITEMS, MAX_TIME
from edgebench.instances.generators import (
    Param,
    as_bool,
    as_float,
    as_int,
    as_range,
    check_cells,
    check_seed,
    make_meta,
    r4,
    resolve_params,
)

GENERATOR = "edgebench.instances.generators.offloading:generate_offloading"
SOURCE_PATENT = "workflow-offloading patent (seed 003)"
REF_PATENT = "一种基于马尔可夫决策过程的工作流任务卸载方法 (a workflow task offloading method based on a Markov decision process)"
REF_HEFT = ("H. Topcuoglu, S. Hariri, M.-Y. Wu, 'Performance-Effective and Low-Complexity Task Scheduling for "
            "Heterogeneous Computing', IEEE TPDS 13(3), 2002: random graph generator")
REF_DAGGEN = ("F. Suter, daggen: a synthetic task graph generator (https://github.com/frs69wq/daggen); parameters "
              "as in the DAG-offloading study whose DAGs are in traces/daggen_dags")

PRESETS = ("heft-random", "daggen", "edge-poisson")


# --------------------------------------------------------------------------------------
# heft-random
# --------------------------------------------------------------------------------------


def _heft_spec() -> dict[str, Param]:
    return {
        "tasks": Param(20, as_int(1, MAX_ITEMS), "v: number of tasks"),
        "alpha": Param(1.0, as_float(0.0, None, lo_open=True), "shape: ~sqrt(v)/alpha levels of mean width "
                                                                 "alpha*sqrt(v)"),
        "out_degree": Param(3, as_int(1, 100), "maximum children drawn per task"),
        "ccr": Param(1.0, as_float(0.0, None), "mean communication cost / mean computation cost"),
        "beta": Param(0.5, as_float(0.0, 2.0), "heterogeneity of the per-server execution times"),
        "w_dag": Param(20.0, as_float(0.0, MAX_TIME, lo_open=True), "mean computation cost"),
        "servers": Param(3, as_int(1, 1000), "number of (identical-capacity) processors"),
    }


def heft_levels(rng: np.random.Generator, v: int, alpha: float) -> list[list[int]]:
    """Tasks 0..v-1 split into levels: widths drawn uniformly (mean alpha*sqrt(v)) until v
    tasks exist, so the height averages sqrt(v)/alpha (Topcuoglu et al.)."""
    mean_w = alpha * math.sqrt(v)
    hi = max(1.0, 2.0 * mean_w - 1.0)
    levels: list[list[int]] = []
    t = 0
    while t < v:
        w = max(1, int(round(rng.uniform(1.0, hi))))
        w = min(w, v - t)
        levels.append(list(range(t, t + w)))
        t += w
    return levels


def layered_edges(rng: np.random.Generator, levels: list[list[int]], out_degree: int) -> list[tuple[int, int]]:
    """Edges of a layered DAG: every task below the first level gets a parent in the level
    just above (preferring parents with fewer than out_degree children); then each task
    draws a target out-degree in 1..out_degree and gets children from the later levels."""
    children: dict[int, set[int]] = {t: set() for lv in levels for t in lv}
    for i in range(1, len(levels)):
        for t in levels[i]:
            above = levels[i - 1]
            room = [u for u in above if len(children[u]) < out_degree] or above
            u = room[int(rng.integers(len(room)))]
            children[u].add(t)
    for i, lv in enumerate(levels[:-1]):
        later = [t for lv2 in levels[i + 1:] for t in lv2]
        for u in lv:
            want = int(rng.integers(1, out_degree + 1))
            cands = [t for t in later if t not in children[u]]
            extra = min(max(0, want - len(children[u])), len(cands))
            if extra:
                for idx in rng.choice(len(cands), size=extra, replace=False):
                    children[u].add(cands[int(idx)])
    return sorted((u, t) for u, ch in children.items() for t in ch)


def _heft(preset: str, seed: int, p: dict[str, Any]) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    v, s = p["tasks"], p["servers"]
    levels = heft_levels(rng, v, p["alpha"])
    edges = layered_edges(rng, levels, p["out_degree"])
    w = [float(rng.uniform(0.0, 2.0 * p["w_dag"])) for _ in range(v)]
    beta = p["beta"]
    exec_times = [[r4(w[t] * rng.uniform(1.0 - beta / 2.0, 1.0 + beta / 2.0)) for _ in range(s)] for t in range(v)]
    costs = [r4(rng.uniform(0.0, 2.0 * p["ccr"] * p["w_dag"])) for _ in edges]
    tasks = [{"name": f"t{t}", "functions": [{"image": "heft", "cpu": 1.0, "mem": 1.0, "exec_time": r4(w[t])}]}
             for t in range(v)]
    servers = [{"name": f"p{i}", "cpu": 1.0, "mem": 1.0, "images": ["heft"], "speed": 1.0} for i in range(s)]
    distance = [[0.0 if i == j else 1.0 for j in range(s)] for i in range(s)]
    workflow = {"name": f"heft-v{v}", "arrival": 0.0, "source": 0, "tasks": tasks,
                "edges": [{"src": a, "dst": b, "data": 0.0, "cost": c} for (a, b), c in zip(edges, costs)],
                "exec_times": exec_times}
    return {
        "id": f"offloading-{preset}-s{seed}",
        "name": f"offloading {preset}: {v} tasks in {len(levels)} levels, {len(edges)} edges, {s} servers "
                f"(seed {seed})",
        "meta": make_meta(GENERATOR, preset, p, seed, "Topcuoglu et al. 2002 (HEFT)", REF_HEFT),
        "offloading": {"servers": servers, "distance": distance, "bandwidth": 1.0, "image_pull_delay": 0.0,
                       "workflows": [workflow]},
    }


# --------------------------------------------------------------------------------------
# daggen-style
# --------------------------------------------------------------------------------------


def _daggen_spec(preset: str) -> dict[str, Param]:
    spec = {
        "tasks": Param(20 if preset == "daggen" else 10, as_int(1, MAX_ITEMS), "n: tasks per workflow"),
        "fat": Param(0.6, as_float(0.0, 1.0, lo_open=True), "width: n**fat tasks per level on average"),
        "density": Param(0.7, as_float(0.0, 1.0), "parents per task: 1 + U[0, density x previous level width]"),
        "regular": Param(0.5, as_float(0.0, 1.0), "level widths vary within +-(1 - regular) of the mean"),
        "jump": Param(1, as_int(1, 100), "parents come from the jump levels above"),
        "ccr": Param(0.4, as_float(0.0, None), "transfer time at distance 1 / source's execution time at speed 1"),
        "mindata": Param(5.0, as_float(0.0, None, lo_open=True), "task data size low (MB)"),
        "maxdata": Param(50.0, as_float(0.0, None, lo_open=True), "task data size high (MB)"),
        "seconds_per_mb": Param(0.05, as_float(0.0, None, lo_open=True), "execution seconds per MB at speed 1"),
        "images": Param(4, as_int(1, 1000), "function image types img0.."),
        "task_cpu_range": Param([1, 2], as_range(0, None, integer=True), "task CPU, integer uniform"),
        "task_mem_range": Param([0.5, 1.0], as_range(0.0, None), "task memory U[lo, hi]"),
        "servers": Param(4, as_int(1, 1000), "edge servers"),
        "server_cpu_range": Param([4, 8], as_range(1, None, integer=True), "edge server CPU, integer uniform"),
        "server_mem_range": Param([4, 8], as_range(1, None, integer=True), "edge server memory, integer uniform"),
        "image_prob": Param(0.5, as_float(0.0, 1.0), "probability an edge server caches each image"),
        "speed_range": Param([1.0, 2.0], as_range(0.0, None), "edge server speed U[lo, hi]"),
        "cloud": Param(True, as_bool(), "add a cloud server"),
        "cloud_speed": Param(4.0, as_float(0.0, None, lo_open=True), "cloud speed"),
        "cloud_distance": Param(10.0, as_float(0.0, None), "distance between the cloud and every edge server"),
        "bandwidth": Param(100.0, as_float(0.0, None, lo_open=True), "MB/s per unit distance"),
        "image_pull_delay": Param(0.5, as_float(0.0, None), "seconds per missing image"),
    }
    if preset == "edge-poisson":
        spec.update({
            "workflows": Param(5, as_int(1, 1000), "workflows in the stream"),
            "rate": Param(0.2, as_float(0.0, None, lo_open=True), "Poisson arrivals per second"),
        })
    return spec


def daggen_levels(rng: np.random.Generator, n: int, fat: float, regular: float) -> list[list[int]]:
    """daggen's level structure: mean width n**fat; each level's width uniform within
    +-(1 - regular) of it (at least 1), levels added until n tasks exist."""
    mean_w = max(1.0, n ** fat)
    spread = 1.0 - regular
    levels: list[list[int]] = []
    t = 0
    while t < n:
        w = int(round(rng.uniform(mean_w * (1 - spread), mean_w * (1 + spread))))
        w = min(max(1, w), n - t)
        levels.append(list(range(t, t + w)))
        t += w
    return levels


def daggen_edges(rng: np.random.Generator, levels: list[list[int]], density: float, jump: int) -> list[tuple[int, int]]:
    """Each task below the first level draws 1 + floor(U[0, density x width of the level
    above]) parents (at most that width), each from a level chosen uniformly among the
    ``jump`` levels above; the first parent always comes from the level just above."""
    edges: set[tuple[int, int]] = set()
    for i in range(1, len(levels)):
        above = levels[i - 1]
        for t in levels[i]:
            k = min(1 + int(rng.uniform(0.0, density * len(above))), len(above))
            parents: set[int] = {above[int(rng.integers(len(above)))]}
            tries = 0
            while len(parents) < k and tries < 10 * k:
                tries += 1
                lv = levels[i - 1 - int(rng.integers(min(jump, i)))]
                parents.add(lv[int(rng.integers(len(lv)))])
            edges.update((u, t) for u in parents)
    return sorted(edges)


def _servers(rng: np.random.Generator, p: dict[str, Any]) -> tuple[list[dict], list[list[float]]]:
    images = [f"img{k}" for k in range(p["images"])]
    servers = []
    for i in range(p["servers"]):
        cpu = int(rng.integers(p["server_cpu_range"][0], p["server_cpu_range"][1] + 1))
        mem = int(rng.integers(p["server_mem_range"][0], p["server_mem_range"][1] + 1))
        held = [img for img in images if rng.random() < p["image_prob"]]
        speed = r4(rng.uniform(*p["speed_range"]))
        servers.append({"name": f"es{i}", "cpu": float(cpu), "mem": float(mem), "images": held, "speed": speed})
    pos = rng.uniform(0.0, 1.0, size=(p["servers"], 2))
    m = len(servers) + (1 if p["cloud"] else 0)
    distance = [[0.0] * m for _ in range(m)]
    for i in range(p["servers"]):
        for j in range(p["servers"]):
            if i != j:
                distance[i][j] = r4(float(np.hypot(*(pos[i] - pos[j]))))
    if p["cloud"]:
        servers.append({"name": "cloud", "cpu": 0.0, "mem": 0.0, "images": images, "speed": r4(p["cloud_speed"]),
                        "is_cloud": True})
        c = m - 1
        for i in range(p["servers"]):
            distance[i][c] = distance[c][i] = r4(p["cloud_distance"])
    return servers, distance


def _daggen_workflow(rng: np.random.Generator, p: dict[str, Any], name: str) -> dict[str, Any]:
    n = p["tasks"]
    levels = daggen_levels(rng, n, p["fat"], p["regular"])
    edges = daggen_edges(rng, levels, p["density"], p["jump"])
    has_parent = {b for _, b in edges}
    tasks, exec_s = [], []
    for t in range(n):
        data = r4(rng.uniform(p["mindata"], p["maxdata"]))
        ex = r4(data * p["seconds_per_mb"])
        exec_s.append(ex)
        image = f"img{int(rng.integers(p['images']))}"
        cpu = int(rng.integers(p["task_cpu_range"][0], p["task_cpu_range"][1] + 1))
        mem = r4(rng.uniform(*p["task_mem_range"]))
        task = {"name": f"{name}t{t}", "functions": [{"image": image, "cpu": float(cpu), "mem": mem,
                                                      "exec_time": ex}]}
        if t not in has_parent:
            task["input_data"] = data
        tasks.append(task)
    wf_edges = [{"src": a, "dst": b, "data": r4(p["ccr"] * exec_s[a] * p["bandwidth"])} for a, b in edges]
    return {"name": name, "tasks": tasks, "edges": wf_edges}


def _daggen(preset: str, seed: int, p: dict[str, Any]) -> dict[str, Any]:
    if p["mindata"] > p["maxdata"]:
        raise InputError("mindata is above maxdata", field="mindata")
    if p["speed_range"][0] <= 0:
        raise InputError("server speeds must be positive (low of the range > 0)", field="speed_range")
    rng = np.random.default_rng(seed)
    servers, distance = _servers(rng, p)
    if not p["cloud"]:
        big_cpu = max(s["cpu"] for s in servers)
        big_mem = max(s["mem"] for s in servers)
        if p["task_cpu_range"][1] > big_cpu or p["task_mem_range"][1] > big_mem:
            raise InputError(f"tasks may need up to {p['task_cpu_range'][1]} cpu / {p['task_mem_range'][1]} mem, "
                             f"the largest edge server has {big_cpu:g} / {big_mem:g} and there is no cloud",
                             field="task_cpu_range")
    workflows = []
    if preset == "daggen":
        wf = _daggen_workflow(rng, p, "wf0")
        wf.update({"arrival": 0.0, "source": int(rng.integers(p["servers"]))})
        workflows.append(wf)
        what = f"{p['tasks']} tasks"
    else:
        t = 0.0
        for k in range(p["workflows"]):
            t += float(rng.exponential(1.0 / p["rate"]))
            source = int(rng.integers(p["servers"]))
            wf = _daggen_workflow(rng, p, f"wf{k}")
            wf.update({"arrival": r4(t), "source": source})
            workflows.append(wf)
        what = f"{p['workflows']} workflows of {p['tasks']} tasks"
    cloud = " + cloud" if p["cloud"] else ""
    ref = REF_DAGGEN + "; server and workflow model of " + REF_PATENT
    return {
        "id": f"offloading-{preset}-s{seed}",
        "name": f"offloading {preset}: {what}, {p['servers']} edge servers{cloud} (seed {seed})",
        "meta": make_meta(GENERATOR, preset, p, seed, f"daggen (Suter) + {SOURCE_PATENT}", ref),
        "offloading": {"servers": servers, "distance": distance, "bandwidth": r4(p["bandwidth"]),
                       "image_pull_delay": r4(p["image_pull_delay"]), "workflows": workflows},
    }


def generate_offloading(preset: str, *, seed: int = 0, **overrides: Any):
    """One offloading instance (see module doc and docs/generators.md)."""
    if preset not in PRESETS:
        raise InputError(f"unknown offloading preset {preset!r} (known: {', '.join(PRESETS)})", field="preset")
    seed = check_seed(seed)
    if preset == "heft-random":
        p = resolve_params(preset, _heft_spec(), overrides, aliases={"v": "tasks"})
        v, s, d = p["tasks"], p["servers"], p["out_degree"]
        # exec_times v x s, <= out_degree + 1 edges per task (layered_edges), a distance matrix
        check_cells(v * (s + 2) + 3 * v * (d + 1) + (s + 1) ** 2,
                    f"{v} tasks x ({s} servers + 2) + 3 x {v} x ({d} out_degree + 1) edges + ({s} + 1)^2 distances")
        body = _heft(preset, seed, p)
    else:
        p = resolve_params(preset, _daggen_spec(preset), overrides, aliases={"n": "tasks"})
        n, s, wf = p["tasks"], p["servers"], p.get("workflows", 1)
        # parents per task <= 1 + density x the widest level (daggen_levels, daggen_edges)
        widest = min(n, int(round(max(1.0, n ** p["fat"]) * (2.0 - p["regular"]))) + 1)
        parents = min(n, 1 + int(p["density"] * widest))
        check_cells(wf * (8 + n * (8 + 3 * parents)) + (s + 1) * (p["images"] + 8) + (s + 1) ** 2,
                    f"{wf} workflows x (8 + {n} tasks x (8 + 3 x {parents} parents)) + ({s} + 1) servers x "
                    f"({p['images']} images + 8) + ({s} + 1)^2 distances")
        body = _daggen(preset, seed, p)
    return io.instance_from_dict({"format_version": 1, "family": "offloading", **body})
