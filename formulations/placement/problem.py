"""The placement problem's shared data and THE step rule (issue 45).

* :func:`step_progress` — the referee's semantics of one executed step of task j at an
  allocation: the noise-free increment (:func:`semantics.increment`), the noise
  (:func:`semantics.noisy_gain`: multiplicative or the authors' additive, clipped) and the
  switching loss (``1 - switching_overhead`` when the allocation differs from the previous
  step's, except on the task's first executed step). The models that simulate steps call it
  (the exact model, the brute-force oracle); the bounds that advance progress in a relaxed or
  vectorised form of their own — the energy front of (4) (no switching loss), trajectory
  pricing's numpy step and its compiled kernel (used by (6), (7) and the additive bound) — are
  checked against it, and it against the referee's own simulation, by
  tests/formulations/test_placement_step_rule.py; the searches score through the referee
  (``task_finish``, ``evaluate``). The referee (edgebench/referee/placement.py) stays separate
  and independent.
* :class:`JointUse` — the joint moves' capacity check of one step (cpu / gpu / memory per
  cluster, and in the single-task variant at most one first allocation per cluster and step),
  shared by the exact model and the brute-force oracle.
* the fixed-allocation data: :class:`Option` (cluster, cpu, gpu, memory, steps),
  :class:`PlacementData` (:func:`prepare`), :data:`Schedule` (per task (option, start)), the
  greedy list schedules (:func:`greedy_schedule`, :func:`best_greedy`, :func:`repair_schedule`),
  :func:`schedule_objective`, :func:`finish_bounds`, :func:`to_decisions`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from edgebench.instances import semantics
from edgebench.solution import PlacementDecision, PlacementDecisions

#: the pause allocation (a started task holding nothing this step)
PAUSE = (0, 0)


def step_progress(payload, j: int, alloc: tuple[int, int], progress: float, k: int, previous: tuple[int, int],
                  first: bool, keep: float | None = None) -> float:
    """Task j's progress after one executed step at ``alloc`` = (cpu, gpu) from ``progress``,
    ``k`` executed steps before it (the noise draw's index), ``previous`` the allocation of the
    step before and ``first`` whether this is the task's first executed step (no switching loss
    then). ``keep``: ``1 - switching_overhead`` when the caller has it. The same float operations
    in the same order as the referee's simulation."""
    gain = semantics.noisy_gain(payload, j, k, semantics.increment(payload, j, alloc[0], alloc[1], progress))
    if not first and previous != alloc:
        gain *= (1.0 - payload.switching_overhead) if keep is None else keep
    return progress + gain


def is_done(progress: float) -> bool:
    """The referee's finish rule: progress within PROGRESS_EPS of 1."""
    return progress >= 1.0 - semantics.PROGRESS_EPS


class JointUse:
    """The resources one step's joint moves hold so far, per cluster: :meth:`take` adds a
    task's allocation where it fits (cpu, gpu, memory capacity; single variant: one first
    allocation per cluster and step) and returns the undo token, :meth:`give_back` undoes it."""

    def __init__(self, payload):
        caps = [c.capacity for c in payload.clusters]
        #: per cluster (cpu, gpu, memory or None)
        self.cap = [(c.cpu, c.gpu, c.memory) for c in caps]
        #: memory task j holds on cluster n while running (0 where either is missing)
        self.mem = [[t.minimum.memory if (t.minimum.memory is not None and c.memory is not None) else 0
                     for c in caps] for t in payload.tasks]
        self.single = payload.variant == "single"
        self.used: dict = {}
        self.firsts: set = set()

    def take(self, j: int, n: int, a: tuple[int, int], first: bool):
        """The undo token (previous use of cluster n) when task j's allocation ``a`` fits, else
        None."""
        u = self.used.get(n, (0, 0, 0))
        cap = self.cap[n]
        w = (u[0] + a[0], u[1] + a[1], u[2] + self.mem[j][n])
        if w[0] > cap[0] or w[1] > cap[1] or (cap[2] is not None and w[2] > cap[2]):
            return None
        if first and self.single and n in self.firsts:
            return None
        self.used[n] = w
        if first:
            self.firsts.add(n)
        return u

    def give_back(self, n: int, u, first: bool) -> None:
        self.used[n] = u
        if first:
            self.firsts.discard(n)


