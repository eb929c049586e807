"""A direct highspy path for the placement model: the same :class:`LinearModel`, handed to
HiGHS's own Python API so that the exact model can (a) start from a known schedule (a MIP
start: ``setSolution``) and (b) read the LP relaxation's reduced costs.  Neither is offered
by :func:`edgebench.formulations.linear.solve_linear`; everything else about the model is
shared.  Never raises: a failure is a status "error" with the message.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Sequence

import numpy as np

from edgebench.formulations.highs_model import highs_model
from edgebench.formulations.linear import LinearModel, LinearSolution, native_stdout_to_stderr


def _to_highs(model: LinearModel, integral: bool = True):
    import highspy

    inf = highspy.kHighsInf
    n = model.num_vars
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = len(model.rows)
    cost = np.zeros(n)
    for i, c in model.obj.items():
        cost[i] = c
    lp.col_cost_ = cost
    lp.offset_ = model.obj_const
    lp.col_lower_ = np.array([x if math.isfinite(x) else -inf for x in model.lb])
    lp.col_upper_ = np.array([x if math.isfinite(x) else inf for x in model.ub])
    lp.row_lower_ = np.array([x if math.isfinite(x) else -inf for x in model.row_lo])
    lp.row_upper_ = np.array([x if math.isfinite(x) else inf for x in model.row_hi])
    starts = np.zeros(len(model.rows) + 1, dtype=np.int32)
    idx: list[int] = []
    val: list[float] = []
    for r, (ii, vv) in enumerate(model.rows):
        idx.extend(ii)
        val.extend(vv)
        starts[r + 1] = len(idx)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = n
    lp.a_matrix_.num_row_ = len(model.rows)
    lp.a_matrix_.start_ = starts
    lp.a_matrix_.index_ = np.array(idx, dtype=np.int32)
    lp.a_matrix_.value_ = np.array(val, dtype=float)
    if model.sense != "min":
        lp.sense_ = highspy.ObjSense.kMaximize
    if integral and any(model.integer):
        lp.integrality_ = [highspy.HighsVarType.kInteger if it else highspy.HighsVarType.kContinuous
                           for it in model.integer]
    return lp


def _highs(time_limit, threads, seed, log):
    """A fresh HiGHS model with these settings, freed when its ``with`` block ends (issue 46)."""
    limit = {} if time_limit is None else {"time_limit": max(0.01, float(time_limit))}
    return highs_model(threads=threads, output=bool(log), random_seed=int(seed), **limit)


def solve_highs(model: LinearModel, *, hint: Sequence[float] | None = None, time_limit: float | None = None,
                threads: int = 1, seed: int = 0, mip_gap: float = 1e-9, log: bool = False,
                presolve: bool = True, options: dict[str, Any] | None = None) -> LinearSolution:
    """Solve the MILP with HiGHS, optionally from a MIP start ``hint`` (one value per variable).
    ``options``: further HiGHS options (e.g. ``objective_bound``: only solutions below it).
    ``time_limit`` covers the whole call: HiGHS gets what is left of it after the model has
    been converted and passed.  ``presolve=False`` switches HiGHS's presolve off (it checks
    the time limit only between its passes; see docs/formulations/placement.md)."""
    t0 = time.perf_counter()
    size = model.size()
    try:
        import highspy

        with _highs(time_limit, threads, seed, log) as h:
            h.setOptionValue("mip_rel_gap", float(mip_gap))
            if not presolve:
                h.setOptionValue("presolve", "off")
            for key, value in (options or {}).items():
                h.setOptionValue(key, value)
            h.passModel(_to_highs(model))
            if hint is not None:
                sol = highspy.HighsSolution()
                sol.col_value = list(map(float, hint))
                sol.value_valid = True
                h.setSolution(sol)
            if time_limit is not None:  # the conversion above counts against the limit
                h.setOptionValue("time_limit", max(0.01, float(time_limit) - (time.perf_counter() - t0)))
            with native_stdout_to_stderr():
                h.run()
            ms = h.getModelStatus()
            info = h.getInfo()
            has = info.primal_solution_status == 2  # kSolutionStatusFeasible
            values = np.array(h.getSolution().col_value, dtype=float) if has else None
            bound = info.mip_dual_bound if any(model.integer) else info.objective_function_value
            if bound is None or not math.isfinite(bound):
                bound = None
            M = highspy.HighsModelStatus
            if ms == M.kOptimal and has:
                status = "optimal"
            elif ms == M.kInfeasible:
                status = "infeasible"
            elif has:
                status = "feasible"
            elif ms in (M.kTimeLimit, M.kInterrupt, M.kIterationLimit, M.kSolutionLimit):
                status = "timeout"
            else:
                status = "error"
            sol_out = LinearSolution(status, values, None, bound, 0.0, "highspy", f"HiGHS {h.modelStatusToString(ms)}",
                                     size)
    except Exception as exc:  # never raise
        return LinearSolution("error", None, None, None, time.perf_counter() - t0, "highspy",
                              f"{type(exc).__name__}: {exc}", size)
    sol_out.runtime = time.perf_counter() - t0
    if sol_out.values is not None:
        sol_out.objective = model.objective_value(sol_out.values)
    return sol_out


def _solve_lp(model: LinearModel, time_limit: float | None, threads: int, seed: int, read: Callable[[Any], Any]):
    """Solve the LP relaxation with HiGHS; ``read(h)`` of the solved Highs object when optimal,
    else None (never raises).  The model is freed before the answer is returned (issue 46)."""
    try:
        import highspy

        with _highs(time_limit, threads, seed, False) as h:
            h.passModel(_to_highs(model, integral=False))
            h.run()
            return read(h) if h.getModelStatus() == highspy.HighsModelStatus.kOptimal else None
    except Exception:
        return None


def lp_with_reduced_costs(model: LinearModel, *, time_limit: float | None = None, threads: int = 1,
                          seed: int = 0) -> tuple[float, np.ndarray] | None:
    """The LP relaxation's optimal value and reduced costs (None if not solved to optimality)."""
    return _solve_lp(model, time_limit, threads, seed,
                     lambda h: (float(h.getInfo().objective_function_value),
                                np.array(h.getSolution().col_dual, dtype=float)))


def lp_solution(model: LinearModel, *, time_limit: float | None = None, threads: int = 1,
                seed: int = 0) -> tuple[float, np.ndarray] | None:
    """The LP relaxation's optimal value and primal point (None if not solved to optimality)."""
    return _solve_lp(model, time_limit, threads, seed,
                     lambda h: (float(h.getInfo().objective_function_value),
                                np.array(h.getSolution().col_value, dtype=float)))


def lp_row_duals(model: LinearModel, *, time_limit: float | None = None, threads: int = 1,
                 seed: int = 0) -> np.ndarray | None:
    """The LP relaxation's row duals (HiGHS's sign: reduced cost = c - A^T duals), None if
    not solved to optimality (used by bench/probe_placement_bounds.py's Lagrangian probe)."""
    return _solve_lp(model, time_limit, threads, seed, lambda h: np.array(h.getSolution().row_dual, dtype=float))
