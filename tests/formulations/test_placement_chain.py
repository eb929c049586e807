"""Late acceptance and CP-SAT's LNS in turn (formulations/placement/search/chain.py,
placement-lahc-cpsat): every schedule is referee-feasible and scored by the referee; on tiny
instances it lies between the referee's brute-force optimum and the fixed-allocation optimum; it is
never worse than its start and each search starts from the other's best; rounds, moves and work
fixed give the same schedule for the same seed; round seeds are independent of each other; bad
parameters are clear InputErrors."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from edgebench import registry
from edgebench.errors import InputError
from edgebench.formulations.placement.problem import greedy_schedule, prepare, schedule_objective
from edgebench.formulations.placement.search import chain as CH
from edgebench.formulations.placement.search.sgs import Tables
from edgebench.instances.generators.placement import generate_placement
from edgebench.referee.placement import evaluate
from test_placement_enum import assert_between_optimum_and_fixed_optimum, tiny_instances

TOL = 1e-6


@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances(max_tasks=3))
def test_on_tiny_instances_it_lies_between_the_optimum_and_the_fixed_allocation_optimum(inst):
    assert_between_optimum_and_fixed_optimum(
        inst, lambda: registry.solve(inst, CH.SOLVER_NAME, seed=0, rounds=1, iterations=200, work=0.5))


def test_rounds_improve_and_the_same_seed_gives_the_same_schedule():
    """hetero-6 single, 40 tasks, from the better of sjf and optimus: two rounds; the trace only
    falls, and what it records is the schedule's value; run twice, the same schedule."""
    inst = generate_placement("hetero-6", seed=3, num_tasks=40, variant="single")
    runs = [registry.solve(inst, CH.SOLVER_NAME, seed=5, rounds=2, iterations=2000, work=0.5) for _ in range(2)]
    for r in runs:
        ev = evaluate(inst, r.solution.placement)
        assert ev.feasible and r.solution.objective == pytest.approx(ev.primary_value, abs=TOL)
        assert ev.primary_value <= r.stats["start"]["value"] + TOL
        values = [v for _, _, v in r.stats["trace"]]
        assert values == sorted(values, reverse=True) and values[-1] == r.stats["value"]
        assert r.stats["value"] < r.stats["decoded_start"] and r.stats["rounds"] == 2
        assert r.stats["lahc_gain"] + r.stats["cpsat_gain"] == r.stats["decoded_start"] - r.stats["value"]
    assert runs[0].solution.placement == runs[1].solution.placement
    assert runs[0].stats["message"].startswith("2 rounds: fixed start")


def test_the_finish_continues_with_exact_history_windows():
    """Step 4 (``finish_iterations``, untimed): the exact-history windows start from the pair's result
    and never end above it; the run is referee-scored, and the same seed gives the same schedule."""
    inst = generate_placement("hetero-6", seed=3, num_tasks=40, variant="single")
    pair = registry.solve(inst, CH.SOLVER_NAME, seed=5, rounds=1, iterations=1000, work=0.5)
    runs = [registry.solve(inst, CH.SOLVER_NAME, seed=5, rounds=1, iterations=1000, work=0.5, finish_iterations=10)
            for _ in range(2)]
    for r in runs:
        ev = evaluate(inst, r.solution.placement)
        assert ev.feasible and r.solution.objective == pytest.approx(ev.primary_value, abs=TOL)
        f = r.stats["finish"]
        assert f["start_value"] == pytest.approx(pair.solution.objective, abs=TOL)
        assert f["value"] <= f["start_value"] and 0 < f["iterations"] <= 10
        assert ev.primary_value <= pair.solution.objective + TOL
        assert "exact-history windows" in r.stats["message"]
    assert runs[0].solution.placement == runs[1].solution.placement
    assert "finish" not in pair.stats and CH.finish_seed(5) != CH.finish_seed(6)


def test_improve_never_returns_worse_than_its_start_and_encodes_back_without_loss():
    inst = generate_placement("synthetic-3", seed=1, num_tasks=30, variant="single")
    data = prepare(inst.placement)
    tables = Tables(data)
    order, choice = tables.encode(greedy_schedule(data))
    start = tables.schedule(order, choice)
    sched, info = CH.improve(data, start, seed=0, deadline=None, rounds=1, iterations=500, work=0.5)
    assert schedule_objective(data, sched) == info["value"] <= schedule_objective(data, start)
    back = tables.schedule(*tables.encode(sched))
    assert schedule_objective(data, back) <= schedule_objective(data, sched)


def test_rounds_stop_where_cp_sat_proves_the_fixed_allocation_optimum():
    inst = generate_placement("synthetic-3", seed=2, num_tasks=6)
    r = registry.solve(inst, CH.SOLVER_NAME, seed=0, rounds=5, iterations=100, work=5.0)
    assert r.stats["fixed_optimal"] and r.stats["rounds"] == 1
    assert r.stats["message"].startswith("1 round: fixed start")
    assert "optimal among fixed allocations" in r.stats["message"]


def test_round_seeds_are_independent():
    seeds = {CH.round_seeds(s, k) for s in range(3) for k in range(4)}
    assert len(seeds) == 12
    assert all(0 <= b < 2 ** 31 - 1 for _, b in seeds)
    assert CH.round_seeds(7, 2) == CH.round_seeds(7, 2)


@pytest.mark.parametrize("params, field", [({"rounds": 0}, "rounds"), ({"lahc_share": 1.5}, "lahc_share"),
                                           ({"round_seconds": 0.5}, "round_seconds"), ({"work": -1.0}, "work"),
                                           ({"warm_start": "nope.json"}, None), ({"moves": 3}, None),
                                           ({"finish_share": 1.0}, "finish_share"),
                                           ({"finish_iterations": -1}, "finish_iterations")])
def test_bad_parameters_are_input_errors(params, field):
    inst = generate_placement("synthetic-3", seed=0, num_tasks=6)
    with pytest.raises(InputError) as err:
        registry.solve(inst, CH.SOLVER_NAME, **params)
    if field:
        assert field in str(err.value)


def test_it_is_a_heuristic_without_a_bound():
    info = registry.get(CH.SOLVER_NAME)
    assert info.kind == "heuristic" and info.families == ("placement",) and info.bound is None
    inst = generate_placement("synthetic-3", seed=0, num_tasks=8)
    r = registry.solve(inst, CH.SOLVER_NAME, seed=0, rounds=1, iterations=100, work=0.2)
    assert r.solution.bound is None
