"""The mapping problem as one MILP (:class:`~edgebench.formulations.linear.LinearModel`),
solved through every LinearModel backend (OR-Tools SCIP / CBC / HiGHS, PuLP CBC / HiGHS,
Pyomo HiGHS), plus an outer-approximation loop that makes the standard deviations exact.

Variables (thesis numbering):

* ``x[t,p]`` binary — task node t on physical node p (X, (4-1)); ``sum_p x[t,p] = 1`` (4-3);
  ``sum_t CPU(t) x[t,p] <= cpu(p) - bg_cpu(p)`` (4-4) and RAM (4-5).
* routing (Y, (4-2)):
  - ``shortest_path``: ``w[v,p,q]`` in [0,1] — task link v's ends on (p, q); ``sum_q w[v,p,q] =
    x[src,p]``, ``sum_p w[v,p,q] = x[dst,q]`` (integral for integral x); only pairs with a
    canonical route (or p = q) exist; ``Y[v,r] = sum of w[v,p,q] over the pairs whose canonical
    route crosses r``;
  - ``free``: ``f[v,r]`` binary with flow conservation ``out(p) - in(p) = x[src,p] - x[dst,p]``
    and MTZ order variables ``o[v,p]`` (``o[v,b] >= o[v,a] + 1 - P (1 - f[v,r])`` for r = a->b)
    so that the arcs form one simple path (no detached cycles); ``Y[v,r] = f[v,r]``.
* ``B[v]`` in [BWmin, BWmax] (4-6); ``z[v,r] = B[v] Y[v,r]`` linearised (``z >= B - BWmax (1-Y)``,
  and for the balance objectives also ``z <= B``, ``z <= BWmax Y``); ``sum_v z[v,r] <=
  BW(r)`` (4-7).  A co-located link has Y = 0 everywhere, so it consumes nothing and its B is
  free: the model sets it to BWmax (delta = 1), as the decoder does.
* ``D_BW = (sum of constant deltas + sum_v (B[v] - BWmin)/(BWmax - BWmin)) / |V|`` (4-18), (4-19).
* standard deviations (4-14)-(4-16): a continuous ``s`` per resource bounded below by a
  polyhedral approximation of the second-order cone ``||U - mean|| <= sqrt(E) s`` of
  relative accuracy :func:`cone_accuracy` (:func:`add_norm_cone`; ``cone_depth=0``: the
  older, weaker bound below) or by linear *under-estimators* of the std — the mean absolute deviation ``(1/P) sum_p |U_p - mean|``
  (``e_p >= +-(U_p - mean)``; MAD <= std by Cauchy-Schwarz) and tangent planes ``s >= g.U /
  sqrt(P)`` for unit centred directions g.  With MAD alone the model optimises the **MAD
  proxy** of L, and its optimum is a valid *bound* (L_proxy <= L); the outer-approximation
  loop (:func:`solve_milp_exact`) adds the tangent at each solution until the bound and the
  best exact value meet — the exact optimum of L / the composite through a linear solver.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from edgebench.formulations.highs_model import highs_model
from edgebench.formulations.linear import LinearModel, LinearSolution, native_stdout_to_stderr, solve_linear
from edgebench.formulations.mapping_problem import CAP_EPS, Goal, MappingProblem, solve_bandwidth


@dataclass
class MilpModel:
    model: LinearModel
    x: np.ndarray  # (n, P) variable indices
    b: np.ndarray  # (V,)
    s: dict[str, int]  # "cpu" | "ram" | "bw" -> std variable (balance goals)
    U: dict[str, list[list[tuple[int, float]]]]  # resource -> per element linear terms (without constant)
    U0: dict[str, np.ndarray]  # resource -> constant part per element
    route_arcs: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # v -> [(r, f index)] (free)
    const: float = 0.0  # objective constant (outside the LinearModel)
    cuts: int = 0
    mean: dict[str, int] = field(default_factory=dict)  # resource -> mean variable
    elem_sq: dict[int, float] = field(default_factory=dict)  # variable k -> m_k with k^2 >= m_k k at integer points
    lump_cuts: int = 0
    dev: dict[str, list[int]] = field(default_factory=dict)  # resource -> deviation variables e_k >= |U_k - mean|
    z_info: dict[int, tuple[int, float, float]] = field(default_factory=dict)  # z -> (its Y variable, BWmin, BWmax)


#: default depth of the polyhedral second-order-cone approximation (rotations per 2-D cone)
CONE_DEPTH = 4
#: with a warm start, add the objective cutoff row (False: only the tangents at the incumbent)
CUTOFF = True
#: add the lumpiness cuts (:func:`add_lumpiness`) for the balance goals
LUMPINESS = True


def cone_accuracy(depth: int, elements: int) -> float:
    """Relative accuracy of :func:`add_norm_cone`: every feasible point has
    ``||d|| <= (1 + eps) * t`` with ``eps = (1 / cos(pi / 2**(depth+1)))**levels - 1``."""
    levels = max(1, math.ceil(math.log2(max(elements, 2))))
    return (1.0 / math.cos(math.pi / 2 ** (depth + 1))) ** levels - 1.0


def add_norm_cone(m: LinearModel, mags: list[int], depth: int, name: str) -> int:
    """A variable t with ``sqrt(sum_k a_k^2) <= (1 + eps) t`` for the non-negative variables
    ``mags`` (Ben-Tal & Nemirovski's polyhedral approximation of the second-order cone: a
    binary tree of 2-D cones, each by ``depth`` rotations that halve the angle of the vector
    (xi, eta)). A *relaxation*: every point with ``t >= ||a||`` extends to a feasible point
    (rotations keep the norm; the angle after ``depth`` halvings is at most pi/2**(depth+1),
    so ``eta <= tan(.) xi``); conversely ``||a|| <= xi_depth / cos(pi/2**(depth+1))``."""
    level = list(mags)
    k = 0
    while len(level) > 1:
        nxt = []
        for i in range(0, len(level) - 1, 2):
            xi, eta = level[i], level[i + 1]
            for j in range(1, depth + 1):
                th = math.pi / 2 ** (j + 1)
                c, s = math.cos(th), math.sin(th)
                xi2 = m.add_var(f"{name}_xi[{k},{j}]", 0.0, math.inf)
                eta2 = m.add_var(f"{name}_eta[{k},{j}]", 0.0, math.inf)
                m.add_eq([(xi2, 1.0), (xi, -c), (eta, -s)], 0.0, f"{name}_rot[{k},{j}]")
                m.add_ge([(eta2, 1.0), (xi, s), (eta, -c)], 0.0, f"{name}_absp[{k},{j}]")
                m.add_ge([(eta2, 1.0), (xi, -s), (eta, c)], 0.0, f"{name}_absm[{k},{j}]")
                xi, eta = xi2, eta2
            m.add_le([(eta, 1.0), (xi, -math.tan(math.pi / 2 ** (depth + 1)))], 0.0, f"{name}_tip[{k}]")
            nxt.append(xi)
            k += 1
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def build_milp(pr: MappingProblem, g: Goal, *, d_min: float | None = None,
               cone_depth: int | None = None) -> MilpModel:
    """The MILP of goal ``g`` (D_BW exact; each std through a polyhedral cone approximation of
    relative accuracy :func:`cone_accuracy` when ``cone_depth`` is set, else through its MAD
    under-estimator; tangent cuts close what is left). ``cone_depth`` None: :data:`CONE_DEPTH`;
    0: the MAD under-estimator instead of the cone."""
    cone_depth = CONE_DEPTH if cone_depth is None else int(cone_depth)
    m = LinearModel(name=f"mapping-{g.name}", sense="max")
    P, R, n, V = pr.P, pr.R, pr.n, pr.V
    balance = g.beta > 0
    x = np.empty((n, P), dtype=int)
    for t in range(n):
        for p in range(P):
            fits = pr.dc[t] <= pr.free_cpu[p] + CAP_EPS and pr.dr[t] <= pr.free_ram[p] + CAP_EPS
            x[t, p] = m.add_var(f"x[{t},{p}]", 0.0, 1.0 if fits else 0.0, True)
        m.add_eq([(x[t, p], 1.0) for p in range(P)], 1.0, f"assign[{t}]")  # (4-3)
    for p in range(P):
        m.add_le([(x[t, p], pr.dc[t]) for t in range(n)], pr.free_cpu[p] + CAP_EPS, f"cpu[{p}]")  # (4-4)
        m.add_le([(x[t, p], pr.dr[t]) for t in range(n)], pr.free_ram[p] + CAP_EPS, f"ram[{p}]")  # (4-5)

    b = np.array([m.add_var(f"B[{v}]", pr.bmin[v], pr.bmax[v]) for v in range(V)], dtype=int)  # (4-6)
    # Y[v][r] as linear terms
    Y: list[dict[int, list[tuple[int, float]]]] = []
    route_arcs: dict[int, list[tuple[int, int]]] = {}
    if pr.routing == "shortest_path":
        for v in range(V):
            s, t = pr.lsrc[v], pr.ldst[v]
            w = {}
            for p in range(P):
                for q in range(P):
                    if pr.routable[p, q]:
                        w[p, q] = m.add_var(f"w[{v},{p},{q}]", 0.0, 1.0)
            for p in range(P):
                m.add_eq([(w[p, q], 1.0) for q in range(P) if (p, q) in w] + [(x[s, p], -1.0)], 0.0,
                         f"pair_src[{v},{p}]")
                m.add_eq([(w[q, p], 1.0) for q in range(P) if (q, p) in w] + [(x[t, p], -1.0)], 0.0,
                         f"pair_dst[{v},{p}]")
            yv: dict[int, list[tuple[int, float]]] = {}
            for (p, q), k in w.items():
                if p == q:
                    continue
                for r in np.nonzero(pr.inc[p, q])[0]:
                    yv.setdefault(int(r), []).append((k, 1.0))
            # one variable per crossed link (Y = sum of its pair variables): the z rows below
            # then have 2-3 terms instead of every pair's w
            for r, terms in list(yv.items()):
                y = m.add_var(f"Y[{v},{r}]", 0.0, 1.0)
                m.add_eq([(y, 1.0)] + [(k, -c) for k, c in terms], 0.0, f"Y[{v},{r}]")
                yv[r] = [(y, 1.0)]
            Y.append(yv)
    else:
        out = [[] for _ in range(P)]
        inn = [[] for _ in range(P)]
        for r in range(R):
            lk = pr.instance.mapping.links[r]  # type: ignore[union-attr]
            out[lk.src].append(r)
            inn[lk.dst].append(r)
        for v in range(V):
            s, t = pr.lsrc[v], pr.ldst[v]
            f = [m.add_binary(f"f[{v},{r}]") for r in range(R)]
            o = [m.add_var(f"o[{v},{p}]", 0.0, float(P - 1)) for p in range(P)]
            for p in range(P):
                m.add_eq([(f[r], 1.0) for r in out[p]] + [(f[r], -1.0) for r in inn[p]]
                         + [(x[s, p], -1.0), (x[t, p], 1.0)], 0.0, f"flow[{v},{p}]")
                m.add_le([(f[r], 1.0) for r in out[p]], 1.0, f"out1[{v},{p}]")
            for r in range(R):
                lk = pr.instance.mapping.links[r]  # type: ignore[union-attr]
                # o[dst] >= o[src] + 1 - P (1 - f)
                m.add_ge([(o[lk.dst], 1.0), (o[lk.src], -1.0), (f[r], -float(P))], 1.0 - P, f"mtz[{v},{r}]")
            Y.append({r: [(f[r], 1.0)] for r in range(R)})
            route_arcs[v] = [(r, f[r]) for r in range(R)]

    # z = B * Y and the link capacities (4-7)
    load: list[list[tuple[int, float]]] = [[] for _ in range(R)]
    z_link: dict[int, int] = {}
    z_info: dict[int, tuple[int, float, float]] = {}
    for v in range(V):
        hi = pr.bmax[v]
        for r, terms in Y[v].items():
            z = m.add_var(f"z[{v},{r}]", 0.0, hi)
            z_link[z] = v
            if len(terms) == 1 and terms[0][1] == 1.0:
                z_info[z] = (terms[0][0], float(pr.bmin[v]), float(hi))
            # z >= B - hi (1 - Y)  <=>  z - B - hi*Y >= -hi
            m.add_ge([(z, 1.0), (b[v], -1.0)] + [(k, -hi * c) for k, c in terms], -hi, f"zlo[{v},{r}]")
            if balance:  # the rest of the McCormick envelope of z = B*Y, B in [lo, hi], Y in [0, 1]
                lo = pr.bmin[v]
                # z <= B - lo (1 - Y)  <=>  z - B - lo*Y <= -lo
                m.add_le([(z, 1.0), (b[v], -1.0)] + [(k, -lo * c) for k, c in terms], -lo, f"zb[{v},{r}]")
                m.add_le([(z, 1.0)] + [(k, -hi * c) for k, c in terms], 0.0, f"zy[{v},{r}]")
                if lo > 0:
                    m.add_ge([(z, 1.0)] + [(k, -lo * c) for k, c in terms], 0.0, f"zl[{v},{r}]")
            load[r].append((z, 1.0))
    for r in range(R):
        if load[r]:
            m.add_le(load[r], pr.res_bw[r] + CAP_EPS, f"bw[{r}]")

    # D_BW (4-18), (4-19)
    vt = pr.v_total
    d_terms: list[tuple[int, float]] = []
    d_const = pr.fixed_delta
    for v in range(V):
        if pr.elastic[v]:
            d_terms.append((b[v], 1.0 / (vt * pr.spread[v])))
            d_const -= pr.bmin[v] / pr.spread[v]
        else:
            d_const += 1.0
    d_const = d_const / vt if vt else 1.0
    if d_min is not None and vt:
        m.add_ge(d_terms, d_min - d_const - 1e-12, "d_min")

    # standard deviations: MAD under-estimator
    s_idx: dict[str, int] = {}
    U: dict[str, list[list[tuple[int, float]]]] = {}
    U0: dict[str, np.ndarray] = {}
    obj: list[tuple[int, float]] = [(k, g.alpha * c) for k, c in d_terms]
    const = g.const + g.alpha * d_const
    mean_idx: dict[str, int] = {}
    dev_idx: dict[str, list[int]] = {}
    elem_sq: dict[int, float] = {}
    if balance:
        # k^2 >= m_k k at every integer point: x binary (m = 1); z[v,r] = B[v] Y[v,r] with Y in {0, 1}
        # and B >= BWmin (z = 0 or z >= BWmin: m = BWmin)
        for k in x.ravel():
            elem_sq[int(k)] = 1.0
        for r in range(R):
            for z, _ in load[r]:
                elem_sq[int(z)] = float(pr.bmin[z_link[z]])
        U["cpu"] = [[(x[t, p], pr.dc[t] / pr.cpu[p]) for t in range(n)] for p in range(P)]
        U0["cpu"] = pr.base_uc.copy()
        U["ram"] = [[(x[t, p], pr.dr[t] / pr.ram[p]) for t in range(n)] for p in range(P)]
        U0["ram"] = pr.base_ur.copy()
        if R:
            U["bw"] = [[(z, 1.0 / pr.bw[r]) for z, _ in load[r]] for r in range(R)]
            U0["bw"] = pr.base_ub.copy()
        for key, wk in zip(("cpu", "ram", "bw"), pr.weights):
            if key not in U:
                continue
            terms, base = U[key], U0[key]
            E = len(terms)
            s = m.add_var(f"std_{key}", 0.0, math.inf)
            s_idx[key] = s
            obj.append((s, -g.beta * wk))
            # mean = (sum base + sum terms) / E as one variable; e_k >= +-(U_k - mean)
            mean_terms: dict[int, float] = {}
            for row in terms:
                for k, c in row:
                    mean_terms[k] = mean_terms.get(k, 0.0) + c / E
            mu = m.add_var(f"mean_{key}", -math.inf, math.inf)
            mean_idx[key] = mu
            dev_idx[key] = es = []
            m.add_eq([(mu, 1.0)] + [(k, -c) for k, c in mean_terms.items()], float(base.sum()) / E, f"mean_{key}")
            for e_i, row in enumerate(terms):
                e = m.add_var(f"dev_{key}[{e_i}]", 0.0, math.inf)
                es.append(e)
                # e >= row + base - mu ; e >= -(row + base - mu)
                m.add_ge([(e, 1.0), (mu, 1.0)] + [(k, -c) for k, c in row], float(base[e_i]), f"devp_{key}[{e_i}]")
                m.add_ge([(e, 1.0), (mu, -1.0)] + [(k, c) for k, c in row], -float(base[e_i]), f"devm_{key}[{e_i}]")
            if cone_depth:
                # ||U - mean|| <= (1 + eps) * sqrt(E) * s, the deviations e_k >= |U_k - mean| as leaves
                root = add_norm_cone(m, es, int(cone_depth), f"cone_{key}")
                m.add_le([(root, 1.0), (s, -math.sqrt(E))], 0.0, f"cone_root_{key}")
            else:
                m.add_ge([(s, 1.0)] + [(e, -1.0 / E) for e in es], 0.0, f"mad_{key}")
    # The constant is kept outside the model (some backends report a best bound without the
    # objective offset); solve_milp adds it back to objective and bound.
    m.set_objective(obj, constant=0.0, sense="max")
    mm = MilpModel(model=m, x=x, b=b, s=s_idx, U=U, U0=U0, route_arcs=route_arcs, const=const, mean=mean_idx,
                   elem_sq=elem_sq, dev=dev_idx, z_info=z_info)
    return mm


def add_tangent(mm: MilpModel, key: str, util: np.ndarray) -> bool:
    """Cut ``s_key >= g.U / sqrt(E)`` at the utilisation vector ``util`` (g = its centred unit
    direction). Valid for every solution: ||U - mean|| >= g.(U - mean) = g.U."""
    if key not in mm.s:
        return False
    dv = util - util.mean()
    nrm = float(np.linalg.norm(dv))
    if nrm <= 1e-12:
        return False
    gdir = dv / nrm
    E = len(util)
    coef: dict[int, float] = {}
    for e_i, row in enumerate(mm.U[key]):
        for k, c in row:
            coef[k] = coef.get(k, 0.0) + gdir[e_i] * c / math.sqrt(E)
    rhs = float(gdir @ mm.U0[key]) / math.sqrt(E)
    terms = [(mm.s[key], 1.0)]
    for k, c in coef.items():
        if abs(c) > 1e-12:
            terms.append((k, -c))
        elif c > 0:  # dropping -c*x_k (x_k in [lb, ub]) must not cut off points: relax the rhs
            rhs -= c * max(mm.model.ub[k], 0.0) if math.isfinite(mm.model.ub[k]) else 0.0
        else:
            rhs -= -c * max(-mm.model.lb[k], 0.0) if math.isfinite(mm.model.lb[k]) else 0.0
    mm.model.add_ge(terms, rhs, f"tangent_{key}[{mm.cuts}]")
    mm.cuts += 1
    return True


def _lp_extremes(model: LinearModel, cols: list[int], time_limit: float | None = None,
                 objective: bool = False) -> dict:
    """Smallest and largest value of each variable in ``cols`` over the LP relaxation of
    ``model`` (highspy, one thread): bounds that every integer point of the model obeys.
    A column whose LP is not solved to optimality gets (-inf, inf). With ``objective``, key
    "objective" first holds the LP optimum of the model's objective (None when the LP is
    infeasible: then nothing else is computed)."""
    import highspy

    limit = {} if time_limit is None else {"time_limit": max(0.05, float(time_limit))}
    with highs_model(**limit) as h:  # freed on return, not at a garbage collection (issue 46)
        inf = highspy.kHighsInf
        lp = highspy.HighsLp()
        n = model.num_vars
        lp.num_col_, lp.num_row_ = n, len(model.rows)
        lp.col_cost_ = np.zeros(n)
        lp.col_lower_ = np.array([v if math.isfinite(v) else -inf for v in model.lb])
        lp.col_upper_ = np.array([v if math.isfinite(v) else inf for v in model.ub])
        lp.row_lower_ = np.array([v if math.isfinite(v) else -inf for v in model.row_lo])
        lp.row_upper_ = np.array([v if math.isfinite(v) else inf for v in model.row_hi])
        starts, idx, val = [0], [], []
        for ii, vv in model.rows:
            idx += ii
            val += vv
            starts.append(len(idx))
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = starts, idx, val
        with native_stdout_to_stderr():
            h.passModel(lp)
        out: dict = {}
        if objective:  # the LP maximum of the model's objective (None: LP infeasible; inf: not solved)
            obj_idx = np.array(sorted(model.obj), dtype=np.int32)
            sgn = -1.0 if model.sense == "max" else 1.0
            h.changeColsCost(len(obj_idx), obj_idx, np.array([sgn * model.obj[int(k)] for k in obj_idx]))
            with native_stdout_to_stderr():
                h.run()
            st = h.getModelStatus()
            if st == highspy.HighsModelStatus.kInfeasible:
                out["objective"] = None
            elif st == highspy.HighsModelStatus.kOptimal:
                out["objective"] = sgn * h.getInfo().objective_function_value + model.obj_const
            else:
                out["objective"] = math.inf if model.sense == "max" else -math.inf
            h.changeColsCost(len(obj_idx), obj_idx, np.zeros(len(obj_idx)))
            if out["objective"] is None:
                return out
        for k in cols:
            ext = []
            for sgn in (1.0, -1.0):  # minimise k, then minimise -k
                h.changeColsCost(1, np.array([k], dtype=np.int32), np.array([sgn]))
                with native_stdout_to_stderr():
                    h.run()
                ok = h.getModelStatus() == highspy.HighsModelStatus.kOptimal
                ext.append(h.getSolution().col_value[k] if ok else (-math.inf if sgn > 0 else math.inf))
                h.changeColsCost(1, np.array([k], dtype=np.int32), np.array([0.0]))
            out[k] = (float(ext[0]), float(ext[1]))
        return out


#: which lumpiness cuts :func:`add_lumpiness` adds: per-element deviation cuts (strong) and the
#: sum-of-squares cut per std (valid but weak through the chord of the square root: off)
LUMP_LEAVES = True
LUMP_SQUARES = False


def _leaf_terms(mm: MilpModel, row: list[tuple[int, float]], d: float) -> tuple[list[tuple[int, float]], bool]:
    """Linear terms phi with ``|d + sum_k c_k v_k| >= |d| + phi(v)`` at every integer point of
    the model (mapping.md, "Lumpiness cuts"): g(u) = |d + u| is convex, so for non-negative
    u_k, g(sum u_k) - g(0) >= sum_k (g(u_k) - g(0)); a binary x_k contributes
    (g(c_k) - g(0)) x_k; z = B*Y (z = 0 when Y = 0, z in [lo, hi] when Y = 1) contributes a
    line in (z, Y) below g(c z) - g(0) on that set (exact where g is linear on [c lo, c hi],
    else -g(0) Y). False when a term is of another kind (no cut)."""
    g0 = abs(d)
    out: list[tuple[int, float]] = []
    for k, c in row:
        if c < 0:
            return [], False
        if mm.model.integer[k] and mm.model.lb[k] >= 0 and mm.model.ub[k] <= 1:  # binary x
            out.append((k, abs(d + c) - g0))
        elif k in mm.z_info:
            y, lo, hi = mm.z_info[k]
            ulo, uhi, kink = c * lo, c * hi, -d
            if kink <= ulo or kink >= uhi:
                sl = 1.0 if kink <= ulo else -1.0  # slope of g on [ulo, uhi]
                out.append((k, sl * c))
                out.append((y, abs(d + ulo) - sl * ulo - g0))
            else:
                out.append((y, -g0))
        else:
            return [], False
    return out, True


def add_lumpiness(mm: MilpModel, pr: MappingProblem, g: Goal, incumbent: float | None = None,
                  time_limit: float | None = None) -> int:
    """Lumpiness cuts (mapping.md, "Lumpiness cuts"), valid at every integer point of the model
    (and, with an ``incumbent``, at every one the objective cutoff keeps). The mean of each
    resource lies in [ml, mh] (its LP extremes). Per element e (node or link), with
    U_e = U0_e + sum_k c_ek v_k:

    * leaves (:data:`LUMP_LEAVES`): |U_e - mean| >= |U_e - c| - |mean - c| and |mean - c| is
      linear for c = ml (mean - ml) and c = mh (mh - mean); |U_e - c| >= |U0_e - c| + phi(v)
      by convexity (:func:`_leaf_terms`), so ``e_e >= |U0_e - c| + phi(v) -+ (mean - c)``.
      Unlike the convex |U_e - mean| itself these do not vanish when fractional x spreads
      the load;
    * squares (:data:`LUMP_SQUARES`): sum_e U_e^2 >= sum_e U0_e^2 + sum_k (sum_e c_ek^2 m_k +
      2 c_ek U0_e) v_k (cross terms >= 0, v_k^2 >= m_k v_k: x binary m = 1, z m = BWmin);
      E std^2 = sum U_e^2 - E mean^2, mean^2 <= (ml + mh) mean - ml mh, std^2 <= sh std for
      std in [0, sh] (sh from the cutoff, else half the utilisation range).

    Returns the number of rows added."""
    keys = [k for k in mm.s if k in mm.mean]
    if not keys or not (LUMP_LEAVES or LUMP_SQUARES):
        return 0
    rng = _lp_extremes(mm.model, [mm.mean[k] for k in keys], time_limit)
    added = 0
    for key in keys:
        terms, base = mm.U[key], mm.U0[key]
        E = len(terms)
        ml, mh = rng[mm.mean[key]]
        if not (math.isfinite(ml) and math.isfinite(mh)):
            continue
        ml, mh = ml - 1e-9, mh + 1e-9  # LP tolerance
        if LUMP_LEAVES:
            for e, row in enumerate(terms):
                for c, sg in ((ml, 1.0), (mh, -1.0)):
                    d = float(base[e]) - c
                    phi, ok = _leaf_terms(mm, row, d)
                    if not ok or not any(abs(v) > 1e-12 for _, v in phi):
                        continue
                    # e + sg*mean - phi(v) >= |d| + sg*c
                    mm.model.add_ge([(mm.dev[key][e], 1.0), (mm.mean[key], sg)] + [(k, -v) for k, v in phi],
                                    abs(d) + sg * c - 1e-9, f"lump_{key}[{e},{int(sg)}]")
                    mm.lump_cuts += 1
                    added += 1
        if LUMP_SQUARES:
            wk = pr.weights[("cpu", "ram", "bw").index(key)]
            if incumbent is not None and g.beta > 0 and wk > 0:
                sh = (g.const + g.alpha - incumbent) / (g.beta * wk)
            else:
                cap = {"cpu": pr.free_cpu / pr.cpu, "ram": pr.free_ram / pr.ram}.get(key)
                if cap is None:
                    cap = pr.res_bw / pr.bw
                sh = 0.5 * (float((base + np.maximum(cap, 0.0)).max()) - float(base.min()))
            if sh <= 0:
                continue
            coef: dict[int, float] = {}
            ok = True
            for e, row in enumerate(terms):
                for k, c in row:
                    if c < 0 or mm.model.lb[k] < 0:
                        ok = False
                    coef[k] = coef.get(k, 0.0) + c * c * mm.elem_sq.get(k, 0.0) + 2.0 * c * float(base[e])
            if not ok:
                continue
            row = [(mm.s[key], E * sh), (mm.mean[key], E * (ml + mh))] + [(k, -c) for k, c in coef.items() if c]
            mm.model.add_ge(row, float((base * base).sum()) + E * ml * mh - 1e-9, f"lump_sq_{key}")
            mm.lump_cuts += 1
            added += 1
    return added


def point_utilisations(pr: MappingProblem, x: np.ndarray, b: np.ndarray, routes_inc: np.ndarray) -> dict[str, np.ndarray]:
    """Exact utilisation vectors (cpu, ram, bw) of a complete mapping x with bandwidths b on
    the routes ``routes_inc`` (V, R); co-located links carry nothing."""
    lc, lr = pr.loads(np.asarray(x, dtype=np.intp)[None, :])
    out = {"cpu": pr.base_uc + lc[0] / pr.cpu, "ram": pr.base_ur + lr[0] / pr.ram}
    if pr.R:
        out["bw"] = pr.base_ub + (np.asarray(b, dtype=float)[:, None] * routes_inc).sum(axis=0) / pr.bw
    return out


def decode_x(pr: MappingProblem, mm: MilpModel, values: np.ndarray) -> np.ndarray:
    return np.argmax(values[mm.x], axis=1).astype(int)


def decode_routes(pr: MappingProblem, mm: MilpModel, x: np.ndarray, values: np.ndarray) -> list[tuple[int, ...]]:
    """Routes of the task links: canonical (shortest_path) or the path of the flow arcs (free)."""
    routes: list[tuple[int, ...]] = []
    links = pr.instance.mapping.links  # type: ignore[union-attr]
    for v in range(pr.V):
        a, c = int(x[pr.lsrc[v]]), int(x[pr.ldst[v]])
        if a == c:
            routes.append(())
        elif pr.routing == "shortest_path":
            routes.append(tuple(pr.routes[a][c]))  # type: ignore[arg-type]
        else:
            arcs = {links[r].src: r for r, k in mm.route_arcs[v] if values[k] > 0.5}
            path, cur, seen = [], a, {a}
            while cur != c and cur in arcs:
                r = arcs[cur]
                path.append(r)
                cur = links[r].dst
                if cur in seen:
                    break
                seen.add(cur)
            routes.append(tuple(path))
    return routes


def routes_incidence(pr: MappingProblem, routes: list[tuple[int, ...]]) -> np.ndarray:
    inc = np.zeros((pr.V, pr.R))
    for v, rt in enumerate(routes):
        if rt:
            inc[v, list(rt)] = 1.0
    return inc


@dataclass
class MilpOutcome:
    status: str  # optimal | feasible | infeasible | timeout | error
    x: np.ndarray | None
    b: np.ndarray | None
    routes: list[tuple[int, ...]] | None
    value: float  # exact internal value of (x, b)
    bound: float | None  # proven upper bound of the internal value
    message: str
    size: dict
    rounds: int = 0
    solver_runtime: float = 0.0
    proxy_value: float | None = None


def _exact_value(pr: MappingProblem, g: Goal, x: np.ndarray, routes: list[tuple[int, ...]]):
    """Best bandwidths for (x, routes) and the exact value of the goal."""
    inc = routes_incidence(pr, routes)
    res = solve_bandwidth(pr, g, x, routes_inc=inc)
    if res.b is None:
        return None, -math.inf, 0.0
    sc, sr = pr.node_std(x[None, :])
    node = g.const - g.beta * (pr.weights[0] * float(sc[0]) + pr.weights[1] * float(sr[0]))
    return res.b, node + res.value, max(res.bound - res.value, 0.0)


def solve_milp(pr: MappingProblem, g: Goal, backend: str, *, time_limit: float | None = None, threads: int = 1,
               seed: int = 0, exact: bool = True, max_rounds: int = 200, tol: float = 1e-7,
               d_min: float | None = None, cone_depth: int | None = None,
               incumbent: np.ndarray | None = None) -> MilpOutcome:
    """Solve through ``backend``. For the balance goals (composite, L) with ``exact`` the
    outer-approximation loop adds tangent cuts until bound - value <= tol (absolute), else
    one MILP of the proxy (cone or MAD under-estimators of the stds) is solved; the returned
    (x, b) is always re-evaluated exactly (bandwidths re-optimised for the mapping) and
    ``bound`` is a proven bound of the exact problem (the proxy under-estimates L).

    ``incumbent`` (a mapping, shortest-path routing) warm-starts the outer approximation: its
    exact value is the first incumbent, tangents at its utilisations are added before the
    first MILP, and every MILP gets the *objective cutoff* ``objective >= incumbent + tol/2``.
    A MILP that is then infeasible proves that no mapping beats the incumbent by tol/2."""
    t0 = time.perf_counter()
    mm = build_milp(pr, g, d_min=d_min, cone_depth=cone_depth)
    gg = g.with_d_min(d_min)
    best = (None, None, None, -math.inf)
    bound = math.inf
    rounds = 0
    solver_rt = 0.0
    msg = ""
    last: LinearSolution | None = None
    proxy_value = None
    balance = g.beta > 0
    cutoff = None  # row index of the objective cutoff
    seen: set = set()
    if incumbent is not None and pr.routing == "shortest_path" and exact and balance:
        x0 = np.asarray(incumbent, dtype=int)
        if pr.fits(x0[None])[0] and pr.routable_all(x0[None])[0]:
            routes0 = [() if x0[pr.lsrc[v]] == x0[pr.ldst[v]] else tuple(pr.routes[x0[pr.lsrc[v]]][x0[pr.ldst[v]]])
                       for v in range(pr.V)]
            bb0, val0, _ = _exact_value(pr, gg, x0, routes0)
            if bb0 is not None:
                best = (x0, bb0, routes0, val0)
                util = point_utilisations(pr, x0, bb0, routes_incidence(pr, routes0))
                for key in mm.s:
                    add_tangent(mm, key, util[key])
                if CUTOFF:
                    cutoff = mm.model.add_ge(list(mm.model.obj.items()), -math.inf, "objective_cutoff")
    lp_bound = math.inf  # the root LP's bound: kept when no MILP reports one (a time limit before any point)
    closed = False
    if balance and LUMPINESS:
        if cutoff is not None:
            mm.model.row_lo[cutoff] = best[3] - mm.const + tol / 2
        share = None if time_limit is None else max(0.05, 0.05 * time_limit)
        add_lumpiness(mm, pr, g, best[3] if cutoff is not None else None, share)
        root = _lp_extremes(mm.model, [], share, objective=True)
        if root["objective"] is None:
            if cutoff is not None:  # even the LP relaxation has no point above the incumbent
                bound = best[3] + tol / 2
                closed = True
                msg = "closed by the objective cutoff (LP relaxation infeasible)"
            # without a cutoff an infeasible LP is left to the MILP to report
        elif math.isfinite(root["objective"]):
            lp_bound = root["objective"] + mm.const
    while not closed:
        left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        if left is not None and left <= 0.05:
            msg = msg or "time limit"
            break
        if cutoff is not None:
            mm.model.row_lo[cutoff] = best[3] - mm.const + tol / 2
        sol = solve_linear(mm.model, backend, time_limit=left, threads=threads, seed=seed, mip_gap=1e-9)
        rounds += 1
        solver_rt += sol.runtime
        last = sol
        msg = sol.message
        if cutoff is not None and sol.status == "infeasible":
            # no mapping reaches incumbent + tol/2 in the relaxation: the incumbent is optimal
            bound = min(bound, best[3] + tol / 2)
            msg = "outer approximation closed by the objective cutoff (MILP infeasible)"
            last = LinearSolution("optimal", None, None, None, sol.runtime, backend, msg)
            break
        if sol.status in ("infeasible", "error"):
            if best[0] is None:
                return MilpOutcome(sol.status, None, None, None, -math.inf, None, sol.message, mm.model.size(),
                                   rounds, solver_rt)
            break
        if sol.values is None:
            if sol.bound is not None and math.isfinite(sol.bound):  # a bound without a point (Pyomo-HiGHS)
                rb = float(sol.bound) + mm.const
                bound = min(bound, rb if cutoff is None else max(rb, best[3] + tol / 2))
            break
        if proxy_value is None and sol.objective is not None:
            proxy_value = sol.objective + mm.const
        if sol.bound is not None and math.isfinite(sol.bound):
            # every round's relaxation over-estimates the exact value; with a cutoff, the points
            # it excludes are below incumbent + tol/2
            rb = float(sol.bound) + mm.const
            bound = min(bound, rb if cutoff is None else max(rb, best[3] + tol / 2))
        x = decode_x(pr, mm, sol.values)
        routes = decode_routes(pr, mm, x, sol.values)
        bb, val, gap = _exact_value(pr, gg, x, routes)
        if bb is not None and val > best[3]:
            best = (x, bb, routes, val)
        if not (exact and balance) or sol.status != "optimal":
            break
        if bound - best[3] <= tol or rounds >= max_rounds:
            break
        point = (tuple(int(v) for v in x), tuple(np.round(sol.values[mm.b], 9)))
        if point in seen:  # the same point again: its tangents are in; only solver tolerance is left
            msg = f"{msg}; outer approximation stalled (same point twice)"
            break
        seen.add(point)
        # tangent cuts at this solution (exact utilisations of the MILP point)
        added = False
        vals = sol.values
        for key in mm.s:
            util = mm.U0[key] + np.array([sum(c * vals[k] for k, c in row) for row in mm.U[key]])
            added |= add_tangent(mm, key, util)
        if not added:
            break
    if math.isfinite(lp_bound):
        # the root LP's bound (with the cutoff it bounds every point the cutoff keeps); it is the
        # only one when pywraplp gives none (a time limit before the MILP found a point of its own)
        lpb = lp_bound if cutoff is None else max(lp_bound, best[3] + tol / 2)
        if not math.isfinite(bound):
            msg = f"{msg}; bound from the root LP relaxation"
        bound = min(bound, lpb)
    x, bb, routes, val = best
    size = mm.model.size()
    size["tangent_cuts"] = mm.cuts
    size["lumpiness_cuts"] = mm.lump_cuts
    if x is None:
        st = "timeout" if last is None or last.status in ("timeout", "feasible", "optimal") else last.status
        return MilpOutcome(st, None, None, None, -math.inf, None if not math.isfinite(bound) else bound, msg, size,
                           rounds, solver_rt, proxy_value)
    fin_bound = bound if math.isfinite(bound) else None
    if fin_bound is not None:
        fin_bound = max(fin_bound, val)
    optimal = fin_bound is not None and fin_bound - val <= tol and (last is not None or closed)
    status = "optimal" if optimal else "feasible"
    return MilpOutcome(status, x, bb, routes, val, fin_bound, msg, size, rounds, solver_rt, proxy_value)
