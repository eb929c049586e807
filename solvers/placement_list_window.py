"""List scheduling over the agents' pending windows, re-planned every step (``placement-list-window``;
issue 42, session 25).

The TapFinger agents see, per cluster, a pending window (the ``pending_size`` earliest arrived,
not started tasks of its queue) and start at most one task per cluster and step in the single
variant (docs/placement-sim.md). This policy plays by exactly those rules and decides from what
the agents jointly see, in every step t:

1. **Plan** (:func:`window_plan`): the tasks of the union of the windows, in arrival order (ties:
   task index), are each given the (cluster, allocation, start) that **finishes earliest**, given
   the tasks running now and the tasks planned before it: a cluster of the task's queue, one of
   its Pareto-minimal allocations there (``semantics.dominant_options`` of the noise-free
   performance model: what an online scheduler knows; the noise draws are not read), and the
   first step ``tau >= t`` from which that allocation fits the
   cluster's capacity for the whole run next to the running and earlier planned tasks and, in the
   single variant, at which no earlier planned task starts on that cluster. Ties: earlier start,
   fewer resources (cpu + gpu), lower cluster index. With a **resource weight** w > 0 the entry
   minimises ``finish + w * d * (c / C + g / G) / 2`` instead of the finish: the finish plus w times
   the run's share of the cluster's resource-time (d steps holding c of C cpu and g of G gpu), the
   room it takes from the tasks planned after it (w = 0, the default: the earliest finish). A
   running task occupies its allocation until its projected finish (its start plus its noise-free
   run time at that allocation; from its current progress when it was re-allocated or paused;
   never before the next step).
2. **Start**: each cluster starts its tasks planned for now (``tau == t``) that the simulator
   allows now (pending window, free resources, one start per step in the single variant), in
   plan order.

Nothing is kept between steps: the plan is a function of the simulator's state, so the policy
is also an expert that labels any state (DAgger). Its schedule is one the agents can play action
for action (every start goes through the window and start rules). It never waits forever: the
earliest arrived unstarted task is planned first, against the running tasks only, and is in the
window of every cluster of its queue, so it starts once its planned start comes.

Against ``placement-lns-window{iterations=0}`` (the list plan of every known task, made at each
arrival and played by the same rules): the same rule of earliest finish, but on the windows' tasks
only and re-planned every step rather than at arrivals; on hetero-6 single (384 tasks) about 60x
faster and as good (docs/learned-baselines.md).
"""

from __future__ import annotations

import math
import time
from typing import Any

from edgebench.errors import InputError
from edgebench.instances import semantics
from edgebench.registry import make_result, register
from edgebench.solvers.placement_sim import PlacementSim, SimTimeout, Stalled, run_policy

SOLVER_NAME = "placement-list-window"

__all__ = ["SOLVER_NAME", "ListWindowPolicy", "Planner", "plan_key", "window_plan", "solve"]


class Planner:
    """The run-time tables of one instance's planning, from its noise-free performance model (the
    noise draws are the simulator's, not known to an online scheduler): the Pareto-minimal
    (cpu, gpu, steps) options of task j on cluster k, cached per (type, minimum, cluster), the
    only things they depend on; and the projected finish of a running task."""

    def __init__(self, payload) -> None:
        self.payload = payload if not payload.noise else payload.model_copy(update={"noise": 0.0})
        self._options: dict[tuple, list[tuple[int, int, int]]] = {}
        self._finish: dict[tuple, float] = {}

    def options(self, j: int, k: int) -> list[tuple[int, int, int]]:
        task = self.payload.tasks[j]
        key = (task.type, task.minimum.cpu, task.minimum.gpu, k)
        hit = self._options.get(key)
        if hit is None:
            hit = self._options[key] = semantics.dominant_options(self.payload, j, k)
        return hit

    def projected_finish(self, sim: PlacementSim, j: int) -> float:
        """The step after the one in which running task j would complete at its current
        allocation (inf: it makes no progress there, e.g. paused)."""
        c, g = sim.allocation(j)
        if sim.changed_at(j) is None:  # held its start allocation: start + run time
            key = (j, sim.start_step(j), c, g)
            hit = self._finish.get(key)
            if hit is None:
                d = semantics.fixed_run_steps(self.payload, j, c, g)
                hit = self._finish[key] = math.inf if d is None else sim.start_step(j) + d
            return max(hit, sim.t + 1)
        p = sim.progress(j)
        for step in range(semantics.MAX_RUN_STEPS):
            gain = semantics.increment(self.payload, j, c, g, p)
            if gain <= 0:
                return math.inf
            p += gain
            if p >= 1.0 - semantics.PROGRESS_EPS:
                return sim.t + step + 1
        return math.inf


def _earliest_start(t: int, cap: tuple[int, int], runs: list[tuple[int, float, int, int]], slots: set[int],
                    c: int, g: int, d: int) -> int | None:
    """The first step tau >= t at which an allocation (c, g) held for d steps fits a cluster of
    capacity ``cap`` next to ``runs`` ((start, end, cpu, gpu): occupied over start <= x < end)
    for all of [tau, tau + d), tau not in ``slots``; None when it never fits."""
    cap_c, cap_g = cap
    if c > cap_c or g > cap_g:
        return None
    points = sorted({t} | {int(e) for _, e, _, _ in runs if t < e < math.inf} | {s for s, _, _, _ in runs if s > t})
    for tau in points:
        while tau in slots:
            tau += 1
        end = tau + d
        checks = [tau] + [s for s, _, _, _ in runs if tau < s < end]
        if all(sum(rc for s, e, rc, _ in runs if s <= x < e) + c <= cap_c
               and sum(rg for s, e, _, rg in runs if s <= x < e) + g <= cap_g for x in checks):
            return tau
    return None


