"""Referee of the placement family (TapFinger): time in integer steps.

Every task's run is re-simulated from its start with the one progress model of
:mod:`edgebench.instances.semantics` (increment, noisy_gain, PROGRESS_EPS, MAX_RUN_STEPS);
the checks and objectives are defined in ``docs/referee.md``.
"""

from __future__ import annotations

import numpy as np

from edgebench.instances import semantics
from edgebench.instances.model import Instance
from edgebench.referee.common import Collector, Evaluation, finish
from edgebench.solution import PlacementDecisions

FAMILY = "placement"
#: longest makespan for which ``details["in_system"]`` (one entry per step) is given
MAX_DETAIL_STEPS = 10_000_000


def _levels(pieces, col: int):
    """(cluster, from, to, level) runs of the summed amount in column ``col`` of the
    (cluster, from, to, ...) ``pieces``, in cluster then step order, zero levels left out."""
    events: dict[int, dict[int, int]] = {}
    for piece in pieces:
        amount = piece[col]
        if amount:
            ev = events.setdefault(piece[0], {})
            ev[piece[1]] = ev.get(piece[1], 0) + amount
            ev[piece[2]] = ev.get(piece[2], 0) - amount
    for n in sorted(events):
        ev = events[n]
        times = sorted(ev)
        level = 0
        for t, nxt in zip(times, times[1:]):
            level += ev[t]
            if level:
                yield n, t, nxt, level


