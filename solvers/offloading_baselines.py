"""Baselines of the offloading family, all executed by the event simulator
(:mod:`edgebench.solvers.offloading_sim`):

* ``heft`` — Heterogeneous Earliest Finish Time (Topcuoglu, Hariri & Wu 2002): tasks by
  decreasing upward rank (mean computation + mean communication costs), each on the server
  giving the earliest finish time with insertion into idle capacity.
* ``cpop`` — Critical Path On a Processor (same paper): priority = upward + downward rank;
  the tasks of the critical path go to the one server minimising the path's total
  computation, the others to their earliest-finish server; ready tasks by priority.
* ``peft`` — Predict Earliest Finish Time (Arabnejad & Barbosa 2014): optimistic cost table
  OCT(t, s); ready tasks by rank_oct (mean OCT), server minimising EFT + OCT.
* ``affinity`` — the patent's greedy rule (image affinity, least t_trans + t_exec).
* ``all-cloud`` — every task on the cloud.  ``nearest-edge`` — every task on the edge
  server nearest to its workflow's source that can host it.

The three list schedulers are extended to the suite's model (documented in
``docs/offloading-baselines.md``):

* **costs.** The mean computation cost of a task is the mean of ``semantics.task_duration``
  (image pulls + execution) over the servers that can host it; the mean communication cost
  of an edge is the mean of ``semantics.transfer_time`` over the ordered pairs of distinct
  servers (a, b) hosting its two ends (0 if there is none). On the classic instances
  (``exec_times`` and edge ``cost``) these are the papers' w-bar and c-bar.
* **capacity.** Insertion is into a CPU / memory profile: a task may start at ``x`` on an
  edge server when, during ``[x, x + duration)``, the summed demand of the tasks reserved
  there plus its own stays within the capacity; candidate starts are its earliest start
  and every reservation end after it (the classic idle-slot insertion when every task
  takes the whole server). The cloud is unbounded: a task starts there when its data is in.
* **earliest start.** ``max(arrival + input_time, max over incoming edges of (predecessor
  finish + transfer_time))`` on the candidate server.
* **several workflows.** Each workflow is planned when it arrives (arrival order), on top of
  the reservations of the workflows planned before it; nothing is re-planned.

A plan is handed to the simulator as (server, planned start) per task (PlanPolicy), which
reproduces it exactly; the result is therefore what the paper's algorithm computes.
"""

from __future__ import annotations

import heapq
import time
from typing import Any, Callable

import numpy as np

from edgebench.errors import InputError
from edgebench.instances import semantics
from edgebench.instances.model import Instance, OffloadingPayload
from edgebench.registry import Result, make_result, register
from edgebench.solvers.offloading_sim import (
    EPS,
    AffinityPolicy,
    AllCloudPolicy,
    NearestEdgePolicy,
    OffloadingSim,
    PlanPolicy,
    Policy,
    SimTimeout,
    WorkflowGraph,
    cloud_index,
    simulate,
)

#: floats closer than this (relative) count as equal in rank / priority / finish-time ties
TIE = 1e-9


def _eq(a: float, b: float) -> bool:
    return abs(a - b) <= TIE * max(1.0, abs(a), abs(b))


# ======================================================================================
# Resource profiles
# ======================================================================================


class Timeline:
    """Reservations ``(start, end, cpu, mem)`` of every edge server; the cloud is unbounded."""

    def __init__(self, payload: OffloadingPayload) -> None:
        self.payload = payload
        self.busy: list[list[tuple[float, float, float, float]]] = [[] for _ in payload.servers]

    def fits(self, s: int, x: float, dur: float, cpu: float, mem: float) -> bool:
        srv = self.payload.servers[s]
        end = x + dur
        overlap = [iv for iv in self.busy[s] if iv[0] < end and iv[1] > x]
        points = [x] + [iv[0] for iv in overlap if iv[0] > x]
        for pt in points:
            used_c = cpu
            used_m = mem
            for a, b, c, m in overlap:
                if a <= pt < b:
                    used_c += c
                    used_m += m
            if used_c > srv.cpu + EPS or used_m > srv.mem + EPS:
                return False
        return True

    def earliest_start(self, s: int, est: float, dur: float, cpu: float, mem: float) -> float:
        """The earliest x >= est at which the task fits server s for its whole duration."""
        if self.payload.servers[s].is_cloud or dur <= 0:
            return est
        cands = sorted({est} | {iv[1] for iv in self.busy[s] if iv[1] > est})
        for x in cands:
            if self.fits(s, x, dur, cpu, mem):
                return x
        raise AssertionError("a task that fits its server always fits after the last reservation")  # pragma: no cover

    def reserve(self, s: int, start: float, dur: float, cpu: float, mem: float) -> None:
        if not self.payload.servers[s].is_cloud and dur > 0:
            self.busy[s].append((start, start + dur, cpu, mem))


