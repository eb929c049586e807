"""The TapFinger paper's baselines as online policies on :mod:`edgebench.solvers.placement_sim`.

Registered solvers (kind ``"heuristic"``, family ``placement``, seeded, every output accepted
by the referee); the modelling choices and where they differ from the authors' code are in
``docs/placement-sim.md``:

* ``optimus``: a speed model ``speed = 1 / (a/w + b + c*w/p + d*w + e*p)`` (p = CPU,
  w = GPU) fitted per task type with ``scipy.optimize.curve_fit`` to the progress the
  simulator shows a profiling run (one step from progress 0 at every allocation of the grid
  0..capacity, noise included, zero below the minimum, unbounded least squares: the authors'
  pre-run; ``fit="bounded"``: coefficients >= 0 on the feasible grid); every step each
  cluster admits the earliest pending task whose minimum fits, resets its tasks to their
  minimum and hands out one CPU or GPU at a time to the task whose estimated remaining time
  ``(1 - progress) / speed`` drops most per unit of that resource it holds (the authors'
  ``gain="per-unit"``; ``gain="drop"``: the drop itself), until no gain is positive or the
  resources run out. Re-allocates every step (pays the switching overhead).
* ``optimus-np``: the same model and greedy, applied only to the tasks started in the step
  over the free resources; allocations are fixed for a task's life.
* ``tiresias``: preemptive two-level least-attained-service on attained GPU-steps: the
  threshold is the median attained service of the cluster's tasks (queue 0: at most the
  median), FIFO by start step within a queue; tasks get their minimum GPUs in priority order
  (``elastic=True``, the default: then the remaining GPUs one at a time, the authors' call), the CPUs
  are split evenly among the tasks holding GPUs; a task left without GPUs is paused (0, 0).
  A new task is admitted when this allocation gives it resources (it may preempt);
  ``admission="authors"``: the authors' count cap ``min(capacity // minimum)`` on placed
  tasks (paused ones included), one task per cluster and pass.
* ``tiresias-np``: non-preemptive: waiting tasks (all with zero attained service) start in
  FIFO order at their minimum GPUs and an even CPU share, fixed for their life.
  ``rule="authors"`` (``tiresias-np`` and ``optimus-np``): the authors' non-preemptive
  test-bed rules ``non_preemptable_tiresias`` / ``non_preemptable_optimus``.
* ``min``: a random pending task at its minimum allocation; ``placement-fifo`` (``fifo`` is
  the mapping family's queue policy): the earliest arrived pending task that fits, at its
  minimum; ``sjf``: ORACLE shortest job first: the pending task with the fewest steps at its minimum allocation (``semantics.fixed_run_steps``, read
  from the instance: an oracle no online scheduler has), at its minimum.

:class:`RandomPolicy` is the policy of the ``random`` baseline (``random_baseline.py``).
Variant ``"single"``: at most one start per cluster and step; ``"multi"``: rounds of one
start per cluster until no cluster can start more (the ``"authors"`` parameter values: until
a pass of the authors' step loop starts nothing, docs/calibration.md).
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any, Callable

import numpy as np

from edgebench.errors import InputError
from edgebench.instances import semantics
from edgebench.instances.model import Instance
from edgebench.registry import Result, make_result, register
from edgebench.solvers.placement_sim import PlacementSim, SimTimeout, Stalled, run_policy

__all__ = [
    "RandomPolicy", "MinPolicy", "FifoPolicy", "SjfPolicy", "OptimusPolicy", "TiresiasPolicy",
    "runnable_clusters", "start_floor", "optimus_speed", "fit_optimus",
]


# ======================================================================================
# helpers
# ======================================================================================


def runnable_clusters(sim: PlacementSim, *, at_minimum: bool = False) -> list[set[int]]:
    """Per task, the eligible clusters on which it can finish: at the whole cluster (the
    performance models are monotone in the allocation), or at its minimum allocation (its
    :func:`start_floor`: a (0, 0) minimum is a pause, issue 44)."""
    out = []
    for j in range(sim.num_tasks):
        ok = set()
        for n in sim.eligible[j]:
            if sim.min_cpu[j] > sim.cap_cpu[n] or sim.min_gpu[j] > sim.cap_gpu[n]:
                continue
            mm, cm = sim.min_mem[j], sim.cap_mem[n]
            if mm is not None and cm is not None and mm > cm:
                continue
            c, g = start_floor(sim, j, n) if at_minimum else (sim.cap_cpu[n], sim.cap_gpu[n])
            if sim.run_steps(j, c, g) is not None:
                ok.add(n)
        out.append(ok)
    return out


def start_floor(sim: PlacementSim, j: int, n: int) -> tuple[int, int]:
    """The least allocation task ``j`` runs at on cluster ``n``: its minimum, or — for a
    minimum of (0, 0), a valid one at which a step is a pause, not progress (issue 44 case
    17: ``optimus`` started such tasks at (0, 0), a SimError) — the one of (0, 1), (1, 0),
    (1, 1) with which it finishes soonest, else the whole cluster."""
    if sim.min_cpu[j] > 0 or sim.min_gpu[j] > 0:
        return sim.min_cpu[j], sim.min_gpu[j]
    units = [(steps, c, g) for c, g in ((0, 1), (1, 0), (1, 1))
             if c <= sim.cap_cpu[n] and g <= sim.cap_gpu[n] and (steps := sim.run_steps(j, c, g)) is not None]
    return min(units)[1:] if units else (sim.cap_cpu[n], sim.cap_gpu[n])


def _unrunnable_reason(runnable: list[set[int]], what: str) -> str | None:
    bad = [j for j, r in enumerate(runnable) if not r]
    if not bad:
        return None
    return f"tasks {bad[:10]} can finish on none of their eligible clusters{what}"


def _rounds(sim: PlacementSim, cluster_order: Callable[[], Any], pick: Callable[[int, set[int]], bool]) -> bool:
    """Start tasks: one per cluster per round (one round in variant single, rounds until no
    start in variant multi). ``pick(n, started)`` starts at most one task on n. Returns
    whether anything started."""
    started: set[int] = set()
    any_start = False
    while True:
        progress = False
        for n in cluster_order():
            if pick(int(n), started):
                progress = True
                any_start = True
        if not sim.multi or not progress:
            return any_start


# ======================================================================================
# Random / Min / FIFO / SJF: start-only policies (allocation fixed for a task's life)
# ======================================================================================


def _authors_np_calls(sim: PlacementSim, runnable: list[set[int]],
                      choose: Callable[[int, list[int], set[int]], tuple[int, int, int] | None]) -> bool:
    """The authors' non-preemptive step loop (``rule="authors"`` of ``optimus-np`` and
    ``tiresias-np``): a call visits the clusters in reverse index order on the pending sets as
    they were at its beginning; ``choose(n, pending, taken)`` proposes (task, cpu, gpu) or None,
    and the task starts unless a cluster started it earlier in the call or the allocation does
    not fit / never finishes. Variant multi repeats calls until one starts nothing. Returns
    True when the last call started nothing (idle until the next event)."""
    clusters = range(sim.num_clusters)
    while True:
        pending = [[j for j in sim.pending(n) if n in runnable[j]] for n in clusters]
        taken: set[int] = set()
        for n in reversed(clusters):
            if not pending[n]:
                continue
            pick = choose(n, pending[n], taken)
            if pick is None:
                continue
            j, c, g = pick
            if j not in taken and sim.fits(j, n, c, g) and sim.run_steps(j, c, g) is not None:
                sim.start(j, n, c, g)
                taken.add(j)
        if not sim.multi or not taken:
            return not taken


class RandomPolicy:
    """The ``random`` baseline.

    ``rounds="pack"`` (the default): clusters in random order, each starts a random pending
    task (random candidate order, first that can start) with a random allocation among
    ``semantics.allocation_options`` that fits the free resources and lets it finish; variant
    multi repeats such rounds until no cluster can start more.

    ``rounds="authors"``: the authors' ``random_select_random_allocate`` in their multi-agent
    step loop. A pass: the clusters in index order each draw ONE task uniformly from their
    pending set as it was at the beginning of the pass; a task drawn by an earlier cluster of
    the pass is a conflict (void); otherwise an allocation is drawn uniformly from the fitting
    options that let the task finish plus the void allocation (so a cluster with k fitting
    options stays idle with probability 1/(k+1), and always when nothing fits). Variant multi
    repeats passes until a pass in which no cluster starts a task (then time advances);
    variant single makes one pass per step."""

    def __init__(self, rng: np.random.Generator, runnable: list[set[int]], *, rounds: str = "pack"):
        if rounds not in ("pack", "authors"):
            raise ValueError(f"rounds must be 'pack' or 'authors', got {rounds!r}")
        self.rng = rng
        self.runnable = runnable
        self.rounds = rounds

    def reset(self, sim: PlacementSim) -> None:
        self.first_arrival = min(sim.arrival)

    def _grid(self, sim: PlacementSim, j: int, n: int) -> tuple[int, int, int, int, int] | None:
        """The options of j on n that fit the free resources, as the row-major sub-grid
        [lo_c, cpu] x [lo_g, gpu] of ``semantics.allocation_options`` (flat indices from
        ``skip``: 1 drops the empty allocation (0, 0)): (lo_c, lo_g, rows, cols, skip), or None
        when none fits. Nothing is enumerated or cached (issue 28: a cached list per task and
        cluster held 10^6 options per 1024 x 1024 cluster)."""
        p = sim.payload
        if not semantics.fits(p.tasks[j].minimum, p.clusters[n].capacity):
            return None
        cpu, gpu, mem = sim.free(n)
        need = sim.min_mem[j]
        if mem is not None and need is not None and need > mem:
            return None
        lo_c, lo_g = max(sim.min_cpu[j], 0), max(sim.min_gpu[j], 0)
        rows, cols = cpu - lo_c + 1, gpu - lo_g + 1
        skip = 1 if lo_c == 0 and lo_g == 0 else 0
        if rows <= 0 or cols <= 0 or rows * cols <= skip:
            return None
        return lo_c, lo_g, rows, cols, skip

    def _try(self, sim: PlacementSim, n: int, j: int) -> bool:
        grid = self._grid(sim, j, n)
        if grid is None:
            return False
        lo_c, lo_g, rows, cols, skip = grid
        rng = self.rng
        # draw the first option by index arithmetic; only when it cannot finish are the other
        # fitting options listed (flat indices), and drawn from without replacement
        i = int(rng.integers(rows * cols - skip))
        c, g = lo_c + (i + skip) // cols, lo_g + (i + skip) % cols
        if sim.run_steps(j, c, g) is not None:
            sim.start(j, n, c, g)
            return True
        rest = list(range(skip, rows * cols))
        rest.pop(i)
        while rest:
            f = rest.pop(int(rng.integers(len(rest))))
            c, g = lo_c + f // cols, lo_g + f % cols
            if sim.run_steps(j, c, g) is None:
                continue
            sim.start(j, n, c, g)
            return True
        return False

    def _fitting(self, sim: PlacementSim, n: int, j: int) -> list[tuple[int, int]]:
        """The allocation options of j on n that fit the free resources and let j finish."""
        if not sim.fits(j, n, sim.min_cpu[j], sim.min_gpu[j]):
            return []
        grid = self._grid(sim, j, n)
        if grid is None:
            return []
        lo_c, lo_g, rows, cols, skip = grid
        return [(c, g) for f in range(skip, rows * cols)
                if sim.run_steps(j, c := lo_c + f // cols, g := lo_g + f % cols) is not None]

    def _act_authors(self, sim: PlacementSim) -> bool:
        rng = self.rng
        clusters = range(sim.num_clusters)
        while True:
            drawn: set[int] = set()
            started = False
            snapshot = [[j for j in sim.pending(n) if n in self.runnable[j]] for n in clusters]
            for n in clusters:
                cands = snapshot[n]
                if not cands:
                    continue
                j = cands[int(rng.integers(len(cands)))]
                if j in drawn:  # drawn (and maybe started) by an earlier cluster of this pass
                    continue
                drawn.add(j)
                fitting = self._fitting(sim, n, j)
                i = int(rng.integers(len(fitting) + 1))
                if i < len(fitting):  # i == len(fitting): the void allocation
                    sim.start(j, n, *fitting[i])
                    started = True
            if not sim.multi or not started:
                break
        # idle until the next arrival or completion only when no pending task fits anywhere
        # (a void draw is random: the next step may start what this one did not)
        return not any(self._fitting(sim, n, j) for n in clusters for j in sim.pending(n) if n in self.runnable[j])

    def act(self, sim: PlacementSim) -> bool:
        if sim.t < self.first_arrival or sim.num_started == sim.num_tasks:
            return True
        if self.rounds == "authors":
            return self._act_authors(sim)
        rng = self.rng

        def pick(n: int, started: set[int]) -> bool:
            cands = [j for j in sim.pending(n) if n in self.runnable[j]]
            for k in rng.permutation(len(cands)):
                if self._try(sim, n, cands[int(k)]):
                    return True
            return False

        return not _rounds(sim, lambda: rng.permutation(sim.num_clusters), pick)


class _MinAllocation:
    """Start-only policy at the minimum allocation; subclasses order the candidates."""

    random_clusters = False

    def __init__(self, rng: np.random.Generator, runnable: list[set[int]]):
        self.rng = rng
        self.runnable = runnable

    def reset(self, sim: PlacementSim) -> None:
        pass

    def order(self, sim: PlacementSim, n: int, cands: list[int]) -> list[int]:
        raise NotImplementedError

    def act(self, sim: PlacementSim) -> bool:
        if sim.num_started == sim.num_tasks:
            return True

        def pick(n: int, started: set[int]) -> bool:
            cands = [j for j in sim.pending(n) if n in self.runnable[j]]
            for j in self.order(sim, n, cands):
                c, g = start_floor(sim, j, n)
                if sim.fits(j, n, c, g):
                    sim.start(j, n, c, g)
                    return True
            return False

        if self.random_clusters:
            return not _rounds(sim, lambda: self.rng.permutation(sim.num_clusters), pick)
        return not _rounds(sim, lambda: range(sim.num_clusters), pick)


class MinPolicy(_MinAllocation):
    """Random pending task (clusters in random order), minimum allocation."""

    random_clusters = True

    def order(self, sim, n, cands):
        return [cands[int(k)] for k in self.rng.permutation(len(cands))]


class FifoPolicy(_MinAllocation):
    """Earliest arrived pending task that fits (queue order), minimum allocation."""

    def order(self, sim, n, cands):
        return cands  # pending sets are in queue order: (arrival, index)


class SjfPolicy(_MinAllocation):
    """ORACLE shortest job first: fewest steps at the minimum allocation (true durations
    from the instance, ``semantics.fixed_run_steps``), ties by arrival; minimum allocation."""

    def order(self, sim, n, cands):
        return sorted(cands, key=lambda j: (sim.run_steps(j, *start_floor(sim, j, n)), sim.arrival[j], j))


# ======================================================================================
# Optimus
# ======================================================================================


def optimus_speed(X, a, b, c, d, e):
    """The authors' Optimus speed form: 1 / (a/w + b + c*w/p + d*w + e*p), p = CPU, w = GPU."""
    p, w = X
    return 1.0 / (a / w + b + c * w / p + d * w + e * p)


