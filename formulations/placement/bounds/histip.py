"""Bound (7): the exact-history integer master with certified reduced-cost fixing (issue 23).
Proof: docs/formulations/placement.md, "(7) The exact-history integer master".

(6) (:mod:`placement.bounds.trajectory`) prices each task by an allocation history and is an LP
bound; R (:mod:`placement.bounds.timip`) keeps integrality but fills each task's usage continuously
into a window.  (7) keeps both: for (6)'s multipliers (Lam, Mu) >= 0 and a number U,

* :func:`enumerate_columns` lists, per task and eligible cluster, EVERY relaxed history whose
  price is within ``delta = (U - 1) 2^S + sum Lam C + sum Mu - sum_j pi_j`` of the task's least
  price pi_j (a labelling programme like :func:`placement.bounds.trajectory.price_pair` without its
  (progress, cost) Pareto merge: only the dominance 'at least the progress, at most the usage
  at every past step' that is valid for an integer master is applied);
* :func:`build` puts them into an integer master (a binary per column, one per task, per-step
  cpu / gpu / memory capacities over every step used, variant single one first start per
  cluster and step, the objective cap and the reduced-price knapsack row), :func:`solve` runs
  HiGHS (one thread, fixed seed; the time limit may only make (7) decline);
* :func:`histip_bound` returns ``min(U, ceil(optimum - TOL))`` or U when the master is empty or
  infeasible, and the master's schedule decoded into allocation histories when the referee
  accepts it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from edgebench.formulations.linear import LinearModel, LinearSolution
from edgebench.formulations.placement.bounds.ladder import cluster_durations, proof_applies
from edgebench.formulations.placement.highs import solve_highs
from edgebench.formulations.placement.bounds import labelling as LB
from edgebench.formulations.placement.bounds.lagrange import SCALE, BoundTooLarge, lagrangian_multipliers
from edgebench.formulations.placement.bounds.timip import TOL, OutOfTime, TooManyColumns, check_deadline
from edgebench.formulations.placement.bounds.trajectory import (DONE, GRID, Task, price_task, rounded_multipliers,
                                                                tasks_of)
from edgebench.referee.placement import evaluate
from edgebench.solution import AllocationChange, PlacementDecision, PlacementDecisions

#: decline when more columns than this survive (the master is a set-partitioning MIP)
MAX_COLUMNS = 50_000
#: decline when the enumeration holds more labels than this at once (all tasks together)
MAX_LABELS = 400_000


@dataclass
class HistoryColumn:
    """One enumerated history of task j on cluster n: first executed step s, completion F,
    per step from the arrival its option index (-1: paused / not started), price - pi_j."""

    j: int
    n: int
    s: int
    F: int
    hist: tuple
    reduced: int


@dataclass
class Pool:
    """The columns of every task and the proof's constants (2^-S units)."""

    columns: list
    delta: int
    pis: list
    labels: int = 0  # labels extended in all
    per_task: list = field(default_factory=list)