#: a phase (model build + solve) starts only when the time left is at least this many
#: times what the same phase took last time, and the final LP bound only when the time left
#: is at least this many times the last model build (passing the model to HiGHS costs about
#: as much): so the run ends within a few per cent of its time limit
PHASE_MARGIN = 1.5
#: size limits of the model (issue 28: it grows with tasks x options x horizon x steps):
#: beyond, the solver returns status error with the reason instead of exhausting memory
MAX_GRID_CELLS = 100_000_000
MAX_OPTIONS = 2_000_000


class ModelTooLarge(ValueError):
    """An instance beyond :data:`MAX_GRID_CELLS`, :data:`MAX_OPTIONS` or :data:`MAX_MODEL_NONZEROS`."""


@dataclass(frozen=True)
class Option:
    """One way to run a task: on ``cluster`` with (cpu, gpu) for ``steps`` steps; ``memory``
    is the memory demand it holds there (0 when the task or the cluster gives none)."""

    cluster: int
    cpu: int
    gpu: int
    memory: int
    steps: int


@dataclass
class PlacementData:
    """What the model needs of an instance, computed once through ``semantics``."""

    arrivals: list[int]
    options: list[list[Option]]
    min_steps: list[int]
    #: per cluster (cpu, gpu, memory or None)
    capacity: list[tuple[int, int, int | None]]
    single: bool

    @property
    def num_tasks(self) -> int:
        return len(self.arrivals)

    @property
    def num_clusters(self) -> int:
        return len(self.capacity)

    @property
    def trivial_bound(self) -> int:
        """sum_j min_d(j): every task needs at least its shortest duration (a lower bound)."""
        return int(sum(self.min_steps))


def prepare(payload, deadline: float | None = None) -> PlacementData | None:
    """Options of every task from :func:`semantics.dominant_options` (noise realisation
    included: durations are per task), shortest durations, capacities.  With a ``deadline``
    (a ``time.perf_counter()`` value) the clock is checked after every task and None is
    returned once it has passed (the options are the first thing every phase needs)."""
    capacity = [(c.capacity.cpu, c.capacity.gpu, c.capacity.memory) for c in payload.clusters]
    # the enumeration scans each task's (cpu + 1) x (gpu + 1) allocation grid on each eligible
    # cluster: its size is counted before any is scanned, the options kept while they are
    # kept (issue 28)
    grid = sum((capacity[n][0] + 1) * (capacity[n][1] + 1) for task in payload.tasks for n in task.eligible)
    if grid > MAX_GRID_CELLS:
        raise ModelTooLarge(f"instance too large for the exact placement model: {grid:,} allocation-grid cells to "
                            f"scan (tasks x eligible clusters x (cpu + 1) x (gpu + 1)), limit {MAX_GRID_CELLS:,}")
    kept = 0
    options: list[list[Option]] = []
    for j, task in enumerate(payload.tasks):
        if deadline is not None and time.perf_counter() > deadline:
            return None
        opts = []
        for n in task.eligible:
            mem = task.minimum.memory if (task.minimum.memory is not None and capacity[n][2] is not None) else 0
            for c, g, d in semantics.dominant_options(payload, j, n):
                opts.append(Option(n, c, g, int(mem or 0), int(d)))
        kept += len(opts)
        if kept > MAX_OPTIONS:
            raise ModelTooLarge(f"instance too large for the exact placement model: over {MAX_OPTIONS:,} dominant "
                                f"allocation options (task {j})")
        opts.sort(key=lambda o: (o.cluster, o.steps, o.cpu, o.gpu))
        options.append(opts)
    min_steps = [min((o.steps for o in opts), default=0) for opts in options]
    return PlacementData(arrivals=[int(t.arrival) for t in payload.tasks], options=options, min_steps=min_steps,
                         capacity=capacity, single=payload.variant == "single")


def relaxation_bound(payload) -> int:
    """A lower bound valid for EVERY policy, including re-allocating / preemptive ones
    (Optimus, Tiresias): the sum over tasks of the fewest steps the task needs at any
    constant allocation of any eligible cluster (for the synthetic model: its largest
    allocation), i.e. no contention at all. See the docs for the proof (it assumes
    curvature > 1 for synthetic types, as in every preset)."""
    return prepare(payload).trivial_bound


