"""Late-acceptance search over serial schedules (``placement-lahc``, kind heuristic; issue 45).

The window searches (``placement-lns``, ``placement-cg-lns``, ``placement-history-lns``) keep every
task outside a window where it is. Where a set's schedules are queues — hetero-6-v2: the large
clusters start a task in nearly every step, one per step, and a task moved to a small cluster
would let every later task of its old queue start a step earlier — the improving move is a chain
of hundreds of small shifts that no window holds. This search moves in a representation where
that chain is free (docs/formulations/placement-search.md, "Late-acceptance search"):

1. **Start.** As the window searches (:func:`.cglns.window_search`): the warm start (a solution
   file, ``best-known`` or ``lagrangian``) or else the better of ``sjf`` and ``optimus`` by the
   referee; its fixed-allocation schedule (:func:`.lns.to_schedule`: each task's first allocation,
   held; re-allocating tasks placed again around the others).
2. **Representation.** A task order and one option per task (:class:`.sgs.Tables`); the schedule is
   the serial one (:func:`.sgs.decode`): in that order, each task at its option's earliest start
   that fits beside the tasks before it. Every later task moves up when a task leaves a queue.
3. **Moves** (one per iteration, drawn at random): a task takes another of its options (any
   cluster); the same and it moves up to ``window`` places in the order; a task moves up to
   ``window`` places; two tasks at most ``window`` places apart swap.
4. **Acceptance.** Late acceptance (Burke and Bykov, *The late acceptance hill-climbing
   heuristic*, EJOR 258, 2017): a move is kept when the decoded value is at most the current one
   or at most the current value of ``history`` iterations ago; otherwise it is undone.
5. **Result.** The best decoded schedule, then placement-lns's re-allocating moves on it
   (:func:`.grow.grow`: a task grows its allocation, or starts earlier, where the others leave
   room; kept when the referee finishes it earlier), each scored by the referee; the frame returns
   the best of these and the start (a warm start with pauses or re-allocations may beat every
   fixed schedule).

**Shapes of two pieces** (``pieces = 2``, :mod:`.shapes`): every task may also hold a first dominant
allocation for 1 .. steps - 1 steps and then another of the same cluster (the switching loss of
the change step included), and the warm start's own histories (pauses, several changes) are
shapes too: the search starts from the warm start itself, not from its fixed version. An option
move then draws a two-piece shape half the time, and a fifth of the moves *nudge* a task's change
1-3 steps earlier or later. The schedule is returned as decoded (no re-allocating moves after it
when it holds a shape of several pieces). ``lift``: the late list starts ``lift`` above the
start's value, so that from a local optimum (a best known) the search can climb out of it.

Seeded: moves come from ``numpy.random.default_rng(seed)``; with ``iterations`` the same seed gives
the same schedule. Declines the authors' additive noise, as the window searches' frame does.
"""

from __future__ import annotations

import time
from bisect import bisect_right

import numpy as np

from edgebench.formulations.placement.problem import prepare
from edgebench.formulations.placement.search import cglns
from edgebench.formulations.placement.search import grow as placement_grow
from edgebench.formulations.placement.search import shapes
from edgebench.formulations.placement.search.lns import (BEST_KNOWN, GROW_RESERVE, LAGRANGIAN, check_warm_start,
                                                         to_schedule)
from edgebench.formulations.placement.search.sgs import Tables
from edgebench.registry import register

SOLVER_NAME = "placement-lahc"
#: late-acceptance list length (iterations)
HISTORY = 1000
#: the farthest a move shifts a task in the order (places)
WINDOW = 20
#: iterations without a time limit
DEFAULT_ITERATIONS = 100_000
#: the clock is read once every so many iterations
CLOCK_EVERY = 64
#: move kinds and their probabilities: option, option and shift, shift, swap
MOVES = ("option", "option+shift", "shift", "swap")
WEIGHTS = (0.25, 0.25, 0.35, 0.15)
CUMULATIVE = tuple(np.cumsum(WEIGHTS))
#: with shapes of two pieces, also "nudge": a task on one moves its change 1-3 steps earlier or later
MOVES_TWO = MOVES + ("nudge",)
CUMULATIVE_TWO = tuple(np.cumsum((0.2, 0.2, 0.3, 0.1, 0.2)))


def _shift(order: np.ndarray, i: int, k: int) -> None:
    """Move the task at place i to place k, in place (the ones between close up)."""
    j = order[i]
    if k > i:
        order[i:k] = order[i + 1:k + 1].copy()
    else:
        order[k + 1:i + 1] = order[k:i].copy()
    order[k] = j


