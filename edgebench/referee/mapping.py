"""Referee of the mapping family (CES): task-graph mapping + elastic bandwidth.

This is the hot path of the metaheuristics (thousands of evaluations per second), so every
per-instance quantity (capacities, demands, link ends, canonical routes) is precomputed
once into arrays, cached by instance identity; an evaluation then costs a few small numpy
operations per job.  Checks and objectives are defined in ``docs/referee.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgebench.instances import semantics
from edgebench.instances.model import Instance
from edgebench.referee.common import ATOL, RTOL, Collector, Evaluation, IdentityCache, finish, fmt
from edgebench.solution import MappingDecisions

FAMILY = "mapping"


@dataclass(frozen=True)
class _Job:
    n: int
    cpu: np.ndarray
    ram: np.ndarray
    links: tuple[tuple[int, int, float, float], ...]
    #: per task link: (bw_min - tolerance, bw_max + tolerance)
    bounds: tuple[tuple[float, float], ...]
    arrival: float
    duration: float


@dataclass(frozen=True)
class _Pre:
    P: int
    R: int
    cpu: np.ndarray
    ram: np.ndarray
    bg_cpu: np.ndarray
    bg_ram: np.ndarray
    free_cpu: np.ndarray
    free_ram: np.ndarray
    free_cpu_tol: np.ndarray
    free_ram_tol: np.ndarray
    bw: np.ndarray
    bw_tol: np.ndarray
    lsrc: tuple[int, ...]
    ldst: tuple[int, ...]
    routes: list  # canonical_route table [a][b]
    jobs: tuple[_Job, ...]
    arrivals: np.ndarray
    durations: np.ndarray
    w: tuple[float, float, float]
    include_bg: bool
    shortest: bool


def _build(instance: Instance) -> _Pre:
    m = instance.mapping
    assert m is not None
    cpu = np.array([n.cpu for n in m.nodes], dtype=float)
    ram = np.array([n.ram for n in m.nodes], dtype=float)
    bg_cpu = np.array([n.bg_cpu for n in m.nodes], dtype=float)
    bg_ram = np.array([n.bg_ram for n in m.nodes], dtype=float)
    free_cpu = cpu - bg_cpu
    free_ram = ram - bg_ram
    bw = np.array([lk.bandwidth for lk in m.links], dtype=float)
    P = len(m.nodes)
    routes = [[semantics.canonical_route(m, a, b) for b in range(P)] for a in range(P)]
    jobs = tuple(
        _Job(n=len(j.tasks), cpu=np.array([t.cpu for t in j.tasks], dtype=float),
             ram=np.array([t.ram for t in j.tasks], dtype=float),
             links=tuple((lk.src, lk.dst, float(lk.bw_min), float(lk.bw_max)) for lk in j.links),
             bounds=tuple((lk.bw_min - ATOL - RTOL * lk.bw_min, lk.bw_max + ATOL + RTOL * lk.bw_max)
                          for lk in j.links),
             arrival=float(j.arrival), duration=float(j.duration))
        for j in m.jobs
    )
    return _Pre(
        P=P, R=len(m.links), cpu=cpu, ram=ram, bg_cpu=bg_cpu, bg_ram=bg_ram, free_cpu=free_cpu,
        free_ram=free_ram, free_cpu_tol=free_cpu + ATOL + RTOL * np.abs(free_cpu),
        free_ram_tol=free_ram + ATOL + RTOL * np.abs(free_ram), bw=bw, bw_tol=bw + ATOL + RTOL * bw,
        lsrc=tuple(lk.src for lk in m.links), ldst=tuple(lk.dst for lk in m.links), routes=routes,
        jobs=jobs, arrivals=np.array([j.arrival for j in jobs]), durations=np.array([j.duration for j in jobs]),
        w=tuple(float(x) for x in m.objective.weights), include_bg=m.objective.include_background,  # type: ignore
        shortest=m.objective.routing == "shortest_path",
    )


_pre = IdentityCache(_build, size=64)


def precompute(instance: Instance) -> _Pre:
    """The per-instance arrays the evaluation uses (cached by instance identity)."""
    return _pre(instance)


def _route_problem(route: tuple[int, ...], a: int, b: int, pre: _Pre) -> str | None:
    if not route:
        return f"the route is empty but the ends are on different nodes {a} and {b}"
    cur = a
    seen = {a}
    for r in route:
        if r >= pre.R:
            return f"physical link {r} does not exist ({pre.R} links)"
        if pre.lsrc[r] != cur:
            return f"physical link {r} leaves node {pre.lsrc[r]}, the path is at node {cur}"
        cur = pre.ldst[r]
        if cur in seen:
            return f"the route visits node {cur} twice"
        seen.add(cur)
    if cur != b:
        return f"the route ends at node {cur}, the destination task is on node {b}"
    return None


def _tol(x: float) -> float:
    return ATOL + RTOL * abs(x)


_add = np.add.reduce


def _pstd(u: np.ndarray) -> np.ndarray:
    """Population standard deviation along axis 1 (ddof 0), without np.std's overhead."""
    n = u.shape[1]
    d = u - (_add(u, axis=1) / n)[:, None]
    return np.sqrt(_add(d * d, axis=1) / n)