#: a schedule: per task (option, start)
Schedule = list[tuple[Option, int]]


def schedule_objective(data: PlacementData, schedule: Schedule) -> int:
    return int(sum(s + o.steps - a for (o, s), a in zip(schedule, data.arrivals)))


def schedule_violations(data: PlacementData, schedule: Schedule, horizon: int | None = None) -> list[str]:
    """A self-check of a schedule against the model's constraints (the referee is the judge;
    this is for the greedy and for decoding)."""
    out: list[str] = []
    load: dict[tuple[int, int], list[int]] = {}
    starts: dict[tuple[int, int], int] = {}
    for j, (o, s) in enumerate(schedule):
        if o not in data.options[j]:
            out.append(f"task {j}: option {o} is not one of its options")
        if s < data.arrivals[j]:
            out.append(f"task {j}: starts at {s} before its arrival {data.arrivals[j]}")
        if horizon is not None and s + o.steps > horizon:
            out.append(f"task {j}: finishes at {s + o.steps} after the horizon {horizon}")
        starts[(o.cluster, s)] = starts.get((o.cluster, s), 0) + 1
        for t in range(s, s + o.steps):
            row = load.setdefault((o.cluster, t), [0, 0, 0])
            row[0] += o.cpu
            row[1] += o.gpu
            row[2] += o.memory
    for (n, t), (c, g, m) in load.items():
        cc, cg, cm = data.capacity[n]
        if c > cc or g > cg or (cm is not None and m > cm):
            out.append(f"cluster {n} step {t}: load ({c}, {g}, {m}) above capacity {data.capacity[n]}")
    if data.single:
        for (n, t), k in starts.items():
            if k > 1:
                out.append(f"cluster {n} step {t}: {k} starts in the single-task variant")
    return out


class Profile:
    """Resource use per cluster and step, grown on demand (for list scheduling)."""

    def __init__(self, data: PlacementData, length: int = 64):
        big = np.iinfo(np.int64).max // 4
        self.cap = np.array([[c, g, m if m is not None else big] for c, g, m in data.capacity], dtype=np.int64)
        self.used = np.zeros((data.num_clusters, 3, length), dtype=np.int64)
        self.starts = np.zeros((data.num_clusters, length), dtype=np.int64)
        self.single = data.single

    def _ensure(self, length: int) -> None:
        cur = self.used.shape[2]
        if length <= cur:
            return
        new = max(length, 2 * cur)
        self.used = np.concatenate([self.used, np.zeros(self.used.shape[:2] + (new - cur,), np.int64)], axis=2)
        self.starts = np.concatenate([self.starts, np.zeros((self.starts.shape[0], new - cur), np.int64)], axis=1)

    def earliest(self, o: Option, s0: int) -> int:
        dem = np.array([o.cpu, o.gpu, o.memory], dtype=np.int64)
        cap = self.cap[o.cluster]
        s = s0
        while True:
            self._ensure(s + o.steps + 1)
            if self.single and self.starts[o.cluster, s]:
                s += 1
                continue
            over = (self.used[o.cluster, :, s:s + o.steps] + dem[:, None] > cap[:, None]).any(axis=0)
            bad = np.flatnonzero(over)
            if bad.size == 0:
                return s
            s = s + int(bad[-1]) + 1

    def place(self, o: Option, s: int) -> None:
        self._ensure(s + o.steps + 1)
        self.used[o.cluster, :, s:s + o.steps] += np.array([o.cpu, o.gpu, o.memory], dtype=np.int64)[:, None]
        self.starts[o.cluster, s] += 1


