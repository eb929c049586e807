"""The integer time-indexed relaxation R of the placement referee's problem, made small by
certified reduced-cost fixing (issue 23; the root bound of ``placement-exact``).  Proofs:
docs/formulations/placement.md, "(5) The integer time-indexed relaxation R".

R is the relaxation behind the Lagrangian bound (4) (:mod:`placement.bounds.lagrange`) with the
integrality of each task's choice kept: a binary y per column (task j, eligible cluster n,
first start s >= a_j, completion F with F - s >= d_j(n); variant multi: s = a_j only), one
column per task, cost F - a_j; continuous usage x_{j,n,r,t} in [0, u_r] only inside the
chosen window [s, F), at least E*_r(F - s) of it (``energy_front``); per-step capacities;
variant single: at most one first start per cluster and step.

* :func:`fix_columns` — for multipliers (Lam, Mu) >= 0 of (4) and a number U, every schedule
  of value <= U - 1 uses only columns whose exact integer price exceeds its task's cheapest
  by at most ``slack = (U - 1) 2^S + sum Lam C + sum Mu - sum_j min price_j``; the survivors
  (or a proof that none can: slack < 0);
* :func:`build` — R on the survivors, with the objective cap ``sum (F - a) y <= U - 1`` and
  the reduced-price knapsack row ``sum (price - min price) y <= slack`` (both valid for those
  schedules), as a :class:`~formulations.linear.LinearModel`;
* :func:`solve` — HiGHS (one thread, deterministic, time limit); :func:`decode` — per task the
  chosen (cluster, start, completion);
* :func:`timip_bound` — every referee-feasible schedule has value >= min(U, restricted
  optimum); returned as an integer with the HiGHS tolerance ``TOL``, or None and a reason.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from edgebench.formulations.linear import LinearModel, LinearSolution
from edgebench.formulations.placement.bounds.ladder import cluster_durations, proof_applies
from edgebench.formulations.placement.deadline import Deadline, Expired
from edgebench.formulations.placement.highs import solve_highs
from edgebench.formulations.placement.bounds.lagrange import SCALE, BoundTooLarge, fill, energy_front, lagrangian_multipliers, Pair
from edgebench.instances import semantics

#: decline when more columns than this survive the fixing (a large gap: fail fast; measured: 9.4k
#: columns solve in about a minute, 54k exhausted a 4 GiB run in HiGHS, 100k+ do not build in time)
MAX_COLUMNS = 30_000
#: HiGHS's dual bound is trusted up to this much (its feasibility tolerances are 1e-7)
TOL = 1e-4
#: first window tried when searching a task's cheapest column (doubled until proven)
_W0 = 8
#: decline before pricing more than this many candidate columns per surviving one allowed
_PRICED_PER_COLUMN = 10


class WindowPair(Pair):
    """Task j on cluster n (:class:`placement.bounds.lagrange.Pair`: arrival a, fewest steps d,
    per-step caps u[r], fronts E[r][w]), its fronts extended on demand."""

    def front(self, payload, w: int) -> tuple[np.ndarray, np.ndarray]:
        """The fronts for windows 0..w (recomputed longer when needed)."""
        if self.E[0].size <= w:
            L = max(w + 1, 2 * self.E[0].size)
            self.E = tuple(energy_front(payload, self.j, self.n, r, self.d, L) for r in (0, 1))
        return self.E


def pairs(payload, durations) -> list[list[WindowPair]]:
    """Per task its eligible clusters where it can finish, as :class:`WindowPair`."""
    out = []
    for j, row in enumerate(durations):
        prs = []
        for n, d in sorted(row.items()):
            opts = semantics.allocation_options(payload, j, n)
            empty = np.zeros(0, dtype=np.int64)
            prs.append(WindowPair(j, n, int(payload.tasks[j].arrival), int(d),
                             (max(c for c, _ in opts), max(g for _, g in opts)), (empty, empty)))
        out.append(prs)
    return out


def column_prices(payload, pr: WindowPair, Lam: np.ndarray, Mu: np.ndarray | None, wmax: int, single: bool):
    """(s, F, price) arrays of every column of pr with F - a <= wmax; price in units of 2^-S:
    (F - a) 2^S + Mu[n, s] + per resource the cheapest spread of E*_r(F - s) units over
    [s, F), at most u_r per step, at prices Lam[n, r, .] (0 from step H on).  Variant multi:
    s = a only, E*_r(F - a) over [a, F)."""
    H = Lam.shape[2]
    E = pr.front(payload, wmax)
    P = np.zeros((2, wmax), dtype=np.int64)
    mu = np.zeros(wmax, dtype=np.int64)
    lo, hi = pr.a, min(pr.a + wmax, H)
    if lo < hi:
        P[:, :hi - lo] = Lam[pr.n, :, lo:hi]
        if Mu is not None:
            mu[:hi - lo] = Mu[pr.n, lo:hi]
    S, F, C = [], [], []
    for i in (range(wmax - pr.d + 1) if single else (0,)):
        ws = np.arange(pr.d, wmax - i + 1)
        if ws.size == 0:
            break
        cost = ((i + ws) << SCALE) + fill(P[0, i:], E[0], pr.u[0], ws) + fill(P[1, i:], E[1], pr.u[1], ws)
        if single:
            cost = cost + mu[i]
        S.append(np.full(ws.size, pr.a + i))
        F.append(pr.a + i + ws)
        C.append(cost)
    if not S:
        return (np.zeros(0, dtype=np.int64),) * 3
    return np.concatenate(S), np.concatenate(F), np.concatenate(C)


def min_price(payload, prs: list[WindowPair], Lam, Mu, single: bool) -> int:
    """The cheapest column price of a task over all its columns: windows up to w are priced
    until (w + 1) 2^S is at least the cheapest found (every longer column costs more)."""
    best = None
    w = max(pr.d for pr in prs) + _W0
    while True:
        for pr in prs:
            c = column_prices(payload, pr, Lam, Mu, w, single)[2]
            if c.size:
                best = int(c.min()) if best is None else min(best, int(c.min()))
        if best is not None and ((w + 1) << SCALE) >= best:
            return best
        w *= 2


@dataclass
class Columns:
    """The columns that survive the fixing: per column its task, cluster, start, completion,
    price - min price (2^-S units) and energies E*_r(F - s); the proof's constants."""

    task: np.ndarray
    cluster: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    reduced: np.ndarray
    energy: np.ndarray  # (K, 2)
    slack: int  # (U - 1) 2^S + K - sum_j min price_j, 2^-S units
    lagrangian: int  # ceil of sum_j min price_j - K: (4)'s certified value at these multipliers
    pairs: list = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.task.size)


