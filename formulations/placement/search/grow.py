"""Re-allocating moves after the fixed-allocation search (``placement-lns``, issue 23).

The large-neighbourhood search works on fixed-allocation schedules. The referee's problem
also lets a running task change its allocation in any step (that step's progress is scaled by
``1 - switching_overhead``). :func:`grow` takes a fixed-allocation schedule and, task by task
in order of start, looks for the move that finishes the task earliest:

* *grow*: from a step ``t`` of its run (``t`` = its start: a different constant allocation)
  the task holds another dominant allocation of its cluster
  (:attr:`.placement.PlacementData.options`) until it finishes;
* *early* (a task that waits): it starts earlier, on any cluster of its options (in the
  single variant only at a step where no other task starts there), at one dominant
  allocation and, from a later step ``t``, optionally another.

Every other task keeps its timeline, so a move is feasible when the task's allocations fit,
in every step of its new run, in the capacity the other tasks leave; it is kept when the
referee's simulation of the task (:func:`.referee.placement.task_finish`: progress model,
noise, switching loss) finishes it strictly earlier. Passes repeat while one improves (a task
that finishes earlier frees room for the others) up to ``passes``. The caller scores the
result with the referee (:func:`.referee.placement.evaluate`).

Deterministic: no random choice; ties go to the smaller area (cpu / capacity + gpu / capacity
times the steps held), then the later change step, then the option order.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from edgebench.formulations.placement.problem import PlacementData, Schedule
from edgebench.formulations.placement.problem import to_decisions as fixed_decisions
from edgebench.referee.placement import evaluate, task_finish
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
    firsts: dict[tuple[int, int], int] = {}  # (cluster, step) -> first starts there
    for n, s, _, _ in lines:
        firsts[(n, s)] = firsts.get((n, s), 0) + 1
    for _ in range(passes):
        gained = 0
        for j in order:
            if deadline is not None and time.perf_counter() > deadline:
                info["grow_stopped"] = "time"
                return lines, info
            n, s, changes, fin = lines[j]
            _add(used, lines[j], -1)
            firsts[(n, s)] -= 1
            best = _grow_move(payload, data, j, lines[j], cap, used, None)
            if s > data.arrivals[j]:
                best = _early_move(payload, data, j, lines[j], cap, used, firsts, best)
            if best is not None:
                gained += fin - best[1][3]
                info["grown"] += 1
                lines[j] = best[1]
            _add(used, lines[j], 1)
            firsts[lines[j][:2]] = firsts.get(lines[j][:2], 0) + 1
        info["grow_passes"] += 1
        info["grow_saved"] += gained
        if not gained:
            break
    return lines, info


def _better(best, key) -> bool:
    return best is None or key < best[0]


def _grow_move(payload, data: PlacementData, j: int, line: Timeline, cap: np.ndarray, used: np.ndarray, best):
    """The best (key, timeline) of task j keeping its cluster and start: its allocations before
    a step t kept, another dominant allocation from t (t = start: a constant one); ``best``
    when none finishes earlier."""
    n, s, changes, fin = line
    room = cap[n][:, None] - used[n, :, :fin]  # what the other tasks leave, per step
    allocs = [(o.cpu, o.gpu) for o in data.options[j] if o.cluster == n]
    for t in range(s, fin):
        keep = [ch for ch in changes if ch[0] < t]
        for k, (c, g) in enumerate(allocs):
            if (keep and keep[-1][1:] == (c, g)) or c > room[0, t] or g > room[1, t]:
                continue  # no change at t, or no room at t
            new = keep + [(t, c, g)]
            f = task_finish(payload, j, s, new)
            if f is None or f >= fin or (best is not None and f > best[0][0]):
                continue
            if (room[0, t:f] < c).any() or (room[1, t:f] < g).any():
                continue
            key = (f, (f - t) * (c / cap[n, 0] + g / cap[n, 1]), -t, k)
            if _better(best, key):
                best = (key, (n, s, new, f))
    return best


def _early_move(payload, data: PlacementData, j: int, line: Timeline, cap: np.ndarray, used: np.ndarray,
                firsts: dict[tuple[int, int], int], best):
    """The best (key, timeline) of a waiting task j started earlier, on any cluster of its
    options (in the single variant only where no other task starts then): a first dominant
    allocation from the new start, optionally another from a later step t, finishing before
    its current finish; ``best`` when none does."""
    _, s, _, fin = line
    single = data.single
    for n2 in sorted({o.cluster for o in data.options[j]}):
        room = cap[n2][:, None] - used[n2, :, :fin]
        allocs = [(o.cpu, o.gpu) for o in data.options[j] if o.cluster == n2]
        for s2 in range(data.arrivals[j], s):
            if single and firsts.get((n2, s2), 0):
                continue
            for k1, (c1, g1) in enumerate(allocs):
                for t in range(s2, fin):
                    if t > s2 and (room[0, t - 1] < c1 or room[1, t - 1] < g1):
                        break  # the first allocation no longer fits before t
                    for k2, (c2, g2) in enumerate(allocs if t > s2 else [(c1, g1)]):
                        if room[0, t] < c2 or room[1, t] < g2 or (t > s2 and (c2, g2) == (c1, g1)):
                            continue
                        new = [(s2, c1, g1)] + ([(t, c2, g2)] if t > s2 else [])
                        f = task_finish(payload, j, s2, new)
                        if f is None or f >= fin or (best is not None and f > best[0][0]):
                            continue
                        if (room[0, t:f] < c2).any() or (room[1, t:f] < g2).any():
                            continue
                        key = (f, (f - s2) * (max(c1, c2) / cap[n2, 0] + max(g1, g2) / cap[n2, 1]), -t, k1 * 1000 + k2)
                        if _better(best, key):
                            best = (key, (n2, s2, new, f))
    return best


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


def better_of_grown(instance, data: PlacementData, schedule: Schedule, value: float, *,
                    deadline: float | None, info: dict[str, Any]) -> PlacementDecisions:
    """The decisions the fixed-allocation searches return: the re-allocating moves on
    ``schedule`` (:func:`grow`), kept when the referee finishes them below ``value`` (the
    schedule's own total), else the schedule as it is. Counters and ``grown_value`` (the
    referee's value of the grown schedule, None if infeasible) go into ``info``."""
    lines, ginfo = grow(instance.placement, data, schedule, deadline=deadline)
    grown = to_decisions(lines)
    ev = evaluate(instance, grown)
    info.update(ginfo, grown_value=float(ev.primary_value) if ev.feasible else None)
    if ev.feasible and float(ev.primary_value) < value:
        return grown
    return fixed_decisions(schedule)
