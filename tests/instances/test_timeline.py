"""The one offloading timeline (edgebench.instances.timeline) and the schedules built on it.

* the profile: insertion into an idle gap, a window that is too long, sharing by demand,
  the capacity tolerance, the cloud and zero-duration tasks;
* on every shipped offloading instance (of the two STG sets, 900 instances, an evenly spread
  sample of 40 per set, tests/conftest.py; all of them with ``EDGEBENCH_FULL_SETS=1``, about
  4 minutes more), the finish times that each schedule constructor
  computes for itself (HEFT / CPOP / PEFT plans, ``random``, the GA / PSO decoder, the exact
  models' list and all-cloud warm starts) are the referee's, float for float (the same
  machine computes both: exact equality is the claim), and the referee accepts them.
"""

from __future__ import annotations

import numpy as np
import pytest

from edgebench.formulations.offloading_problem import prepare
from edgebench.formulations.offloading_schedules import cloud_schedule, list_schedule, to_decisions
from edgebench.instances import semantics, sets
from edgebench.instances.timeline import TOL, Timeline, cap_limit, upward_ranks
from edgebench.referee import evaluate_decisions
from edgebench.solvers import offloading_baselines as ob
from edgebench.solvers import random_baseline as rb
from edgebench.solvers.meta_offloading import OffloadingProblem
from edgebench.solvers.offloading_sim import simulate
from edgebench.solution import OffloadingDecisions, TaskSchedule, WorkflowDecision


def test_profile_insertion_and_capacity():
    tl = Timeline([(2.0, 2.0), None])
    assert tl.place(0, 0.0, 2.0, 2.0, 1.0) == 0.0
    assert tl.place(0, 0.0, 3.0, 2.0, 1.0) == 2.0  # after the first
    tl.reserve(0, 8.0, 3.0, 2.0, 1.0)
    assert tl.earliest_start(0, 0.0, 3.0, 1.0, 1.0) == 5.0  # the gap [5, 8) holds 3 s
    assert tl.earliest_start(0, 0.0, 4.0, 1.0, 1.0) == 11.0  # too long for the gap
    assert tl.earliest_start(0, 1.0, 1.0, 0.0, 1.0) == 1.0  # memory left beside the first task
    assert tl.earliest_start(0, 12.0, 1.0, 2.0, 2.0) == 12.0
    assert tl.earliest_start(1, 3.5, 100.0, 99.0, 99.0) == 3.5  # the cloud is unbounded
    assert tl.earliest_start(0, 1.0, 0.0, 2.0, 2.0) == 1.0  # zero duration occupies nothing
    # the one tolerance: a sum within TOL x max(1, cap) of the capacity fits, beyond it does not
    assert cap_limit(2.0) == 2.0 + 2 * TOL and cap_limit(0.5) == 0.5 + TOL
    tl2 = Timeline([(1.0, 1.0)])
    tl2.reserve(0, 0.0, 1.0, 0.7, 0.0)
    assert tl2.earliest_start(0, 0.0, 1.0, 0.3 + 0.5 * TOL, 0.0) == 0.0
    assert tl2.earliest_start(0, 0.0, 1.0, 0.3 + 2 * TOL, 0.0) == 1.0
    with pytest.raises(ValueError):
        tl2.earliest_start(0, 0.0, 1.0, 1.5, 0.0)


def test_upward_ranks_by_hand():
    # 0 -> 1 (c-bar 2), 0 -> 2 (c-bar 1), 1 -> 3 (c-bar 0), 2 -> 3 (c-bar 4)
    out = [[(2.0, 1), (1.0, 2)], [(0.0, 3)], [(4.0, 3)], []]
    ru = upward_ranks([0, 1, 2, 3], [1.0, 2.0, 3.0, 1.0], out)
    assert ru == [1.0 + max(2.0 + 3.0, 1.0 + 8.0), 3.0, 8.0, 1.0]


OFFLOADING_SETS = [n for n in sets.list_sets() if n.startswith("offloading-")]


def _decisions(servers: list[list[int]], starts: list[list[float]]) -> OffloadingDecisions:
    return OffloadingDecisions(workflows=tuple(
        WorkflowDecision(tasks=tuple(TaskSchedule(server=s, start=x) for s, x in zip(sv, st)))
        for sv, st in zip(servers, starts)))


def _same_as_referee(inst, servers, starts, finishes, who):
    ev = evaluate_decisions(inst, _decisions(servers, starts))
    assert ev.feasible, (inst.id, who, [v.message for v in ev.violations[:2]])
    assert ev.details["finish"] == finishes, (inst.id, who)


class _Recorder:
    """A list-scheduling planner that keeps its own finish times per workflow."""

    def __init__(self, planner):
        self.planner, self.fin = planner, {}

    def reset(self, sim):
        self.planner.reset(sim)

    def __call__(self, sim, w):
        plan = self.planner(sim, w)
        self.fin[w] = dict(self.planner.fin)
        return plan


@pytest.mark.parametrize("name", OFFLOADING_SETS)
def test_constructors_and_referee_agree_on_finish_times(name, spread_loaded):
    for inst in spread_loaded(name):  # of the STG sets only the sampled files are loaded
        o = inst.offloading
        n = [len(wf.tasks) for wf in o.workflows]
        for planner_name in ("heft", "cpop", "peft"):
            policy = ob.plan_policy(planner_name)
            rec = policy.planner = _Recorder(policy.planner)
            res = simulate(inst, policy)
            own = [[rec.fin[w][t] for t in range(n[w])] for w in range(len(n))]
            assert own == res.finishes, (inst.id, planner_name)  # the simulator reproduces the plan
            _same_as_referee(inst, res.servers, res.starts, own, planner_name)
        raw = rb.solve_offloading(rb.build_offloading(o), np.random.default_rng(0), None)
        _same_as_referee(inst, [[raw[(w, t)][0] for t in range(n[w])] for w in range(len(n))],
                         [[raw[(w, t)][1] for t in range(n[w])] for w in range(len(n))],
                         [[raw[(w, t)][2] for t in range(n[w])] for w in range(len(n))], "random")
        pb = OffloadingProblem(inst)
        sv, st = pb._decode_list(np.random.default_rng(1).random(pb.dim).tolist())
        fin = [st[g] + pb.duration[g][sv[g]] for g in range(pb.num_tasks)]
        split = [list(range(pb.offsets[w], pb.offsets[w] + n[w])) for w in range(len(n))]
        _same_as_referee(inst, [[sv[g] for g in gs] for gs in split], [[st[g] for g in gs] for gs in split],
                         [[fin[g] for g in gs] for gs in split], "ga/pso decoder")
        data = prepare(inst)
        for who, sched in (("list", list_schedule(data)), ("all-cloud", cloud_schedule(data))):
            if sched is None:
                continue
            server, start = sched
            ev = evaluate_decisions(inst, to_decisions(data, server, start))
            assert ev.feasible, (inst.id, who)
            assert ev.details["finish"] == [[start[g] + data.dur[g][server[g]] for g in data.gid[w]]
                                            for w in range(data.W)], (inst.id, who)
        assert semantics.task_duration(o, 0, 0, sv[0]) == pb.duration[0][sv[0]]
