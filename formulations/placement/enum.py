"""Brute-force optimum of the placement referee's own problem on tiny instances.

:func:`optimum` searches EVERY referee-feasible re-allocating schedule: in every step each
arrived, unfinished task either waits (not started yet), starts on an eligible cluster with
a pause or with any allocation ``minimum <= (cpu, gpu) <= capacity``, or (once started) takes
any allocation of its cluster including the pause (0, 0); the joint choice must fit every
cluster's cpu / gpu / memory capacity and, in the single-task variant, at most one task may
take its first non-empty allocation on a cluster in a step.  Progress, noise, the switching
loss and the finish rule are the sub-package's one step rule (:func:`.problem.step_progress`,
:func:`.problem.is_done`: the referee's float operations in the same order; the referee itself
stays separate), so the value it returns is the referee's ``total_completion_time`` of the
decisions it returns (the tests check it through the referee).

The search is a depth-first dynamic programme over steps, memoised on the joint state
(step, per task: cluster, progress, executed steps, previous allocation, whether it has
held resources yet); no dominance and no bound is used, so it cannot be tuned to any exact
model.  Time is bounded by a proof: a referee-feasible schedule (the better of a sequential
one, one task at a time at the full capacity of its first eligible cluster, and the
fixed-allocation greedy of :mod:`edgebench.formulations.placement`) has value UB, and in any
schedule at least as good task j finishes by ``arrival_j + UB - (J - 1)`` (every other task
takes >= 1 step); a branch in which a task is unfinished past that step is cut.  The joint
move enumeration (the order of moves, the memo, the cut) is written apart from the exact
model's (:mod:`.exact`); the two share the step rule and the capacity check of one step
(:class:`.problem.JointUse`), which the referee checks independently: the tests score both
through it.

API (stable; other branches use it in their tests)::

    value, decisions = optimum(instance, max_states=200_000)

``value`` is the optimal total completion time (float), ``decisions`` an optimal
:class:`~edgebench.solution.PlacementDecisions` (allocation histories).  Raises
:class:`StateLimitError` when more than ``max_states`` joint states would be visited and
``ValueError`` when no task order finishes (an infeasible instance).
"""

from __future__ import annotations

import math
import sys

from edgebench.formulations.placement.problem import (PAUSE, JointUse, best_greedy, is_done, prepare,
                                                      schedule_objective, step_progress)
from edgebench.instances import semantics
from edgebench.solution import AllocationChange, PlacementDecision, PlacementDecisions

class StateLimitError(RuntimeError):
    """The search would visit more joint states than allowed."""


def sequential_upper_bound(payload) -> int:
    """Value of a referee-feasible schedule: tasks one after another in arrival order, each
    alone at the full capacity of the first eligible cluster on which it finishes."""
    cur = 0
    total = 0
    for j, task in enumerate(payload.tasks):
        best = None
        for n in task.eligible:
            cap = payload.clusters[n].capacity
            if not semantics.fits(task.minimum, cap):
                continue
            d = semantics.fixed_run_steps(payload, j, cap.cpu, cap.gpu)
            if d is not None:
                best = d
                break
        if best is None:
            raise ValueError(f"task {j} finishes on none of its eligible clusters")
        start = max(cur, task.arrival)
        cur = start + best
        total += cur - task.arrival
    return total


def optimum(instance, *, max_states: int = 200_000, horizon: int | None = None):
    """(optimal total completion time, optimal PlacementDecisions) of a tiny instance; see
    the module docstring.  ``horizon``: every task must finish by this step (default: the
    proven one; a smaller one gives the optimum of the restricted problem)."""
    p = instance.placement
    J = len(p.tasks)
    ub = sequential_upper_bound(p)
    data = prepare(p)
    if all(data.options):
        ub = min(ub, schedule_objective(data, best_greedy(data)))
    deadlines = [t.arrival + ub - (J - 1) for t in p.tasks]
    if horizon is not None:
        deadlines = [min(d, int(horizon)) for d in deadlines]
    T = max(deadlines)
    search = _Search(p, T, max_states, deadlines)
    init = tuple(None for _ in range(J))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * T + 1000))
    try:
        value = search.value(0, init)
    finally:
        sys.setrecursionlimit(limit)
    if not math.isfinite(value):
        raise ValueError(f"no schedule finishes every task by step {T}")
    return float(value), search.decisions(init)


