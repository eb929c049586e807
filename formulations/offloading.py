"""Exact models of the offloading family: DAG workflows scheduled on edge servers and a cloud.

One mathematical problem (``docs/formulations/offloading.md``), two exact models:

* ``offloading-cpsat`` — a CP-SAT interval model written directly with
  ``ortools.sat.python.cp_model``: per task and feasible server an optional fixed-size
  interval, exactly one presence per task, ``AddCumulative`` (``AddNoOverlap`` where every
  pair of tasks conflicts) per edge server and resource, precedence with transfer delays as
  linear constraints enforced by the two presence literals, one makespan variable per
  workflow. Times are scaled to integer ticks (``time_scale`` per second) and every
  duration, delay and release is rounded UP, so every CP-SAT solution decodes to a
  referee-feasible schedule; optimality is proven for that ceiled problem and the reported
  bound is lowered by the proven rounding adjustment (zero when the data is exact in ticks).
  Heads / tails per host and a floor on the objective from ``offloading_bounds`` are added
  (``cuts``), and with a time limit a large-neighbourhood search (``offloading_lns``) takes
  over from CP-SAT's incumbent for a share ``lns`` of it; objective-cap probes
  (``offloading_probe``) raise the bound when the search stalls and in a share ``probe``.
* ``offloading-milp`` — a continuous-time disjunctive MILP with a resource-flow capacity
  model (Artigues, Michelon & Reusser 2003), built ONCE as a
  :class:`~edgebench.formulations.linear.LinearModel` on the exact float data and solved
  through any backend of :func:`~edgebench.formulations.linear.solve_linear` (OR-Tools
  SCIP / CBC / HiGHS, PuLP CBC / HiGHS, Pyomo HiGHS).

Both decode to :class:`~edgebench.solution.OffloadingDecisions` (server and start per task),
left-justify the schedule on the exact data keeping the model's order (never later than the
model's starts) and score it with the referee: the reported objective is the referee's
``mean_makespan`` of the decoded schedule. Build, solve and decode are separate functions;
``solve`` never raises (a crash, a missing solver or a timeout is a status with a message).
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

from edgebench.formulations.linear import LinearModel, run_cpsat
from edgebench.instances import semantics
from edgebench.instances.model import Instance
from edgebench.registry import make_result, register

FAMILY = "offloading"
MILP_BACKENDS = ("ortools-scip", "ortools-cbc", "ortools-highs", "pulp-cbc", "pulp-highs", "pyomo-highs")
DEFAULT_MILP_BACKEND = "ortools-scip"
#: relative tolerance deciding that a scaled number is an integer
_INT_TOL = 1e-9
#: time_scale="auto" tries 10**k ticks per second for k = 0.._AUTO_MAX_EXP and falls back to 10**5
#: (the rounding adjustment of the bound shrinks with the tick: 2N ticks, 2e-3 s at 100 tasks)
_AUTO_MAX_EXP = 5
_FALLBACK_SCALE = 100_000
#: "optimal" is claimed only when objective and proven bound agree within this relative tolerance
OPT_TOL = 1e-6
#: the LNS hands back to CP-SAT after this many steps in a row without a better schedule
LNS_PATIENCE = 12
#: resources are scaled by 10**k, k = 0.._RES_MAX_EXP (then ceiled demands / floored capacities)
_RES_MAX_EXP = 6


# ======================================================================================
# Data: one flat view of the instance (global task index g over all workflows)
# ======================================================================================


@dataclass
class OffloadingData:
    """Everything the models need, with times in seconds (or in integer ticks after
    :func:`ticked`). Task ``g`` is workflow ``tasks[g][0]``'s task ``tasks[g][1]``."""

    W: int
    S: int
    N: int
    arrival: list[float]
    tasks: list[tuple[int, int]]
    gid: list[list[int]]
    #: servers able to host each task (edge servers with enough cpu/mem, and the cloud)
    hosts: list[list[int]]
    #: dur[g][s] = image pulls + execution; rel[g][s] = arrival + input fetch
    dur: list[dict[int, float]]
    rel: list[dict[int, float]]
    #: (cpu, mem) demand of each task
    demand: list[tuple[float, float]]
    #: capacity (cpu, mem) of each server; None for the cloud (unbounded)
    cap: list[tuple[float, float] | None]
    #: edges as (workflow, edge index, source g, destination g)
    edges: list[tuple[int, int, int, int]]
    #: delay[k][(p, q)] = transfer time of edge k from server p to server q (p in hosts of
    #: the source, q in hosts of the destination; 0 when p == q)
    delay: list[dict[tuple[int, int], float]]
    preds: list[list[int]]
    succs: list[list[int]]
    #: a topological order of all tasks (workflow by workflow)
    topo: list[int]
    #: anc[g] = set of tasks that must finish before g starts (transitive predecessors)
    anc: list[frozenset[int]]
    #: user horizon (absolute time every task must finish by), or None
    horizon: float | None = None
    #: time unit: 1.0 = seconds, otherwise ticks per second
    scale: float = 1.0
    #: rounding flags of :func:`ticked` (durations / delays / releases rounded up somewhere)
    rounded: dict[str, bool] = field(default_factory=dict)

    def min_dur(self, g: int) -> float:
        return min(self.dur[g].values())

    def min_rel(self, g: int) -> float:
        return min(self.rel[g].values())


def prepare(instance: Instance, *, horizon: float | None = None) -> OffloadingData:
    """Flatten an offloading instance: durations, releases, delays from ``semantics``."""
    o = instance.offloading
    if o is None:
        raise ValueError(f"instance {instance.id!r} is not an offloading instance")
    W, S = len(o.workflows), len(o.servers)
    tasks: list[tuple[int, int]] = []
    gid: list[list[int]] = []
    for w, wf in enumerate(o.workflows):
        gid.append([])
        for t in range(len(wf.tasks)):
            gid[w].append(len(tasks))
            tasks.append((w, t))
    N = len(tasks)
    hosts, dur, rel, demand = [], [], [], []
    for w, t in tasks:
        hs = [s for s in range(S) if semantics.can_host(o, w, t, s)]
        hosts.append(hs)
        dur.append({s: float(semantics.task_duration(o, w, t, s)) for s in hs})
        rel.append({s: float(o.workflows[w].arrival) + float(semantics.input_time(o, w, t, s)) for s in hs})
        c, m = semantics.task_demand(o, w, t)
        demand.append((float(c), float(m)))
    cap = [None if srv.is_cloud else (float(srv.cpu), float(srv.mem)) for srv in o.servers]
    edges, delay = [], []
    preds: list[list[int]] = [[] for _ in range(N)]
    succs: list[list[int]] = [[] for _ in range(N)]
    for w, wf in enumerate(o.workflows):
        for e, edge in enumerate(wf.edges):
            a, b = gid[w][edge.src], gid[w][edge.dst]
            edges.append((w, e, a, b))
            delay.append({(p, q): float(semantics.transfer_time(o, w, e, p, q)) for p in hosts[a] for q in hosts[b]})
            preds[b].append(a)
            succs[a].append(b)
    topo = semantics.topological_order(N, ((a, b) for a in range(N) for b in succs[a]))
    anc: list[frozenset[int]] = [frozenset()] * N
    for g in topo:
        s: set[int] = set()
        for p in preds[g]:
            s.add(p)
            s |= anc[p]
        anc[g] = frozenset(s)
    return OffloadingData(W, S, N, [float(wf.arrival) for wf in o.workflows], tasks, gid, hosts, dur, rel,
                          demand, cap, edges, delay, preds, succs, topo, anc,
                          None if horizon is None else float(horizon))


