"""Mapping (CES) generators: the thesis's simulation setting.

Presets ``thesis`` (one job) and ``thesis-queue`` (a Poisson stream of jobs). Task graphs
come in five communication topologies: ``random`` (the thesis's simulation), ``ring``
(ring all-reduce), ``star`` (parameter server), ``tree`` (E-Tree) and ``gossip`` (gossip
learning) — cycles are the point. See ``docs/generators.md``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgebench.errors import InputError
from edgebench.instances import io, semantics
from edgebench.instances.model import MAX_LEVELS, MAX_TIME, MappingPayload
from edgebench.instances.generators import (
    Param,
    as_bool,
    as_choice,
    as_float,
    as_int,
    as_range,
    check_cells,
    check_seed,
    make_meta,
    r4,
    resolve_params,
)

GENERATOR = "edgebench.instances.generators.mapping:generate_mapping"
SOURCE = "CES thesis (seed 002)"
REFERENCE = ("梁华倩 (Liang Huaqian), '面向协同边缘计算的资源联合任务调度系统研究' (Research on a joint "
             "resource and task scheduling system for collaborative edge computing), master's thesis, South China "
             "University of Technology, 2026; simulation setting of the mapping / bandwidth chapter")

TOPOLOGIES = ("random", "ring", "star", "tree", "gossip")
PRESETS = ("thesis", "thesis-queue")


def _check_weights(v: Any) -> list[float]:
    if not isinstance(v, (list, tuple)) or len(v) != 3:
        raise TypeError("expected three weights [w_cpu, w_ram, w_bw]")
    w = [as_float(0.0, 1.0)(x) for x in v]
    if abs(sum(w) - 1.0) > 1e-6:
        raise ValueError(f"weights must sum to 1, got {sum(w)}")
    return w


def _spec(preset: str) -> dict[str, Param]:
    spec = {
        "nodes": Param(10, as_int(1, 1000), "physical nodes"),
        "link_prob": Param(0.3, as_float(0.0, 1.0), "probability of an undirected physical link per node pair"),
        "cpu_range": Param([50.0, 100.0], as_range(0.0, None), "node CPU capacity U[lo, hi]"),
        "ram_range": Param([50.0, 100.0], as_range(0.0, None), "node RAM capacity U[lo, hi]"),
        "bg_range": Param([0.1, 0.5], as_range(0.0, 1.0, hi_open=True), "background usage fraction U[lo, hi]"),
        "link_bw_range": Param([100.0, 1000.0], as_range(0.0, None), "physical link bandwidth U[lo, hi]"),
        "task_nodes": Param(None, as_int(2, 100), "task nodes per job (default: drawn from task_nodes_range)"),
        "task_nodes_range": Param([3, 8], as_range(2, 100, integer=True), "task nodes per job, uniform"),
        "task_link_prob": Param(0.4, as_float(0.0, 1.0), "random topology: probability of a task link per pair"),
        "topology": Param("random" if preset == "thesis" else "mixed", as_choice(*TOPOLOGIES, "mixed"),
                          "task-graph topology (mixed: drawn per job from the five)"),
        "fanout": Param(2, as_int(1, 100), "gossip topology: peers each node pushes to"),
        "task_cpu_range": Param([10.0, 50.0], as_range(0.0, None), "task node CPU demand U[lo, hi]"),
        "task_ram_range": Param([10.0, 50.0], as_range(0.0, None), "task node RAM demand U[lo, hi]"),
        "bw_min_range": Param([10.0, 50.0], as_range(0.0, None), "task link BWmin U[lo, hi]"),
        "bw_max_range": Param([50.0, 100.0], as_range(0.0, None), "task link BWmax U[lo, hi]"),
        "weights": Param([1 / 3, 1 / 3, 1 / 3], _check_weights, "weights of std(U_cpu), std(U_ram), std(U_bw)"),
        "include_background": Param(True, as_bool(), "utilisation counts the background load"),
        "bandwidth_levels": Param(5, as_int(2, MAX_LEVELS), "bandwidth levels L"),
        "routing": Param("shortest_path", as_choice("shortest_path", "free"), "routing rule"),
        "ensure_feasible": Param(True, as_bool(),
                                 "redraw a job's demands until a greedy mapping certifies it fits the empty network"),
        "max_redraws": Param(1000, as_int(0, 10_000), "ensure_feasible: redraws before giving up"),
    }
    if preset == "thesis-queue":
        spec.update({
            "jobs": Param(20, as_int(1, 1000), "jobs in the stream"),
            "rate": Param(0.5, as_float(0.0, None, lo_open=True), "Poisson arrival rate per time unit"),
            "mean_duration": Param(10.0, as_float(0.0, MAX_TIME, lo_open=True), "mean of the exponential durations"),
            "priority_range": Param([0, 2], as_range(None, None, integer=True), "priority uniform in lo..hi"),
        })
    return spec


def _components(n: int, edges: list[tuple[int, int]]) -> list[list[int]]:
    """Connected components of an undirected graph, each sorted, ordered by smallest node."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for v in range(n):
        groups.setdefault(find(v), []).append(v)
    return sorted(groups.values(), key=lambda g: g[0])