# ======================================================================================
# Costs and ranks
# ======================================================================================


def mean_costs(payload: OffloadingPayload, w: int, g: WorkflowGraph) -> tuple[list[float], list[float]]:
    """(w-bar per task, c-bar per edge): mean task_duration over hosting servers; mean
    transfer_time over ordered pairs of distinct servers hosting the two ends."""
    wbar = [float(np.mean([semantics.task_duration(payload, w, t, s) for s in g.hosts[t]])) for t in range(g.n)]
    wf = payload.workflows[w]
    cbar = []
    for e, edge in enumerate(wf.edges):
        vals = [semantics.transfer_time(payload, w, e, a, b) for a in g.hosts[edge.src] for b in g.hosts[edge.dst]
                if a != b]
        cbar.append(float(np.mean(vals)) if vals else 0.0)
    return wbar, cbar


def upward_ranks(g: WorkflowGraph, wbar: list[float], cbar: list[float], edges) -> list[float]:
    """rank_u(t) = w-bar(t) + max over successors c of (c-bar(t, c) + rank_u(c))."""
    out_edges: list[list[tuple[int, int]]] = [[] for _ in range(g.n)]
    for e, edge in enumerate(edges):
        out_edges[edge.src].append((e, edge.dst))
    ru = [0.0] * g.n
    for t in reversed(g.topo):
        ru[t] = wbar[t] + max((cbar[e] + ru[c] for e, c in out_edges[t]), default=0.0)
    return ru


def downward_ranks(g: WorkflowGraph, wbar: list[float], cbar: list[float]) -> list[float]:
    """rank_d(t) = max over predecessors p of (rank_d(p) + w-bar(p) + c-bar(p, t)); 0 at entries."""
    rd = [0.0] * g.n
    for t in g.topo:
        rd[t] = max((rd[u] + wbar[u] + cbar[e] for e, u in g.preds[t]), default=0.0)
    return rd


def oct_table(payload: OffloadingPayload, w: int, g: WorkflowGraph, cbar: list[float]) -> list[dict[int, float]]:
    """PEFT's optimistic cost table: OCT(t, s) = max over successors c of min over servers
    s' hosting c of (OCT(c, s') + task_duration(c, s') + (c-bar(t, c) if s' != s else 0));
    0 for exit tasks. One dict {server: OCT} per task, over the servers hosting it."""
    out_edges: list[list[tuple[int, int]]] = [[] for _ in range(g.n)]
    for e, edge in enumerate(payload.workflows[w].edges):
        out_edges[edge.src].append((e, edge.dst))
    table: list[dict[int, float]] = [dict() for _ in range(g.n)]
    for t in reversed(g.topo):
        for s in g.hosts[t]:
            worst = 0.0
            for e, c in out_edges[t]:
                best = min(table[c][s2] + semantics.task_duration(payload, w, c, s2) + (0.0 if s2 == s else cbar[e])
                           for s2 in g.hosts[c])
                worst = max(worst, best)
            table[t][s] = worst
    return table


# ======================================================================================
# The list schedulers (planners executed by PlanPolicy)
# ======================================================================================


class ListPlanner:
    """Shared machinery: the resource timeline, earliest starts with insertion, placing a task.
    Subclasses implement ``plan(sim, w) -> {task: (server, start)}``."""

    name = "list"

    def reset(self, sim: OffloadingSim) -> None:
        self.payload = sim.payload
        self.graphs = sim.graphs
        self.timeline = Timeline(sim.payload)
        self.evaluations = 0
        self.workflow_info: dict[int, dict[str, Any]] = {}

    def __call__(self, sim: OffloadingSim, w: int) -> dict[int, tuple[int, float]]:
        self.srv: dict[int, int] = {}
        self.fin: dict[int, float] = {}
        self.st: dict[int, float] = {}
        self.plan(sim, w)
        return {t: (self.srv[t], self.st[t]) for t in self.srv}

    def plan(self, sim: OffloadingSim, w: int) -> None:
        raise NotImplementedError

    def est(self, w: int, t: int, s: int) -> float:
        p = self.payload
        r = float(p.workflows[w].arrival) + semantics.input_time(p, w, t, s)
        for e, u in self.graphs[w].preds[t]:
            r = max(r, self.fin[u] + semantics.transfer_time(p, w, e, self.srv[u], s))
        return r

    def eft(self, w: int, t: int, s: int) -> tuple[float, float]:
        """(start, finish) of task t on server s with insertion."""
        self.evaluations += 1
        dur = semantics.task_duration(self.payload, w, t, s)
        cpu, mem = semantics.task_demand(self.payload, w, t)
        x = self.timeline.earliest_start(s, self.est(w, t, s), dur, cpu, mem)
        return x, x + dur

    def place(self, w: int, t: int, s: int, start: float, finish: float) -> None:
        cpu, mem = semantics.task_demand(self.payload, w, t)
        self.timeline.reserve(s, start, finish - start, cpu, mem)
        self.srv[t], self.st[t], self.fin[t] = s, start, finish

    def best_server(self, w: int, t: int, extra: Callable[[int], float] | None = None) -> tuple[int, float, float]:
        """The server minimising finish (+ extra(s)); ties: smaller finish, then lower index."""
        best: tuple[float, float, int, float] | None = None
        for s in self.graphs[w].hosts[t]:
            x, f = self.eft(w, t, s)
            key = f + (extra(s) if extra else 0.0)
            if best is None or (key < best[0] and not _eq(key, best[0])) or (
                    _eq(key, best[0]) and f < best[1] and not _eq(f, best[1])):
                best = (key, f, s, x)
        assert best is not None
        return best[2], best[3], best[1]

    def stats(self) -> dict[str, Any]:
        return {"eft_evaluations": self.evaluations}