def _ticks_up(x: float, q: float) -> tuple[int, bool]:
    """ceil(x * q) and whether x * q was already an integer (within a relative 1e-9)."""
    v = x * q
    r = round(v)
    if abs(v - r) <= _INT_TOL * max(1.0, abs(v)):
        return int(r), True
    return int(math.ceil(v)), False


def auto_time_scale(data: OffloadingData) -> int:
    """The smallest 10**k (k <= 5) ticks per second in which every duration, delay and
    release is an integer; 10**5 when there is none."""
    values = [v for d in data.dur for v in d.values()] + [v for d in data.rel for v in d.values()]
    values += [v for d in data.delay for v in d.values()]
    for k in range(_AUTO_MAX_EXP + 1):
        q = 10**k
        if all(_ticks_up(v, q)[1] for v in values):
            return q
    return _FALLBACK_SCALE


def ticked(data: OffloadingData, q: float) -> OffloadingData:
    """The same data in integer ticks, every duration, delay and release rounded UP."""
    flags = {"durations": False, "delays": False, "releases": False}

    def up(x: float, kind: str) -> float:
        v, exact = _ticks_up(x, q)
        if not exact:
            flags[kind] = True
        return float(v)

    dur = [{s: up(v, "durations") for s, v in d.items()} for d in data.dur]
    rel = [{s: up(v, "releases") for s, v in d.items()} for d in data.rel]
    delay = [{k: up(v, "delays") for k, v in d.items()} for d in data.delay]
    hz = None if data.horizon is None else float(math.floor(data.horizon * q * (1 + _INT_TOL) + _INT_TOL))
    return replace(data, dur=dur, rel=rel, delay=delay, horizon=hz, scale=float(q), rounded=flags)


def rounding_adjustment_ticks(td: OffloadingData) -> int:
    """How many ticks the optimum of the ceiled problem can exceed the true optimum (per
    workflow makespan, hence also for the mean), proven in docs/formulations/offloading.md:
    eps_start + delta_D + (delta_D + delta_C) (N - 1), where delta_D / delta_C are 1 when some
    duration / delay was rounded and eps_start is 1 when anything (releases included) was."""
    dD = int(td.rounded.get("durations", False))
    dC = int(td.rounded.get("delays", False))
    dR = int(td.rounded.get("releases", False))
    eps = 1 if (dD or dC or dR) else 0
    return eps + dD + (dD + dC) * max(td.N - 1, 0)


def safe_horizon(data: OffloadingData) -> float:
    """Every task of some optimal schedule finishes by this time: an optimal schedule can be
    left-justified, and then each start is a release or the end of a chain of distinct
    tasks and delays, so finish <= max release + sum of max durations + sum of max delays."""
    h = max(max(data.rel[g].values()) for g in range(data.N))
    h += sum(max(d.values()) for d in data.dur)
    h += sum(max(d.values(), default=0.0) for d in data.delay)
    return h


def combinatorial_bound(data: OffloadingData) -> float:
    """A lower bound of the mean makespan (data's time unit) from the data alone: heads and
    tails with delays and serialisation, and a windowed load bound (offloading_bounds.py,
    proof in docs/formulations/offloading.md §4a)."""
    from edgebench.formulations.offloading_bounds import combinatorial_bound as bound

    return bound(data)


def time_windows(data: OffloadingData, heuristic: tuple[list[int], list[float]] | None = None,
                 integral: bool = False) -> tuple[list[float], list[float], list[float]]:
    """(earliest start, latest finish) of every task and the latest finish of every workflow
    in some optimal schedule (with the user horizon, in every feasible one). The workflow
    bound is the safe horizon, tightened to arrival + W x (heuristic mean makespan) when a
    heuristic schedule meeting the horizon is given (no workflow of an optimal schedule can
    exceed W times the optimal mean); a task finishes by its workflow's bound minus the
    shortest chain of durations after it, and starts no earlier than its release and the
    shortest chain of durations before it."""
    H = safe_horizon(data)
    cw = [H] * data.W
    if heuristic is not None:
        srv, st = heuristic
        fin = [st[g] + data.dur[g][srv[g]] for g in range(data.N)]
        if data.horizon is None or max(fin) <= data.horizon + 1e-9 * max(1.0, abs(data.horizon)):
            ub = objective_of(data, srv, st)
            for w in range(data.W):
                cw[w] = min(H, data.arrival[w] * data.scale + data.W * ub)
    if data.horizon is not None:
        cw = [min(c, data.horizon) for c in cw]
    if integral:
        cw = [float(math.floor(c + 1e-9)) for c in cw]
    tail = [0.0] * data.N
    for g in reversed(data.topo):
        tail[g] = max((data.min_dur(b) + tail[b] for b in data.succs[g]), default=0.0)
    est = [0.0] * data.N
    for g in data.topo:
        est[g] = max([data.min_rel(g)] + [est[a] + data.min_dur(a) for a in data.preds[g]])
    lft = [cw[data.tasks[g][0]] - tail[g] for g in range(data.N)]
    return est, lft, cw


# ======================================================================================
# Schedules: serial schedule generation, left-justification, list heuristic
# ======================================================================================


class _Profile:
    """Tasks placed on one edge server: (start, finish, cpu, mem)."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[tuple[float, float, float, float]] = []

    def earliest(self, ready: float, d: float, c: float, m: float, cap: tuple[float, float], eps: float) -> float:
        if d <= 0 or (c <= 0 and m <= 0):
            return ready
        cands = sorted({ready} | {f for (_, f, _, _) in self.items if f > ready})
        for t in cands:
            if self._fits(t, t + d, c, m, cap, eps):
                return t
        return cands[-1]  # unreachable: after the last finish the server is empty

    def _fits(self, a: float, b: float, c: float, m: float, cap: tuple[float, float], eps: float) -> bool:
        points = [a] + [s for (s, _, _, _) in self.items if a < s < b]
        for p in points:
            uc, um = c, m
            for (s, f, ci, mi) in self.items:
                if s <= p + eps and p < f - eps:
                    uc += ci
                    um += mi
            if uc > cap[0] + 1e-9 * max(1.0, cap[0]) or um > cap[1] + 1e-9 * max(1.0, cap[1]):
                return False
        return True


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
    capacity left by the tasks already placed (gaps may be filled)."""
    start = [math.nan] * data.N
    prof = [_Profile() for _ in range(data.S)]
    eps = 1e-12 * max(1.0, data.scale)
    for g in order:
        s = server[g]
        r = _ready(data, g, s, server, start)
        cap = data.cap[s]
        t = r if cap is None else prof[s].earliest(r, data.dur[g][s], *data.demand[g], cap, eps)
        start[g] = t
        if cap is not None and data.dur[g][s] > 0:
            prof[s].items.append((t, t + data.dur[g][s], *data.demand[g]))
    return start


