"""The neutral LinearModel gives the same answer through every backend."""

import numpy as np
import pytest

from edgebench.formulations.linear import BACKENDS, LinearModel, solve_linear


def knapsack(n=25, seed=3):
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 20, n)
    v = rng.integers(1, 30, n)
    m = LinearModel("knapsack", "max")
    xs = [m.add_binary(f"x{i}") for i in range(n)]
    m.add_le(zip(xs, w), int(w.sum() // 3))
    m.set_objective(zip(xs, v))
    return m, w, v


def brute_force_knapsack(w, v, cap):
    best = 0
    n = len(w)
    for mask in range(1 << n):
        tw = tv = 0
        for i in range(n):
            if mask >> i & 1:
                tw += w[i]
                tv += v[i]
        if tw <= cap:
            best = max(best, tv)
    return best


@pytest.mark.parametrize("backend", BACKENDS)
def test_backends_agree_with_brute_force(backend):
    m, w, v = knapsack(n=12)
    cap = int(w.sum() // 3)
    expected = brute_force_knapsack(list(w), list(v), cap)
    sol = solve_linear(m, backend, time_limit=30)
    assert sol.status == "optimal", sol.message
    assert sol.objective == pytest.approx(expected)
    assert sol.bound == pytest.approx(expected, rel=1e-6)
    assert m.max_violation(sol.values) <= 1e-6
    assert sol.size == {"variables": 12, "integer_variables": 12, "constraints": 1, "nonzeros": 12}


@pytest.mark.parametrize("backend", BACKENDS)
def test_infeasible_is_reported(backend):
    m = LinearModel("infeasible")
    a = m.add_var("a", 0, 1, integer=True)
    b = m.add_var("b", 0, 1, integer=True)
    m.add_ge([(a, 1), (b, 1)], 3)
    m.set_objective([(a, 1)])
    assert solve_linear(m, backend, time_limit=10).status == "infeasible"


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "ortools-cpsat"])
def test_lp_relaxation_bounds_the_milp(backend):
    m, _, _ = knapsack()
    mip = solve_linear(m, "ortools-highs", time_limit=30)
    lp = solve_linear(m.relaxed(), backend, time_limit=30)
    assert lp.status == "optimal"
    assert lp.objective >= mip.objective - 1e-6


def test_cpsat_refuses_continuous_variables_with_a_status():
    m = LinearModel("cont")
    x = m.add_var("x", 0, 1)
    m.set_objective([(x, 1)])
    sol = solve_linear(m, "ortools-cpsat")
    assert sol.status == "error" and "integer" in sol.message


def test_unknown_backend_is_a_status_not_an_exception():
    m, _, _ = knapsack(n=3)
    sol = solve_linear(m, "gurobi-someday")
    assert sol.status == "error" and "unknown backend" in sol.message


def test_equality_and_ranged_rows():
    m = LinearModel("rows")
    x = m.add_var("x", 0, 10, integer=True)
    y = m.add_var("y", 0, 10)
    m.add_eq([(x, 1), (y, 1)], 7.5)
    m.add_row([(x, 1)], lo=2, hi=4)
    m.set_objective([(x, -1), (y, 2)], constant=1.0)
    for backend in ("ortools-highs", "pulp-cbc", "pyomo-highs"):
        sol = solve_linear(m, backend, time_limit=10)
        assert sol.status == "optimal"
        # x = 4, y = 3.5 -> -4 + 7 + 1
        assert sol.objective == pytest.approx(4.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_repeated_variable_in_a_row_is_summed_and_names_may_repeat(backend):
    m = LinearModel("dups", "max")
    x = m.add_var("x", 0, 10, integer=True)
    m.add_le([(x, 1), (x, 1)], 8, name="same")  # 2x <= 8
    m.add_le([(x, 3)], 100, name="same")
    m.set_objective([(x, 1)])
    sol = solve_linear(m, backend, time_limit=10)
    assert sol.status == "optimal" and sol.objective == pytest.approx(4.0)


def test_native_stdout_goes_to_stderr_during_solves():
    """Native solver chatter on C stdout (highspy's unconditional debug line) must not
    reach the CLI's stdout; it is sent to stderr while the solver runs."""
    import subprocess
    import sys

    code = ("import ctypes\n"
            "from edgebench.formulations.linear import native_stdout_to_stderr\n"
            "with native_stdout_to_stderr():\n"
            "    ctypes.CDLL(None).puts(b'native-chatter')\n"
            "print('clean')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "clean\n"
    assert "native-chatter" in out.stderr
