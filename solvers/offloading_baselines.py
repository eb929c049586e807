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
import math
import time
from typing import Any, Callable

import numpy as np

from edgebench.errors import InputError
from edgebench.instances import semantics
from edgebench.instances.model import Instance, OffloadingPayload
from edgebench.instances.timeline import Timeline, upward_ranks
from edgebench.registry import Result, make_result, register
from edgebench.solvers.offloading_sim import (
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
# Costs and ranks
# ======================================================================================


def durations(payload: OffloadingPayload, w: int, g: WorkflowGraph) -> list[dict[int, float]]:
    """task_duration of every task on every server hosting it (one ``semantics`` call each)."""
    return [{s: semantics.task_duration(payload, w, t, s) for s in g.hosts[t]} for t in range(g.n)]


def mean_costs(payload: OffloadingPayload, w: int, g: WorkflowGraph,
               dur: list[dict[int, float]] | None = None) -> tuple[list[float], list[float]]:
    """(w-bar per task, c-bar per edge): mean task_duration over hosting servers; mean
    transfer_time over ordered pairs of distinct servers hosting the two ends. The edges are
    grouped by the host sets of their two ends and each group is evaluated as one array (the
    same floats, summed in the same order, as one ``np.mean`` per edge)."""
    dur = durations(payload, w, g) if dur is None else dur
    wbar = [float(np.mean([dur[t][s] for s in g.hosts[t]])) for t in range(g.n)]
    wf = payload.workflows[w]
    cbar = [0.0] * len(wf.edges)
    groups: dict[tuple[tuple[int, ...], tuple[int, ...]], list[int]] = {}
    for e, edge in enumerate(wf.edges):
        groups.setdefault((g.hosts[edge.src], g.hosts[edge.dst]), []).append(e)
    dist = np.asarray(payload.distance, dtype=float) if payload.distance is not None else None
    for (ha, hb), es in groups.items():
        pairs = [(a, b) for a in ha for b in hb if a != b]
        if not pairs:
            continue
        costs = [wf.edges[e].cost for e in es]
        if all(c is not None for c in costs):
            vals = np.repeat(np.asarray(costs, dtype=float)[:, None], len(pairs), axis=1)
        elif all(c is None for c in costs) and dist is not None:
            d = dist[[a for a, _ in pairs], [b for _, b in pairs]]
            vals = np.asarray([wf.edges[e].data for e in es], dtype=float)[:, None] * d[None, :] / payload.bandwidth
        else:  # mixed: edge by edge
            vals = np.asarray([[semantics.transfer_time(payload, w, e, a, b) for a, b in pairs] for e in es])
        for e, m in zip(es, vals.mean(axis=1)):
            cbar[e] = float(m)
    return wbar, cbar


def out_edges(g: WorkflowGraph, cbar: list[float], edges) -> list[list[tuple[float, int]]]:
    """Per task, ``(c-bar, successor)`` of every outgoing edge (for :func:`upward_ranks`)."""
    out: list[list[tuple[float, int]]] = [[] for _ in range(g.n)]
    for e, edge in enumerate(edges):
        out[edge.src].append((cbar[e], edge.dst))
    return out


def downward_ranks(g: WorkflowGraph, wbar: list[float], cbar: list[float]) -> list[float]:
    """rank_d(t) = max over predecessors p of (rank_d(p) + w-bar(p) + c-bar(p, t)); 0 at entries."""
    rd = [0.0] * g.n
    for t in g.topo:
        rd[t] = max((rd[u] + wbar[u] + cbar[e] for e, u in g.preds[t]), default=0.0)
    return rd


def oct_table(payload: OffloadingPayload, w: int, g: WorkflowGraph, cbar: list[float],
              dur: list[dict[int, float]] | None = None) -> list[dict[int, float]]:
    """PEFT's optimistic cost table: OCT(t, s) = max over successors c of min over servers
    s' hosting c of (OCT(c, s') + task_duration(c, s') + (c-bar(t, c) if s' != s else 0));
    0 for exit tasks. One dict {server: OCT} per task, over the servers hosting it.

    Per edge (t, c): with A(s') = OCT(c, s') + task_duration(c, s') and B = A + c-bar, the
    inner minimum is min(A(s), min over s' != s of B(s')) (A(s) only when s hosts c): the two
    smallest B give the second term for every s, O(S) per edge instead of O(S^2)."""
    dur = durations(payload, w, g) if dur is None else dur
    out_edges: list[list[tuple[int, int]]] = [[] for _ in range(g.n)]
    for e, edge in enumerate(payload.workflows[w].edges):
        out_edges[edge.src].append((e, edge.dst))
    table: list[dict[int, float]] = [dict() for _ in range(g.n)]
    for t in reversed(g.topo):
        worst = dict.fromkeys(g.hosts[t], 0.0)
        for e, c in out_edges[t]:
            A = {s2: table[c][s2] + dur[c][s2] for s2 in g.hosts[c]}
            B = sorted((a + cbar[e], s2) for s2, a in A.items())
            for s in g.hosts[t]:
                other = B[0][0] if B[0][1] != s else (B[1][0] if len(B) > 1 else math.inf)
                best = min(A[s], other) if s in A else other
                if best > worst[s]:
                    worst[s] = best
        table[t] = worst
    return table


# ======================================================================================
# The list schedulers (planners executed by PlanPolicy)
# ======================================================================================


class ListPlanner:
    """Shared machinery: the resource timeline, earliest starts with insertion, placing a task.
    Subclasses implement ``plan(sim, w) -> {task: (server, start)}``."""

    name = "list"
    timeline_class: Callable[[OffloadingPayload], Any] = Timeline.of

    def reset(self, sim: OffloadingSim) -> None:
        self.payload = sim.payload
        self.graphs = sim.graphs
        self.timeline = self.timeline_class(sim.payload)
        dist = sim.payload.distance
        self.dist = None if dist is None else np.asarray(dist, dtype=float)
        self.evaluations = 0
        self.workflow_info: dict[int, dict[str, Any]] = {}

    def __call__(self, sim: OffloadingSim, w: int) -> dict[int, tuple[int, float]]:
        self.srv: dict[int, int] = {}
        self.fin: dict[int, float] = {}
        self.st: dict[int, float] = {}
        p, g = self.payload, self.graphs[w]
        # the workflow's per-task look-ups, once: durations, demands, release on each host
        self.dur = durations(p, w, g)
        self.demand = [semantics.task_demand(p, w, t) for t in range(g.n)]
        arr = float(p.workflows[w].arrival)
        self.release = [{s: arr + semantics.input_time(p, w, t, s) for s in g.hosts[t]} for t in range(g.n)]
        self.plan(sim, w)
        return {t: (self.srv[t], self.st[t]) for t in self.srv}

    def plan(self, sim: OffloadingSim, w: int) -> None:
        raise NotImplementedError

    def mean_costs(self, w: int, g: WorkflowGraph) -> tuple[list[float], list[float]]:
        return mean_costs(self.payload, w, g, self.dur)

    def oct_table(self, w: int, g: WorkflowGraph, cbar: list[float]) -> list[dict[int, float]]:
        return oct_table(self.payload, w, g, cbar, self.dur)

    def est(self, w: int, t: int, s: int) -> float:
        p = self.payload
        r = self.release[t][s]
        for e, u in self.graphs[w].preds[t]:
            r = max(r, self.fin[u] + semantics.transfer_time(p, w, e, self.srv[u], s))
        return r

    def ests(self, w: int, t: int) -> list[float]:
        """:meth:`est` on every host of t at once: per incoming edge one row of
        ``semantics.transfer_time`` values over the hosts, computed as arrays with the same
        float operations (cost; else data x distance / bandwidth; 0 on the same server)."""
        g, p = self.graphs[w], self.payload
        hosts = g.hosts[t]
        rel = [self.release[t][s] for s in hosts]
        if not g.preds[t]:
            return rel
        edges = p.workflows[w].edges
        if self.dist is None or any(edges[e].cost is not None for e, _ in g.preds[t]):
            return [self.est(w, t, s) for s in hosts]
        src = [self.srv[u] for _, u in g.preds[t]]
        data = np.asarray([edges[e].data for e, _ in g.preds[t]])
        tt = data[:, None] * self.dist[np.ix_(src, hosts)] / p.bandwidth
        tt[np.asarray(src)[:, None] == np.asarray(hosts)[None, :]] = 0.0
        arr = np.asarray([self.fin[u] for _, u in g.preds[t]])[:, None] + tt
        return [max(r, float(v)) for r, v in zip(rel, arr.max(axis=0))]

    def eft(self, w: int, t: int, s: int, est: float | None = None) -> tuple[float, float]:
        """(start, finish) of task t on server s with insertion (``est``: its earliest start
        there when already known)."""
        self.evaluations += 1
        dur = self.dur[t][s]
        cpu, mem = self.demand[t]
        x = self.timeline.earliest_start(s, self.est(w, t, s) if est is None else est, dur, cpu, mem)
        return x, x + dur

    def place(self, w: int, t: int, s: int, start: float, finish: float) -> None:
        cpu, mem = self.demand[t]
        self.timeline.reserve(s, start, finish - start, cpu, mem)
        self.srv[t], self.st[t], self.fin[t] = s, start, finish

    def best_server(self, w: int, t: int, extra: Callable[[int], float] | None = None) -> tuple[int, float, float]:
        """The server minimising finish (+ extra(s)); ties: smaller finish, then lower index."""
        best: tuple[float, float, int, float] | None = None
        for s, r in zip(self.graphs[w].hosts[t], self.ests(w, t)):
            x, f = self.eft(w, t, s, r)
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
        wbar, cbar = self.mean_costs(w, g)
        ru = upward_ranks(g.topo, wbar, out_edges(g, cbar, self.payload.workflows[w].edges))
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
        wbar, cbar = self.mean_costs(w, g)
        ru = upward_ranks(g.topo, wbar, out_edges(g, cbar, p.workflows[w].edges))
        rd = downward_ranks(g, wbar, cbar)
        prio = [a + b for a, b in zip(ru, rd)]
        cp = critical_path(g, prio)
        cp_set = set(cp)
        common = set(range(len(p.servers)))
        for t in cp:
            common &= set(g.hosts[t])
        p_cp = None
        if common:
            p_cp = min(common, key=lambda s: (sum(self.dur[t][s] for t in cp), s))
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
        _, cbar = self.mean_costs(w, g)
        table = self.oct_table(w, g, cbar)
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
    "Timeline", "mean_costs", "out_edges", "upward_ranks", "downward_ranks", "oct_table", "critical_path", "ListPlanner",
    "HEFTPlanner", "CPOPPlanner", "PEFTPlanner", "PLANNERS", "plan_policy", "run_policy",
]