def upward_rank(data: OffloadingData) -> list[float]:
    """HEFT's upward rank: mean duration over hosts + max over successors of (mean delay +
    rank of the successor)."""
    rank = [0.0] * data.N
    out: list[list[int]] = [[] for _ in range(data.N)]
    for k, (_, _, a, _) in enumerate(data.edges):
        out[a].append(k)
    for g in reversed(data.topo):
        d = sum(data.dur[g].values()) / len(data.dur[g])
        best = 0.0
        for k in out[g]:
            b = data.edges[k][3]
            dl = sum(data.delay[k].values()) / len(data.delay[k])
            best = max(best, dl + rank[b])
        rank[g] = d + best
    return rank


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
    prof = [_Profile() for _ in range(data.S)]
    eps = 1e-12 * max(1.0, data.scale)
    for g in order:
        best = None
        for s in data.hosts[g]:
            r = _ready(data, g, s, server, start)
            cap = data.cap[s]
            t = r if cap is None else prof[s].earliest(r, data.dur[g][s], *data.demand[g], cap, eps)
            f = t + data.dur[g][s]
            if best is None or f < best[0] - 1e-12:
                best = (f, t, s)
        assert best is not None
        f, t, s = best
        server[g], start[g] = s, t
        if data.cap[s] is not None and data.dur[g][s] > 0:
            prof[s].items.append((t, f, *data.demand[g]))
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


def objective_of(data: OffloadingData, server: list[int], start: list[float]) -> float:
    """Mean over workflows of (max finish - arrival), in the data's time unit."""
    total = 0.0
    for w in range(data.W):
        fin = max(start[g] + data.dur[g][server[g]] for g in data.gid[w])
        total += fin - data.arrival[w] * data.scale
    return total / data.W


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


# ======================================================================================
# Resource scaling (CP-SAT needs integer demands and capacities)
# ======================================================================================


def _resource_scale(values: list[float]) -> tuple[int, bool]:
    for k in range(_RES_MAX_EXP + 1):
        f = 10**k
        if all(_ticks_up(v, f)[1] for v in values):
            return f, True
    return 10**_RES_MAX_EXP, False


def _resource_groups(data: OffloadingData, dem_scaled, cap_scaled):
    """Per edge server and resource whose capacity can bind: (server, resource, "nooverlap" |
    "cumulative", [(g, demand)], capacity). "nooverlap" when no two of its tasks fit together."""
    out = []
    for s in range(data.S):
        if data.cap[s] is None:
            continue
        groups: list = []
        for r in range(2):
            items = [(g, dem_scaled[g][r]) for g in range(data.N)
                     if s in data.dur[g] and dem_scaled[g][r] > 0 and data.dur[g][s] > 0]
            if not items:
                continue
            cap = cap_scaled[s][r]
            if sum(d for _, d in items) <= cap:
                continue
            ds = sorted(d for _, d in items)
            kind = "nooverlap" if len(ds) >= 2 and ds[0] + ds[1] > cap else "cumulative"
            groups.append((s, r, kind, items, cap))
        # a group whose tasks are all in a no-overlap group of the other resource is implied by it
        keep = []
        for k, grp in enumerate(groups):
            tasks = {g for g, _ in grp[3]}
            implied = any(o is not grp and o[2] == "nooverlap" and tasks <= {g for g, _ in o[3]}
                          and (grp[2] != "nooverlap" or k > groups.index(o)) for o in groups)
            if not implied:
                keep.append(grp)
        out.extend(keep)
    return out


# ======================================================================================
# CP-SAT interval model
# ======================================================================================


def _ceil_int(x: float) -> int:
    """ceil of a tick value that is an integer up to float noise."""
    return int(math.ceil(x - 1e-9 * max(1.0, abs(x))))


@dataclass
class CpsatModel:
    model: Any
    data: OffloadingData  # ticked
    exact: OffloadingData  # seconds
    q: float
    present: list[dict[int, Any]]
    start: list[Any]
    end: list[Any]
    cmax: list[Any]
    resource_exact: bool
    adjustment_ticks: int
    hint: tuple[list[int], list[float]] | None = None
    infeasible_reason: str | None = None
    #: another heuristic schedule (ticks): every task on the cloud, None when impossible
    alt: tuple[list[int], list[float]] | None = None