def evaluate(instance: Instance, decisions: MappingDecisions) -> Evaluation:
    pre = _pre(instance)
    col = Collector()
    jd = decisions.jobs
    J = len(pre.jobs)
    if len(jd) != J:
        col.add("decision_count", "solution", abs(len(jd) - J), f"{len(jd)} job decisions for {J} jobs")
        return finish(FAMILY, col, {}, {})
    P, R = pre.P, pre.R
    sound = True  # every count and index in range: the objectives can be computed
    job_cpu = np.zeros((J, P))
    job_ram = np.zeros((J, P))
    job_bw = np.zeros((J, R))
    starts = pre.arrivals.copy()
    deltas: list[list[float]] = []

    for ji in range(J):
        job = pre.jobs[ji]
        d = jd[ji]
        el = f"job {ji}"
        if d.start is not None:
            starts[ji] = d.start
            if d.start < job.arrival - _tol(job.arrival):
                col.add("start_before_arrival", el, job.arrival - d.start,
                        f"job {ji} starts at {fmt(d.start)}, before its arrival at {fmt(job.arrival)}")
        nodes = d.nodes
        nodes_ok = True
        if len(nodes) != job.n:
            col.add("node_count", el, abs(len(nodes) - job.n), f"job {ji} maps {len(nodes)} task nodes, it has "
                    f"{job.n}")
            nodes_ok = False
        else:
            for k, v in enumerate(nodes):
                if v >= P:
                    col.add("node_index", f"job {ji} task node {k}", v - (P - 1),
                            f"job {ji} task node {k} is mapped to physical node {v}, which does not exist ({P} nodes)")
                    nodes_ok = False
        if nodes_ok:
            idx = np.asarray(nodes, dtype=np.intp)
            job_cpu[ji] = np.bincount(idx, weights=job.cpu, minlength=P)
            job_ram[ji] = np.bincount(idx, weights=job.ram, minlength=P)
        else:
            sound = False
        links = d.links
        if len(links) != len(job.links):
            col.add("link_count", el, abs(len(links) - len(job.links)),
                    f"job {ji} has {len(links)} link decisions for {len(job.links)} task links")
            sound = False
            continue
        if not nodes_ok:
            continue
        dl: list[float] = []
        row = job_bw[ji]
        for k in range(len(links)):
            ld = links[k]
            s, t, lo, hi = job.links[k]
            a, b = nodes[s], nodes[t]
            route = ld.route
            if a == b:
                if route:
                    col.add("colocated_route", f"job {ji} link {k}", len(route),
                            f"job {ji} task link {k} joins two task nodes on physical node {a}; its route must be "
                            f"empty, got {list(route)}")
                dl.append(1.0)
                continue
            B = ld.bandwidth
            problem = _route_problem(route, a, b, pre)
            if problem is not None:
                col.add("route_invalid", f"job {ji} link {k}", 1.0,
                        f"job {ji} task link {k} (node {a} -> node {b}): {problem}")
            elif pre.shortest:
                canon = pre.routes[a][b]
                if tuple(route) != canon:
                    col.add("route_not_canonical", f"job {ji} link {k}", max(len(route) - len(canon), 0),
                            f"job {ji} task link {k} is routed over {list(route)}, the canonical shortest path "
                            f"from node {a} to node {b} is {list(canon)}")
            blo, bhi = job.bounds[k]
            if B < blo or B > bhi:
                col.add("bandwidth_range", f"job {ji} link {k}", max(lo - B, B - hi),
                        f"job {ji} task link {k} gets bandwidth {fmt(B)}, outside [{fmt(lo)}, {fmt(hi)}]")
            if hi == lo:
                dl.append(1.0)
            else:
                dl.append(min(max((B - lo) / (hi - lo), 0.0), 1.0))
            for r in route:
                if r < R:
                    row[r] += B
        deltas.append(dl)

    # ---- time segments -----------------------------------------------------------------
    ends = starts + pre.durations
    if J == 1:
        seg_a = starts
        seg_b = ends
        seg_cpu, seg_ram, seg_bw = job_cpu, job_ram, job_bw
        checked = np.ones(1, dtype=bool)
    else:
        times = np.unique(np.concatenate([starts, ends]))
        a_all, b_all = times[:-1], times[1:]
        active = (starts[None, :] <= a_all[:, None]) & (ends[None, :] > a_all[:, None])
        keep = active.any(axis=1)
        seg_a, seg_b, active = a_all[keep], b_all[keep], active[keep].astype(float)
        seg_cpu, seg_ram, seg_bw = active @ job_cpu, active @ job_ram, active @ job_bw
        # segments shorter than the time tolerance (a job ending a hair after the next one
        # starts) are not checked for capacity; they still count (with their tiny weight)
        checked = (seg_b - seg_a) > ATOL + RTOL * np.abs(seg_a)
        if not checked.any():
            checked[:] = True

    names: dict[int, str] = {}

    def seg_name(i: int) -> str:
        name = names.get(i)
        if name is None:
            name = names[i] = f"segment [{fmt(float(seg_a[i]))}, {fmt(float(seg_b[i]))})"
        return name

    for cid, what, load, lim, cap in (("capacity_cpu", "cpu", seg_cpu, pre.free_cpu_tol, pre.free_cpu),
                                      ("capacity_ram", "ram", seg_ram, pre.free_ram_tol, pre.free_ram)):
        bad = (load > lim[None, :]) & checked[:, None]
        if bad.any():
            ii, pp = np.nonzero(bad)
            take = min(len(ii), col.room())
            ii, pp = ii[:take], pp[:take]
            for i, p, x, c in zip(ii.tolist(), pp.tolist(), load[ii, pp].tolist(), cap[pp].tolist()):
                col.add(cid, f"node {p} {seg_name(i)}", x - c,
                        f"jobs on node {p} need {fmt(x)} {what} in {seg_name(i)}, {fmt(c)} is free beside the "
                        f"background load")
            col.skip(int(bad.sum()) - take)
    if R:
        bad = (seg_bw > pre.bw_tol[None, :]) & checked[:, None]
        if bad.any():
            ii, rr = np.nonzero(bad)
            take = min(len(ii), col.room())
            ii, rr = ii[:take], rr[:take]
            for i, r, x, c in zip(ii.tolist(), rr.tolist(), seg_bw[ii, rr].tolist(), pre.bw[rr].tolist()):
                col.add("capacity_bw", f"link {r} {seg_name(i)}", x - c,
                        f"task links routed over physical link {r} take {fmt(x)} bandwidth in {seg_name(i)}, "
                        f"its bandwidth is {fmt(c)}")
            col.skip(int(bad.sum()) - take)

    waits = starts - pre.arrivals
    details: dict = {"wait": waits.tolist(), "delta": deltas,
                     "segments": [[float(x), float(y)] for x, y in zip(seg_a, seg_b)]}
    if not sound:
        return finish(FAMILY, col, {}, details)

    w1, w2, w3 = pre.w
    if pre.include_bg:
        u_cpu = (seg_cpu + pre.bg_cpu) / pre.cpu
        u_ram = (seg_ram + pre.bg_ram) / pre.ram
    else:
        u_cpu = seg_cpu / pre.cpu
        u_ram = seg_ram / pre.ram
    s_cpu = _pstd(u_cpu)
    s_ram = _pstd(u_ram)
    s_bw = _pstd(seg_bw / pre.bw) if R else np.zeros(len(seg_a))
    L = w1 * s_cpu + w2 * s_ram + w3 * s_bw
    u_avg = _add(u_cpu + u_ram, axis=1) * (0.5 / P)
    weight = seg_b - seg_a
    tot = float(weight.sum())

    def wmean(x: np.ndarray) -> float:
        return float(x[0]) if len(x) == 1 else float((x * weight).sum() / tot)

    n_links = sum(len(x) for x in deltas)
    d_bw = (sum(sum(x) for x in deltas) / n_links) if n_links else 1.0
    Lm = wmean(L)
    objectives = {
        "composite": 0.5 * (1.0 - Lm) + 0.5 * d_bw,
        "L": Lm,
        "std_cpu": wmean(s_cpu),
        "std_ram": wmean(s_ram),
        "std_bw": wmean(s_bw),
        "U_avg": wmean(u_avg),
        "D_BW": d_bw,
        "mean_wait": float(waits[0]) if J == 1 else float(waits.mean()),
        "p95_wait": float(waits[0]) if J == 1 else float(np.percentile(waits, 95)),
    }
    details["L_segment"] = L.tolist()
    return finish(FAMILY, col, objectives, details)


__all__ = ["evaluate", "precompute"]
