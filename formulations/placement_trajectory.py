"""Exact-trajectory pricing for the placement Lagrangian bound (issue 23, bound (6)).  Proof:
docs/formulations/placement.md, "(6) Trajectory pricing".

Bound (4) (:mod:`formulations.placement_lagrange`) prices a task by a window and a fractional
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
* completion is declared at ``1 - PROGRESS_EPS - ENERGY_SLACK`` (the margin of (4)).

Costs are exact integers on the grid 2**-SCALE of (4); only the progress carries floats, with
the referee's own operations.
"""

from __future__ import annotations

import math

import numpy as np

from edgebench.formulations.placement_lagrange import (
    ENERGY_SLACK,
    SCALE,
    _Master,
    generate_columns,
    greedy_columns,
    lagrangian_multipliers,
)
from edgebench.instances import semantics

#: progress is rounded up to multiples of 1 / GRID after every executed step (a relaxation)
GRID = 1 << 20
#: charge the switching loss by default (labels keep the previous step's gain level); off: a
#: coarser relaxation (the loss dropped, one label group per executed-step count)
SWITCHING = True
#: column-generation rounds at most, and rounds without a better certified value before stopping
#: (fixed counts: the bound is deterministic, no clock; a priced round of a 192-task test-bed
#: instance costs about 25 s CPU)
ROUNDS = 40
STALL = 20
#: labels extended (all pricings together) after which no further round starts: about 4-5 min
#: CPU at the measured 75,000 labels per second (a 192-task synthetic-3 pricing: 80,000 labels;
#: test-bed: 1.7 million)
WORK = 20_000_000
_DONE = 1.0 - semantics.PROGRESS_EPS - ENERGY_SLACK


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
        self.noise = [1.0 + semantics.noise_draw(payload, j, k) for k in range(64)]
        self._payload, self._j = payload, j

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

    def factor(self, k: int) -> float:
        while k >= len(self.noise):
            self.noise.append(1.0 + semantics.noise_draw(self._payload, self._j, len(self.noise)))
        return self.noise[k]

    def step(self, p: np.ndarray, par: np.ndarray, k: int, lossy: np.ndarray) -> np.ndarray:
        """Progress after one executed step (noise index k) from p (rows) at the parameters par
        (columns), the switching loss where ``lossy`` (columns); the referee's operations."""
        if self.synthetic:
            inc = par[None, :] * np.sqrt(np.maximum(self.kappa - p[:, None], 0.0)) + self.base
        else:
            inc = np.broadcast_to(par[None, :], (p.size, par.size))
        gain = inc * self.factor(k)
        if lossy.any():
            gain = np.where(lossy[None, :], gain * self.sigma, gain)
        return p[:, None] + gain

    def front(self, lc: int, lg: int):
        """Indices of the allocations on the (parameter up, cost down) front at prices (lc, lg)."""
        cost = lc * self.cpu + lg * self.gpu
        idx, top = [], None
        for i in np.lexsort((cost, -self.param)):
            if top is None or cost[i] < top:
                idx.append(int(i))
                top = cost[i]
        return np.array(idx, dtype=np.int64), cost[idx]


