"""Schedules of the offloading data (seconds or ticks): serial schedule generation, the
HEFT-style list schedule and the all-cloud schedule (the exact models' warm starts and
windows), left-justification of a model's schedule on the exact data, and decoding to
referee-checked decisions.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

from edgebench.formulations.offloading_problem import OffloadingData, objective_of
from edgebench.instances.model import Instance
from edgebench.instances.timeline import Timeline, upward_ranks

# ======================================================================================
# Schedules: serial schedule generation, left-justification, list heuristic
# ======================================================================================


def _ready(data: OffloadingData, g: int, s: int, server: list[int], start: list[float]) -> float:
    r = data.rel[g][s]
    for k in _in_edges(data)[g]:
        a = data.edges[k][2]
        r = max(r, start[a] + data.dur[a][server[a]] + data.delay[k][(server[a], s)])
    return r


_IN_EDGES: dict[int, tuple[Any, list[list[int]]]] = {}


def _in_edges(data: OffloadingData) -> list[list[int]]:
    key = id(data.edges)
    hit = _IN_EDGES.get(key)
    if hit is not None and hit[0] is data.edges:
        return hit[1]
    ins: list[list[int]] = [[] for _ in range(data.N)]
    for k, (_, _, _, b) in enumerate(data.edges):
        ins[b].append(k)
    if len(_IN_EDGES) > 64:
        _IN_EDGES.clear()
    _IN_EDGES[key] = (data.edges, ins)
    return ins


def serial_schedule(data: OffloadingData, server: list[int], order: list[int]) -> list[float]:
    """Serial schedule generation: tasks in ``order`` (precedence-feasible), each at the
    earliest time on its server that respects releases, predecessors + delays and the
    capacity left by the tasks already placed (gaps may be filled; the suite's one timeline)."""
    start = [math.nan] * data.N
    timeline = Timeline(data.cap)
    for g in order:
        s = server[g]
        start[g] = timeline.place(s, _ready(data, g, s, server, start), data.dur[g][s], *data.demand[g])
    return start


def upward_rank(data: OffloadingData) -> list[float]:
    """HEFT's upward rank (:func:`edgebench.instances.timeline.upward_ranks`, the one shared
    with the list schedulers): w-bar = mean duration over the hosts, c-bar = mean delay over
    the ordered pairs of distinct hosts of the edge's two ends (0 when there is none)."""
    wbar = [sum(d.values()) / len(d) for d in data.dur]
    out: list[list[tuple[float, int]]] = [[] for _ in range(data.N)]
    for k, (_, _, a, b) in enumerate(data.edges):
        far = [v for (p, q), v in data.delay[k].items() if p != q]
        out[a].append((sum(far) / len(far) if far else 0.0, b))
    return upward_ranks(data.topo, wbar, out)


def list_schedule(data: OffloadingData) -> tuple[list[int], list[float]]:
    """HEFT-style heuristic: tasks by (workflow arrival, decreasing upward rank), each on the
    host giving the earliest finish (insertion into gaps, capacities respected)."""
    rank = upward_rank(data)
    pos = {g: i for i, g in enumerate(data.topo)}
    order = sorted(range(data.N), key=lambda g: (data.arrival[data.tasks[g][0]], -rank[g], pos[g]))
    # a task may only come after its predecessors: rank ties with zero durations are broken
    # by the topological position, but make it explicit
    order = _stable_topological(data, order)
    server = [-1] * data.N
    start = [math.nan] * data.N
    timeline = Timeline(data.cap)
    for g in order:
        best = None
        for s in data.hosts[g]:
            t = timeline.earliest_start(s, _ready(data, g, s, server, start), data.dur[g][s], *data.demand[g])
            f = t + data.dur[g][s]
            if best is None or f < best[0] - 1e-12:
                best = (f, t, s)
        assert best is not None
        f, t, s = best
        server[g], start[g] = s, t
        timeline.reserve(s, t, data.dur[g][s], *data.demand[g])
    return server, start


def cloud_schedule(data: OffloadingData) -> tuple[list[int], list[float]] | None:
    """Every task on the cloud (no capacities there), each as early as its release and its
    predecessors allow; None when some task cannot run on the cloud."""
    clouds = [s for s in range(data.S) if data.cap[s] is None]
    if not clouds or not all(clouds[0] in data.hosts[g] for g in range(data.N)):
        return None
    server = [clouds[0]] * data.N
    return server, serial_schedule(data, server, data.topo)


def _late(data: OffloadingData, server: list[int], start: list[float]) -> bool:
    """Whether a schedule (seconds) misses the user's horizon."""
    fin = max(start[g] + data.dur[g][server[g]] for g in range(data.N))
    return data.horizon is not None and fin > data.horizon + 1e-9 * max(1.0, abs(data.horizon))


def best_heuristic(data: OffloadingData) -> tuple[list[int], list[float]]:
    """The better (mean makespan) of the list schedule and the all-cloud schedule (the
    all-cloud one is optimal on `daggen` 100 x 8, seed 0, where the list schedule is 26 %
    above it), meeting the horizon if there is one."""
    cands = [c for c in (list_schedule(data), cloud_schedule(data)) if c is not None]

    return min(cands, key=lambda c: (_late(data, *c), objective_of(data, *c)))


def _stable_topological(data: OffloadingData, order: list[int]) -> list[int]:
    """The precedence-feasible order closest to ``order`` (repeatedly the first ready task)."""
    rank = {g: i for i, g in enumerate(order)}
    indeg = [len(data.preds[g]) for g in range(data.N)]
    heap = [(rank[g], g) for g in range(data.N) if indeg[g] == 0]
    heapq.heapify(heap)
    out = []
    while heap:
        _, g = heapq.heappop(heap)
        out.append(g)
        for h in data.succs[g]:
            indeg[h] -= 1
            if indeg[h] == 0:
                heapq.heappush(heap, (rank[h], h))
    return out


def left_justify(data: OffloadingData, server: list[int], start: list[float], finish: list[float],
                 tol: float = 0.0) -> list[float]:
    """Earliest schedule (on ``data``'s exact durations) that keeps the order of ``start`` /
    ``finish`` (a feasible schedule of the same servers, possibly with longer, e.g. ceiled,
    durations): precedence + delays, releases, and i -> j for every pair on the same edge
    server whose old intervals do not overlap (finish_i <= start_j + tol). Tasks running
    together in the new schedule overlapped pairwise in the old one, hence (intervals,
    Helly) at one common instant, where the old schedule respected the capacities; so the
    result is feasible, and no task starts later than before."""
    N = data.N
    arcs: list[list[tuple[int, float]]] = [[] for _ in range(N)]  # j -> [(i, lag)]: s_j >= s_i + lag
    indeg = [0] * N
    out: list[list[int]] = [[] for _ in range(N)]
    for k, (_, _, a, b) in enumerate(data.edges):
        arcs[b].append((a, data.dur[a][server[a]] + data.delay[k][(server[a], server[b])]))
        out[a].append(b)
        indeg[b] += 1
    by_server: dict[int, list[int]] = {}
    for g in range(N):
        s = server[g]
        holds = finish[g] > start[g] and data.dur[g][s] > 0 and any(x > 0 for x in data.demand[g])
        if data.cap[s] is not None and holds:
            by_server.setdefault(s, []).append(g)
    for s, gs in by_server.items():
        for i in gs:
            for j in gs:
                if i != j and finish[i] <= start[j] + tol and i not in data.anc[j]:
                    arcs[j].append((i, data.dur[i][s]))
                    out[i].append(j)
                    indeg[j] += 1
    order = [g for g in range(N) if indeg[g] == 0]
    k = 0
    while k < len(order):
        for h in out[order[k]]:
            indeg[h] -= 1
            if indeg[h] == 0:
                order.append(h)
        k += 1
    if len(order) != N:  # cyclic order (inconsistent input): keep the schedule as it is
        return list(start)
    new = [0.0] * N
    for j in order:
        t = data.rel[j][server[j]]
        for i, lag in arcs[j]:
            t = max(t, new[i] + lag)
        new[j] = t
    return new


# ======================================================================================
# Referee scoring and the decisions model
# ======================================================================================


def to_decisions(data: OffloadingData, server: list[int], start: list[float]):
    from edgebench.solution import OffloadingDecisions, TaskSchedule, WorkflowDecision

    wfs = []
    for w in range(data.W):
        wfs.append(WorkflowDecision(tasks=tuple(TaskSchedule(server=int(server[g]), start=max(0.0, float(start[g])))
                                                for g in data.gid[w])))
    return OffloadingDecisions(workflows=tuple(wfs))


def referee_score(instance: Instance, decisions) -> tuple[bool, float, str]:
    from edgebench.referee import evaluate_decisions

    ev = evaluate_decisions(instance, decisions)
    msg = "; ".join(v.message for v in ev.violations[:3])
    return ev.feasible, float(ev.primary_value), msg


def decode_schedule(instance: Instance, data: OffloadingData, server: list[int], start: list[float],
                    finish: list[float], tol: float = 0.0):
    """From a model's servers and (model-unit-converted) starts/finishes to referee-checked
    decisions: left-justified on the exact data, else as given, else re-generated serially
    in the model's start order. Returns (decisions, objective, note)."""
    tries = []
    lj = left_justify(data, server, start, finish, tol)
    tries.append(("left-justified", lj))
    tries.append(("as solved", list(start)))
    msgs = []
    for name, st in tries:
        dec = to_decisions(data, server, st)
        ok, obj, msg = referee_score(instance, dec)
        if ok:
            return dec, obj, name
        msgs.append(f"{name}: {msg}")
    pos = {g: i for i, g in enumerate(data.topo)}
    order = _stable_topological(data, sorted(range(data.N), key=lambda g: (start[g], pos[g])))
    st = serial_schedule(data, server, order)
    dec = to_decisions(data, server, st)
    ok, obj, msg = referee_score(instance, dec)
    if ok:
        return dec, obj, "serial re-schedule (" + " | ".join(msgs) + ")"
    raise RuntimeError("decoded schedule is not referee-feasible: " + " | ".join(msgs + [msg]))