def build_cpsat(data: OffloadingData, *, time_scale: float | str = "auto", hint: bool = True,
                edge_form: str = "auto", cuts: bool = True) -> CpsatModel:
    """The CP-SAT interval model of ``data`` (seconds) in ticks of 1/time_scale seconds."""
    from ortools.sat.python import cp_model

    if edge_form not in ("auto", "pairs", "linear", "same"):
        raise ValueError(f"edge_form must be auto, pairs, linear or same, got {edge_form!r}")
    q = auto_time_scale(data) if time_scale == "auto" else float(time_scale)
    if not (q > 0 and math.isfinite(q)):
        raise ValueError(f"time_scale must be a positive number or 'auto', got {time_scale!r}")
    td = ticked(data, q)
    N, W = td.N, td.W
    m = cp_model.CpModel()

    # time windows valid for some optimal schedule, tightened by a heuristic schedule
    # the list schedule is the hint (CP-SAT's search follows a hint closely: the all-cloud
    # schedule as hint slowed the proof of daggen 50 x 3 from 12 s to beyond 40 s); the
    # better of both tightens the windows, and the all-cloud one is offered to the search
    # after CP-SAT's phase when it is better than CP-SAT's incumbent (solve_cpsat_model)
    hsched = list_schedule(td) if hint else None
    alt = cloud_schedule(td) if hint else None
    est, lft, cwb = time_windows(td, best_heuristic(td) if hint else None, integral=True)
    hb = [int(math.floor(h + 1e-9)) for h in lft]
    # heads / tails of every feasible schedule of the ticked data (§4a): per-host earliest
    # starts and least times to the workflow's end, and a floor on the objective
    heads = tails = None
    obj_floor = None
    if cuts:
        from edgebench.formulations import offloading_bounds as ob

        excl = ob.exclusive_servers(td)
        if all(excl[s] for s in range(td.S) if td.cap[s] is not None):
            # per-host heads / tails only where every edge server is exclusive: they made
            # CP-SAT prove heft-random 50 x 8 in 13-16 s instead of 32 s (floor alone), but
            # kept it from proving daggen 50 x 3 in 40 s (floor alone: 30 s; docs §4a)
            heads, tails = ob.heads(td, excl), ob.tails(td, excl)
    if heads is not None and tails is not None:
        for g in range(N):
            est[g] = max(est[g], min(heads[g].values()))
            hb[g] = min(hb[g], int(math.floor(cwb[td.tasks[g][0]] - min(tails[g].values()) + 1e-6)))
    if cuts:
        lb = ob.combinatorial_bound(td)  # mean makespan in ticks
        obj_floor = int(math.ceil(W * lb + sum(a * q for a in td.arrival) - 1e-9 * max(1.0, W * lb)))

    present: list[dict[int, Any]] = []
    start, end = [], []
    reason = None
    for g in range(N):
        lo = int(math.ceil(est[g] - 1e-9))
        hi = hb[g] - int(td.min_dur(g))
        if hi < lo:
            reason = f"task {td.tasks[g]} cannot finish by the horizon"
            hi = lo
        sv = m.NewIntVar(lo, hi, f"s{g}")
        ev = m.NewIntVar(lo, max(hb[g], lo), f"e{g}")
        lits = {}
        for s in td.hosts[g]:
            lits[s] = m.NewBoolVar(f"x{g}_{s}")
        m.AddExactlyOne(list(lits.values()))
        m.Add(ev == sv + sum(int(td.dur[g][s]) * lits[s] for s in lits))
        m.Add(ev <= hb[g])
        for s in lits:
            r = int(td.rel[g][s]) if heads is None else _ceil_int(heads[g][s])
            if r > lo:
                m.Add(sv >= r).OnlyEnforceIf(lits[s])
        present.append(lits)
        start.append(sv)
        end.append(ev)
    if reason is not None:
        m.AddBoolOr([])  # the instance is infeasible under the horizon: an empty clause

    # intervals per server
    intervals: list[dict[int, Any]] = [dict() for _ in range(N)]
    for g in range(N):
        for s, lit in present[g].items():
            d = int(td.dur[g][s])
            if len(present[g]) == 1:
                intervals[g][s] = m.NewIntervalVar(start[g], d, end[g], f"iv{g}_{s}")
            else:
                intervals[g][s] = m.NewOptionalFixedSizeIntervalVar(start[g], d, lit, f"iv{g}_{s}")

    # capacities
    res_vals = [[td.demand[g][r] for g in range(N)] + [c[r] for c in td.cap if c is not None] for r in range(2)]
    scales = [_resource_scale(v) for v in res_vals]
    resource_exact = all(ex for _, ex in scales)
    dem_scaled = [[int(math.ceil(td.demand[g][r] * scales[r][0] - _INT_TOL * max(1.0, td.demand[g][r] * scales[r][0])))
                   for r in range(2)] for g in range(N)]
    cap_scaled: list[Any] = [None if c is None else
                             [int(math.floor(c[r] * scales[r][0] + _INT_TOL * max(1.0, c[r] * scales[r][0])))
                              for r in range(2)] for c in td.cap]
    for s, r, kind, items, cap in _resource_groups(td, dem_scaled, cap_scaled):
        if kind == "nooverlap":
            m.AddNoOverlap([intervals[g][s] for g, _ in items])
        else:
            m.AddCumulative([intervals[g][s] for g, _ in items], [d for _, d in items], cap)

    # precedence with transfer delays
    for k, (_, _, a, b) in enumerate(td.edges):
        m.Add(start[b] >= end[a])
        off_diag = {int(c) for (p, qq), c in td.delay[k].items() if p != qq}
        form = "same" if edge_form == "auto" else edge_form
        if not any(off_diag):
            continue
        if form == "pairs":
            # (p, q): s_b >= e_a + delay(p, q) if a runs on p and b on q
            for (p, qq), c in td.delay[k].items():
                if p != qq and c > 0:
                    m.Add(start[b] >= end[a] + int(c)).OnlyEnforceIf([present[a][p], present[b][qq]])
        elif form == "linear":
            # one per source server p: s_b >= e_a + sum_q delay(p, q) x_bq if a runs on p
            for p in td.hosts[a]:
                terms = [(int(td.delay[k][(p, qq)]), present[b][qq]) for qq in td.hosts[b] if td.delay[k][(p, qq)] > 0]
                if terms:
                    m.Add(start[b] >= end[a] + sum(c * x for c, x in terms)).OnlyEnforceIf(present[a][p])
        else:
            # same_k <=> a and b on one server; s_b >= e_a + (smallest delay between two
            # different servers) unless same_k; larger delays pairwise as above
            same = m.NewBoolVar(f"same{k}")
            for p in td.hosts[a]:
                if p in present[b]:
                    m.AddBoolOr([same.Not(), present[a][p].Not(), present[b][p]])
                    m.AddBoolOr([present[a][p].Not(), present[b][p].Not(), same])
                else:
                    m.AddImplication(present[a][p], same.Not())
            for p in td.hosts[b]:
                if p not in present[a]:
                    m.AddImplication(present[b][p], same.Not())
            cmin = min(off_diag)
            if cmin > 0:
                m.Add(start[b] >= end[a] + cmin).OnlyEnforceIf(same.Not())
            for (p, qq), c in td.delay[k].items():
                if p != qq and c > cmin:
                    m.Add(start[b] >= end[a] + int(c)).OnlyEnforceIf([present[a][p], present[b][qq]])

    # makespans and objective: minimise the sum of the workflows' finish times
    cmax = []
    for w in range(W):
        gs = td.gid[w]
        lo = max(int(td.min_rel(g) + td.min_dur(g)) for g in gs)
        cw = m.NewIntVar(lo, max(int(cwb[w]), lo), f"c{w}")
        sinks = [g for g in gs if not td.succs[g]]
        for g in sinks:
            m.Add(cw >= end[g])
        if tails is not None:
            for g in gs:
                low = _ceil_int(min(tails[g].values()))
                if low > 0:
                    m.Add(cw >= end[g] + low)
                for s, lit in present[g].items():
                    t = _ceil_int(tails[g][s])
                    if t > low:
                        m.Add(cw >= end[g] + t).OnlyEnforceIf(lit)
        cmax.append(cw)
    if obj_floor is not None:
        m.Add(sum(cmax) >= obj_floor)
    m.Minimize(sum(cmax))

    if hsched is not None and reason is None:
        srv, st = hsched
        hfin = [st[g] + td.dur[g][srv[g]] for g in range(N)]
        if all(hfin[g] <= hb[g] for g in range(N)):
            for g in range(N):
                for s, lit in present[g].items():
                    m.AddHint(lit, s == srv[g])
                m.AddHint(start[g], int(round(st[g])))
                m.AddHint(end[g], int(round(hfin[g])))
            for w in range(W):
                m.AddHint(cmax[w], int(round(max(hfin[g] for g in td.gid[w]))))
    return CpsatModel(m, td, data, q, present, start, end, cmax, resource_exact, rounding_adjustment_ticks(td),
                      hsched, reason, alt)


def cpsat_size(cm: CpsatModel) -> dict[str, int]:
    proto = cm.model.Proto()
    nnz = 0
    for ct in proto.constraints:
        nnz += len(ct.enforcement_literal)
        if ct.has_linear():
            nnz += len(ct.linear.vars)
        elif ct.has_bool_or():
            nnz += len(ct.bool_or.literals)
        elif ct.has_bool_and():
            nnz += len(ct.bool_and.literals)
        elif ct.has_exactly_one():
            nnz += len(ct.exactly_one.literals)
        elif ct.has_at_most_one():
            nnz += len(ct.at_most_one.literals)
        elif ct.has_no_overlap():
            nnz += len(ct.no_overlap.intervals)
        elif ct.has_cumulative():
            nnz += len(ct.cumulative.intervals)
        elif ct.has_interval():
            nnz += 3
    return {"variables": len(proto.variables), "constraints": len(proto.constraints), "nonzeros": nnz}


@dataclass
class RawSolve:
    status: str
    message: str
    runtime: float
    server: list[int] | None = None
    start: list[float] | None = None  # model units (ticks / seconds)
    finish: list[float] | None = None
    model_objective: float | None = None  # mean makespan in seconds, the model's own value
    bound: float | None = None  # mean makespan in seconds, valid for the true problem
    extra: dict[str, Any] = field(default_factory=dict)