class HEFTPlanner(ListPlanner):
    name = "heft"

    def plan(self, sim: OffloadingSim, w: int) -> None:
        g = self.graphs[w]
        wbar, cbar = mean_costs(self.payload, w, g)
        ru = upward_ranks(g, wbar, cbar, self.payload.workflows[w].edges)
        pos = {t: k for k, t in enumerate(g.topo)}
        order = sorted(range(g.n), key=lambda t: (-ru[t], pos[t]))
        for t in order:
            s, x, f = self.best_server(w, t)
            self.place(w, t, s, x, f)
        self.workflow_info[w] = {"rank_u": ru, "order": order}


def critical_path(g: WorkflowGraph, prio: list[float]) -> list[int]:
    """CPOP's critical path: from the entry task of largest priority (ties: lowest index),
    repeatedly the successor whose priority equals |CP| (ties: lowest index)."""
    cp_len = max(prio[t] for t in g.entries)
    t = min((t for t in g.entries if _eq(prio[t], cp_len)))
    path = [t]
    while g.succs[t]:
        nxt = sorted(c for c in g.succs[t] if _eq(prio[c], cp_len))
        if not nxt:
            break
        t = nxt[0]
        path.append(t)
    return path


class CPOPPlanner(ListPlanner):
    name = "cpop"

    def plan(self, sim: OffloadingSim, w: int) -> None:
        p, g = self.payload, self.graphs[w]
        wbar, cbar = mean_costs(p, w, g)
        ru = upward_ranks(g, wbar, cbar, p.workflows[w].edges)
        rd = downward_ranks(g, wbar, cbar)
        prio = [a + b for a, b in zip(ru, rd)]
        cp = critical_path(g, prio)
        cp_set = set(cp)
        common = set(range(len(p.servers)))
        for t in cp:
            common &= set(g.hosts[t])
        p_cp = None
        if common:
            p_cp = min(common, key=lambda s: (sum(semantics.task_duration(p, w, t, s) for t in cp), s))
        ready = [(-prio[t], t) for t in g.entries]
        heapq.heapify(ready)
        missing = [len(g.preds[t]) for t in range(g.n)]
        order = []
        while ready:
            _, t = heapq.heappop(ready)
            order.append(t)
            if t in cp_set and p_cp is not None:
                x, f = self.eft(w, t, p_cp)
                s = p_cp
            else:
                s, x, f = self.best_server(w, t)
            self.place(w, t, s, x, f)
            for c in g.succs[t]:
                missing[c] -= 1
                if missing[c] == 0:
                    heapq.heappush(ready, (-prio[c], c))
        self.workflow_info[w] = {"priority": prio, "critical_path": cp, "cp_server": p_cp, "order": order}


class PEFTPlanner(ListPlanner):
    name = "peft"

    def plan(self, sim: OffloadingSim, w: int) -> None:
        p, g = self.payload, self.graphs[w]
        _, cbar = mean_costs(p, w, g)
        table = oct_table(p, w, g, cbar)
        rank = [float(np.mean(list(table[t].values()))) for t in range(g.n)]
        ready = [(-rank[t], t) for t in g.entries]
        heapq.heapify(ready)
        missing = [len(g.preds[t]) for t in range(g.n)]
        order = []
        while ready:
            _, t = heapq.heappop(ready)
            order.append(t)
            s, x, f = self.best_server(w, t, extra=lambda s, t=t: table[t][s])
            self.place(w, t, s, x, f)
            for c in g.succs[t]:
                missing[c] -= 1
                if missing[c] == 0:
                    heapq.heappush(ready, (-rank[c], c))
        self.workflow_info[w] = {"rank_oct": rank, "oct": table, "order": order}


