"""Referee of the placement family (TapFinger): time in integer steps.

Every task's run is re-simulated from its start with the one progress model of
:mod:`edgebench.instances.semantics` (increment, noise_factor, PROGRESS_EPS, MAX_RUN_STEPS);
the checks and objectives are defined in ``docs/referee.md``.
"""

from __future__ import annotations

import numpy as np

from edgebench.instances import semantics
from edgebench.instances.model import Instance
from edgebench.referee.common import Collector, Evaluation, finish
from edgebench.solution import PlacementDecisions

FAMILY = "placement"


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
        gain = inc * semantics.noise_factor(p, j, k)
        if t > start and prev != (c, g):
            gain *= overhead
        progress += gain
        k += 1
        if progress >= eps_done:
            return t + 1, t + 1, progress
        prev = (c, g)
        t += 1
    return None, limit, progress


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
    horizon = max((b for _, _, b, *_ in occ), default=0)
    used_raw = None
    if occ:
        arr = np.asarray(occ, dtype=np.int64)
        diff = np.zeros((3, N, horizon + 1), dtype=np.int64)
        for r in range(3):
            np.add.at(diff[r], (arr[:, 0], arr[:, 1]), arr[:, 3 + r])
            np.add.at(diff[r], (arr[:, 0], arr[:, 2]), -arr[:, 3 + r])
        used = np.cumsum(diff, axis=2)[:, :, :horizon]
        caps = [
            ("capacity_cpu", "cpu", np.array([c.capacity.cpu for c in clusters])),
            ("capacity_gpu", "gpu", np.array([c.capacity.gpu for c in clusters])),
            ("capacity_memory", "memory", np.array([c.capacity.memory or 0 for c in clusters])),
        ]
        for r, (cid, what, cap_arr) in enumerate(caps):
            over = used[r] - cap_arr[:, None]
            if r == 2:
                over[np.array([c.capacity.memory is None for c in clusters])] = 0
            nn, tt = np.nonzero(over > 0)
            take = min(len(nn), col.room())
            for n, t in zip(nn[:take].tolist(), tt[:take].tolist()):
                col.add(cid, f"cluster {n} step {t}", float(over[n, t]),
                        f"tasks on cluster {n} use {int(used[r, n, t])} {what} in step {t}, capacity "
                        f"{int(cap_arr[n])}")
            col.skip(len(nn) - take)
        ra = np.asarray(raw, dtype=np.int64)
        rdiff = np.zeros((2, N, horizon + 1), dtype=np.int64)
        for r in range(2):
            np.add.at(rdiff[r], (ra[:, 0], ra[:, 1]), ra[:, 3 + r])
            np.add.at(rdiff[r], (ra[:, 0], ra[:, 2]), -ra[:, 3 + r])
        used_raw = np.cumsum(rdiff, axis=2)[:, :, :horizon]

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
        if used_raw is not None and makespan > 0:
            caps_cpu = np.array([c.capacity.cpu for c in clusters], dtype=float)
            caps_gpu = np.array([c.capacity.gpu for c in clusters], dtype=float)
            window = np.zeros((2, N, makespan))
            m = min(makespan, used_raw.shape[2])
            window[:, :, :m] = used_raw[:, :, :m]
            objectives["cpu_utilisation"] = float((window[0] / caps_cpu[:, None]).mean())
            objectives["gpu_utilisation"] = float((window[1] / caps_gpu[:, None]).mean())
        # tasks in the system (arrived, not finished) per step [0, makespan)
        ins = np.zeros(makespan + 1, dtype=np.int64)
        np.add.at(ins, np.clip(arrivals, 0, makespan), 1)
        np.add.at(ins, np.clip(fin, 0, makespan), -1)
        details["in_system"] = np.cumsum(ins)[:makespan].tolist()
    return finish(FAMILY, col, objectives, details)


__all__ = ["evaluate"]
