"""The time estimate ``edgebench run --dry-run`` prints before a sweep starts.

Runs stop at their time limit at the latest (the hard kill comes at ``kill_after`` =
1.2 x limit + grace), so the planned time limits give a **bound**, not a forecast:

* CPU time: the sum of the time limits of the runs still to do (each run uses one core, or
  ``threads`` cores for a suite that gives solvers several threads);
* wall time on N workers: the makespan of the longest-first greedy schedule of those limits on
  N workers (what a work queue achieves within 4/3 of the optimum), never less than the
  longest single run; with the kill margin, the same with ``kill_after``.

Most runs stop far sooner (heuristics in milliseconds, exact models when they close), so the
real wall time is usually a fraction of this; docs/cluster.md gives measured figures.
"""

from __future__ import annotations

import heapq
from typing import Iterable, Sequence

#: worker counts printed by default besides the run's own
DEFAULT_WORKER_COUNTS = (1, 16, 64, 256)


def makespan(durations: Iterable[float], workers: int) -> float:
    """Longest-processing-time-first greedy makespan of ``durations`` on ``workers`` machines."""
    if workers < 1:
        raise ValueError("workers must be >= 1")
    todo = sorted(durations, reverse=True)
    # workers beyond the number of runs stay idle: one load per run at most (issue 44 case 14:
    # --estimate-workers 100000000 allocated 0.8 GB of idle loads for 3 runs)
    loads = [0.0] * max(1, min(workers, len(todo)))
    for d in todo:
        heapq.heapreplace(loads, loads[0] + d)
    return max(loads)


def estimate(specs: Sequence, workers: Iterable[int], threads: int = 1) -> dict:
    """CPU seconds and wall seconds per worker count (time limits, and with the kill margin)."""
    limits = [s.time_limit for s in specs]
    kills = [s.kill_after for s in specs]
    return {"runs": len(limits), "cpu_s": sum(limits) * threads, "cpu_kill_s": sum(kills) * threads,
            "wall_s": {w: makespan(limits, w) for w in sorted(set(workers))},
            "wall_kill_s": {w: makespan(kills, w) for w in sorted(set(workers))}}


def human(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def lines(specs: Sequence, workers: Iterable[int], threads: int = 1) -> list[str]:
    """The estimate as printed by ``edgebench run --dry-run``."""
    e = estimate(specs, workers, threads)
    out = [f"estimate for {e['runs']} runs (upper bound: every run to its time limit; with the hard-kill margin "
           f"in brackets): CPU time {human(e['cpu_s'])} [{human(e['cpu_kill_s'])}]"]
    for w, s in e["wall_s"].items():
        out.append(f"  wall time on {w:>4} worker{'s' if w > 1 else ' '}: {human(s)} [{human(e['wall_kill_s'][w])}]")
    return out
