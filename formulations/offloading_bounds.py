"""Lower bounds of the offloading problem computed from the data alone (no solver).

Proofs: docs/formulations/offloading.md, §4a. Every function works in the data's time unit
(seconds, or ticks after ``ticked``) and bounds the *unrounded* problem when given the exact data.

* :func:`heads` / :func:`tails` — per task and host, the earliest start of the task on that
  host and the least time from its finish to its workflow's end, with transfer delays (a
  predecessor on another host pays at least its delay) and, on exclusive servers (no two
  tasks fit together), the serialisation of the neighbours that share the host;
* :func:`load_bound` — the workflow that finishes last ends after the work of every subset
  ``J = {head >= a, tail >= b}`` spread over the edge servers, each server's busy window
  starting no earlier than the head of its first task and ending no later than ``C`` minus
  the tail of its last one; tasks that could only run on the cloud by finishing after ``C``
  count as edge work (a fixed point in ``C``);
* :func:`heads_tails_bound` — the mean makespan: each workflow at least its longest
  head + duration + tail, the last one at least the load bound;
* :func:`critical_path_bound` — the mean over workflows of the longest chain of shortest
  durations after the releases (transfers >= 0); :func:`work_bound` — one workflow and no
  cloud: all the work of every task at its least CPU (memory) x time, over the summed
  capacity;
* :func:`lower_bounds` / :func:`lower_bound` — all of them / the largest: the one home of the
  offloading lower bounds, used by the exact models (objective floor, reported bound) and by
  certification (``edgebench.runner.bounds``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.formulations.offloading_problem import OffloadingData


def exclusive_servers(data: OffloadingData) -> list[bool]:
    """Edge servers on which no two tasks with a positive duration and demand can run at
    once (for some resource the two smallest positive demands exceed the capacity)."""
    out = []
    for s in range(data.S):
        cap = data.cap[s]
        if cap is None:
            out.append(False)
            continue
        ex = False
        for r in range(2):
            ds = sorted(data.demand[g][r] for g in range(data.N) if s in data.dur[g] and data.dur[g][s] > 0
                        and data.demand[g][r] > 0)
            # every task with a positive duration must hold this resource, else it may overlap
            holders = sum(1 for g in range(data.N) if s in data.dur[g] and data.dur[g][s] > 0)
            if len(ds) == holders and len(ds) >= 2 and ds[0] + ds[1] > cap[r] * (1 + 1e-12):
                ex = True
        out.append(ex)
    return out


def _share(data: OffloadingData, g: int, s: int, r: int) -> float:
    """Share of edge server s's time that g uses in resource r: d_gs rho_gr / C_sr."""
    c, d = data.cap[s][r], data.demand[g][r]
    if d <= 0 or data.dur[g][s] <= 0:
        return 0.0
    return math.inf if c <= 0 else data.dur[g][s] * d / c


def _one_machine(jobs: list[tuple[float, float]]) -> float:
    """Least completion time of jobs (release, duration) run one at a time (release order)."""
    t = -math.inf
    for r, d in sorted(jobs):
        t = max(t, r) + d
    return t


def _through(data: OffloadingData, g: int, s: int, nbrs: list[tuple[int, int]], val: list[dict[int, float]],
             excl: list[bool], forward: bool) -> float:
    """Bound contributed by g's neighbours (edge index k, neighbour b) when g runs on s: a
    neighbour on another host p pays val[b][p] + d_bp + delay, one on s pays val[b][s] +
    d_bs and, when s is exclusive, all neighbours on s run one after the other there. The
    neighbours put on s can be taken as those with the largest off-s values (a prefix)."""
    off, on = [], []
    for k, b in nbrs:
        dl = data.delay[k]
        m = math.inf
        for p in data.hosts[b]:
            if p != s:
                c = dl[(p, s)] if forward else dl[(s, p)]
                m = min(m, val[b][p] + data.dur[b][p] + c)
        off.append(m)
        on.append((val[b][s], data.dur[b][s]) if s in data.dur[b] else None)
    order = sorted(range(len(nbrs)), key=lambda i: -off[i])
    best = math.inf
    placed: list[tuple[float, float]] = []
    for pos in range(len(order) + 1):
        rest = off[order[pos]] if pos < len(order) else -math.inf
        if excl[s]:
            here = _one_machine(placed) if placed else -math.inf
        else:
            here = max((r + d for r, d in placed), default=-math.inf)
        best = min(best, max(rest, here))
        if pos == len(order) or on[order[pos]] is None:
            break  # this neighbour cannot share s: it stays off s, and so do the later prefixes
        placed.append(on[order[pos]])
    return best


