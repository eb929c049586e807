"""Referee, mapping family: a hand-computed feasible mapping (3 nodes / 2 task nodes), every
violation injected one at a time, a two-job queue with time segments, and properties."""

from __future__ import annotations

import copy
import time
from statistics import pstdev

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgebench.errors import InputError
from edgebench.instances.io import content_hash, instance_from_dict
from edgebench.referee import evaluate, evaluate_decisions
from edgebench.solution import MappingDecisions, Solution

W = (0.5, 0.25, 0.25)


def base_dict(**objective) -> dict:
    return {
        "format_version": 1, "family": "mapping", "id": "ref-mapping",
        "mapping": {
            "nodes": [
                {"cpu": 100, "ram": 100, "bg_cpu": 10, "bg_ram": 20},
                {"cpu": 25, "ram": 100},
                {"cpu": 100, "ram": 35, "bg_cpu": 20, "bg_ram": 10},
            ],
            "links": [
                {"src": 0, "dst": 1, "bandwidth": 100},  # link 0
                {"src": 1, "dst": 2, "bandwidth": 50},   # link 1
                {"src": 0, "dst": 2, "bandwidth": 25},   # link 2: the canonical route 0 -> 2
                {"src": 2, "dst": 0, "bandwidth": 100},  # link 3
            ],
            "jobs": [{
                "arrival": 2.0, "duration": 3.0,
                "tasks": [{"cpu": 20, "ram": 10}, {"cpu": 10, "ram": 20}],
                "links": [{"src": 0, "dst": 1, "bw_min": 10, "bw_max": 30}],
            }],
            "objective": {"weights": list(W), **objective},
        },
    }


INST = instance_from_dict(base_dict())
FEASIBLE = {"jobs": [{"nodes": [0, 2], "links": [{"route": [2], "bandwidth": 20}]}]}


def dec(d) -> MappingDecisions:
    return MappingDecisions.model_validate(d)


def with_job(**change) -> MappingDecisions:
    d = copy.deepcopy(FEASIBLE)
    d["jobs"][0].update(change)
    return dec(d)


def with_link(**change) -> MappingDecisions:
    d = copy.deepcopy(FEASIBLE)
    d["jobs"][0]["links"][0].update(change)
    return dec(d)


def test_feasible_objectives_by_hand():
    ev = evaluate_decisions(INST, dec(FEASIBLE))
    assert ev.feasible and ev.violations == ()
    assert ev.primary == "composite" and ev.sense == "max"
    u_cpu = [(20 + 10) / 100, 0 / 25, (10 + 20) / 100]
    u_ram = [(10 + 20) / 100, 0 / 100, (20 + 10) / 35]
    u_bw = [0, 0, 20 / 25, 0]
    L = W[0] * pstdev(u_cpu) + W[1] * pstdev(u_ram) + W[2] * pstdev(u_bw)
    o = ev.objectives
    assert o["std_cpu"] == pytest.approx(pstdev(u_cpu), abs=1e-12)
    assert o["std_ram"] == pytest.approx(pstdev(u_ram), abs=1e-12)
    assert o["std_bw"] == pytest.approx(pstdev(u_bw), abs=1e-12)
    assert o["L"] == pytest.approx(L, abs=1e-12)
    assert o["U_avg"] == pytest.approx(((0.3 + 0.3) / 2 + 0 + (0.3 + 30 / 35) / 2) / 3, abs=1e-12)
    assert o["D_BW"] == pytest.approx(0.5)
    assert o["composite"] == pytest.approx(0.5 * (1 - L) + 0.5 * 0.5, abs=1e-12)
    assert ev.primary_value == o["composite"]
    assert o["mean_wait"] == 0 and o["p95_wait"] == 0
    assert ev.details["segments"] == [[2.0, 5.0]]


def test_without_background():
    inst = instance_from_dict(base_dict(include_background=False))
    ev = evaluate_decisions(inst, dec(FEASIBLE))
    assert ev.objectives["std_cpu"] == pytest.approx(pstdev([0.2, 0, 0.1]), abs=1e-12)
    assert ev.objectives["std_ram"] == pytest.approx(pstdev([0.1, 0, 20 / 35]), abs=1e-12)


def test_colocated_link_is_fully_satisfied_and_free():
    ev = evaluate_decisions(INST, dec({"jobs": [{"nodes": [0, 0], "links": [{"route": [], "bandwidth": 0}]}]}))
    assert ev.feasible, ev.violations
    assert ev.objectives["D_BW"] == 1.0 and ev.objectives["std_bw"] == 0.0


def test_free_routing_accepts_any_simple_path():
    inst = instance_from_dict(base_dict(routing="free"))
    assert evaluate_decisions(inst, with_link(route=[0, 1])).feasible
    assert evaluate_decisions(INST, with_link(route=[0, 1])).constraints() == {"route_not_canonical"}


