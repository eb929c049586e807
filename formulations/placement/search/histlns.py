"""Exact-history LNS for the placement problem (``placement-history-lns``, kind heuristic; issue 45).

``placement-cg-lns`` re-chooses a window's histories among a *pool*: the histories bound (6)'s
column generation priced plus, per freed task, its fastest history in the room the others leave.
On the multi-task sets its windows miss moves that need two or three tasks to take slower or
re-allocating histories together (docs/formulations/placement-history.md, "Which side holds the
multi-task gaps"). This search enumerates instead of pricing (docs, "Exact-history LNS"):

1. **Start.** As ``placement-cg-lns``: the warm start (a solution file, ``best-known`` or
   ``lagrangian``) or else the better of ``sjf`` and ``optimus`` by the referee; its decisions
   become one history per task.
2. **Window.** A window of ``block`` tasks is freed; the others are kept as they are. The
   windows (``windows``): ``arrival``, tasks consecutive in arrival order (ties by index) from
   each position; ``running``, for each task, the tasks of its cluster whose runs are nearest
   its own (those that share the cluster's capacity with it; :func:`running_windows`); ``both``,
   the two lists. One is drawn at random among the distinct windows not yet failed. A window
   that gave nothing is not drawn again until an improvement changes what it reads (a history
   it frees, or a step of its span at which a changed task ran; :func:`untouched`): else it is
   the same search (also when it is a window of a larger size: running windows that hold every
   task of a cluster are the same at every size); once every window has given nothing, windows
   grow by ``GROW`` tasks, up to ``max_block`` (default: every task), and past that the search
   stops (stats ``exhausted``): every window of the largest size was tried on the incumbent and
   gave nothing (within the caps and ``sub_limit`` of steps 3-4).
3. **Enumeration.** For each freed task j and eligible cluster n, bound (7)'s labelling
   (:func:`placement.bounds.histip.pair_histories`) with zero prices lists EVERY history —
   per step a pause or an allocation option, re-allocations included — that is not dominated
   (same first start, no earlier finish, no less usage at every step) and finishes within
   ``F_j - a_j + slack`` steps of its arrival, where ``F_j`` is its finish now. An allocation
   that does not fit beside the kept tasks at a step (cpu, gpu, memory) and, in variant
   single, a start slot a kept task holds are priced out of reach, so only histories that fit
   beside the kept tasks are listed. Each is re-simulated by the referee's
   :func:`referee.placement.task_finish` (the labelling rounds progress up); the current
   history is always among the task's choices. A task whose enumeration passes
   ``max_columns`` / ``max_labels`` keeps its current history and its fastest fitted ones.
4. **Sub-MIP.** ``placement-cg-lns``'s set-partitioning MIP (:class:`.cglns.Window`): one
   history per freed task, the capacity the kept tasks leave per cluster, resource and step,
   in variant single one first start per cluster and step; minimise the freed tasks' sum of
   ``F - a``. HiGHS (one thread, ``sub_limit`` seconds, seeded with the window's number)
   starts from the current histories, so it never returns worse; a better choice replaces
   them.
5. **Result.** The incumbent, scored by the referee.

Within a window the enumeration is complete for the stated slack, so a window that gives
nothing has no better re-choice among histories finishing that early; the search is still a
heuristic (windows are sampled; the slack caps each task's loss). Seeded: windows come from
``numpy.random.default_rng(seed)``; with ``iterations`` and sub-MIPs that finish within
``sub_limit`` the same seed gives the same schedule.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from edgebench.formulations.placement.bounds.histip import pair_histories
from edgebench.formulations.placement.bounds.ladder import cluster_durations
from edgebench.formulations.placement.bounds.lagrange import SCALE
from edgebench.formulations.placement.bounds.timip import TooManyColumns
from edgebench.formulations.placement.bounds.trajectory import Task, tasks_of
from edgebench.formulations.placement.deadline import Expired
from edgebench.formulations.placement.search.cglns import (ScoredHistory, fitted_columns, free_capacity, not_applicable,
                                                           rechoose, usage_column, window_search)
from edgebench.formulations.placement.search.lns import BEST_KNOWN, LAGRANGIAN, check_warm_start
from edgebench.registry import register

SOLVER_NAME = "placement-history-lns"
#: tasks freed per window
BLOCK = 12
#: steps a freed task's finish may grow (the others must gain more)
SLACK = 1
#: seconds per sub-MIP
SUB_LIMIT = 15.0
#: windows without a time limit or ``iterations``
DEFAULT_ITERATIONS = 50
#: per task and cluster: columns / live labels before the enumeration gives up on the pair (then
#: it retries with no slack; measured on hetero-6-v2 s0: at 200,000 labels one 37-step task took
#: 13 s to give up, at 20,000 a window of 12 tasks takes under 1 s)
MAX_COLUMNS = 20_000
MAX_LABELS = 20_000
#: steps past the incumbent's last finish the enumeration's horizon reaches
REACH = 20
#: tasks a window grows by once every window of its size gave nothing
GROW = 4
#: the windows drawn: consecutive in arrival order, nearest runs on one cluster, or both lists
WINDOWS = ("arrival", "running", "both")


def history_columns(payload, task: Task, current: ScoredHistory, kept: list[ScoredHistory], slack: int, H: int, *,
                    max_columns: int = MAX_COLUMNS, max_labels: int = MAX_LABELS, max_changes: int | None = None,
                    deadline=None) -> tuple[list[ScoredHistory], bool]:
    """Step 3 for one freed task: its current history and every undominated history that fits
    beside ``kept`` and finishes by ``current.F + slack`` (referee-simulated), sorted; and
    whether an enumeration was capped. A capped cluster is enumerated again with no slack
    (finishing no later than now); capped again, the task's fastest fitted histories
    (:func:`.cglns.fitted_columns`) stand in for it."""
    N = len(payload.clusters)
    limit = current.F - task.a + slack
    out = {current}
    capped = False
    zero = np.zeros((N, 2, H), dtype=np.int64)
    for n, opt in task.opts.items():
        blocked, Mu = free_capacity(payload, task, n, kept, H)
        found = None
        for room in sorted({limit, current.F - task.a}, reverse=True):  # on a cap, again without slack
            try:
                found = pair_histories(task, n, zero, Mu, H, room << SCALE, payload.variant == "single", [0],
                                       max_labels, max_columns, deadline, extra=blocked, max_changes=max_changes)
                break
            except TooManyColumns:
                capped = True
        if found is None:
            continue
        for _s, _F, hist, _cost in found:
            amounts = []
            for k, o in enumerate(hist):
                if o >= 0:
                    amounts += [(task.a + k, 0, int(opt.cpu[o])), (task.a + k, 1, int(opt.gpu[o]))]
            col = usage_column(payload, task.j, n, amounts)
            if col is not None and col.F - task.a <= limit:
                out.add(col)
    if capped:
        out.update(c for c in fitted_columns(payload, task, kept) if c.F - task.a <= limit)
    return sorted(out), capped


def window_span(window: list[int], arr: list[int], cur: list[ScoredHistory], slack: int) -> tuple[int, int]:
    """The steps a window's search reads: from its first arrival to its last finish plus the
    slack. Each freed task's listed histories start at or after its arrival and end by its
    finish plus the slack, so the enumeration, the fitted histories and the sub-MIP's rows read
    the kept tasks only at those steps."""
    return min(arr[j] for j in window), max(cur[j].F for j in window) + slack


def arrival_windows(order: list[int], size: int) -> list[tuple[int, ...]]:
    """The tasks consecutive in arrival order (``order``) from each position, ``size`` at a time."""
    return [tuple(sorted(order[q:q + size])) for q in range(max(1, len(order) - size + 1))]


def running_windows(order: list[int], size: int, cur: list[ScoredHistory]) -> list[tuple[int, ...]]:
    """For each task j0 in arrival order, the ``size`` tasks of its cluster whose runs (first
    start to finish) are nearest j0's: those overlapping it first, then by the steps between
    the two runs, the distance of the first starts and the index; the distinct windows in
    order of their first appearance. They free the tasks that share a cluster's capacity at
    the same steps, which arrival windows split where queues are long or runs are long."""
    by_cluster: dict[int, list[int]] = {}
    for j in order:
        by_cluster.setdefault(cur[j].n, []).append(j)
    out: dict[tuple[int, ...], None] = {}
    for j0 in order:
        a = cur[j0]

        def near(j, a=a):
            c = cur[j]
            return max(0, c.s - a.F + 1, a.s - c.F + 1), abs(c.s - a.s), j

        out.setdefault(tuple(sorted(sorted(by_cluster[a.n], key=near)[:size])), None)
    return list(out)


def windows_of(kind: str, order: list[int], size: int, cur: list[ScoredHistory]) -> list[tuple[int, ...]]:
    """The distinct windows of ``kind`` (one of :data:`WINDOWS`) on the incumbent ``cur``, each a
    sorted tuple of tasks; ``both``: the arrival windows, then the running ones not among them."""
    if kind not in WINDOWS:
        raise ValueError(f"windows must be one of {WINDOWS}, not {kind!r}")
    out: dict[tuple[int, ...], None] = {}
    if kind in ("arrival", "both"):
        out.update(dict.fromkeys(arrival_windows(order, size)))
    if kind in ("running", "both"):
        out.update(dict.fromkeys(running_windows(order, size, cur)))
    return list(out)


def untouched(failed: set[tuple[int, ...]], windows: list[tuple[int, ...]], arr: list[int], cur: list[ScoredHistory],
              slack: int, changed: list[int], before: dict[int, ScoredHistory]) -> set[tuple[int, ...]]:
    """After an improvement that changed the histories of ``changed`` (``before`` them, ``cur``
    now): the failed windows whose search is still the same. A window that is still one of the
    ``windows`` drawn from (those of the new incumbent), frees none of the changed tasks and
    whose :func:`window_span` misses every step at which a changed task ran, before or after
    (from its arrival to its later finish), reads the same current histories and the same kept
    usage and start slots, so it would give nothing again; every other failed window may be
    tried again (or is no longer drawn)."""
    lo = min(arr[j] for j in changed)
    hi = max(max(before[j].F, cur[j].F) for j in changed)
    hit = set(changed)
    now = set(windows)
    keep = set()
    for window in failed:
        w_lo, w_hi = window_span(list(window), arr, cur, slack)
        if window in now and not hit.intersection(window) and (w_lo > hi or w_hi < lo):
            keep.add(window)
    return keep


def improve(payload, start: list[ScoredHistory], *, seed: int = 0, block: int = BLOCK, slack: int = SLACK,
            sub_limit: float = SUB_LIMIT, iterations: int | None = None, deadline: float | None = None,
            max_columns: int = MAX_COLUMNS, max_labels: int = MAX_LABELS,
            max_changes: int | None = None, max_block: int | None = None,
            windows: str = "arrival") -> tuple[list[ScoredHistory], dict]:
    """Steps 2-4 until ``iterations`` windows, the deadline or, once every window of
    ``max_block`` tasks (default: every task) gave nothing since the last improvement, a local
    optimum (stats ``exhausted``); returns the incumbent and stats."""
    arr = [int(t.arrival) for t in payload.tasks]
    J = len(payload.tasks)
    tasks = {t.j: t for t in tasks_of(payload, cluster_durations(payload))}
    order = sorted(range(J), key=lambda j: (arr[j], j))
    cur = list(start)
    value = sum(c.F - arr[c.j] for c in cur)
    rng = np.random.default_rng(seed)
    info: dict[str, Any] = {"start_value": value, "improvements": 0, "columns": 0, "capped": 0,
                            "enumeration_s": 0.0, "mip_s": 0.0, "trace": [], "grown": [], "exhausted": False,
                            "kept_failed": 0, "windows": windows}
    t0 = time.perf_counter()
    it = 0
    size = block
    top = J if max_block is None else max(block, min(J, int(max_block)))
    failed: set[tuple[int, ...]] = set()  # windows that gave nothing since the last improvement
    drawn = windows_of(windows, order, size, cur)
    while (iterations is None or it < iterations) and (deadline is None or time.perf_counter() < deadline):
        positions = [w for w in drawn if w not in failed]
        if not positions:  # every window of this size gave nothing: a larger one, or stop
            if size >= top:
                info["exhausted"] = True
                break
            size = min(top, size + GROW)  # a failed window that is also one of the new size stays failed:
            info["grown"].append((it, size))  # the same tasks on the same incumbent are the same search
            drawn = windows_of(windows, order, size, cur)
            continue
        it += 1
        window = positions[int(rng.integers(0, len(positions)))]
        free = set(window)
        kept = [c for c in cur if c.j not in free]
        H = max(c.F for c in cur) + slack + REACH
        by_task: dict[int, list[ScoredHistory]] = {}
        c0 = time.perf_counter()
        try:
            for j in sorted(free):
                by_task[j], capped = history_columns(payload, tasks[j], cur[j], kept, int(slack), H,
                                                     max_columns=max_columns, max_labels=max_labels,
                                                     max_changes=max_changes, deadline=deadline)
                info["capped"] += int(capped)
        except Expired:
            break
        info["columns"] += sum(len(v) for v in by_task.values())
        c1 = time.perf_counter()
        info["enumeration_s"] += c1 - c0
        # no MIP presolve: on these windows it took 3 s past a 0.3 s limit where the solve alone
        # proves the optimum in 0.1 s (synthetic-3-v2 s0 from optimus, 2,996 histories)
        before = {j: cur[j] for j in free}
        gain = rechoose(payload, by_task, cur, free, deadline=deadline, sub_limit=sub_limit, seed=it, presolve=False)
        info["mip_s"] += time.perf_counter() - c1
        if gain is None:
            break
        if gain <= 0:
            failed.add(window)
        else:
            changed = [j for j in free if cur[j] != before[j]]
            drawn = windows_of(windows, order, size, cur)
            failed = untouched(failed, drawn, arr, cur, int(slack), changed, before)
            info["kept_failed"] += len(failed)
            value -= gain
            info["improvements"] += 1
            info["trace"].append((round(time.perf_counter() - t0, 2), it, value))
    info.update(iterations=it, value=value)
    return cur, info


def summary(info: dict, block: int) -> str:
    """One line for the run's store (its ``message``): how far the windows got and why they
    stopped, so a certification run says whether more time on that start can pay."""
    size = info["grown"][-1][1] if info["grown"] else block
    kind = {"arrival": "", "running": "running ", "both": "arrival and running "}[info.get("windows", "arrival")]
    limit = " (a running window holds one cluster's tasks at most)" if kind else ""
    end = (f"exhausted: every {kind}window of {size} tasks{limit} gave nothing on the incumbent" if info["exhausted"]
           else f"stopped at {kind}windows of {size} tasks")
    return (f"{info['iterations']} windows, {info['improvements']} improvements, {info['capped']} enumerations "
            f"capped, {info['kept_failed']} failed windows kept; {end}")


@register(SOLVER_NAME, families=("placement",), kind="heuristic",
          description="Exact-history LNS: windows of tasks consecutive in arrival order re-choose among EVERY "
                      "undominated allocation history (pauses and re-allocations included) that fits beside the "
                      "kept tasks and finishes within a slack of the task's current finish (bound (7)'s "
                      "labelling, finishes re-simulated by the referee), by a set-partitioning MIP (HiGHS); "
                      "scored by the referee",
          params={"block": f"int: tasks freed per window (default {BLOCK})",
                  "slack": f"int: steps a freed task's finish may grow (default {SLACK})",
                  "sub_limit": f"seconds per sub-MIP (default {SUB_LIMIT})",
                  "iterations": "int: stop after this many windows (default: the time limit; "
                                f"{DEFAULT_ITERATIONS} without one)",
                  "max_columns": f"int: per task and cluster, histories before the enumeration is capped "
                                 f"(default {MAX_COLUMNS})",
                  "max_labels": f"int: per task and cluster, live labels before the enumeration is capped "
                                f"(default {MAX_LABELS})",
                  "max_changes": "int: list only histories with at most this many changes after the first start "
                                 "(allocation switches, pauses, resumes; default: all histories)",
                  "max_block": f"int: once every window of the current size gave nothing since the last "
                               f"improvement, windows grow by {GROW} tasks up to this many, then the search stops "
                               f"(default: every task)",
                  "windows": "str: 'arrival' (tasks consecutive in arrival order; default), 'running' (per task, "
                             "the tasks of its cluster whose runs are nearest its own) or 'both'",
                  "warm_start": f"start from this schedule instead of sjf / optimus: a placement solution file, "
                                f"{BEST_KNOWN!r} or {LAGRANGIAN!r} (as for placement-lns)"},
          bounds={"block": (1, 200), "slack": (0, 50), "sub_limit": (0.1, None), "iterations": (0, None),
                  "max_columns": (1, 1_000_000), "max_labels": (1, 10_000_000),
                  "max_changes": (0, 1000), "max_block": (1, 100_000)},
          choices={"windows": WINDOWS},
          check=lambda p: check_warm_start(p.get("warm_start")), applies=not_applicable)
def solve(instance, *, time_limit: float | None = None, seed: int = 0, block: int = BLOCK, slack: int = SLACK,
          sub_limit: float = SUB_LIMIT, iterations: int | None = None, max_columns: int = MAX_COLUMNS,
          max_labels: int = MAX_LABELS, max_changes: int | None = None, max_block: int | None = None,
          windows: str = "arrival", warm_start: str | None = None):
    """Improve a start schedule by exact-history windows. A bad warm start is an InputError
    (raised before any work; unknown parameters are the registry's InputError); nothing else
    raises."""
    params = {"block": block, "slack": slack, "sub_limit": sub_limit, "iterations": iterations,
              "max_columns": max_columns, "max_labels": max_labels, "max_changes": max_changes,
              "max_block": max_block, "windows": windows, "warm_start": warm_start}

    def search(payload, start_cols, deadline, iterations, stats):
        cols, info = improve(payload, start_cols, seed=seed, block=int(block), slack=int(slack),
                             sub_limit=float(sub_limit), iterations=iterations, deadline=deadline,
                             max_columns=int(max_columns), max_labels=int(max_labels),
                             max_changes=None if max_changes is None else int(max_changes),
                             max_block=None if max_block is None else int(max_block), windows=str(windows))
        stats.update(info)
        stats["message"] = summary(info, int(block))
        return cols, "feasible"

    return window_search(instance, SOLVER_NAME, params, search, time_limit=time_limit, seed=seed,
                         warm_start=warm_start, iterations=iterations, default_iterations=DEFAULT_ITERATIONS)


__all__ = ["solve", "improve", "history_columns", "window_span", "untouched", "arrival_windows", "running_windows",
           "windows_of", "summary", "SOLVER_NAME", "BLOCK", "SLACK", "WINDOWS"]