def price_pair(opt: Options, a: int, n: int, Lam: np.ndarray, Mu: np.ndarray | None, H: int,
               cap: int | None = None, want_column: bool = True, switching: bool = SWITCHING,
               work: list | None = None):
    """(least cost, F, first start, usage {(n, r, t): amount for t < H}) of the relaxed histories
    of a task arriving at a on cluster n under integer multipliers (Lam (N, 2, H), Mu (N, H) or
    None), cost = (F - a) 2**SCALE + sum_t Lam x_t + Mu[n, s]; None if none costs below ``cap``.

    Labels at the start of step t are grouped by (executed steps k, level of the previous step)
    — the level is the gain parameter's index, -1 after a pause or before the first step; with
    ``switching`` off every level is -1 and no loss is charged — and within a group only the
    Pareto front on (progress up, cost down) is kept.  ``work[0]`` (when given) grows by the
    labels extended: a deterministic measure of the effort."""
    best, best_col = cap, None
    big = np.iinfo(np.int64).max
    layers: list[dict] = []
    one = np.zeros(1, dtype=np.int64)
    # group (k, level): (bucket, cost, parent group index, parent row, option)
    cur = {(0, -1): (one, one, np.full(1, -1), np.full(1, -1), np.full(1, -1))}
    t = a
    while cur and (best is None or ((t + 1 - a) << SCALE) < best):
        keys = list(cur)
        layers.append((keys, cur))
        lc, lg = (int(Lam[n, 0, t]), int(Lam[n, 1, t])) if t < H else (0, 0)
        mu = int(Mu[n, t]) if (Mu is not None and t < H) else 0
        allcost = lc * opt.cpu + lg * opt.gpu
        # without the switching loss only this step's (gain up, cost down) front matters; with it
        # every kept allocation (one dominated at this step's prices may be the one to keep
        # without loss in the next step, where it may be cheaper)
        idx = opt.front(lc, lg)[0] if not switching else np.arange(opt.cpu.size)
        nxt: dict[tuple, list] = {}
        for gi, (k, lvl) in enumerate(keys):
            b, c = cur[(k, lvl)][0], cur[(k, lvl)][1]
            rows = np.arange(b.size)
            nxt.setdefault((k, -1), []).append((b, c, np.full(b.size, gi), rows, np.full(b.size, -1)))
            cand = idx
            p = b.astype(float) / GRID
            lossy = (opt.level[cand] != lvl) if (switching and k > 0) else np.zeros(cand.size, dtype=bool)
            q = opt.step(p, opt.param[cand], k, lossy)
            if work is not None:
                work[0] += q.size
            tot = c[:, None] + allcost[cand][None, :] + (mu if k == 0 else 0)
            done = q >= _DONE
            if done.any():
                cm = np.where(done, tot, big)
                r, o = np.unravel_index(int(np.argmin(cm)), cm.shape)
                val = ((t + 1 - a) << SCALE) + int(cm[r, o])
                if best is None or val < best:
                    best, best_col = val, (t, gi, int(r), int(cand[o]))
            rr, oo = np.nonzero(~done)
            if rr.size:
                nb = np.minimum(np.ceil(q[rr, oo] * GRID).astype(np.int64), GRID)
                ops = cand[oo]
                lv = opt.level[ops] if switching else np.full(ops.size, -1)
                for L in np.unique(lv):
                    m = lv == L
                    nxt.setdefault((k + 1, int(L)), []).append((nb[m], tot[rr[m], oo[m]], np.full(int(m.sum()), gi),
                                                                rr[m], ops[m]))
        new = {}
        for key, parts in nxt.items():
            b, c, pg, pr, op = (np.concatenate([x[i] for x in parts]) for i in range(5))
            if best is not None:
                ok = (((t + 2 - a) << SCALE) + c) < best
                b, c, pg, pr, op = b[ok], c[ok], pg[ok], pr[ok], op[ok]
            if b.size == 0:
                continue
            order = np.lexsort((c, -b))  # progress down, then cost up: keep what beats all above
            b, c, pg, pr, op = b[order], c[order], pg[order], pr[order], op[order]
            keep = np.ones(b.size, dtype=bool)
            keep[1:] = c[1:] < np.minimum.accumulate(c)[:-1]
            new[key] = (b[keep], c[keep], pg[keep], pr[keep], op[keep])
        cur = new
        t += 1
    if best_col is None:
        return None
    if not want_column:
        return best, None, None, None
    t_end, gi, r, o = best_col
    steps = [(t_end, o)]
    tt = t_end
    while tt > a:  # walk back through the parents
        keys, groups = layers[tt - a]
        _, _, pg, pr, op = groups[keys[gi]]
        if op[r] >= 0:
            steps.append((tt - 1, int(op[r])))
        gi, r, tt = int(pg[r]), int(pr[r]), tt - 1
    use: dict = {}
    for s, i in steps:
        if s < H:
            if opt.cpu[i]:
                use[(n, 0, s)] = int(opt.cpu[i])
            if opt.gpu[i]:
                use[(n, 1, s)] = int(opt.gpu[i])
    return best, t_end + 1, min(s for s, _ in steps), use


class Task:
    """Task j's options per eligible cluster where it can finish."""

    def __init__(self, payload, j: int, clusters):
        self.j, self.a = j, int(payload.tasks[j].arrival)
        self.opts = {n: Options(payload, j, n) for n in sorted(clusters)}


def tasks_of(payload, durations) -> list[Task]:
    """The live tasks (those that can finish somewhere; the others add >= 0 and are left out)."""
    return [Task(payload, j, row) for j, row in enumerate(durations) if row]


def price_task(task: Task, Lam, Mu, H: int, *, want_column: bool = True, switching: bool = SWITCHING,
               work: list | None = None):
    """[(cost, n, F, first start, usage)] cheapest first; the first cost is the task's least
    (relaxed) price.  Each cluster is priced with the cheapest so far as its cap, so a later
    cluster reports a column only when it beats it."""
    out, cap = [], None
    for n, opt in task.opts.items():
        r = price_pair(opt, task.a, n, Lam, Mu, H, cap=cap, want_column=want_column, switching=switching,
                       work=work)
        if r is not None:
            out.append((r[0], n) + tuple(r[1:]))
            cap = r[0] if cap is None else min(cap, r[0])
    assert out, "a live task completes on some cluster"
    out.sort(key=lambda x: (x[0], x[1]))
    return out