INJECTIONS = {
    "node_count": with_job(nodes=[0]),
    "node_index": with_job(nodes=[0, 7]),
    "link_count": with_job(links=[]),
    "colocated_route": with_job(nodes=[0, 0]),  # keeps route [2]
    "route_invalid": with_link(route=[0]),  # ends at node 1, not node 2
    "route_not_canonical": with_link(route=[0, 1]),  # 0 -> 1 -> 2 is a path, not the fewest-hop one
    "bandwidth_range": with_link(bandwidth=5),
    "start_before_arrival": with_job(start=1.0),
    "capacity_cpu": with_job(nodes=[1, 1], links=[{"route": [], "bandwidth": 20}]),  # 30 cpu on 25
    "capacity_ram": with_job(nodes=[2, 2], links=[{"route": [], "bandwidth": 20}]),  # 30 ram on 35 - 10
    "capacity_bw": with_link(bandwidth=30),  # link 2 has 25
}


@pytest.mark.parametrize("constraint", sorted(INJECTIONS))
def test_each_violation_alone(constraint):
    ev = evaluate_decisions(INST, INJECTIONS[constraint])
    assert not ev.feasible
    assert ev.constraints() == {constraint}, ev.violations
    assert all(v.amount >= 0 and v.message for v in ev.violations)


def test_violation_details():
    ev = evaluate_decisions(INST, INJECTIONS["capacity_bw"])
    [v] = ev.violations
    assert v.element == "link 2 segment [2, 5)" and v.amount == pytest.approx(5)
    [v] = evaluate_decisions(INST, INJECTIONS["capacity_cpu"]).violations
    assert v.element == "node 1 segment [2, 5)" and v.amount == pytest.approx(5)
    [v] = evaluate_decisions(INST, INJECTIONS["bandwidth_range"]).violations
    assert v.element == "job 0 link 0" and v.amount == pytest.approx(5)


def test_decision_count():
    ev = evaluate_decisions(INST, dec({"jobs": []}))
    assert ev.constraints() == {"decision_count"}


# ---- two jobs: time segments and waits ---------------------------------------------------


def queue_dict() -> dict:
    d = base_dict()
    d["mapping"]["jobs"] = [
        {"arrival": 0.0, "duration": 2.0, "tasks": [{"cpu": 20, "ram": 10}]},
        {"arrival": 0.5, "duration": 2.0, "tasks": [{"cpu": 10, "ram": 20}, {"cpu": 10, "ram": 10}],
         "links": [{"src": 0, "dst": 1, "bw_min": 10, "bw_max": 10}]},
    ]
    return d


QUEUE = instance_from_dict(queue_dict())
QUEUE_DEC = {"jobs": [{"nodes": [0]}, {"nodes": [2, 0], "links": [{"route": [3], "bandwidth": 10}], "start": 1.0}]}


def test_two_jobs_segments_weighted():
    ev = evaluate_decisions(QUEUE, dec(QUEUE_DEC))
    assert ev.feasible, ev.violations
    assert ev.details["segments"] == [[0.0, 1.0], [1.0, 2.0], [2.0, 3.0]]

    def seg(cpu, ram, bw):
        uc = [(c + b) / cap for c, b, cap in zip(cpu, (10, 0, 20), (100, 25, 100))]
        ur = [(r + b) / cap for r, b, cap in zip(ram, (20, 0, 10), (100, 100, 35))]
        ub = [x / cap for x, cap in zip(bw, (100, 50, 25, 100))]
        L = W[0] * pstdev(uc) + W[1] * pstdev(ur) + W[2] * pstdev(ub)
        return L, sum((a + b) / 2 for a, b in zip(uc, ur)) / 3

    s1 = seg((20, 0, 0), (10, 0, 0), (0, 0, 0, 0))          # job 0 alone
    s2 = seg((30, 0, 10), (20, 0, 20), (0, 0, 0, 10))       # both
    s3 = seg((10, 0, 10), (10, 0, 20), (0, 0, 0, 10))       # job 1 alone
    o = ev.objectives
    assert o["L"] == pytest.approx((s1[0] + s2[0] + s3[0]) / 3, abs=1e-12)
    assert o["U_avg"] == pytest.approx((s1[1] + s2[1] + s3[1]) / 3, abs=1e-12)
    assert o["D_BW"] == 1.0  # bw_min == bw_max
    assert o["mean_wait"] == pytest.approx(0.25)
    assert o["p95_wait"] == pytest.approx(0.5 * 0.95)
    assert o["composite"] == pytest.approx(0.5 * (1 - o["L"]) + 0.5, abs=1e-12)


def test_gap_between_jobs_is_not_a_segment():
    d = copy.deepcopy(QUEUE_DEC)
    d["jobs"][1]["start"] = 3.0
    ev = evaluate_decisions(QUEUE, dec(d))
    assert ev.details["segments"] == [[0.0, 2.0], [3.0, 5.0]]


