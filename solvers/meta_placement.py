"""Random-key encoding of the placement family (TapFinger) for the metaheuristics.

A genome is a float vector in [0, 1)^(3J) for J tasks, in three blocks of J keys:

* ``keys[0:J]`` — **priority**: tasks are scheduled in increasing key order (ties by index);
* ``keys[J:2J]`` — **cluster**: ``floor(key * m_j)`` indexes the task's *usable* clusters
  (its eligible clusters on which some allocation lets it finish, in eligible order);
* ``keys[2J:3J]`` — **allocation**: ``floor(key * o)`` indexes the chosen cluster's
  Pareto-minimal options ``semantics.dominant_options(payload, j, n)`` — (cpu, gpu, steps)
  with the instance's noise realisation — in the order that function returns them.

Decoder: a *serial schedule builder*. Tasks are taken in priority order; each gets its
chosen cluster and allocation for its whole life (no re-allocation, no pause) and starts at
the earliest step ``>= arrival`` at which the allocation (cpu, gpu and, where both the task
and the cluster give one, memory) fits the cluster's capacity profile during every step of
its run — and, in variant "single", no other task starts on that cluster in that step. A
cluster's profile is a list of breakpoints (integer steps) with the cpu / gpu / memory in
use on each segment between two breakpoints; the start search scans the segments from the
arrival and, on an overloaded segment, restarts where it ends. (A first version kept dense
NumPy arrays per cluster and step; the segment lists give identical decodings 4-10 times
faster, since a decode touches few segments and NumPy's per-call overhead dominated.) Every
decoded schedule is feasible for the referee (a task finishes at ``start + steps``, its
fixed-allocation run length, which is what the referee re-simulates).

For every feasible fixed-allocation schedule some genome decodes to a schedule at least as
good (encode it by its start order: see :meth:`PlacementProblem.encode`), so the encoding
reaches the optimum of ``placement-milp``, which optimises over the same options.

Evaluation: the referee's total completion time — each decoded schedule is scored by
:func:`edgebench.referee.evaluate_decisions`, never by a copy of its formula. Distinct
genomes often make the same choices (task order, cluster and option indices), and distinct
choices often decode to the same schedule, so the referee's value is memoised by choices
(skipping the decoder) and by decoded schedule (skipping the referee); each memo holds
``cache_size`` entries and is cleared when full.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from typing import Any

import numpy as np

from edgebench.instances import semantics
from edgebench.instances.model import Instance
from edgebench.referee.common import IdentityCache
from edgebench.solution import PlacementDecision, PlacementDecisions
from edgebench.solvers.meta_common import clip_keys, index_to_key

FAMILY = "placement"
#: memoised referee values (decoded schedule -> objective); cleared when full
DEFAULT_CACHE_SIZE = 200_000


def _task_options(payload) -> list[list[tuple[int, tuple[tuple[int, int, int], ...]]]]:
    """Per task: (cluster, dominant options) for each eligible cluster with at least one."""
    out = []
    for j, task in enumerate(payload.tasks):
        row = []
        for n in task.eligible:
            opts = semantics.dominant_options(payload, j, n)
            if opts:
                row.append((n, tuple(opts)))
        out.append(row)
    return out


#: the options of a payload, computed once per payload object (they cost ~8 ms per task)
_options_cache = IdentityCache(_task_options, size=16)


class PlacementProblem:
    """The placement instance as a random-key problem (see the module docstring)."""

    family = FAMILY
    sense = "min"

    def __init__(self, instance: Instance, *, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        if instance.family != FAMILY:
            raise ValueError(f"PlacementProblem needs a placement instance, got {instance.family!r}")
        p = instance.placement
        assert p is not None
        self.instance = instance
        self.payload = p
        self.num_tasks = J = len(p.tasks)
        self.num_clusters = N = len(p.clusters)
        self.dim = 3 * J
        self.single = p.variant == "single"
        self.arrival = np.array([t.arrival for t in p.tasks], dtype=np.int64)
        # capacity [3, N]: cpu, gpu, memory (memory unbounded where the cluster gives none)
        big = np.iinfo(np.int64).max // 4
        self.capacity = np.array([[c.capacity.cpu for c in p.clusters],
                                  [c.capacity.gpu for c in p.clusters],
                                  [c.capacity.memory if c.capacity.memory is not None else big
                                   for c in p.clusters]], dtype=np.int64)
        #: per task: its usable clusters (eligible, with at least one finishing option)
        self.clusters: list[tuple[int, ...]] = []
        #: per task, per usable cluster: options (cpu, gpu, steps) as an int array [o, 3]
        self.options: list[list[np.ndarray]] = []
        #: per task, per usable cluster: the memory the task holds there (0 if none)
        self.memory: list[list[int]] = []
        for j, (task, usable) in enumerate(zip(p.tasks, _options_cache(p))):
            cl, op, mem = [], [], []
            for n, opts in usable:
                cl.append(n)
                op.append(np.array(opts, dtype=np.int64).reshape(-1, 3))
                cap_mem = p.clusters[n].capacity.memory
                mem.append(task.minimum.memory if (task.minimum.memory is not None and cap_mem is not None) else 0)
            if not cl:  # the instance model rules this out (best_increment > 0), kept as a guard
                raise ValueError(f"task {j} can finish on none of its eligible clusters")
            self.clusters.append(tuple(cl))
            self.options.append(op)
            self.memory.append(mem)
        self.n_clusters = np.array([len(c) for c in self.clusters], dtype=np.int64)
        # plain-Python copies for the decoder's inner loop
        self._opts = [[[tuple(int(x) for x in row) for row in o.tolist()] for o in op] for op in self.options]
        self._arrival = self.arrival.tolist()
        self._cap = [tuple(int(x) for x in self.capacity[:, n]) for n in range(N)]
        self.cache_size = int(cache_size)
        #: memo of referee values: by decoded schedule, and by the choices that fix it
        self._cache: dict[tuple, float] = {}
        self._choice_cache: dict[tuple, float] = {}
        self.cache_hits = 0
        self.referee_calls = 0

    # ---- decoding ---------------------------------------------------------------------

    def _choices(self, keys: list[float]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """What a genome (a list of floats already in [0, 1)) chooses: the task order, and per
        task the index of its cluster and of its option. They alone fix the decoding."""
        J = self.num_tasks
        order = tuple(sorted(range(J), key=keys.__getitem__))  # stable: ties by task index
        cl, op = [], []
        for j in range(J):
            m = len(self.clusters[j])
            k = int(keys[J + j] * m)
            k = k if k < m else m - 1
            o_n = len(self._opts[j][k])
            o = int(keys[2 * J + j] * o_n)
            cl.append(k)
            op.append(o if o < o_n else o_n - 1)
        return order, tuple(cl), tuple(op)

    def _decode_list(self, keys: list[float]) -> list[tuple[int, int, int, int, int]]:
        """The decoder on one genome given as a list of floats already in [0, 1): per task
        (cluster, start, cpu, gpu, steps)."""
        return self._build(*self._choices(keys))

    def _build(self, order, cl_idx, opt_idx) -> list[tuple[int, int, int, int, int]]:
        """The serial schedule builder for the given choices (see :meth:`_choices`)."""
        J = self.num_tasks
        single = self.single
        # per cluster: breakpoints ts (the first is step 0) and the cpu / gpu / memory in use
        # on each segment [ts[i], ts[i+1]); the last segment is free for ever
        prof = [([0], [0], [0], [0]) for _ in range(self.num_clusters)]
        starts: list[set[int]] = [set() for _ in range(self.num_clusters)]
        out: list[tuple[int, int, int, int, int]] = [(0, 0, 0, 0, 0)] * J
        for j in order:
            k = cl_idx[j]
            n = self.clusters[j][k]
            c, g, d = self._opts[j][k][opt_idx[j]]
            m = self.memory[j][k]
            cc, cg, cm = self._cap[n]
            fc, fg, fm = cc - c, cg - g, cm - m
            ts, uc, ug, um = prof[n]
            st = starts[n]
            last = len(ts) - 1
            x = self._arrival[j]
            i = bisect_right(ts, x) - 1
            while True:
                if single and x in st:  # another task starts here on this cluster
                    x += 1
                    while i < last and ts[i + 1] <= x:
                        i += 1
                    continue
                e = x + d
                q = i
                while q < last and ts[q] < e:
                    if uc[q] > fc or ug[q] > fg or um[q] > fm:
                        break
                    q += 1
                else:
                    break  # fits during [x, x + d)
                i = q + 1  # segment q is overloaded: the earliest start is where it ends
                x = ts[i]
            a = _split(prof[n], x)
            b = _split(prof[n], x + d)
            for q in range(a, b):
                uc[q] += c
                ug[q] += g
                um[q] += m
            st.add(x)
            out[j] = (n, x, c, g, d)
        return out

    def decode_arrays(self, keys: np.ndarray) -> np.ndarray:
        """One genome [dim] -> int array [J, 5]: per task (cluster, start, cpu, gpu, steps)."""
        keys = clip_keys(np.asarray(keys, dtype=float).reshape(self.dim))
        return np.array(self._decode_list(keys.tolist()), dtype=np.int64).reshape(self.num_tasks, 5)

    def _decisions(self, rows) -> PlacementDecisions:
        return PlacementDecisions(tasks=tuple(
            PlacementDecision(cluster=int(n), start=int(t), cpu=int(c), gpu=int(g)) for n, t, c, g, _ in rows))

    def decisions_from_arrays(self, arr: np.ndarray) -> PlacementDecisions:
        return self._decisions(np.asarray(arr).tolist())

    def decode(self, keys: np.ndarray) -> PlacementDecisions:
        """One genome [dim] -> feasible PlacementDecisions (fixed allocations)."""
        return self.decisions_from_arrays(self.decode_arrays(keys))

    # ---- evaluation -------------------------------------------------------------------

    def _score(self, rows: list[tuple[int, int, int, int, int]]) -> float:
        key = tuple(rows)
        hit = self._cache.get(key)
        if hit is not None:
            self.cache_hits += 1
            return hit
        from edgebench.referee import evaluate_decisions

        self.referee_calls += 1
        ev = evaluate_decisions(self.instance, self._decisions(rows))
        value = ev.primary_value if ev.feasible else math.inf
        if len(self._cache) >= self.cache_size:
            self._cache.clear()
        self._cache[key] = value
        return value

    def _value(self, keys: list[float]) -> float:
        choice = self._choices(keys)
        hit = self._choice_cache.get(choice)
        if hit is not None:
            self.cache_hits += 1
            return hit
        value = self._score(self._build(*choice))
        if len(self._choice_cache) >= self.cache_size:
            self._choice_cache.clear()
        self._choice_cache[choice] = value
        return value

    def evaluate(self, pop: np.ndarray) -> np.ndarray:
        """Population [P, dim] -> [P] referee total completion time (steps) of the decodings."""
        rows = clip_keys(np.atleast_2d(np.asarray(pop, dtype=float)).reshape(-1, self.dim)).tolist()
        return np.array([self._value(r) for r in rows], dtype=float)

    # ---- encoding (warm start) --------------------------------------------------------

    def encode(self, decisions: Any) -> np.ndarray | None:
        """A genome whose decoding is at least as good as ``decisions`` when they hold fixed
        allocations among the dominant options (or dominated by one of them).

        Priority = rank of the start step (ties: task index); cluster = index of the task's
        cluster among its usable ones; allocation = the option that dominates the held
        allocation (at most its cpu, gpu and steps; the fewest steps, then the least
        resources) or, when none does, the option closest to it in (cpu, gpu). A task with an
        allocation history is encoded by its first running allocation. Returns None when
        the decisions are for another instance shape or leave a task unplaced."""
        if isinstance(decisions, dict):
            from edgebench.instances.io import validate_model

            decisions = validate_model(PlacementDecisions, decisions)
        if not isinstance(decisions, PlacementDecisions) or len(decisions.tasks) != self.num_tasks:
            return None
        J = self.num_tasks
        keys = np.zeros(self.dim)
        start_of = np.zeros(J, dtype=np.int64)
        for j, d in enumerate(decisions.tasks):
            if d.cluster is None or d.cluster not in self.clusters[j]:
                return None
            c, g = d.cpu, d.gpu
            start = d.start
            if d.history:
                running = [(h.step, h.cpu, h.gpu) for h in d.history if h.cpu > 0 or h.gpu > 0]
                if not running:
                    return None
                s0, c, g = running[0]
                start = d.start if d.start is not None else s0
            if start is None:
                return None
            start_of[j] = start
            k = self.clusters[j].index(d.cluster)
            opts = self.options[j][k]
            held = semantics.fixed_run_steps(self.payload, j, c, g) if (c > 0 or g > 0) else None
            keys[J + j] = index_to_key(k, len(self.clusters[j]))
            keys[2 * J + j] = index_to_key(_closest_option(opts, c, g, held), len(opts))
        rank = np.empty(J, dtype=np.int64)
        rank[np.lexsort((np.arange(J), start_of))] = np.arange(J)
        keys[:J] = index_to_key(rank, J)
        return clip_keys(keys)


def _closest_option(opts: np.ndarray, cpu: int, gpu: int, steps: int | None) -> int:
    """Index of the option replacing an allocation (cpu, gpu) that runs ``steps`` steps."""
    oc, og, od = opts[:, 0], opts[:, 1], opts[:, 2]
    if steps is not None:
        dom = np.flatnonzero((oc <= cpu) & (og <= gpu) & (od <= steps))
        if dom.size:
            # fewest steps, then the least resources, then the lowest index
            best = min(dom.tolist(), key=lambda i: (int(od[i]), int(oc[i]) + int(og[i]), i))
            return int(best)
    dist = np.abs(oc - cpu) + np.abs(og - gpu)
    return int(np.lexsort((np.arange(len(opts)), od, dist))[0])


def _split(profile, t: int) -> int:
    """Index of the segment of ``profile`` that starts at step t (inserting a breakpoint)."""
    ts, uc, ug, um = profile
    i = bisect_left(ts, t)
    if i < len(ts) and ts[i] == t:
        return i
    ts.insert(i, t)
    uc.insert(i, uc[i - 1])
    ug.insert(i, ug[i - 1])
    um.insert(i, um[i - 1])
    return i


__all__ = ["PlacementProblem"]
