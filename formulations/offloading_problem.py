"""The offloading problem as the exact models see it: one flat view of an instance
(:class:`OffloadingData`, global task index ``g`` over all workflows), its integer-tick
version (:func:`ticked`) with the proven rounding adjustment, the safe horizon, the time
windows of some optimal schedule, the objective of a schedule and the raw answer of a model
(:class:`RawSolve`). Models: ``offloading_cpsat`` / ``offloading_milp``; the registered
solvers: ``offloading``; docs/formulations/offloading.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from edgebench.instances import semantics
from edgebench.instances.model import Instance

#: relative tolerance deciding that a scaled number is an integer
_INT_TOL = 1e-9
#: time_scale="auto" tries 10**k ticks per second for k = 0.._AUTO_MAX_EXP and falls back to 10**5
#: (the rounding adjustment of the bound shrinks with the tick: 2N ticks, 2e-3 s at 100 tasks)
_AUTO_MAX_EXP = 5
_FALLBACK_SCALE = 100_000
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


def objective_of(data: OffloadingData, server: list[int], start: list[float]) -> float:
    """Mean over workflows of (max finish - arrival), in the data's time unit."""
    total = 0.0
    for w in range(data.W):
        fin = max(start[g] + data.dur[g][server[g]] for g in data.gid[w])
        total += fin - data.arrival[w] * data.scale
    return total / data.W


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


# ======================================================================================
# Resource scaling (CP-SAT needs integer demands and capacities)
# ======================================================================================


def _resource_scale(values: list[float]) -> tuple[int, bool]:
    for k in range(_RES_MAX_EXP + 1):
        f = 10**k
        if all(_ticks_up(v, f)[1] for v in values):
            return f, True
    return 10**_RES_MAX_EXP, False


def resource_groups(data: OffloadingData, dem_scaled, cap_scaled):
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