def test_overlapping_jobs_share_capacity():
    d = queue_dict()
    d["mapping"]["jobs"][0]["tasks"] = [{"cpu": 20, "ram": 10}]
    d["mapping"]["jobs"][1]["tasks"] = [{"cpu": 10, "ram": 20}, {"cpu": 10, "ram": 10}]
    inst = instance_from_dict(d)
    dd = {"jobs": [{"nodes": [1]}, {"nodes": [1, 1], "links": [{"route": [], "bandwidth": 10}], "start": 1.0}]}
    ev = evaluate_decisions(inst, dec(dd))
    # node 1 has 25 cpu: job 0 (20) + job 1 (20) overlap in [1, 2) only
    assert [(v.constraint, v.element) for v in ev.violations] == [("capacity_cpu", "node 1 segment [1, 2)")]
    # a job starting exactly when the other ends does not overlap it
    dd["jobs"][1]["start"] = 2.0
    assert evaluate_decisions(inst, dec(dd)).feasible


# ---- envelope ---------------------------------------------------------------------------


def solution(inst, d, **over) -> Solution:
    fields = {"family": "mapping", "instance_id": inst.id, "instance_hash": content_hash(inst), "solver": "t",
              "status": "feasible", "mapping": d}
    fields.update(over)
    return Solution(**fields)


def test_hash_mismatch_and_no_solution():
    with pytest.raises(InputError):
        evaluate(INST, solution(INST, dec(FEASIBLE), instance_hash="f" * 64))
    ev = evaluate(INST, solution(INST, None, status="timeout"))
    assert not ev.feasible and [v.constraint for v in ev.violations] == ["no_solution"]
    assert ev.primary_value == float("-inf")


def test_dict_decisions_accepted():
    assert evaluate_decisions(INST, FEASIBLE).objectives == evaluate_decisions(INST, dec(FEASIBLE)).objectives


def test_fast_path():
    # a 10-node, 8-task-node instance: a metaheuristic evaluates thousands of these per second
    nodes = [{"cpu": 100, "ram": 100, "bg_cpu": 10, "bg_ram": 10} for _ in range(10)]
    links = [{"src": i, "dst": (i + 1) % 10, "bandwidth": 500} for i in range(10)]
    tasks = [{"cpu": 5, "ram": 5} for _ in range(8)]
    tlinks = [{"src": i, "dst": (i + 1) % 8, "bw_min": 10, "bw_max": 20} for i in range(8)]
    inst = instance_from_dict({"format_version": 1, "family": "mapping", "id": "fast", "mapping": {
        "nodes": nodes, "links": links, "jobs": [{"tasks": tasks, "links": tlinks}]}})
    from edgebench.instances.semantics import canonical_route

    m = inst.mapping
    place = [0, 1, 1, 3, 4, 5, 6, 7]
    d = dec({"jobs": [{"nodes": place, "links": [
        {"route": list(canonical_route(m, place[i], place[(i + 1) % 8])), "bandwidth": 15} for i in range(8)]}]})
    assert evaluate_decisions(inst, d).feasible
    t0 = time.perf_counter()
    for _ in range(500):
        evaluate_decisions(inst, d)
    per_call = (time.perf_counter() - t0) / 500
    assert per_call < 2e-3  # generous: well under a millisecond on an idle core


# ---- properties ---------------------------------------------------------------------------


@settings(max_examples=15, deadline=None)
@given(job_perm=st.permutations(range(2)), task_perm=st.permutations(range(2)),
       reported=st.one_of(st.none(), st.floats(-10, 10)))
def test_objectives_do_not_depend_on_order(job_perm, task_perm, reported):
    d = queue_dict()
    dd = copy.deepcopy(QUEUE_DEC)
    # renumber the task nodes of job 1 (inverse permutation for the link ends)
    job1 = d["mapping"]["jobs"][1]
    inv = {old: new for new, old in enumerate(task_perm)}
    job1["tasks"] = [job1["tasks"][i] for i in task_perm]
    for lk in job1["links"]:
        lk["src"], lk["dst"] = inv[lk["src"]], inv[lk["dst"]]
    dd["jobs"][1]["nodes"] = [QUEUE_DEC["jobs"][1]["nodes"][i] for i in task_perm]
    d["mapping"]["jobs"] = [d["mapping"]["jobs"][i] for i in job_perm]
    dd["jobs"] = [dd["jobs"][i] for i in job_perm]
    inst = instance_from_dict(d)
    ev = evaluate(inst, solution(inst, dec(dd), objective=reported))
    ref = evaluate_decisions(QUEUE, dec(QUEUE_DEC))
    assert ev.feasible == ref.feasible
    assert ev.objectives == pytest.approx(ref.objectives, abs=1e-12)