def heads(data: OffloadingData, excl: list[bool] | None = None) -> list[dict[int, float]]:
    """h[g][s] <= start of g in every feasible schedule that puts g on s."""
    excl = exclusive_servers(data) if excl is None else excl
    ins: list[list[tuple[int, int]]] = [[] for _ in range(data.N)]
    for k, (_, _, a, b) in enumerate(data.edges):
        ins[b].append((k, a))
    h: list[dict[int, float]] = [dict() for _ in range(data.N)]
    for g in data.topo:
        for s in data.hosts[g]:
            h[g][s] = max(data.rel[g][s], _through(data, g, s, ins[g], h, excl, True)) if ins[g] else data.rel[g][s]
    return h


def tails(data: OffloadingData, excl: list[bool] | None = None) -> list[dict[int, float]]:
    """q[g][s] <= (end of g's workflow) - (finish of g) in every feasible schedule that puts g on s."""
    excl = exclusive_servers(data) if excl is None else excl
    outs: list[list[tuple[int, int]]] = [[] for _ in range(data.N)]
    for k, (_, _, a, b) in enumerate(data.edges):
        outs[a].append((k, b))
    q: list[dict[int, float]] = [dict() for _ in range(data.N)]
    for g in reversed(data.topo):
        for s in data.hosts[g]:
            q[g][s] = max(0.0, _through(data, g, s, outs[g], q, excl, False)) if outs[g] else 0.0
    return q


def _windowed_load(head: np.ndarray, tail: np.ndarray, work: np.ndarray, m: int, full: bool = True) -> float:
    """max over J = {head >= a, tail >= b} of min over u = 1..min(m, |J|) of (work(J) + (u
    smallest heads of J) + (u smallest tails of J)) / u (u: the number of servers used);
    ``full=False``: J = every task only (a quick value below the full one)."""
    if len(work) == 0:
        return -math.inf
    best = -math.inf
    for a in (np.unique(head) if full else head.min(keepdims=True)):
        ia = head >= a
        hd, tl, wk = head[ia], tail[ia], work[ia]
        oh, ot = np.argsort(hd, kind="stable"), np.argsort(tl, kind="stable")
        bs = np.unique(tl) if full else tl.min(keepdims=True)
        M = tl[None, :] >= bs[:, None]  # row: J for threshold b
        cnt = M.sum(axis=1)
        total = M @ wk
        Mh, Mt = M[:, oh], M[:, ot]
        ch, ct = np.cumsum(Mh, axis=1), np.cumsum(Mt, axis=1)
        val = np.full(len(bs), np.inf)
        for u in range(1, m + 1):
            hs = ((ch <= u) & Mh) @ hd[oh]
            ts = ((ct <= u) & Mt) @ tl[ot]
            val = np.where(cnt >= u, np.minimum(val, (total + hs + ts) / u), val)
        best = max(best, float(val.max()))
    return best