def _draw(rng: np.random.Generator, cur: int, ones: int, count: int, two: bool) -> int:
    """Another shape of a task with ``count`` (> 1) of them, the first ``ones`` fixed options:
    without two-piece shapes any but the current one; with them, half the time a two-piece shape
    and half the time a fixed option (never the current one)."""
    if not two:
        new = int(rng.integers(count - 1))
        return new + (new >= cur)
    if count > ones and (ones - (cur < ones) == 0 or rng.random() < 0.5):
        lo, size = ones, count - ones
    else:
        lo, size = 0, ones
    if lo <= cur < lo + size:
        if size == 1:
            return cur
        new = int(rng.integers(size - 1))
        return lo + new + (lo + new >= cur)
    return lo + int(rng.integers(size))


def improve(tables: Tables, order: np.ndarray, choice: np.ndarray, *, seed: int, iterations: int | None,
            deadline: float | None, history: int = HISTORY, window: int = WINDOW, lift: float = 0.0):
    """Late acceptance from (``order``, ``choice``) (module docstring, steps 3-4) until
    ``iterations`` moves or the ``deadline`` (a ``time.perf_counter()`` value). Returns the best
    (order, choice) and the run's stats."""
    rng = np.random.default_rng(seed)
    n = len(order)
    counts = np.diff(tables.offset)
    ones = tables.ones
    two = bool((counts > ones).any())
    several = np.flatnonzero(counts > 1)
    order, choice = order.copy(), choice.copy()
    cur = tables.decode(order, choice)
    moves, cumulative = (MOVES_TWO, CUMULATIVE_TWO) if two else (MOVES, CUMULATIVE)
    info = {"decoded_start": cur, "iterations": 0, "accepted": 0, "improvements": 0, "moves": dict.fromkeys(moves, 0),
            "trace": [(0.0, 0, cur)]}
    best, best_order, best_choice = cur, order.copy(), choice.copy()
    late = np.full(int(history), cur + int(round(cur * lift)), dtype=np.int64)
    t0 = time.perf_counter()
    it = 0
    while iterations is None or it < iterations:
        if deadline is not None and it % CLOCK_EVERY == 0 and time.perf_counter() >= deadline:
            break
        kind = moves[min(bisect_right(cumulative, rng.random()), len(moves) - 1)]
        if kind.startswith("option") and several.size == 0:
            it += 1
            continue
        undo_choice = undo_shift = None
        if kind == "nudge":
            j = int(several[rng.integers(several.size)])
            o = int(tables.offset[j] + choice[j])
            lo, hi = int(tables.block[o, 0]), int(tables.block[o, 1])
            if lo == hi:
                it += 1
                continue
            undo_choice = (j, int(choice[j]))
            step = int(rng.integers(1, 4)) * (1 if rng.random() < 0.5 else -1)
            choice[j] = min(hi, max(lo, o + step)) - int(tables.offset[j])
        elif kind.startswith("option"):
            j = int(several[rng.integers(several.size)])
            undo_choice = (j, int(choice[j]))
            choice[j] = _draw(rng, int(choice[j]), int(ones[j]), int(counts[j]), two)
            if kind == "option+shift":
                i = int(np.flatnonzero(order == j)[0])
                k = min(n - 1, max(0, i + int(rng.integers(-window, window + 1))))
                _shift(order, i, k)
                undo_shift = (k, i)
        elif kind == "shift":
            i = int(rng.integers(n))
            k = min(n - 1, max(0, i + int(rng.integers(-window, window + 1))))
            _shift(order, i, k)
            undo_shift = (k, i)
        else:
            i = int(rng.integers(n))
            k = min(n - 1, max(0, i + int(rng.integers(-window, window + 1))))
            order[i], order[k] = order[k], order[i]
            undo_shift = ("swap", i, k)
        value = tables.decode(order, choice)
        slot = it % late.size
        if value <= cur or value <= late[slot]:
            if value < cur:
                info["accepted"] += 1
            info["moves"][kind] += value < cur
            cur = value
            if value < best:
                best, best_order, best_choice = value, order.copy(), choice.copy()
                info["improvements"] += 1
                info["trace"].append((round(time.perf_counter() - t0, 2), it + 1, best))
        else:
            if undo_shift is not None:
                if undo_shift[0] == "swap":
                    _, i, k = undo_shift
                    order[i], order[k] = order[k], order[i]
                else:
                    _shift(order, *undo_shift)
            if undo_choice is not None:
                choice[undo_choice[0]] = undo_choice[1]
        late[slot] = cur
        it += 1
    info.update(iterations=it, value=best)
    return best_order, best_choice, info