def needed_steps(opt, bs: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """Per label of grid progress ``bs[i]`` after ``ks[i]`` executed steps: the executed steps at
    least still needed, with the best parameter, no loss, rounded up each step (every enumerated
    continuation needs as many); compiled (:func:`placement.bounds.labelling.needed_steps`), the
    noise draws extended until they reach."""
    while True:
        out = LB.needed_steps(np.ascontiguousarray(bs, dtype=np.int64), np.ascontiguousarray(ks, dtype=np.int64),
                              float(opt.param[0]), opt.factors(), opt.synthetic, opt.additive, opt.kappa, opt.base,
                              opt.sigma, GRID, DONE)
        if out.size == 0 or out.min() >= 0:
            return out
        opt.factor(2 * len(opt.noise))  # more noise draws, then the same again


def _usage(opt, hists: np.ndarray) -> np.ndarray:
    """(labels, 2 * steps) usage matrix of option-index histories (-1 = nothing)."""
    cpu = np.append(opt.cpu, 0)
    gpu = np.append(opt.gpu, 0)
    return np.concatenate([cpu[hists], gpu[hists]], axis=1)


def _group_starts(order: np.ndarray, *keys: np.ndarray) -> np.ndarray:
    """Where each group of equal ``keys`` begins in ``order`` (sorted by the keys), and its end:
    :func:`placement.bounds.labelling.undominated_groups`'s ``starts``."""
    change = np.zeros(max(order.size - 1, 0), dtype=bool)
    for key in keys:
        change |= np.diff(key[order]) != 0
    return np.concatenate([[0], np.flatnonzero(change) + 1, [order.size]]).astype(np.int64)


def _undominated_columns(opt, out: list, single: bool) -> tuple:
    """The finished histories ``out`` [(first start, options from the arrival, price, finish)]
    as one such tuple (options padded with -1), the dominated ones left out: same first start
    (multi: any), no earlier completion, no less usage at any step."""
    L = max(x[1].shape[1] for x in out)
    first = np.concatenate([x[0] for x in out])
    hists = np.concatenate([np.pad(x[1], ((0, 0), (0, L - x[1].shape[1])), constant_values=-1) for x in out])
    fin = np.concatenate([x[2] for x in out])
    F = np.concatenate([x[3] for x in out])
    use = _usage(opt, hists)
    group = first if single else np.zeros(first.size, dtype=np.int64)
    order = np.lexsort((use.sum(axis=1), F, group))
    idx = LB.undominated_groups(-F, use, order, _group_starts(order, group))
    return first[idx], hists[idx], fin[idx], F[idx]


def pair_histories(task: Task, n: int, Lam, Mu, H: int, top: int, single: bool, counter: list,
                   max_labels: int, max_columns: int, deadline, cuts=None, nu=None, extra=None,
                   max_changes: int | None = None, floor: int | None = None) -> list:
    """Every relaxed history of task on cluster n with price <= top (absolute, 2^-S units; the
    rounding cuts' terms included where given), the dominated ones (same start, no earlier
    completion, no smaller usage) left out: [(first start, finish, option index per step from
    the arrival (-1 = nothing), price)], sorted.  Every label of a step is extended at once (one
    compiled step, one dominance filter over its groups; session 34: the per-group loop before it
    spent its time on the overhead of small arrays and listed the same histories).  ``extra``: an
    optional (steps from the arrival, options) integer array added to each step's option cost
    (steps past its end: 0); the exact-history search (:mod:`placement.search.histlns`) prices
    an allocation that does not fit beside the kept tasks out of reach with it.  ``max_changes``:
    only histories with at most that many changes after the first start (an allocation switch, a
    pause, a resume; the search's restriction where every history is too many; None, the bound's
    case: all).  ``floor``: only histories with price > floor are returned and counted (the split
    bound's bands, :mod:`placement.bounds.histsplit`; None: all).
    ``counter[0]`` grows by the labels extended; past ``max_labels`` live labels or
    ``max_columns`` columns: TooManyColumns."""
    opt, a = task.opts[n], task.a
    nopt = opt.cpu.size
    more = cuts.step_costs(nu, n, a, opt.cpu, opt.gpu) if (cuts is not None and nu is not None) else None
    limited = max_changes is not None
    every = np.arange(nopt)
    # the labels at the start of step t, one row each: executed steps k, the previous step's option
    # (-1 after a pause or before the start), the first start (-1 before it; multi: -1 throughout,
    # the start matters only through Mu and the start rows), the changes so far, progress on the
    # grid, cost, and the option per step from the arrival (-1 = nothing).  Labels are compared only
    # within a group of equal (k, previous option, first start, changes): a label with fewer changes
    # may still change where the other may not.
    K = np.zeros(1, dtype=np.int64)
    P = np.full(1, -1, dtype=np.int64)
    S = np.full(1, -1, dtype=np.int64)
    M = np.zeros(1, dtype=np.int64)
    B = np.zeros(1, dtype=np.int64)
    C = np.zeros(1, dtype=np.int64)
    Hs = np.zeros((1, 0), dtype=np.int64)
    out = []  # per step: the finished histories' (first start, options, price)
    found = 0
    t = a
    while K.size:
        check_deadline(deadline, "enumerating histories")
        lc, lg = (int(Lam[n, 0, t]), int(Lam[n, 1, t])) if t < H else (0, 0)
        mu = int(Mu[n, t]) if (Mu is not None and t < H) else 0
        allcost = lc * opt.cpu + lg * opt.gpu
        if more is not None and t < H:
            allcost = allcost + more[t - a]
        if extra is not None and t - a < extra.shape[0]:
            allcost = allcost + extra[t - a]
        counter[0] += K.size * (nopt + 1)
        # pause (before the start: wait)
        ok = (((t + 1 + needed_steps(opt, B, K) - a) << SCALE) + C) <= top
        # every option: a switch or a resume is a change (and loses progress); changes are counted
        # only under max_changes (else every label has 0)
        lossy = (every[None, :] != P[:, None]) & (K[:, None] > 0)
        if limited:
            MP = M + ((K > 0) & (P >= 0))
            ok &= MP <= max_changes
            MO = M[:, None] + lossy
        else:
            MP, MO = M, np.zeros(lossy.shape, dtype=np.int64)
        opt.factor(int(K.max()))
        q = LB.step_rows(B.astype(float) / GRID, K, opt.param, opt.factors(), lossy, opt.synthetic, opt.additive,
                         opt.kappa, opt.base, opt.sigma)
        tot = C[:, None] + allcost[None, :] + np.where(K == 0, mu, 0)[:, None]
        allowed = MO <= max_changes if limited else np.ones(MO.shape, dtype=bool)
        reached = q >= DONE
        fin = ((t + 1 - a) << SCALE) + tot
        # an option over the change limit ends no history and extends none
        inside = (fin <= top) if floor is None else (fin <= top) & (fin > floor)
        er, eo = np.nonzero(reached & allowed & inside)
        if er.size:
            hist = np.concatenate([Hs[er], eo[:, None]], axis=1)
            out.append((np.argmax(hist >= 0, axis=1) + a, hist, fin[er, eo],  # first start (multi: not in S)
                        np.full(er.size, t + 1, dtype=np.int64)))
            found += er.size
        if found > max_columns:
            # the dominance over the columns so far (the final filter's survivors are the same:
            # dominance is transitive), then the cap
            out = [_undominated_columns(opt, out, single)]
            found = out[0][0].size
            if found > max_columns:
                raise TooManyColumns(f"more than {max_columns} columns survive the fixing (task {task.j} on "
                                     f"cluster {n} alone, after the dominance)")
        rr, oo = np.nonzero(~reached & allowed)
        nb = np.minimum(np.ceil(q[rr, oo] * GRID).astype(np.int64), GRID)
        nk = K[rr] + 1
        nc = tot[rr, oo]
        keep = (((t + 1 + needed_steps(opt, nb, nk) - a) << SCALE) + nc) <= top
        rr, oo, nb, nk, nc = rr[keep], oo[keep], nb[keep], nk[keep], nc[keep]
        ns = np.where(K[rr] == 0, t, S[rr]) if single else np.full(rr.size, -1, dtype=np.int64)
        K = np.concatenate([K[ok], nk])
        P = np.concatenate([np.full(int(ok.sum()), -1, dtype=np.int64), oo])
        S = np.concatenate([S[ok], ns])
        M = np.concatenate([MP[ok], MO[rr, oo]])
        B = np.concatenate([B[ok], nb])
        C = np.concatenate([C[ok], nc])
        Hs = np.concatenate([np.concatenate([Hs[ok], np.full((int(ok.sum()), 1), -1, dtype=np.int64)], axis=1),
                             np.concatenate([Hs[rr], oo[:, None]], axis=1)])
        # each group's undominated labels (of identical ones the first); the clock is read again
        # before the filter, the step's largest part on a large label set (issue 46)
        check_deadline(deadline, "enumerating histories")
        use = _usage(opt, Hs)
        order = np.lexsort((use.sum(axis=1), -B, M, S, P, K))
        idx = LB.undominated_groups(B, use, order, _group_starts(order, K, P, S, M))
        K, P, S, M, B, C, Hs = K[idx], P[idx], S[idx], M[idx], B[idx], C[idx], Hs[idx]
        if K.size > max_labels:
            raise TooManyColumns(f"more than {max_labels} labels while enumerating the histories of task "
                                 f"{task.j} on cluster {n}")
        t += 1
    if not out:
        return []
    first, hists, fin, F = _undominated_columns(opt, out, single)
    kept = [(int(first[i]), int(F[i]), tuple(hists[i, :F[i] - a].tolist()), int(fin[i])) for i in range(F.size)]
    kept.sort()
    return kept


def least_prices(payload, tasks: list[Task], upper: int, Lam, Mu, H: int, cuts=None, nu=None) -> tuple[list, int]:
    """(pi_j per task, delta) in 2^-S units: each task's least relaxed price and the proof's
    ``delta = (U - 1) 2^S + sum Lam C + sum Mu (+ the cuts' constant) - sum_j pi_j`` (docs, (7))."""
    caps = np.array([[c.capacity.cpu, c.capacity.gpu] for c in payload.clusters], dtype=np.int64)
    K = int((Lam * caps[:, :, None]).sum()) + (int(Mu.sum()) if Mu is not None else 0)
    if cuts is not None and nu is not None:
        K += cuts.total(nu)
    pis = [price_task(t, Lam, Mu, H, want_column=False, cuts=cuts, nu=nu)[0][0] for t in tasks]
    return pis, ((upper - 1) << SCALE) + K - sum(pis)


def task_columns(task: Task, top: int, pi: int, Lam, Mu, H: int, single: bool, counter: list, max_labels: int,
                 max_columns: int, deadline, cuts=None, nu=None, floor: int | None = None) -> list[HistoryColumn]:
    """Every undominated history of ``task`` on each eligible cluster with price <= ``top`` (and
    > ``floor`` where given), as columns whose ``reduced`` is price - ``pi``."""
    return [HistoryColumn(task.j, n, s, F, hist, cost - pi)
            for n in task.opts
            for s, F, hist, cost in pair_histories(task, n, Lam, Mu, H, top, single, counter, max_labels,
                                                  max_columns, deadline, cuts, nu, floor=floor)]


def enumerate_columns(payload, tasks: list[Task], upper: int, Lam, Mu, H: int, *,
                      max_columns: int = MAX_COLUMNS, max_labels: int = MAX_LABELS,
                      deadline: float | None = None, cuts=None, nu=None) -> Pool:
    """Reduced-cost fixing over histories (docs, (7)): every column with price <= pi_j + delta;
    then pi_j is raised to the least enumerated price (still a least relaxed price) and delta
    lowered accordingly, and the columns beyond the new delta dropped.  delta < 0: no columns."""
    single = payload.variant == "single"
    pis, delta = least_prices(payload, tasks, upper, Lam, Mu, H, cuts, nu)
    pool = Pool([], delta, pis)
    if delta < 0:
        return pool
    counter = [0]
    found = []
    total = 0
    for i, task in enumerate(tasks):
        cols = task_columns(task, pis[i] + delta, 0, Lam, Mu, H, single, counter, max_labels, 4 * max_columns,
                            deadline, cuts, nu)
        total += len(cols)
        if total > max_columns:
            raise TooManyColumns(f"more than {max_columns} columns survive the fixing (delta "
                                 f"{delta / (1 << SCALE):.2f})")
        found.append(cols)
    least = [min((c.reduced for c in cols), default=None) for cols in found]
    pool.labels = counter[0]
    if any(x is None for x in least):
        pool.delta = -1
        return pool
    pool.pis = least  # exact least relaxed prices (the enumeration contains each task's cheapest)
    pool.delta = delta - sum(x - p for x, p in zip(least, pis))
    for cols, m in zip(found, least):
        keep = [c for c in cols if c.reduced - m <= pool.delta]
        for c in keep:
            c.reduced -= m
        pool.columns.extend(keep)
        pool.per_task.append(len(keep))
    return pool


@dataclass
class Master:
    lp: LinearModel
    y: list
    pool: Pool


def build(payload, tasks: list[Task], pool: Pool, upper: int, deadline=None) -> Master:
    """The integer master over the pool (docs, (7)); past ``deadline`` (checked every 1,024
    columns): :class:`.Expired`."""
    m = LinearModel("placement-histip")
    cols = pool.columns
    y = [m.add_binary(f"y{i}") for i in range(len(cols))]
    opts = {(t.j, n): o for t in tasks for n, o in t.opts.items()}
    arr = {t.j: t.a for t in tasks}
    by_task: dict = {}
    use: dict = {}
    starts: dict = {}
    for i, c in enumerate(cols):
        if i % 1024 == 1023:
            check_deadline(deadline, "building the master")
        by_task.setdefault(c.j, []).append((y[i], 1.0))
        o = opts[(c.j, c.n)]
        mem = payload.tasks[c.j].minimum.memory or 0
        for dt, x in enumerate(c.hist):
            if x < 0:
                continue
            t = arr[c.j] + dt
            for r, amount in ((0, int(o.cpu[x])), (1, int(o.gpu[x])), (2, mem)):
                if amount:
                    use.setdefault((c.n, r, t), []).append((y[i], float(amount)))
        starts.setdefault((c.n, c.s), []).append((y[i], 1.0))
    for j in sorted(by_task):
        m.add_eq(by_task[j], 1.0, f"one[{j}]")
    for (n, r, t), terms in sorted(use.items()):
        cap = payload.clusters[n].capacity
        C = (cap.cpu, cap.gpu, cap.memory)[r]
        if C is not None and sum(v for _, v in terms) > C:
            m.add_le(terms, float(C), f"cap[{n},{r},{t}]")
    if payload.variant == "single":
        for (n, t), terms in sorted(starts.items()):
            if len(terms) > 1:
                m.add_le(terms, 1.0, f"start[{n},{t}]")
    cost = [(y[i], float(c.F - arr[c.j])) for i, c in enumerate(cols)]
    m.add_le(cost, float(upper - 1), "cap_objective")
    scale = float(1 << SCALE)
    m.add_le([(y[i], c.reduced / scale) for i, c in enumerate(cols)], pool.delta / scale + TOL, "knapsack")
    m.set_objective(cost, sense="min")
    return Master(m, y, pool)


def solve(master: Master, *, time_limit: float | None, seed: int = 0) -> LinearSolution:
    """HiGHS on the master: one thread, its random seed fixed, the time limit."""
    return solve_highs(master.lp, time_limit=time_limit, threads=1, seed=seed)


def decode(payload, tasks: list[Task], master: Master, sol: LinearSolution) -> PlacementDecisions | None:
    """The master's schedule as allocation histories ((0, 0) = paused), None without one."""
    if sol.values is None:
        return None
    opts = {(t.j, n): o for t in tasks for n, o in t.opts.items()}
    arr = {t.j: t.a for t in tasks}
    chosen = {master.pool.columns[i].j: master.pool.columns[i]
              for i, v in enumerate(sol.values[master.y]) if v > 0.5}
    out = []
    for j in range(len(payload.tasks)):
        c = chosen.get(j)
        if c is None:
            return None
        o = opts[(j, c.n)]
        changes, last = [], None
        for dt in range(c.s - arr[j], len(c.hist)):
            x = c.hist[dt]
            alloc = (0, 0) if x < 0 else (int(o.cpu[x]), int(o.gpu[x]))
            if alloc != last:
                changes.append(AllocationChange(step=arr[j] + dt, cpu=alloc[0], gpu=alloc[1]))
                last = alloc
        out.append(PlacementDecision(cluster=c.n, start=c.s, history=changes))
    return PlacementDecisions(tasks=out)


@dataclass
class HistipResult:
    """bound: an integer lower bound of every referee-feasible schedule (None: declined, see
    reason); schedule: (referee value, decisions) of the master's schedule when the referee
    accepts it; stats: sizes and times."""

    bound: int | None
    reason: str
    schedule: tuple | None = None
    stats: dict = field(default_factory=dict)


@dataclass
class Setting:
    """What (7) and its split (:mod:`placement.bounds.histsplit`) share: the tasks, the
    multipliers (integer grids >= 0; cuts and nu None without rounding cuts), U, the clock
    (``deadline``: a ``perf_counter`` time or None) and the statistics so far."""

    instance: object
    tasks: list
    Lam: np.ndarray
    Mu: np.ndarray
    H: int
    cuts: object
    nu: object
    upper: int
    deadline: float | None
    stats: dict
    started: float  # perf_counter at the call
    cpu: float  # process_time at the call

    @property
    def single(self) -> bool:
        return self.instance.placement.variant == "single"

    def left(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.perf_counter()


def setting(instance, upper: int, time_limit: float | None, multipliers=None) -> Setting | HistipResult:
    """The shared preamble: the proof's preconditions and the multipliers (``multipliers``:
    (Lam, Mu, H) or (Lam, Mu, H, cuts, nu); default (6)'s best point with its rounding cuts from
    (4)'s point).  A :class:`HistipResult` that declines where they cannot be had."""
    t0, c0 = time.perf_counter(), time.process_time()
    deadline = None if time_limit is None else t0 + float(time_limit)
    payload = instance.placement
    if not proof_applies(payload):
        return HistipResult(None, "the bound's preconditions do not hold (placement.bounds.ladder.proof_applies)")
    durations = cluster_durations(payload)
    if not all(durations):
        return HistipResult(None, "a task can finish on no cluster")
    upper = int(upper)
    if multipliers is None:
        try:
            r = rounded_multipliers(payload, durations, lagrangian_multipliers(payload, durations, deadline=deadline),
                                    deadline=deadline)
        except (OutOfTime, BoundTooLarge) as exc:
            return HistipResult(None, str(exc), None, {"upper": upper})
        multipliers = (r.Lam, r.Mu, r.H, r.cuts, r.nu)
    Lam, Mu, H = multipliers[:3]
    cuts, nu = multipliers[3:] if len(multipliers) == 5 else (None, None)
    stats = {"upper": upper, "multipliers_cpu_s": time.process_time() - c0}
    return Setting(instance, tasks_of(payload, durations), Lam, Mu, H, cuts, nu, upper, deadline, stats, t0, c0)


def master_schedule(st: Setting, master: Master, sol: LinearSolution) -> tuple | None:
    """(referee value, decisions) of the master's schedule where the referee accepts it (the
    decoding recorded in ``st.stats``), else None."""
    dec = decode(st.instance.placement, st.tasks, master, sol)
    if dec is None:
        return None
    ev = evaluate(st.instance, dec)
    st.stats["decoded_feasible"] = bool(ev.feasible)
    if not ev.feasible:
        return None
    st.stats["decoded_value"] = float(ev.primary_value)
    return float(ev.primary_value), dec


def histip_bound(instance, upper: int, *, time_limit: float | None = None, seed: int = 0,
                 max_columns: int = MAX_COLUMNS, max_labels: int = MAX_LABELS, multipliers=None) -> HistipResult:
    """Bound (7) for U = ``upper`` (any integer is sound, docs).  ``multipliers``: (Lam, Mu, H)
    integer grids >= 0, or (Lam, Mu, H, cuts, nu) with rounding cuts and their multipliers >= 0;
    default the best point of (6) with its rounding cuts (:func:`rounded_multipliers` from (4)'s
    point).
    Declines (bound None, reason) past the column or label cap, past the time limit, or when
    HiGHS does not prove the master's optimum or infeasibility in the time."""
    st = setting(instance, upper, time_limit, multipliers)
    if isinstance(st, HistipResult):
        return st
    payload, tasks, upper, stats = instance.placement, st.tasks, st.upper, st.stats
    try:
        pool = enumerate_columns(payload, tasks, upper, st.Lam, st.Mu, st.H, max_columns=max_columns,
                                 max_labels=max_labels, deadline=st.deadline, cuts=st.cuts, nu=st.nu)
    except (TooManyColumns, OutOfTime) as exc:
        return HistipResult(None, str(exc), None, stats)
    per = pool.per_task or [0]
    stats.update(delta=pool.delta / (1 << SCALE), columns=len(pool.columns), labels=pool.labels,
                 columns_per_task_mean=float(np.mean(per)), columns_per_task_max=int(max(per)),
                 enumeration_cpu_s=time.process_time() - st.cpu - stats["multipliers_cpu_s"])
    if pool.delta < 0:
        return HistipResult(upper, "reduced-cost fixing leaves no schedule of value <= U - 1", None, stats)
    try:
        master = build(payload, tasks, pool, upper, st.deadline)
    except OutOfTime as exc:
        return HistipResult(None, str(exc), None, stats)
    c1 = time.process_time()
    left = st.left()
    if left is not None and left <= 0:
        return HistipResult(None, "out of time before solving the master", None, stats)
    sol = solve(master, time_limit=left, seed=seed)
    stats.update(model=master.lp.size(), highs=sol.message, highs_cpu_s=time.process_time() - c1,
                 total_s=time.perf_counter() - st.started)
    if sol.status == "infeasible":
        return HistipResult(upper, "the master has no schedule of value <= U - 1", None, stats)
    if sol.status != "optimal" or sol.bound is None or not math.isfinite(sol.bound):
        return HistipResult(None, f"HiGHS did not prove the master's optimum ({sol.status}: {sol.message})", None,
                            stats)
    bound = min(upper, math.ceil(sol.bound - TOL))
    return HistipResult(bound, "the master's optimum", master_schedule(st, master, sol), stats)


__all__ = ["histip_bound", "enumerate_columns", "least_prices", "task_columns", "pair_histories", "needed_steps",
           "build", "solve", "decode", "setting", "master_schedule", "Setting", "HistipResult", "MAX_COLUMNS",
           "MAX_LABELS"]
