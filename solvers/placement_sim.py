"""The placement (TapFinger) timestep simulator: one online episode, driven by a policy.

Every online placement policy of the suite (the Random baseline, the TapFinger paper's
baselines in :mod:`edgebench.solvers.placement_baselines`, the PettingZoo environment in
``edgebench.learned.envs.placement``) runs on this one simulator; its output
(:meth:`PlacementSim.decisions`) is a :class:`~edgebench.solution.PlacementDecisions` that
the referee re-simulates and accepts, with the same finish steps (tested).

Model (SPEC.md family A, ``docs/placement-sim.md``)
-------------------------------------------------
* Time is in integer steps ``t = 0, 1, ...``. Task ``j`` arrives at ``arrival[j]`` and joins
  the queue of every eligible cluster; it waits in all of them until one cluster starts it.
* The **pending set** of cluster ``n`` in step ``t`` is the ``pending_size`` earliest
  (by ``(arrival, index)``) arrived, not yet started tasks of its queue, taken at the
  beginning of the step; tasks started during the step leave it and it is not refilled
  before the next step. Only pending tasks can be started.
* ``start(j, n, cpu, gpu)`` places ``j`` on ``n`` from step ``t`` on with an allocation
  between the task's minimum and the cluster's capacity that fits the free resources.
  Variant ``"single"``: at most one start per cluster and step; ``"multi"``: any number.
* ``reallocate(j, cpu, gpu)`` changes a placed task's allocation from step ``t`` on;
  ``(0, 0)`` pauses it (it holds nothing and makes no progress), a later positive
  allocation resumes it. A task stays on its cluster until it finishes.
* Progress is exactly the referee's: in every executed (non-paused) step the task gains
  ``semantics.noisy_gain(payload, j, k, semantics.increment(payload, j, cpu, gpu, progress))``
  (the instance's noise model) where ``k`` counts the task's executed steps, multiplied by ``1 - switching_overhead`` in
  a step whose allocation differs from the previous step's (not in the start step; resuming
  after a pause counts as a change). The task finishes at the end of the first step in
  which ``progress >= 1 - semantics.PROGRESS_EPS``; its resources are free from the next step.

API (stable: the PettingZoo environment drives it)
--------------------------------------------------
::

    sim = PlacementSim(instance)        # or a PlacementPayload
    while not sim.done:
        for n in range(sim.num_clusters):
            for j in sim.pending(n):    # pending set of cluster n in step sim.t
                if sim.can_start(j, n, cpu, gpu):
                    sim.start(j, n, cpu, gpu)
        sim.reallocate(j, cpu, gpu)     # running task; (0, 0) pauses, positive resumes
        sim.set_allocations(n, {j: (cpu, gpu), ...})   # several at once, checked together
        sim.step()                      # execute step sim.t, advance to sim.t + 1
        # or sim.skip_idle(): jump to the next arrival / completion (nothing changes before it)
    sim.decisions()                     # PlacementDecisions for the referee
    sim.metrics                         # per-step arrays (see PlacementSim.metrics)
    sim.total_completion_time()         # sum of finish - arrival (== sum of metrics["in_system"])

Queries: ``free(n)``, ``running(n)`` (placed, unfinished, paused included), ``allocation(j)``,
``progress(j)``, ``executed_steps(j)``, ``attained_gpu(j)``, ``elapsed(j)``, ``in_system()``,
``fits(j, n, cpu, gpu)``, ``can_start(j, n, cpu, gpu)``, ``num_started``, ``num_finished``,
``num_running``, ``cluster_of(j)``,
``start_step(j)``, ``finish_step(j)``, ``changed_at(j)`` (the last switch), ``waiting(n)`` (arrived, not started),
``run_steps(j, cpu, gpu)`` (steps a fresh run needs at a fixed allocation, cached),
``probe(j, cpu, gpu, k)`` (one observed step of a fresh run: profiling). Static data are
plain lists (``arrival``, ``min_cpu``, ``min_gpu``, ``eligible``, ``type_index``,
``type_names``, ``cap_cpu``, ``cap_gpu``, ``cap_mem``).

:func:`run_policy` drives a :class:`Policy` (``reset(sim)``, ``act(sim) -> bool``) to the end
of the episode, with a deadline and stall detection.
"""