def two_piece_start(payload, data, decisions, fixed):
    """Tables with every task's two-piece shapes (:func:`.shapes.two_piece`) and the start's own
    histories (:func:`.shapes.of_decision`: pauses and changes included), and the start encoded:
    its tasks in start order, each with its own shape, or with its fixed option (``fixed``, from
    :func:`.lns.to_schedule`) where its history is no shape (more pieces than ``of_decision``
    takes, or no finish). (None, None, None) when a task has neither."""
    own, starts = [], []
    for j, d in enumerate(decisions.tasks):
        sh = shapes.of_decision(payload, data, j, d)
        if sh is None:
            if fixed is None:
                return None, None, None
            sh, st = shapes.Shape.of(fixed[j][0]), fixed[j][1]
        else:
            st = int(d.start)
        own.append(sh)
        starts.append(st)
    extra = []
    for j in range(data.num_tasks):
        gen = shapes.two_piece(payload, data, j)
        known = set(gen) | {shapes.Shape.of(o) for o in data.options[j]}
        extra.append(gen + ([own[j]] if own[j] not in known else []))
    tables = Tables(data, extra)
    choice = np.array([tables.shapes[j].index(own[j]) for j in range(data.num_tasks)], dtype=np.int64)
    order = np.array(sorted(range(data.num_tasks), key=lambda j: (starts[j], j)), dtype=np.int64)
    return tables, order, choice


def summary(info: dict) -> str:
    """One line for the run's store (its ``message``)."""
    grown = info.get("grown_value")
    return (f"{info['iterations']} moves, {info['accepted']} improving, {info['improvements']} new bests; "
            f"fixed start {info['decoded_start']} -> {info['value']}"
            + (f"; re-allocating moves -> {grown:g}" if grown is not None and grown < info["value"] else "")
            + (f"; {info['two_piece']} tasks on two-piece shapes (of {info['shapes']})" if info.get("two_piece")
               else ""))


@register(SOLVER_NAME, families=("placement",), kind="heuristic",
          description="Late-acceptance hill climbing over serial schedules: a task order and one fixed allocation "
                      "option per task, decoded by earliest feasible starts (every later task moves up when one "
                      "leaves a queue); moves change a task's option and place in the order; scored by the referee",
          params={"history": f"int: late-acceptance list length (default {HISTORY})",
                  "window": f"int: the farthest a move shifts a task in the order (default {WINDOW})",
                  "lift": "float: the late list starts at the start's value times 1 + lift (default 0: "
                          "plain late acceptance; from a local optimum such as a best known it then only walks "
                          "its plateau)",
                  "pieces": "int: 1 (default) fixed options only; 2 also every history of one change "
                            "(a first dominant allocation for 1..steps-1 steps, then another of the cluster)",
                  "iterations": "int: stop after this many moves (default: the time limit; "
                                f"{DEFAULT_ITERATIONS} without one)",
                  "warm_start": f"start from this schedule instead of sjf / optimus: a placement solution file, "
                                f"{BEST_KNOWN!r} or {LAGRANGIAN!r} (as for placement-lns)"},
          bounds={"history": (1, 10_000_000), "window": (1, 100_000), "iterations": (0, None), "pieces": (1, 2),
                  "lift": (0.0, 1.0)},
          check=lambda p: check_warm_start(p.get("warm_start")), applies=cglns.not_applicable)
def solve(instance, *, time_limit: float | None = None, seed: int = 0, history: int = HISTORY, window: int = WINDOW,
          iterations: int | None = None, warm_start: str | None = None, pieces: int = 1, lift: float = 0.0):
    """Improve a start schedule by late acceptance over serial schedules. A bad warm start is an
    InputError (raised before any work; unknown parameters are the registry's InputError);
    nothing else raises."""
    params = {"history": history, "window": window, "iterations": iterations, "warm_start": warm_start,
              "pieces": pieces, "lift": lift}

    def search(payload, start_cols, deadline, iterations, stats):
        data = prepare(payload)
        decisions = cglns.to_decisions(start_cols)
        fixed = to_schedule(payload, data, decisions)
        if int(pieces) == 2:
            tables, order, choice = two_piece_start(payload, data, decisions, fixed)
        elif fixed is None:
            tables = None
        else:
            tables = Tables(data)
            order, choice = tables.encode(fixed)
        if tables is None:
            stats["message"] = "the start has no fixed-allocation schedule among the dominant options"
            return None, "feasible"
        order, choice, info = improve(tables, order, choice, seed=seed, iterations=iterations,
                                      deadline=None if deadline is None else deadline - GROW_RESERVE,
                                      history=int(history), window=int(window), lift=float(lift))
        info["shapes"] = int(tables.offset[-1] - tables.ones.sum())
        if (choice >= tables.ones).any():  # two-piece shapes: the decoded schedule as it is
            info["two_piece"] = int((choice >= tables.ones).sum())
            stats.update(info)
            stats["message"] = summary(info)
            return cglns.decisions_columns(payload, tables.decisions(order, choice)), "feasible"
        sched = tables.schedule(order, choice)
        best = placement_grow.better_of_grown(instance, data, sched, info["value"], deadline=deadline, info=info)
        stats.update(info)
        stats["message"] = summary(info)
        return cglns.decisions_columns(payload, best), "feasible"

    return cglns.window_search(instance, SOLVER_NAME, params, search, time_limit=time_limit, seed=seed,
                               warm_start=warm_start, iterations=iterations, default_iterations=DEFAULT_ITERATIONS)


__all__ = ["solve", "improve", "summary", "SOLVER_NAME", "HISTORY", "WINDOW"]
