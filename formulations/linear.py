"""A neutral mixed-integer linear model and the backends that solve it.

Each family formulation builds its MILP once as a :class:`LinearModel` (variables with
bounds and integrality, sparse linear rows, a linear objective) and hands it to any
backend; the backend emits it through its own modelling layer, solves it and returns a
:class:`LinearSolution` (status, values, objective, best bound, gap, runtime, model size).
So the same mathematical model goes through OR-Tools (pywraplp: SCIP, CBC, HiGHS; CP-SAT
when all data is integral), PuLP (CBC, HiGHS) and Pyomo (HiGHS via appsi) without a second
copy that could drift. Build, solve and decode are separate steps; a backend that fails
returns status "error" with a message, never raises.

Backends: ``ortools-scip``, ``ortools-cbc``, ``ortools-highs``, ``ortools-cpsat``,
``pulp-cbc``, ``pulp-highs``, ``pyomo-highs``.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from edgebench.formulations.highs_model import release

BACKENDS = ("ortools-scip", "ortools-cbc", "ortools-highs", "ortools-cpsat", "pulp-cbc", "pulp-highs",
            "pyomo-highs")
INF = math.inf


@contextlib.contextmanager
def native_stdout_to_stderr():
    """Send what native solver code writes to file descriptor 1 to descriptor 2 meanwhile.

    Some solver builds print to the process's C stdout regardless of their log options
    (highspy 1.12's MIP solver ``puts`` a debug line when it repairs an incumbent); stdout
    belongs to the CLI's ``--json`` output, so solver chatter must not land there. C stdio
    buffers are flushed before the descriptor is restored. Where descriptors cannot be
    duplicated (no real stdout), the block runs unchanged.
    """
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError, AttributeError):
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        try:
            import ctypes

            ctypes.CDLL(None).fflush(None)
        except Exception:  # pragma: no cover - no libc symbol table
            pass
        os.dup2(saved, 1)
        os.close(saved)


def run_cpsat(model, *, time_limit: float | None, threads: int = 1, seed: int = 0, log: bool = False,
              params: dict | None = None):
    """Solve a CP-SAT model with the settings every formulation uses (time limit, workers, seed,
    log, optional expert parameters), native output kept off stdout. Returns ``(solver, code,
    status)`` with ``status`` one of optimal / feasible / infeasible / timeout / error."""
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = max(0.001, float(time_limit))
    solver.parameters.num_workers = max(1, int(threads))
    solver.parameters.random_seed = int(seed)
    solver.parameters.log_search_progress = bool(log)
    for key, value in (params or {}).items():
        if isinstance(value, (list, tuple)):  # a repeated field (e.g. ignore_subsolvers) has no setter
            getattr(solver.parameters, key).extend(value)
        else:
            setattr(solver.parameters, key, value)
    with native_stdout_to_stderr():
        code = solver.Solve(model)
    status = {cp_model.OPTIMAL: "optimal", cp_model.FEASIBLE: "feasible", cp_model.INFEASIBLE: "infeasible",
              cp_model.UNKNOWN: "timeout"}.get(code, "error")
    return solver, code, status


@dataclass
class LinearModel:
    """min/max c·x + c0  s.t.  lo_i <= a_i·x <= hi_i,  lb <= x <= ub,  x_k integer for k in I."""

    name: str = "model"
    sense: str = "min"
    names: list[str] = field(default_factory=list)
    lb: list[float] = field(default_factory=list)
    ub: list[float] = field(default_factory=list)
    integer: list[bool] = field(default_factory=list)
    rows: list[tuple[list[int], list[float]]] = field(default_factory=list)
    row_lo: list[float] = field(default_factory=list)
    row_hi: list[float] = field(default_factory=list)
    row_names: list[str] = field(default_factory=list)
    obj: dict[int, float] = field(default_factory=dict)
    obj_const: float = 0.0

    # ---- building -------------------------------------------------------------------
    def add_var(self, name: str, lb: float = 0.0, ub: float = INF, integer: bool = False) -> int:
        self.names.append(name)
        self.lb.append(float(lb))
        self.ub.append(float(ub))
        self.integer.append(bool(integer))
        return len(self.names) - 1

    def add_binary(self, name: str) -> int:
        return self.add_var(name, 0.0, 1.0, True)

    def add_row(self, terms: Iterable[tuple[int, float]], lo: float = -INF, hi: float = INF,
                name: str = "") -> int:
        # merge repeated variables: the backends disagree on a variable listed twice in one row
        # (pywraplp and PuLP keep the last coefficient, Pyomo adds them)
        merged: dict[int, float] = {}
        for i, c in terms:
            merged[int(i)] = merged.get(int(i), 0.0) + float(c)
        idx = [i for i, c in merged.items() if c != 0]
        val = [merged[i] for i in idx]
        self.rows.append((idx, val))
        self.row_lo.append(float(lo))
        self.row_hi.append(float(hi))
        self.row_names.append(name or f"r{len(self.rows) - 1}")
        return len(self.rows) - 1

    def add_le(self, terms, rhs: float, name: str = "") -> int:
        return self.add_row(terms, -INF, rhs, name)

    def add_ge(self, terms, rhs: float, name: str = "") -> int:
        return self.add_row(terms, rhs, INF, name)

    def add_eq(self, terms, rhs: float, name: str = "") -> int:
        return self.add_row(terms, rhs, rhs, name)

    def set_objective(self, terms: Iterable[tuple[int, float]], constant: float = 0.0, sense: str | None = None):
        self.obj = {}
        for i, c in terms:
            self.obj[int(i)] = self.obj.get(int(i), 0.0) + float(c)
        self.obj_const = float(constant)
        if sense is not None:
            self.sense = sense

    # ---- inspection -----------------------------------------------------------------
    @property
    def num_vars(self) -> int:
        return len(self.names)

    def size(self) -> dict[str, int]:
        return {
            "variables": self.num_vars,
            "integer_variables": int(sum(self.integer)),
            "constraints": len(self.rows),
            "nonzeros": int(sum(len(r[0]) for r in self.rows)),
        }

    def relaxed(self) -> "LinearModel":
        """The LP relaxation (same rows, every variable continuous)."""
        m = LinearModel(self.name + "-lp", self.sense, list(self.names), list(self.lb), list(self.ub),
                        [False] * self.num_vars, self.rows, self.row_lo, self.row_hi, self.row_names,
                        dict(self.obj), self.obj_const)
        return m

    def objective_value(self, x: Sequence[float]) -> float:
        return self.obj_const + sum(c * x[i] for i, c in self.obj.items())

    def max_violation(self, x: Sequence[float]) -> float:
        """Largest bound / row / integrality violation of a point (a self-check of decoding)."""
        worst = 0.0
        xs = np.asarray(x, dtype=float)
        for k in range(self.num_vars):
            worst = max(worst, self.lb[k] - xs[k], xs[k] - self.ub[k])
            if self.integer[k]:
                worst = max(worst, abs(xs[k] - round(xs[k])))
        for (idx, val), lo, hi in zip(self.rows, self.row_lo, self.row_hi):
            a = float(np.dot(xs[idx], val)) if idx else 0.0
            worst = max(worst, lo - a, a - hi)
        return worst


@dataclass
class LinearSolution:
    status: str  # optimal | feasible | infeasible | timeout | error
    values: np.ndarray | None
    objective: float | None
    bound: float | None
    runtime: float
    backend: str
    message: str = ""
    size: dict[str, int] = field(default_factory=dict)

    @property
    def gap(self) -> float | None:
        if self.objective is None or self.bound is None:
            return None
        if self.objective == self.bound:
            return 0.0
        return abs(self.objective - self.bound) / max(abs(self.objective), 1e-9)

    def stats(self) -> dict:
        return {"backend": self.backend, "mip_gap": self.gap, "message": self.message, "model_size": self.size,
                "solver_runtime": self.runtime}


def solve_linear(model: LinearModel, backend: str, *, time_limit: float | None = None, threads: int = 1,
                 seed: int = 0, mip_gap: float = 1e-9, log: bool = False) -> LinearSolution:
    """Solve ``model`` with ``backend``; never raises (a failure is status "error")."""
    t0 = time.perf_counter()
    size = model.size()
    try:
        if backend.startswith("ortools-") and backend != "ortools-cpsat":
            sol = _solve_pywraplp(model, backend.split("-", 1)[1].upper(), time_limit, threads, seed, mip_gap, log)
        elif backend == "ortools-cpsat":
            sol = _solve_cpsat(model, time_limit, threads, seed, log)
        elif backend in ("pulp-cbc", "pulp-highs"):
            sol = _solve_pulp(model, backend, time_limit, threads, seed, mip_gap, log)
        elif backend == "pyomo-highs":
            sol = _solve_pyomo(model, time_limit, threads, seed, mip_gap, log)
        else:
            return LinearSolution("error", None, None, None, 0.0, backend,
                                  f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})", size)
    except Exception as exc:  # a backend crash becomes a status, never an exception out of solve
        return LinearSolution("error", None, None, None, time.perf_counter() - t0, backend,
                              f"{type(exc).__name__}: {exc}", size)
    sol.backend = backend
    sol.size = size
    sol.runtime = time.perf_counter() - t0
    if sol.values is not None and sol.status in ("optimal", "feasible"):
        sol.objective = model.objective_value(sol.values)
    return sol


def _finite(v: float, big: float) -> float:
    return v if math.isfinite(v) else (big if v > 0 else -big)


# ---- OR-Tools pywraplp ------------------------------------------------------------------


#: rows translated into a backend's model between two looks at the clock
ROWS_PER_CHECK = 512


def _out_of_time(time_limit: float | None, entered: float) -> bool:
    return time_limit is not None and time.perf_counter() - entered > time_limit


def _solve_pywraplp(model, solver_id, time_limit, threads, seed, mip_gap, log) -> LinearSolution:
    """``time_limit`` covers the translation into pywraplp (one Python call per coefficient:
    about a second for 180,000 nonzeros) and the backend's solve: the backend gets the time
    left after the translation, and a translation that runs out of time is a ``timeout``
    without a solve (issue 43 item 4)."""
    from ortools.linear_solver import pywraplp

    entered = time.perf_counter()
    s = pywraplp.Solver.CreateSolver(solver_id)
    if s is None:
        return LinearSolution("error", None, None, None, 0.0, "", f"OR-Tools has no {solver_id} solver")
    inf = s.infinity()
    xs = [s.IntVar(_finite(lb, inf), _finite(ub, inf), n) if it else s.NumVar(_finite(lb, inf), _finite(ub, inf), n)
          for n, lb, ub, it in zip(model.names, model.lb, model.ub, model.integer)]
    for r, ((idx, val), lo, hi) in enumerate(zip(model.rows, model.row_lo, model.row_hi)):
        if r % ROWS_PER_CHECK == 0 and _out_of_time(time_limit, entered):
            return LinearSolution("timeout", None, None, None, 0.0, "",
                                  f"out of time while translating the model for pywraplp ({r} of "
                                  f"{len(model.rows)} rows)")
        # positional names: a repeated user name aborts the whole process inside OR-Tools
        c = s.RowConstraint(_finite(lo, inf), _finite(hi, inf), f"c{r}")
        for i, v in zip(idx, val):
            c.SetCoefficient(xs[i], v)
    obj = s.Objective()
    for i, c in model.obj.items():
        obj.SetCoefficient(xs[i], c)
    obj.SetOffset(model.obj_const)
    obj.SetMinimization() if model.sense == "min" else obj.SetMaximization()
    left = None if time_limit is None else time_limit - (time.perf_counter() - entered)
    if left is not None:
        s.SetTimeLimit(max(1, int(left * 1000)))  # the time left after the translation
    s.SetNumThreads(max(1, threads))
    if log:
        s.EnableOutput()
    if solver_id == "HIGHS":
        # HiGHS through pywraplp ignores RELATIVE_MIP_GAP (it kept its default 1e-4): pass it
        # natively; output_flag=false silences HiGHS's banner on stdout
        s.SetSolverSpecificParametersAsString(("" if log else "output_flag=false\n") + f"mip_rel_gap={mip_gap!r}")
    params = pywraplp.MPSolverParameters()
    params.SetDoubleParam(pywraplp.MPSolverParameters.RELATIVE_MIP_GAP, mip_gap)
    t_start = time.perf_counter()
    with native_stdout_to_stderr():
        code = s.Solve(params)
    elapsed = time.perf_counter() - t_start
    has = code in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE)
    values = np.array([x.solution_value() for x in xs]) if has else None
    bound = None
    if has and any(model.integer):
        try:
            bound = obj.BestBound()
        except Exception:  # pragma: no cover - solver specific
            bound = None
    status = {pywraplp.Solver.OPTIMAL: "optimal", pywraplp.Solver.FEASIBLE: "feasible",
              pywraplp.Solver.INFEASIBLE: "infeasible"}.get(code)
    if status is None:
        # HiGHS through pywraplp answers an unlisted code (99) when the time limit stops it with no incumbent
        hit_limit = left is not None and elapsed >= 0.9 * left
        status = "timeout" if code == pywraplp.Solver.NOT_SOLVED or hit_limit else "error"
    if status == "optimal":
        bound = obj.Value() if bound is None or not any(model.integer) else bound
    return LinearSolution(status, values, None, bound, 0.0, "", f"pywraplp status {code}")


# ---- OR-Tools CP-SAT ------------------------------------------------------------------


def _integral(v: float) -> bool:
    return math.isfinite(v) and abs(v - round(v)) <= 1e-9


def _solve_cpsat(model, time_limit, threads, seed, log) -> LinearSolution:
    from ortools.sat.python import cp_model

    if not all(model.integer):
        return LinearSolution("error", None, None, None, 0.0, "", "CP-SAT needs every variable integer")
    data = [c for _, vals in model.rows for c in vals] + list(model.obj.values())
    if not all(_integral(c) for c in data):
        return LinearSolution("error", None, None, None, 0.0, "", "CP-SAT needs integral coefficients")
    big = 2**40
    m = cp_model.CpModel()
    xs = [m.NewIntVar(int(max(lb, -big)), int(min(ub, big)), n) for n, lb, ub in zip(model.names, model.lb, model.ub)]
    for (idx, val), lo, hi in zip(model.rows, model.row_lo, model.row_hi):
        expr = sum(int(round(v)) * xs[i] for i, v in zip(idx, val))
        if math.isfinite(lo) and math.isfinite(hi) and lo == hi:
            m.Add(expr == int(round(lo)))
        else:
            if math.isfinite(lo):
                m.Add(expr >= math.ceil(lo - 1e-9))
            if math.isfinite(hi):
                m.Add(expr <= math.floor(hi + 1e-9))
    objexpr = sum(int(round(c)) * xs[i] for i, c in model.obj.items())
    m.Minimize(objexpr) if model.sense == "min" else m.Maximize(objexpr)
    solver, code, status = run_cpsat(m, time_limit=time_limit, threads=threads, seed=seed, log=log)
    has = status in ("optimal", "feasible")
    values = np.array([solver.Value(x) for x in xs], dtype=float) if has else None
    bound = solver.BestObjectiveBound() + model.obj_const if has else None
    return LinearSolution(status, values, None, bound, 0.0, "", solver.StatusName(code))


# ---- PuLP -------------------------------------------------------------------------------


def _solve_pulp(model, backend, time_limit, threads, seed, mip_gap, log) -> LinearSolution:
    import pulp

    prob = pulp.LpProblem(model.name.replace(" ", "_"), pulp.LpMinimize if model.sense == "min" else pulp.LpMaximize)
    xs = [pulp.LpVariable(f"x{k}", lowBound=None if not math.isfinite(lb) else lb,
                          upBound=None if not math.isfinite(ub) else ub,
                          cat=pulp.LpInteger if it else pulp.LpContinuous)
          for k, (lb, ub, it) in enumerate(zip(model.lb, model.ub, model.integer))]
    for r, ((idx, val), lo, hi) in enumerate(zip(model.rows, model.row_lo, model.row_hi)):
        expr = pulp.LpAffineExpression([(xs[i], v) for i, v in zip(idx, val)])
        if math.isfinite(lo) and math.isfinite(hi) and lo == hi:
            prob += (expr == lo, f"c{r}")
        else:
            if math.isfinite(lo):
                prob += (expr >= lo, f"c{r}l")
            if math.isfinite(hi):
                prob += (expr <= hi, f"c{r}u")
    prob += pulp.LpAffineExpression([(xs[i], c) for i, c in model.obj.items()], constant=model.obj_const)
    kw = {"msg": bool(log), "timeLimit": time_limit, "threads": max(1, threads), "gapRel": mip_gap}
    if backend == "pulp-cbc":
        solver = pulp.PULP_CBC_CMD(**kw, options=[f"randomSeed {seed + 1}", f"randomCbcSeed {seed + 1}"])
    else:
        solver = pulp.HiGHS(**kw)
    # PuLP's model and solution files in a folder of our own, removed also when a signal
    # or Ctrl-C ends the solve (PuLP deletes them only after a completed solve; issue 28)
    with tempfile.TemporaryDirectory(prefix="edgebench-pulp-") as tmp, native_stdout_to_stderr():
        solver.tmpDir = tmp
        prob.solve(solver)
    st = pulp.LpStatus.get(prob.status, "Undefined")
    sol_st = getattr(prob, "sol_status", None)
    values = None
    if st == "Optimal" or sol_st in (pulp.LpSolutionIntegerFeasible, pulp.LpSolutionOptimal):
        vals = [x.varValue for x in xs]
        if all(v is not None for v in vals):
            values = np.array(vals, dtype=float)
    bound = None
    if backend == "pulp-highs":
        try:
            h = solver.solverModel if hasattr(solver, "solverModel") else prob.solverModel
            info = h.getInfo()
            bound = info.mip_dual_bound if any(model.integer) else info.objective_function_value
            if not math.isfinite(bound):
                bound = None
            else:
                if model.sense == "max":  # PuLP hands HiGHS the negated objective of a maximisation
                    bound = -bound
                bound += model.obj_const  # PuLP leaves the objective's constant out of the model it passes
        except Exception:
            bound = None
        finally:  # PuLP keeps its highspy model on the problem: free it now, not at a garbage collection (issue 46)
            release(getattr(prob, "solverModel", None))
    if st == "Optimal" and values is not None:
        status = "optimal" if sol_st in (None, pulp.LpSolutionOptimal) else "feasible"
    elif values is not None:
        status = "feasible"
    elif st == "Infeasible":
        status = "infeasible"
    elif st == "Not Solved" or sol_st == pulp.LpSolutionNoSolutionFound:
        status = "timeout"
    else:
        status = "error"
    if status == "optimal" and bound is None:
        bound = model.objective_value(values)
    return LinearSolution(status, values, None, bound, 0.0, "", f"PuLP status {st}, solution status {sol_st}")


# ---- Pyomo ------------------------------------------------------------------------------


def _solve_pyomo(model, time_limit, threads, seed, mip_gap, log) -> LinearSolution:
    import pyomo.environ as pe
    from pyomo.contrib.appsi.base import TerminationCondition
    from pyomo.contrib.appsi.solvers import Highs
    from pyomo.core.expr.numeric_expr import LinearExpression

    m = pe.ConcreteModel(name=model.name)
    n = model.num_vars
    m.I = pe.RangeSet(0, n - 1)

    def _dom(_, k):
        return pe.Integers if model.integer[k] else pe.Reals

    def _bnd(_, k):
        lb, ub = model.lb[k], model.ub[k]
        return (lb if math.isfinite(lb) else None, ub if math.isfinite(ub) else None)

    m.x = pe.Var(m.I, domain=_dom, bounds=_bnd)
    m.c = pe.ConstraintList()
    for (idx, val), lo, hi in zip(model.rows, model.row_lo, model.row_hi):
        expr = LinearExpression(constant=0, linear_coefs=list(val), linear_vars=[m.x[i] for i in idx])
        m.c.add(pe.inequality(lo if math.isfinite(lo) else None, expr, hi if math.isfinite(hi) else None)
                if lo != hi else expr == lo)
    items = list(model.obj.items())
    m.obj = pe.Objective(expr=LinearExpression(constant=model.obj_const, linear_coefs=[c for _, c in items],
                                               linear_vars=[m.x[i] for i, _ in items]),
                         sense=pe.minimize if model.sense == "min" else pe.maximize)
    opt = Highs()
    opt.config.stream_solver = bool(log)
    opt.config.load_solution = False
    if time_limit is not None:
        opt.config.time_limit = float(time_limit)
    opt.config.mip_gap = mip_gap
    opt.highs_options = {"threads": max(1, threads), "random_seed": int(seed)}
    try:
        with native_stdout_to_stderr():
            res = opt.solve(m)
        tc = res.termination_condition
        has = res.best_feasible_objective is not None
        values = None
        if has:
            res.solution_loader.load_vars()
            values = np.array([pe.value(m.x[k]) for k in range(n)], dtype=float)
        bound = res.best_objective_bound
    finally:  # appsi keeps its highspy model (no public handle): free it now, not at a garbage collection (issue 46)
        release(getattr(opt, "_solver_model", None))
        opt._solver_model = None  # appsi's solver object is itself in Pyomo's cycles (its results hold it)
    if bound is not None and not math.isfinite(bound):
        bound = None
    if tc == TerminationCondition.optimal and has:
        status = "optimal"
    elif has:
        status = "feasible"
    elif tc == TerminationCondition.infeasible:
        status = "infeasible"
    elif tc in (TerminationCondition.maxTimeLimit, TerminationCondition.interrupted):
        status = "timeout"
    else:
        status = "error"
    return LinearSolution(status, values, None, bound, 0.0, "", f"appsi termination {tc}")
