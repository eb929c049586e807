"""Serial schedule generation, compiled (numba): a schedule from a task order and one option or
shape per task (``placement-lahc``'s decoder; docs/formulations/placement-search.md, "Late-acceptance search").

Tasks are taken in ``order``; each holds its chosen :class:`~.problem.Option` (cluster, cpu, gpu,
memory, steps) from its start to its finish and starts at the earliest step ``>= arrival`` at which
the option fits its cluster's capacity (cpu, gpu, memory) during every step of its run next to the
tasks placed before it and, in variant single, no task placed before it starts on that cluster in
that step. The same rule as :meth:`.problem.Profile.earliest` (a test compares the two), on flat
arrays, so that one decode of a 384-task schedule costs tens of microseconds instead of
milliseconds. Every decoded schedule is feasible for the referee and its value
``sum(start + steps - arrival)`` is the referee's (fixed allocations: no switching loss).

A task may instead hold a :class:`.shapes.Shape`: an allocation history relative to its start
(pieces of allocations, pauses possible), whose steps the step rule fixed in advance; the same
rule then checks each step against the piece that holds it (a test tries every start in turn
against the kernel's jumps). Its value is the referee's too: the noise is indexed by executed
steps and the switching loss by the history, neither by the start.

Horizon: a task's earliest start is at most the latest finish of the tasks placed before it (or its
arrival): the cluster is empty from then on and every piece fits an empty cluster (dominant options
and a referee-feasible warm start's allocations are within capacity). So every finish is at most
``max(arrival) + sum over tasks of their longest shape``, the workspace's length.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from edgebench.formulations.placement.problem import PlacementData, Schedule
from edgebench.formulations.placement.search.shapes import Shape
from edgebench.solution import PlacementDecisions

#: memory capacity of a cluster that gives none (never binds)
NO_LIMIT = np.iinfo(np.int64).max // 4


class Tables:
    """The flat arrays of one instance's options (``data.options``, in their order), followed per
    task by any extra two-piece ``shapes`` (:class:`.shapes.Shape`, ``placement-lahc`` with
    ``pieces = 2``), its capacities and arrivals, and the decoder's workspace. ``choice[j]``
    indexes ``self.shapes[j]``: the first ``self.ones[j]`` are the fixed options."""

    def __init__(self, data: PlacementData, shapes: list[list[Shape]] | None = None):
        self.data = data
        self.shapes = [[Shape.of(o) for o in opts] + (list(shapes[j]) if shapes else [])
                       for j, opts in enumerate(data.options)]
        self.ones = np.array([len(opts) for opts in data.options], dtype=np.int64)
        counts = [len(sh) for sh in self.shapes]
        self.offset = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        flat = [o for sh in self.shapes for o in sh]
        self.cluster = np.array([o.cluster for o in flat], dtype=np.int64)
        sizes = [len(o.pieces) for o in flat]
        self.poff = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.prel = np.array([r for o in flat for r, _, _ in o.pieces], dtype=np.int64)
        self.pamt = np.array([[c, g, o.memory if (c > 0 or g > 0) else 0] for o in flat for _, c, g in o.pieces],
                             dtype=np.int64).reshape(len(self.prel), 3)
        # no later piece holds more than the one before it (then a start moves past a misfit)
        down = np.ones(len(self.prel), dtype=np.bool_)
        down[1:] = (self.pamt[1:] <= self.pamt[:-1]).all(axis=1)
        down[self.poff[:-1]] = True
        self.mono = np.logical_and.reduceat(down, self.poff[:-1])
        self.steps = np.array([o.steps for o in flat], dtype=np.int64)
        # per shape, the first and last flat index of its run of two-piece shapes that differ only
        # in the step of the change (shapes.two_piece lists them consecutively); itself otherwise
        self.block = np.repeat(np.arange(len(flat), dtype=np.int64)[:, None], 2, axis=1)
        key = [(o.cluster, o.pieces[0][1:], o.pieces[1][1:]) if len(o.pieces) == 2 else None for o in flat]
        lo, firsts = 0, set(self.offset.tolist())
        for i in range(1, len(flat) + 1):
            if i == len(flat) or key[i] is None or key[i] != key[lo] or i in firsts:
                self.block[lo:i, 0], self.block[lo:i, 1] = lo, i - 1
                lo = i

        self.cap = np.array([[c, g, m if m is not None else NO_LIMIT] for c, g, m in data.capacity], dtype=np.int64)
        self.arrivals = np.array(data.arrivals, dtype=np.int64)
        longest = max(int(self.steps[self.offset[j]:self.offset[j + 1]].max()) for j in range(data.num_tasks))
        horizon = int(self.arrivals.max()) + longest * data.num_tasks + 2
        self.used = np.zeros((data.num_clusters, 3, horizon), dtype=np.int64)
        self.starts = np.zeros((data.num_clusters, horizon), dtype=np.int64)
        self.start = np.zeros(data.num_tasks, dtype=np.int64)
        self.single = bool(data.single)

    def decode(self, order: np.ndarray, choice: np.ndarray) -> int:
        """The value of the schedule ``order`` and ``choice`` decode to (``choice[j]``: the index
        of task j's shape in ``self.shapes[j]``); its starts are left in ``self.start``."""
        return int(decode(order, choice, self.offset, self.cluster, self.poff, self.prel, self.pamt, self.mono,
                          self.steps, self.cap, self.arrivals, self.single, self.used, self.starts, self.start))

    def schedule(self, order: np.ndarray, choice: np.ndarray) -> Schedule:
        """The decoded fixed-allocation schedule: per task (option, start). Every choice must be a
        fixed option (``choice < ones``)."""
        if (choice >= self.ones).any():
            raise ValueError("a shape of several pieces is not a fixed-allocation schedule: use decisions()")
        self.decode(order, choice)
        return [(self.data.options[j][int(choice[j])], int(self.start[j])) for j in range(self.data.num_tasks)]

    def decisions(self, order: np.ndarray, choice: np.ndarray) -> PlacementDecisions:
        """The decoded schedule as referee decisions (a history where a shape changes)."""
        self.decode(order, choice)
        return PlacementDecisions(tasks=tuple(self.shapes[j][int(choice[j])].decision(int(self.start[j]))
                                              for j in range(self.data.num_tasks)))

    def encode(self, schedule: Schedule) -> tuple[np.ndarray, np.ndarray]:
        """(order, choice) of a fixed-allocation schedule: its tasks in start order (ties: index),
        each with the index of its option."""
        order = np.array(sorted(range(len(schedule)), key=lambda j: (schedule[j][1], j)), dtype=np.int64)
        choice = np.array([self.data.options[j].index(o) for j, (o, _) in enumerate(schedule)], dtype=np.int64)
        return order, choice


@njit(cache=True)
def decode(order, choice, offset, cluster, poff, prel, pamt, mono, steps, cap, arrivals, single, used, starts, start):
    """Serial schedule generation (module docstring); returns the total completion time. The
    workspace ``used`` / ``starts`` is all zeros on entry and on return.

    Shape o holds ``pamt[q]`` from offset ``prel[q]`` of its start, for its pieces q in
    ``poff[o] .. poff[o + 1] - 1`` (a fixed option: one piece). Where the last step that does not
    fit is t, no start up to t fits when t is in the first piece (every start in (s, t] keeps t in
    it), nor when no piece holds more than the one before it (an earlier piece then covers t);
    otherwise the next start is tried."""
    total = 0
    for i in range(order.shape[0]):
        j = order[i]
        o = offset[j] + choice[j]
        n = cluster[o]
        d = steps[o]
        first, last = poff[o], poff[o + 1] - 1
        s = arrivals[j]
        while True:
            if single and starts[n, s] > 0:
                s += 1
                continue
            bad = -1
            q = last
            if q == first:  # one piece (a fixed option): no piece to look up
                c0, c1, c2 = cap[n, 0] - pamt[q, 0], cap[n, 1] - pamt[q, 1], cap[n, 2] - pamt[q, 2]
                for t in range(s + d - 1, s - 1, -1):  # the last step it does not fit
                    if used[n, 0, t] > c0 or used[n, 1, t] > c1 or used[n, 2, t] > c2:
                        bad = t
                        break
            else:
                for t in range(s + d - 1, s - 1, -1):
                    while t - s < prel[q]:
                        q -= 1
                    if (used[n, 0, t] + pamt[q, 0] > cap[n, 0] or used[n, 1, t] + pamt[q, 1] > cap[n, 1]
                            or used[n, 2, t] + pamt[q, 2] > cap[n, 2]):
                        bad = t
                        break
            if bad < 0:
                break
            s = bad + 1 if (q == first or mono[o]) else s + 1
        q = first
        for t in range(s, s + d):
            if q < last and t - s >= prel[q + 1]:  # pieces last one step or more
                q += 1
            used[n, 0, t] += pamt[q, 0]
            used[n, 1, t] += pamt[q, 1]
            used[n, 2, t] += pamt[q, 2]
        starts[n, s] += 1
        start[j] = s
        total += s + d - arrivals[j]
    for j in range(order.shape[0]):  # leave the workspace empty for the next decode
        o = offset[j] + choice[j]
        n = cluster[o]
        for t in range(start[j], start[j] + steps[o]):
            used[n, 0, t] = 0
            used[n, 1, t] = 0
            used[n, 2, t] = 0
        starts[n, start[j]] = 0
    return total


__all__ = ["Tables", "decode", "NO_LIMIT"]