def _value(payload, prices, Lam: np.ndarray, Mu: np.ndarray | None) -> int:
    """ceil((sum of the prices - sum Lam C - sum Mu) / 2**SCALE), exact integers."""
    caps = np.array([[c.capacity.cpu, c.capacity.gpu] for c in payload.clusters], dtype=np.int64)
    total = sum(prices) - int((Lam * caps[:, :, None]).sum()) - (int(Mu.sum()) if Mu is not None else 0)
    return -((-total) >> SCALE)


def certified_value(payload, tasks: list[Task], Lam: np.ndarray, Mu: np.ndarray | None, H: int, *,
                    switching: bool = SWITCHING) -> int:
    """ceil(L(Lam, Mu)) with trajectory prices: valid for ANY integer multipliers Lam, Mu >= 0
    (on the grid 2**-SCALE, zero from step H on)."""
    assert (Lam >= 0).all() and (Mu is None or (Mu >= 0).all())
    prices = [price_task(t, Lam, Mu, H, want_column=False, switching=switching)[0][0] for t in tasks]
    return _value(payload, prices, Lam, Mu)


def trajectory_multipliers(payload, durations, start, *, rounds: int = ROUNDS, stall: int = STALL,
                           work: int = WORK, smoothing: float = 0.5, switching: bool = SWITCHING):
    """(certified value, Lam, Mu, H): column generation on (4)'s master LP
    (:class:`placement_lagrange._Master`) with trajectory columns, from the point ``start`` =
    (value, Lam, Mu, H) of :func:`placement_lagrange.lagrangian_multipliers` (its Wentges
    centre; H is kept).  The value is the best of ``start``'s own value and the trajectory
    values of the priced points, so it is never below (4).  Stops after ``rounds`` rounds, after
    ``stall`` rounds in a row without a better certified value, once the pricings have extended
    ``work`` labels, when no column improves the master, or when the certified value reaches the
    master's ceiling: deterministic, no clock."""
    val4, Lam0, Mu0, H = start
    tasks = tasks_of(payload, durations)
    if not tasks or H == 0:
        return val4, Lam0, Mu0, H
    N = len(payload.clusters)
    single = payload.variant == "single"
    caps = np.array([[c.capacity.cpu, c.capacity.gpu] for c in payload.clusters], dtype=np.int64)
    master = _Master(caps, H, single, len(tasks))
    ncap = master.ncap

    def split(grid):
        return grid[:ncap].reshape(N, 2, H), (grid[ncap:].reshape(N, H) if single else None)

    def columns(priced):
        return [(i, master.column(i, _Where(t.a, n), F - t.a, s - t.a, use))
                for i, t in enumerate(tasks) for _, n, F, s, use in priced[i]]

    done = [0]

    def price_all(grid):
        L, M = split(grid)
        priced = [price_task(t, L, M, H, switching=switching, work=done) for t in tasks]
        return priced, _value(payload, [x[0][0] for x in priced], L, M)

    cols = []
    greedy = greedy_columns(payload, durations)
    for i, t in enumerate(tasks):  # a feasible master: the greedy schedule's fixed runs
        n, s0, (c, g, k) = greedy[t.j]
        use = {(n, r, u): x for u in range(s0, min(s0 + k, H)) for r, x in ((0, c), (1, g)) if x}
        cols.append(master.column(i, _Where(t.a, n), s0 + k - t.a, s0 - t.a, use))
    best_grid = np.concatenate([Lam0.reshape(-1)] + ([Mu0.reshape(-1)] if single else [])).astype(np.int64)
    center = best_grid.astype(float) / (1 << SCALE)
    priced, v = price_all(best_grid)
    best = max(val4, v)
    master.add(cols + [c for _, c in columns(priced)])
    def price_point(grid):
        priced, v = price_all(grid)
        return v, [c for _, c in columns(priced)]

    best, best_grid = generate_columns(master, center, best, best_grid, price_point, rounds=rounds,
                                       smoothing=smoothing,
                                       stop=lambda rnd, last_gain: rnd - last_gain >= stall or done[0] >= work)
    Lam, Mu = split(best_grid)
    return best, Lam.copy(), (Mu.copy() if single else None), H


class _Where:
    """What :meth:`placement_lagrange._Master.column` reads of a column's task: arrival, cluster."""

    def __init__(self, a: int, n: int):
        self.a, self.n = a, n


def trajectory_bound(payload, durations, *, rounds: int = ROUNDS, switching: bool = SWITCHING) -> tuple[int, int]:
    """((4), (6)): the Lagrangian bound (4) and the trajectory bound (6) >= (4) started from it."""
    start = lagrangian_multipliers(payload, durations)
    return start[0], trajectory_multipliers(payload, durations, start, rounds=rounds, switching=switching)[0]