def plan_key(tau: int, c: int, g: int, d: int, k: int, cap: tuple[int, int], resource_weight: float) -> tuple:
    """The order of a task's candidate (cluster k, allocation (c, g) for d steps, start tau) on a
    cluster of capacity ``cap``: the score ``tau + d + w * d * (c / C + g / G) / 2`` (w = 0: the
    finish), then the earlier start, fewer resources, the lower cluster."""
    score = tau + d
    if resource_weight:
        score += resource_weight * d * (c / cap[0] + g / cap[1]) / 2
    return (score, tau, c + g, k)


def window_plan(sim: PlacementSim, planner: Planner,
                resource_weight: float = 0.0) -> dict[int, tuple[int, int, int, int]]:
    """The plan of step ``sim.t`` (module docstring, step 1): task -> (cluster, start, cpu, gpu)
    for every task of the union of the clusters' pending windows that some cluster of its queue
    can run (none is left out on a finite instance: a task's minimum fits one of its clusters).
    Each entry minimises :func:`plan_key` with ``resource_weight``."""
    t = sim.t
    N = sim.num_clusters
    window = sorted({j for n in range(N) for j in sim.pending(n)[: sim.pending_size]},
                    key=lambda j: (sim.arrival[j], j))
    caps = [(sim.cap_cpu[k], sim.cap_gpu[k]) for k in range(N)]
    runs: list[list[tuple[int, float, int, int]]] = [
        [(t, planner.projected_finish(sim, j), *sim.allocation(j)) for j in sim.running(k)] for k in range(N)]
    slots: list[set[int]] = [set() for _ in range(N)]
    plan: dict[int, tuple[int, int, int, int]] = {}
    for j in window:
        best = None
        for k in sim.eligible[j]:
            for c, g, d in planner.options(j, k):
                if best is not None and plan_key(t, c, g, d, k, caps[k], resource_weight)[0] > best[0][0]:
                    continue  # scores above the best found even if started now (the score grows with tau)
                tau = _earliest_start(t, caps[k], runs[k], slots[k], c, g, d)
                if tau is None:
                    continue
                key = plan_key(tau, c, g, d, k, caps[k], resource_weight)
                if best is None or key < best[0]:
                    best = (key, k, tau, c, g, d)
        if best is None:
            continue
        _, k, tau, c, g, d = best
        runs[k].append((tau, tau + d, c, g))
        if not sim.multi:
            slots[k].add(tau)
        plan[j] = (k, tau, c, g)
    return plan


class ListWindowPolicy:
    """The simulator policy (``reset(sim)``, ``act(sim) -> bool``, :func:`run_policy`)."""

    def __init__(self, instance, resource_weight: float = 0.0) -> None:
        self.planner = Planner(instance.placement)
        self.resource_weight = float(resource_weight)

    def reset(self, sim: PlacementSim) -> None:
        self.info = {"plans": 0, "blocked": 0}

    def act(self, sim: PlacementSim) -> bool:
        plan = window_plan(sim, self.planner, self.resource_weight)
        self.info["plans"] += 1
        now: dict[int, list[int]] = {}
        for j, (k, tau, _, _) in plan.items():  # plan order: arrival order
            if tau == sim.t:
                now.setdefault(k, []).append(j)
        for k in sorted(now):
            for j in now[k]:
                _, _, c, g = plan[j]
                if sim.can_start(j, k, c, g):
                    sim.start(j, k, c, g)
                    if not sim.multi:
                        break
                else:
                    self.info["blocked"] += 1
        # a start planned for a later step may not coincide with an event: visit every step
        return False


@register(SOLVER_NAME, families=("placement",), kind="heuristic",
          description="Online list scheduling by the agents' rules: every step, the tasks of the clusters' pending "
                      "windows, in arrival order, each get the cluster, allocation and start that finish earliest "
                      "given the running and earlier planned tasks; each cluster starts its tasks planned for now "
                      "(window, free resources, one start per step in the single variant)",
          params={"resource_weight": "float in [0, 1000]: rank a task's candidates by finish + w x its share of the "
                                     "cluster's resource-time instead of the finish (default 0: earliest finish)"},
          bounds={"resource_weight": (0, 1000)})
def solve(instance, *, time_limit: float | None = None, seed: int = 0, resource_weight: float = 0.0):
    """The policy as a solver: the simulator's schedule (plain starts), scored by the referee
    through ``make_result``; deterministic (``seed`` unused); ``timeout`` with no schedule past
    the time limit, ``error`` with the reason when a task can never finish."""
    t0 = time.perf_counter()
    if instance.placement is None:
        raise InputError("placement-list-window needs a placement instance", field="family")
    sim = PlacementSim(instance)
    policy = ListWindowPolicy(instance, resource_weight)
    deadline = None if time_limit is None else t0 + float(time_limit)
    try:
        run_policy(sim, policy, deadline=deadline)
    except Stalled as exc:
        return make_result(instance, SOLVER_NAME, status="error", seed=seed, started=t0, stats={"message": str(exc)})
    except SimTimeout as exc:
        return make_result(instance, SOLVER_NAME, status="timeout", seed=seed, started=t0, stats={"message": str(exc)})
    stats: dict[str, Any] = dict(policy.info, mean_completion_time=sim.total_completion_time() / sim.num_tasks,
                                 steps=sim.t)
    return make_result(instance, SOLVER_NAME, status="feasible", decisions=sim.decisions(), seed=seed,
                       objective=float(sim.total_completion_time()), started=t0, stats=stats)
