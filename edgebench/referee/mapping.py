"""Referee of the mapping family (CES): task-graph mapping + elastic bandwidth.

This is the hot path of the metaheuristics (thousands of evaluations per second), so every
per-instance quantity (capacities, demands, link ends, canonical routes) is precomputed
once into arrays, cached by instance identity; an evaluation then costs a few small numpy
operations per job.  Checks and objectives are defined in ``docs/referee.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgebench.errors import InputError
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
    routes: semantics.RouteTable  # canonical_route table [a][b], lazy
    jobs: tuple[_Job, ...]
    arrivals: np.ndarray
    durations: np.ndarray
    #: [2, 1, P] CPU and RAM capacities / background (the objectives' shape [G, 2, S, P])
    cap2: np.ndarray
    bg2: np.ndarray
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
    routes = semantics.route_table(m)  # lazy: a source's routes on first use (issue 28)
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
        jobs=jobs, cap2=np.stack([cpu, ram])[:, None, :], bg2=np.stack([bg_cpu, bg_ram])[:, None, :],
        arrivals=np.array([j.arrival for j in jobs]), durations=np.array([j.duration for j in jobs]),
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
    """Population standard deviation along the last axis (ddof 0), without np.std's overhead."""
    n = u.shape[-1]
    d = u - (_add(u, axis=-1) / n)[..., None]
    return np.sqrt(_add(d * d, axis=-1) / n)


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
    seg_a, seg_b, active, checked = segments(pre, starts)
    if J == 1:
        seg_cpu, seg_ram, seg_bw = job_cpu, job_ram, job_bw
    else:
        seg_cpu, seg_ram, seg_bw = active @ job_cpu, active @ job_ram, active @ job_bw

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

    n_links = sum(len(x) for x in deltas)
    d_bw = np.array([(sum(sum(x) for x in deltas) / n_links) if n_links else 1.0])
    objs, L = _score(pre, np.stack((seg_cpu, seg_ram))[None], seg_bw[None], seg_b - seg_a, d_bw, waits)
    objectives = {k: float(v[0]) for k, v in objs.items()}
    details["L_segment"] = L[0].tolist()
    return finish(FAMILY, col, objectives, details)


# --------------------------------------------------------------------------------------
# The shared core: time segments and the objectives of given loads
# --------------------------------------------------------------------------------------


