"""Instance features: one function per family, the coordinates of the instance-space footprints.

``features(instance)`` returns a flat ``{name: float}`` of the family's :data:`FEATURES`
(always all of them, always finite), computed from the instance alone. The definitions are
in ``docs/adversary.md`` ("Instance features"); the runner stores them with each run
(table ``features`` of the results store) and the report projects them to 2-D.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import networkx as nx
import numpy as np

from edgebench.instances import semantics
from edgebench.instances.model import Instance

FEATURES: dict[str, tuple[str, ...]] = {
    "placement": ("tasks", "clusters", "arrival_span", "load", "capacity_cv", "eligibility", "sensitive_share",
                  "mean_min_steps"),
    "offloading": ("tasks", "servers", "workflows", "ccr", "heterogeneity", "depth", "width", "edge_density",
                   "capacity_tightness", "arrival_span"),
    "mapping": ("nodes", "links", "jobs", "task_nodes", "task_links", "cpu_load", "ram_load", "bw_tightness",
                "node_cv", "network_density"),
}


def _cv(xs: list[float]) -> float:
    a = np.asarray(xs, dtype=float)
    if a.size == 0 or a.mean() <= 0:
        return 0.0
    return float(a.std() / a.mean())


def _placement(inst: Instance) -> dict[str, float]:
    p = inst.placement
    n = len(p.tasks)
    arrivals = [t.arrival for t in p.tasks]
    steps, work = [], 0.0
    for j, t in enumerate(p.tasks):
        # steps at the minimum allocation (the same on every cluster): the work of the task
        s = semantics.fixed_run_steps(p, j, t.minimum.cpu, t.minimum.gpu)
        best = semantics.MAX_RUN_STEPS if s is None else s
        steps.append(best)
        work += best * max(t.minimum.gpu, 1)
    span = max(arrivals) - min(arrivals)
    gpus = [c.capacity.gpu for c in p.clusters]
    sensitive = {k for k, v in p.performance.types.items() if getattr(v, "gpu_scale", None) is not None}
    return {"tasks": n, "clusters": len(p.clusters), "arrival_span": span,
            # GPU-steps demanded at the minimum allocations over the GPU-steps the clusters offer
            # while tasks arrive plus one mean task length
            "load": work / (sum(gpus) * (span + float(np.mean(steps)))),
            "capacity_cv": _cv(gpus), "eligibility": float(np.mean([len(t.eligible) for t in p.tasks])) / len(p.clusters),
            "sensitive_share": sum(t.type in sensitive for t in p.tasks) / n, "mean_min_steps": float(np.mean(steps))}


def _offloading(inst: Instance) -> dict[str, float]:
    o = inst.offloading
    S = len(o.servers)
    execs, hetero, comms, depth, width, edges, tasks = [], [], [], 0, 0, 0, 0
    for w, wf in enumerate(o.workflows):
        n = len(wf.tasks)
        tasks += n
        edges += len(wf.edges)
        for t in range(n):
            d = [semantics.task_duration(o, w, t, s) for s in range(S) if semantics.can_host(o, w, t, s)]
            execs.append(float(np.mean(d)))
            hetero.append(_cv(d))
        for k in range(len(wf.edges)):
            far = [semantics.transfer_time(o, w, k, a, b) for a in range(S) for b in range(S) if a != b]
            comms.append(float(np.mean(far)) if far else 0.0)
        g = nx.DiGraph()
        g.add_nodes_from(range(n))
        g.add_edges_from((e.src, e.dst) for e in wf.edges)
        levels = list(nx.topological_generations(g))
        depth = max(depth, len(levels))
        width = max(width, max(len(lv) for lv in levels))
    mean_exec = float(np.mean(execs)) if execs else 0.0
    edge_cpu = [s.cpu for s in o.servers if not s.is_cloud]
    demands = [semantics.task_demand(o, w, t)[0] for w, wf in enumerate(o.workflows) for t in range(len(wf.tasks))]
    arrivals = [wf.arrival for wf in o.workflows]
    return {"tasks": tasks, "servers": S, "workflows": len(o.workflows),
            "ccr": (float(np.mean(comms)) / mean_exec) if comms and mean_exec > 0 else 0.0,
            "heterogeneity": float(np.mean(hetero)), "depth": depth, "width": width,
            "edge_density": edges / tasks,
            "capacity_tightness": float(np.mean(demands)) / float(np.mean(edge_cpu)) if edge_cpu else 0.0,
            "arrival_span": max(arrivals) - min(arrivals)}


def _mapping(inst: Instance) -> dict[str, float]:
    m = inst.mapping
    n = len(m.nodes)
    free_cpu = [nd.cpu - nd.bg_cpu for nd in m.nodes]
    free_ram = [nd.ram - nd.bg_ram for nd in m.nodes]
    und = {frozenset((link.src, link.dst)) for link in m.links}
    task_nodes = sum(len(j.tasks) for j in m.jobs)
    task_links = sum(len(j.links) for j in m.jobs)
    bw = [link.bandwidth for link in m.links]
    need = sum(link.bw_min for j in m.jobs for link in j.links)
    return {"nodes": n, "links": len(und), "jobs": len(m.jobs), "task_nodes": task_nodes, "task_links": task_links,
            "cpu_load": sum(t.cpu for j in m.jobs for t in j.tasks) / sum(free_cpu),
            "ram_load": sum(t.ram for j in m.jobs for t in j.tasks) / sum(free_ram),
            # the jobs' minimum bandwidth over the mean physical link's bandwidth
            "bw_tightness": need / float(np.mean(bw)) if bw else 0.0,
            "node_cv": _cv(free_cpu), "network_density": 2 * len(und) / (n * (n - 1)) if n > 1 else 0.0}


_BY_FAMILY: dict[str, Callable[[Instance], dict[str, float]]] = {
    "placement": _placement, "offloading": _offloading, "mapping": _mapping}


def features(instance: Instance) -> dict[str, float]:
    """The family's features of ``instance`` (names: :data:`FEATURES`), finite floats."""
    raw: dict[str, Any] = _BY_FAMILY[instance.family](instance)
    out = {}
    for k in FEATURES[instance.family]:
        v = float(raw[k])
        out[k] = v if math.isfinite(v) else 0.0
    return out


def projection(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """PCA to 2-D of the rows of ``matrix`` (instances x features): each feature standardised
    (mean 0, standard deviation 1; a constant feature is dropped), then the two leading right
    singular vectors. Returns (coordinates n x 2, explained variance share of each axis);
    with fewer than two varying features the missing axes are 0. Signs are fixed so that each
    axis's largest loading is positive (stable plots)."""
    x = np.asarray(matrix, dtype=float)
    n = x.shape[0]
    out = np.zeros((n, 2))
    share = np.zeros(2)
    if n < 2:
        return out, share
    sd = x.std(axis=0)
    keep = sd > 1e-12
    if not keep.any():
        return out, share
    z = (x[:, keep] - x[:, keep].mean(axis=0)) / sd[keep]
    _, s, vt = np.linalg.svd(z, full_matrices=False)
    k = min(2, vt.shape[0])
    for i in range(k):
        v = vt[i]
        if v[np.argmax(np.abs(v))] < 0:
            v = -v
        out[:, i] = z @ v
    var = s ** 2
    share[:k] = var[:k] / var.sum() if var.sum() > 0 else 0.0
    return out, share