from __future__ import annotations

import bisect
import heapq
import time
from typing import Mapping, Protocol

import numpy as np

from edgebench.instances import semantics
from edgebench.instances.model import Instance, PlacementPayload
from edgebench.solution import AllocationChange, PlacementDecision, PlacementDecisions

__all__ = ["PlacementSim", "SimError", "Stalled", "SimTimeout", "Policy", "run_policy"]


class SimError(ValueError):
    """A policy asked for something the model forbids (bad start, over capacity, ...)."""


class Stalled(RuntimeError):
    """Nothing can happen any more (no arrival, no running task will finish) but tasks remain."""


class SimTimeout(RuntimeError):
    """The deadline given to :func:`run_policy` has passed."""


class PlacementSim:
    """One episode of the TapFinger placement model (see the module docstring)."""

    def __init__(self, instance: Instance | PlacementPayload, *, record_metrics: bool = True):
        payload = instance.placement if isinstance(instance, Instance) else instance
        if payload is None:
            raise SimError("PlacementSim needs a placement instance")
        self.payload: PlacementPayload = payload
        p = payload
        tasks = p.tasks
        # ---- static data, plain lists ---------------------------------------------------
        self.num_clusters = N = len(p.clusters)
        self.num_tasks = J = len(tasks)
        self.cap_cpu = [c.capacity.cpu for c in p.clusters]
        self.cap_gpu = [c.capacity.gpu for c in p.clusters]
        self.cap_mem: list[int | None] = [c.capacity.memory for c in p.clusters]
        self.arrival = [t.arrival for t in tasks]
        self.min_cpu = [t.minimum.cpu for t in tasks]
        self.min_gpu = [t.minimum.gpu for t in tasks]
        self.min_mem: list[int | None] = [t.minimum.memory for t in tasks]
        self.eligible = [tuple(t.eligible) for t in tasks]
        self.type_names = sorted(p.performance.types)
        tindex = {name: i for i, name in enumerate(self.type_names)}
        self.type_index = [tindex[t.type] for t in tasks]
        self.pending_size = p.pending_size
        self.multi = p.variant == "multi"
        self.variant = p.variant
        self._overhead = 1.0 - p.switching_overhead
        self._eps_done = 1.0 - semantics.PROGRESS_EPS
        order = sorted(range(J), key=lambda j: (self.arrival[j], j))
        self._order = order
        #: per cluster, its not-yet-started tasks in queue order (arrived or not)
        self._waiting: list[list[int]] = [[] for _ in range(N)]
        for j in order:
            for n in self.eligible[j]:
                self._waiting[n].append(j)
        self._arrival_steps = sorted(set(self.arrival))
        self._record = record_metrics
        # ---- dynamic state ----------------------------------------------------------------
        self.t = 0
        self._cluster = [-1] * J
        self._start = [-1] * J
        self._finish = [-1] * J
        self._alloc_c = [0] * J
        self._alloc_g = [0] * J
        self._history: list[list[list[int]]] = [[] for _ in range(J)]
        # current segment of a placed task: allocation constant since _seg_t0
        self._seg_t0 = [0] * J
        self._seg_traj: list[list[float]] = [[0.0] for _ in range(J)]
        self._seg_k0 = [0] * J
        self._seg_att0 = [0] * J
        self._seg_fin = [-1] * J  # absolute finish step of the segment, -1: none
        self._seg_ver = [0] * J
        self._free_cpu = list(self.cap_cpu)
        self._free_gpu = list(self.cap_gpu)
        self._free_mem: list[int | None] = list(self.cap_mem)
        self._active: list[dict[int, None]] = [{} for _ in range(N)]  # placed, unfinished (ordered)
        self._started_now = [0] * N
        self._heap: list[tuple[int, int, int]] = []  # (finish, task, segment version)
        self._n_started = 0
        self._n_finished = 0
        self._n_positive = 0  # placed, unfinished tasks with a positive allocation
        self._arr_ptr = 0  # number of tasks (in `order`) with arrival <= t
        self._arrstep_ptr = 0
        self._windows: list[list[int]] = [[] for _ in range(N)]
        self._fresh: dict[tuple[int, int, int], tuple[list[float], int]] = {}
        # ---- metrics ----------------------------------------------------------------------
        self._m_in_system: list[int] = []
        self._m_running: list[int] = []
        self._m_paused: list[int] = []
        self._m_waiting: list[int] = []
        self._m_cpu: list[list[int]] = []
        self._m_gpu: list[list[int]] = []
        self._begin_step()

    # ==================================================================================
    # queries
    # ==================================================================================

    @property
    def done(self) -> bool:
        """Every task has finished."""
        return self._n_finished == self.num_tasks

    @property
    def num_started(self) -> int:
        """Tasks placed so far (finished ones included)."""
        return self._n_started

    @property
    def num_finished(self) -> int:
        return self._n_finished

    @property
    def num_running(self) -> int:
        """Placed, unfinished tasks with a positive allocation (paused ones excluded)."""
        return self._n_positive

    def pending(self, n: int) -> list[int]:
        """Pending set of cluster ``n`` in step ``t`` (queue order), minus tasks started since."""
        cl = self._cluster
        return [j for j in self._windows[n] if cl[j] < 0]

    def waiting(self, n: int) -> list[int]:
        """Every arrived, not started task of cluster ``n``'s queue (queue order)."""
        return self._waiting[n][:self.queue_length(n)]

    def queue_length(self, n: int) -> int:
        """How many tasks :meth:`waiting` lists (a binary search: the queue is in arrival order)."""
        return bisect.bisect_right(self._waiting[n], self.t, key=self.arrival.__getitem__)

    def free(self, n: int) -> tuple[int, int, int | None]:
        """Free (cpu, gpu, memory) of cluster ``n`` in step ``t`` (memory None: not tracked)."""
        return self._free_cpu[n], self._free_gpu[n], self._free_mem[n]

    def running(self, n: int) -> list[int]:
        """Tasks placed on ``n`` and not finished, paused ones included, in start order."""
        return list(self._active[n])

    def allocation(self, j: int) -> tuple[int, int]:
        return self._alloc_c[j], self._alloc_g[j]

    def cluster_of(self, j: int) -> int | None:
        n = self._cluster[j]
        return None if n < 0 else n

    def start_step(self, j: int) -> int | None:
        s = self._start[j]
        return None if s < 0 else s

    def finish_step(self, j: int) -> int | None:
        """The step after the one in which j completed; None while it is not finished."""
        f = self._finish[j]
        return None if f < 0 else f

    def elapsed(self, j: int) -> int:
        """Steps since ``j`` started (paused steps included); 0 if not started."""
        s = self._start[j]
        if s < 0:
            return 0
        f = self._finish[j]
        return (f if f >= 0 else self.t) - s

    def changed_at(self, j: int) -> int | None:
        """The last step in which ``j``'s allocation differed from the step before's (a
        switch: it paid the switching overhead, or it was paused); None when it holds its
        start allocation (or is not placed)."""
        hist = self._history[j]
        return hist[-1][0] if len(hist) > 1 else None

    def in_system(self) -> int:
        """Tasks arrived by step ``t`` and not finished (the TapFinger reward counts these)."""
        return self._arr_ptr - self._n_finished

    def is_started(self, j: int) -> bool:
        return self._cluster[j] >= 0

    def is_finished(self, j: int) -> bool:
        return self._finish[j] >= 0

    def _elapsed_in_segment(self, j: int) -> int:
        t = self.t
        f = self._seg_fin[j]
        if f >= 0 and f < t:
            t = f
        return t - self._seg_t0[j]

    def _runnable(self, j: int, c: int, g: int) -> bool:
        return c >= self.min_cpu[j] and g >= self.min_gpu[j] and (c > 0 or g > 0)

    def progress(self, j: int) -> float:
        """Progress of ``j`` at the beginning of step ``t`` (0 before its start)."""
        if self._cluster[j] < 0:
            return 0.0
        traj = self._seg_traj[j]
        i = self._elapsed_in_segment(j)
        return traj[i] if i < len(traj) else traj[-1]

    def executed_steps(self, j: int) -> int:
        """The executed-step counter k of ``j`` at the beginning of step ``t``."""
        if self._cluster[j] < 0:
            return 0
        if self._runnable(j, self._alloc_c[j], self._alloc_g[j]):
            return self._seg_k0[j] + self._elapsed_in_segment(j)
        return self._seg_k0[j]

    def attained_gpu(self, j: int) -> int:
        """GPU-steps ``j`` has received in executed steps before step ``t``."""
        if self._cluster[j] < 0:
            return 0
        c, g = self._alloc_c[j], self._alloc_g[j]
        if self._runnable(j, c, g):
            return self._seg_att0[j] + g * self._elapsed_in_segment(j)
        return self._seg_att0[j]

    def run_steps(self, j: int, cpu: int, gpu: int) -> int | None:
        """Steps a fresh run of ``j`` needs at the constant allocation (cpu, gpu) (noise
        included, no switching; the value of ``semantics.fixed_run_steps``); None: never."""
        traj, fin = self._fresh_run(j, cpu, gpu)
        return fin if fin > 0 else None

    def probe(self, j: int, cpu: int, gpu: int, k: int = 0, progress: float = 0.0) -> float:
        """Progress a run of ``j`` at (cpu, gpu) would observe in its k-th executed step from
        ``progress`` (noise realisation k, no switching): what a profiling run measures."""
        if not self._runnable(j, cpu, gpu):
            return 0.0
        return semantics.noisy_gain(self.payload, j, k, semantics.increment(self.payload, j, cpu, gpu, progress))

    def can_start(self, j: int, n: int, cpu: int, gpu: int) -> bool:
        return self._start_problem(j, n, cpu, gpu) is None

    def fits(self, j: int, n: int, cpu: int, gpu: int) -> bool:
        """(cpu, gpu) is a valid allocation of ``j`` (>= minimum, <= capacity) that fits the
        free resources of ``n`` now (memory included)."""
        if cpu < self.min_cpu[j] or gpu < self.min_gpu[j] or (cpu <= 0 and gpu <= 0):
            return False
        if cpu > self._free_cpu[n] or gpu > self._free_gpu[n]:
            return False
        fm = self._free_mem[n]
        mm = self.min_mem[j]
        return fm is None or mm is None or mm <= fm

    # ==================================================================================
    # actions
    # ==================================================================================

    def _start_problem(self, j: int, n: int, cpu: int, gpu: int) -> str | None:
        if not (0 <= j < self.num_tasks) or not (0 <= n < self.num_clusters):
            return f"no task {j} / cluster {n}"
        if self._cluster[j] >= 0:
            return f"task {j} is already placed on cluster {self._cluster[j]}"
        if j not in self._windows[n]:
            return f"task {j} is not in the pending set of cluster {n} in step {self.t}"
        if not self.multi and self._started_now[n] >= 1:
            return f"cluster {n} already started a task in step {self.t} (variant 'single')"
        if not self.fits(j, n, cpu, gpu):
            return (f"allocation ({cpu} cpu, {gpu} gpu) of task {j} is below its minimum "
                    f"({self.min_cpu[j]}, {self.min_gpu[j]}) or does not fit the free resources of cluster {n} "
                    f"{self.free(n)}")
        return None

    def start(self, j: int, n: int, cpu: int, gpu: int) -> None:
        """Place pending task ``j`` on cluster ``n`` from step ``t`` on at (cpu, gpu)."""
        why = self._start_problem(j, n, cpu, gpu)
        if why is not None:
            raise SimError(why)
        t = self.t
        self._cluster[j] = n
        self._start[j] = t
        self._started_now[n] += 1
        self._n_started += 1
        for m in self.eligible[j]:
            self._waiting[m].remove(j)
        self._active[n][j] = None
        self._history[j] = [[t, cpu, gpu]]
        self._take(j, n, cpu, gpu)
        self._n_positive += 1
        self._alloc_c[j], self._alloc_g[j] = cpu, gpu
        self._set_segment(j, t, cpu, gpu, 0.0, 0, 0, False)

    def reallocate(self, j: int, cpu: int, gpu: int) -> None:
        """Give placed, unfinished task ``j`` (cpu, gpu) from step ``t`` on; (0, 0) pauses it."""
        n = self._cluster[j]
        if n < 0 or self._finish[j] >= 0:
            raise SimError(f"task {j} is not running (placed: {n >= 0}, finished: {self._finish[j] >= 0})")
        oc, og = self._alloc_c[j], self._alloc_g[j]
        self._check_alloc(j, n, cpu, gpu)
        need_c = cpu - oc
        need_g = gpu - og
        need_m = self._mem_of(j, n, cpu, gpu) - self._mem_of(j, n, oc, og)
        fm = self._free_mem[n]
        if need_c > self._free_cpu[n] or need_g > self._free_gpu[n] or (fm is not None and need_m > fm):
            raise SimError(f"reallocating task {j} to ({cpu}, {gpu}) exceeds the free resources of cluster {n} "
                           f"{self.free(n)} (it holds ({oc}, {og}))")
        self._apply(j, n, cpu, gpu)

    def set_allocations(self, n: int, allocs: Mapping[int, tuple[int, int]]) -> None:
        """Re-allocate several tasks of cluster ``n`` at once; the capacity is checked on the
        result (so one task can shrink while another grows)."""
        cpu, gpu = self._free_cpu[n], self._free_gpu[n]
        mem = self._free_mem[n]
        for j, (c, g) in allocs.items():
            if self._cluster[j] != n or self._finish[j] >= 0:
                raise SimError(f"task {j} is not running on cluster {n}")
            self._check_alloc(j, n, c, g)
            oc, og = self._alloc_c[j], self._alloc_g[j]
            cpu -= c - oc
            gpu -= g - og
            if mem is not None:
                mem -= self._mem_of(j, n, c, g) - self._mem_of(j, n, oc, og)
        if cpu < 0 or gpu < 0 or (mem is not None and mem < 0):
            raise SimError(f"the allocations {dict(allocs)} exceed the capacity of cluster {n}")
        # shrink first so that the running totals never go negative
        for j, (c, g) in sorted(allocs.items(), key=lambda kv: (kv[1][0] - self._alloc_c[kv[0]])
                                + (kv[1][1] - self._alloc_g[kv[0]])):
            if (c, g) != (self._alloc_c[j], self._alloc_g[j]):
                self._apply(j, n, c, g)

    def _check_alloc(self, j: int, n: int, cpu: int, gpu: int) -> None:
        if cpu < 0 or gpu < 0:
            raise SimError(f"negative allocation ({cpu}, {gpu}) for task {j}")
        if (cpu, gpu) == (0, 0):
            if self._start[j] == self.t:
                raise SimError(f"task {j} cannot be paused in its start step {self.t}")
            return
        if cpu < self.min_cpu[j] or gpu < self.min_gpu[j]:
            raise SimError(f"allocation ({cpu}, {gpu}) of task {j} is below its minimum "
                           f"({self.min_cpu[j]}, {self.min_gpu[j]})")
        if cpu > self.cap_cpu[n] or gpu > self.cap_gpu[n]:
            raise SimError(f"allocation ({cpu}, {gpu}) of task {j} exceeds the capacity of cluster {n}")

    def _mem_of(self, j: int, n: int, cpu: int, gpu: int) -> int:
        mm = self.min_mem[j]
        if mm is None or self.cap_mem[n] is None or (cpu <= 0 and gpu <= 0):
            return 0
        return mm

    def _take(self, j: int, n: int, cpu: int, gpu: int) -> None:
        self._free_cpu[n] -= cpu
        self._free_gpu[n] -= gpu
        if self._free_mem[n] is not None:
            self._free_mem[n] -= self._mem_of(j, n, cpu, gpu)

    def _give(self, j: int, n: int, cpu: int, gpu: int) -> None:
        self._free_cpu[n] += cpu
        self._free_gpu[n] += gpu
        if self._free_mem[n] is not None:
            self._free_mem[n] += self._mem_of(j, n, cpu, gpu)

    def _apply(self, j: int, n: int, cpu: int, gpu: int) -> None:
        t = self.t
        oc, og = self._alloc_c[j], self._alloc_g[j]
        if (cpu, gpu) == (oc, og):
            return
        p_t = self.progress(j)
        k_t = self.executed_steps(j)
        att_t = self.attained_gpu(j)
        self._give(j, n, oc, og)
        self._take(j, n, cpu, gpu)
        self._n_positive += (cpu > 0 or gpu > 0) - (oc > 0 or og > 0)
        self._alloc_c[j], self._alloc_g[j] = cpu, gpu
        hist = self._history[j]
        if self._start[j] == t:  # still the start step: the start allocation is replaced
            hist[0] = [t, cpu, gpu]
            self._set_segment(j, t, cpu, gpu, 0.0, 0, 0, False)
            return
        if hist[-1][0] == t:
            hist.pop()
        prev = (hist[-1][1], hist[-1][2])  # the allocation held in step t - 1
        if prev != (cpu, gpu):
            hist.append([t, cpu, gpu])
        self._set_segment(j, t, cpu, gpu, p_t, k_t, att_t, prev != (cpu, gpu))

    # ---- segments: constant allocation from _seg_t0 on ------------------------------------

    def _fresh_run(self, j: int, c: int, g: int) -> tuple[list[float], int]:
        key = (j, c, g)
        hit = self._fresh.get(key)
        if hit is None:
            hit = self._trajectory(j, c, g, 0.0, 0, False)
            self._fresh[key] = hit
        return hit

    def _trajectory(self, j: int, c: int, g: int, p0: float, k0: int, penalty: bool) -> tuple[list[float], int]:
        """Progress at the beginning of each step of a constant-allocation run from (p0, k0),
        and the number of steps to finish (-1: never). Same arithmetic as the referee."""
        traj = [p0]
        if not self._runnable(j, c, g):
            return traj, -1
        payload = self.payload
        inc_fn = semantics.increment
        noise_fn = semantics.noisy_gain
        eps_done = self._eps_done
        p = p0
        k = k0
        for i in range(semantics.MAX_RUN_STEPS):
            inc = inc_fn(payload, j, c, g, p)
            if inc <= 0:
                return traj, -1
            gain = noise_fn(payload, j, k, inc)
            if penalty and i == 0:
                gain *= self._overhead
            p += gain
            k += 1
            traj.append(p)
            if p >= eps_done:
                return traj, i + 1
        return traj, -1

    def _set_segment(self, j: int, t: int, c: int, g: int, p0: float, k0: int, att0: int, penalty: bool) -> None:
        if p0 == 0.0 and k0 == 0 and not penalty:
            traj, fin = self._fresh_run(j, c, g)
        else:
            traj, fin = self._trajectory(j, c, g, p0, k0, penalty)
        self._seg_t0[j] = t
        self._seg_traj[j] = traj
        self._seg_k0[j] = k0
        self._seg_att0[j] = att0
        self._seg_ver[j] += 1
        if fin > 0:
            self._seg_fin[j] = t + fin
            heapq.heappush(self._heap, (t + fin, j, self._seg_ver[j]))
        else:
            self._seg_fin[j] = -1

    # ==================================================================================
    # time
    # ==================================================================================

    def _begin_step(self) -> None:
        t = self.t
        arr = self.arrival
        order = self._order
        ptr = self._arr_ptr
        while ptr < len(order) and arr[order[ptr]] <= t:
            ptr += 1
        self._arr_ptr = ptr
        ps = self.pending_size
        for n in range(self.num_clusters):
            win = []
            for j in self._waiting[n]:
                if arr[j] > t or len(win) == ps:
                    break
                win.append(j)
            self._windows[n] = win
            self._started_now[n] = 0

    def _record_steps(self, count: int) -> None:
        if not self._record or count <= 0:
            return
        in_sys = self._arr_ptr - self._n_finished
        active = self._n_started - self._n_finished
        cpu = [c - f for c, f in zip(self.cap_cpu, self._free_cpu)]
        gpu = [c - f for c, f in zip(self.cap_gpu, self._free_gpu)]
        self._m_in_system.extend([in_sys] * count)
        self._m_running.extend([self._n_positive] * count)
        self._m_paused.extend([active - self._n_positive] * count)
        self._m_waiting.extend([in_sys - active] * count)
        self._m_cpu.extend([cpu] * count)
        self._m_gpu.extend([gpu] * count)

    def _valid_top(self) -> int | None:
        heap = self._heap
        while heap:
            f, j, ver = heap[0]
            if ver != self._seg_ver[j] or self._finish[j] >= 0:
                heapq.heappop(heap)
                continue
            return f
        return None

    def _advance(self, to: int) -> None:
        """Execute steps t .. to-1 (nothing may change inside them) and begin step ``to``."""
        self._record_steps(to - self.t)
        self.t = to
        heap = self._heap
        while True:
            f = self._valid_top()
            if f is None or f > to:
                break
            _, j, _ = heapq.heappop(heap)
            self._complete(j, f)
        self._begin_step()

    def _complete(self, j: int, f: int) -> None:
        n = self._cluster[j]
        self._finish[j] = f
        self._n_finished += 1
        c, g = self._alloc_c[j], self._alloc_g[j]
        self._give(j, n, c, g)
        if c > 0 or g > 0:
            self._n_positive -= 1
        del self._active[n][j]

    def step(self) -> None:
        """Execute step ``t`` with the allocations in force and begin step ``t + 1``."""
        if self.done:
            raise SimError("the episode is over")
        self._advance(self.t + 1)

    def next_event(self) -> int | None:
        """The next step > t in which a task arrives or the first step after a completion
        (None: no such step — the episode is over or stalled)."""
        best = self._valid_top()
        steps = self._arrival_steps
        i = self._arrstep_ptr
        while i < len(steps) and steps[i] <= self.t:
            i += 1
        self._arrstep_ptr = i
        if i < len(steps):
            best = steps[i] if best is None else min(best, steps[i])
        if best is not None and best <= self.t:  # pragma: no cover - completions are processed
            best = self.t + 1
        return best

    def skip_idle(self) -> None:
        """Execute steps until the next arrival or completion: for a policy that does nothing
        while nothing changes, the same as calling :meth:`step` repeatedly."""
        if self.done:
            raise SimError("the episode is over")
        nxt = self.next_event()
        if nxt is None:
            raise Stalled(f"step {self.t}: {self.num_tasks - self._n_finished} tasks unfinished and no arrival or "
                          "completion ahead (paused or stuck tasks, or tasks never started)")
        self._advance(nxt)

    # ==================================================================================
    # results
    # ==================================================================================

    def decisions(self) -> PlacementDecisions:
        """The episode's decisions (tasks not placed yet have ``cluster`` None)."""
        out = []
        for j in range(self.num_tasks):
            n = self._cluster[j]
            if n < 0:
                out.append(PlacementDecision())
                continue
            hist = self._history[j]
            if len(hist) == 1:
                _, c, g = hist[0]
                out.append(PlacementDecision(cluster=n, start=self._start[j], cpu=c, gpu=g))
            else:
                out.append(PlacementDecision(cluster=n, start=self._start[j], history=tuple(
                    AllocationChange(step=s, cpu=c, gpu=g) for s, c, g in hist)))
        return PlacementDecisions(tasks=tuple(out))

    def total_completion_time(self) -> int:
        """Sum over finished tasks of finish - arrival."""
        return sum(f - a for f, a in zip(self._finish, self.arrival) if f >= 0)

    def completion_times(self) -> list[int | None]:
        return [None if f < 0 else f - a for f, a in zip(self._finish, self.arrival)]

    @property
    def metrics(self) -> dict[str, np.ndarray]:
        """Per executed step t in [0, t): ``in_system`` (arrived, unfinished), ``running``
        (positive allocation), ``paused`` (placed, allocation (0, 0)), ``waiting`` (arrived,
        not started), ``cpu_used`` / ``gpu_used`` and ``cpu_util`` / ``gpu_util`` (shape
        (steps, clusters))."""
        N = self.num_clusters
        cpu = np.asarray(self._m_cpu, dtype=np.int64).reshape(-1, N)
        gpu = np.asarray(self._m_gpu, dtype=np.int64).reshape(-1, N)
        return {
            "in_system": np.asarray(self._m_in_system, dtype=np.int64),
            "running": np.asarray(self._m_running, dtype=np.int64),
            "paused": np.asarray(self._m_paused, dtype=np.int64),
            "waiting": np.asarray(self._m_waiting, dtype=np.int64),
            "cpu_used": cpu,
            "gpu_used": gpu,
            "cpu_util": cpu / np.asarray(self.cap_cpu, dtype=float),
            "gpu_util": gpu / np.asarray(self.cap_gpu, dtype=float),
        }


