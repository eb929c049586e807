"""The online LNS played by the agents' rules (``placement-lns-window``; issue 42, session 23).

``placement-lns-online`` plans a schedule; nothing in it says the TapFinger agents could play
it. They cannot always: an agent starts only tasks in its cluster's pending window (the
``pending_size`` earliest arrived, not started tasks of its queue, docs/placement-sim.md), one per
step in the single variant, and the online LNS's plans often start a later arrival first. On
hetero-6 single (384 tasks, the authors' setting) its schedules, replayed with the window
repair, lose about a quarter of their lead over Optimus.

This solver closes that loop in the simulator the agents play (:class:`PlacementSim`): at every
arrival step it plans the tasks known by then with the online LNS
(:func:`online.myopic_from_state`, the starts made so far kept), and then, step by step, each
cluster starts the planned tasks that are due (planned start <= now), in planned order, when the
simulator allows the start now (pending window, free resources, one start per step in the
single variant); a task that cannot start yet waits, and the next plan starts from what was
actually played. Its schedule is therefore one the agents can play action for action (tested
through the PettingZoo env), and its value is what an online scheduler bound by the pending
window reaches with this planner: the reference for the learned policy's targets, and an expert
whose every schedule replays exactly.

It never waits forever: the earliest arrived unstarted task is in the window of every cluster of
its queue, so its planned cluster starts it once its allocation is free.

Past the time limit no plan is searched any more: one list-scheduling completion of every task
not yet started (:func:`online.list_completion`, each task placed given the earlier ones only) is
played by the same rule (status ``timeout``, still a complete schedule).
"""

from __future__ import annotations

import copy
import time
from typing import Any

from edgebench.errors import InputError
from edgebench.formulations.placement.search import online
from edgebench.registry import make_result, register
from edgebench.solvers.placement_sim import PlacementSim, Stalled, run_policy

SOLVER_NAME = "placement-lns-window"


class WindowLnsPolicy:
    """The simulator policy (``reset(sim)``, ``act(sim) -> bool``, :func:`run_policy`): replan at
    every arrival step, start the due planned tasks the simulator allows. ``deadline``: a
    ``time.perf_counter()`` value past which the rest is one list-scheduling completion."""

    def __init__(self, instance, *, iterations: int = online.PLAN_ITERATIONS, seed: int = 0,
                 deadline: float | None = None, played: bool = False):
        self.instance = instance
        self.iterations = int(iterations)
        self.seed = seed
        self.deadline = deadline
        self.played = played
        self.arrival_steps = {task.arrival for task in instance.placement.tasks}

    def reset(self, sim: PlacementSim) -> None:
        self.started: dict[int, tuple[int, int, int, int]] = {}
        self.plan: dict[int, tuple[int, int, int, int]] = {}
        self.listed = False
        self.info = {"plans": 0, "improved": 0, "list_only": 0, "neighbourhoods": 0, "late_starts": 0,
                     "list_played": 0}

    def _replan(self, sim: PlacementSim) -> None:
        t = sim.t
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            full = online.list_completion(self.instance, self.started, t)
            self.listed = True
            self.info["list_only"] = 1
        else:
            left = None if self.deadline is None else max(0.0, self.deadline - time.perf_counter())
            plan = online.myopic_from_state(self.instance, self.started, t, time_limit=left, seed=self.seed,
                                            iterations=self.iterations)
            self.info["plans"] += 1
            self.info["improved"] += plan["status"] == "improved"
            self.info["neighbourhoods"] += int(plan["neighbourhoods"])
            full = dict(enumerate(plan["tasks"]))
            if self.played and plan["status"] == "improved":
                listed = online.list_completion(online.known_instance(self.instance, t), self.started, t)
                a, b = (self._own(full), self._own(listed))
                if self._play(sim, b) < self._play(sim, a):
                    full = listed
                    self.info["list_played"] += 1
        self.plan = self._own(full)

    def _own(self, full: dict) -> dict[int, tuple[int, int, int, int]]:
        """The plan's entries of the tasks not started yet."""
        return {j: tuple(int(v) for v in p) for j, p in full.items() if j not in self.started}

    def _play(self, sim: PlacementSim, plan: dict[int, tuple[int, int, int, int]]) -> int:
        """``plan`` played from the simulator's state by the start rule, on a copy, until its tasks
        have finished (no replanning, no task outside the plan started): the sum of their finish
        steps. Two plans of the same tasks from the same state compare by it as by their total
        completion time under the agents' rules."""
        play = copy.deepcopy(sim)
        left = set(plan)
        while left:
            static = self._start_due(play, plan, None)
            if static and play.num_running == 0 and not any(s > play.t for j, (_, s, _, _) in plan.items() if j in left):
                raise Stalled(f"a plan's play stalled at step {play.t}")  # pragma: no cover - see the module docstring
            play.step()
            left = {j for j in left if not play.is_finished(j)}
        return sum(play.finish_step(j) for j in plan)

    def act(self, sim: PlacementSim) -> bool:
        t = sim.t
        if not self.listed and t in self.arrival_steps:
            self._replan(sim)
        started_now = not self._start_due(sim, self.plan, self.started)
        # nothing changes before the next event (arrival, completion) unless something started
        # now (the windows move) or a planned start lies ahead
        return not started_now and not any(s > t for j, (_, s, _, _) in self.plan.items() if j not in self.started)

    def _start_due(self, sim: PlacementSim, plan: dict, record: dict | None) -> bool:
        """The start rule at the simulator's step: each cluster starts its due planned tasks (planned
        start <= now) in planned order when the simulator allows it now, one per step in the single
        variant, in rounds until none starts in the multi variant. ``record``: the starts made are
        written there (the episode's own, not a play's). Returns whether nothing started."""
        t = sim.t
        by_cluster: dict[int, list[int]] = {}
        for j, (n, s, c, g) in plan.items():
            if s <= t and not sim.is_started(j):
                by_cluster.setdefault(n, []).append(j)
        for due in by_cluster.values():
            due.sort(key=lambda j: (plan[j][1], sim.run_steps(j, plan[j][2], plan[j][3]) or 0, j))
        started_now = False
        while True:  # one round in the single variant; rounds until no start in the multi variant
            progress = False
            for n in sorted(by_cluster):
                for j in by_cluster[n]:
                    _, s, c, g = plan[j]
                    if not sim.is_started(j) and sim.can_start(j, n, c, g):
                        sim.start(j, n, c, g)
                        if record is not None:
                            record[j] = (n, t, c, g)
                            self.info["late_starts"] += s < t
                        progress = started_now = True
                        break
            if not sim.multi or not progress:
                break
        return not started_now