def solve_cpsat_model(cm: CpsatModel, *, time_limit: float | None = None, threads: int = 1, seed: int = 0,
                      log: bool = False, params: dict | None = None, lns: float = 0.0,
                      probe: float = 0.0) -> RawSolve:
    """Solve the interval model; with ``lns`` > 0 and a time limit, CP-SAT gets the share
    1 - lns of it and, unless it proved optimality, a large-neighbourhood search around its
    incumbent (offloading_lns.py) the rest; with ``probe`` > 0 the last share ``probe`` of
    the limit (or all the time left when the search stalls earlier) goes to objective-cap
    probes that raise the bound (offloading_probe.py), then CP-SAT resumes on what is left."""
    td, q, W = cm.data, cm.q, cm.data.W
    t0 = time.perf_counter()
    later = max(lns, probe)  # the share of the limit left for the search and the probes
    first = time_limit if (time_limit is None or later <= 0) else time_limit * (1.0 - later)
    # params: expert CP-SAT parameters, e.g. linearization_level
    solver, code, status = run_cpsat(cm.model, time_limit=first, threads=threads, seed=seed, log=log,
                                     params=params)
    name = solver.StatusName(code)
    arr = sum(td.arrival)
    raw = RawSolve(status, f"CP-SAT {name}", 0.0, extra={
        "branches": solver.NumBranches(), "conflicts": solver.NumConflicts(), "wall_time": solver.WallTime()})
    values = list(solver.ResponseProto().solution) if status in ("optimal", "feasible") else None
    b_ticks = solver.BestObjectiveBound() if values is not None else None
    if values is not None:
        raw.extra["cpsat_objective"] = (solver.ObjectiveValue() / q - arr) / W
    if status in ("feasible", "timeout"):
        # never an empty answer: the heuristic schedules the model was built with (all-cloud,
        # list) when CP-SAT has none or a worse one; the time left goes to the phases below
        values, status = _heuristic_vector(cm, values, status, raw, t0=t0, time_limit=time_limit, seed=seed)
    if values is not None:
        # probes only where the model's bound is one of the true problem (exact resources)
        probing = status == "feasible" and time_limit is not None and probe > 0 and cm.resource_exact
        if status == "feasible" and time_limit is not None and lns > 0:
            from edgebench.formulations.offloading_lns import improve

            lns_end = t0 + time_limit * ((1.0 - probe) if probing else 1.0)
            values, raw.extra["lns"] = improve(cm, values, deadline=lns_end, seed=seed, params=params,
                                               patience=LNS_PATIENCE)
        if probing:
            from edgebench.formulations.offloading_probe import bisect

            # the reserved share, or half of the time left when the search stalled earlier
            # (the other half goes to CP-SAT below, which proved heft-random 100 x 8 that way)
            now, end = time.perf_counter(), t0 + time_limit
            lo0 = _ceil_ticks(b_ticks) or 0
            values, lo, raw.extra["probe"] = bisect(cm, values, lo0, deadline=now + max(probe * time_limit,
                                                                                         (end - now) / 2),
                                                    seed=seed, params=params)
            if lo > lo0 or b_ticks is not None:  # a refuted cap: the ticked optimum is >= lo
                b_ticks = lo if b_ticks is None else max(b_ticks, lo)
            if raw.extra["probe"]["closed"]:
                status = "optimal"
        if status == "feasible" and time_limit is not None and (lns > 0 or probing):
            left = t0 + time_limit - time.perf_counter()
            if left > 1.0:
                # the search stalled: CP-SAT again on the full model from the best schedule,
                # for the rest of the time (a better schedule, a proof or a higher bound)
                values, b_ticks, status = _resume_cpsat(cm, values, b_ticks, left, threads=threads, seed=seed,
                                                        params=params, extra=raw.extra,
                                                        floor_ticks=_ceil_ticks(b_ticks))
        raw.server = [next(s for s, lit in cm.present[g].items() if values[lit.Index()]) for g in range(td.N)]
        raw.start = [float(values[v.Index()]) for v in cm.start]
        raw.finish = [raw.start[g] + td.dur[g][raw.server[g]] for g in range(td.N)]
        obj_ticks = sum(values[v.Index()] for v in cm.cmax)
        raw.model_objective = (obj_ticks / q - arr) / W
        raw.extra["ceiled_objective"] = raw.model_objective
        if b_ticks is not None:  # None: CP-SAT found nothing, the schedule came from elsewhere
            raw.extra["ceiled_bound"] = (b_ticks / q - arr) / W
            if obj_ticks <= b_ticks:  # the search reached CP-SAT's bound: optimal for the model
                raw.status = "optimal"
            # valid for the true problem only when the resources were scaled exactly (ceiled
            # demands / floored capacities make the model a restriction, not a relaxation)
            raw.bound = raw.extra["ceiled_bound"] - cm.adjustment_ticks / q if cm.resource_exact else None
    raw.runtime = time.perf_counter() - t0
    return raw


def _heuristic_vector(cm: CpsatModel, values: list[int] | None, status: str, raw: RawSolve, *, t0: float,
                      time_limit: float | None, seed: int) -> tuple[list[int] | None, str]:
    """The best of CP-SAT's incumbent ``values`` (None: it found nothing) and the model's
    heuristic schedules (all-cloud ``cm.alt``, list schedule ``cm.hint``), as a full solution
    vector of the model; ``raw`` records which heuristic won (``alt_schedule``)."""
    td, q = cm.data, cm.q
    arr = sum(td.arrival) * q
    cur = None if values is None else sum(values[v.Index()] for v in cm.cmax)
    cands = [(lab, c) for lab, c in (("all-cloud", cm.alt), ("list", cm.hint)) if c is not None]
    for lab, sched in sorted(cands, key=lambda lc: objective_of(td, *lc[1])):
        ticks = objective_of(td, *sched) * td.W + arr
        if cur is not None and ticks >= cur - 0.5:
            break  # sorted: no later heuristic beats the incumbent either
        left = 10.0 if time_limit is None else max(0.1, min(10.0, t0 + time_limit - time.perf_counter()))
        vec = _solution_vector(cm, *sched, seed=seed, time_limit=left)
        if vec is not None:
            raw.status = "feasible"
            raw.extra["alt_schedule"] = lab
            if values is None:
                raw.message = f"{raw.message}; the {lab} heuristic schedule"
            return vec, "feasible"
    return values, status


def _ceil_ticks(b_ticks: float | None) -> int | None:
    """The smallest integer tick count a proven (float) bound of the ticked objective allows."""
    return None if b_ticks is None else int(math.ceil(b_ticks - 1e-6))


def _resume_cpsat(cm: CpsatModel, values: list[int], b_ticks: float | None, time_limit: float, *, threads: int,
                  seed: int, params: dict | None, extra: dict,
                  floor_ticks: int | None = None) -> tuple[list[int], float | None, str]:
    """CP-SAT on the full model hinted with ``values``: the better schedule and the larger
    bound of the two runs (both bound the same model). ``floor_ticks``: a proven lower bound
    of the model's optimum (CP-SAT's earlier bound, refuted probes), added as a constraint:
    it removes no optimal solution."""
    sub = cm.model.clone()
    if floor_ticks is not None:
        sub.Add(sum(cm.cmax) >= int(floor_ticks))
    proto = sub.Proto()
    proto.clear_solution_hint()
    proto.solution_hint.vars.extend(range(len(values)))
    proto.solution_hint.values.extend(values)
    solver, _, status = run_cpsat(sub, time_limit=time_limit, threads=threads, seed=seed + 1, params=params)
    extra["resumed_cpsat"] = {"status": status, "time_limit": round(time_limit, 2)}
    if status in ("optimal", "feasible"):
        b_ticks = solver.BestObjectiveBound() if b_ticks is None else max(b_ticks, solver.BestObjectiveBound())
        new = list(solver.ResponseProto().solution)
        if sum(new[v.Index()] for v in cm.cmax) <= sum(values[v.Index()] for v in cm.cmax):
            values = new
    return values, b_ticks, "feasible"


