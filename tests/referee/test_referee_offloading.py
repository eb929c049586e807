"""Referee, offloading family: a hand-computed schedule of a 4-task DAG (plus a 2-task
workflow) on 2 servers, every violation injected one at a time, and properties."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgebench.errors import InputError
from edgebench.instances.io import content_hash, instance_from_dict
from edgebench.referee import evaluate, evaluate_decisions
from edgebench.solution import OffloadingDecisions, Solution


def fn(image, cpu, mem, t):
    return {"image": image, "cpu": cpu, "mem": mem, "exec_time": t}


def base_dict() -> dict:
    return {
        "format_version": 1, "family": "offloading", "id": "ref-offloading",
        "offloading": {
            "servers": [
                {"cpu": 3, "mem": 4, "images": ["a"], "speed": 1},
                {"cpu": 2, "mem": 2, "images": ["b"], "speed": 2},
            ],
            "distance": [[0, 1], [1, 0]],
            "bandwidth": 2,
            "image_pull_delay": 0.5,
            "workflows": [
                {   # the 4-task DAG 0 -> {1, 2} -> 3
                    "arrival": 1.0, "source": 0,
                    "tasks": [
                        {"functions": [fn("a", 2, 1, 2)], "input_data": 2},
                        {"functions": [fn("b", 1, 1, 2)]},
                        {"functions": [fn("a", 2, 2, 1)]},
                        {"functions": [fn("b", 1, 1, 1)]},
                    ],
                    "edges": [{"src": 0, "dst": 1, "data": 2}, {"src": 0, "dst": 2, "data": 4},
                              {"src": 1, "dst": 3, "data": 2}, {"src": 2, "dst": 3, "data": 1}],
                },
                {   # two independent tasks; task 1 fits server 0 only (mem 3.5)
                    "arrival": 0.0, "source": 0,
                    "tasks": [{"functions": [fn("a", 2, 0.5, 1)]}, {"functions": [fn("a", 0.5, 3.5, 1)]}],
                },
            ],
        },
    }


INST = instance_from_dict(base_dict())
FEASIBLE = {"workflows": [
    # task 0 on s0 [1, 3); task 1 on s1: data 2 * 1 / 2 = 1 -> [4, 5) (exec 2 / speed 2);
    # task 2 on s0 [3, 4); task 3 on s1: max(5, 4 + 1 * 1 / 2) = 5 -> [5, 5.5)
    {"tasks": [{"server": 0, "start": 1.0}, {"server": 1, "start": 4.0}, {"server": 0, "start": 3.0},
               {"server": 1, "start": 5.0}]},
    # workflow 1: task 0 on s1 (pulls image a: 0.5 + 1 / 2) -> [0, 1); task 1 on s0 [4, 5)
    {"tasks": [{"server": 1, "start": 0.0}, {"server": 0, "start": 4.0}]},
]}


def dec(d) -> OffloadingDecisions:
    return OffloadingDecisions.model_validate(d)


def with_task(w: int, t: int, **change) -> OffloadingDecisions:
    d = copy.deepcopy(FEASIBLE)
    d["workflows"][w]["tasks"][t].update(change)
    return dec(d)


def test_feasible_objectives_by_hand():
    ev = evaluate_decisions(INST, dec(FEASIBLE))
    assert ev.feasible and ev.violations == ()
    assert ev.primary == "mean_makespan" and ev.sense == "min"
    assert ev.details["finish"] == [[3.0, 5.0, 4.0, 5.5], [1.0, 5.0]]
    assert ev.details["makespan"] == [4.5, 5.0]
    o = ev.objectives
    assert o["mean_makespan"] == pytest.approx(4.75)
    assert o["makespan"] == pytest.approx(5.5)
    # critical path at the fastest hosting server: 1 (t0 on s1) + 1 (t1 on s1) + 0.5 (t3 on s1) = 2.5;
    # workflow 1: max(0.5, 1 (task 1 fits s0 only)) = 1
    assert ev.details["slr"] == pytest.approx([4.5 / 2.5, 5.0 / 1.0])
    assert o["mean_slr"] == pytest.approx((1.8 + 5.0) / 2)
    # sequential: workflow 0 on s1 = 3 (s0: 6); workflow 1 only on s0 (s1 cannot host task 1) = 2
    assert ev.details["speedup"] == pytest.approx([3 / 4.5, 2 / 5])
    assert o["mean_speedup"] == pytest.approx((3 / 4.5 + 2 / 5) / 2)


def test_image_pull_delay_counts_in_the_duration():
    # task 2 on s1 (lacks image a): ready 3 + 4 * 1 / 2 = 5, pull 0.5 + exec 1 / 2 -> [5, 6);
    # task 3 then waits for it: 6 + 0 (same server)
    d = copy.deepcopy(FEASIBLE)
    d["workflows"][0]["tasks"][2] = {"server": 1, "start": 5.0}
    d["workflows"][0]["tasks"][3] = {"server": 1, "start": 6.0}
    ev = evaluate_decisions(INST, dec(d))
    assert ev.feasible, ev.violations
    assert ev.details["finish"][0] == [3.0, 5.0, 6.0, 6.5]


def test_cloud_is_unbounded():
    d = base_dict()
    d["offloading"]["servers"].append({"is_cloud": True, "speed": 10})
    d["offloading"]["distance"] = [[0, 1, 50], [1, 0, 50], [50, 50, 0]]
    inst = instance_from_dict(d)
    dd = {"workflows": [
        {"tasks": [{"server": 2, "start": 51.0}, {"server": 2, "start": 60.0}, {"server": 2, "start": 60.0},
                   {"server": 2, "start": 61.0}]},
        {"tasks": [{"server": 2, "start": 0.0}, {"server": 2, "start": 0.0}]},
    ]}
    ev = evaluate_decisions(inst, dec(dd))
    assert ev.feasible, ev.violations  # every task of both workflows overlaps on the cloud


INJECTIONS = {
    "task_count": dec({"workflows": [FEASIBLE["workflows"][0], {"tasks": FEASIBLE["workflows"][1]["tasks"][:1]}]}),
    "server_index": with_task(0, 3, server=5),
    "start_before_arrival": with_task(0, 0, start=0.5),
    "precedence": with_task(0, 3, start=4.9),  # shares s1 with task 1 in [4.9, 5): 2 cpu, 2 mem: fits
    "capacity_cpu": with_task(1, 0, server=0, start=1.5),  # beside task 0 on s0: cpu 4 > 3, mem 1.5 <= 4
    "capacity_mem": with_task(1, 1, start=1.5),  # beside task 0 on s0: cpu 2.5 <= 3, mem 4.5 > 4
}


@pytest.mark.parametrize("constraint", sorted(INJECTIONS))
def test_each_violation_alone(constraint):
    ev = evaluate_decisions(INST, INJECTIONS[constraint])
    assert not ev.feasible
    assert ev.constraints() == {constraint}, ev.violations
    assert all(v.amount >= 0 and v.message for v in ev.violations)


def test_violation_details():
    [v] = evaluate_decisions(INST, INJECTIONS["precedence"]).violations
    assert v.element == "workflow 0 edge 2 (task 1 -> task 3)" and v.amount == pytest.approx(0.1)
    [v] = evaluate_decisions(INST, INJECTIONS["capacity_cpu"]).violations
    assert v.element == "server 0 segment [1.5, 2.5)" and v.amount == pytest.approx(1)
    [v] = evaluate_decisions(INST, INJECTIONS["capacity_mem"]).violations
    assert v.element == "server 0 segment [1.5, 2.5)" and v.amount == pytest.approx(0.5)
    # input data: task 0 on s1 must wait for 2 * 1 / 2 = 1 after the arrival
    ev = evaluate_decisions(INST, with_task(0, 0, server=1, start=1.5))
    assert ("start_before_arrival", "workflow 0 task 0") in {(v.constraint, v.element) for v in ev.violations}


def test_decision_count():
    ev = evaluate_decisions(INST, dec({"workflows": FEASIBLE["workflows"][:1]}))
    assert ev.constraints() == {"decision_count"}


def test_back_to_back_tasks_do_not_overlap():
    # workflow 1 task 0 on s0 ending exactly when workflow 0 task 0 starts (up to float noise)
    d = copy.deepcopy(FEASIBLE)
    d["workflows"][1]["tasks"][0] = {"server": 0, "start": 0.1 + 0.2 - 0.3 + 1e-12}  # ends at ~1.0
    assert evaluate_decisions(INST, dec(d)).feasible


def solution(inst, d, **over) -> Solution:
    fields = {"family": "offloading", "instance_id": inst.id, "instance_hash": content_hash(inst), "solver": "t",
              "status": "feasible", "offloading": d}
    fields.update(over)
    return Solution(**fields)


def test_hash_mismatch_and_no_solution():
    with pytest.raises(InputError):
        evaluate(INST, solution(INST, dec(FEASIBLE), instance_hash="a" * 64))
    with pytest.raises(InputError):
        evaluate(INST, Solution(family="mapping", instance_id="x", instance_hash=content_hash(INST), solver="t",
                                status="timeout"))
    ev = evaluate(INST, solution(INST, None, status="timeout"))
    assert [v.constraint for v in ev.violations] == ["no_solution"] and not ev.feasible


@settings(max_examples=10, deadline=None)
@given(perm=st.permutations(range(2)), reported=st.one_of(st.none(), st.floats(0, 100)))
def test_objectives_do_not_depend_on_workflow_order(perm, reported):
    d = base_dict()
    d["offloading"]["workflows"] = [d["offloading"]["workflows"][i] for i in perm]
    inst = instance_from_dict(d)
    dd = {"workflows": [FEASIBLE["workflows"][i] for i in perm]}
    ev = evaluate(inst, solution(inst, dec(dd), objective=reported))
    ref = evaluate_decisions(INST, dec(FEASIBLE))
    assert ev.feasible
    assert ev.objectives == pytest.approx(ref.objectives)