@register(SOLVER_NAME, families=("placement",), kind="heuristic",
          description="Online rolling-horizon LNS played in the simulator by the agents' rules: at every arrival step "
                      "the LNS plans the tasks known by then, and each cluster starts its due planned tasks when the "
                      "pending window, its free resources and the one-start-per-step rule allow; the agents can play "
                      "its schedule action for action",
          params={"iterations": f"int: LNS neighbourhoods per plan (default {online.PLAN_ITERATIONS}; 0: the "
                                "list-scheduling completion alone)",
                  "played": "bool: at each arrival keep the LNS plan only when its play by the agents' rules (on a "
                            "copy of the simulator, to its tasks' end) beats the list-scheduling plan's (default false)"},
          bounds={"iterations": (0, None)})
def solve(instance, *, time_limit: float | None = None, seed: int = 0, iterations: int = online.PLAN_ITERATIONS,
          played: bool = False):
    """The policy as a solver: the simulator's schedule (plain starts), scored by the referee
    through ``make_result``; ``timeout`` when the time limit cut the planning short; ``error``
    with the reason when the tasks are not listed by arrival (:func:`online.known_instance`)."""
    t0 = time.perf_counter()
    params = {"iterations": iterations, "played": played}
    if not isinstance(played, bool):
        raise InputError(f"played must be true or false, not {played!r}", field="played")
    deadline = None if time_limit is None else t0 + float(time_limit)
    sim = PlacementSim(instance)
    policy = WindowLnsPolicy(instance, iterations=int(iterations), seed=seed, deadline=deadline, played=played)
    try:
        run_policy(sim, policy)
    except (ValueError, Stalled) as exc:  # ModelTooLarge, unlisted arrivals, a task that never finishes
        return make_result(instance, SOLVER_NAME, status="error", seed=seed, params=params, started=t0,
                           stats={"message": str(exc)})
    stats: dict[str, Any] = dict(policy.info, mean_completion_time=sim.total_completion_time() / sim.num_tasks,
                                 steps=sim.t)
    return make_result(instance, SOLVER_NAME, status="timeout" if policy.listed else "feasible",
                       decisions=sim.decisions(), seed=seed, params=params,
                       objective=float(sim.total_completion_time()), started=t0, stats=stats)


__all__ = ["WindowLnsPolicy", "solve", "SOLVER_NAME"]