class TooManyColumns(Exception):
    """More than the cap of columns survive the fixing."""


#: the deadline passed while fixing or building (R declines): the one :class:`.Expired`
OutOfTime = Expired


def check_deadline(deadline: Deadline | float | None, what: str) -> None:
    Deadline.of(deadline).check(what)


def fix_columns(payload, durations, upper: int, Lam: np.ndarray, Mu: np.ndarray | None,
                max_columns: int = MAX_COLUMNS, deadline: float | None = None) -> Columns:
    """Reduced-cost fixing for 'no schedule of value <= upper - 1' (docs): per task the columns
    whose exact price is at most min price + slack; none at all when slack < 0."""
    single = payload.variant == "single"
    caps = np.array([[c.capacity.cpu, c.capacity.gpu] for c in payload.clusters], dtype=np.int64)
    K = int((Lam * caps[:, :, None]).sum()) + (int(Mu.sum()) if Mu is not None else 0)
    prs_all = pairs(payload, durations)
    mins = [min_price(payload, prs, Lam, Mu, single) for prs in prs_all]
    slack = ((upper - 1) << SCALE) + K - sum(mins)
    lagr = -((K - sum(mins)) >> SCALE)  # ceil((sum mins - K) / 2^S)
    cols: dict[str, list] = {k: [] for k in ("task", "cluster", "start", "finish", "reduced", "e0", "e1")}
    total = 0
    if slack >= 0:
        # every column with F - a <= (min price + slack) / 2^S is priced: refuse early when even
        # that candidate count is out of reach
        cand = 0
        for j, prs in enumerate(prs_all):
            for pr in prs:
                k = max(0, ((mins[j] + slack) >> SCALE) - pr.d + 1)
                cand += k * (k + 1) // 2 if single else k
        if cand > _PRICED_PER_COLUMN * max_columns:
            raise TooManyColumns(f"more than {max_columns} columns may survive the fixing ({cand} candidates, "
                                 f"slack {slack / (1 << SCALE):.2f})")
        for j, prs in enumerate(prs_all):
            top = mins[j] + slack
            check_deadline(deadline, "fixing")
            for pr in prs:
                s, F, c = column_prices(payload, pr, Lam, Mu, top >> SCALE, single)
                keep = c <= top
                total += int(keep.sum())
                if total > max_columns:
                    raise TooManyColumns(f"more than {max_columns} columns survive the fixing (slack "
                                         f"{slack / (1 << SCALE):.2f})")
                E = pr.front(payload, int(F.max() - s.min()) if F.size else 0)
                cols["task"].append(np.full(int(keep.sum()), j))
                cols["cluster"].append(np.full(int(keep.sum()), pr.n))
                cols["start"].append(s[keep])
                cols["finish"].append(F[keep])
                cols["reduced"].append(c[keep] - mins[j])
                cols["e0"].append(E[0][F[keep] - s[keep]])
                cols["e1"].append(E[1][F[keep] - s[keep]])
    arr = {k: (np.concatenate(v) if v else np.zeros(0, dtype=np.int64)).astype(np.int64) for k, v in cols.items()}
    return Columns(arr["task"], arr["cluster"], arr["start"], arr["finish"], arr["reduced"],
                   np.stack([arr["e0"], arr["e1"]], axis=1), slack, lagr, prs_all)


