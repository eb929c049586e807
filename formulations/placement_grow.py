"""Re-allocating moves after the fixed-allocation search (``placement-lns``, issue 23).

The large-neighbourhood search works on fixed-allocation schedules. The referee's problem
also lets a running task change its allocation in any step (that step's progress is scaled by
``1 - switching_overhead``). :func:`grow` takes a fixed-allocation schedule and, task by task
in order of start, looks for the one allocation change that finishes the task earliest:
from a step ``t`` of its run (``t`` = its start: a different constant allocation) it holds
another dominant allocation of its cluster (:attr:`.placement.PlacementData.options`) until
it finishes. Every other task keeps its timeline, so a move is feasible when the new
allocation fits, in every step from ``t`` to the new finish, in the capacity the other tasks
leave; it is kept when the referee's simulation of the task (:func:`.referee.placement.
task_finish`: progress model, noise, switching loss) finishes it strictly earlier. Passes
repeat while one improves (a task that finishes earlier frees room for the others) up to
``passes``. The caller scores the result with the referee (:func:`.referee.placement.evaluate`).

Deterministic: no random choice; ties go to the smaller area (cpu / capacity + gpu / capacity
times the steps held), then the later change step, then the option order.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from edgebench.formulations.placement import PlacementData, Schedule
from edgebench.referee.placement import task_finish
from edgebench.solution import AllocationChange, PlacementDecision, PlacementDecisions

#: passes over the tasks at most
PASSES = 4

#: a task's timeline: (cluster, start, [(step, cpu, gpu), ...], finish)
Timeline = tuple[int, int, list[tuple[int, int, int]], int]


def _usage(data: PlacementData, lines: list[Timeline], horizon: int) -> np.ndarray:
    """(cluster, resource cpu/gpu, step) summed allocations."""
    used = np.zeros((data.num_clusters, 2, horizon + 1), dtype=np.int64)
    for line in lines:
        _add(used, line, 1)
    return used


def _add(used: np.ndarray, line: Timeline, sign: int) -> None:
    n, _, changes, fin = line
    for i, (a, c, g) in enumerate(changes):
        b = changes[i + 1][0] if i + 1 < len(changes) else fin
        used[n, 0, a:b] += sign * c
        used[n, 1, a:b] += sign * g


def grow(payload, data: PlacementData, schedule: Schedule, *, deadline: float | None = None,
         passes: int = PASSES) -> tuple[list[Timeline], dict[str, Any]]:
    """The timelines after the re-allocating moves (module doc) and counters."""
    lines: list[Timeline] = [(o.cluster, s, [(s, o.cpu, o.gpu)], s + o.steps) for o, s in schedule]
    # a task never finishes later than now, so the horizon of the fixed schedule suffices
    horizon = max((ln[3] for ln in lines), default=0)
    used = _usage(data, lines, horizon)
    cap = np.array([[c, g] for c, g, _ in data.capacity], dtype=np.int64)
    info: dict[str, Any] = {"grow_passes": 0, "grown": 0, "grow_saved": 0}
    order = sorted(range(data.num_tasks), key=lambda j: (schedule[j][1], j))
    for _ in range(passes):
        gained = 0
        for j in order:
            if deadline is not None and time.perf_counter() > deadline:
                info["grow_stopped"] = "time"
                return lines, info
            n, s, changes, fin = lines[j]
            _add(used, lines[j], -1)
            room = cap[n][:, None] - used[n, :, :fin]  # what the other tasks leave, per step
            best = None
            allocs = [(o.cpu, o.gpu) for o in data.options[j] if o.cluster == n]
            for t in range(s, fin):
                keep = [ch for ch in changes if ch[0] < t]
                for k, (c, g) in enumerate(allocs):
                    if keep and keep[-1][1:] == (c, g):
                        continue  # no change at t
                    if c > room[0, t] or g > room[1, t]:
                        continue
                    new = keep + [(t, c, g)]
                    f = task_finish(payload, j, s, new)
                    if f is None or f >= fin or (best is not None and f > best[0][0]):
                        continue
                    if (room[0, t:f] < c).any() or (room[1, t:f] < g).any():
                        continue
                    area = (f - t) * (c / cap[n, 0] + g / cap[n, 1])
                    key = (f, area, -t, k)
                    if best is None or key < best[0]:
                        best = (key, new, f)
            if best is not None:
                gained += fin - best[2]
                info["grown"] += 1
                lines[j] = (n, s, best[1], best[2])
            _add(used, lines[j], 1)
        info["grow_passes"] += 1
        info["grow_saved"] += gained
        if not gained:
            break
    return lines, info


def to_decisions(lines: list[Timeline]) -> PlacementDecisions:
    """Referee decisions of timelines: a constant allocation as (cpu, gpu), a changing one as
    its history."""
    out = []
    for n, s, changes, _ in lines:
        if len(changes) == 1:
            out.append(PlacementDecision(cluster=n, start=s, cpu=changes[0][1], gpu=changes[0][2]))
        else:
            out.append(PlacementDecision(cluster=n, start=s, cpu=changes[0][1], gpu=changes[0][2],
                                         history=tuple(AllocationChange(step=a, cpu=c, gpu=g) for a, c, g in changes)))
    return PlacementDecisions(tasks=tuple(out))


__all__ = ["grow", "to_decisions", "PASSES"]