class _Search:
    def __init__(self, p, T: int, max_states: int, deadlines: list[int]):
        self.p = p
        self.T = T
        self.deadlines = deadlines
        self.max_states = max_states
        self.memo: dict = {}
        self.move_cache: dict = {}
        self.overhead = 1.0 - p.switching_overhead
        self.arrival = [t.arrival for t in p.tasks]
        self.options = [{n: semantics.allocation_options(p, j, n) for n in t.eligible if n < len(p.clusters)}
                        for j, t in enumerate(p.tasks)]

    def _moves(self, j: int, st, t: int) -> list:
        """One task's moves in a step: (next state or ("F",), allocation, cluster, first
        non-empty allocation?); they do not depend on the step, so they are cached."""
        key = (j, st)
        hit = self.move_cache.get(key)
        if hit is None:
            hit = self.move_cache[key] = list(self._gen_moves(j, st))
        return hit

    def _gen_moves(self, j: int, st):
        if st is None:
            yield None, PAUSE, -1, False  # keep waiting
            for n, opts in self.options[j].items():
                yield (n, 0.0, 0, PAUSE, False), PAUSE, n, False  # start with a pause
                for a in opts:
                    yield self._run(j, n, 0.0, 0, PAUSE, True, a, first_step=True), a, n, True
            return
        n, prog, k, prev, held = st
        yield (n, prog, k, PAUSE, held), PAUSE, n, False
        for a in self.options[j][n]:
            yield self._run(j, n, prog, k, prev, held, a, first_step=False), a, n, not held

    def _run(self, j, n, prog, k, prev, held, a, *, first_step: bool):
        prog = step_progress(self.p, j, a, prog, k, prev, first_step, self.overhead)
        if is_done(prog):
            return ("F",)
        return (n, prog, k + 1, a, True)

    def value(self, t: int, states: tuple) -> float:
        if all(s == ("F",) for s in states):
            return 0.0
        if t >= self.T or any(s != ("F",) and self.deadlines[j] <= t for j, s in enumerate(states)):
            return math.inf
        key = (t, states)
        hit = self.memo.get(key)
        if hit is not None:
            return hit[0]
        if len(self.memo) >= self.max_states:
            raise StateLimitError(f"the brute force visits more than {self.max_states} joint states "
                                  f"(horizon {self.T} steps); give a tinier instance or raise max_states")
        self.memo[key] = (math.inf, None, None)  # states never repeat a step, so no cycles
        best = (math.inf, None, None)
        active = [j for j, s in enumerate(states) if s != ("F",) and self.arrival[j] <= t]
        use = JointUse(self.p)
        nxt = list(states)
        allocs = [None] * len(states)

        def rec(i: int, done_cost: int):
            nonlocal best
            if i == len(active):
                v = done_cost + self.value(t + 1, tuple(nxt))
                if v < best[0]:
                    best = (v, tuple(allocs), tuple(nxt))
                return
            j = active[i]
            for ns, a, n, first in self._moves(j, states[j], t):
                u = None
                if a != PAUSE:
                    u = use.take(j, n, a, first)
                    if u is None:
                        continue
                nxt[j] = ns
                allocs[j] = (n, a)
                cost = t + 1 - self.arrival[j] if ns == ("F",) else 0
                rec(i + 1, done_cost + cost)
                if u is not None:
                    use.give_back(n, u, first)
            nxt[j] = states[j]
            allocs[j] = None

        rec(0, 0)
        self.memo[key] = best
        return best[0]

    def decisions(self, init: tuple) -> PlacementDecisions:
        path = []
        t, states = 0, init
        while not all(s == ("F",) for s in states):
            _, allocs, nxt = self.memo[(t, states)]
            path.append((t, allocs))
            t, states = t + 1, nxt
        return decisions_from_path(len(init), path)


def decisions_from_path(J: int, path) -> PlacementDecisions:
    """Allocation histories from a path of (step, per task (cluster, allocation) or None);
    cluster -1 = still waiting."""
    cluster: list[int | None] = [None] * J
    start: list[int | None] = [None] * J
    hist: list[list[tuple[int, int, int]]] = [[] for _ in range(J)]
    for t, allocs in path:
        for j, pick in enumerate(allocs):
            if pick is None or pick[0] < 0:
                continue
            n, a = pick
            if start[j] is None:
                start[j], cluster[j] = t, n
            if not hist[j] or (hist[j][-1][1], hist[j][-1][2]) != a:
                hist[j].append((t, a[0], a[1]))
    return PlacementDecisions(tasks=[
        PlacementDecision(cluster=cluster[j], start=start[j],
                          history=[AllocationChange(step=s, cpu=c, gpu=g) for s, c, g in hist[j]])
        for j in range(J)])


__all__ = ["optimum", "sequential_upper_bound", "decisions_from_path", "StateLimitError"]