def segments(pre: _Pre, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The time segments of jobs starting at ``starts`` [J]: (seg_a [S], seg_b [S], active
    [S, J] as 0/1 floats, checked [S] bool: the segments whose capacity is checked)."""
    ends = starts + pre.durations
    if len(starts) == 1:
        return starts.copy(), ends.copy(), np.ones((1, 1)), np.ones(1, dtype=bool)
    times = np.unique(np.concatenate([starts, ends]))
    a_all, b_all = times[:-1], times[1:]
    active = (starts[None, :] <= a_all[:, None]) & (ends[None, :] > a_all[:, None])
    keep = active.any(axis=1)
    seg_a, seg_b, active = a_all[keep], b_all[keep], active[keep].astype(float)
    # segments shorter than the time tolerance (a job ending a hair after the next one
    # starts) are not checked for capacity; they still count (with their tiny weight)
    checked = (seg_b - seg_a) > ATOL + RTOL * np.abs(seg_a)
    if not checked.any():
        checked[:] = True
    return seg_a, seg_b, active, checked


def _score(pre: _Pre, seg_cr: np.ndarray, seg_bw: np.ndarray, weight: np.ndarray, d_bw: np.ndarray,
           waits: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The objectives of ``G`` solutions from their loads per time segment: ``seg_cr`` [G, 2, S,
    P] (CPU, RAM on every node), ``seg_bw`` [G, S, R], the segments' durations ``weight`` [S],
    D_BW [G] and the jobs' waits [J].  Returns (objective -> [G] array, L per segment [G, S]).

    The one implementation of the mapping objectives: the referee's :func:`evaluate` and
    :func:`batch_objectives` (the metaheuristics' fitness) both call it."""
    w1, w2, w3 = pre.w
    u = seg_cr / pre.cap2 if not pre.include_bg else (seg_cr + pre.bg2) / pre.cap2  # [G, 2, S, P]
    s = _pstd(u)  # [G, 2, S]
    s_bw = _pstd(seg_bw / pre.bw) if pre.R else np.zeros(seg_bw.shape[:2])
    L = w1 * s[:, 0] + w2 * s[:, 1] + w3 * s_bw  # [G, S]
    u_avg = _add(_add(u, axis=-1), axis=1) * (0.5 / pre.P)  # [G, S]
    G, S = L.shape
    if S == 1:
        def wmean(x: np.ndarray) -> np.ndarray:
            return x[:, 0]
    else:
        tot = float(weight.sum())

        def wmean(x: np.ndarray) -> np.ndarray:
            return _add(x * weight, axis=-1) / tot

    Lm = wmean(L)
    if len(waits) == 1:
        mean_wait = p95_wait = float(waits[0])
    else:
        mean_wait, p95_wait = float(waits.mean()), float(np.percentile(waits, 95))
    objectives = {
        "composite": 0.5 * (1.0 - Lm) + 0.5 * d_bw,
        "L": Lm,
        "std_cpu": wmean(s[:, 0]),
        "std_ram": wmean(s[:, 1]),
        "std_bw": wmean(s_bw),
        "U_avg": wmean(u_avg),
        "D_BW": d_bw,
        "mean_wait": np.full(G, mean_wait),
        "p95_wait": np.full(G, p95_wait),
    }
    return objectives, L


# --------------------------------------------------------------------------------------
# Batch objectives: many complete mappings with canonical routes, vectorised
# --------------------------------------------------------------------------------------

#: the dense route-incidence table [P * P, R] is built up to this many entries (else the
#: loads of the task links are summed with a padded route table and bincount)
DENSE_INCIDENCE_MAX = 4_000_000
#: the padded route table [P * P, H] is refused beyond this many entries (issue 28: a
#: 2,000-node ring needs 8 * 10^9); the per-solution referee has no such limit
FLAT_MAX_CELLS = 20_000_000


@dataclass(frozen=True)
class Flat:
    """Task nodes and task links of all jobs numbered globally in job order, the canonical
    routes as tables, and the segments of the jobs started at their arrivals."""

    N: int
    V: int
    J: int
    task_job: np.ndarray  # [N] job of each task node
    task_cpu: np.ndarray  # [N]
    task_ram: np.ndarray  # [N]
    #: [2 J, N]: row j = CPU demands of job j's task nodes (0 elsewhere), row J + j = RAM
    demand_by_job: np.ndarray
    job_first: np.ndarray  # [J + 1] first global task node of each job (and N)
    lsrc: np.ndarray  # [V] global task node at each task link's source
    ldst: np.ndarray  # [V]
    link_job: np.ndarray  # [V]
    link_mask: np.ndarray  # [J, V] 0/1: task link of job j
    job_first_link: np.ndarray  # [J + 1]
    lo: np.ndarray  # [V] bw_min
    hi: np.ndarray  # [V] bw_max
    lo_tol: np.ndarray  # [V] bw_min minus the tolerance
    hi_tol: np.ndarray  # [V] bw_max plus the tolerance
    elastic: np.ndarray  # [V] bool: bw_max > bw_min
    span: np.ndarray  # [V] bw_max - bw_min (1 where not elastic)
    #: [P * P, H] link indices of the canonical route from a to b (row a * P + b), -1 padded
    route_pad: np.ndarray
    #: [P * P, R] 0/1 incidence of the canonical routes, or None when too large
    route_inc: np.ndarray | None
    #: [P * P] bool: a == b or b is reachable from a
    routable: np.ndarray
    #: segments of the jobs started at their arrivals (see :func:`segments`)
    seg_a: np.ndarray
    seg_b: np.ndarray
    active: np.ndarray  # [S, J] 0/1
    checked: np.ndarray  # [S] bool
    #: [2, 1, P] capacity limits (with the tolerance) of CPU and RAM beside the background
    free_tol2: np.ndarray


def _build_flat(pre: _Pre) -> Flat:
    P, R, J = pre.P, pre.R, len(pre.jobs)
    task_job, cpu, ram, first, lsrc, ldst, ljob, lfirst, lo, hi = [], [], [], [0], [], [], [], [0], [], []
    off = 0
    for ji, job in enumerate(pre.jobs):
        task_job += [ji] * job.n
        cpu += job.cpu.tolist()
        ram += job.ram.tolist()
        for s, t, a, b in job.links:
            lsrc.append(off + s)
            ldst.append(off + t)
            ljob.append(ji)
            lo.append(a)
            hi.append(b)
        off += job.n
        first.append(off)
        lfirst.append(len(lsrc))
    N, V = off, len(lsrc)
    task_job_a = np.array(task_job, dtype=np.int64)
    demand = np.zeros((2 * J, N))
    demand[task_job_a, np.arange(N)] = cpu
    demand[J + task_job_a, np.arange(N)] = ram
    link_job = np.array(ljob, dtype=np.int64)
    link_mask = np.zeros((J, V))
    link_mask[link_job, np.arange(V)] = 1.0
    H = max(pre.routes.max_hops(), 1) if P * P <= FLAT_MAX_CELLS else P
    if P * P * H > FLAT_MAX_CELLS:
        raise InputError(f"the vectorised mapping evaluator needs a {P} x {P} x {H} route table (more than "
                         f"{FLAT_MAX_CELLS:,} entries); this network is too large for the population-based "
                         "solvers", field="mapping.nodes")
    route_pad = np.full((P * P, H), -1, dtype=np.int64)
    routable = np.zeros(P * P, dtype=bool)
    dense = P * P * R <= DENSE_INCIDENCE_MAX
    route_inc = np.zeros((P * P, R)) if dense else None
    for a in range(P):
        for b in range(P):
            r = pre.routes[a][b]
            if r is not None:
                routable[a * P + b] = True
                route_pad[a * P + b, :len(r)] = r
                if route_inc is not None:
                    route_inc[a * P + b, list(r)] = 1.0
    lo_a = np.array(lo, dtype=float)
    hi_a = np.array(hi, dtype=float)
    seg_a, seg_b, active, checked = segments(pre, pre.arrivals)
    return Flat(
        N=N, V=V, J=J, task_job=task_job_a, task_cpu=np.array(cpu, dtype=float), task_ram=np.array(ram, dtype=float),
        demand_by_job=demand, job_first=np.array(first, dtype=np.int64), lsrc=np.array(lsrc, dtype=np.int64),
        ldst=np.array(ldst, dtype=np.int64), link_job=link_job, link_mask=link_mask,
        job_first_link=np.array(lfirst, dtype=np.int64), lo=lo_a, hi=hi_a,
        lo_tol=lo_a - ATOL - RTOL * lo_a, hi_tol=hi_a + ATOL + RTOL * hi_a, elastic=hi_a > lo_a,
        span=np.where(hi_a > lo_a, hi_a - lo_a, 1.0), route_pad=route_pad, route_inc=route_inc,
        routable=routable, seg_a=seg_a, seg_b=seg_b, active=active, checked=checked,
        free_tol2=np.stack([pre.free_cpu_tol, pre.free_ram_tol])[:, None, :],
    )


_flat = IdentityCache(_build_flat, size=64)


def flat(pre: _Pre) -> Flat:
    """The global numbering and route tables of ``pre`` (cached by identity)."""
    return _flat(pre)


def node_loads(pre: _Pre, fl: Flat, nodes: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
    """CPU and RAM loads of G complete mappings ``nodes`` [G, N] per time segment:
    [G, 2, S, P]. ``active`` [S, J] (default: the jobs at their arrivals)."""
    G = nodes.shape[0]
    P, J = pre.P, fl.J
    onehot = (nodes[:, :, None] == np.arange(P)).astype(float)  # [G, N, P]
    cr = fl.demand_by_job @ onehot  # [G, 2J, P]
    if J == 1:
        return cr[:, :, None, :]  # [G, 2, 1, P]
    return (fl.active if active is None else active) @ cr.reshape(G, 2, J, P)  # [G, 2, S, P]


def link_loads(pre: _Pre, fl: Flat, nodes: np.ndarray, bandwidth: np.ndarray,
               active: np.ndarray | None = None) -> np.ndarray:
    """Physical-link loads [G, S, R] of G complete solutions: each non-co-located task link
    loads every link of its canonical route with its bandwidth."""
    G = nodes.shape[0]
    P, R, J = pre.P, pre.R, fl.J
    act = fl.active if active is None else active
    if not (R and fl.V):
        return np.zeros((G, act.shape[0], R))
    pair = nodes[:, fl.lsrc] * P + nodes[:, fl.ldst]  # [G, V]
    if fl.route_inc is not None:
        inc = fl.route_inc[pair]  # [G, V, R]
        if J == 1:
            return bandwidth[:, None, :] @ inc  # [G, 1, R]
        return act @ ((bandwidth[:, None, :] * fl.link_mask) @ inc)  # [G, S, R]
    rp = fl.route_pad[pair]  # [G, V, H]
    valid = rp >= 0
    base = (np.arange(G, dtype=np.int64) * J)[:, None]
    flat_idx = ((base + fl.link_job)[:, :, None] * R + rp)[valid]
    w = np.broadcast_to(bandwidth[:, :, None], rp.shape)[valid]
    job_bw = np.bincount(flat_idx, weights=w, minlength=G * J * R).reshape(G, J, R)
    return job_bw if J == 1 else act @ job_bw


def batch_loads(pre: _Pre, fl: Flat, nodes: np.ndarray, bandwidth: np.ndarray,
                active: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(:func:`node_loads`, :func:`link_loads`) of G complete solutions."""
    return node_loads(pre, fl, nodes, active), link_loads(pre, fl, nodes, bandwidth, active)


def batch_objectives(pre: _Pre, nodes: np.ndarray, bandwidth: np.ndarray,
                     starts: np.ndarray | None = None, *,
                     loads: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The referee's objectives of ``G`` complete solutions at once.

    ``nodes`` [G, N]: the physical node of every task node (all jobs, numbered globally in job
    order); ``bandwidth`` [G, V]: every task link's bandwidth (global, job order); every
    non-co-located task link is routed over its canonical route; jobs start at ``starts``
    [J] (default: their arrivals).  Returns objective -> [G] array (the names of
    :func:`evaluate`) plus ``feasible`` [G] bool (no violation the referee would report) and
    ``violation`` [G] >= 0: the total amount beyond the referee's tolerances (CPU, RAM and
    link overloads, bandwidth outside [BWmin, BWmax]) plus one per unroutable task link.
    Equal to :func:`evaluate` on the same decisions (the objectives are the same code,
    :func:`_score`).  ``loads``: the :func:`batch_loads` of exactly these arguments when the
    caller already has them (the metaheuristics' decoder does)."""
    fl = _flat(pre)
    nodes = np.asarray(nodes, dtype=np.int64)
    bandwidth = np.asarray(bandwidth, dtype=float)
    G = nodes.shape[0]
    if nodes.shape != (G, fl.N) or bandwidth.shape != (G, fl.V):
        raise ValueError(f"batch_objectives needs nodes [G, {fl.N}] and bandwidth [G, {fl.V}], got "
                         f"{nodes.shape} and {bandwidth.shape}")
    if fl.N and G and (nodes.min() < 0 or nodes.max() >= pre.P):
        raise ValueError(f"physical node index out of range (0..{pre.P - 1})")
    if starts is None:
        starts = pre.arrivals
        seg_a, seg_b, active, checked = fl.seg_a, fl.seg_b, fl.active, fl.checked
    else:
        starts = np.asarray(starts, dtype=float)
        seg_a, seg_b, active, checked = segments(pre, starts)
    seg_cr, seg_bw = batch_loads(pre, fl, nodes, bandwidth, active) if loads is None else loads
    over_cr = np.maximum(seg_cr - fl.free_tol2, 0.0)  # [G, 2, S, P]
    over_bw = np.maximum(seg_bw - pre.bw_tol, 0.0)  # [G, S, R]
    if not checked.all():
        over_cr = over_cr * checked[:, None]
        over_bw = over_bw * checked[:, None]
    violation = _add(over_cr.reshape(G, -1), axis=1) + _add(over_bw.reshape(G, -1), axis=1)
    if fl.V:
        a, b = nodes[:, fl.lsrc], nodes[:, fl.ldst]
        col = a == b
        unroutable = ~fl.routable[a * pre.P + b]
        out = np.maximum(fl.lo_tol - bandwidth, 0.0) + np.maximum(bandwidth - fl.hi_tol, 0.0)
        violation = violation + _add(np.where(col, 0.0, out) + unroutable, axis=1)
        frac = np.minimum(np.maximum((bandwidth - fl.lo) / fl.span, 0.0), 1.0)
        delta = np.where(col | ~fl.elastic, 1.0, frac)
        d_bw = _add(delta, axis=1) / fl.V
    else:
        d_bw = np.ones(G)
    objectives, _ = _score(pre, seg_cr, seg_bw, seg_b - seg_a, d_bw, starts - pre.arrivals)
    objectives["violation"] = violation
    objectives["feasible"] = violation == 0
    return objectives


__all__ = ["evaluate", "precompute", "batch_objectives", "batch_loads", "node_loads", "link_loads", "flat",
           "segments", "Flat"]
