"""A Lagrangian bound on the placement referee's ``total_completion_time`` that trades a task's
speed against the resources it takes (issue 23, the fourth component of
:func:`placement.bounds.ladder.reallocating_bound`).  Proof and preconditions:
docs/formulations/placement.md, "(4) Lagrangian time-indexed energy".

* :func:`allocation_levels` — per amount of one resource, the allocation with the largest gain;
* :func:`energy_front` — E*(m): the least resource-steps of any allocation history on a cluster
  that completes within m executed steps (non-increasing in m);
* :func:`price` — for multipliers Lam >= 0 (per cluster, resource, step) and Mu >= 0 (per
  cluster and step: first starts, variant single) given as integers on the grid 2^-SCALE, the
  cheapest relaxed trajectory of each task: a cluster n, a completion F >= a + d(n), a first
  start s in [a, F - d(n)] and per resource the usage E*(F - a) spread over [a, F) at most u per
  step (variant single, ``COUPLED``: E*(F - s) over [s, F)), costing (F - a) + sum Lam x +
  Mu[n, s], all in exact integers;
* :func:`lagrangian_multipliers` / :func:`lagrangian_bound` — L = sum_j price_j - sum Lam C -
  sum Mu is a lower bound for ANY multipliers >= 0; they come from column generation on a master
  LP (highspy, re-solved from its basis) whose floating answer only chooses them: the certified
  value is recomputed by :func:`price` in integers and rounded up.  Variant single starts from
  the duals of the start-slot assignment (:func:`assignment_duals`), whose certified value is
  the assignment bound (2) itself, so (4) >= (2).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import highspy
import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from edgebench.formulations.highs_model import release
from edgebench.formulations.placement.deadline import NEVER, Deadline, Expired
from edgebench.instances import semantics

#: multipliers are rounded down to multiples of 2**-SCALE (integers Lam = floor(lambda 2**SCALE))
SCALE = 20
#: completion margin of the energy programme (docs: "Arithmetic")
ENERGY_SLACK = 1e-9
#: column-generation rounds at most (a fixed count: the bound is deterministic); every shipped
#: instance converges before (hetero-6-v2 s0, the slowest: 48 rounds from the warm start)
ROUNDS = 200
_log = logging.getLogger(__name__)
_BIG = np.int64(1) << 40
#: variant single: price the usage after the first start (E*(F - s) in [s, F))
COUPLED = True
#: memory budgets (issue 44 case 2: 10,000 tasks passed 7.6 GB), checked before anything is
#: built: the energy fronts' int64 cells (400 MB) and the start-slot assignment LP's entries,
#: built as Python lists (about 170 bytes each: 4 million, 0.7 GB).  Every shipped instance
#: needs under a tenth of either.
MAX_FRONT_CELLS = 50_000_000
MAX_ASSIGNMENT_ENTRIES = 4_000_000
#: the start-slot assignment LP (scipy's linprog) does not look at its time limit while it sets
#: up: about 4 microseconds per entry before it can stop (3.2 s for the 750,000 entries of 1,000
#: synthetic-3 tasks on the 2-core machine, with a 0.03 s limit), and building its lists about
#: 1.3 more.  With a deadline it is not started when the time left is below this per entry.
ASSIGNMENT_SECONDS_PER_ENTRY = 5e-6


class BoundTooLarge(ValueError):
    """A bound whose data would pass its memory budget (the message says which and why)."""


def allocation_levels(payload, j: int, n: int, r: int) -> dict[int, tuple[int, int]]:
    """{amount of resource r: the allocation (cpu, gpu) on cluster n with that amount and the
    largest gain}.  Within a model the gain's order over allocations does not depend on the
    progress (synthetic: w(c, g) sqrt(max(kappa - p, 0)) + base; table: constant), so the
    allocation with the largest first-step gain is the best in every state."""
    best: dict[int, tuple[float, tuple[int, int]]] = {}
    for c, g in semantics.allocation_options(payload, j, n):
        amt = (c, g)[r]
        gain = semantics.increment(payload, j, c, g, 0.0)
        if amt not in best or gain > best[amt][0]:
            best[amt] = (gain, (c, g))
    return {amt: cg for amt, (_, cg) in best.items()}


def energy_front(payload, j: int, n: int, r: int, d: int | None, length: int) -> np.ndarray:
    """E[m] for m = 0..length-1: the least sum over executed steps of resource r of any history
    on cluster n completing within m executed steps (switching loss relaxed, noise per executed
    step exact); -1 where none completes (m < d, the fewest steps on n, checked when given).  States: per energy B
    the largest progress after k steps (the dominance lemma); a state with energy at least that
    of a completion already reached in fewer steps is dropped (dominated for every m)."""
    levels = allocation_levels(payload, j, n, r)
    levels = {a: cg for a, cg in levels.items() if semantics.increment(payload, j, *cg, 0.0) > 0}
    kept, top = {}, 0.0
    for amt in sorted(levels):  # more of resource r and no larger gain: never needed
        gain = semantics.increment(payload, j, *levels[amt], 0.0)
        if gain > top:
            kept[amt], top = levels[amt], gain
    done = 1.0 - semantics.PROGRESS_EPS - ENERGY_SLACK
    front = np.full(length, -1, dtype=np.int64)
    best = None
    P = {0: 0.0}
    k = 0
    while P and k + 1 < length:
        noise = semantics.noise_factor(payload, j, k)
        nxt: dict[int, float] = {}
        for B, p in P.items():
            for amt, (c, g) in kept.items():
                nb = B + amt
                if best is not None and nb >= best:
                    continue
                q = p + semantics.increment(payload, j, c, g, p) * noise
                if q >= done:
                    best = nb
                elif q > nxt.get(nb, -1.0):
                    nxt[nb] = q
        P, top = {}, -1.0
        for B in sorted(nxt):
            if (best is None or B < best) and nxt[B] > top:
                P[B] = top = nxt[B]
        k += 1
        if best is not None:
            front[k] = best
    if best is not None:  # nothing cheaper completes later: the front is flat from here on
        front[k:] = best
    assert d is None or d >= length or front[d] >= 0, "the constant run at the best allocation completes in d steps"
    return front


@dataclass
class Pair:
    """Task j on cluster n: fewest steps d, per-step caps u[r], fronts E[r][m], m < M."""

    j: int
    n: int
    a: int
    d: int
    u: tuple[int, int]
    E: tuple[np.ndarray, np.ndarray]


def check_budgets(payload, durations, H: int) -> None:
    """:class:`BoundTooLarge` when the energy fronts up to step H pass :data:`MAX_FRONT_CELLS` or,
    variant single, the start-slot assignment LP up to H passes :data:`MAX_ASSIGNMENT_ENTRIES`
    (both grow with H: a lower bound of the horizon refuses early what the horizon would)."""
    cells = sum(2 * (max(H - int(payload.tasks[j].arrival), 0) + 2 * d + 3) for j, row in enumerate(durations)
                for d in row.values())
    if cells > MAX_FRONT_CELLS:
        raise BoundTooLarge(f"energy fronts too large: {cells:,} int64 cells ({cells * 8 / 2**30:.2f} GiB) for "
                            f"{len(durations):,} tasks up to step {H:,}, budget {MAX_FRONT_CELLS:,} cells")
    if payload.variant == "single":
        K = sum(max(H, a) - a + 1 for a, row in ((int(payload.tasks[j].arrival), row) for j, row in enumerate(durations))
                for _ in row)
        if K > MAX_ASSIGNMENT_ENTRIES:
            raise BoundTooLarge(f"start-slot assignment LP too large: {K:,} (task, cluster, slot) entries for "
                                f"{len(durations):,} tasks up to step {H:,}, budget {MAX_ASSIGNMENT_ENTRIES:,}")


def task_pairs(payload, durations, H: int, deadline: Deadline = NEVER) -> list[list[Pair]]:
    check_budgets(payload, durations, H)
    out = []
    for j, row in enumerate(durations):
        deadline.check("computing the energy fronts")
        a = int(payload.tasks[j].arrival)
        prs = []
        for n, d in sorted(row.items()):
            opts = semantics.allocation_options(payload, j, n)
            u = (max(c for c, _ in opts), max(g for _, g in opts))
            # beyond H no multiplier: at m >= M = (H - a) + 2d + 2 the fill of E(m) <= u d fits in
            # the free steps after H and a first start at H is free, so m costs m: never cheaper
            M = max(H - a, 0) + 2 * d + 2
            E = tuple(energy_front(payload, j, n, r, d, M + 1) for r in (0, 1))
            prs.append(Pair(j, n, a, d, u, E))
        out.append(prs)
    return out


def _fill_rows(P: np.ndarray, E: np.ndarray, u: int, i: np.ndarray, w: np.ndarray) -> np.ndarray:
    """cost[k] of spreading E[w[k]] units over the steps [i[k], i[k] + w[k]) of prices P, at most
    u per step, cheapest first (exact integers; P.size >= i + w)."""
    if u == 0:
        assert (E[w] == 0).all()
        return np.zeros(w.size, dtype=np.int64)
    W = int(w.max())
    cols = np.arange(W)
    A = np.where(cols[None, :] < w[:, None], P[np.minimum(i[:, None] + cols[None, :], P.size - 1)], _BIG)
    A.sort(axis=1)
    cs = np.concatenate([np.zeros((w.size, 1), dtype=np.int64), np.cumsum(A, axis=1)], axis=1)
    k, rem = np.divmod(E[w], u)
    assert (k + (rem > 0) <= w).all(), "a front never needs more than u per executed step"
    rows = np.arange(w.size)
    nxt = np.where(rem > 0, A[rows, np.minimum(k, W - 1)], 0)
    return u * cs[rows, k] + rem * nxt


def fill(P: np.ndarray, E: np.ndarray, u: int, ms: np.ndarray) -> np.ndarray:
    """cost[i] of spreading E[ms[i]] units over the first ms[i] steps of prices P, at most u per
    step, cheapest first (exact integers)."""
    return _fill_rows(P, E, u, np.zeros(ms.size, dtype=np.int64), ms)


#: completions priced per batch; a batch starting at m with m 2**SCALE >= the best cost so far
#: is not priced (every later completion costs at least its flow time m)
_BATCH = 16


def _price_pair(pr: Pair, Lam: np.ndarray, Mu: np.ndarray | None, H: int):
    """(least cost, m, s) of the relaxed trajectories of pr under (Lam, Mu), exact integers."""
    M = pr.E[0].size - 1
    lo, hi = pr.a, pr.a + M
    P = np.zeros((2, M), dtype=np.int64)
    mu = np.zeros(M, dtype=np.int64)
    if lo < H:
        P[:, :min(hi, H) - lo] = Lam[pr.n, :, lo:min(hi, H)]
        if Mu is not None:
            mu[:min(hi, H) - lo] = Mu[pr.n, lo:min(hi, H)]
    if COUPLED and Mu is not None:
        return _price_coupled(pr, P, mu, M)
    pm = np.minimum.accumulate(mu)  # cheapest first start in [a, a + i], and where
    arg = np.maximum.accumulate(np.where(mu == pm, np.arange(M), 0))
    best = None
    m0 = pr.d
    while m0 <= M and (best is None or (m0 << SCALE) < best[0]):
        ms = np.arange(m0, min(m0 + _BATCH, M + 1))
        cost = (ms << SCALE) + fill(P[0], pr.E[0], pr.u[0], ms) + fill(P[1], pr.E[1], pr.u[1], ms)
        cost = cost + pm[ms - pr.d]
        i = int(np.argmin(cost))
        if best is None or cost[i] < best[0]:
            best = (int(cost[i]), int(ms[i]), int(arg[ms[i] - pr.d]))
        m0 += _BATCH
    return best


#: first starts priced per batch in variant single
_STARTS = 8


def _price_coupled(pr: Pair, P: np.ndarray, mu: np.ndarray, M: int):
    """Variant single: per first start a + i the usage lies in [a + i, a + m) and needs
    E*(m - i) (at most m - i executed steps); (least cost, m, i), the first least in the order
    (i, m).  First i = 0, _BATCH windows at a time; then, _STARTS first starts at a time, every (i, w)
    whose flow time and start price alone, ((i + w) << SCALE) + mu[i], are below the least cost
    so far (the fills are >= 0)."""
    d = pr.d

    def cost(i, w):
        return ((i + w) << SCALE) + mu[i] + _fill_rows(P[0], pr.E[0], pr.u[0], i, w) \
            + _fill_rows(P[1], pr.E[1], pr.u[1], i, w)

    best = None
    w0 = d
    while w0 <= M and (best is None or ((w0 << SCALE) + mu[0]) < best[0]):
        w = np.arange(w0, min(w0 + _BATCH, M + 1))
        c = cost(np.zeros(w.size, dtype=np.int64), w)
        k = int(np.argmin(c))
        if best is None or c[k] < best[0]:
            best = (int(c[k]), int(w[k]), 0)
        w0 += _BATCH
    i0 = 1
    while i0 <= M - d and ((i0 + d) << SCALE) < best[0]:
        i = np.arange(i0, min(i0 + _STARTS, M - d + 1))
        top = np.minimum(M - i, ((best[0] - 1 - mu[i]) >> SCALE) - i)  # the largest w worth pricing
        n = np.maximum(top - d + 1, 0)
        if n.sum():
            I = np.repeat(i, n)
            W = d + np.arange(I.size) - np.repeat(np.cumsum(n) - n, n)
            c = cost(I, W)
            k = int(np.argmin(c))
            if c[k] < best[0]:
                best = (int(c[k]), int(I[k] + W[k]), int(I[k]))
        i0 += _STARTS
    return best


def _column(pr: Pair, m: int, s: int, Lam: np.ndarray, H: int, single: bool):
    """Usage {(n, r, t): amount} (t < H only) of the cheapest fill of pr completing after m steps."""
    use = {}
    for r in (0, 1):
        first = s if COUPLED and single else 0
        e, u = int(pr.E[r][m - first]), pr.u[r]
        if e == 0:
            continue
        ts = np.arange(pr.a + first, pr.a + m)
        P = np.array([Lam[pr.n, r, t] if t < H else 0 for t in ts], dtype=np.int64)
        for t in ts[np.argsort(P, kind="stable")]:
            x = min(u, e)
            if t < H:
                use[(pr.n, r, int(t))] = x
            e -= x
            if e == 0:
                break
    return use


def price(pairs, Lam: np.ndarray, Mu: np.ndarray | None, H: int, deadline: Deadline = NEVER):
    """Per task the list of (least cost, pair, m, s), one per eligible cluster, cheapest first;
    tasks that can finish nowhere: [] (they add >= 0).  ``deadline`` is checked per task."""
    out = []
    for prs in pairs:
        deadline.check("pricing")
        out.append(sorted((_price_pair(pr, Lam, Mu, H) + (pr,) for pr in prs), key=lambda x: (x[0], x[3].n)))
    return out


def _value(payload, priced, Lam: np.ndarray, Mu: np.ndarray | None) -> int:
    """ceil(L): the cheapest trajectory per task minus the multipliers times the capacities."""
    caps = np.array([[c.capacity.cpu, c.capacity.gpu] for c in payload.clusters], dtype=np.int64)
    total = sum(p[0][0] for p in priced if p)
    total -= int((Lam * caps[:, :, None]).sum())
    if Mu is not None:
        total -= int(Mu.sum())
    return -((-total) >> SCALE)  # ceiling of total / 2**SCALE


def certified_value(payload, pairs, Lam: np.ndarray, Mu: np.ndarray | None, H: int) -> int:
    """ceil(L(Lam, Mu)): exact integers on the grid 2**-SCALE, valid for any Lam, Mu >= 0."""
    assert (Lam >= 0).all() and (Mu is None or (Mu >= 0).all())
    return _value(payload, price(pairs, Lam, Mu, H), Lam, Mu)


def first_fit(free: np.ndarray, slot: np.ndarray | None, a: int, c: int, g: int, k: int) -> int | None:
    """The first step s >= a from which (c, g) fits in ``free`` (2 x T: cpu, gpu left per step)
    for the k steps s..s+k-1, with ``slot[s]`` free (None: no start rule); None if none does."""
    ok = (free[0] >= c) & (free[1] >= g)
    run = np.concatenate([[0], np.cumsum(ok)])
    window = run[k:] - run[:-k] == k  # window[s]: steps s..s+k-1 all fit
    starts = np.nonzero(window[a:] & (slot[a:a + window.size - a] if slot is not None else True))[0]
    return a + int(starts[0]) if starts.size else None


def greedy_columns(payload, durations, deadline: Deadline = NEVER):
    """A feasible fixed-allocation schedule (list scheduling by arrival, each task at the
    (cluster, dominant option, first start) finishing earliest within the residual capacities
    and, variant single, free start slots): per task (cluster, start, option).  It only seeds
    the master LP and its horizon; the certified value never depends on it.  ``deadline`` is
    checked per task."""
    T = sum(max(row.values()) for row in durations if row) + max(int(t.arrival) for t in payload.tasks) + 1
    N = len(payload.clusters)
    free = np.array([[[c.capacity.cpu] * T, [c.capacity.gpu] * T] for c in payload.clusters], dtype=np.int64)
    slot = np.ones((N, T), dtype=bool)
    single = payload.variant == "single"
    out = [None] * len(durations)
    order = sorted((int(payload.tasks[j].arrival), min(row.values()), j) for j, row in enumerate(durations) if row)
    for a, _, j in order:
        deadline.check("building the greedy schedule")
        best = None
        for n in sorted(durations[j]):
            for c, g, k in semantics.dominant_options(payload, j, n):
                s = first_fit(free[n], slot[n] if single else None, a, c, g, k)
                if s is not None and (best is None or s + k < best[0]):
                    best = (s + k, n, s, (c, g, k))
        assert best is not None, "the greedy horizon holds every task"
        F, n, s, (c, g, k) = best
        free[n, 0, s:F] -= c
        free[n, 1, s:F] -= g
        slot[n, s] = False
        out[j] = (n, s, (c, g, k))
    return out


def horizon(payload, greedy) -> int:
    """Steps with multipliers: the greedy schedule's makespan (any value is valid; steps after
    it are priced 0)."""
    return max(s + k for _, s, (_, _, k) in (g for g in greedy if g is not None)) + 1


def _to_grid(v: np.ndarray) -> np.ndarray:
    return np.floor(np.maximum(v, 0.0) * (1 << SCALE)).astype(np.int64)


def smoothed_points(center: np.ndarray, lp: np.ndarray, smoothing: float):
    """The points priced in a column-generation round, in order: the master's duals ``lp``
    smoothed towards the best point ``center`` (Wentges, weight ``smoothing``), then the plain
    duals; each as (float point, its integers on the grid 2**-SCALE)."""
    for alpha in ((smoothing, 0.0) if smoothing > 0 else (0.0,)):
        pi = alpha * center + (1 - alpha) * lp
        yield pi, _to_grid(pi)


def generate_columns(master, center, best: int, best_grid: np.ndarray, price_point, *, rounds: int,
                     smoothing: float, stop=None, deadline: Deadline = NEVER) -> tuple[int, np.ndarray]:
    """Column generation on ``master`` (the one loop of (4) and (6)): per round solve the master,
    price its smoothed duals and then its plain duals (:func:`smoothed_points`) —
    ``price_point(grid) -> (certified value, candidate columns)`` — until a point gives columns
    that improve the master, and keep the best certified point.  Stops when no column improves,
    when the certified value reaches the master's ceiling (L <= the Lagrangian dual <= the master
    LP), or when ``stop(round, round of the last gain)`` says so.  Returns (best, its grid).
    ``deadline`` raises :class:`.Expired` (checked each round; the master's HiGHS gets the time
    left): the loop never ends early because of the clock, so its result never depends on it."""
    last_gain = 0
    for rnd in range(rounds):
        deadline.check("generating columns")
        sol = master.solve(deadline)
        if sol is None:
            deadline.check("solving the master LP")
            break
        obj, lp, u = sol
        new = []
        for pi, grid in smoothed_points(center, lp, smoothing):
            val, cand = price_point(grid)
            if val > best:
                best, center, best_grid, last_gain = val, pi, grid, rnd
            new = [c for c in cand if c[0] + float(lp[c[1]] @ c[2]) < u[c[3]] - 1e-7]
            if new:
                break
        master.add(new)
        _log.debug("round %d: %d columns, master LP %.4f, certified %d, %d added", rnd, master.ncols, obj, best,
                   len(new))
        if not new or best >= np.ceil(obj - 1e-6) or (stop is not None and stop(rnd, last_gain)):
            break
    return best, best_grid


class MasterLP:
    """The restricted master LP in highspy (one thread): rows = per cluster, resource and step
    the capacity, (single) per cluster and step the first starts, one convexity row per task,
    then the cuts added by :meth:`add_cut` (bound (6)'s rounding cuts); columns are added between
    solves and HiGHS re-solves from its last basis.  A column's rows index the *dual vector* of
    :meth:`solve`: capacities and starts first, then cut k at ``nrows + k``."""

    def __init__(self, caps: np.ndarray, H: int, single: bool, ntasks: int, track_entries: bool = False):
        N = caps.shape[0]
        self.H, self.single, self.ncap, self.ntasks, self.ncuts = H, single, N * 2 * H, ntasks, 0
        self.track_entries = track_entries  # keep the capacity rows' entries (:meth:`entry`)
        self.nrows = self.ncap + (N * H if single else 0)
        self.h = h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        ub = np.concatenate([np.repeat(caps.reshape(-1).astype(float), H), np.ones(self.nrows - self.ncap),
                             np.ones(ntasks)])
        lb = np.concatenate([np.full(self.nrows, -highspy.kHighsInf), np.ones(ntasks)])
        h.addRows(ub.size, lb, ub, 0, np.zeros(ub.size, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))
        self.ncols = 0
        self.entries: dict[int, tuple[list, list]] = {}  # capacity row -> (columns, amounts)
        self.meta: list[tuple[int, int, int]] = []  # per column: (live task, cost F - a, cluster)

    def column(self, i: int, pr: Pair, m: int, s: int, use: dict):
        """(cost, rows, values, i): a trajectory of live task i (rows without its convexity row)."""
        H = self.H
        rows = [(n * 2 + r) * H + t for (n, r, t) in use]
        vals = [float(x) for x in use.values()]
        if self.single and pr.a + s < H:
            rows.append(self.ncap + pr.n * H + pr.a + s)
            vals.append(1.0)
        return float(m), np.array(rows, dtype=np.int64), np.array(vals), i

    def add(self, cols: list) -> None:
        if not cols:
            return
        idx = [np.append(np.where(r < self.nrows, r, r + self.ntasks), self.nrows + i) for _, r, _, i in cols]
        starts = np.cumsum([0] + [x.size for x in idx[:-1]]).astype(np.int32)
        values = np.concatenate([np.append(v, 1.0) for _, _, v, _ in cols])
        for c, (_, r, v, _) in enumerate(cols if self.track_entries else ()):
            for rr, x in zip(r[r < self.ncap].tolist(), v[r < self.ncap].tolist()):
                ent = self.entries.setdefault(rr, ([], []))
                ent[0].append(self.ncols + c)
                ent[1].append(int(x))
        for cost, r, _, i in cols:
            self.meta.append((int(i), int(round(cost)), self._cluster(r)))
        self.h.addCols(len(cols), np.array([c for c, _, _, _ in cols]), np.zeros(len(cols)),
                       np.full(len(cols), highspy.kHighsInf), values.size, starts,
                       np.concatenate(idx).astype(np.int32), values)
        self.ncols += len(cols)

    def _cluster(self, rows: np.ndarray) -> int:
        """A column's cluster, from its first capacity or start row (-1 when it has neither)."""
        cap = rows[rows < self.ncap]
        if cap.size:
            return int(cap[0] // (2 * self.H))
        st = rows[(rows >= self.ncap) & (rows < self.nrows)]
        return int((st[0] - self.ncap) // self.H) if st.size else -1

    def entry(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """(columns, their amounts) in the capacity row ``row``, over the columns added so far
        (``track_entries`` on)."""
        cols, vals = self.entries.get(row, ([], []))
        return np.array(cols, dtype=np.int64), np.array(vals, dtype=np.int64)

    def add_cut(self, cols: np.ndarray, coef: np.ndarray, rhs: float) -> None:
        """The row ``sum coef y[cols] <= rhs`` over columns added so far (zero coefficients
        left out); its dual follows the capacities' and starts' in :meth:`solve`."""
        nz = np.nonzero(coef)[0]
        self.h.addRow(-highspy.kHighsInf, float(rhs), int(nz.size), cols[nz].astype(np.int32),
                      coef[nz].astype(float))
        self.ncuts += 1

    def solve(self, deadline: Deadline = NEVER):
        """(LP value, capacity, start and cut duals >= 0, convexity duals), or None if HiGHS fails
        (or stops at ``deadline``'s time left, its own time limit: the caller checks the deadline)."""
        self.h.setOptionValue("time_limit", highspy.kHighsInf if deadline.at is None else max(1e-3, deadline.remaining()))
        self.h.run()
        if self.h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        rd = np.array(self.h.getSolution().row_dual)
        end = self.nrows + self.ntasks
        duals = np.maximum(-np.concatenate([rd[:self.nrows], rd[end:]]), 0.0)
        return self.h.getInfo().objective_function_value, duals, rd[self.nrows:end]

    def primal(self) -> np.ndarray:
        """The last solve's column values."""
        return np.array(self.h.getSolution().col_value)

    def close(self) -> None:
        """Free HiGHS's model and solver data now (issue 46; :func:`.highs_model.release`: highspy's
        ``Highs`` object is in a reference cycle, so without it its C++ model, about 14 MB for a
        192-task node master of bound (8), waited for a full run of Python's cyclic collector and
        placement-bnp passed the runner's 4 GiB address-space limit).  Called when a master is done
        with, and when it is freed (:meth:`__del__`); the master is unusable afterwards."""
        h, self.h = getattr(self, "h", None), None
        release(h)

    def __del__(self) -> None:
        self.close()


def assignment_duals(payload, durations, H: int, deadline: Deadline = NEVER):
    """Variant single: the start-slot assignment (2) with slots t < H (one first start each) and
    per cluster an unlimited tail slot at H (no multiplier exists from H on), solved as an LP
    (a transportation problem: integral primal and dual vertices).  Returns (its value, the slot
    duals M (N, H) >= 0, per live task its (cluster, first start)).  With Lam = 0 the cheapest
    trajectory of task j on n first starting at s costs s - a_j + d_j(n) + M[n, s], the
    assignment's reduced cost, so L(0, M) is this LP's dual value: its value.  It is at most
    (2) (slots from H on merged into the tail), and equal to (2) when the tail of each cluster
    holds at most one task (that solution is then an assignment of distinct slots, the tail
    being slot H); :func:`lagrangian_multipliers` widens H until it does."""
    N = len(payload.clusters)
    live = [j for j, row in enumerate(durations) if row]
    K = sum(max(H, a) - a + 1 for a, j in ((int(payload.tasks[j].arrival), j) for j in live) for _ in durations[j])
    if K > MAX_ASSIGNMENT_ENTRIES:
        raise BoundTooLarge(f"start-slot assignment LP too large: {K:,} (task, cluster, slot) entries for "
                            f"{len(live):,} tasks up to step {H:,}, budget {MAX_ASSIGNMENT_ENTRIES:,}")
    left = deadline.remaining()
    if left is not None and left < ASSIGNMENT_SECONDS_PER_ENTRY * K:
        raise Expired(f"solving the start-slot assignment (not started: {K:,} entries need about "
                      f"{ASSIGNMENT_SECONDS_PER_ENTRY * K:.1f} s, {left:.1f} s left)")
    cost, slot, task, where = [], [], [], []
    for i, j in enumerate(live):
        deadline.check("building the start-slot assignment")
        a = int(payload.tasks[j].arrival)
        for n, d in sorted(durations[j].items()):
            for t in range(a, max(H, a) + 1):  # t = max(H, a): the tail
                cost.append(t - a + d)
                slot.append(n * H + t if t < H else -1)
                task.append(i)
                where.append((n, t))
    slot, K = np.array(slot), len(cost)
    inside = np.nonzero(slot >= 0)[0]
    A_ub = sp.csr_matrix((np.ones(inside.size), (slot[inside], inside)), shape=(N * H, K))
    A_eq = sp.csr_matrix((np.ones(K), (np.array(task), np.arange(K))), shape=(len(live), K))
    deadline.check("building the start-slot assignment")
    # HiGHS's clock starts after scipy's set-up: give it the time left after the estimated set-up
    limit = {} if deadline.at is None else {
        "options": {"time_limit": max(1e-3, deadline.remaining() - 0.8 * ASSIGNMENT_SECONDS_PER_ENTRY * K)}}
    res = linprog(np.array(cost, dtype=float), A_ub=A_ub, b_ub=np.ones(N * H), A_eq=A_eq,
                  b_eq=np.ones(len(live)), bounds=(0, None), method="highs-ds", **limit)
    if res.status == 1 and deadline.at is not None:  # HiGHS stopped at the time it was given
        raise Expired("solving the start-slot assignment")
    assert res.status == 0, res.message
    mu = np.maximum(-res.ineqlin.marginals, 0.0)
    if np.allclose(mu, np.rint(mu), atol=1e-7):  # a dual vertex of a TU system is integral
        mu = np.rint(mu)
    chosen: list = [None] * len(live)
    for k in np.argsort(res.x, kind="stable"):  # the largest share last: an integral vertex has one 1 per task
        chosen[task[k]] = where[k]
    return int(round(res.fun)), mu.reshape(N, H), chosen


def lagrangian_multipliers(payload, durations, *, rounds: int = ROUNDS, smoothing: float = 0.5,
                           deadline: Deadline | float | None = None):
    """(certified value, Lam (N, 2, H) int64, Mu (N, H) int64 or None (variant multi), H): the
    best priced point (multipliers as integers on the grid 2**-SCALE; ``certified_value(payload,
    task_pairs(payload, durations, H), Lam, Mu, H)`` recomputes the value).  Column generation on the
    master LP (:class:`MasterLP`), seeded with the greedy schedule (feasible) and, in variant
    single, started from the start-slot assignment's duals (Lam = 0, so the first certified
    point is the assignment's value up to the horizon, and the bound only climbs from there);
    the duals are smoothed towards the best point so far (Wentges) before pricing.  Stops after
    ``rounds`` rounds, when no column improves the master, or when the certified value reaches
    the master's (L <= Lagrangian dual <= master LP): deterministic, no clock.  ``deadline``
    (:class:`.Deadline` or a ``time.perf_counter()`` value) raises :class:`.Expired` in any phase
    once it has passed; what returns is the same with or without it."""
    deadline = Deadline.of(deadline)
    N = len(payload.clusters)
    single = payload.variant == "single"
    if not any(durations):
        return 0, np.zeros((N, 2, 0), dtype=np.int64), (np.zeros((N, 0), dtype=np.int64) if single else None), 0
    # the horizon is at least every task's arrival plus its fewest steps: refuse at once what it would
    check_budgets(payload, durations, max(int(t.arrival) + min(row.values()) for t, row in zip(payload.tasks, durations)
                                          if row) + 1)
    greedy = greedy_columns(payload, durations, deadline)
    H = horizon(payload, greedy)
    if single:  # a horizon at which the assignment's LP is (2) itself: see assignment_duals
        while True:
            _, mu, chosen = assignment_duals(payload, durations, H, deadline)
            tail = np.bincount([n for n, t in chosen if t >= H], minlength=N)
            if tail.max() <= 1:
                break
            H += int(tail.max())
    pairs = task_pairs(payload, durations, H, deadline)
    caps = np.array([[c.capacity.cpu, c.capacity.gpu] for c in payload.clusters], dtype=np.int64)
    live = [j for j in range(len(pairs)) if pairs[j]]
    master = MasterLP(caps, H, single, len(live))
    ncap = master.ncap

    def split(grid):
        return grid[:ncap].reshape(N, 2, H), (grid[ncap:].reshape(N, H) if single else None)

    center = np.zeros(master.nrows)
    cols = []
    for i, j in enumerate(live):  # the greedy schedule: a feasible master
        deadline.check("building the master LP")
        n, s0, (c, g, k) = greedy[j]
        pr = next(q for q in pairs[j] if q.n == n)
        use = {(n, r, t): x for t in range(s0, min(s0 + k, H)) for r, x in ((0, c), (1, g)) if x}
        cols.append(master.column(i, pr, s0 + k - pr.a, s0 - pr.a, use))
    if single:  # warm start: the assignment's duals and its slots
        center[ncap:] = mu.reshape(-1)
        for i, j in enumerate(live):
            n, t = chosen[i]
            pr = next(q for q in pairs[j] if q.n == n)
            s = t - pr.a
            cols.append(master.column(i, pr, s + pr.d, s, _column(pr, s + pr.d, s, split(_to_grid(center))[0], H, True)))
    best_grid = _to_grid(center)
    Lam, Mu = split(best_grid)
    priced = price(pairs, Lam, Mu, H, deadline)
    best = _value(payload, priced, Lam, Mu)
    for i, j in enumerate(live):
        deadline.check("building the master LP")
        for _, m, s, pr in priced[j]:
            cols.append(master.column(i, pr, m, s, _column(pr, m, s, Lam, H, single)))
    master.add(cols)
    _log.debug("start: certified %d at H = %d", best, H)
    def price_point(grid):
        Lam, Mu = split(grid)
        priced = price(pairs, Lam, Mu, H, deadline)
        return _value(payload, priced, Lam, Mu), [master.column(i, pr, m, s, _column(pr, m, s, Lam, H, single))
                                                  for i, j in enumerate(live) for _, m, s, pr in priced[j]]

    best, best_grid = generate_columns(master, center, best, best_grid, price_point, rounds=rounds,
                                       smoothing=smoothing, deadline=deadline)
    Lam, Mu = split(best_grid)
    return best, Lam.copy(), (Mu.copy() if single else None), H


def lagrangian_bound(payload, durations, *, rounds: int = ROUNDS, smoothing: float = 0.5,
                     deadline: Deadline | float | None = None) -> int:
    """The certified value of :func:`lagrangian_multipliers` (0 when no task can finish)."""
    return lagrangian_multipliers(payload, durations, rounds=rounds, smoothing=smoothing, deadline=deadline)[0]