def _solution_vector(cm: CpsatModel, server: list[int], start: list[float], *, seed: int = 0,
                     time_limit: float = 10.0) -> list[int] | None:
    """A full solution vector of the model for a schedule in ticks (servers and starts fixed;
    CP-SAT fills in the rest), or None when the schedule does not fit the model's windows."""
    sub = cm.model.clone()
    proto = sub.Proto()
    for g in range(cm.data.N):
        for s, lit in cm.present[g].items():
            dom = proto.variables[lit.Index()].domain
            dom.clear()
            dom.extend([int(s == server[g])] * 2)
        dom = proto.variables[cm.start[g].Index()].domain
        bounds = list(dom)  # (the proto's repeated field takes no negative index)
        lo, hi = bounds[0], bounds[-1]
        t = int(round(start[g]))
        if not lo <= t <= hi:
            return None
        dom.clear()
        dom.extend([t, t])
    proto.clear_solution_hint()
    solver, _, status = run_cpsat(sub, time_limit=time_limit, threads=1, seed=seed)
    return list(solver.ResponseProto().solution) if status in ("optimal", "feasible") else None


# ======================================================================================
# MILP: continuous-time disjunctive model with resource flows, one LinearModel
# ======================================================================================


def _merged(terms) -> list[tuple[int, float]]:
    acc: dict[int, float] = {}
    for i, c in terms:
        acc[int(i)] = acc.get(int(i), 0.0) + float(c)
    return [(i, c) for i, c in acc.items() if c != 0.0]


class _MergingModel(LinearModel):
    """A LinearModel whose rows merge repeated variables (a row such as s_b - s_a -
    sum_p d_ap x_ap - M x_ap names x_ap twice, and some backends keep only the last
    coefficient of a repeated variable)."""

    def add_row(self, terms, lo=-math.inf, hi=math.inf, name=""):
        return super().add_row(_merged(terms), lo, hi, name)


@dataclass
class MilpIndex:
    x: list[dict[int, int]]
    st: list[int]
    cmax: list[int]
    y: dict[tuple[int, int], int]
    flows: int = 0
    bigm: dict[str, float] = field(default_factory=dict)
    #: the heuristic schedule (seconds) the windows were tightened with, None without one
    heuristic: tuple[list[int], list[float]] | None = None


def build_milp(data: OffloadingData, *, use_heuristic_horizon: bool = True):
    """The MILP of ``data`` (seconds) as one LinearModel. Returns (model, index)."""
    N, W = data.N, data.W
    lm = _MergingModel(name="offloading-milp", sense="min")
    heur = best_heuristic(data) if use_heuristic_horizon else None
    est, lft, cwb = time_windows(data, heur)
    hb = lft

    x: list[dict[int, int]] = []
    st: list[int] = []
    for g in range(N):
        xs = {s: lm.add_binary(f"x[{g},{s}]") for s in data.hosts[g]}
        x.append(xs)
        lo = est[g]
        st.append(lm.add_var(f"s[{g}]", lo, max(lo, hb[g] - data.min_dur(g))))
    for g in range(N):
        # (1) one server per task
        lm.add_eq([(v, 1.0) for v in x[g].values()], 1.0, f"assign[{g}]")
        # (2) release: arrival + input fetch on the chosen server
        if max(data.rel[g].values()) > data.min_rel(g):
            lm.add_ge([(st[g], 1.0)] + [(x[g][s], -data.rel[g][s]) for s in x[g]], 0.0, f"release[{g}]")
        # (3) finish within the (valid or user) horizon
        lm.add_le([(st[g], 1.0)] + [(x[g][s], data.dur[g][s]) for s in x[g]], hb[g], f"horizon[{g}]")

    # (4) precedence with server-dependent transfer delays
    for k, (_, _, a, b) in enumerate(data.edges):
        dur_a = [(x[a][p], -data.dur[a][p]) for p in x[a]]
        need_base = False
        for p in data.hosts[a]:
            mp = max(data.delay[k][(p, qq)] for qq in data.hosts[b])
            if mp <= 0:
                need_base = True
                continue
            terms = [(st[b], 1.0), (st[a], -1.0)] + dur_a
            terms += [(x[b][qq], -data.delay[k][(p, qq)]) for qq in data.hosts[b] if data.delay[k][(p, qq)] > 0]
            terms.append((x[a][p], -mp))
            lm.add_ge(terms, -mp, f"prec[{k},{p}]")
        if need_base:
            lm.add_ge([(st[b], 1.0), (st[a], -1.0)] + dur_a, 0.0, f"prec[{k}]")

    # (5) makespan of each workflow (its sinks' finish times)
    cmax = []
    for w in range(W):
        gs = data.gid[w]
        lo = max(data.min_rel(g) + data.min_dur(g) for g in gs)
        cw = lm.add_var(f"C[{w}]", lo, max(lo, cwb[w]))
        cmax.append(cw)
        for g in gs:
            if not data.succs[g]:
                lm.add_ge([(cw, 1.0), (st[g], -1.0)] + [(x[g][s], -data.dur[g][s]) for s in x[g]], 0.0,
                          f"makespan[{w},{g}]")

    # (6)-(9) capacities: sequencing variables y[i,j] (i finishes before j starts) and flows
    y: dict[tuple[int, int], int] = {}
    maxm = 0.0

    def yv(i: int, j: int) -> int:
        nonlocal maxm
        key = (i, j)
        if key not in y:
            y[key] = lm.add_binary(f"y[{i},{j}]")
            big = hb[i] - est[j]
            maxm = max(maxm, big)
            # y[i,j] = 1  =>  s_j >= s_i + dur_i
            lm.add_ge([(st[j], 1.0), (st[i], -1.0)] + [(x[i][s], -data.dur[i][s]) for s in x[i]] +
                      [(y[key], -big)], -big, f"seq[{i},{j}]")
        return y[key]

    def ordered(i: int, j: int) -> bool:
        """i finishes before j can start in every schedule."""
        return i in data.anc[j] or hb[i] <= est[j]

    n_flows = 0
    excl: set[tuple[int, int]] = set()
    for s, r, kind, items, cap in _resource_groups(data, [list(d) for d in data.demand],
                                                   [None if c is None else list(c) for c in data.cap]):
        gs = [g for g, _ in items]
        if kind == "nooverlap":
            for ii, i in enumerate(gs):
                for j in gs[ii + 1:]:
                    if ordered(i, j) or ordered(j, i):
                        continue
                    # (6) two tasks on the same server are sequenced one way or the other
                    lm.add_ge([(yv(i, j), 1.0), (yv(j, i), 1.0), (x[i][s], -1.0), (x[j][s], -1.0)], -1.0,
                              f"disj[{s},{r},{i},{j}]")
                    if (i, j) not in excl and min(data.dur[i].values()) > 0 and min(data.dur[j].values()) > 0:
                        # both orders at once is impossible for positive durations
                        excl.add((i, j))
                        lm.add_le([(yv(i, j), 1.0), (yv(j, i), 1.0)], 1.0, f"excl[{i},{j}]")
            continue
        # resource flow network on server s for resource r: source -> tasks -> (sink)
        dem = dict(items)
        src = {g: lm.add_var(f"f[{s},{r},src,{g}]", 0.0, dem[g]) for g in gs}
        arc: dict[tuple[int, int], int] = {}
        for i in gs:
            for j in gs:
                if i == j or ordered(j, i):
                    continue
                ub = min(dem[i], dem[j])
                v = lm.add_var(f"f[{s},{r},{i},{j}]", 0.0, ub)
                arc[(i, j)] = v
                if not ordered(i, j):
                    # (8) flow only along sequenced pairs
                    lm.add_le([(v, 1.0), (yv(i, j), -ub)], 0.0, f"flowseq[{s},{r},{i},{j}]")
        n_flows += len(src) + len(arc)
        # (7) the source supplies the capacity
        lm.add_le([(v, 1.0) for v in src.values()], cap, f"supply[{s},{r}]")
        for g in gs:
            inflow = [(src[g], 1.0)] + [(arc[(i, g)], 1.0) for i in gs if (i, g) in arc]
            outflow = [(arc[(g, j)], 1.0) for j in gs if (g, j) in arc]
            # (9) a task on s receives exactly its demand and passes on at most that
            lm.add_eq(inflow + [(x[g][s], -dem[g])], 0.0, f"in[{s},{r},{g}]")
            if outflow:
                lm.add_le(outflow + [(x[g][s], -dem[g])], 0.0, f"out[{s},{r},{g}]")

    # objective: mean makespan
    lm.set_objective([(cw, 1.0 / W) for cw in cmax], constant=-sum(data.arrival) / W)
    return lm, MilpIndex(x, st, cmax, y, n_flows, {"max_big_m": maxm}, heur)