def fit_optimus(cpu: np.ndarray, gpu: np.ndarray, speed: np.ndarray, *, bounded: bool = True) -> np.ndarray:
    """Fit (a, b, c, d, e) of :func:`optimus_speed` to observed speeds (progress per step)
    with ``scipy.optimize.curve_fit``; a zero GPU or CPU count is read as 0.001 (the authors'
    guard against division by zero).

    ``bounded`` (``fit="bounded"``): coefficients >= 0, zero-speed observations (below a
    type's minimum) dropped, started from the non-negative least-squares fit of 1/speed.
    Otherwise (``fit="authors"``, the authors' pre-run): unbounded least squares over every
    observation, zero speeds included, from ``p0 = 1``; if that fit fails the bounded one is
    used."""
    from scipy.optimize import curve_fit, nnls

    p = np.maximum(np.asarray(cpu, dtype=float), 1e-3)
    w = np.maximum(np.asarray(gpu, dtype=float), 1e-3)
    s = np.asarray(speed, dtype=float)
    if not bounded:
        try:
            with np.errstate(all="ignore"):
                params, _ = curve_fit(optimus_speed, (p, w), s, p0=np.ones(5),
                                      bounds=(np.full(5, -np.inf), np.full(5, np.inf)), maxfev=20000)
            if np.all(np.isfinite(params)):
                return np.asarray(params, dtype=float)
        except (RuntimeError, ValueError, TypeError):  # fall back to the bounded fit (TypeError: fewer
            pass                                        # observations than the five coefficients)
    keep = s > 1e-12
    p, w, s = p[keep], w[keep], s[keep]
    if s.size == 0:
        raise ValueError("no positive speed observed")
    feats = np.column_stack([1.0 / w, np.ones_like(w), w / p, w, p])
    x0, _ = nnls(feats, 1.0 / s)
    if not np.any(x0 > 0):  # pragma: no cover - 1/s > 0 always gives a positive b
        x0[1] = 1.0 / float(np.mean(s))
    try:
        params, _ = curve_fit(optimus_speed, (p, w), s, p0=np.maximum(x0, 1e-9),
                              bounds=(np.zeros(5), np.full(5, np.inf)), maxfev=20000)
    except (RuntimeError, ValueError, TypeError):  # keep the linear fit (TypeError: too few observations)
        params = x0
    return np.asarray(params, dtype=float)


