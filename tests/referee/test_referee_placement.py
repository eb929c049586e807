"""Referee, placement family: a hand-computed feasible schedule, every violation injected
one at a time, the completion-time identity, and the evaluate() envelope."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgebench.errors import InputError
from edgebench.instances import semantics
from edgebench.instances.io import content_hash, instance_from_dict
from edgebench.referee import Evaluation, Violation, evaluate, evaluate_decisions
from edgebench.solution import PlacementDecisions, Solution


def base_dict(**payload_over) -> dict:
    payload = {
        "clusters": [
            {"capacity": {"cpu": 4, "gpu": 2, "memory": 8}},
            {"capacity": {"cpu": 4, "gpu": 2, "memory": 5}},
        ],
        "tasks": [
            # type A: 0.25 per step -> 4 steps; type B: 0.5 per step -> 2 steps
            {"arrival": 0, "type": "A", "minimum": {"cpu": 2, "gpu": 1, "memory": 4}, "eligible": [0, 1]},
            {"arrival": 0, "type": "B", "minimum": {"cpu": 2, "gpu": 1, "memory": 4}, "eligible": [0]},
            {"arrival": 1, "type": "B", "minimum": {"cpu": 1, "gpu": 1, "memory": 2}, "eligible": [1]},
        ],
        "performance": {"kind": "synthetic", "types": {"A": {"base": 0.25}, "B": {"base": 0.5}}},
        "step_seconds": 10.0,
        "switching_overhead": 0.5,
        "variant": "single",
    }
    payload.update(payload_over)
    return {"format_version": 1, "family": "placement", "id": "ref-placement", "placement": payload}


INST = instance_from_dict(base_dict())

FEASIBLE = [
    {"cluster": 0, "start": 0, "cpu": 2, "gpu": 1},  # steps 0..3, finish 4, completion 4
    {"cluster": 0, "start": 1, "cpu": 2, "gpu": 1},  # steps 1..2, finish 3, completion 3
    {"cluster": 1, "start": 2, "cpu": 1, "gpu": 1},  # steps 2..3, finish 4, completion 3
]


def decisions(tasks) -> PlacementDecisions:
    return PlacementDecisions.model_validate({"tasks": tasks})


def with_task(j: int, **change) -> PlacementDecisions:
    tasks = copy.deepcopy(FEASIBLE)
    tasks[j] = {**tasks[j], **change}
    return decisions(tasks)


def test_feasible_objectives_by_hand():
    ev = evaluate_decisions(INST, decisions(FEASIBLE))
    assert isinstance(ev, Evaluation)
    assert ev.feasible and ev.violations == ()
    assert ev.primary == "total_completion_time" and ev.sense == "min"
    assert ev.details["finish"] == [4, 3, 4]
    assert ev.details["completion"] == [4, 3, 3]
    o = ev.objectives
    assert o["total_completion_time"] == 10
    assert ev.primary_value == 10
    assert o["mean_completion_time"] == pytest.approx(10 / 3)
    assert o["median_completion_time"] == 3
    assert o["makespan"] == 4
    assert o["total_completion_seconds"] == 100
    # cluster 0 cpu 2,4,4,2 of 4; cluster 1 cpu 0,0,1,1 of 4 -> (12/16 + 2/16) / 2
    assert o["cpu_utilisation"] == pytest.approx((12 / 16 + 2 / 16) / 2)
    # cluster 0 gpu 1,2,2,1 of 2; cluster 1 gpu 0,0,1,1 of 2
    assert o["gpu_utilisation"] == pytest.approx((6 / 8 + 2 / 8) / 2)
    d = ev.as_dict()
    assert set(d) == {"feasible", "violations", "objectives", "primary", "sense"}
    assert d["feasible"] is True and d["violations"] == []


def test_identity_total_completion_equals_tasks_in_system():
    ev = evaluate_decisions(INST, decisions(FEASIBLE))
    assert ev.details["in_system"] == [2, 3, 3, 2]
    assert sum(ev.details["in_system"]) == ev.objectives["total_completion_time"]


def test_history_pause_and_switching_overhead():
    # task 0: 0.25 in step 0, paused in step 1, resumes in step 2 (a change: 0.125), then 0.25 per step:
    # 0.25, 0.375, 0.625, 0.875, 1.125 -> finishes at the end of step 5
    tasks = copy.deepcopy(FEASIBLE)
    tasks[0] = {"cluster": 0, "start": 0, "history": [{"step": 0, "cpu": 2, "gpu": 1}, {"step": 1, "cpu": 0, "gpu": 0},
                                                       {"step": 2, "cpu": 2, "gpu": 1}]}
    ev = evaluate_decisions(INST, decisions(tasks))
    assert ev.feasible, ev.violations
    assert ev.details["finish"][0] == 6
    assert ev.objectives["total_completion_time"] == 6 + 3 + 3
    assert sum(ev.details["in_system"]) == ev.objectives["total_completion_time"]


def test_fixed_allocation_with_noise_matches_semantics():
    inst = instance_from_dict(base_dict(noise=0.3, noise_seed=7))
    ev = evaluate_decisions(inst, decisions([
        {"cluster": 0, "start": 0, "cpu": 2, "gpu": 1},
        {"cluster": 1, "start": 0, "cpu": 2, "gpu": 1},  # not eligible on 1, but the finish still follows
        {"cluster": 1, "start": 5, "cpu": 2, "gpu": 2},
    ]))
    p = inst.placement
    assert ev.details["finish"] == [0 + semantics.fixed_run_steps(p, 0, 2, 1),
                                    0 + semantics.fixed_run_steps(p, 1, 2, 1),
                                    5 + semantics.fixed_run_steps(p, 2, 2, 2)]


# ---- every violation, injected one at a time -------------------------------------------

INJECTIONS = {
    "unplaced": with_task(2, cluster=None),
    "cluster_index": with_task(2, cluster=5),
    "eligibility": with_task(1, cluster=1, start=4),
    "start_before_arrival": with_task(2, start=0),
    # step 1 at (1, 1) is below the minimum (2, 1): no progress, resumes in step 2
    "below_minimum": with_task(0, history=[{"step": 0, "cpu": 2, "gpu": 1}, {"step": 1, "cpu": 1, "gpu": 1},
                                           {"step": 2, "cpu": 2, "gpu": 1}]),
    "above_capacity_alloc": with_task(2, cpu=5),
    "capacity_cpu": with_task(1, cpu=3),
    "capacity_gpu": with_task(1, gpu=2),
    # task 0 on cluster 1 (memory 5) beside task 2: memory 4 + 2 = 6 > 5, cpu 3 <= 4, gpu 2 <= 2
    "capacity_memory": with_task(0, cluster=1),
    "single_task_start": with_task(1, start=0),
    "history_start": with_task(2, history=[{"step": 3, "cpu": 1, "gpu": 1}]),
    "unfinished": with_task(2, history=[{"step": 2, "cpu": 1, "gpu": 1}, {"step": 3, "cpu": 0, "gpu": 0}]),
}


@pytest.mark.parametrize("constraint", sorted(INJECTIONS))
def test_each_violation_alone(constraint):
    ev = evaluate_decisions(INST, INJECTIONS[constraint])
    assert not ev.feasible
    assert ev.constraints() == {constraint}, ev.violations
    for v in ev.violations:
        assert isinstance(v, Violation) and v.amount >= 0 and v.message and v.element


def test_violation_details():
    ev = evaluate_decisions(INST, INJECTIONS["capacity_cpu"])
    assert [(v.element, v.amount) for v in ev.violations] == [("cluster 0 step 1", 1.0), ("cluster 0 step 2", 1.0)]
    ev = evaluate_decisions(INST, INJECTIONS["start_before_arrival"])
    assert [(v.element, v.amount) for v in ev.violations] == [("task 2", 1.0)]
    ev = evaluate_decisions(INST, INJECTIONS["unplaced"])
    assert "total_completion_time" not in ev.objectives
    assert ev.primary_value == float("inf")


def test_decision_count():
    ev = evaluate_decisions(INST, decisions(FEASIBLE[:2]))
    assert not ev.feasible and ev.constraints() == {"decision_count"}


def test_multi_variant_allows_simultaneous_starts():
    inst = instance_from_dict(base_dict(variant="multi"))
    assert evaluate_decisions(inst, INJECTIONS["single_task_start"]).feasible


def test_never_finishing_within_max_run_steps():
    # type B at 1 GPU gains ~1e-6 per step (more than MAX_RUN_STEPS steps); validation requires
    # that the largest allocation (1024 GPUs: ~2200 steps) can finish, which it does
    d = base_dict(clusters=[{"capacity": {"cpu": 4, "gpu": 1024, "memory": 8}},
                            {"capacity": {"cpu": 4, "gpu": 1024, "memory": 5}}])
    d["placement"]["performance"]["types"]["B"] = {"gpu_scale": 1e6, "curvature": 1.2}
    inst = instance_from_dict(d)
    ev = evaluate_decisions(inst, decisions(FEASIBLE))
    assert ev.constraints() == {"unfinished"}
    assert {v.element for v in ev.violations} == {"task 1", "task 2"}


def test_all_violations_reported_not_only_the_first():
    tasks = copy.deepcopy(FEASIBLE)
    tasks[0] = {"cluster": None}
    tasks[1] = {**tasks[1], "gpu": 3}
    tasks[2] = {**tasks[2], "start": 0}
    ev = evaluate_decisions(INST, decisions(tasks))
    assert ev.constraints() == {"unplaced", "above_capacity_alloc", "start_before_arrival"}


# ---- the evaluate() envelope ------------------------------------------------------------


def solution(inst, dec, **over) -> Solution:
    fields = {"family": "placement", "instance_id": inst.id, "instance_hash": content_hash(inst), "solver": "test",
              "status": "feasible", "placement": dec}
    fields.update(over)
    return Solution(**fields)


def test_evaluate_matches_evaluate_decisions():
    ev = evaluate(INST, solution(INST, decisions(FEASIBLE), objective=-1.0))
    assert ev.feasible and ev.objectives == evaluate_decisions(INST, decisions(FEASIBLE)).objectives


def test_hash_mismatch_raises():
    with pytest.raises(InputError) as exc:
        evaluate(INST, solution(INST, decisions(FEASIBLE), instance_hash="0" * 64))
    assert exc.value.field == "instance_hash"


@pytest.mark.parametrize("status", ["timeout", "infeasible", "error"])
def test_no_decisions_is_no_solution(status):
    ev = evaluate(INST, solution(INST, None, status=status))
    assert not ev.feasible
    assert [v.constraint for v in ev.violations] == ["no_solution"]
    assert ev.objectives == {}


# ---- properties ---------------------------------------------------------------------------


@settings(max_examples=15, deadline=None)
@given(perm=st.permutations(range(3)), reported=st.one_of(st.none(), st.floats(-1e6, 1e6)))
def test_objectives_do_not_depend_on_task_order_or_reported_objective(perm, reported):
    # noise 0: the noise stream is keyed by the task index, so order matters only with noise
    d = base_dict()
    tasks = d["placement"]["tasks"]
    d["placement"]["tasks"] = [tasks[i] for i in perm]
    inst = instance_from_dict(d)
    dec = decisions([FEASIBLE[i] for i in perm])
    ev = evaluate(inst, solution(inst, dec, objective=reported))
    ref = evaluate_decisions(INST, decisions(FEASIBLE))
    assert ev.feasible
    assert ev.objectives == pytest.approx(ref.objectives)
    assert sum(ev.details["in_system"]) == ev.objectives["total_completion_time"]


def test_violations_are_capped_at_1000_and_counted():
    d = base_dict()
    d["placement"]["performance"]["types"] = {"A": {"base": 1 / 1200}, "B": {"base": 1 / 1100}}
    inst = instance_from_dict(d)
    ev = evaluate_decisions(inst, with_task(1, cpu=3))  # tasks 0 and 1 overlap for 1100 steps: cpu 5 > 4
    assert ev.constraints() == {"capacity_cpu"}
    assert len(ev.violations) == 1000
    assert ev.details["violations_total"] == 1100 and ev.details["violations_truncated"]
