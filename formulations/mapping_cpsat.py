"""The mapping problem as a CP-SAT model on scaled integers (OR-Tools ``cp_model``).

Same variables and constraints as the MILP (:mod:`edgebench.formulations.mapping_milp`), with

* bandwidths ``B[v]`` integer in units of ``1/SCALE_BW`` (ranges rounded inwards, link
  capacities and node capacities rounded conservatively: every CP-SAT solution is feasible
  for the real data);
* utilisations as integers ``round(U * SCALE_U)`` — nodes: every coefficient rounded; links:
  ``AddDivisionEquality`` of the scaled load by the scaled bandwidth;
* the standard deviations exactly on those integers: ``V = E * sum U_e^2 - (sum U_e)^2``
  (``AddMultiplicationEquality`` for every square) and ``s^2 >= V`` with ``s`` integer, so
  ``s = ceil(sqrt(V))`` at the optimum and ``std = s / (E * SCALE_U)``.

The objective of this model differs from the exact one by at most the *scaling tolerance*
``tol = beta (w1 e_cpu + w2 e_ram + w3 e_bw) + alpha e_D`` (``e_*``: the largest error of an
element's scaled utilisation plus the ceiling of the root, the std being 1-Lipschitz in the
max-norm; ``e_D``: the bandwidth grid). The decoded mapping is re-solved exactly (bandwidths
by :func:`~edgebench.formulations.mapping_problem.solve_bandwidth`) and the reported bound is
CP-SAT's bound plus ``tol``: honest, but ``tol`` wide, so ``optimal`` is claimed only when the
exact value meets that bound within 1e-6 (relative; :func:`edgebench.formulations.mapping._finish`).
When a demand or a minimal bandwidth lies off the integer grid the scaled model is a
restriction of the real one: no bound is reported and its infeasibility is no proof.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from edgebench.formulations.linear import run_cpsat
from edgebench.formulations.mapping_milp import MilpOutcome, routes_incidence
from edgebench.formulations.mapping_problem import CAP_EPS, Goal, MappingProblem, solve_bandwidth

SCALE_U = 100_000
SCALE_BW = 10_000
SCALE_CAP = 10_000


def _sqrt_block(m, U: list, name: str, hi_u: int):
    """s with s^2 >= E*sum U^2 - (sum U)^2 over integer utilisations U (each in [0, hi_u])."""
    E = len(U)
    sq = []
    for k, u in enumerate(U):
        q = m.NewIntVar(0, hi_u * hi_u, f"{name}_sq[{k}]")
        m.AddMultiplicationEquality(q, [u, u])
        sq.append(q)
    tot = m.NewIntVar(0, E * hi_u, f"{name}_sum")
    m.Add(tot == sum(U))
    tot2 = m.NewIntVar(0, (E * hi_u) ** 2, f"{name}_sum2")
    m.AddMultiplicationEquality(tot2, [tot, tot])
    vmax = E * E * hi_u * hi_u
    var = m.NewIntVar(0, vmax, f"{name}_var")
    m.Add(var == E * sum(sq) - tot2)
    s = m.NewIntVar(0, math.isqrt(vmax) + 1, f"{name}_std")
    s2 = m.NewIntVar(0, (math.isqrt(vmax) + 1) ** 2, f"{name}_std2")
    m.AddMultiplicationEquality(s2, [s, s])
    m.Add(s2 >= var)
    return s


def _model_size(m) -> dict:
    """Variables, constraints and nonzeros (terms of linear constraints, literals and factors
    of the others). Read-only: the proto wrapper is only queried with has_* (touching an
    unset sub-message would set it)."""
    proto = m.Proto()
    nz = 0
    for c in proto.constraints:
        if c.has_linear():
            nz += len(c.linear.vars)
        elif c.has_exactly_one():
            nz += len(c.exactly_one.literals)
        elif c.has_int_prod():
            nz += len(c.int_prod.exprs) + 1
        elif c.has_int_div():
            nz += 3
        else:
            nz += 1
    return {"variables": len(proto.variables), "integer_variables": len(proto.variables),
            "constraints": len(proto.constraints), "nonzeros": nz}


@dataclass
class CpsatModel:
    model: object  # cp_model.CpModel
    x: list  # x[t][p] literals
    route_arcs: dict  # free routing: v -> [(r, literal)]
    const: float  # objective constant (outside the model)
    tol: float  # scaling tolerance of the objective
    size: dict
    #: demands and minimal bandwidths lie on the integer grids, so the scaled model is the real
    #: one up to ``tol`` (otherwise it is a restriction: neither its bound nor its
    #: infeasibility is a proof for the real data)
    exact_grid: bool = True


def build_cpsat(pr: MappingProblem, g: Goal) -> CpsatModel:
    """The scaled-integer CP-SAT model of goal ``g`` (see the module doc)."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    P, R, n, V = pr.P, pr.R, pr.n, pr.V
    balance = g.beta > 0
    # ---- mapping and node capacities (4-3)-(4-5) ---------------------------------------
    x = [[None] * P for _ in range(n)]
    for t in range(n):
        for p in range(P):
            x[t][p] = m.NewBoolVar(f"x[{t},{p}]")
            if pr.dc[t] > pr.free_cpu[p] + CAP_EPS or pr.dr[t] > pr.free_ram[p] + CAP_EPS:
                m.Add(x[t][p] == 0)
        m.AddExactlyOne(x[t])
    for p in range(P):
        m.Add(sum(math.ceil(pr.dc[t] * SCALE_CAP - 1e-6) * x[t][p] for t in range(n))
              <= math.floor((pr.free_cpu[p] + CAP_EPS) * SCALE_CAP))
        m.Add(sum(math.ceil(pr.dr[t] * SCALE_CAP - 1e-6) * x[t][p] for t in range(n))
              <= math.floor((pr.free_ram[p] + CAP_EPS) * SCALE_CAP))
    # ---- routing -------------------------------------------------------------------------
    Y: list[dict[int, object]] = []
    route_arcs: dict[int, list[tuple[int, object]]] = {}
    if pr.routing == "shortest_path":
        for v in range(V):
            s, t = pr.lsrc[v], pr.ldst[v]
            w = {(p, q): m.NewBoolVar(f"w[{v},{p},{q}]") for p in range(P) for q in range(P) if pr.routable[p, q]}
            for p in range(P):
                m.Add(sum(w[p, q] for q in range(P) if (p, q) in w) == x[s][p])
                m.Add(sum(w[q, p] for q in range(P) if (q, p) in w) == x[t][p])
            yv: dict[int, list] = {}
            for (p, q), k in w.items():
                if p != q:
                    for r in np.nonzero(pr.inc[p, q])[0]:
                        yv.setdefault(int(r), []).append(k)
            yb = {}
            for r, ks in yv.items():
                b = m.NewBoolVar(f"Y[{v},{r}]")
                m.Add(b == sum(ks))
                yb[r] = b
            Y.append(yb)
    else:
        links = pr.instance.mapping.links  # type: ignore[union-attr]
        for v in range(V):
            s, t = pr.lsrc[v], pr.ldst[v]
            f = [m.NewBoolVar(f"f[{v},{r}]") for r in range(R)]
            o = [m.NewIntVar(0, P - 1, f"o[{v},{p}]") for p in range(P)]
            for p in range(P):
                out = [f[r] for r in range(R) if links[r].src == p]
                inn = [f[r] for r in range(R) if links[r].dst == p]
                m.Add(sum(out) - sum(inn) == x[s][p] - x[t][p])
                m.Add(sum(out) <= 1)
            for r in range(R):
                m.Add(o[links[r].dst] >= o[links[r].src] + 1).OnlyEnforceIf(f[r])
            Y.append({r: f[r] for r in range(R)})
            route_arcs[v] = [(r, f[r]) for r in range(R)]
    # ---- bandwidths and link capacities (4-6), (4-7) -----------------------------------
    B = []
    B_hi: list[int] = []
    grid_err = 0.0
    for v in range(V):
        lo = math.ceil(pr.bmin[v] * SCALE_BW - 1e-6)
        hi = math.floor(pr.bmax[v] * SCALE_BW + 1e-6)
        if lo > hi:
            lo = hi = math.floor(pr.bmax[v] * SCALE_BW + 1e-6)
        B.append(m.NewIntVar(lo, hi, f"B[{v}]"))
        B_hi.append(hi)
        if pr.elastic[v]:
            grid_err = max(grid_err, (pr.bmax[v] - hi / SCALE_BW + 1.0 / SCALE_BW) / pr.spread[v])
    loads: list[list] = [[] for _ in range(R)]
    load_hi = [0] * R
    for v in range(V):
        hi = B_hi[v]
        for r, yb in Y[v].items():
            z = m.NewIntVar(0, hi, f"z[{v},{r}]")
            m.Add(z >= B[v] - hi * (1 - yb))
            if balance:
                m.Add(z <= B[v])
                m.Add(z <= hi * yb)
            loads[r].append(z)
            load_hi[r] += hi
    for r in range(R):
        if loads[r]:
            m.Add(sum(loads[r]) <= math.floor((pr.res_bw[r] + CAP_EPS) * SCALE_BW))
    # ---- objective ---------------------------------------------------------------------
    vt = pr.v_total
    obj = 0
    const = g.const
    if vt:
        dconst = pr.fixed_delta
        for v in range(V):
            if pr.elastic[v]:
                obj += (g.alpha / vt / (pr.spread[v] * SCALE_BW)) * B[v]
                dconst -= pr.bmin[v] / pr.spread[v]
            else:
                dconst += 1.0
        const += g.alpha * dconst / vt
    else:
        const += g.alpha
    tol = g.alpha * grid_err * (V / vt if vt else 0.0)
    w1, w2, w3 = pr.weights
    if balance:
        for key, wk, dem, cap, base in (("cpu", w1, pr.dc, pr.cpu, pr.base_uc), ("ram", w2, pr.dr, pr.ram, pr.base_ur)):
            if wk == 0:
                continue
            U = []
            hi_u = 0
            err = 0.0
            for p in range(P):
                c0 = round(base[p] * SCALE_U)
                coefs = [round(dem[t] / cap[p] * SCALE_U) for t in range(n)]
                err = max(err, abs(c0 - base[p] * SCALE_U) + sum(abs(c - dem[t] / cap[p] * SCALE_U)
                                                              for t, c in enumerate(coefs)))
                top = c0 + sum(coefs)
                hi_u = max(hi_u, top)
                u = m.NewIntVar(0, max(top, 0), f"U{key}[{p}]")
                m.Add(u == c0 + sum(c * x[t][p] for t, c in enumerate(coefs)))
                U.append(u)
            s = _sqrt_block(m, U, key, max(hi_u, 1))
            obj += -(g.beta * wk / (P * SCALE_U)) * s
            tol += g.beta * wk * (err / SCALE_U + 1.0 / (P * SCALE_U))
        if R and w3 > 0:
            U = []
            hi_u = 0
            rel = 0.0
            for r in range(R):
                den = max(1, round(pr.bw[r] * SCALE_BW))
                rel = max(rel, abs(pr.bw[r] * SCALE_BW - den) / (pr.bw[r] * SCALE_BW))
                c0 = round(pr.base_ub[r] * SCALE_U * den)
                top = (SCALE_U * load_hi[r] + c0) // den
                hi_u = max(hi_u, top)
                u = m.NewIntVar(0, max(top, 0), f"Ubw[{r}]")
                m.AddDivisionEquality(u, SCALE_U * sum(loads[r]) + c0 if loads[r] else c0, den)
                U.append(u)
            s = _sqrt_block(m, U, "bw", max(hi_u, 1))
            obj += -(g.beta * w3 / (R * SCALE_U)) * s
            # truncation (1 unit) + offset rounding + bandwidth rounding, the root's ceiling, the B grid
            e_bw = (1.5 + rel * SCALE_U * 2.0) / SCALE_U + 1.0 / (R * SCALE_U) + V / (SCALE_BW * float(pr.bw.min()))
            tol += g.beta * w3 * e_bw
    m.Maximize(obj)
    size = _model_size(m)
    size["scaling_tolerance"] = tol
    grid = [v * SCALE_CAP for v in list(pr.dc) + list(pr.dr)] + [v * SCALE_BW for v in pr.bmin]
    exact = all(abs(v - round(v)) <= 1e-6 for v in grid)
    return CpsatModel(m, x, route_arcs, const, tol, size, exact)