def solve_milp_model(lm, idx: MilpIndex, data: OffloadingData, *, backend: str, time_limit: float | None = None,
                     threads: int = 1, seed: int = 0, mip_gap: float = 1e-9, log: bool = False) -> RawSolve:
    from edgebench.formulations.linear import solve_linear

    sol = solve_linear(lm, backend, time_limit=time_limit, threads=threads, seed=seed, mip_gap=mip_gap, log=log)
    status, message = sol.status, sol.message
    if status == "error" and sol.values is None and backend.startswith("ortools-") and time_limit is not None \
            and sol.runtime >= 0.9 * time_limit and "pywraplp status" in message:
        # pywraplp's HiGHS answers ABNORMAL (99) at the time limit without handing back an
        # incumbent: that is a timeout, not a crash
        status, message = "timeout", f"{message} (at the time limit: treated as a timeout)"
    raw = RawSolve(status, message, sol.runtime, extra={"solver_gap": sol.gap})
    if sol.values is not None and sol.status in ("optimal", "feasible"):
        v = sol.values
        raw.server = [max(idx.x[g], key=lambda s: v[idx.x[g][s]]) for g in range(data.N)]
        raw.start = [max(data.min_rel(g), float(v[idx.st[g]])) for g in range(data.N)]
        raw.finish = [raw.start[g] + data.dur[g][raw.server[g]] for g in range(data.N)]
        raw.model_objective = sol.objective
        raw.extra["max_violation"] = lm.max_violation(v)
    raw.bound = sol.bound
    return raw


# ======================================================================================
# Registered solvers
# ======================================================================================


def _finish_result(instance, name, raw: RawSolve, data: OffloadingData, *, seed, params, started, stats,
                   to_seconds: float, tol: float, fallback: tuple[list[int], list[float]] | None = None):
    """Decode, score with the referee and build the Result (status, objective, bound, gap)."""
    status, decisions, objective = raw.status, None, None
    stats = dict(stats)
    stats["message"] = raw.message
    stats["solver_runtime"] = raw.runtime
    stats.update(raw.extra)
    if raw.server is None and status == "timeout" and fallback is not None and not _late(data, *fallback):
        # never an empty answer: the heuristic schedule the model was built with (seconds)
        raw.server, raw.start = list(fallback[0]), [t * to_seconds for t in fallback[1]]
        raw.finish = [raw.start[g] + data.dur[g][raw.server[g]] * to_seconds for g in range(data.N)]
        status = "feasible"
        stats["message"] = f"{raw.message}; the heuristic schedule"
    if raw.server is not None and raw.start is not None and raw.finish is not None:
        st = [t / to_seconds for t in raw.start]
        fi = [t / to_seconds for t in raw.finish]
        try:
            decisions, objective, note = decode_schedule(instance, data, raw.server, st, fi, tol)
            stats["decode"] = note
            if note.startswith("serial") and status == "optimal":
                # the model's own schedule failed the referee and had to be repaired: the
                # repaired one is feasible but nothing proves it optimal
                status = "feasible"
                stats["message"] = f"{raw.message}; the model's schedule needed a serial repair"
        except Exception as exc:  # a decoding failure is a status, never an exception out of solve
            status, decisions, objective = "error", None, None
            stats["message"] = f"{raw.message}; decode failed: {type(exc).__name__}: {exc}"
    # the model's bound (None when it is not one of the true problem) and the combinatorial
    # bound of the exact data: both valid, keep the larger
    comb = combinatorial_bound(data) if status in ("optimal", "feasible", "timeout") else None
    stats["combinatorial_bound"] = comb
    bound = max((b for b in (raw.bound, comb) if b is not None), default=None)
    gap = None
    if objective is not None and bound is not None:
        bound = min(bound, objective)  # a bound above a referee-checked value is float noise
        gap = 0.0 if objective == bound else abs(objective - bound) / max(abs(objective), 1e-9)
    if status == "optimal" and (gap is None or gap > OPT_TOL):
        # proven for the model (e.g. the ceiled ticks), not for the true problem: objective
        # and proven bound differ by more than OPT_TOL
        status = "feasible"
        stats["message"] = (f"{stats['message']}; optimal for the model only: objective and proven bound of the "
                            f"true problem differ by {'?' if gap is None else f'{gap:.2e}'} (relative)")
    stats["mip_gap"] = gap
    stats["model_objective"] = raw.model_objective
    return make_result(instance, name, status=status, decisions=decisions, seed=seed, params=params,
                       objective=objective, bound=bound, started=started, stats=stats)


def _error(instance, name, msg, *, seed, params, started, backend):
    return make_result(instance, name, status="error", seed=seed, params=params, started=started,
                       stats={"backend": backend, "message": msg, "mip_gap": None, "model_size": {}})


