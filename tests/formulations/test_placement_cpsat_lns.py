"""CP-SAT's LNS on the fixed-allocation interval model (formulations/placement/search/cpsat_lns.py):
every schedule it returns is referee-feasible and scored by the referee; it never beats the
referee's brute-force optimum on tiny instances and reaches the fixed-allocation optimum there;
never worse than its start; the same seed and deterministic work give the same schedule; its
parameters reach CP-SAT (LNS subsolvers only by default); bad parameters are clear InputErrors; the
shared model (milp.cpsat_intervals_model) is the one placement-milp's cpsat-intervals backend
solves."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from edgebench import registry
from edgebench.errors import InputError
from edgebench.formulations.placement.milp import cpsat_intervals_model, solve_cpsat_intervals
from edgebench.formulations.placement.problem import (finish_bounds, greedy_schedule, prepare, schedule_objective,
    schedule_violations)
from edgebench.formulations.placement.search import cpsat_lns as CL
from edgebench.instances.generators.placement import generate_placement
from edgebench.instances.io import load_instance
from edgebench.referee.placement import evaluate
from test_placement_enum import assert_between_optimum_and_fixed_optimum, tiny_instances

TOL = 1e-6
SYN3_MULTI = "instances/data/placement-synthetic-3-multi-v2/placement-synthetic-3-s1-17330a79.json.gz"


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances(max_tasks=3))
def test_on_tiny_instances_it_reaches_the_fixed_allocation_optimum(inst):
    """Never below the referee's brute-force optimum, and at most the fixed-allocation
    restriction's optimum (placement-milp, solved to optimality)."""
    assert_between_optimum_and_fixed_optimum(
        inst, lambda: registry.solve(inst, CL.SOLVER_NAME, seed=0, work=1.0))


def test_never_worse_than_its_start_and_same_seed_same_schedule():
    """From the sjf / optimus start it improves (synthetic-3 multi, 192 tasks: fixed start 695 ->
    683, re-allocating moves -> 681 with 2 deterministic seconds, seed 0); twice the same."""
    inst = load_instance(SYN3_MULTI)
    runs = [registry.solve(inst, CL.SOLVER_NAME, seed=0, work=2.0) for _ in range(2)]
    for r in runs:
        ev = evaluate(inst, r.solution.placement)
        assert ev.feasible and r.solution.objective == pytest.approx(ev.primary_value, abs=TOL)
        assert ev.primary_value <= r.stats["start"]["value"] + TOL
        assert r.stats["value"] <= r.stats["decoded_start"]
        assert r.stats["restriction_bound"] <= r.stats["value"] + TOL
    assert runs[0].solution.placement == runs[1].solution.placement
    assert runs[0].stats["value"] < runs[0].stats["decoded_start"]  # CP-SAT's neighbourhoods paid
    assert runs[0].stats["message"].startswith("CP-SAT feasible (2.0 deterministic s)")


def test_from_the_best_known_it_keeps_or_improves_it():
    inst = load_instance(SYN3_MULTI)
    r = registry.solve(inst, CL.SOLVER_NAME, seed=0, work=1.0, warm_start="best-known")
    ev = evaluate(inst, r.solution.placement)
    assert ev.feasible
    assert ev.primary_value <= r.stats["start"]["value"] + TOL
    assert r.stats["start"]["source"].startswith("warm-start")


def test_parameters_reach_cp_sat():
    p = CL.cpsat_parameters(seed=3, threads=1, full=False, seconds=10.0, work=5.0)
    assert p["interleave_search"] is True and p["max_deterministic_time"] == 5.0
    assert set(p["ignore_subsolvers"]) == set(CL.FULL_SUBSOLVERS)
    assert "ignore_subsolvers" not in CL.cpsat_parameters(seed=3, threads=1, full=True, seconds=None, work=None)


@pytest.mark.parametrize("variant", ["multi", "single"])
def test_the_shared_model_is_placement_milps_and_its_hint_is_feasible(variant):
    """milp.cpsat_intervals_model with a feasible hint: CP-SAT's first solution is no worse than
    the hint, its schedule has no violation, and its model value is the schedule's."""
    inst = generate_placement("hetero-6", seed=3, num_tasks=30, variant=variant)
    data = prepare(inst.payload)
    fixed = greedy_schedule(data)
    assert schedule_violations(data, fixed) == []
    fb = finish_bounds(data, schedule_objective(data, fixed))
    model, choice = cpsat_intervals_model(data, fb, fixed)
    assert [len(c) for c in choice] == [sum(1 for o in data.options[j] if data.arrivals[j] + o.steps <= fb[j])
                                        for j in range(data.num_tasks)]
    st, sched, bound, size, _ = solve_cpsat_intervals(data, fb, time_limit=3, hint=fixed)
    assert st in ("optimal", "feasible") and schedule_violations(data, sched) == []
    assert bound <= schedule_objective(data, sched) <= schedule_objective(data, fixed)
    assert size["variables"] == len(model.Proto().variables)


@pytest.mark.parametrize("params, field", [({"threads": 0}, "threads"), ({"work": -1.0}, "work"),
                                           ({"warm_start": "nope.json"}, None), ({"moves": 3}, None)])
def test_bad_parameters_are_input_errors(params, field):
    inst = generate_placement("synthetic-3", seed=0, num_tasks=6)
    with pytest.raises(InputError) as err:
        registry.solve(inst, CL.SOLVER_NAME, **params)
    if field:
        assert field in str(err.value)