def greedy_schedule(data: PlacementData, *, order: str = "arrival", weight: float = 0.0) -> Schedule:
    """Deterministic serial list scheduling: tasks in ``order`` ("arrival": by arrival then
    index; "short": by arrival then shortest duration), each at the option and earliest
    feasible start minimising ``completion + weight * (normalised resource area)``."""
    if order == "arrival":
        seq = sorted(range(data.num_tasks), key=lambda j: (data.arrivals[j], j))
    elif order == "short":
        seq = sorted(range(data.num_tasks), key=lambda j: (data.arrivals[j], data.min_steps[j], j))
    else:
        raise ValueError(f"unknown order {order!r}")
    prof = Profile(data)
    out: list[tuple[Option, int] | None] = [None] * data.num_tasks
    for j in seq:
        best = None
        for o in data.options[j]:
            s = prof.earliest(o, data.arrivals[j])
            cc, cg, _ = data.capacity[o.cluster]
            area = o.steps * (o.cpu / cc + o.gpu / cg)
            key = (s + o.steps - data.arrivals[j] + weight * area, s + o.steps, o.cluster, o.cpu, o.gpu)
            if best is None or key < best[0]:
                best = (key, o, s)
        assert best is not None  # every task has an option (validated by the instance model)
        prof.place(best[1], best[2])
        out[j] = (best[1], best[2])
    return out  # type: ignore[return-value]


def repair_schedule(data: PlacementData, partial: Sequence[tuple[Option, int] | None]) -> Schedule:
    """Complete a partial schedule: the placed tasks stay; every missing task (in arrival
    order) gets the option and earliest feasible start with the least completion."""
    prof = Profile(data)
    for item in partial:
        if item is not None:
            prof.place(item[0], item[1])
    out = list(partial)
    for j in sorted((j for j, it in enumerate(partial) if it is None), key=lambda j: (data.arrivals[j], j)):
        best = None
        for o in data.options[j]:
            s = prof.earliest(o, data.arrivals[j])
            key = (s + o.steps, o.cluster, o.cpu, o.gpu)
            if best is None or key < best[0]:
                best = (key, o, s)
        assert best is not None
        prof.place(best[1], best[2])
        out[j] = (best[1], best[2])
    return out  # type: ignore[return-value]


def best_greedy(data: PlacementData, deadline: float | None = None) -> Schedule:
    """The best of several greedy rules (the upper bound UB of the horizon argument). With a
    ``deadline`` (``time.perf_counter()`` value) the first rule always runs and a further one
    only when PHASE_MARGIN times the last rule's time is left before it."""
    best: Schedule | None = None
    best_val = None
    last = 0.0
    for order in ("arrival", "short"):
        for weight in (0.0, 0.5, 1.0, 2.0):
            rem = remaining(deadline)
            if best is not None and rem is not None and rem < PHASE_MARGIN * last:
                return best
            t0 = time.perf_counter()
            sched = greedy_schedule(data, order=order, weight=weight)
            last = time.perf_counter() - t0
            val = schedule_objective(data, sched)
            if best_val is None or val < best_val:
                best, best_val = sched, val
    assert best is not None
    return best


def finish_bounds(data: PlacementData, upper_bound: int) -> list[int]:
    """Latest finish of every task in any schedule with objective <= ``upper_bound``:
    C_j <= UB - sum_{k != j} min_d(k), so finish_j <= arrival_j + UB - LB0 + min_d(j)."""
    lb0 = data.trivial_bound
    return [a + upper_bound - lb0 + m for a, m in zip(data.arrivals, data.min_steps)]


def to_decisions(schedule: Schedule) -> PlacementDecisions:
    return PlacementDecisions(tasks=tuple(PlacementDecision(cluster=o.cluster, start=s, cpu=o.cpu, gpu=o.gpu)
                                          for o, s in schedule))


#: stats key under which a result records a fixed-allocation schedule (:func:`fixed_rows`), read
#: back by placement-lns as a warm start (``placement.search.lns.fixed_from_stats``)
FIXED_KEY = "fixed_schedule"


def fixed_rows(schedule: Schedule) -> list[list[int]]:
    """The schedule as JSON rows, per task [cluster, start, cpu, gpu] (stored under FIXED_KEY)."""
    return [[o.cluster, s, o.cpu, o.gpu] for o, s in schedule]


def remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.perf_counter())


__all__ = ["step_progress", "is_done", "JointUse", "PAUSE", "ModelTooLarge", "Option", "PlacementData", "prepare",
           "relaxation_bound", "Schedule", "schedule_objective", "schedule_violations", "Profile", "greedy_schedule",
           "repair_schedule", "best_greedy", "finish_bounds", "to_decisions", "FIXED_KEY", "fixed_rows", "remaining",
           "MAX_GRID_CELLS", "MAX_OPTIONS", "PHASE_MARGIN"]