PLANNERS: dict[str, type[ListPlanner]] = {"heft": HEFTPlanner, "cpop": CPOPPlanner, "peft": PEFTPlanner}


def plan_policy(name: str) -> PlanPolicy:
    """The simulator policy executing planner ``name`` (heft, cpop or peft)."""
    return PlanPolicy(name, PLANNERS[name]())


# ======================================================================================
# Registered solvers
# ======================================================================================


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"the seed must be a non-negative integer, got {seed!r}", field="seed")
    return int(seed)


def _no_params(name: str, params: dict[str, Any]) -> None:
    for key in params:
        raise InputError(f"unknown parameter of solver {name!r} (it takes none)", field=f"params.{key}")


def run_policy(instance: Instance, name: str, policy: Policy, *, seed: int, params: dict[str, Any],
               time_limit: float | None, started: float) -> Result:
    """Simulate ``policy`` on ``instance`` and wrap the outcome as a Result (status feasible,
    timeout, or infeasible when the policy cannot apply)."""
    deadline = None if time_limit is None else started + float(time_limit)
    try:
        res = simulate(instance, policy, deadline=deadline)
    except SimTimeout:
        return make_result(instance, name, status="timeout", seed=seed, params=params, started=started,
                           stats={"reason": f"time limit {time_limit} s reached"})
    except ValueError as exc:
        return make_result(instance, name, status="infeasible", seed=seed, params=params, started=started,
                           stats={"reason": str(exc)})
    return make_result(instance, name, status="feasible", decisions=res.decisions, seed=seed, params=params,
                       objective=res.mean_makespan, started=started, stats=res.stats)


def _register_planner(name: str, description: str) -> None:
    @register(name, families=("offloading",), kind="heuristic", description=description, params={})
    def solve(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
        started = time.perf_counter()
        seed = _check_seed(seed)
        _no_params(name, params)
        return run_policy(instance, name, plan_policy(name), seed=seed, params=params, time_limit=time_limit,
                          started=started)

    solve.__name__ = f"solve_{name.replace('-', '_')}"
    globals()[solve.__name__] = solve


_register_planner("heft", "HEFT (Topcuoglu et al. 2002): upward rank, insertion-based earliest finish time, "
                          "extended to cpu/mem capacity, image pulls and workflow arrivals")
_register_planner("cpop", "CPOP (Topcuoglu et al. 2002): critical path on one server, the rest by earliest "
                          "finish time; same extensions as heft")
_register_planner("peft", "PEFT (Arabnejad & Barbosa 2014): optimistic cost table, earliest finish + OCT; "
                          "same extensions as heft")


@register("affinity", families=("offloading",), kind="heuristic",
          description="The patent's greedy rule: next task by image affinity, server with the least "
                      "t_trans + t_exec (holders and non-holders of the image evaluated separately)",
          params={})
def solve_affinity(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    """Patent greedy rule; the seed draws among equally preferred candidate tasks."""
    started = time.perf_counter()
    seed = _check_seed(seed)
    _no_params("affinity", params)
    return run_policy(instance, "affinity", AffinityPolicy(np.random.default_rng(seed)), seed=seed, params=params,
                      time_limit=time_limit, started=started)


@register("all-cloud", families=("offloading",), kind="heuristic",
          description="Every task on the cloud server (infeasible without one)", params={})
def solve_all_cloud(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    started = time.perf_counter()
    seed = _check_seed(seed)
    _no_params("all-cloud", params)
    if instance.offloading is not None and cloud_index(instance.offloading) is None:
        return make_result(instance, "all-cloud", status="infeasible", seed=seed, params=params, started=started,
                           stats={"reason": "the instance has no cloud server"})
    return run_policy(instance, "all-cloud", AllCloudPolicy(), seed=seed, params=params, time_limit=time_limit,
                      started=started)


@register("nearest-edge", families=("offloading",), kind="heuristic",
          description="Every task on the edge server nearest to its workflow's source that can host it "
                      "(the cloud when none can)", params={})
def solve_nearest_edge(instance: Instance, *, time_limit: float | None = None, seed: int = 0,
                       **params: Any) -> Result:
    started = time.perf_counter()
    seed = _check_seed(seed)
    _no_params("nearest-edge", params)
    return run_policy(instance, "nearest-edge", NearestEdgePolicy(), seed=seed, params=params,
                      time_limit=time_limit, started=started)


__all__ = [
    "Timeline", "mean_costs", "upward_ranks", "downward_ranks", "oct_table", "critical_path", "ListPlanner",
    "HEFTPlanner", "CPOPPlanner", "PEFTPlanner", "PLANNERS", "plan_policy", "run_policy",
]
