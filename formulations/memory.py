"""A memory budget for the anytime bound searches (issue 46: ``placement-bnp`` passed the
runner's 4 GiB limit and lost its proven bound with ``MemoryError: std::bad_alloc``).

A search that can stop at any time with a valid result (a branch-and-bound's bound: the least
value of its open nodes) asks :meth:`MemoryBudget.exceeded` between units of work (a node) and
stops, as at its time limit, once the process passes :data:`FRACTION` of a memory limit in
force, keeping the rest as headroom for the unit under way and for the caller (the referee, the
result).  The limits, each compared with what it limits:

* ``memory_mb`` (a solver parameter), compared with the address space (``VmSize``): the
  runner's ``--memory-limit`` is an address-space limit, so the same number means the same;
* the address-space limit in force (``RLIMIT_AS``, soft; what the runner sets per run),
  compared with the address space;
* the memory cgroup's limit (v2 ``memory.max``, v1 ``memory.limit_in_bytes``; a batch
  scheduler's), compared with the resident set (``VmRSS``), which is what it counts.

Where ``/proc`` is missing nothing is measured and no limit trips: the caller's own
``MemoryError`` handling is then the only guard.
"""

from __future__ import annotations

import resource
from pathlib import Path
from typing import Callable

#: a search stops once its measure passes this share of a limit (the rest: the unit of work
#: under way, which may allocate before the next check, and the caller's result and referee)
FRACTION = 0.8
#: a cgroup v1 limit at or above this is "none" (the kernel writes about 2**63 for unlimited)
_NO_CGROUP_LIMIT = 1 << 60


def _status_mb(key: str) -> float | None:
    """A ``/proc/self/status`` size (``VmSize``, ``VmRSS``) in MiB, None where unreadable."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return None


def address_space_mb() -> float | None:
    """The process's address space (``VmSize``, what ``RLIMIT_AS`` limits), MiB."""
    return _status_mb("VmSize")


def resident_mb() -> float | None:
    """The process's resident set (``VmRSS``, what a memory cgroup counts), MiB."""
    return _status_mb("VmRSS")


def address_space_limit_mb() -> float | None:
    """The soft ``RLIMIT_AS`` in force, MiB (None: unlimited)."""
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    return None if soft == resource.RLIM_INFINITY else soft / 2**20


def cgroup_limit_mb() -> float | None:
    """The memory limit of this process's cgroup (v2 or v1), MiB; None where there is none or
    it cannot be read."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    files = []
    for line in lines:
        _, ctrl, path = line.split(":", 2)
        if ctrl == "":  # v2
            files += [f"/sys/fs/cgroup{path.rstrip('/')}/memory.max", "/sys/fs/cgroup/memory.max"]
        elif "memory" in ctrl.split(","):  # v1
            files += [f"/sys/fs/cgroup/memory{path.rstrip('/')}/memory.limit_in_bytes",
                      "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
    for f in files:
        try:
            text = Path(f).read_text().strip()
        except OSError:
            continue
        if text == "max":
            return None
        try:
            value = int(text)
        except ValueError:
            continue
        return None if value >= _NO_CGROUP_LIMIT else value / 2**20
    return None


class MemoryBudget:
    """The limits in force: ``limits`` [(limit MiB, its name, the measure it is compared with,
    the measure's name)]."""

    __slots__ = ("limits", "fraction")

    def __init__(self, limits: list[tuple[float, str, Callable[[], float | None], str]] | None = None,
                 fraction: float = FRACTION):
        self.limits = list(limits or [])
        self.fraction = float(fraction)

    @classmethod
    def in_force(cls, memory_mb: float | None = None, fraction: float = FRACTION) -> "MemoryBudget":
        """``memory_mb`` (None: none) with the process's address-space and cgroup limits."""
        limits = []
        if memory_mb is not None:
            limits.append((float(memory_mb), "memory_mb", address_space_mb, "address space"))
        rl = address_space_limit_mb()
        if rl is not None:
            limits.append((rl, "RLIMIT_AS", address_space_mb, "address space"))
        cg = cgroup_limit_mb()
        if cg is not None:
            limits.append((cg, "cgroup memory limit", resident_mb, "resident memory"))
        return cls(limits, fraction)

    def exceeded(self) -> str | None:
        """Why the process is over budget (one line), or None."""
        for limit, name, measure, what in self.limits:
            used = measure()
            if used is not None and used >= self.fraction * limit:
                return (f"stopped on memory: {what} {used:,.0f} MiB reached {self.fraction:.0%} of the "
                        f"{limit:,.0f} MiB limit ({name})")
        return None


__all__ = ["MemoryBudget", "FRACTION", "address_space_mb", "resident_mb", "address_space_limit_mb",
           "cgroup_limit_mb"]