@dataclass
class Model:
    """R on the surviving columns: the LinearModel and where each column's y is."""

    lp: LinearModel
    y: np.ndarray  # variable index per column
    cols: Columns


def build(payload, cols: Columns, upper: int, deadline: float | None = None) -> Model:
    """R restricted to ``cols``, with the objective cap and the reduced-price knapsack row."""
    m = LinearModel("placement-timip")
    single = payload.variant == "single"
    arr = np.array([int(t.arrival) for t in payload.tasks], dtype=np.int64)
    y = np.array([m.add_binary(f"y{k}") for k in range(len(cols))], dtype=np.int64)
    J = len(payload.tasks)
    by_task: list[list[int]] = [[] for _ in range(J)]
    for k, j in enumerate(cols.task.tolist()):
        by_task[j].append(k)
    for j in range(J):
        m.add_eq([(y[k], 1.0) for k in by_task[j]], 1.0, f"one[{j}]")
    caps = [(c.capacity.cpu, c.capacity.gpu) for c in payload.clusters]
    use: dict[tuple[int, int, int], list[tuple[int, float]]] = {}
    for pr in (pr for prs in cols.pairs for pr in prs):
        check_deadline(deadline, "building R")
        ks = [k for k in by_task[pr.j] if cols.cluster[k] == pr.n]
        if not ks:
            continue
        lo, hi = int(cols.start[ks].min()), int(cols.finish[ks].max())
        for r in (0, 1):
            if pr.u[r] == 0 or not cols.energy[ks, r].any():
                continue
            xs = {t: m.add_var(f"x[{pr.j},{pr.n},{r},{t}]", 0.0, float(pr.u[r])) for t in range(lo, hi)}
            for t, v in xs.items():
                cover = [(y[k], -float(pr.u[r])) for k in ks if cols.start[k] <= t < cols.finish[k]]
                m.add_le([(v, 1.0)] + cover, 0.0, f"link[{pr.j},{pr.n},{r},{t}]")
                use.setdefault((pr.n, r, t), []).append((v, 1.0))
            m.add_ge([(v, 1.0) for v in xs.values()] + [(y[k], -float(cols.energy[k, r])) for k in ks], 0.0,
                     f"energy[{pr.j},{pr.n},{r}]")
    for (n, r, t), terms in sorted(use.items()):
        m.add_le(terms, float(caps[n][r]), f"cap[{n},{r},{t}]")
    if single:
        starts: dict[tuple[int, int], list[tuple[int, float]]] = {}
        for k in range(len(cols)):
            starts.setdefault((int(cols.cluster[k]), int(cols.start[k])), []).append((y[k], 1.0))
        for (n, t), terms in sorted(starts.items()):
            if len(terms) > 1:
                m.add_le(terms, 1.0, f"start[{n},{t}]")
    cost = (cols.finish - arr[cols.task]).astype(float)
    m.add_le(list(zip(y.tolist(), cost.tolist())), float(upper - 1), "cap_objective")
    scale = float(1 << SCALE)  # a power of two: the coefficients below are exact
    m.add_le(list(zip(y.tolist(), (cols.reduced / scale).tolist())), cols.slack / scale + TOL, "knapsack")
    m.set_objective(list(zip(y.tolist(), cost.tolist())), sense="min")
    return Model(m, y, cols)


