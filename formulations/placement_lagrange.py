"""A Lagrangian bound on the placement referee's ``total_completion_time`` that trades a task's
speed against the resources it takes (issue 23, the fourth component of
:func:`formulations.placement_bound.reallocating_bound`).  Proof and preconditions:
docs/formulations/placement.md, "(4) Lagrangian time-indexed energy bound".

* :func:`allocation_levels` — per amount of one resource, the allocation with the largest gain;
* :func:`energy_front` — E*(m): the least resource-steps of any allocation history on a cluster
  that completes within m executed steps (non-increasing in m);
* :func:`price` — for multipliers Lam >= 0 (per cluster, resource, step) and Mu >= 0 (per
  cluster and step: first starts, variant single) given as integers on the grid 2^-SCALE, the
  cheapest relaxed trajectory of each task: a cluster n, a completion F >= a + d(n), a first
  start s in [a, F - d(n)] and per resource the usage E*(F - a) spread over [a, F) at most u per
  step (variant single, ``COUPLED``: E*(F - s) over [s, F)), costing (F - a) + sum Lam x +
  Mu[n, s], all in exact integers;
* :func:`lagrangian_bound` — L = sum_j price_j - sum Lam C - sum Mu is a lower bound for ANY
  multipliers >= 0; they come from a column-generation LP (HiGHS) whose floating answer only
  chooses them: the certified value is recomputed by :func:`price` in integers and rounded up.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from edgebench.instances import semantics

#: multipliers are rounded down to multiples of 2**-SCALE (integers Lam = floor(lambda 2**SCALE))
SCALE = 20
#: completion margin of the energy programme (docs: "Arithmetic")
ENERGY_SLACK = 1e-9
#: column-generation rounds (a fixed count: the bound is deterministic)
ROUNDS = 60
_log = logging.getLogger(__name__)
_BIG = np.int64(1) << 40
#: variant single: price the usage after the first start (E*(F - s) in [s, F))
COUPLED = True


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
class _Pair:
    """Task j on cluster n: fewest steps d, per-step caps u[r], fronts E[r][m], m < M."""

    j: int
    n: int
    a: int
    d: int
    u: tuple[int, int]
    E: tuple[np.ndarray, np.ndarray]


def _pairs(payload, durations, H: int) -> list[list[_Pair]]:
    out = []
    for j, row in enumerate(durations):
        a = int(payload.tasks[j].arrival)
        prs = []
        for n, d in sorted(row.items()):
            opts = semantics.allocation_options(payload, j, n)
            u = (max(c for c, _ in opts), max(g for _, g in opts))
            # beyond H no multiplier: at m >= M = (H - a) + 2d + 2 the fill of E(m) <= u d fits in
            # the free steps after H and a first start at H is free, so m costs m: never cheaper
            M = max(H - a, 0) + 2 * d + 2
            E = tuple(energy_front(payload, j, n, r, d, M + 1) for r in (0, 1))
            prs.append(_Pair(j, n, a, d, u, E))
        out.append(prs)
    return out


def _fill(P: np.ndarray, E: np.ndarray, u: int, ms: np.ndarray) -> np.ndarray:
    """cost[i] of spreading E[ms[i]] units over the first ms[i] steps of prices P, at most u per
    step, cheapest first (exact integers)."""
    if u == 0:
        assert (E[ms] == 0).all()
        return np.zeros(ms.size, dtype=np.int64)
    W = int(ms[-1])
    A = np.where(np.arange(W)[None, :] < ms[:, None], P[None, :W], _BIG)
    A.sort(axis=1)
    cs = np.concatenate([np.zeros((ms.size, 1), dtype=np.int64), np.cumsum(A, axis=1)], axis=1)
    k, rem = np.divmod(E[ms], u)
    assert (k + (rem > 0) <= ms).all(), "a front never needs more than u per executed step"
    rows = np.arange(ms.size)
    nxt = np.where(rem > 0, A[rows, np.minimum(k, W - 1)], 0)
    return u * cs[rows, k] + rem * nxt


#: completions priced per batch; a batch starting at m with m 2**SCALE >= the best cost so far
#: is not priced (every later completion costs at least its flow time m)
_BATCH = 16


def _price_pair(pr: _Pair, Lam: np.ndarray, Mu: np.ndarray | None, H: int):
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
        cost = (ms << SCALE) + _fill(P[0], pr.E[0], pr.u[0], ms) + _fill(P[1], pr.E[1], pr.u[1], ms)
        cost = cost + pm[ms - pr.d]
        i = int(np.argmin(cost))
        if best is None or cost[i] < best[0]:
            best = (int(cost[i]), int(ms[i]), int(arg[ms[i] - pr.d]))
        m0 += _BATCH
    return best


def _price_coupled(pr: _Pair, P: np.ndarray, mu: np.ndarray, M: int):
    """Variant single: per first start a + i the usage lies in [a + i, a + m) and needs
    E*(m - i) (at most m - i executed steps); (least cost, m, i)."""
    best = None
    for i in range(M - pr.d + 1):
        if best is not None and ((i + pr.d) << SCALE) >= best[0]:
            break
        w0 = pr.d
        while w0 <= M - i and (best is None or ((i + w0) << SCALE) + mu[i] < best[0]):
            ws = np.arange(w0, min(w0 + _BATCH, M - i + 1))
            cost = ((i + ws) << SCALE) + mu[i] + _fill(P[0, i:], pr.E[0], pr.u[0], ws) \
                + _fill(P[1, i:], pr.E[1], pr.u[1], ws)
            k = int(np.argmin(cost))
            if best is None or cost[k] < best[0]:
                best = (int(cost[k]), i + int(ws[k]), i)
            w0 += _BATCH
    return best


def _column(pr: _Pair, m: int, s: int, Lam: np.ndarray, H: int, single: bool):
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


def price(pairs, Lam: np.ndarray, Mu: np.ndarray | None, H: int):
    """Per task the list of (least cost, pair, m, s), one per eligible cluster, cheapest first;
    tasks that can finish nowhere: [] (they add >= 0)."""
    return [sorted((_price_pair(pr, Lam, Mu, H) + (pr,) for pr in prs), key=lambda x: (x[0], x[3].n))
            for prs in pairs]


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


def greedy_columns(payload, durations):
    """A feasible fixed-allocation schedule (list scheduling by arrival, each task at the
    (cluster, dominant option, first start) finishing earliest within the residual capacities
    and, variant single, free start slots): per task (cluster, start, option).  It only seeds
    the master LP and its horizon; the certified value never depends on it."""
    T = sum(max(row.values()) for row in durations if row) + max(int(t.arrival) for t in payload.tasks) + 1
    N = len(payload.clusters)
    free = np.array([[[c.capacity.cpu] * T, [c.capacity.gpu] * T] for c in payload.clusters], dtype=np.int64)
    slot = np.ones((N, T), dtype=bool)
    single = payload.variant == "single"
    out = [None] * len(durations)
    order = sorted((int(payload.tasks[j].arrival), min(row.values()), j) for j, row in enumerate(durations) if row)
    for a, _, j in order:
        best = None
        for n in sorted(durations[j]):
            for c, g, k in semantics.dominant_options(payload, j, n):
                ok = (free[n, 0] >= c) & (free[n, 1] >= g)
                run = np.concatenate([[0], np.cumsum(ok)])
                window = run[k:] - run[:-k] == k  # window[s]: steps s..s+k-1 all fit
                starts = np.nonzero(window[a:] & (slot[n, a:a + window.size - a] if single else True))[0]
                if starts.size and (best is None or a + starts[0] + k < best[0]):
                    best = (a + int(starts[0]) + k, n, a + int(starts[0]), (c, g, k))
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


def lagrangian_bound(payload, durations, *, rounds: int = ROUNDS, smoothing: float = 0.5) -> int:
    """Best certified L over the column-generation rounds (0 when no task can finish): the first
    element of :func:`lagrangian_multipliers`."""
    return lagrangian_multipliers(payload, durations, rounds=rounds, smoothing=smoothing)[0]


def lagrangian_multipliers(payload, durations, *, rounds: int = ROUNDS, smoothing: float = 0.5):
    """(certified value, Lam, Mu, H) of the best priced point over the column-generation rounds:
    Lam the int64 grid multipliers (N, 2, H), Mu the first-start ones (N, H) (variant single,
    else None), H the steps with multipliers; (0, zeros, None / zeros, 0) when no task can finish.  The
    master LP has one column per (task, cluster, completion, first start, usage profile), rows
    for the per-step capacities and (single) first starts and one convexity row per task; its
    duals are smoothed towards the best multipliers so far (Wentges) before pricing, and every
    priced point is certified."""
    N = len(payload.clusters)
    single = payload.variant == "single"
    if not any(durations):
        return 0, np.zeros((N, 2, 0), dtype=np.int64), (np.zeros((N, 0), dtype=np.int64) if single else None), 0
    greedy = greedy_columns(payload, durations)
    H = horizon(payload, greedy)
    pairs = _pairs(payload, durations, H)
    caps = np.array([[c.capacity.cpu, c.capacity.gpu] for c in payload.clusters], dtype=float)
    live = [j for j in range(len(pairs)) if pairs[j]]
    ncap = N * 2 * H
    nrows = ncap + (N * H if single else 0)
    cols_cost, cols_rows, cols_vals, cols_task = [], [], [], []

    def add(i, pr, m, s, use):
        rows = [(n * 2 + r) * H + t for (n, r, t), x in use.items()]
        vals = [float(x) for x in use.values()]
        if single and pr.a + s < H:
            rows.append(ncap + pr.n * H + pr.a + s)
            vals.append(1.0)
        cols_cost.append(m)
        cols_rows.append(rows)
        cols_vals.append(vals)
        cols_task.append(i)
        return np.array(rows, dtype=np.int64), np.array(vals)

    zero = np.zeros(nrows, dtype=np.int64)
    Lam0, Mu0 = zero[:ncap].reshape(N, 2, H), (zero[ncap:].reshape(N, H) if single else None)
    priced = price(pairs, Lam0, Mu0, H)
    best, center = _value(payload, priced, Lam0, Mu0), np.zeros(nrows)
    best_point = (Lam0, Mu0)
    for i, j in enumerate(live):
        for c, m, s, pr in priced[j]:
            add(i, pr, m, s, _column(pr, m, s, Lam0, H, single))
        n, s0, (c, g, k) = greedy[j]  # the greedy schedule: a feasible master
        pr = next(q for q in pairs[j] if q.n == n)
        add(i, pr, s0 + k - pr.a, s0 - pr.a, {(n, r, t): x for t in range(s0, s0 + k) for r, x in ((0, c), (1, g))})
    b_ub = np.concatenate([np.repeat(caps.reshape(-1), H), np.ones(nrows - ncap)])
    for _ in range(rounds):
        K = len(cols_cost)
        rr = np.concatenate([np.array(r, dtype=np.int64) for r in cols_rows])
        cc = np.repeat(np.arange(K), [len(r) for r in cols_rows])
        A_ub = sp.csr_matrix((np.concatenate([np.array(v) for v in cols_vals]), (rr, cc)), shape=(nrows, K))
        A_eq = sp.csr_matrix((np.ones(K), (np.array(cols_task), np.arange(K))), shape=(len(live), K))
        res = linprog(np.array(cols_cost, dtype=float), A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=np.ones(len(live)),
                      bounds=(0, None), method="highs")
        if res.status != 0:
            break
        lp = np.maximum(-res.ineqlin.marginals, 0.0)
        u = res.eqlin.marginals
        added = 0
        for alpha in ((smoothing, 0.0) if best > -np.inf and smoothing > 0 else (0.0,)):
            pi = alpha * center + (1 - alpha) * lp
            grid = _to_grid(pi)
            Lam, Mu = grid[:ncap].reshape(N, 2, H), (grid[ncap:].reshape(N, H) if single else None)
            priced = price(pairs, Lam, Mu, H)
            val = _value(payload, priced, Lam, Mu)
            if val > best:
                best, center, best_point = val, pi, (Lam, Mu)
            for i, j in enumerate(live):
                for c, m, s, pr in priced[j]:
                    rows, vals = add(i, pr, m, s, _column(pr, m, s, Lam, H, single))
                    if m + float(lp[rows] @ vals) < u[i] - 1e-7:  # improves the master
                        added += 1
                    else:
                        for lst in (cols_cost, cols_rows, cols_vals, cols_task):
                            lst.pop()
            if added:
                break
        _log.debug("round %d: %d columns, master LP %.4f, certified %d, %d added", _, K, res.fun, best, added)
        # L <= the Lagrangian dual <= the master LP: nothing left to gain once they meet
        if not added or best >= np.ceil(res.fun - 1e-6):
            break
    return best, best_point[0], best_point[1], H