class OptimusPolicy:
    """Optimus (see the module docstring). ``preemptive`` False is ``optimus-np``."""

    def __init__(self, *, preemptive: bool = True, gain: str = "per-unit", fit: str = "authors",
                 rule: str = "suite", runnable: list[set[int]] | None = None, fit_max: int | None = None):
        if rule not in ("suite", "authors"):
            raise ValueError(f"rule must be 'suite' or 'authors', got {rule!r}")
        self.preemptive = preemptive
        self.gain = gain
        self.fit = fit
        self.fit_max = fit_max  # profile allocations up to this count per resource (None: the largest capacity)
        self.rule = rule  # optimus-np only
        self.runnable = runnable
        self.params: dict[str, list[float]] = {}

    # ---- profiling + fit -----------------------------------------------------------------

    def reset(self, sim: PlacementSim) -> None:
        if self.runnable is None:
            self.runnable = runnable_clusters(sim)
        self.max_c = max(sim.cap_cpu)
        self.max_g = max(sim.cap_gpu)
        self.table: dict[int, list[list[float]]] = {}
        reps: dict[int, int] = {}
        for j in range(sim.num_tasks):
            reps.setdefault(sim.type_index[j], j)
        authors = self.fit in ("authors", "authors-transposed")
        # "authors-transposed" replays the authors' pre-run as written: their speed table is
        # indexed [cpu, gpu] and flattened row-major, but paired with CPU counts that vary
        # fastest, so each observation at (c, g) is fitted as if taken at (g, c) (on their
        # square grid 0..16 x 0..16; here 0..max capacity in both)
        transposed = self.fit == "authors-transposed"
        hi_c = hi_g = max(self.max_c, self.max_g)
        if not transposed:
            hi_c, hi_g = self.max_c, self.max_g
        if self.fit_max is not None:  # the authors profile 0..16 whatever the cluster size
            hi_c, hi_g = min(hi_c, self.fit_max), min(hi_g, self.fit_max)
        for ti, j in sorted(reps.items()):
            cs, gs, ss = [], [], []
            k = 0
            # the authors profile the whole grid 0..16 x 0..16 (zero speed below the minimum);
            # the bounded fit only the feasible part
            lo_c, lo_g = (0, 0) if authors else (max(sim.min_cpu[j], 0), max(sim.min_gpu[j], 0))
            for c in range(lo_c, hi_c + 1):
                for g in range(lo_g, hi_g + 1):
                    if c + g <= 0 and not authors:
                        continue
                    cs.append(c)
                    gs.append(g)
                    ss.append(sim.probe(j, c, g, k=k))  # one observed step of a fresh profiling run
                    k += 1
            if transposed:
                cs, gs = gs, cs
            params = fit_optimus(np.array(cs), np.array(gs), np.array(ss), bounded=not authors)
            self.params[sim.type_names[ti]] = [float(x) for x in params]
            cc, gg = np.meshgrid(np.maximum(np.arange(self.max_c + 1), 1e-3),
                                 np.maximum(np.arange(self.max_g + 1), 1e-3), indexing="ij")
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                tab = optimus_speed((cc, gg), *params)
            tab = np.where(np.isfinite(tab) & (tab > 0), tab, 0.0)
            tab[: sim.min_cpu[j], :] = 0.0
            tab[:, : sim.min_gpu[j]] = 0.0
            self.table[ti] = tab.tolist()

    # ---- greedy allocation -----------------------------------------------------------

    def _remaining(self, tab: list[list[float]], rest: float, c: int, g: int) -> float:
        s = tab[c][g]
        return rest / s if s > 0 else math.inf

    def _greedy(self, sim: PlacementSim, n: int, tasks: list[int], alloc: dict[int, list[int]],
                free: list[int]) -> None:
        """Hand out one CPU or GPU at a time to the task whose estimated remaining time drops
        most (``gain="per-unit"``: divided by the units of that resource it holds, as the
        authors' code) until no gain is positive or the resources run out."""
        if not tasks:
            return
        cap = (sim.cap_cpu[n], sim.cap_gpu[n])
        rest = {j: 1.0 - sim.progress(j) for j in tasks}
        per_unit = self.gain == "per-unit"

        def gains(j: int) -> list[float]:
            tab = self.table[sim.type_index[j]]
            c, g = alloc[j]
            now = self._remaining(tab, rest[j], c, g)
            out = []
            for r, (nc, ng) in enumerate(((c + 1, g), (c, g + 1))):
                if (nc, ng)[r] > cap[r] or (nc, ng)[r] > (self.max_c, self.max_g)[r]:
                    out.append(-math.inf)
                    continue
                new = self._remaining(tab, rest[j], nc, ng)
                if math.isinf(now):
                    q = math.inf if not math.isinf(new) else 0.0
                else:
                    q = now - new
                if per_unit and alloc[j][r] > 0:
                    q /= alloc[j][r]
                out.append(q)
            return out

        q = {j: gains(j) for j in tasks}
        while free[0] > 0 or free[1] > 0:
            best = None
            best_q = 1e-12
            for j in tasks:
                for r in (0, 1):
                    if free[r] > 0 and q[j][r] > best_q:
                        best, best_q = (j, r), q[j][r]
            if best is None:
                break
            j, r = best
            alloc[j][r] += 1
            free[r] -= 1
            q[j] = gains(j)

    # ---- the authors' non-preemptive rule (optimus-np rule="authors") ---------------------

    def _authors_np_choice(self, sim: PlacementSim, n: int, cands: list[int]) -> tuple[int, int, int]:
        """The authors' ``non_preemptable_optimus`` on one cluster: every candidate starts at
        its minimum; the free resources (the candidates' minimums not taken off) go one unit
        at a time to the largest ``1 + (remaining now - remaining after) / units held``
        (first candidate, CPU before GPU, on ties) until every such value is <= 0 or both
        resources are used up; the candidate holding the most GPUs (the first on ties) is
        chosen, capped by the free resources, and, when it holds more than one GPU, gives
        back one unit of the resource handed out last (never below its minimum here).
        Returns (task, cpu, gpu)."""
        free = list(sim.free(n)[:2])
        res = list(free)
        cap = (sim.cap_cpu[n], sim.cap_gpu[n])
        pre = {j: [sim.min_cpu[j], sim.min_gpu[j]] for j in cands}
        last = 0
        while True:
            best, best_q = None, 0.0
            for j in cands:
                tab = self.table[sim.type_index[j]]
                now = self._remaining(tab, 1.0, *pre[j])
                for r in (0, 1):
                    if res[r] <= 0 or pre[j][r] + 1 > cap[r]:
                        continue
                    nxt = list(pre[j])
                    nxt[r] += 1
                    after = self._remaining(tab, 1.0, *nxt)
                    if math.isinf(now):
                        q = math.inf if not math.isinf(after) else 1.0
                    else:
                        q = 1.0 + (now - after) / max(pre[j][r], 1)
                    if q > best_q:
                        best, best_q = (j, r), q
            if best is None:
                break
            j, last = best
            pre[j][last] += 1
            res[last] -= 1
        j = max(cands, key=lambda k: (pre[k][1], -cands.index(k)))
        c, g = min(pre[j][0], free[0]), min(pre[j][1], free[1])
        if g > 1:  # the authors' "pre allocation bias", never below the minimum here
            if last == 0:
                c = max(c - 1, sim.min_cpu[j])
            else:
                g = max(g - 1, sim.min_gpu[j])
        return j, c, g

    def _act_np_authors(self, sim: PlacementSim) -> bool:
        """``rule="authors"``: a call visits the clusters in reverse index order on the pending
        sets as they were at its beginning; each starts the task of
        :meth:`_authors_np_choice` unless a cluster started it earlier in the call or the
        allocation is below its minimum. Variant multi repeats calls until one starts
        nothing."""
        return _authors_np_calls(sim, self.runnable,
                                 lambda n, pending, taken: self._authors_np_choice(sim, n, pending))

    # ---- one step -------------------------------------------------------------------

    def act(self, sim: PlacementSim) -> bool:
        if not self.preemptive and self.rule == "authors":
            return self._act_np_authors(sim)
        any_change = False
        for n in range(sim.num_clusters):
            running = sim.running(n)
            cap_c, cap_g = sim.cap_cpu[n], sim.cap_gpu[n]
            floor = {j: start_floor(sim, j, n) for j in running}
            if self.preemptive:
                # every task of the cluster is reset to its minimum before the greedy
                base_c = cap_c - sum(floor[j][0] for j in running)
                base_g = cap_g - sum(floor[j][1] for j in running)
            else:
                base_c, base_g, _ = sim.free(n)
            base_m = sim.free(n)[2]
            new: list[int] = []
            for j in sim.pending(n):
                if not sim.multi and new:
                    break
                if n not in self.runnable[j]:
                    continue
                (mc, mg), mm = floor.setdefault(j, start_floor(sim, j, n)), sim.min_mem[j]
                if mc > base_c or mg > base_g or (base_m is not None and mm is not None and mm > base_m):
                    continue
                new.append(j)
                base_c -= mc
                base_g -= mg
                if base_m is not None and mm is not None:
                    base_m -= mm
            tasks = (running if self.preemptive else []) + new
            if not tasks:
                continue
            alloc = {j: list(floor[j]) for j in tasks}
            free = [base_c, base_g]
            self._greedy(sim, n, tasks, alloc, free)
            if self.preemptive and running:
                changes = {j: (alloc[j][0], alloc[j][1]) for j in running
                           if (alloc[j][0], alloc[j][1]) != sim.allocation(j)}
                if changes:
                    sim.set_allocations(n, changes)
                    any_change = True
            for j in new:
                sim.start(j, n, alloc[j][0], alloc[j][1])
                any_change = True
        if self.preemptive:
            return False  # estimates change with progress: re-evaluate every step
        return not any_change


