"""Serial schedule generation, compiled (numba): a fixed-allocation schedule from a task order and one
option per task (``placement-lahc``'s decoder; docs/formulations/placement.md, "Late-acceptance search").

Tasks are taken in ``order``; each holds its chosen :class:`~.problem.Option` (cluster, cpu, gpu,
memory, steps) from its start to its finish and starts at the earliest step ``>= arrival`` at which
the option fits its cluster's capacity (cpu, gpu, memory) during every step of its run next to the
tasks placed before it and, in variant single, no task placed before it starts on that cluster in
that step. The same rule as :meth:`.problem.Profile.earliest` (a test compares the two), on flat
arrays, so that one decode of a 384-task schedule costs tens of microseconds instead of
milliseconds. Every decoded schedule is feasible for the referee and its value
``sum(start + steps - arrival)`` is the referee's (fixed allocations: no switching loss).

Horizon: a task's earliest start is at most the latest finish of the tasks placed before it (or its
arrival): the cluster is empty from then on and its option fits an empty cluster. So every finish
is at most ``max(arrival) + sum over tasks of their longest option``, the workspace's length.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from edgebench.formulations.placement.problem import PlacementData, Schedule

#: memory capacity of a cluster that gives none (never binds)
NO_LIMIT = np.iinfo(np.int64).max // 4


class Tables:
    """The flat arrays of one instance's options (``data.options``, in their order), its
    capacities and arrivals, and the decoder's workspace."""

    def __init__(self, data: PlacementData):
        self.data = data
        counts = [len(opts) for opts in data.options]
        self.offset = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        flat = [o for opts in data.options for o in opts]
        self.cluster = np.array([o.cluster for o in flat], dtype=np.int64)
        self.amount = np.array([[o.cpu, o.gpu, o.memory] for o in flat], dtype=np.int64).reshape(len(flat), 3)
        self.steps = np.array([o.steps for o in flat], dtype=np.int64)
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
        of task j's option in ``data.options[j]``); its starts are left in ``self.start``."""
        return int(decode(order, choice, self.offset, self.cluster, self.amount, self.steps, self.cap, self.arrivals,
                          self.single, self.used, self.starts, self.start))

    def schedule(self, order: np.ndarray, choice: np.ndarray) -> Schedule:
        """The decoded schedule: per task (option, start)."""
        self.decode(order, choice)
        return [(self.data.options[j][int(choice[j])], int(self.start[j])) for j in range(self.data.num_tasks)]

    def encode(self, schedule: Schedule) -> tuple[np.ndarray, np.ndarray]:
        """(order, choice) of a fixed-allocation schedule: its tasks in start order (ties: index),
        each with the index of its option."""
        order = np.array(sorted(range(len(schedule)), key=lambda j: (schedule[j][1], j)), dtype=np.int64)
        choice = np.array([self.data.options[j].index(o) for j, (o, _) in enumerate(schedule)], dtype=np.int64)
        return order, choice


@njit(cache=True)
def decode(order, choice, offset, cluster, amount, steps, cap, arrivals, single, used, starts, start):
    """Serial schedule generation (module docstring); returns the total completion time. The
    workspace ``used`` / ``starts`` is all zeros on entry and on return."""
    total = 0
    for i in range(order.shape[0]):
        j = order[i]
        o = offset[j] + choice[j]
        n = cluster[o]
        d = steps[o]
        s = arrivals[j]
        while True:
            if single and starts[n, s] > 0:
                s += 1
                continue
            bad = -1
            for t in range(s + d - 1, s - 1, -1):  # the last step it does not fit: start after it
                if (used[n, 0, t] + amount[o, 0] > cap[n, 0] or used[n, 1, t] + amount[o, 1] > cap[n, 1]
                        or used[n, 2, t] + amount[o, 2] > cap[n, 2]):
                    bad = t
                    break
            if bad < 0:
                break
            s = bad + 1
        for t in range(s, s + d):
            used[n, 0, t] += amount[o, 0]
            used[n, 1, t] += amount[o, 1]
            used[n, 2, t] += amount[o, 2]
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