# ======================================================================================
# policies
# ======================================================================================


class Policy(Protocol):
    """An online policy: ``reset`` once, then ``act`` in every step the driver visits.
    ``act`` starts / re-allocates through the simulator's API and returns True when it
    would do nothing until the next arrival or completion (the driver may then skip the
    idle steps with :meth:`PlacementSim.skip_idle`)."""

    def reset(self, sim: PlacementSim) -> None: ...

    def act(self, sim: PlacementSim) -> bool: ...


def run_policy(sim: PlacementSim, policy: Policy, *, deadline: float | None = None,
               max_idle_steps: int = semantics.MAX_RUN_STEPS) -> PlacementSim:
    """Drive ``policy`` until every task has finished. Raises :class:`SimTimeout` past the
    ``deadline`` (a ``time.perf_counter()`` value) and :class:`Stalled` when nothing can
    happen any more, or after ``max_idle_steps`` steps in which no task was running."""
    policy.reset(sim)
    idle = 0
    while not sim.done:
        if deadline is not None and time.perf_counter() > deadline:
            raise SimTimeout(f"deadline passed at step {sim.t}")
        static = policy.act(sim)
        if sim.done:  # pragma: no cover - acting never completes a task
            break
        if static or (sim._n_positive == 0 and not any(sim._windows[n] for n in range(sim.num_clusters))
                      and sim._n_started == sim._n_finished):
            sim.skip_idle()
            idle = 0
        else:
            if sim._n_positive == 0:
                idle += 1
                if idle > max_idle_steps:
                    raise Stalled(f"no task ran for {max_idle_steps} steps (step {sim.t})")
            else:
                idle = 0
            sim.step()
    return sim
