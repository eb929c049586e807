"""The shape LNS (formulations/placement/search/shapelns.py): with one window over every task of a
tiny instance it lands between the referee's brute-force optimum and the best fixed-allocation
schedule (its shapes hold every dominant fixed allocation at every start); a shape takes the same
steps at any start and for every task of its class (the referee's simulation); the dominance
filter and the start assignment are their definitions; it improves a start, never returns worse,
and the same seed gives the same schedule; bad parameters are clear InputErrors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from edgebench import registry
from edgebench.errors import InputError
from edgebench.formulations.placement import enum as E
from edgebench.formulations.placement.search import cglns as CG
from edgebench.formulations.placement.search import shapelns as SL
from edgebench.formulations.placement.search.shapes import Shape
from edgebench.instances.io import load_instance
from edgebench.referee.placement import evaluate, task_finish
from test_placement_enum import tiny_instances

TOL = 1e-6
TESTBED_S0 = "instances/data/placement-testbed-v2/placement-testbed-s0.json.gz"


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(tiny_instances(max_tasks=3))
def test_one_window_over_every_task_lies_between_the_optimum_and_the_best_fixed_schedule(inst):
    """length and reach past the horizon: one window frees every task and its MIP holds every
    fixed-allocation schedule that ends within the search's horizon, so its optimum is at most
    placement-milp's (the best fixed-allocation schedule) and, being a schedule the referee
    accepts, at least the brute-force optimum."""
    try:
        opt, _ = E.optimum(inst, max_states=5_000)
    except E.StateLimitError:  # too large for the brute force: another example
        assume(False)
    milp = registry.solve(inst, "placement-milp", time_limit=30)
    assert milp.status == "optimal"
    value, start, _ = CG.start_schedule(inst, None, 0, None)
    H = max(c.F for c in CG.decisions_columns(inst.placement, start)) + SL.HORIZON
    assume(max(c.F for c in CG.decisions_columns(inst.placement, milp.solution.placement)) <= H)
    r = registry.solve(inst, SL.SOLVER_NAME, seed=0, iterations=1, length=1000, reach=1000, sub_limit=30)
    assert r.status == "feasible", r.stats.get("message")
    assert r.stats["start"]["value"] == pytest.approx(value, abs=TOL)
    assert r.stats["rejected"] == 0
    ev = evaluate(inst, r.solution.placement)
    assert ev.feasible, ev.violations[:3]
    assert r.solution.objective == pytest.approx(ev.primary_value, abs=TOL)
    assert opt - TOL <= ev.primary_value <= milp.solution.objective + TOL


def test_a_shape_takes_the_same_steps_at_any_start_and_for_every_class_mate():
    """testbed-v2 (noise-free): each class's shapes, made on its first task at its arrival, are
    re-simulated by the referee for random class-mates at random starts."""
    p = load_instance(TESTBED_S0).placement
    cls = SL.interchangeable(p)
    assert len(set(cls)) == 21  # tasks equal in every field but arrival and name (docs: 21 classes)
    assert len(set(SL.same_steps(p))) == 3  # the classes of a type differ only in their eligible clusters
    rng = np.random.default_rng(0)
    for k in sorted(set(cls))[::4]:  # every fourth class, on its first cluster (the clusters are identical)
        mates = [j for j, c in enumerate(cls) if c == k]
        for n in p.tasks[mates[0]].eligible[:1]:
            shapes = SL.class_shapes(p, mates[0], n)
            assert shapes and any(len(s.pieces) == 2 for s in shapes)
            for sh in shapes:
                j = mates[int(rng.integers(0, len(mates)))]
                s = int(p.tasks[j].arrival) + int(rng.integers(0, 40))
                assert task_finish(p, j, s, [(s + r, c, g) for r, c, g in sh.pieces]) == s + sh.steps


def test_held_spells_out_the_pieces():
    sh = Shape(0, ((0, 2, 1), (3, 0, 0), (5, 1, 1)), 0, 7)
    assert SL.held(sh) == ((2, 1),) * 3 + ((0, 0),) * 2 + ((1, 1),) * 2
    assert SL.held(Shape(1, ((0, 4, 0), (6, 1, 0)), 0, 4)) == ((4, 0),) * 4  # finished before the change


@st.composite
def shapes(draw):
    out = []
    for _ in range(draw(st.integers(1, 12))):
        steps = draw(st.integers(1, 5))
        pieces = [(0, draw(st.integers(0, 2)), draw(st.integers(1, 2)))]
        if steps > 1 and draw(st.booleans()):
            pieces.append((draw(st.integers(1, steps - 1)), draw(st.integers(0, 2)), draw(st.integers(0, 2))))
        out.append(Shape(draw(st.integers(0, 1)), tuple(pieces), 0, steps))
    return out


@settings(max_examples=60, deadline=None, derandomize=True)
@given(shapes())
def test_undominated_is_its_definition(given_shapes):
    kept = SL.undominated(given_shapes)
    assert all(any(SL.dominates(k, s) for k in kept) for s in given_shapes)
    assert not any(SL.dominates(a, b) for a in kept for b in kept if a != b)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=1, max_size=6))
def test_assign_pairs_the_kth_start_with_the_kth_arrival(pairs):
    arrivals, starts = [a for a, _ in pairs], [s for _, s in pairs]
    order = SL.assign(arrivals, starts)
    feasible = all(x <= y for x, y in zip(sorted(arrivals), sorted(starts)))
    assert (order is not None) == feasible
    if order is not None:
        assert sorted(order) == list(range(len(starts)))
        assert all(starts[order[i]] >= arrivals[i] for i in range(len(arrivals)))


def test_improves_a_start_never_worse_and_same_seed_same_schedule():
    """testbed-v2 s0 from sjf's schedule (2084): two windows of 4 steps (measured 2026-12-03:
    2084 -> 2077 -> 2067, about 8 s a run; the test asks for any gain)."""
    inst = load_instance(TESTBED_S0)
    runs = [registry.solve(inst, SL.SOLVER_NAME, seed=1, iterations=2, length=4, sub_limit=30) for _ in range(2)]
    assert runs[0].solution.placement == runs[1].solution.placement
    ev = evaluate(inst, runs[0].solution.placement)
    assert ev.feasible and ev.primary_value < runs[0].stats["start"]["value"] - 0.5
    assert runs[0].stats["improvements"] >= 1 and runs[0].stats["rejected"] == 0


@pytest.mark.parametrize("params, field", [({"length": 0}, "length"), ({"reach": -1}, "reach"),
                                           ({"sub_limit": "nan"}, "sub_limit"),
                                           ({"warm_start": "/nonexistent.json"}, "warm_start")])
def test_bad_parameters_are_clear_errors(params, field):
    inst = load_instance(TESTBED_S0)
    with pytest.raises(InputError, match=field):
        registry.solve(inst, SL.SOLVER_NAME, **params)


def test_listed_as_a_placement_heuristic():
    info = registry.get(SL.SOLVER_NAME)
    assert info.kind == "heuristic" and info.families == ("placement",) and info.bound is None