# ======================================================================================
# Tiresias
# ======================================================================================


class TiresiasPolicy:
    """Tiresias (see the module docstring). ``preemptive`` False is ``tiresias-np``."""

    def __init__(self, *, preemptive: bool = True, elastic: bool = True, admission: str = "fit",
                 rule: str = "suite", runnable: list[set[int]] | None = None):
        if admission not in ("fit", "authors"):
            raise ValueError(f"admission must be 'fit' or 'authors', got {admission!r}")
        if rule not in ("suite", "authors"):
            raise ValueError(f"rule must be 'suite' or 'authors', got {rule!r}")
        self.preemptive = preemptive
        self.elastic = elastic
        self.admission = admission
        self.rule = rule  # tiresias-np only
        self.runnable = runnable

    def reset(self, sim: PlacementSim) -> None:
        if self.runnable is None:
            self.runnable = runnable_clusters(sim)

    @staticmethod
    def _priority(keys: dict[int, float], start: dict[int, int], sim: PlacementSim) -> list[int]:
        """Two-level queue: attained service <= median first; FIFO by start step within."""
        if not keys:
            return []
        med = float(statistics.median(keys.values()))
        fifo = sorted(keys, key=lambda j: (start[j], sim.arrival[j], j))
        return [j for j in fifo if keys[j] <= med] + [j for j in fifo if keys[j] > med]

    def _plan(self, sim: PlacementSim, n: int, tasks: list[int], att: dict[int, int],
              start: dict[int, int], held: dict[int, tuple[int, int]] | None = None) -> dict[int, tuple[int, int]]:
        """The LAS allocation of ``tasks`` on cluster ``n``; the ``held`` tasks keep their
        allocation (see :meth:`_held`) and the others share what is left."""
        held = held or {}
        cap_c, cap_g, cap_m = sim.cap_cpu[n], sim.cap_gpu[n], sim.cap_mem[n]
        free_c = cap_c - sum(c for c, _ in held.values())
        free_g = cap_g - sum(g for _, g in held.values())
        free_m = cap_m
        if free_m is not None:
            free_m -= sum(sim.min_mem[j] or 0 for j in held)
        gpu: dict[int, int] = {}
        for j in self._priority({j: float(att[j]) for j in tasks if j not in held}, start, sim):
            (mc, mg), mm = start_floor(sim, j, n), sim.min_mem[j]
            need_m = mm if (mm is not None and cap_m is not None) else 0
            if mg <= free_g and mc <= free_c and (free_m is None or need_m <= free_m) and (mc > 0 or mg > 0):
                gpu[j] = mg
                free_g -= mg
                free_c -= mc  # the minimum CPUs are reserved now, the rest split below
                if free_m is not None:
                    free_m -= need_m
        holders = list(gpu)
        if self.elastic and holders:
            # the authors' default: the remaining GPUs one at a time, least attained first
            while free_g > 0:
                keys = {j: float(att[j] + gpu[j]) for j in holders if gpu[j] < cap_g}
                if not keys:
                    break
                j = self._priority(keys, start, sim)[0]
                gpu[j] += 1
                free_g -= 1
        cpu = {j: start_floor(sim, j, n)[0] for j in holders}
        # split the remaining CPUs evenly among the GPU holders (water filling: one at a time
        # to the holder with the fewest, ties in priority order)
        while free_c > 0 and holders:
            j = min((h for h in holders if cpu[h] < cap_c), key=lambda h: cpu[h], default=None)
            if j is None:
                break
            cpu[j] += 1
            free_c -= 1
        return {j: held[j] if j in held else ((cpu[j], gpu[j]) if j in gpu else (0, 0)) for j in tasks}

    @staticmethod
    def _held(sim: PlacementSim, tasks: list[int]) -> dict[int, tuple[int, int]]:
        """Tasks that keep their allocation in this step: at ``switching_overhead = 1`` a
        step whose allocation changed gains nothing, so a task switched (or resumed) in the
        previous step keeps its allocation for this one. Without it, LAS re-plans every
        step, attained service grows with no progress, and tasks swapped every step made no
        progress at all (issue 44 case 16: an endless episode); with it every switch buys a
        step of progress. Below 1 nothing is held (the policy is unchanged)."""
        if sim.payload.switching_overhead < 1.0:
            return {}
        t = sim.t
        return {j: sim.allocation(j) for j in tasks
                if sim.changed_at(j) == t - 1 and sim.allocation(j) != (0, 0)}

    @staticmethod
    def _count_cap(sim: PlacementSim, n: int, j: int) -> int:
        """The authors' admission cap of cluster n for task j: how many tasks at j's minimum
        the whole cluster holds (their ``min(capacity // minimum)``)."""
        caps = [cap // need for cap, need in ((sim.cap_cpu[n], sim.min_cpu[j]), (sim.cap_gpu[n], sim.min_gpu[j]))
                if need > 0]
        return min(caps) if caps else sim.cap_cpu[n] + sim.cap_gpu[n]

    def _act_authors(self, sim: PlacementSim) -> bool:
        """``admission="authors"``: the authors' ``tiresias()`` in their multi-agent step loop.
        A pass: the clusters in index order; a cluster holding fewer placed tasks (paused
        ones included) than its count cap takes the first pending task (queue order) that no
        earlier cluster of the pass took, plans the LAS allocation of its tasks with it and
        starts it when the plan gives it resources; every cluster re-plans its tasks. Variant
        multi repeats passes until a pass starts nothing; variant single makes one pass."""
        t = sim.t
        while True:
            taken: set[int] = set()
            started = False
            for n in range(sim.num_clusters):
                tasks = sim.running(n)
                att = {j: sim.attained_gpu(j) for j in tasks}
                start = {j: sim.start_step(j) for j in tasks}
                held = self._held(sim, tasks)
                plan = self._plan(sim, n, tasks, att, start, held) if tasks else {}
                cand = next((j for j in sim.pending(n) if n in self.runnable[j] and j not in taken), None)
                new = None
                if cand is not None and len(tasks) < self._count_cap(sim, n, cand):
                    taken.add(cand)
                    att[cand], start[cand] = 0, t
                    trial = self._plan(sim, n, tasks + [cand], att, start, held)
                    # a task started in this step cannot be paused in it
                    if trial[cand] != (0, 0) and all(trial[j] != (0, 0) for j in tasks if start[j] == t):
                        plan, new = trial, cand
                changes = {j: plan[j] for j in tasks if plan[j] != sim.allocation(j)}
                if changes:
                    sim.set_allocations(n, changes)
                if new is not None:
                    sim.start(new, n, *plan[new])
                    started = True
            if not sim.multi or not started:
                return False  # attained service grows every step: priorities change

    def act(self, sim: PlacementSim) -> bool:
        if not self.preemptive:
            return self._act_np(sim)
        if self.admission == "authors":
            return self._act_authors(sim)
        t = sim.t
        for n in range(sim.num_clusters):
            tasks = sim.running(n)
            att = {j: sim.attained_gpu(j) for j in tasks}
            start = {j: sim.start_step(j) for j in tasks}
            held = self._held(sim, tasks)
            plan = self._plan(sim, n, tasks, att, start, held) if tasks else {}
            new: list[int] = []
            refused: set[tuple] = set()
            for j in sim.pending(n):
                if not sim.multi and new:
                    break
                if n not in self.runnable[j]:
                    continue
                # a later pending task with the same minimum takes the same place in the
                # priority order (attained 0, start now, FIFO): refused as well
                sig = (sim.min_cpu[j], sim.min_gpu[j], sim.min_mem[j])
                if sig in refused:
                    continue
                trial_tasks = tasks + new + [j]
                att[j], start[j] = 0, t
                trial = self._plan(sim, n, trial_tasks, att, start, held)
                if trial[j] != (0, 0):
                    new.append(j)
                    plan = trial
                    refused.clear()
                else:
                    del att[j], start[j]
                    refused.add(sig)
            if not plan:
                continue
            changes = {j: plan[j] for j in tasks if plan[j] != sim.allocation(j)}
            if changes:
                sim.set_allocations(n, changes)
            for j in new:
                sim.start(j, n, *plan[j])
        return False  # attained service grows every step: priorities change

    @staticmethod
    def _np_allocation(sim: PlacementSim, j: int, n: int) -> tuple[int, int]:
        """tiresias-np: the minimum GPUs and the even CPU share of a full cluster: the CPUs
        divided by the number of such tasks that fit at their minimum (the split the
        preemptive version reaches when the cluster is full), at least the minimum."""
        mc, mg = start_floor(sim, j, n)
        slots = min(sim.cap_cpu[n] // mc if mc > 0 else sim.cap_cpu[n] + 1,
                    sim.cap_gpu[n] // mg if mg > 0 else sim.cap_cpu[n] + 1)
        share = sim.cap_cpu[n] // max(slots, 1)
        return max(mc, share), mg

    def _act_np_authors(self, sim: PlacementSim) -> bool:
        """``rule="authors"``: the authors' ``non_preemptable_tiresias`` in their step loop.
        A call: the clusters in reverse index order, on the pending sets as they were at the
        beginning of the call; a cluster takes the first pending task that no cluster took
        in the call and gives it ``ceil(capacity / max(1, pending + placed))`` of each
        resource (pending counted at the beginning of the call, placed = its unfinished
        tasks), at least its minimum, at most the free resources; it starts when that fits.
        Variant multi repeats calls until one starts nothing."""
        def choose(n: int, pending: list[int], taken: set[int]) -> tuple[int, int, int] | None:
            j = next((j for j in pending if j not in taken), None)
            if j is None:
                return None
            share = max(1, len(pending) + len(sim.running(n)))
            c = max(sim.min_cpu[j], -(-sim.cap_cpu[n] // share))
            g = max(sim.min_gpu[j], -(-sim.cap_gpu[n] // share))
            free_c, free_g, _ = sim.free(n)
            return j, min(c, free_c), min(g, free_g)

        return _authors_np_calls(sim, self.runnable, choose)

    def _act_np(self, sim: PlacementSim) -> bool:
        if self.rule == "authors":
            return self._act_np_authors(sim)

        def pick(n: int, started: set[int]) -> bool:
            for j in sim.pending(n):
                if n not in self.runnable[j]:
                    continue
                c, g = self._np_allocation(sim, j, n)
                if sim.fits(j, n, c, g):
                    sim.start(j, n, c, g)
                    return True
            return False

        return not _rounds(sim, lambda: range(sim.num_clusters), pick)


# ======================================================================================
# registration
# ======================================================================================


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"the seed must be a non-negative integer, got {seed!r}", field="seed")
    return int(seed)


def _parse(name: str, params: dict[str, Any], spec: dict[str, tuple[Any, Callable[[Any], bool], str]]
           ) -> dict[str, Any]:
    out = {k: v[0] for k, v in spec.items()}
    for key, value in params.items():
        if key not in spec:
            known = ", ".join(spec) or "none"
            raise InputError(f"unknown parameter of solver {name!r} (known: {known})", field=f"params.{key}")
        ok, what = spec[key][1], spec[key][2]
        if not ok(value):
            raise InputError(f"must be {what}, got {value!r}", field=f"params.{key}")
        out[key] = value
    return out


def run_episode(instance: Instance, name: str, make_policy: Callable[[PlacementSim, np.random.Generator], Any],
                *, at_minimum: bool, time_limit: float | None, seed: int, params: dict[str, Any],
                started: float) -> Result:
    """Build the simulator, check every task can finish somewhere, run the policy, decode."""
    seed = _check_seed(seed)
    rng = np.random.default_rng(seed)
    deadline = None if time_limit is None else started + float(time_limit)
    sim = PlacementSim(instance)
    runnable = runnable_clusters(sim, at_minimum=at_minimum)
    why = _unrunnable_reason(runnable, " at their minimum allocation" if at_minimum else "")
    if why is not None:
        return make_result(instance, name, status="infeasible", seed=seed, params=params, started=started,
                           stats={"reason": why})
    policy = make_policy(sim, rng, runnable)
    try:
        run_policy(sim, policy, deadline=deadline)
    except SimTimeout:
        return make_result(instance, name, status="timeout", seed=seed, params=params, started=started,
                           stats={"time_limit": time_limit})
    except Stalled as exc:
        return make_result(instance, name, status="error", seed=seed, params=params, started=started,
                           stats={"reason": str(exc)})
    total = sim.total_completion_time()
    stats: dict[str, Any] = {"mean_completion_time": total / sim.num_tasks, "steps": sim.t}
    fitted = getattr(policy, "params", None)
    if fitted:
        stats["speed_model"] = fitted
    return make_result(instance, name, status="feasible", decisions=sim.decisions(), seed=seed, params=params,
                       objective=float(total), started=started, stats=stats)


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


def _register_min_policy(name: str, cls: type, description: str) -> None:
    @register(name, families=("placement",), kind="heuristic", description=description, params={})
    def solve(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
        started = time.perf_counter()
        _parse(name, params, {})
        return run_episode(instance, name, lambda sim, rng, runnable: cls(rng, runnable), at_minimum=True,
                           time_limit=time_limit, seed=seed, params=params, started=started)

    solve.__name__ = f"solve_{name.replace('-', '_')}"
    globals()[solve.__name__] = solve


_register_min_policy("min", MinPolicy, "TapFinger baseline Min: random pending task at its minimum allocation")
_register_min_policy("placement-fifo", FifoPolicy, "Earliest arrived pending task that fits, at its minimum allocation")
_register_min_policy("sjf", SjfPolicy, "ORACLE shortest-job-first (true durations from the instance), "
                                       "minimum allocation")

_OPTIMUS_PARAMS = {"gain": "'per-unit' (default: the estimated remaining-time drop divided by the units held, as the "
                           "authors' code) or 'drop' (the drop itself, as the Optimus paper: the earlier default)"}
_OPTIMUS_PARAMS["fit"] = ("'authors' (default: the authors' pre-run: unbounded least squares over the whole grid, "
                          "zero speeds below the minimum included), 'authors-transposed' (their pre-run as their code "
                          "runs it: CPU and GPU counts swapped against the observations, which reproduces their "
                          "saved figures, docs/calibration.md) or 'bounded' (coefficients >= 0, feasible grid only: "
                          "the suite's earlier default)")
_OPTIMUS_PARAMS["fit_max"] = ("int >= 1 or null (default null: every allocation up to the largest cluster's "
                              "capacity): profile and fit the speed model on allocations 0..fit_max per resource only; "
                              "the authors' pre-run used 0..16 on every setting (16 for like-for-like runs on "
                              "hetero-6, docs/calibration.md)")
_OPTIMUS_SPEC = {"gain": ("per-unit", lambda v: v in ("drop", "per-unit"), "'drop' or 'per-unit'"),
                 "fit": ("authors", lambda v: v in ("authors", "authors-transposed", "bounded"),
                         "'authors', 'authors-transposed' or 'bounded'"),
                 "fit_max": (None, lambda v: v is None or (type(v) is int and 1 <= v <= 1_000_000),
                             "an integer >= 1 or null")}
_RULE_DOC = ("'suite' (default: {suite}) or 'authors' (the authors' {fn} in their step loop: "
             "clusters in reverse index order, one start per cluster and call; docs/calibration.md)")
_NP_RULE_SPEC = ("suite", lambda v: v in ("suite", "authors"), "'suite' or 'authors'")
_OPTIMUS_NP_PARAMS = {**_OPTIMUS_PARAMS, "rule": _RULE_DOC.format(
    suite="the greedy over the free resources for the tasks started in the step",
    fn="non_preemptable_optimus: a greedy pre-allocation of the free resources over all pending tasks, "
       "the one holding most GPUs starts with its share minus one unit")}
_OPTIMUS_NP_SPEC = {**_OPTIMUS_SPEC, "rule": _NP_RULE_SPEC}
_TIRESIAS_NP_PARAMS = {"rule": _RULE_DOC.format(
    suite="FIFO at the minimum GPUs and the even CPU share of a full cluster",
    fn="non_preemptable_tiresias: the first pending task gets ceil(capacity / (pending + placed)) "
       "of each resource")}
_TIRESIAS_NP_SPEC = {"rule": _NP_RULE_SPEC}
_TIRESIAS_PARAMS = {"elastic": "bool, default True (the authors' call, which made their saved figures): after the "
                               "minimum GPUs, hand out the remaining GPUs one at a time by least attained service; "
                               "False: minimum GPUs only (the paper's wording, the suite's earlier default)"}
_TIRESIAS_PARAMS["admission"] = (
    "'fit' (default: a pending task is admitted whenever the LAS plan gives it resources, pausing "
    "lower-priority tasks, and several per cluster in the same pass in variant multi) or 'authors' "
    "(the authors' tiresias() in their step loop: a cluster admits only while it holds fewer than "
    "min(capacity // minimum) placed tasks, paused ones included, one task per cluster and pass, the "
    "first pending one no earlier cluster of the pass took; docs/calibration.md)")
_TIRESIAS_SPEC = {"elastic": (True, _bool, "a boolean"),
                  "admission": ("fit", lambda v: v in ("fit", "authors"), "'fit' or 'authors'")}


@register("optimus", families=("placement",), kind="heuristic", params=_OPTIMUS_PARAMS,
          check=lambda p: _parse("optimus", p, _OPTIMUS_SPEC),
          description="TapFinger baseline Optimus: fitted speed model, greedy marginal-gain re-allocation every step")
def solve_optimus(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    started = time.perf_counter()
    opts = _parse("optimus", params, _OPTIMUS_SPEC)
    return run_episode(instance, "optimus",
                       lambda sim, rng, runnable: OptimusPolicy(preemptive=True, gain=opts["gain"], fit=opts["fit"],
                                                                runnable=runnable, fit_max=opts["fit_max"]),
                       at_minimum=False, time_limit=time_limit, seed=seed, params=params, started=started)


@register("optimus-np", families=("placement",), kind="heuristic", params=_OPTIMUS_NP_PARAMS,
          check=lambda p: _parse("optimus-np", p, _OPTIMUS_NP_SPEC),
          description="Optimus without re-allocation: greedy allocation at start, fixed for the task's life")
def solve_optimus_np(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    started = time.perf_counter()
    opts = _parse("optimus-np", params, _OPTIMUS_NP_SPEC)
    return run_episode(instance, "optimus-np",
                       lambda sim, rng, runnable: OptimusPolicy(preemptive=False, gain=opts["gain"], fit=opts["fit"],
                                                                rule=opts["rule"], runnable=runnable,
                                                                fit_max=opts["fit_max"]),
                       at_minimum=False, time_limit=time_limit, seed=seed, params=params, started=started)


@register("tiresias", families=("placement",), kind="heuristic", params=_TIRESIAS_PARAMS,
          check=lambda p: _parse("tiresias", p, _TIRESIAS_SPEC),
          description="TapFinger baseline Tiresias: preemptive 2-level least-attained GPU service, pauses tasks")
def solve_tiresias(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    started = time.perf_counter()
    opts = _parse("tiresias", params, _TIRESIAS_SPEC)
    return run_episode(instance, "tiresias",
                       lambda sim, rng, runnable: TiresiasPolicy(preemptive=True, elastic=opts["elastic"],
                                                                 admission=opts["admission"], runnable=runnable),
                       at_minimum=not opts["elastic"], time_limit=time_limit, seed=seed, params=params, started=started)


@register("tiresias-np", families=("placement",), kind="heuristic", params=_TIRESIAS_NP_PARAMS,
          check=lambda p: _parse("tiresias-np", p, _TIRESIAS_NP_SPEC),
          description="Tiresias without preemption: FIFO start at the minimum GPUs and an even CPU share, fixed")
def solve_tiresias_np(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    started = time.perf_counter()
    opts = _parse("tiresias-np", params, _TIRESIAS_NP_SPEC)
    return run_episode(instance, "tiresias-np",
                       lambda sim, rng, runnable: TiresiasPolicy(preemptive=False, rule=opts["rule"],
                                                                 runnable=runnable),
                       at_minimum=True, time_limit=time_limit, seed=seed, params=params, started=started)