def _timeline(start: int, changes: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """The allocation in force from ``start`` on, as (from_step, cpu, gpu) with increasing
    steps; the first entry is at ``start`` ((0, 0) when no change is in force yet)."""
    cur = (0, 0)
    later: list[tuple[int, int, int]] = []
    for step, c, g in changes:
        if step <= start:
            cur = (c, g)
        else:
            later.append((step, c, g))
    return [(start, cur[0], cur[1])] + later


def _simulate(p, j: int, start: int, segs: list[tuple[int, int, int]]) -> tuple[int | None, int, float]:
    """Run task j from ``start`` on the timeline ``segs``.

    Returns (finish, end, progress): ``finish`` is the step after the one in which progress
    reached 1 - PROGRESS_EPS (None if it never does); ``end`` is the end of the steps the
    task was simulated for (== finish when it finishes)."""
    mn = p.tasks[j].minimum
    overhead = 1.0 - p.switching_overhead
    eps_done = 1.0 - semantics.PROGRESS_EPS
    limit = start + semantics.MAX_RUN_STEPS
    last = len(segs) - 1
    progress = 0.0
    k = 0
    i = 0
    t = start
    prev: tuple[int, int] | None = None
    while t < limit:
        while i < last and segs[i + 1][0] <= t:
            i += 1
        c, g = segs[i][1], segs[i][2]
        runnable = c >= mn.cpu and g >= mn.gpu and (c > 0 or g > 0)
        if not runnable:
            if i == last:  # paused (or below the minimum) for good
                return None, t + 1, progress
            prev = (c, g)
            t = segs[i + 1][0]  # nothing happens until the next change
            continue
        inc = semantics.increment(p, j, c, g, progress)
        if inc <= 0 and i == last:  # no progress possible at this state, ever
            return None, t + 1, progress
        gain = semantics.noisy_gain(p, j, k, inc)
        if t > start and prev != (c, g):
            gain *= overhead
        progress += gain
        k += 1
        if progress >= eps_done:
            return t + 1, t + 1, progress
        prev = (c, g)
        t += 1
    return None, limit, progress


def task_finish(p, j: int, start: int, changes: list[tuple[int, int, int]]) -> int | None:
    """The step after the one in which task j finishes when it starts at ``start`` with the
    allocation ``changes`` [(step, cpu, gpu), ...] (the referee's own simulation of one task,
    switching loss and noise included; capacities are not checked here); None if it never
    finishes."""
    return _simulate(p, j, start, _timeline(start, changes))[0]


def evaluate(instance: Instance, decisions: PlacementDecisions) -> Evaluation:
    p = instance.placement
    assert p is not None
    col = Collector()
    tasks = p.tasks
    clusters = p.clusters
    J, N = len(tasks), len(clusters)
    if len(decisions.tasks) != J:
        col.add("decision_count", "solution", abs(len(decisions.tasks) - J),
                f"{len(decisions.tasks)} task decisions for {J} tasks")
        return finish(FAMILY, col, {}, {})

    finishes: list[int | None] = [None] * J
    complete = True
    # occupancy pieces: (cluster, from, to, cpu, gpu, mem) with each amount capped at the
    # cluster's capacity (an allocation above it is reported once, as above_capacity_alloc)
    occ: list[tuple[int, int, int, int, int, int]] = []
    raw: list[tuple[int, int, int, int, int]] = []  # uncapped (cluster, from, to, cpu, gpu)
    first_start: list[tuple[int, int, int]] = []  # (cluster, step, task)

    for j, (task, d) in enumerate(zip(tasks, decisions.tasks)):
        el = f"task {j}"
        if d.cluster is None:
            col.add("unplaced", el, 1.0, f"task {j} is not placed on any cluster")
            complete = False
            continue
        n = d.cluster
        if n >= N:
            col.add("cluster_index", el, n - (N - 1), f"task {j} is placed on cluster {n}, which does not exist "
                    f"({N} clusters)")
            complete = False
            continue
        if n not in task.eligible:
            col.add("eligibility", el, 1.0, f"task {j} is placed on cluster {n}, not one of its eligible clusters "
                    f"{list(task.eligible)}")
        if d.history:
            changes = [(h.step, h.cpu, h.gpu) for h in d.history]
            start = d.start if d.start is not None else changes[0][0]
            if changes[0][0] != start:
                col.add("history_start", el, abs(changes[0][0] - start),
                        f"task {j}'s allocation history begins at step {changes[0][0]}, its start is {start}")
        else:
            if d.start is None:
                col.add("unplaced", el, 1.0, f"task {j} has a cluster but no start step")
                complete = False
                continue
            start = d.start
            changes = [(start, d.cpu, d.gpu)]
        if start < task.arrival:
            col.add("start_before_arrival", el, task.arrival - start,
                    f"task {j} starts at step {start}, before its arrival at step {task.arrival}")

        segs = _timeline(start, changes)
        fin, end, progress = _simulate(p, j, start, segs)
        if fin is None:
            complete = False
            col.add("unfinished", el, 1.0 - progress,
                    f"task {j} never finishes (progress {progress:.6g} when the referee stopped at step {end - 1})")
        finishes[j] = fin

        cap = clusters[n].capacity
        mn = task.minimum
        mem = mn.memory if (mn.memory is not None and cap.memory is not None) else 0
        cap_mem = cap.memory if cap.memory is not None else 0
        first = None
        for i, (a, c, g) in enumerate(segs):
            b = segs[i + 1][0] if i + 1 < len(segs) else end
            b = min(b, end)
            if b <= a:
                continue
            if c <= 0 and g <= 0:
                continue
            if first is None:
                first = a
            span = f"task {j} steps [{a}, {b})"
            if c < mn.cpu or g < mn.gpu:
                col.add("below_minimum", span, max(mn.cpu - c, mn.gpu - g),
                        f"task {j} holds ({c} cpu, {g} gpu) in steps [{a}, {b}), below its minimum "
                        f"({mn.cpu} cpu, {mn.gpu} gpu)")
            over = max(c - cap.cpu, g - cap.gpu, (mem - cap_mem) if mem else 0)
            if over > 0:
                col.add("above_capacity_alloc", span, over,
                        f"task {j} holds ({c} cpu, {g} gpu{f', {mem} memory' if mem else ''}) in steps [{a}, {b}), "
                        f"above the capacity of cluster {n} ({cap.cpu} cpu, {cap.gpu} gpu"
                        f"{f', {cap_mem} memory' if mem else ''})")
            occ.append((n, a, b, min(c, cap.cpu), min(g, cap.gpu), min(mem, cap_mem) if mem else 0))
            raw.append((n, a, b, c, g))
        if first is not None:
            first_start.append((n, first, j))

    # ---- per-cluster capacity in every step --------------------------------------------
    # Sparse sweeps over each cluster's allocation changes: memory and time grow with the
    # number of allocation pieces, never with the step numbers (a start of 10**9 is cheap).
    caps = [
        ("capacity_cpu", "cpu", [c.capacity.cpu for c in clusters]),
        ("capacity_gpu", "gpu", [c.capacity.gpu for c in clusters]),
        ("capacity_memory", "memory", [c.capacity.memory for c in clusters]),
    ]
    for r, (cid, what, cap_list) in enumerate(caps):
        over_runs = [(n, a, b, level - cap_list[n]) for n, a, b, level in _levels(occ, 3 + r)
                     if cap_list[n] is not None and level > cap_list[n]]
        total = sum(b - a for _, a, b, _ in over_runs)
        room = col.room()
        taken = 0
        for n, a, b, over in over_runs:
            for t in range(a, min(b, a + room - taken)):
                col.add(cid, f"cluster {n} step {t}", float(over),
                        f"tasks on cluster {n} use {over + cap_list[n]} {what} in step {t}, capacity {cap_list[n]}")
            taken += min(b - a, room - taken)
            if taken >= room:
                break
        col.skip(total - taken)
    # ---- one start per cluster and step (single-task variant) --------------------------
    if p.variant == "single" and first_start:
        counts: dict[tuple[int, int], list[int]] = {}
        for n, t, j in first_start:
            counts.setdefault((n, t), []).append(j)
        for (n, t), js in sorted(counts.items()):
            if len(js) > 1:
                col.add("single_task_start", f"cluster {n} step {t}", len(js) - 1,
                        f"tasks {js} all start on cluster {n} in step {t} (variant 'single' allows one)")

    # ---- objectives --------------------------------------------------------------------
    arrivals = np.array([t.arrival for t in tasks], dtype=np.int64)
    details: dict = {
        "finish": list(finishes),
        "completion": [None if f is None else int(f - a) for f, a in zip(finishes, arrivals.tolist())],
    }
    objectives: dict[str, float] = {}
    if complete and all(f is not None for f in finishes):
        fin = np.array(finishes, dtype=np.int64)
        comp = fin - arrivals
        makespan = int(fin.max())
        objectives["total_completion_time"] = float(comp.sum())
        objectives["mean_completion_time"] = float(comp.mean())
        objectives["median_completion_time"] = float(np.median(comp))
        objectives["makespan"] = float(makespan)
        objectives["total_completion_seconds"] = float(comp.sum()) * p.step_seconds
        if raw and makespan > 0:
            for r, key in ((3, "cpu_utilisation"), (4, "gpu_utilisation")):
                cap_of = [float(getattr(c.capacity, key[:3])) for c in clusters]
                total = sum(level * (min(b, makespan) - a) / cap_of[n]
                            for n, a, b, level in _levels(raw, r) if a < makespan)
                objectives[key] = total / (N * makespan)
        # tasks in the system (arrived, not finished) per step [0, makespan): a list as long
        # as the makespan, given up to MAX_DETAIL_STEPS steps
        if makespan <= MAX_DETAIL_STEPS:
            ins = np.zeros(makespan + 1, dtype=np.int64)
            np.add.at(ins, np.clip(arrivals, 0, makespan), 1)
            np.add.at(ins, np.clip(fin, 0, makespan), -1)
            details["in_system"] = np.cumsum(ins)[:makespan].tolist()
    return finish(FAMILY, col, objectives, details)


__all__ = ["evaluate"]