def _connect(rng: np.random.Generator, n: int, edges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Join the components in order: each next component gets one edge to a random node of
    the part already joined. Returns the added (u, v) pairs, u in the joined part."""
    comps = _components(n, edges)
    added = []
    joined = list(comps[0])
    for comp in comps[1:]:
        u = int(joined[int(rng.integers(len(joined)))])
        v = int(comp[int(rng.integers(len(comp)))])
        added.append((u, v))
        joined.extend(comp)
    return added


def _uniform(rng: np.random.Generator, rng_range: list[float]) -> float:
    return float(rng.uniform(rng_range[0], rng_range[1]))


def _physical(rng: np.random.Generator, p: dict[str, Any], check_links=None) -> tuple[list[dict], list[dict]]:
    """Nodes and both directions of every drawn edge; ``check_links(directed link count)`` is
    called once the edges are drawn, before the links are built (the joint limit)."""
    n = p["nodes"]
    nodes = []
    for i in range(n):
        cpu = r4(_uniform(rng, p["cpu_range"]))
        ram = r4(_uniform(rng, p["ram_range"]))
        bg_cpu = r4(_uniform(rng, p["bg_range"]) * cpu)
        bg_ram = r4(_uniform(rng, p["bg_range"]) * ram)
        nodes.append({"name": f"p{i}", "cpu": cpu, "ram": ram, "bg_cpu": bg_cpu, "bg_ram": bg_ram})
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < p["link_prob"]]
    edges += [(min(u, v), max(u, v)) for u, v in _connect(rng, n, edges)]
    edges.sort()
    if check_links is not None:
        check_links(2 * len(edges))
    links = []
    for i, j in edges:
        bw = r4(_uniform(rng, p["link_bw_range"]))
        links.append({"src": i, "dst": j, "bandwidth": bw})
        links.append({"src": j, "dst": i, "bandwidth": bw})
    links.sort(key=lambda link: (link["src"], link["dst"]))
    return nodes, links


def task_graph(rng: np.random.Generator, n: int, topology: str, *, link_prob: float = 0.4,
               fanout: int = 2) -> list[tuple[int, int]]:
    """Directed task links (src, dst) of an n-node task graph in the given topology, sorted."""
    pairs: set[tuple[int, int]] = set()
    if topology == "random":
        und = []
        for i in range(n):
            for j in range(i + 1, n):
                if rng.random() < link_prob:
                    und.append((i, j))
                    pairs.add((i, j) if rng.random() < 0.5 else (j, i))
        for u, v in _connect(rng, n, und):
            pairs.add((u, v) if rng.random() < 0.5 else (v, u))
    elif topology == "ring":
        for i in range(n):
            pairs.add((i, (i + 1) % n))
    elif topology == "star":
        for i in range(1, n):
            pairs.add((0, i))
            pairs.add((i, 0))
    elif topology == "tree":
        for i in range(1, n):
            parent = int(rng.integers(0, i))
            pairs.add((parent, i))
            pairs.add((i, parent))
    elif topology == "gossip":
        k = min(fanout, n - 1)
        for i in range(n):
            peers = [j for j in range(n) if j != i]
            for idx in rng.choice(len(peers), size=k, replace=False):
                pairs.add((i, peers[int(idx)]))
    else:  # pragma: no cover - checked by the parameter spec
        raise ValueError(f"unknown topology {topology!r}")
    return sorted(pairs)


def _job_shape(rng: np.random.Generator, p: dict[str, Any]) -> tuple[str, int]:
    topology = p["topology"]
    if topology == "mixed":
        topology = TOPOLOGIES[int(rng.integers(len(TOPOLOGIES)))]
    if p["task_nodes"] is not None:
        n = p["task_nodes"]
    else:
        lo, hi = p["task_nodes_range"]
        n = int(rng.integers(lo, hi + 1))
    return topology, n


def _job(rng: np.random.Generator, p: dict[str, Any], k: int, topology: str, n: int) -> dict[str, Any]:
    tasks = [{"name": f"j{k}t{i}", "cpu": r4(_uniform(rng, p["task_cpu_range"])),
              "ram": r4(_uniform(rng, p["task_ram_range"]))} for i in range(n)]
    links = []
    for src, dst in task_graph(rng, n, topology, link_prob=p["task_link_prob"], fanout=p["fanout"]):
        bw_min = r4(_uniform(rng, p["bw_min_range"]))
        bw_max = max(bw_min, r4(_uniform(rng, p["bw_max_range"])))
        links.append({"src": src, "dst": dst, "bw_min": bw_min, "bw_max": bw_max})
    return {"name": f"job{k} ({topology}, {n} task nodes)", "tasks": tasks, "links": links}


def certify_job(network: MappingPayload, job: dict[str, Any]) -> list[int] | None:
    """A mapping of ``job`` (plain dict) onto the empty ``network`` (background load only)
    that respects CPU, RAM and BWmin along the canonical routes, found greedily (tasks by
    decreasing demand; nodes tried most-free first, then in index order); None if the
    greedy attempts fail (the job may still be feasible)."""
    free0 = [(nd.cpu - nd.bg_cpu, nd.ram - nd.bg_ram) for nd in network.nodes]
    order = sorted(range(len(job["tasks"])), key=lambda t: -(job["tasks"][t]["cpu"] + job["tasks"][t]["ram"]))
    for strategy in ("spread", "pack"):
        free = [list(f) for f in free0]
        where = [-1] * len(job["tasks"])
        for t in order:
            c, r = job["tasks"][t]["cpu"], job["tasks"][t]["ram"]
            if strategy == "spread":
                cands = sorted(range(len(free)), key=lambda q: (-(free[q][0] + free[q][1]), q))
            else:
                cands = list(range(len(free)))
            for q in cands:
                if free[q][0] >= c - 1e-9 and free[q][1] >= r - 1e-9:
                    free[q][0] -= c
                    free[q][1] -= r
                    where[t] = q
                    break
            else:
                break
        if min(where, default=0) < 0:
            continue
        residual = [link.bandwidth for link in network.links]
        ok = True
        for link in job["links"]:
            a, b = where[link["src"]], where[link["dst"]]
            if a == b:
                continue
            route = semantics.canonical_route(network, a, b)
            if route is None:
                ok = False
                break
            for k in route:
                residual[k] -= link["bw_min"]
                if residual[k] < -1e-9:
                    ok = False
            if not ok:
                break
        if ok:
            return where
    return None


def generate_mapping(preset: str, *, seed: int = 0, **overrides: Any):
    """One CES instance (see module doc and docs/generators.md)."""
    if preset not in PRESETS:
        raise InputError(f"unknown mapping preset {preset!r} (known: {', '.join(PRESETS)})", field="preset")
    seed = check_seed(seed)
    p = resolve_params(preset, _spec(preset), overrides)
    if p["bw_min_range"][1] > p["bw_max_range"][0]:
        key = "bw_max_range" if "bw_max_range" in overrides else "bw_min_range"
        raise InputError("bw_min_range must lie below bw_max_range (every link needs BWmin <= BWmax)", field=key)
    if p["cpu_range"][0] <= 0 or p["ram_range"][0] <= 0 or p["link_bw_range"][0] <= 0:
        key = next(k for k in ("cpu_range", "ram_range", "link_bw_range") if p[k][0] <= 0)
        raise InputError("capacities must be positive (low of the range > 0)", field=key)
    if p["task_cpu_range"][0] <= 0 or p["task_ram_range"][0] <= 0:
        key = "task_cpu_range" if p["task_cpu_range"][0] <= 0 else "task_ram_range"
        raise InputError("task demands must be positive (low of the range > 0)", field=key)

    n_tasks = p["task_nodes"] if p["task_nodes"] is not None else p["task_nodes_range"][1]
    jobs = p.get("jobs", 1)
    job_cells = jobs * (3 + 2 * n_tasks + 4 * n_tasks * (n_tasks - 1))
    how = (f"5 x {p['nodes']} nodes + {jobs} jobs x (3 + 2 x {n_tasks} task nodes + 4 x {n_tasks * (n_tasks - 1)} "
           "task links)")
    check_cells(5 * p["nodes"] + job_cells, how)
    rng = np.random.default_rng(seed)
    nodes, links = _physical(rng, p, lambda n_links: check_cells(5 * p["nodes"] + 3 * n_links + job_cells,
                                                                 f"{how} + 3 x {n_links} links"))
    network = io.validate_model(MappingPayload, {"nodes": nodes, "links": links,
                                                 "jobs": [{"tasks": [{"cpu": 1.0, "ram": 1.0}]}]})

    def draw_job(k: int) -> dict[str, Any]:
        topology, n = _job_shape(rng, p)
        job = _job(rng, p, k, topology, n)
        if p["ensure_feasible"]:
            tries = 0
            while certify_job(network, job) is None:
                tries += 1
                if tries > p["max_redraws"]:
                    raise InputError(f"job {k} ({topology}, {n} task nodes) did not fit the network in "
                                     f"{p['max_redraws']} redraws; lower the demands or set ensure_feasible=false",
                                     field="ensure_feasible")
                job = _job(rng, p, k, topology, n)
        return job

    jobs = []
    if preset == "thesis":
        job = draw_job(0)
        job.update({"arrival": 0.0, "duration": 1.0, "priority": 0})
        jobs.append(job)
    else:
        t = 0.0
        lo, hi = p["priority_range"]
        for k in range(p["jobs"]):
            t += float(rng.exponential(1.0 / p["rate"]))
            duration = max(r4(rng.exponential(p["mean_duration"])), 0.0001)
            priority = int(rng.integers(lo, hi + 1))
            job = draw_job(k)
            job.update({"arrival": r4(t), "duration": duration, "priority": priority})
            jobs.append(job)
    sizes = sorted({len(j["tasks"]) for j in jobs})
    size = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]}..{sizes[-1]}"
    what = f"{len(jobs)} job{'s' if len(jobs) != 1 else ''} of {size} task nodes"
    data = {
        "format_version": 1,
        "family": "mapping",
        "id": f"mapping-{preset}-s{seed}",
        "name": f"mapping {preset}: {p['nodes']} nodes, {len(links)} directed links, {what}, topology "
                f"{p['topology']} (seed {seed})",
        "meta": make_meta(GENERATOR, preset, p, seed, SOURCE, REFERENCE),
        "mapping": {
            "nodes": nodes,
            "links": links,
            "jobs": jobs,
            "objective": {"weights": list(p["weights"]), "include_background": p["include_background"],
                          "bandwidth_levels": p["bandwidth_levels"], "routing": p["routing"]},
        },
    }
    return io.instance_from_dict(data)