def solve(model: Model, *, time_limit: float | None, seed: int = 0) -> LinearSolution:
    """HiGHS on R: one thread, its random seed fixed, the time limit."""
    return solve_highs(model.lp, time_limit=time_limit, threads=1, seed=seed)


def decode(model: Model, sol: LinearSolution) -> list[tuple[int, int, int]] | None:
    """Per task the (cluster, first start, completion) of R's solution, None without one."""
    if sol.values is None:
        return None
    out: list = [None] * (int(model.cols.task.max()) + 1 if len(model.cols) else 0)
    for k in np.nonzero(sol.values[model.y] > 0.5)[0]:
        out[int(model.cols.task[k])] = (int(model.cols.cluster[k]), int(model.cols.start[k]),
                                        int(model.cols.finish[k]))
    return out


@dataclass
class TimipResult:
    """bound: an integer lower bound of every referee-feasible schedule (None: declined, see
    reason); stats: sizes, times, the relaxed schedule."""

    bound: int | None
    reason: str
    stats: dict = field(default_factory=dict)


def timip_bound(payload, upper: int, *, time_limit: float | None = None, seed: int = 0,
                max_columns: int = MAX_COLUMNS, multipliers=None) -> TimipResult:
    """A lower bound of every referee-feasible schedule's total completion time: U = ``upper``
    if no schedule of value <= U - 1 exists in R (fixing or HiGHS proves it), else the
    restricted optimum (or HiGHS's dual bound at the time limit) rounded up.  Valid for ANY
    integer ``upper`` (docs).  ``multipliers``: (Lam, Mu) grids, default those of (4)."""
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + float(time_limit)
    if not proof_applies(payload):
        return TimipResult(None, "the bound's preconditions do not hold (placement.bounds.ladder.proof_applies)")
    durations = cluster_durations(payload)
    if not all(durations):
        return TimipResult(None, "a task can finish on no cluster")
    upper = int(upper)
    if multipliers is None:
        try:
            _, Lam, Mu, _ = lagrangian_multipliers(payload, durations, deadline=deadline)
        except (Expired, BoundTooLarge) as exc:
            return TimipResult(None, str(exc), {"upper": upper})
    else:
        Lam, Mu = multipliers
    stats: dict = {"upper": upper, "multipliers_s": time.perf_counter() - t0}
    try:
        cols = fix_columns(payload, durations, upper, Lam, Mu, max_columns, deadline)
    except (TooManyColumns, OutOfTime) as exc:
        return TimipResult(None, str(exc), stats)
    stats.update(columns=len(cols), lagrangian=cols.lagrangian, slack=cols.slack / (1 << SCALE),
                 fixing_s=time.perf_counter() - t0 - stats["multipliers_s"])
    if cols.slack < 0 or any(not (cols.task == j).any() for j in range(len(payload.tasks))):
        stats["total_s"] = time.perf_counter() - t0
        return TimipResult(upper, "reduced-cost fixing leaves no schedule of value <= U - 1", stats)
    try:
        model = build(payload, cols, upper, deadline)
    except OutOfTime as exc:
        return TimipResult(None, str(exc), stats)
    left = None if deadline is None else deadline - time.perf_counter()
    if left is not None and left <= 0:
        return TimipResult(None, "out of time before solving R", stats)
    sol = solve(model, time_limit=left, seed=seed)
    stats.update(model=model.lp.size(), highs=sol.message, highs_s=sol.runtime, total_s=time.perf_counter() - t0)
    if sol.status == "infeasible":
        return TimipResult(upper, "R has no point of value <= U - 1", stats)
    stats["relaxed_schedule"] = decode(model, sol)
    if sol.bound is None or not math.isfinite(sol.bound):
        return TimipResult(None, f"HiGHS gave no bound ({sol.status}: {sol.message})", stats)
    return TimipResult(min(upper, math.ceil(sol.bound - TOL)), f"R's {'optimum' if sol.status == 'optimal' else 'dual bound'}",
                       stats)


__all__ = ["timip_bound", "fix_columns", "build", "solve", "decode", "column_prices", "min_price", "MAX_COLUMNS",
           "TOL"]
