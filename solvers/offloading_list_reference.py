"""The paper-faithful list schedulers as they were before issue 17, kept as the reference
that the fast ones in :mod:`edgebench.solvers.offloading_baselines` are tested
(``tests/solvers/test_offloading_baselines.py``: same schedules on many random instances)
and benchmarked (``bench/bench_offloading_sim.py``) against.

What differs is only the cost of computing the same thing:

* :class:`RescanTimeline` keeps every reservation in one list per server; an earliest-start
  query sorts the candidate starts (the query's earliest start and every reservation end
  after it) and, for each, rescans all reservations to check the capacity at every point
  of the window: O(k^2) per query with k reservations on the server.
* :func:`mean_costs_loops` and :func:`oct_table_loops` call ``semantics`` once per server
  pair and per table entry (O(e S^2) Python calls).

Not registered as solvers; use :func:`reference_policy`.
"""

from __future__ import annotations

import numpy as np

from edgebench.instances import semantics
from edgebench.instances.model import OffloadingPayload
from edgebench.solvers import offloading_baselines as ob
from edgebench.solvers.offloading_sim import EPS, PlanPolicy, WorkflowGraph


class RescanTimeline:
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


def mean_costs_loops(payload: OffloadingPayload, w: int, g: WorkflowGraph) -> tuple[list[float], list[float]]:
    wbar = [float(np.mean([semantics.task_duration(payload, w, t, s) for s in g.hosts[t]])) for t in range(g.n)]
    wf = payload.workflows[w]
    cbar = []
    for e, edge in enumerate(wf.edges):
        vals = [semantics.transfer_time(payload, w, e, a, b) for a in g.hosts[edge.src] for b in g.hosts[edge.dst]
                if a != b]
        cbar.append(float(np.mean(vals)) if vals else 0.0)
    return wbar, cbar


def oct_table_loops(payload: OffloadingPayload, w: int, g: WorkflowGraph, cbar: list[float]) -> list[dict[int, float]]:
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


class _Reference:
    """Mixin: the reference timeline, cost loops and per-call ``semantics`` look-ups."""

    timeline_class = RescanTimeline

    def mean_costs(self, w: int, g: WorkflowGraph):
        return mean_costs_loops(self.payload, w, g)

    def oct_table(self, w: int, g: WorkflowGraph, cbar: list[float]):
        return oct_table_loops(self.payload, w, g, cbar)

    def est(self, w: int, t: int, s: int) -> float:
        p = self.payload
        r = float(p.workflows[w].arrival) + semantics.input_time(p, w, t, s)
        for e, u in self.graphs[w].preds[t]:
            r = max(r, self.fin[u] + semantics.transfer_time(p, w, e, self.srv[u], s))
        return r

    def ests(self, w: int, t: int) -> list[None]:
        return [None] * len(self.graphs[w].hosts[t])

    def eft(self, w: int, t: int, s: int, est: None = None) -> tuple[float, float]:
        self.evaluations += 1
        dur = semantics.task_duration(self.payload, w, t, s)
        cpu, mem = semantics.task_demand(self.payload, w, t)
        x = self.timeline.earliest_start(s, self.est(w, t, s), dur, cpu, mem)
        return x, x + dur

    def place(self, w: int, t: int, s: int, start: float, finish: float) -> None:
        cpu, mem = semantics.task_demand(self.payload, w, t)
        self.timeline.reserve(s, start, finish - start, cpu, mem)
        self.srv[t], self.st[t], self.fin[t] = s, start, finish


REFERENCE_PLANNERS = {name: type(f"Reference{cls.__name__}", (_Reference, cls), {})
                      for name, cls in ob.PLANNERS.items()}


def reference_policy(name: str) -> PlanPolicy:
    """The simulator policy executing the reference planner ``name`` (heft, cpop or peft)."""
    return PlanPolicy(name, REFERENCE_PLANNERS[name]())


__all__ = ["RescanTimeline", "mean_costs_loops", "oct_table_loops", "REFERENCE_PLANNERS", "reference_policy"]
