"""The data every exact mapping model shares: one :class:`MappingProblem` built from an
instance (the jobs to place, optionally beside jobs already placed), the objective
:class:`Goal`, the exact objective of complete mappings (vectorised), the exact bandwidth
sub-problem of a fixed mapping, and decoding to :class:`~edgebench.solution.MappingDecisions`.

Objective (thesis (4-8)-(4-19), as the referee computes it, ``docs/referee.md``)::

    U_cpu(p) = (load_cpu(p) + bg_cpu(p) [include_background]) / cpu(p)      (4-8)
    U_ram(p) likewise                                                       (4-9)
    U_bw(r)  = load_bw(r) / BW(r)                                           (4-10)
    L = w1 std_p U_cpu + w2 std_p U_ram + w3 std_r U_bw   (population std over ALL nodes / links)
    delta(v) = 1 if co-located or BWmax = BWmin else (B - BWmin) / (BWmax - BWmin)
    D_BW = mean_v delta(v) (1 without task links);  composite = 0.5 (1 - L) + 0.5 D_BW

Every model maximises ``const + alpha * D_BW - beta * L`` (a :class:`Goal`), optionally with
``D_BW >= d_min`` (the epsilon-constraint of the Pareto front).

With the node mapping fixed, std_cpu, std_ram and which task links are co-located are fixed;
what is left is the *bandwidth sub-problem*: ``max alpha D(B) - beta w3 ||M u(B)|| / sqrt(|R|)``
over the box ``BWmin <= B <= BWmax`` and the link capacities (4-7), where ``M`` centres a
vector. It is concave (linear minus a norm of an affine map), solved here by Kelley's cutting
planes on the norm with HiGHS LPs: every LP value is an upper bound, every LP point a feasible
bandwidth vector, and the loop stops when they meet within ``tol`` — an exact solution with
a proven gap, no grid over the bandwidths.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from edgebench.errors import InputError
from edgebench.formulations.highs_model import highs_model
from edgebench.instances import semantics
from edgebench.instances.model import Instance
from edgebench.solution import JobDecision, LinkDecision, MappingDecisions

#: absolute tolerance of the exact bandwidth sub-problem (objective units)
BW_TOL = 1e-9
#: slack of the capacity checks (the referee allows 1e-6 absolute + 1e-6 relative)
CAP_EPS = 1e-9


#: the dense [P, P, R] route incidence of the exact models is refused beyond this many
#: entries (160 MB; issue 28)
EXACT_MAX_CELLS = 20_000_000


@dataclass(frozen=True)
class Goal:
    """Maximise ``const + alpha * D_BW - beta * L`` subject to ``D_BW >= d_min`` (if set).

    ``composite``: 0.5 + 0.5 D_BW - 0.5 L (the thesis's score); ``dbw``: D_BW; ``L``: -L
    (reported as L, minimised)."""

    name: str
    const: float
    alpha: float
    beta: float
    d_min: float | None = None

    @property
    def sense(self) -> str:
        return "min" if self.name == "L" else "max"

    def report(self, value: float) -> float:
        """Internal (maximised) value -> the objective as reported (L is minimised)."""
        return -value if self.name == "L" else value

    def internal(self, value: float) -> float:
        return -value if self.name == "L" else value

    def with_d_min(self, d_min: float | None) -> "Goal":
        return Goal(self.name, self.const, self.alpha, self.beta, d_min)


GOALS = {
    "composite": Goal("composite", 0.5, 0.5, 0.5),
    "dbw": Goal("dbw", 0.0, 1.0, 0.0),
    "L": Goal("L", 0.0, 0.0, 1.0),
}


def goal(name: str) -> Goal:
    try:
        return GOALS[name]
    except KeyError:
        raise InputError(f"unknown objective {name!r} (known: {', '.join(GOALS)})", field="objective") from None


@dataclass
class MappingProblem:
    """Flattened data of the jobs being placed (all simultaneously active) on the network.

    Task nodes and task links of the placed jobs are numbered globally in job order; loads of
    jobs given as ``fixed`` (already placed) are folded into the base utilisations and the
    residual capacities, their delta values into the D_BW constant."""

    instance: Instance
    jobs: tuple[int, ...]
    fixed: dict[int, JobDecision]
    P: int
    R: int
    cpu: np.ndarray
    ram: np.ndarray
    free_cpu: np.ndarray  # capacity left beside background and fixed jobs
    free_ram: np.ndarray
    base_uc: np.ndarray  # utilisation before the placed jobs
    base_ur: np.ndarray
    bw: np.ndarray
    res_bw: np.ndarray  # bandwidth left beside fixed jobs
    base_ub: np.ndarray  # link utilisation of fixed jobs
    n: int
    dc: np.ndarray  # task demands
    dr: np.ndarray
    task_job: np.ndarray
    task_local: np.ndarray
    V: int
    lsrc: np.ndarray
    ldst: np.ndarray
    bmin: np.ndarray
    bmax: np.ndarray
    link_job: np.ndarray
    link_local: np.ndarray
    fixed_links: int
    fixed_delta: float
    weights: tuple[float, float, float]
    routing: str
    routes: list[list[tuple[int, ...] | None]]
    inc: np.ndarray  # (P, P, R) 0/1: link r on the canonical route p -> q
    routable: np.ndarray  # (P, P) bool: p == q or a route exists
    hops: np.ndarray  # (P, P) route lengths (0 on the diagonal, -1 unroutable)
    _cache: dict = field(default_factory=dict, repr=False)

    # ---- derived -------------------------------------------------------------------
    @property
    def v_total(self) -> int:
        """Task links counted by D_BW (placed + fixed jobs)."""
        return self.V + self.fixed_links

    @property
    def spread(self) -> np.ndarray:
        """BWmax - BWmin per task link."""
        return self.bmax - self.bmin

    @property
    def elastic(self) -> np.ndarray:
        """Task links whose delta depends on the bandwidth (BWmax > BWmin)."""
        return self.bmax > self.bmin

    def fits(self, x: np.ndarray) -> np.ndarray:
        """CPU / RAM capacity (4-4), (4-5) of complete mappings x (K, n) -> (K,) bool."""
        lc, lr = self.loads(x)
        return (lc <= self.free_cpu + CAP_EPS).all(axis=1) & (lr <= self.free_ram + CAP_EPS).all(axis=1)

    def loads(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = np.atleast_2d(x)
        K = x.shape[0]
        lc = np.zeros((K, self.P))
        lr = np.zeros((K, self.P))
        rows = np.arange(K)
        for t in range(self.n):
            np.add.at(lc, (rows, x[:, t]), self.dc[t])
            np.add.at(lr, (rows, x[:, t]), self.dr[t])
        return lc, lr

    def node_std(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(std U_cpu, std U_ram) of complete mappings x (K, n)."""
        lc, lr = self.loads(x)
        return _pstd(self.base_uc + lc / self.cpu), _pstd(self.base_ur + lr / self.ram)

    def link_inc(self, x: np.ndarray) -> np.ndarray:
        """(K, V, R) 0/1: task link v crosses physical link r (canonical routes); co-located
        links cross nothing. Unroutable pairs give a zero row (check :meth:`routable_all`)."""
        x = np.atleast_2d(x)
        return self.inc[x[:, self.lsrc], x[:, self.ldst]]

    def routable_all(self, x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(x)
        if self.V == 0:
            return np.ones(x.shape[0], dtype=bool)
        return self.routable[x[:, self.lsrc], x[:, self.ldst]].all(axis=1)

    def colocated(self, x: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(x)
        return x[:, self.lsrc] == x[:, self.ldst]

    def evaluate(self, x: Sequence[int], b: Sequence[float]) -> dict[str, float]:
        """Exact objectives of one complete mapping and bandwidth vector (co-located links'
        bandwidths are ignored: delta = 1). Mirrors the referee for all-active jobs."""
        x = np.asarray(x, dtype=np.intp)[None, :]
        b = np.asarray(b, dtype=float)
        sc, sr = self.node_std(x)
        inc = self.link_inc(x)[0]  # (V, R)
        col = self.colocated(x)[0]
        u = self.base_ub + (b[:, None] * inc).sum(axis=0) / self.bw if self.R else np.zeros(0)
        sb = float(_pstd(u[None, :])[0]) if self.R else 0.0
        delta = np.where(col | ~self.elastic, 1.0,
                         np.clip((b - self.bmin) / np.where(self.elastic, self.spread, 1.0), 0.0, 1.0))
        d = (self.fixed_delta + float(delta.sum())) / self.v_total if self.v_total else 1.0
        w1, w2, w3 = self.weights
        L = w1 * float(sc[0]) + w2 * float(sr[0]) + w3 * sb
        return {"composite": 0.5 * (1.0 - L) + 0.5 * d, "L": L, "D_BW": d, "std_cpu": float(sc[0]),
                "std_ram": float(sr[0]), "std_bw": sb}

    def value(self, g: Goal, x: Sequence[int], b: Sequence[float]) -> float:
        """Internal (maximised) value of the goal."""
        o = self.evaluate(x, b)
        return g.const + g.alpha * o["D_BW"] - g.beta * o["L"]

    def link_capacity_ok(self, x: Sequence[int], b: Sequence[float]) -> bool:
        x = np.asarray(x, dtype=np.intp)[None, :]
        if not self.R or not self.V:
            return True
        load = (np.asarray(b, dtype=float)[:, None] * self.link_inc(x)[0]).sum(axis=0)
        return bool((load <= self.res_bw + CAP_EPS * (1 + self.bw)).all())


def _pstd(u: np.ndarray) -> np.ndarray:
    if u.shape[-1] == 0:
        return np.zeros(u.shape[:-1])
    d = u - u.mean(axis=-1, keepdims=True)
    return np.sqrt((d * d).mean(axis=-1))


def build_problem(instance: Instance, jobs: Sequence[int] | None = None,
                  fixed: Mapping[int, JobDecision] | None = None) -> MappingProblem:
    """The problem of placing ``jobs`` (default: every job of the instance) together, all
    simultaneously active, beside the already placed ``fixed`` jobs (job index -> decision,
    taken as given: their loads occupy capacity and count in the utilisations)."""
    if instance.family != "mapping" or instance.mapping is None:
        raise InputError(f"the exact mapping model needs a mapping instance, got {instance.family!r}",
                         field="family")
    m = instance.mapping
    J = len(m.jobs)
    jobs = tuple(range(J)) if jobs is None else tuple(int(j) for j in jobs)
    fixed = {int(k): v for k, v in (fixed or {}).items()}
    for j in list(jobs) + list(fixed):
        if not 0 <= j < J:
            raise InputError(f"job {j} does not exist ({J} jobs)", field="jobs")
    if set(jobs) & set(fixed):
        raise InputError("a job cannot be both placed and fixed", field="jobs")
    if len(set(jobs)) != len(jobs):
        raise InputError("a job is listed twice", field="jobs")
    P, R = len(m.nodes), len(m.links)
    cpu = np.array([nd.cpu for nd in m.nodes], dtype=float)
    ram = np.array([nd.ram for nd in m.nodes], dtype=float)
    bg_c = np.array([nd.bg_cpu for nd in m.nodes], dtype=float)
    bg_r = np.array([nd.bg_ram for nd in m.nodes], dtype=float)
    bw = np.array([lk.bandwidth for lk in m.links], dtype=float)
    if P * P * R > EXACT_MAX_CELLS:
        raise InputError(f"the exact mapping model's route incidence needs {P} x {P} x {R} entries (more than "
                         f"{EXACT_MAX_CELLS:,}); this network is too large for the exact solvers",
                         field="mapping.nodes")
    routes = semantics.route_table(m)
    inc = np.zeros((P, P, R))
    routable = np.zeros((P, P), dtype=bool)
    hops = -np.ones((P, P), dtype=int)
    for a in range(P):
        for b in range(P):
            rt = routes[a][b]
            if rt is not None:
                routable[a, b] = True
                hops[a, b] = len(rt)
                inc[a, b, list(rt)] = 1.0

    # fixed jobs: loads and delta values
    fix_c = np.zeros(P)
    fix_r = np.zeros(P)
    fix_b = np.zeros(R)
    fixed_links = 0
    fixed_delta = 0.0
    for j, d in fixed.items():
        job = m.jobs[j]
        if len(d.nodes) != len(job.tasks) or len(d.links) != len(job.links):
            raise InputError(f"fixed job {j}: decision does not match the job's size", field="fixed")
        for t, p in enumerate(d.nodes):
            fix_c[p] += job.tasks[t].cpu
            fix_r[p] += job.tasks[t].ram
        for k, (lk, ld) in enumerate(zip(job.links, d.links)):
            fixed_links += 1
            if d.nodes[lk.src] == d.nodes[lk.dst] or lk.bw_max == lk.bw_min:
                fixed_delta += 1.0
            else:
                fixed_delta += min(max((ld.bandwidth - lk.bw_min) / (lk.bw_max - lk.bw_min), 0.0), 1.0)
            if d.nodes[lk.src] != d.nodes[lk.dst]:
                for r in ld.route:
                    fix_b[r] += ld.bandwidth
    ib = bool(m.objective.include_background)
    base_uc = ((bg_c if ib else 0.0) + fix_c) / cpu
    base_ur = ((bg_r if ib else 0.0) + fix_r) / ram

    dc, dr, tj, tl = [], [], [], []
    ls, ld_, bmin, bmax, lj, ll = [], [], [], [], [], []
    for j in jobs:
        job = m.jobs[j]
        off = len(dc)
        for t, task in enumerate(job.tasks):
            dc.append(task.cpu)
            dr.append(task.ram)
            tj.append(j)
            tl.append(t)
        for k, lk in enumerate(job.links):
            ls.append(off + lk.src)
            ld_.append(off + lk.dst)
            bmin.append(lk.bw_min)
            bmax.append(lk.bw_max)
            lj.append(j)
            ll.append(k)
    return MappingProblem(
        instance=instance, jobs=jobs, fixed=fixed, P=P, R=R, cpu=cpu, ram=ram,
        free_cpu=cpu - bg_c - fix_c, free_ram=ram - bg_r - fix_r, base_uc=base_uc, base_ur=base_ur,
        bw=bw, res_bw=bw - fix_b, base_ub=fix_b / bw if R else np.zeros(0),
        n=len(dc), dc=np.array(dc, dtype=float), dr=np.array(dr, dtype=float),
        task_job=np.array(tj, dtype=int), task_local=np.array(tl, dtype=int),
        V=len(ls), lsrc=np.array(ls, dtype=np.intp), ldst=np.array(ld_, dtype=np.intp),
        bmin=np.array(bmin, dtype=float), bmax=np.array(bmax, dtype=float),
        link_job=np.array(lj, dtype=int), link_local=np.array(ll, dtype=int),
        fixed_links=fixed_links, fixed_delta=fixed_delta,
        weights=tuple(float(w) for w in m.objective.weights),  # type: ignore[arg-type]
        routing=m.objective.routing, routes=routes, inc=inc, routable=routable, hops=hops,
    )


# --------------------------------------------------------------------------------------
# The bandwidth sub-problem of a fixed mapping
# --------------------------------------------------------------------------------------


@dataclass
class BandwidthResult:
    status: str  # "optimal" | "infeasible" | "gap" (iteration limit: value < bound - tol)
    b: np.ndarray | None  # (V,) bandwidths (co-located links: BWmax)
    value: float  # the bandwidth part alpha*D - beta*w3*std_bw at b (-inf if infeasible)
    bound: float  # proven upper bound of that part
    iterations: int = 0


def bandwidth_part(problem: MappingProblem, g: Goal, routes_inc: np.ndarray, col: np.ndarray,
                   b: np.ndarray) -> float:
    """alpha * D_BW - beta * w3 * std_bw of bandwidths ``b`` with incidence ``routes_inc`` (V, R)."""
    pr = problem
    delta = np.where(col | ~pr.elastic, 1.0, (b - pr.bmin) / np.where(pr.elastic, pr.spread, 1.0))
    d = (pr.fixed_delta + float(delta.sum())) / pr.v_total if pr.v_total else 1.0
    if pr.R:
        u = pr.base_ub + (b[:, None] * routes_inc).sum(axis=0) / pr.bw
        sb = float(_pstd(u[None, :])[0])
    else:
        sb = 0.0
    return g.alpha * d - g.beta * pr.weights[2] * sb


def solve_bandwidth(problem: MappingProblem, g: Goal, x: Sequence[int], *, routes_inc: np.ndarray | None = None,
                    tol: float = BW_TOL, max_iter: int = 400) -> BandwidthResult:
    """Exact bandwidths for the complete mapping ``x`` with routes ``routes_inc`` (V, R)
    (default: the canonical routes of x): maximise alpha*D - beta*w3*std_bw subject to the
    link capacities, the bandwidth ranges and ``D >= g.d_min``. Kelley cutting planes on the
    norm, each LP solved by HiGHS; stops when the LP bound and the best point are ``tol``
    apart."""
    pr = problem
    x = np.asarray(x, dtype=np.intp)
    if routes_inc is None:
        routes_inc = pr.link_inc(x[None, :])[0]
    col = x[pr.lsrc] == x[pr.ldst] if pr.V else np.zeros(0, dtype=bool)
    b = pr.bmax.copy()
    act = np.nonzero(~col)[0]  # links that carry bandwidth
    w3 = pr.weights[2]
    kappa = g.beta * w3 / math.sqrt(pr.R) if pr.R else 0.0
    vt = pr.v_total
    # constant part of D (co-located, inelastic, fixed links)
    d_const = pr.fixed_delta + float((col | ~pr.elastic).sum())
    coefD = np.zeros(pr.V)
    el = ~col & pr.elastic
    coefD[el] = 1.0 / pr.spread[el]
    d_off = -float((pr.bmin[el] / pr.spread[el]).sum())  # sum delta = coefD.B + d_off + d_const

    if len(act) == 0:
        if g.d_min is not None and vt and (d_const / vt) < g.d_min - 1e-12:
            return BandwidthResult("infeasible", None, -math.inf, -math.inf)
        val = bandwidth_part(pr, g, routes_inc, col, b)
        return BandwidthResult("optimal", b, val, val)

    A = routes_inc[act].T / pr.bw[:, None] if pr.R else np.zeros((0, len(act)))  # (R, m): u = base + A B
    used = np.nonzero(routes_inc[act].sum(axis=0) > 0)[0] if pr.R else np.zeros(0, dtype=int)
    lo = pr.bmin[act].copy()
    hi = pr.bmax[act].copy()

    import highspy

    with highs_model() as h:  # freed on return, not at a garbage collection (issue 46)
        inf = highspy.kHighsInf
        m = len(act)
        # columns: B (m), s (1)
        h.addVars(m + 1, np.concatenate([lo, [0.0]]), np.concatenate([hi, [inf]]))
        cost = np.concatenate([g.alpha / vt * coefD[act] if vt else np.zeros(m), [-kappa]])
        h.changeColsCost(m + 1, np.arange(m + 1, dtype=np.int32), cost)
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        for r in used:
            idx = np.nonzero(routes_inc[act, r] > 0)[0].astype(np.int32)
            h.addRow(-inf, float(pr.res_bw[r]) + CAP_EPS, len(idx), idx, np.ones(len(idx)))
        if g.d_min is not None and vt:
            # coefD.B >= d_min * vt - d_const - d_off
            idx = np.nonzero(coefD[act] > 0)[0].astype(np.int32)
            rhs = g.d_min * vt - d_const - d_off
            if len(idx):
                h.addRow(rhs - 1e-12, inf, len(idx), idx, coefD[act][idx])
            elif rhs > 1e-12:
                return BandwidthResult("infeasible", None, -math.inf, -math.inf)

        def true_val(bb: np.ndarray) -> float:
            full = b.copy()
            full[act] = bb
            return bandwidth_part(pr, g, routes_inc, col, full)

        def add_cut(bb: np.ndarray) -> bool:
            if kappa == 0.0 or not pr.R:
                return False
            u = pr.base_ub + A @ bb
            dv = u - u.mean()
            nrm = float(np.linalg.norm(dv))
            if nrm <= 1e-15:
                return False
            gv = dv / nrm
            coef = A.T @ gv  # s >= gv.base + coef.B
            idx = np.arange(m + 1, dtype=np.int32)
            h.addRow(-inf, -float(gv @ pr.base_ub), m + 1, idx, np.concatenate([coef, [-1.0]]))
            return True

        if kappa > 0 and pr.R:
            add_cut(hi)
            add_cut(lo)
            # a few sign-pattern cuts (mean absolute deviation style) at the start
        best_val = -math.inf
        best_b = None
        ub = math.inf
        it = 0
        for it in range(1, max_iter + 1):
            h.run()
            st = h.getModelStatus()
            if st == highspy.HighsModelStatus.kInfeasible:
                return BandwidthResult("infeasible", None, -math.inf, -math.inf, it)
            if st != highspy.HighsModelStatus.kOptimal:
                break
            sol = np.array(h.getSolution().col_value)
            bb = np.clip(sol[:m], lo, hi)
            lp_val = float(h.getInfo().objective_function_value)
            const = g.alpha * (d_const + d_off) / vt if vt else g.alpha
            ub = min(ub, lp_val + const)
            val = true_val(bb)
            if val > best_val:
                best_val, best_b = val, bb
            if ub - best_val <= tol:
                break
            if not add_cut(bb):
                break
            if it % 8 == 3 and best_b is not None and kappa > 0:
                # polish the best point by SQP: a cut at the exact optimum closes the gap at once
                pb = _polish(pr, g, A, act, lo, hi, used, routes_inc, coefD, vt, kappa, best_b, d_const, d_off)
                if pb is not None:
                    pv = true_val(pb)
                    if pv > best_val:
                        best_val, best_b = pv, pb
                    if ub - best_val <= tol:
                        break
                    add_cut(pb)
        if best_b is None:
            return BandwidthResult("infeasible", None, -math.inf, -math.inf, it)
        full = b.copy()
        full[act] = best_b
        status = "optimal" if ub - best_val <= tol else "gap"
        return BandwidthResult(status, full, best_val, max(ub, best_val), it)


def _polish(pr: MappingProblem, g: Goal, A: np.ndarray, act: np.ndarray, lo: np.ndarray, hi: np.ndarray,
            used: np.ndarray, routes_inc: np.ndarray, coefD: np.ndarray, vt: int, kappa: float,
            start: np.ndarray, d_const: float, d_off: float) -> np.ndarray | None:
    """A local SQP (SLSQP) step from ``start``; returns a feasible point or None."""
    from scipy.optimize import minimize

    c = g.alpha / vt * coefD[act] if vt else np.zeros(len(act))
    base = pr.base_ub

    def f(bb):
        u = base + A @ bb
        dv = u - u.mean()
        nrm = math.sqrt(float(dv @ dv) + 1e-30)
        return -(c @ bb) + kappa * nrm, -c + kappa * (A.T @ dv) / nrm

    cons = []
    if len(used):
        Ac = routes_inc[act][:, used].T  # (|used|, m)
        cap = pr.res_bw[used]
        cons.append({"type": "ineq", "fun": lambda bb: cap - Ac @ bb, "jac": lambda bb: -Ac})
    if g.d_min is not None and vt:
        cd = coefD[act]
        rhs = g.d_min * vt - d_const - d_off
        cons.append({"type": "ineq", "fun": lambda bb: np.array([cd @ bb - rhs]), "jac": lambda bb: cd[None, :]})
    try:
        res = minimize(f, start, jac=True, bounds=list(zip(lo, hi)), constraints=cons, method="SLSQP",
                       options={"ftol": 1e-15, "maxiter": 200})
    except Exception:  # pragma: no cover - scipy failure: keep Kelley's point
        return None
    bb = np.clip(res.x, lo, hi)
    if len(used) and ((routes_inc[act][:, used].T @ bb) > pr.res_bw[used] + CAP_EPS).any():
        return None
    if g.d_min is not None and vt and coefD[act] @ bb < g.d_min * vt - d_const - d_off - 1e-12:
        return None
    return bb


# --------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------


def job_decisions(problem: MappingProblem, x: Sequence[int], b: Sequence[float],
                  routes: Sequence[tuple[int, ...]] | None = None) -> dict[int, JobDecision]:
    """Per placed job, its decision: task nodes, each task link's route (canonical unless
    ``routes`` is given; () when co-located) and bandwidth (BWmax when co-located)."""
    pr = problem
    x = [int(v) for v in x]
    out: dict[int, JobDecision] = {}
    for j in pr.jobs:
        tasks = np.nonzero(pr.task_job == j)[0]
        nodes = tuple(x[t] for t in tasks)
        links = []
        for v in np.nonzero(pr.link_job == j)[0]:
            a, c = x[pr.lsrc[v]], x[pr.ldst[v]]
            if a == c:
                links.append(LinkDecision(route=(), bandwidth=float(pr.bmax[v])))
            else:
                rt = tuple(routes[v]) if routes is not None else pr.routes[a][c]
                bv = float(min(max(b[v], pr.bmin[v]), pr.bmax[v]))
                links.append(LinkDecision(route=tuple(int(r) for r in rt), bandwidth=bv))
        out[j] = JobDecision(nodes=nodes, links=tuple(links))
    return out


def decisions(problem: MappingProblem, x: Sequence[int], b: Sequence[float],
              routes: Sequence[tuple[int, ...]] | None = None) -> MappingDecisions:
    """MappingDecisions of the whole instance: placed jobs decoded, fixed jobs as given.
    Every job of the instance must be placed or fixed."""
    per = job_decisions(problem, x, b, routes)
    per.update(problem.fixed)
    J = len(problem.instance.mapping.jobs)  # type: ignore[union-attr]
    missing = [j for j in range(J) if j not in per]
    if missing:
        raise ValueError(f"jobs {missing} are neither placed nor fixed")
    return MappingDecisions(jobs=tuple(per[j] for j in range(J)))