def load_bound(data: OffloadingData, h: list[dict[int, float]], q: list[dict[int, float]],
               floor: float = -math.inf) -> float:
    """A lower bound of the latest workflow end (C_max) given that ``floor`` is one, -inf when
    none applies (§4a)."""
    edge = [s for s in range(data.S) if data.cap[s] is not None]
    if not edge:
        return -math.inf
    cloud_end = []  # least end of g's workflow if g runs on the cloud (inf: it cannot)
    for g in range(data.N):
        cl = [s for s in data.hosts[g] if data.cap[s] is None]
        cloud_end.append(min((h[g][s] + data.dur[g][s] + q[g][s] for s in cl), default=math.inf))
    on_edge = [[s for s in data.hosts[g] if data.cap[s] is not None] for g in range(data.N)]

    def bound_for(forced: list[int], full: bool = True) -> float:
        forced = [g for g in forced if on_edge[g]]
        if not forced:
            return -math.inf
        hd = np.array([min(h[g][s] for s in on_edge[g]) for g in forced])
        tl = np.array([min(q[g][s] for s in on_edge[g]) for g in forced])
        # resource r, server by server: the share d_gs rho_gr / C_sr of server s's time (valid
        # for one resource at a time: two tasks may each fill a different resource), and the
        # work rho_gr d_gs against the summed capacities
        best = -math.inf
        for r in range(2):
            sh = np.array([min(_share(data, g, s, r) for s in on_edge[g]) for g in forced])
            best = max(best, _windowed_load(hd, tl, sh, len(edge), full))
            tot = sum(data.cap[s][r] for s in edge)
            if tot > 0:
                wk = np.array([min(data.demand[g][r] * data.dur[g][s] for s in on_edge[g]) for g in forced]) / tot
                best = max(best, _windowed_load(hd, tl, wk, 1, full))
        return best

    # In every schedule C_max >= L(F(C_max)), F(C) = the tasks that cannot end on the cloud by
    # C (constant between two breakpoints of `cloud_end`). Scanning the intervals [lo, hi)
    # upwards, the first with max(lo, L) < hi gives a bound: the interval holding C_max
    # satisfies it, and an earlier one gives a value below its hi <= C_max. L is evaluated
    # fully only where its quick value (J = all of F, below the full one) passes the test.
    # C_max >= floor: intervals below it cannot hold C_max and are skipped.
    cuts = sorted({c for c in cloud_end if c < math.inf})
    for lo, hi in zip([-math.inf] + cuts, cuts + [math.inf]):
        if hi <= floor:
            continue
        lo = max(lo, floor)
        forced = [g for g in range(data.N) if cloud_end[g] >= hi]
        if max(lo, bound_for(forced, full=False)) >= hi:
            continue
        val = max(lo, bound_for(forced))
        if val < hi:
            return val
    return -math.inf  # unreachable: the last interval is unbounded


def heads_tails_bound(data: OffloadingData) -> float:
    """Lower bound of the mean makespan (data's unit); proof in offloading.md §4a."""
    excl = exclusive_servers(data)
    h, q = heads(data, excl), tails(data, excl)
    path = [max(min(h[g][s] + data.dur[g][s] + q[g][s] for s in data.hosts[g]) for g in data.gid[w])
            for w in range(data.W)]
    a = [data.arrival[w] * data.scale for w in range(data.W)]
    load = load_bound(data, h, q, floor=max(path))
    extra = min(max(0.0, load - path[w]) for w in range(data.W)) if load > -math.inf else 0.0
    return (sum(p - aw for p, aw in zip(path, a)) + extra) / data.W


def critical_path_bound(data: OffloadingData) -> float:
    """Mean over workflows of ``max_g f[g] - a_w`` with ``f[g] = min over hosts s of
    max(r_gs, max over predecessors p of f[p]) + d_gs`` (data's unit): every task starts after
    its release and its predecessors' finishes (transfers >= 0) and runs ``d_gs``; §4a."""
    f = [0.0] * data.N
    for g in data.topo:
        ready = max((f[p] for p in data.preds[g]), default=-math.inf)
        f[g] = min(max(data.rel[g][s], ready) + data.dur[g][s] for s in data.hosts[g])
    return sum(max(f[g] for g in data.gid[w]) - data.arrival[w] * data.scale for w in range(data.W)) / data.W


def work_bound(data: OffloadingData) -> float | None:
    """One workflow, no cloud: on every server the running tasks' demand of a resource never
    exceeds its capacity, so ``sum_g demand_g x d_g,s(g) <= (C - a) x sum_s capacity_s``; hence
    ``C - a >= sum_g min_s demand_g x d_gs / sum_s capacity_s`` (the larger of CPU and memory;
    §4a). None where it does not apply."""
    if data.W != 1 or any(c is None for c in data.cap):
        return None
    best = 0.0
    for r in range(2):
        cap = sum(c[r] for c in data.cap if c is not None)
        if cap > 0:
            work = sum(min(data.demand[g][r] * data.dur[g][s] for s in data.hosts[g]) for g in range(data.N))
            best = max(best, work / cap)
    return best


#: the kinds of :func:`lower_bounds`, in the order a tie is credited
KINDS = ("critical path", "load", "heads, tails and windowed load")


def lower_bounds(data: OffloadingData) -> dict[str, float]:
    """Every proven lower bound of the mean makespan that applies (data's unit), by kind."""
    out = {"critical path": critical_path_bound(data)}
    work = work_bound(data)
    if work is not None:
        out["load"] = work
    out["heads, tails and windowed load"] = heads_tails_bound(data)
    return out


def lower_bound(data: OffloadingData) -> float:
    """The largest proven lower bound of the mean makespan (data's unit)."""
    return max(lower_bounds(data).values())
