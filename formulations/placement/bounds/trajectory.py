"""Exact-trajectory pricing for the placement Lagrangian bound (issue 23, bound (6)).  Proof:
docs/formulations/placement.md, "(6) Trajectory pricing".

Bound (4) (:mod:`placement.bounds.lagrange`) prices a task by a window and a fractional
fill of its per-resource energy front.  Here a task is priced by an allocation history on one
cluster: per step a pause or an integer allocation (cpu, gpu) between its minimum and the
capacity, with the referee's progress recursion and noise per executed step, so the column's
per-step usage is what that history uses.  The labelling programme (:func:`price_pair`) is a
relaxation of the exact price, hence a LOWER bound of it, and so gives a valid Lagrangian bound
``sum_j price_j - sum Lam C - sum Mu`` for every multipliers ``Lam, Mu >= 0``:

* the switching loss is dropped (it only lowers progress) and so is the previous allocation;
* progress is rounded UP to the grid ``1 / GRID`` after every executed step, and states with
  the same (step, executed steps) are merged by Pareto dominance on (progress up, cost down) —
  both justified by the dominance lemma ("more progress never finishes later");
* per step only allocations on the (gain up, cost down) Pareto front are tried (the order of the
  gains over allocations does not depend on the progress);
* completion is declared at ``1 - PROGRESS_EPS - ENERGY_SLACK`` (the margin of (4));
* under additive noise (whose step is not monotone in the progress) a label advances by the
  step's monotone envelope, :func:`additive_envelope`.

Costs are exact integers on the grid 2**-SCALE of (4); only the progress carries floats, with
the referee's own operations.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from edgebench.formulations.placement.bounds.lagrange import ENERGY_SLACK, SCALE, MasterLP, generate_columns, greedy_columns, lagrangian_multipliers
from edgebench.formulations.placement.bounds import labelling as LB
from edgebench.formulations.placement.deadline import NEVER, Deadline
from edgebench.formulations.placement.bounds.rounding import Cuts
from edgebench.instances import semantics

#: progress is rounded up to multiples of 1 / GRID after every executed step (a relaxation)
GRID = 1 << 20
#: charge the switching loss by default (labels keep the previous step's gain level); off: a
#: coarser relaxation (the loss dropped, one label group per executed-step count)
SWITCHING = True
#: column-generation rounds at most, and rounds without a better certified value before stopping
#: (fixed counts: the bound is deterministic, no clock).  Measured (2026-11-27, one thread, the
#: shared machine at load 3): hetero-6-v2 s0 (384 tasks) converges to its master LP's ceiling in 45
#: rounds, 290 s CPU; a test-bed round (192 tasks, table model) costs about 40 s
ROUNDS = 300
STALL = 30
#: separation rounds of the rounding cuts after (6)'s column generation (rounded_multipliers)
CUT_ROUNDS = 8
#: label extensions (labels x allocations, all pricings together) after which no further round
#: starts: a deterministic cap on the effort, far above what the shipped sets need
WORK = 4_000_000_000
DONE = 1.0 - semantics.PROGRESS_EPS - ENERGY_SLACK


class Options:
    """The allocations of task j on cluster n that can matter: per allocation its gain
    parameter (synthetic: w, the gain being ``w sqrt(max(kappa - p, 0)) + base``; table: the
    constant gain); an allocation with at least the cpu and gpu of another and no larger
    parameter is left out (it costs at least as much under prices >= 0 and never gains more)."""

    def __init__(self, payload, j: int, n: int):
        task = payload.tasks[j]
        perf = payload.performance
        self.synthetic = perf.kind == "synthetic"
        if self.synthetic:
            t = perf.types[task.type]
            self.kappa, self.base = float(t.curvature), float(t.base)
        else:
            self.kappa = self.base = 0.0
        opts = semantics.allocation_options(payload, j, n)
        if self.synthetic:
            par = self._exact_params(payload, j, opts)
        else:
            par = [semantics.increment(payload, j, c, g, 0.0) for c, g in opts]
        C = np.array([c for c, _ in opts], dtype=np.int64)
        G = np.array([g for _, g in opts], dtype=np.int64)
        P = np.array(par, dtype=float)
        # dominated[i]: another allocation with no more cpu, no more gpu and no smaller parameter
        dom = (C[None, :] <= C[:, None]) & (G[None, :] <= G[:, None]) & (P[None, :] >= P[:, None])
        np.fill_diagonal(dom, False)
        keep = np.nonzero(~dom.any(axis=1))[0].tolist()
        self.cpu = np.array([opts[i][0] for i in keep], dtype=np.int64)
        self.gpu = np.array([opts[i][1] for i in keep], dtype=np.int64)
        self.param = np.array([par[i] for i in keep], dtype=float)
        order = np.lexsort((self.cpu + self.gpu, -self.param))  # largest parameter first
        self.cpu, self.gpu, self.param = self.cpu[order], self.gpu[order], self.param[order]
        self.level = np.unique(self.param, return_inverse=True)[1].reshape(-1).astype(np.int64)
        self.sigma = 1.0 - float(payload.switching_overhead)
        #: additive noise (the TapFinger authors'): the step there is not monotone in the progress,
        #: so a label advances by its monotone envelope (:func:`additive_envelope`; docs: "Trajectory
        #: pricing under additive noise"); ``noise`` then holds the draws eps_k, not 1 + eps_k
        self.additive = payload.noise_model == "additive" and payload.noise > 0
        self._shift = 0.0 if self.additive else 1.0
        self.noise = [self._shift + semantics.noise_draw(payload, j, k) for k in range(64)]
        self._payload, self._j = payload, j
        self.pmax = float(self.param.max()) if self.param.size else 0.0
        self.fmax = 1.0 + max(float(payload.noise), 0.0)
        #: under additive noise one envelope step adds at most max(w sqrt(kappa), w^2 / 2) + base +
        #: noise (w the largest parameter; table: w + noise), plus the rounding up: the fewest
        #: steps still needed from progress p are at least (done - p) / top_add
        top = (max(self.pmax * math.sqrt(self.kappa), 0.5 * self.pmax ** 2) + self.base if self.synthetic
               else self.pmax)
        self.top_add = (top + float(payload.noise) + 1.0 / GRID) * (1.0 + 1e-9)
        self._factors = np.zeros(0)

    @staticmethod
    def _exact_params(payload, j, opts):
        """w(c, g) with the float operations of :func:`semantics.increment`."""
        task = payload.tasks[j]
        t = payload.performance.types[task.type]
        out = []
        for c, g in opts:
            if t.gpu_scale is None:
                out.append(0.0)
            else:
                ge = float(g) if t.cpu_per_gpu is None else min(float(g), c / t.cpu_per_gpu)
                out.append(math.tanh(ge / t.gpu_scale))
        return out

    def factors(self) -> np.ndarray:
        """The noise factors drawn so far (multiplicative: 1 + eps_k; additive: eps_k)."""
        if self._factors.size != len(self.noise):
            self._factors = np.array(self.noise, dtype=float)
        return self._factors

    def step(self, p: np.ndarray, par: np.ndarray, k: int, lossy: np.ndarray) -> np.ndarray:
        """Progress after one executed step (noise index k) from p (rows) at the parameters par
        (columns), the switching loss where ``lossy`` (broadcast to rows x columns): the referee's
        operations, or under additive noise their monotone envelope (the labelling's own step)."""
        p = np.asarray(p, dtype=float).reshape(-1)
        par = np.asarray(par, dtype=float).reshape(-1)
        lossy = np.ascontiguousarray(np.broadcast_to(np.asarray(lossy, dtype=bool), (p.size, par.size)))
        return LB.step_grid(p, par, float(self.factor(k)), lossy, self.synthetic, self.additive, self.kappa,
                            self.base, self.sigma)

    def factor(self, k: int) -> float:
        while k >= len(self.noise):
            self.noise.append(self._shift + semantics.noise_draw(self._payload, self._j, len(self.noise)))
        return self.noise[k]

def additive_envelope(p: np.ndarray, par: np.ndarray, eps, sig, kappa: float, base: float,
                      synthetic: bool) -> np.ndarray:
    """An upper bound, plus a margin of 1e-12, of the progress after one executed step under
    additive noise from ANY progress q <= p (rows), at the gain parameters ``par`` (columns), the
    draws ``eps`` (a number or a column) and loss factors ``sig`` (broadcast to rows x columns):
    ``sup_{0 <= q <= p} q + sig max(h(q) + eps, 0)``, h(q) = par sqrt(max(kappa - q, 0)) + base
    (table: h = par).  ``psi(q) = q + sig (h(q) + eps)`` is concave on [0, kappa] with its top at
    ``q* = kappa - (sig par / 2)**2``: it is increasing up to q*, so the sup is its value at p for
    p <= q*, and ``psi(q*) = kappa + (sig par)**2 / 4 + sig (base + eps)`` above; past kappa psi is
    ``q + sig (base + eps)``, increasing; and the sup is at least p (the clip).
    Non-decreasing in p, par and sig (docs: "Trajectory pricing under additive noise").  Computed
    by :func:`placement.bounds.labelling.envelope`, the labelling programme's own step."""
    p, par = np.asarray(p, dtype=float).reshape(-1), np.asarray(par, dtype=float).reshape(-1)
    eps = np.broadcast_to(np.asarray(eps, dtype=float).reshape(-1, 1), (p.size, 1))[:, 0].copy()
    sig = np.ascontiguousarray(np.broadcast_to(np.asarray(sig, dtype=float), (p.size, par.size)))
    return LB.envelope_grid(p, par, eps, sig, float(kappa), float(base), bool(synthetic))


def price_pair(opt: Options, a: int, n: int, Lam: np.ndarray, Mu: np.ndarray | None, H: int,
               cap: int | None = None, want_column: bool = True, switching: bool = SWITCHING,
               work: list | None = None, extra=None):
    """(least cost, F, first start, usage {(n, r, t): amount for t < H}) of the relaxed histories
    of a task arriving at a on cluster n under integer multipliers (Lam (N, 2, H), Mu (N, H) or
    None), cost = (F - a) 2**SCALE + sum_t Lam x_t + Mu[n, s]; None if none costs below ``cap``.
    ``extra``: an integer array (H - a, kept allocations), row t - a the further cost >= 0 of
    holding each allocation in step t, non-decreasing in the cpu and the gpu (the rounding cuts',
    :meth:`placement.bounds.rounding.Cuts.step_costs`), or None for none.

    Labels at the start of step t are grouped by (executed steps k, level of the previous step)
    — the level is the gain parameter's index, -1 after a pause or before the first step; with
    ``switching`` off every level is -1 and no loss is charged — and within a group only the
    Pareto front on (progress up, cost down) is kept.  All labels of a step are held in flat
    arrays and extended at once; the programme is compiled (:func:`placement.bounds.labelling.label`).
    ``work[0]`` (when given) grows by the labels x allocations extended: a deterministic measure
    of the effort."""
    nopt = opt.cpu.size
    if nopt == 0:
        return None
    span = max(H - a, 0)
    ex = (np.zeros((span, nopt), dtype=np.int64) if extra is None
          else np.ascontiguousarray(extra, dtype=np.int64).reshape(span, nopt))
    lamc = np.ascontiguousarray(Lam[n, 0, :H], dtype=np.int64)
    lamg = np.ascontiguousarray(Lam[n, 1, :H], dtype=np.int64)
    mu = np.ascontiguousarray(Mu[n, :H], dtype=np.int64) if Mu is not None else np.zeros(H, dtype=np.int64)
    while True:
        out = LB.label(opt.cpu, opt.gpu, opt.param, opt.level, opt.synthetic, opt.additive, opt.kappa, opt.base,
                       opt.sigma, opt.pmax, opt.fmax, opt.top_add, opt.factors(), a, H, lamc, lamg, mu, ex,
                       (cap if cap is not None else 0), cap is not None, switching, SCALE, GRID, DONE)
        status, best, has_best, t_end, row, o, done, parents, options, offsets = out
        if status != LB.NEED_FACTORS:
            break
        opt.factor(2 * len(opt.noise))  # more noise draws, then the same programme again
    if work is not None:
        work[0] += int(done)
    if not has_best:
        return None
    if not want_column:
        return int(best), None, None, None
    steps = LB.walk_back(a, t_end, row, o, parents, options, offsets)
    use: dict = {}
    for s, i in steps:
        if s < H:
            if opt.cpu[i]:
                use[(n, 0, s)] = int(opt.cpu[i])
            if opt.gpu[i]:
                use[(n, 1, s)] = int(opt.gpu[i])
    return int(best), int(t_end) + 1, int(min(s for s, _ in steps)), use


class Task:
    """Task j's options per eligible cluster where it can finish."""

    def __init__(self, payload, j: int, clusters):
        self.j, self.a = j, int(payload.tasks[j].arrival)
        self.opts = {n: Options(payload, j, n) for n in sorted(clusters)}


def tasks_of(payload, durations) -> list[Task]:
    """The live tasks (those that can finish somewhere; the others add >= 0 and are left out)."""
    return [Task(payload, j, row) for j, row in enumerate(durations) if row]


def price_task(task: Task, Lam, Mu, H: int, *, want_column: bool = True, switching: bool = SWITCHING,
               work: list | None = None, cap: int | None = None, cuts=None, nu=None):
    """[(cost, n, F, first start, usage)] cheapest first; the first cost is the task's least
    (relaxed) price.  Each cluster is priced with the cheapest so far as its cap, so a later
    cluster reports a column only when it beats it.  With ``cap`` given, only histories costing
    below it are reported and the list may be empty: the least price is then >= ``cap``
    (:func:`least_price`).  ``cuts``, ``nu``: rounding cuts (:class:`placement.bounds.rounding.Cuts`)
    and their multipliers (integers >= 0), priced into every step."""
    out = []
    for n, opt in task.opts.items():
        extra = None
        if cuts is not None and len(cuts) and nu is not None and nu.any():
            extra = cuts.step_costs(nu, n, task.a, opt.cpu, opt.gpu)
        r = price_pair(opt, task.a, n, Lam, Mu, H, cap=cap, want_column=want_column, switching=switching,
                       work=work, extra=extra)
        if r is not None:
            out.append((r[0], n) + tuple(r[1:]))
            cap = r[0] if cap is None else min(cap, r[0])
    assert out or cap is not None, "a live task completes on some cluster"
    out.sort(key=lambda x: (x[0], x[1]))
    return out


def least_price(priced: list, cap: int | None) -> int:
    """A lower bound of the task's least relaxed price from :func:`price_task`'s list priced with
    ``cap``: the least reported cost, else ``cap`` itself (nothing costs below it).  Valid for any
    cap; equal to the least price whenever some history costs at most ``cap``."""
    return priced[0][0] if priced else cap


def _value(payload, prices, Lam: np.ndarray, Mu: np.ndarray | None, less: int = 0) -> int:
    """ceil((sum of the prices - sum Lam C - sum Mu - less) / 2**SCALE), exact integers (``less``:
    the rounding cuts' sum nu floor(C / g))."""
    caps = np.array([[c.capacity.cpu, c.capacity.gpu] for c in payload.clusters], dtype=np.int64)
    total = (sum(prices) - int((Lam * caps[:, :, None]).sum()) - (int(Mu.sum()) if Mu is not None else 0)
             - int(less))
    return -((-total) >> SCALE)


def certified_value(payload, tasks: list[Task], Lam: np.ndarray, Mu: np.ndarray | None, H: int, *,
                    switching: bool = SWITCHING, cuts: Cuts | None = None, nu: np.ndarray | None = None) -> int:
    """ceil(L(Lam, Mu, nu)) with trajectory prices: valid for ANY integer multipliers Lam, Mu >= 0
    (on the grid 2**-SCALE, zero from step H on) and rounding cuts with multipliers nu >= 0."""
    assert (Lam >= 0).all() and (Mu is None or (Mu >= 0).all()) and (nu is None or (nu >= 0).all())
    prices = [price_task(t, Lam, Mu, H, want_column=False, switching=switching, cuts=cuts, nu=nu)[0][0]
              for t in tasks]
    return _value(payload, prices, Lam, Mu, cuts.total(nu) if cuts is not None and nu is not None else 0)


def trajectory_multipliers(payload, durations, start, *, rounds: int = ROUNDS, stall: int = STALL,
                           work: int = WORK, smoothing: float = 0.5, switching: bool = SWITCHING):
    """(certified value, Lam, Mu, H): column generation on (4)'s master LP
    (:class:`placement.bounds.lagrange.MasterLP`) with trajectory columns, from the point ``start`` =
    (value, Lam, Mu, H) of :func:`placement.bounds.lagrange.lagrangian_multipliers` (its Wentges
    centre; H is kept).  The value is the best of ``start``'s own value and the trajectory
    values of the priced points, so it is never below (4).  Stops after ``rounds`` rounds, after
    ``stall`` rounds in a row without a better certified value, once the pricings have extended
    ``work`` labels, when no column improves the master, or when the certified value reaches the
    master's ceiling: deterministic, no clock."""
    r = generate(payload, durations, start, rounds=rounds, stall=stall, work=work, smoothing=smoothing,
                  switching=switching, cut_rounds=0)
    return r.value, r.Lam, r.Mu, r.H


def rounded_multipliers(payload, durations, start, *, cut_rounds: int = CUT_ROUNDS, rounds: int = ROUNDS,
                        stall: int = STALL, work: int = WORK, deadline: Deadline | float | None = None) -> Rounded:
    """(6) with rounding cuts: :func:`trajectory_multipliers`' column generation, then up to
    ``cut_rounds`` times: separate the rounding cuts (:mod:`placement.bounds.rounding`) the master's
    solution violates, add them to the master and to the pricing, and continue the column
    generation.  Both values are certified; the second is never below the first.
    Deterministic (fixed counts, no clock): ``deadline`` (:class:`.Deadline` or a
    ``time.perf_counter()`` value) raises :class:`.Expired` in any phase once it has passed."""
    return generate(payload, durations, start, rounds=rounds, stall=stall, work=work, cut_rounds=cut_rounds,
                     expire=Deadline.of(deadline))


@dataclass
class Rounded:
    """:func:`rounded_multipliers`' result: the certified value with the cuts and (6)'s before
    them; the best point (Lam, Mu, the cuts' nu >= 0, integers on the grid 2**-SCALE); statistics."""

    value: int
    plain: int
    Lam: np.ndarray
    Mu: np.ndarray | None
    H: int
    cuts: Cuts | None
    nu: np.ndarray | None
    stats: dict = field(default_factory=dict)
    #: every column generated (:class:`_Pool`; the heuristic :mod:`placement.search.cglns` reuses them)
    pool: "_Pool | None" = None
    #: the master LP as it ended (its columns' tasks, costs and clusters in ``meta``; diagnostics)
    master: "MasterLP | None" = None


def generate(payload, durations, start, *, rounds: int, stall: int, work: int, cut_rounds: int,
              smoothing: float = 0.5, switching: bool = SWITCHING, deadline: float | None = None,
              expire: Deadline = NEVER) -> Rounded:
    """The column generation of (6), with ``cut_rounds`` rounds of rounding cuts after it (0:
    plain (6)).  ``deadline`` (``time.perf_counter()``): stop between rounds once it has passed —
    only for the heuristic that reuses the column pool (:mod:`placement.search.cglns`); the bound never
    passes one (its values are valid at any stopping point, but they must not depend on the clock).
    ``expire`` (:class:`.Deadline`): raise :class:`.Expired` once it has passed, in any phase (the
    bound's deadline: it stops the work, never changes what a finished computation returns)."""
    val4, Lam0, Mu0, H = start
    tasks = tasks_of(payload, durations)
    if not tasks or H == 0:
        return Rounded(val4, val4, Lam0, Mu0, H, None, None)
    N = len(payload.clusters)
    single = payload.variant == "single"
    caps = np.array([[c.capacity.cpu, c.capacity.gpu] for c in payload.clusters], dtype=np.int64)
    master = MasterLP(caps, H, single, len(tasks), track_entries=cut_rounds > 0)
    ncap, nbase = master.ncap, master.nrows
    cuts = Cuts(caps, H)

    def split(grid):
        return (grid[:ncap].reshape(N, 2, H), (grid[ncap:nbase].reshape(N, H) if single else None),
                grid[nbase:])

    def column(i, t, n, m, s, use):
        cost, rows, vals, i = master.column(i, _Where(t.a, n), m, s, use)
        ks, vs = cuts.column(use)
        if ks:
            rows = np.concatenate([rows, nbase + np.array(ks, dtype=np.int64)])
            vals = np.concatenate([vals, np.array(vs)])
        return cost, rows, vals, i

    def columns(priced):
        out = []
        for i, t in enumerate(tasks):
            for _, n, F, s, use in priced[i]:
                pool.add(i, n, F - t.a, s, use)
                out.append(column(i, t, n, F - t.a, s - t.a, use))
        return out

    done = [0]
    pool = _Pool(len(tasks), N, H, single)

    def price_all(grid):
        """Each task priced with its cheapest known column at this point as the cap: a column is
        reported only when it beats every known one, and the least price is exact either way
        (a known column is a relaxed history, so the least price is at most its cost)."""
        L, M, nu = split(grid)
        caps_i = pool.costs(L, M, cuts, nu)
        priced = []
        for i, t in enumerate(tasks):
            expire.check("pricing trajectories")
            priced.append(price_task(t, L, M, H, switching=switching, work=done, cap=int(caps_i[i]), cuts=cuts,
                                     nu=nu))
        return priced, _value(payload, [least_price(x, int(caps_i[i])) for i, x in enumerate(priced)], L, M,
                              cuts.total(nu))

    cols = []
    greedy = greedy_columns(payload, durations, expire)
    for i, t in enumerate(tasks):  # a feasible master: the greedy schedule's fixed runs
        n, s0, (c, g, k) = greedy[t.j]
        use = {(n, r, u): x for u in range(s0, min(s0 + k, H)) for r, x in ((0, c), (1, g)) if x}
        cols.append(column(i, t, n, s0 + k - t.a, s0 - t.a, use))
        pool.add(i, n, s0 + k - t.a, s0, use)
    best_grid = np.concatenate([Lam0.reshape(-1)] + ([Mu0.reshape(-1)] if single else [])).astype(np.int64)
    priced, v = price_all(best_grid)
    best = max(val4, v)
    master.add(cols + columns(priced))

    def price_point(grid):
        priced, v = price_all(grid)
        return v, columns(priced)

    plain, stats = None, {"cuts": 0, "cut_rounds": 0}
    for cr in range(cut_rounds + 1):
        center = best_grid.astype(float) / (1 << SCALE)
        best, best_grid = generate_columns(master, center, best, best_grid, price_point, rounds=rounds,
                                           smoothing=smoothing, deadline=expire,
                                           stop=lambda rnd, last_gain: (rnd - last_gain >= stall or done[0] >= work
                                                                        or (deadline is not None
                                                                            and time.perf_counter() > deadline)))
        if plain is None:
            plain = best
        if cr == cut_rounds or done[0] >= work or (deadline is not None and time.perf_counter() > deadline):
            break
        if master.solve(expire) is None:
            expire.check("solving the master LP")
            break
        x = master.primal()
        held: dict = {}  # (n, t) -> column -> [cpu, gpu]
        for rr, (cs, vs) in master.entries.items():
            n, rem = divmod(rr, 2 * H)
            r, t = divmod(rem, H)
            for c, v in zip(cs, vs):
                if x[c] > 1e-9:
                    held.setdefault((n, t), {}).setdefault(c, [0, 0])[r] = v
        new = cuts.separate({nt: [(float(x[c]), cg[0], cg[1]) for c, cg in sorted(cs.items())]
                             for nt, cs in held.items()})
        if not new:
            break
        for k in new:
            cols, coef = cuts.coefs(k, master.entry)
            master.add_cut(cols, coef, cuts.rhs[k])
        best_grid = np.concatenate([best_grid, np.zeros(len(new), dtype=np.int64)])
        stats["cuts"], stats["cut_rounds"] = len(cuts), cr + 1
    Lam, Mu, nu = split(best_grid)
    stats["work"] = done[0]
    return Rounded(best, plain, Lam.copy(), (Mu.copy() if single else None), H, cuts, nu.copy(), stats, pool, master)


class _Pool:
    """The columns known so far, priced exactly at any point: per column its task, cost
    (F - a) 2**SCALE, the (cluster, first start) of its start multiplier and its usage rows."""

    def __init__(self, ntasks: int, N: int, H: int, single: bool):
        self.ntasks, self.N, self.H, self.single = ntasks, N, H, single
        self.task: list[int] = []
        self.base: list[int] = []
        self.start: list[int] = []  # flat (n, s) index into Mu, or -1
        self.rows: list[np.ndarray] = []  # flat (n, r, t) indices into Lam
        self.vals: list[np.ndarray] = []
        self.entries: dict[int, tuple[list, list]] = {}  # flat (n, r, t) -> (columns, amounts)

    def add(self, i: int, n: int, m: int, s: int, use: dict) -> None:
        H = self.H
        self.task.append(i)
        self.base.append(int(m) << SCALE)
        self.start.append(n * H + s if (self.single and s < H) else -1)
        self.rows.append(np.array([(nn * 2 + r) * H + t for (nn, r, t) in use if t < H], dtype=np.int64))
        self.vals.append(np.array([x for (nn, r, t), x in use.items() if t < H], dtype=np.int64))
        c = len(self.task) - 1
        for rr, x in zip(self.rows[-1].tolist(), self.vals[-1].tolist()):
            ent = self.entries.setdefault(rr, ([], []))
            ent[0].append(c)
            ent[1].append(x)

    def costs(self, Lam: np.ndarray, Mu: np.ndarray | None, cuts: Cuts | None = None,
              nu: np.ndarray | None = None) -> np.ndarray:
        """Per task the least exact cost of its known columns at (Lam, Mu) and the rounding cuts'
        multipliers nu (int64)."""
        lam = Lam.reshape(-1)
        cost = np.array(self.base, dtype=np.int64)
        for c, (rows, vals) in enumerate(zip(self.rows, self.vals)):
            if rows.size:
                cost[c] += int(lam[rows] @ vals)
        if cuts is not None and nu is not None:
            for k in np.nonzero(nu)[0].tolist():
                cols, coef = cuts.coefs(k, lambda row: self.entries.get(row, ([], [])))
                if cols.size:
                    np.add.at(cost, cols, int(nu[k]) * coef)
        if self.single and Mu is not None:
            st = np.array(self.start, dtype=np.int64)
            m = st >= 0
            cost[m] += Mu.reshape(-1)[st[m]]
        out = np.full(self.ntasks, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(out, np.array(self.task, dtype=np.int64), cost)
        return out


class _Where:
    """What :meth:`placement.bounds.lagrange.MasterLP.column` reads of a column's task: arrival, cluster."""

    def __init__(self, a: int, n: int):
        self.a, self.n = a, n


def trajectory_bound(payload, durations, *, rounds: int = ROUNDS, switching: bool = SWITCHING) -> tuple[int, int]:
    """((4), (6)): the Lagrangian bound (4) and the trajectory bound (6) >= (4) started from it."""
    start = lagrangian_multipliers(payload, durations)
    return start[0], trajectory_multipliers(payload, durations, start, rounds=rounds, switching=switching)[0]
