"""When can a task start on a server: the one resource-over-time profile of the offloading
family, shared by every schedule constructor (the list schedulers HEFT / CPOP / PEFT, the
GA / PSO decoders, ``random``, the exact models' warm starts and the patent generator's
worked example), and HEFT's upward rank.

* **Ready time** (each caller, from ``semantics``): ``max(arrival + input_time(t, s), max
  over incoming edges of (predecessor finish + transfer_time))``; finish = start +
  ``task_duration(t, s)``, exactly as the referee computes them.
* **Capacity** (:class:`Timeline`): a task may start at ``x`` on an edge server when, during
  ``[x, x + duration)``, the summed demand of the tasks reserved there plus its own stays
  within the capacity, up to the one tolerance :data:`TOL` (relative above 1, absolute below;
  stated in docs/referee.md: strictly inside the referee's ``1e-6 + 1e-6 |x|``, so every
  constructed schedule passes it). Candidate starts are the ready time and every reservation
  end after it; the answer is the smallest candidate whose whole window fits (idle-slot
  insertion). The cloud (capacity ``None``) is unbounded, and a zero-duration task occupies
  nothing: both start when ready.

Times are compared exactly (no merging of breakpoints): the constructors' schedules are what
the referee re-computes, float for float.
"""

from __future__ import annotations

import bisect
import math
from typing import Sequence

from edgebench.instances.model import OffloadingPayload

#: capacity slack of every schedule constructor: ``used + demand <= cap + TOL * max(1, cap)``
TOL = 1e-9


def cap_limit(cap: float) -> float:
    """The largest summed demand a schedule constructor lets a server of capacity ``cap`` hold."""
    return cap + TOL * max(1.0, abs(cap))


def server_caps(payload: OffloadingPayload) -> list[tuple[float, float] | None]:
    """(cpu, mem) capacity of every server; None for the cloud (unbounded)."""
    return [None if srv.is_cloud else (float(srv.cpu), float(srv.mem)) for srv in payload.servers]


class Timeline:
    """Resource profile of every server: sorted breakpoints ``times[s]`` with the summed
    (cpu, mem) of the reservations covering ``[times[s][k], times[s][k+1])`` and how many
    reservations end at ``times[s][k]``.

    An earliest-start query finds the breakpoint at or before the ready time by bisection
    and walks forward: a window that meets an overloaded segment moves to the first
    reservation end after it (every candidate start before it meets the same segment). Each
    segment is looked at once per query: O(log k + the segments between the ready time and
    the answer)."""

    def __init__(self, caps: Sequence[tuple[float, float] | None]) -> None:
        S = len(caps)
        self.times: list[list[float]] = [[-math.inf] for _ in range(S)]
        self.cpu: list[list[float]] = [[0.0] for _ in range(S)]
        self.mem: list[list[float]] = [[0.0] for _ in range(S)]
        self.ends: list[list[int]] = [[0] for _ in range(S)]
        self.limit = [None if c is None else (cap_limit(c[0]), cap_limit(c[1])) for c in caps]

    @classmethod
    def of(cls, payload: OffloadingPayload) -> "Timeline":
        return cls(server_caps(payload))

    def _breakpoint(self, s: int, x: float) -> int:
        """Index of breakpoint x on server s (inserted, splitting its segment, if new)."""
        times = self.times[s]
        k = bisect.bisect_right(times, x) - 1
        if times[k] == x:
            return k
        times.insert(k + 1, x)
        self.cpu[s].insert(k + 1, self.cpu[s][k])
        self.mem[s].insert(k + 1, self.mem[s][k])
        self.ends[s].insert(k + 1, 0)
        return k + 1

    def earliest_start(self, s: int, ready: float, dur: float, cpu: float, mem: float) -> float:
        """The earliest x >= ready at which the task fits server s for its whole duration."""
        lim = self.limit[s]
        if lim is None or dur <= 0:
            return ready
        capc, capm = lim
        if cpu > capc or mem > capm:
            raise ValueError(f"a task needing ({cpu}, {mem}) never fits server {s}")
        times, uc, um, ends = self.times[s], self.cpu[s], self.mem[s], self.ends[s]
        n = len(times)
        x = ready
        k = bisect.bisect_right(times, x) - 1
        while True:
            end = x + dur
            while k < n and times[k] < end:
                if uc[k] + cpu > capc or um[k] + mem > capm:
                    break
                k += 1
            else:
                return x
            # segment k is overloaded: the next candidate is the first reservation end after it
            k += 1
            while ends[k] == 0:
                k += 1
            x = times[k]

    def reserve(self, s: int, start: float, dur: float, cpu: float, mem: float) -> None:
        if self.limit[s] is None or dur <= 0:
            return
        i = self._breakpoint(s, start)
        j = self._breakpoint(s, start + dur)
        uc, um = self.cpu[s], self.mem[s]
        for k in range(i, j):
            uc[k] += cpu
            um[k] += mem
        self.ends[s][j] += 1

    def place(self, s: int, ready: float, dur: float, cpu: float, mem: float) -> float:
        """Reserve the task at its earliest start on s and return that start."""
        x = self.earliest_start(s, ready, dur, cpu, mem)
        self.reserve(s, x, dur, cpu, mem)
        return x


def upward_ranks(topo: Sequence[int], wbar: Sequence[float], out: Sequence[Sequence[tuple[float, int]]]) -> list[float]:
    """HEFT's upward rank (Topcuoglu et al. 2002): ``rank_u(t) = w-bar(t) + max over
    successors c of (c-bar(t, c) + rank_u(c))``; ``out[t]`` lists ``(c-bar, c)`` per outgoing
    edge, ``topo`` is a topological order."""
    ru = [0.0] * len(wbar)
    for t in reversed(topo):
        ru[t] = wbar[t] + max((cb + ru[c] for cb, c in out[t]), default=0.0)
    return ru


__all__ = ["TOL", "cap_limit", "server_caps", "Timeline", "upward_ranks"]
