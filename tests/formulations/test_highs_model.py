"""Every highspy model is freed when done (issue 46, formulations/highs_model.py): highspy's
``Highs`` object is in a reference cycle, so a model dropped without :func:`release` waits for
Python's cyclic garbage collector.  With the collector off, N calls of each site that builds a
HiGHS model (mapping's bandwidth LP, the mapping MILP's LP extremes, the placement highspy
path, PuLP's and Pyomo's HiGHS backends) leave no live ``Highs`` object behind; before, each
call left one.  The answers are checked too (exact integers, or floats to 1e-6)."""

from __future__ import annotations

import gc

import highspy
import numpy as np
import pytest

from edgebench.formulations import mapping_milp as MM
from edgebench.formulations.highs_model import highs_model, release
from edgebench.formulations.linear import LinearModel, solve_linear
from edgebench.formulations.mapping_problem import GOALS, build_problem, solve_bandwidth
from edgebench.formulations.placement.highs import lp_row_duals, lp_solution, lp_with_reduced_costs, solve_highs
from edgebench.instances.generators import generate

N = 8


def _live() -> int:
    return sum(isinstance(o, highspy.Highs) for o in gc.get_objects())


def _left_behind(call) -> int:
    """Live Highs objects left by N calls of ``call`` with the garbage collector off, after one
    call first: after the first ``import pulp`` (inside the call) something reached through
    importlib's frames keeps that first call's frame, hence its (released, empty) model."""
    call()
    gc.collect()
    gc.disable()
    try:
        before = _live()
        for _ in range(N):
            call()
        return _live() - before
    finally:
        gc.enable()
        gc.collect()


def _knapsack() -> LinearModel:
    """max 5a + 4b + 3c, 2a + 3b + c <= 4, binaries: optimum 8 (a, c); LP relaxation 28/3
    (a, c, b = 1/3; the row's dual 4/3)."""
    m = LinearModel("knapsack", "max")
    xs = [m.add_binary(f"x{i}") for i in range(3)]
    m.add_le(zip(xs, (2, 3, 1)), 4)
    m.set_objective(zip(xs, (5, 4, 3)))
    return m


def test_the_cause_a_dropped_highs_waits_for_the_collector_and_release_frees_it():
    """highspy 1.12: a plain ``Highs()`` dropped with the collector off stays (the cycle); one
    released, or made by ``highs_model`` (also when the block raises), goes at once."""
    assert _left_behind(lambda: highspy.Highs()) == N  # noqa: PLW0108 (the object is dropped at once)

    def released():
        h = highspy.Highs()
        release(h)

    def raising():
        with pytest.raises(RuntimeError):
            with highs_model(time_limit=1.0) as h:
                assert h.getOptionValue("threads")[1] == 1 and h.getOptionValue("output_flag")[1] is False
                raise RuntimeError("boom")

    assert _left_behind(released) == 0
    assert _left_behind(raising) == 0
    release(None)  # ignored


def test_mapping_bandwidth_lp_is_freed():
    """solve_bandwidth (called at every leaf of the mapping branch and bound): same answer each
    call, no HiGHS model left."""
    pr = build_problem(generate("mapping", "thesis", seed=1, nodes=4, task_nodes=3, link_bw_range=[40.0, 150.0]))
    g = GOALS["composite"]
    x = next(np.array(x) for x in np.ndindex(*(pr.P,) * pr.n)
             if pr.fits(np.array(x)[None])[0] and pr.routable_all(np.array(x)[None])[0]
             and len(set(x)) > 1)
    first = solve_bandwidth(pr, g, x)
    assert first.b is not None and first.status == "optimal"
    answers = []
    assert _left_behind(lambda: answers.append(solve_bandwidth(pr, g, x))) == 0
    assert all(abs(a.value - first.value) <= 1e-9 and np.array_equal(a.b, first.b) for a in answers)


def test_mapping_milp_lp_extremes_are_freed():
    """add_lumpiness (the LP extremes of the mapping MILP's means): rows added, no HiGHS model left."""
    pr = build_problem(generate("mapping", "thesis", seed=0, nodes=4, task_nodes=3, link_bw_range=[40.0, 150.0]))
    g = GOALS["composite"]
    added = []
    assert _left_behind(lambda: added.append(MM.add_lumpiness(MM.build_milp(pr, g), pr, g))) == 0
    assert len(set(added)) == 1 and added[0] > 0, added


def test_placement_highspy_path_is_freed():
    """solve_highs (placement's MILP, called in a loop by LNS / CG-LNS) and the LP relaxation's
    readers: answers as before, no HiGHS model left."""
    m = _knapsack()
    sols, lps = [], []

    def call():
        sols.append(solve_highs(m, time_limit=10))
        lps.append((lp_solution(m), lp_with_reduced_costs(m), lp_row_duals(m)))

    assert _left_behind(call) == 0
    for sol in sols:
        assert sol.status == "optimal" and sol.objective == 8 and abs(sol.bound - 8) <= 1e-6, sol
        assert np.array_equal(sol.values.round(), [1, 0, 1])
    for (val, x), (val2, red), duals in lps:
        assert abs(val - 28 / 3) <= 1e-6 and abs(val2 - 28 / 3) <= 1e-6 and np.allclose(x, [1, 1 / 3, 1], atol=1e-6)
        assert red.shape == (3,) and duals.shape == (1,) and abs(abs(duals[0]) - 4 / 3) <= 1e-6


@pytest.mark.parametrize("backend", ["pulp-highs", "pyomo-highs"])
def test_linear_highs_backends_free_their_model(backend):
    """PuLP keeps its highspy model on the problem, Pyomo's appsi on the solver object: both
    released after the answer is read."""
    sols = []
    assert _left_behind(lambda: sols.append(solve_linear(_knapsack(), backend, time_limit=10))) == 0
    for sol in sols:
        assert sol.status == "optimal" and sol.objective == pytest.approx(8) and sol.bound == pytest.approx(8, abs=1e-6)