def decode_cpsat(pr: MappingProblem, cm: CpsatModel, value) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """Mapping and routes of a CP-SAT solution (``value``: literal -> 0/1)."""
    P, R = pr.P, pr.R
    xv = np.array([next(p for p in range(P) if value(cm.x[t][p])) for t in range(pr.n)], dtype=int)
    routes: list[tuple[int, ...]] = []
    links = pr.instance.mapping.links  # type: ignore[union-attr]
    for v in range(pr.V):
        a, c = int(xv[pr.lsrc[v]]), int(xv[pr.ldst[v]])
        if a == c:
            routes.append(())
        elif pr.routing == "shortest_path":
            routes.append(tuple(pr.routes[a][c]))  # type: ignore[arg-type]
        else:
            arcs = {links[r].src: r for r, f in cm.route_arcs[v] if value(f)}
            path, cur = [], a
            while cur != c and cur in arcs and len(path) < R:
                path.append(arcs[cur])
                cur = links[arcs[cur]].dst
            routes.append(tuple(path))
    return xv, routes


def solve_cpsat(pr: MappingProblem, g: Goal, *, time_limit: float | None = None, threads: int = 1,
                seed: int = 0) -> MilpOutcome:
    """Build, solve, decode; the decoded mapping's bandwidths are re-solved exactly."""
    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    cm = build_cpsat(pr, g)
    m, size, tol, const = cm.model, cm.size, cm.tol, cm.const
    w1, w2, _ = pr.weights
    solver, code, _ = run_cpsat(m, time_limit=time_limit, threads=threads, seed=seed)
    rt = time.perf_counter() - t0
    name = solver.StatusName(code)
    if code == cp_model.INFEASIBLE and not cm.exact_grid:
        return MilpOutcome("error", None, None, None, -math.inf, None, f"CP-SAT {name} on a scaled model that "
                           "restricts the real one (data off the integer grid): no proof", size, 1, rt)
    if code == cp_model.INFEASIBLE:
        return MilpOutcome("infeasible", None, None, None, -math.inf, None, f"CP-SAT {name}", size, 1, rt)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        st = "timeout" if code == cp_model.UNKNOWN else "error"
        return MilpOutcome(st, None, None, None, -math.inf, None, f"CP-SAT {name}", size, 1, rt)
    xv, routes = decode_cpsat(pr, cm, solver.Value)
    res = solve_bandwidth(pr, g, xv, routes_inc=routes_incidence(pr, routes))
    if res.b is None:  # cannot happen: CP-SAT's point is feasible for the real data
        return MilpOutcome("error", None, None, None, -math.inf, None, "decoded mapping has no feasible bandwidths",
                           size, 1, rt)
    sc, sr = pr.node_std(xv[None, :])
    value = g.const - g.beta * (w1 * float(sc[0]) + w2 * float(sr[0])) + res.value
    bound = float(solver.BestObjectiveBound()) + const + tol if cm.exact_grid else None
    status = "optimal" if code == cp_model.OPTIMAL else "feasible"
    msg = (f"CP-SAT {name} on the scaled model; exact value re-evaluated; scaling tolerance {tol:.3g}"
           + ("" if cm.exact_grid else "; data off the integer grid: no bound"))
    out = MilpOutcome(status, xv, res.b, routes, value, None if bound is None else max(bound, value), msg, size, 1, rt,
                      float(solver.ObjectiveValue()) + const)
    return out