_CPSAT_PARAMS = {
    "threads": "int, CP-SAT workers (default 1)",
    "time_scale": "ticks per second, or 'auto' (default): the smallest 10**k <= 10**5 making every duration, "
                  "delay and release integral, else 10**5; durations/delays/releases are rounded up (then "
                  "'optimal' only when the true-problem bound meets the objective)",
    "horizon": "float or None: every task must finish by this absolute time (default None)",
    "hint": "bool, seed CP-SAT with a HEFT-style list schedule and tighten the horizon with it (default True)",
    "edge_form": "'same' (default, alias 'auto': a co-location literal per edge carrying the smallest "
                 "delay between different servers, larger delays per server pair), 'pairs' (one delay "
                 "constraint per server pair, enforced by both presence literals) or 'linear' (one per source "
                 "server)",
    "cuts": "bool, add the heads / tails of every task per host and the combinatorial bound as a floor on the "
            "objective (docs/formulations/offloading.md §4a; default True)",
    "lns": "float in [0, 1): share of the time limit given to a large-neighbourhood search around CP-SAT's "
           "incumbent when CP-SAT has not proved optimality in the rest (0: off; default 0.75; no effect without "
           "a time limit)",
    "probe": "float in [0, 1): share of the limit reserved at its end for objective-cap probes that raise the "
             "proven bound; when the search of 'lns' stalls earlier, the probes get at least half of the time left "
             "(docs/formulations/offloading.md §4b; 0: off; default 0.05; no effect without a time limit)",
    "cpsat_params": "dict of extra CP-SAT parameters (e.g. {'linearization_level': 2}); default none",
    "log": "bool, print the CP-SAT search log (default False)",
}


@register("offloading-cpsat", families=(FAMILY,), kind="exact",
          description="CP-SAT interval model (optional intervals, cumulative capacities, delay-aware precedence) "
                      "in integer ticks with durations rounded up",
          params=_CPSAT_PARAMS, choices={"edge_form": ("auto", "same", "pairs", "linear")},
          bounds={"threads": (1, None), "lns": (0, 0.95), "probe": (0, 0.95)})
def solve_cpsat(instance: Instance, *, time_limit: float | None = None, seed: int = 0, threads: int = 1,
                time_scale: float | str = "auto", horizon: float | None = None, hint: bool = True,
                edge_form: str = "auto", cpsat_params: dict | None = None, log: bool = False, cuts: bool = True,
                lns: float = 0.75, probe: float = 0.05, **unknown: Any):
    """CP-SAT interval model of the offloading problem."""
    name = "offloading-cpsat"
    t0 = time.perf_counter()
    params = {"threads": threads, "time_scale": time_scale, "horizon": horizon, "hint": hint,
              "edge_form": edge_form, "cuts": cuts, "lns": lns, "probe": probe, "cpsat_params": dict(cpsat_params or {}), "time_limit": time_limit}
    if unknown:
        return _error(instance, name, f"unknown parameter(s) {sorted(unknown)} (known: {sorted(_CPSAT_PARAMS)})",
                      seed=seed, params=params, started=t0, backend="cpsat")
    try:
        data = prepare(instance, horizon=horizon)
        tb = time.perf_counter()
        cm = build_cpsat(data, time_scale=time_scale, hint=hint, edge_form=edge_form, cuts=cuts)
        build_time = time.perf_counter() - tb
        left = None if time_limit is None else max(0.001, float(time_limit) - (time.perf_counter() - t0))
        raw = solve_cpsat_model(cm, time_limit=left, threads=threads, seed=seed, log=log, params=cpsat_params,
                                lns=float(lns), probe=float(probe))
        params["time_scale"] = cm.q
        stats = {"backend": "cpsat", "model_size": cpsat_size(cm), "build_time": build_time,
                 "time_scale": cm.q, "rounded": dict(cm.data.rounded), "resource_scaling_exact": cm.resource_exact,
                 "bound_adjustment": cm.adjustment_ticks / cm.q,
                 "heuristic_objective": None if cm.hint is None else objective_of(cm.data, *cm.hint) / cm.q}
        if cm.infeasible_reason:
            stats["infeasible_reason"] = cm.infeasible_reason
        fallback = None if cm.hint is None else (cm.hint[0], [t / cm.q for t in cm.hint[1]])
        return _finish_result(instance, name, raw, data, seed=seed, params=params, started=t0, stats=stats,
                              to_seconds=cm.q, tol=0.0, fallback=fallback)
    except Exception as exc:  # never raise out of solve
        return _error(instance, name, f"{type(exc).__name__}: {exc}", seed=seed, params=params, started=t0,
                      backend="cpsat")


_MILP_PARAMS = {
    "backend": f"one of {', '.join(MILP_BACKENDS)} (default {DEFAULT_MILP_BACKEND})",
    "threads": "int (default 1)",
    "horizon": "float or None: every task must finish by this absolute time (default None)",
    "mip_gap": "relative MIP gap at which the backend stops (default 1e-9)",
    "heuristic_horizon": "bool, tighten the big-M horizon with a list schedule's objective (default True)",
    "log": "bool, print the backend's log (default False)",
}


@register("offloading-milp", families=(FAMILY,), kind="exact",
          description="continuous-time disjunctive MILP with resource flows (one LinearModel through OR-Tools, "
                      "PuLP or Pyomo)",
          params=_MILP_PARAMS, choices={"backend": MILP_BACKENDS},
          bounds={"threads": (1, None), "mip_gap": (0, None)})
def solve_milp(instance: Instance, *, time_limit: float | None = None, seed: int = 0,
               backend: str = DEFAULT_MILP_BACKEND, threads: int = 1, horizon: float | None = None,
               mip_gap: float = 1e-9, heuristic_horizon: bool = True, log: bool = False, **unknown: Any):
    """Disjunctive resource-flow MILP of the offloading problem."""
    name = "offloading-milp"
    t0 = time.perf_counter()
    params = {"backend": backend, "threads": threads, "horizon": horizon, "mip_gap": mip_gap,
              "heuristic_horizon": heuristic_horizon, "time_limit": time_limit}
    if unknown:
        return _error(instance, name, f"unknown parameter(s) {sorted(unknown)} (known: {sorted(_MILP_PARAMS)})",
                      seed=seed, params=params, started=t0, backend=backend)
    if backend not in MILP_BACKENDS:
        return _error(instance, name, f"unknown backend {backend!r} (known: {', '.join(MILP_BACKENDS)})",
                      seed=seed, params=params, started=t0, backend=backend)
    try:
        data = prepare(instance, horizon=horizon)
        tb = time.perf_counter()
        lm, idx = build_milp(data, use_heuristic_horizon=heuristic_horizon)
        build_time = time.perf_counter() - tb
        left = None if time_limit is None else max(0.001, float(time_limit) - (time.perf_counter() - t0))
        raw = solve_milp_model(lm, idx, data, backend=backend, time_limit=left, threads=threads, seed=seed,
                               mip_gap=mip_gap, log=log)
        size = lm.size()
        size["sequencing_variables"] = len(idx.y)
        size["flow_variables"] = idx.flows
        stats = {"backend": backend, "model_size": size, "build_time": build_time, **idx.bigm}
        return _finish_result(instance, name, raw, data, seed=seed, params=params, started=t0, stats=stats,
                              to_seconds=1.0, tol=1e-6, fallback=idx.heuristic)
    except Exception as exc:  # never raise out of solve
        return _error(instance, name, f"{type(exc).__name__}: {exc}", seed=seed, params=params, started=t0,
                      backend=backend)


__all__ = ["OffloadingData", "prepare", "ticked", "auto_time_scale", "rounding_adjustment_ticks", "safe_horizon",
           "list_schedule", "serial_schedule", "left_justify", "build_cpsat", "solve_cpsat_model", "build_milp",
           "solve_milp_model", "solve_cpsat", "solve_milp", "MILP_BACKENDS", "DEFAULT_MILP_BACKEND"]
