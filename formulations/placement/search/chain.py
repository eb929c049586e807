"""Late acceptance and CP-SAT's LNS in turn on one fixed-allocation schedule
(``placement-lahc-cpsat``, kind heuristic; issue 45, session 44).

The two fixed-allocation searches stop in different places. ``placement-lahc`` moves tasks along a
task order (serial schedules) and stalls where the next gain needs several tasks to move into
exchanged slots at once; ``placement-cpsat-lns`` frees time windows, precedence chains and resource
windows and re-solves them exactly, and stalls where a gain is a long chain of one-step shifts. Each
one's end is a fresh start for the other. Measured by hand on hetero-6-v2 (session 44, one thread):
s1 from late acceptance's 2751, CP-SAT 2751 -> 2746 in 3,000 s, then late acceptance 2745 -> 2742
in 900 s; s0 from CP-SAT's 3152, late acceptance -> 3143 in 900 s (docs/formulations/placement-search.md,
"Late acceptance and CP-SAT in turn"). This solver makes that a loop:

1. **Start.** As the window searches (:func:`.cglns.window_search`): a warm start or else the
   better of sjf and optimus; its fixed-allocation version (:func:`.lns.to_schedule`), encoded
   as a task order and one option per task (:class:`.sgs.Tables`).
2. **Rounds.** Each round runs late acceptance (:func:`.lahc.improve`) for ``lahc_share`` of the
   round, decodes its best into a fixed schedule, and gives that to CP-SAT's LNS
   (:func:`.cpsat_lns.improve`, which never returns worse than its start) for the rest. CP-SAT's
   schedule is encoded back by start order, which decodes to a schedule no worse (serial
   scheduling never starts a task later than the schedule whose start order it follows). A round
   lasts ``round_seconds`` or, deterministically, ``iterations`` moves and ``work`` CP-SAT
   deterministic seconds; round k's seeds are drawn from ``SeedSequence([seed, k])``. The rounds
   stop early where CP-SAT proves its schedule optimal: its model admits every fixed-allocation
   schedule at or below the round's start value, so neither search can improve on it.
3. **Result.** The best fixed schedule, then the re-allocating moves (:func:`.grow.better_of_grown`),
   each scored by the referee; the frame returns the best of these and the start.
4. **Finish** (``finish_share`` > 0; session 45). The exact-history windows of
   ``placement-history-lns`` (:func:`.histlns.improve`, with the settings of the suite row
   ``history-lns-c1``: windows of 12 tasks, slack 1, 15 s per sub-MIP, histories with at most one
   change) continue from step 3's schedule for the last ``finish_share`` of the time, or
   ``finish_iterations`` windows. The windows re-choose among re-allocating histories, which the
   fixed-allocation searches cannot reach; on hetero-6-v2 s1 that step took the pair's 2742 to
   2739 (session 44, by hand). The windows never return worse than their start.

No bound. With ``rounds``, ``iterations`` and ``work`` set the same seed gives the same schedule
(a wall-clock limit alone does not). Declines the authors' additive noise, as the window searches'
frame does.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from edgebench.formulations.placement.search import cglns, cpsat_lns, histlns, lahc
from edgebench.formulations.placement.search.lns import BEST_KNOWN, LAGRANGIAN, check_warm_start
from edgebench.formulations.placement.search.sgs import Tables
from edgebench.registry import register

SOLVER_NAME = "placement-lahc-cpsat"
#: a round's wall-clock length (s) under a time limit
ROUND_SECONDS = 600.0
#: the part of a round late acceptance gets
LAHC_SHARE = 0.5
#: rounds, late-acceptance moves per round and CP-SAT deterministic seconds per round without a time limit
DEFAULT_ROUNDS, DEFAULT_MOVES, DEFAULT_WORK = 2, 20_000, 5.0
#: step 4's exact-history windows: the suite row history-lns-c1's settings
FINISH = {"block": 12, "slack": 1, "sub_limit": 15.0, "max_changes": 1}
#: step 4's windows without a time limit
DEFAULT_FINISH_WINDOWS = 20


def round_seeds(seed: int, k: int) -> tuple[int, int]:
    """Round k's seeds (late acceptance, CP-SAT), independent of the other rounds' lengths."""
    a, b = np.random.SeedSequence([int(seed), int(k)]).generate_state(2)
    return int(a), int(b) % (2 ** 31 - 1)


def improve(data, fixed, *, seed: int, deadline: float | None, rounds: int | None, iterations: int | None,
            work: float | None, round_seconds: float = ROUND_SECONDS, lahc_share: float = LAHC_SHARE,
            history: int = lahc.HISTORY, window: int = lahc.WINDOW, threads: int = 1) -> tuple[list, dict[str, Any]]:
    """Rounds of late acceptance, then CP-SAT's LNS, from the fixed schedule ``fixed`` (module
    docstring, step 2) until ``rounds`` rounds or the ``deadline`` (a ``time.perf_counter()``
    value). Returns the best fixed schedule (never worse than ``fixed``) and the run's counters,
    with one (seconds, search, value) trace entry per search that improved."""
    tables = Tables(data)
    order, choice = tables.encode(fixed)
    best = tables.decode(order, choice)
    info: dict[str, Any] = {"decoded_start": best, "rounds": 0, "lahc_gain": 0, "cpsat_gain": 0,
                            "trace": [(0.0, "start", best)]}
    t0 = time.perf_counter()
    k = 0
    while rounds is None or k < rounds:
        now = time.perf_counter()
        if deadline is not None and now >= deadline:
            break
        end = None if deadline is None else min(deadline, now + float(round_seconds))
        s_lahc, s_cpsat = round_seeds(seed, k)
        order, choice, li = lahc.improve(tables, order, choice, seed=s_lahc, iterations=iterations,
                                         deadline=None if end is None else now + lahc_share * (end - now),
                                         history=history, window=window)
        if li["value"] < best:
            info["lahc_gain"] += best - li["value"]
            best = li["value"]
            info["trace"].append((time.perf_counter() - t0, "lahc", best))
        sched, ci = cpsat_lns.improve(data, tables.schedule(order, choice), seed=s_cpsat, threads=threads,
                                      full=False, deadline=end, work=work)
        order, choice = tables.encode(sched)
        value = tables.decode(order, choice)
        if value < best:
            info["cpsat_gain"] += best - value
            best = value
            info["trace"].append((time.perf_counter() - t0, "cpsat", best))
        k += 1
        if ci["cpsat_status"] == "optimal":  # the fixed-allocation optimum: nothing left to either search
            info["fixed_optimal"] = True
            break
    info.update(rounds=k, value=best)
    return tables.schedule(order, choice), info


def finish_seed(seed: int) -> int:
    """Step 4's window seed, apart from every round's."""
    return int(np.random.SeedSequence([int(seed), 2 ** 31 - 1]).generate_state(1)[0])


def finisher(seed: int, iterations: int | None):
    """Step 4 as the frame's ``finish``: the exact-history windows from the columns, their counters
    in ``stats['finish']`` and a clause of the message."""

    def finish(payload, cols, deadline, stats):
        out, info = histlns.improve(payload, cols, seed=finish_seed(seed), iterations=iterations, deadline=deadline,
                                    **FINISH)
        stats["finish"] = {k: info[k] for k in ("start_value", "value", "iterations", "improvements", "exhausted")}
        stats["message"] += f"; exact-history windows {info['start_value']} -> {info['value']} ({info['iterations']})"
        return out

    return finish


def summary(info: dict) -> str:
    """One line for the run's store (its ``message``)."""
    grown = info.get("grown_value")
    k = info["rounds"]
    return (f"{k} round{'' if k == 1 else 's'}: fixed start {info['decoded_start']} -> {info['value']} (late acceptance "
            f"{-info['lahc_gain']:+d}, CP-SAT {-info['cpsat_gain']:+d})"
            + ("; optimal among fixed allocations" if info.get("fixed_optimal") else "")
            + (f"; re-allocating moves -> {grown:g}" if grown is not None and grown < info["value"] else ""))


@register(SOLVER_NAME, families=("placement",), kind="heuristic",
          description="Late acceptance over serial schedules and CP-SAT's LNS on the fixed-allocation interval "
                      "model, in turn, each from the other's best; then re-allocating moves; scored by the referee",
          params={"rounds": f"int: rounds of late acceptance then CP-SAT (default: until the time limit; "
                            f"{DEFAULT_ROUNDS} without one)",
                  "round_seconds": f"float: a round's wall-clock length under a time limit (default {ROUND_SECONDS:g})",
                  "lahc_share": f"float: the part of a round late acceptance gets (default {LAHC_SHARE:g})",
                  "iterations": "int: late-acceptance moves per round (default: its share of the round; "
                                f"{DEFAULT_MOVES} without a time limit)",
                  "work": "float: CP-SAT deterministic seconds per round (default: the rest of the round; "
                          f"{DEFAULT_WORK:g} without a time limit); with rounds and iterations the same seed gives "
                          "the same schedule",
                  "history": f"int: late-acceptance list length (default {lahc.HISTORY})",
                  "window": f"int: the farthest a move shifts a task in the order (default {lahc.WINDOW})",
                  "threads": "int: CP-SAT workers (default 1)",
                  "finish_share": "float: the last part of the time for placement-history-lns's exact-history "
                                  "windows from the result (default 0: none)",
                  "finish_iterations": "int: those windows at most (default: their share of the time; "
                                       f"{DEFAULT_FINISH_WINDOWS} without a time limit)",
                  "warm_start": f"start from this schedule instead of sjf / optimus: a placement solution file, "
                                f"{BEST_KNOWN!r} or {LAGRANGIAN!r} (as for placement-lns)"},
          bounds={"rounds": (1, None), "round_seconds": (1.0, None), "lahc_share": (0.0, 1.0),
                  "iterations": (0, None), "work": (0.0, None), "history": (1, 10_000_000), "window": (1, 100_000),
                  "threads": (1, 64), "finish_share": (0.0, 0.95), "finish_iterations": (0, None)},
          check=lambda p: check_warm_start(p.get("warm_start")), applies=cglns.not_applicable)
def solve(instance, *, time_limit: float | None = None, seed: int = 0, rounds: int | None = None,
          round_seconds: float = ROUND_SECONDS, lahc_share: float = LAHC_SHARE, iterations: int | None = None,
          work: float | None = None, history: int = lahc.HISTORY, window: int = lahc.WINDOW, threads: int = 1,
          warm_start: str | None = None, finish_share: float = 0.0, finish_iterations: int | None = None):
    """Improve a start schedule by late acceptance and CP-SAT's LNS in turn. A bad warm start is an
    InputError (raised before any work; unknown parameters are the registry's InputError);
    nothing else raises."""
    params = {"rounds": rounds, "round_seconds": round_seconds, "lahc_share": lahc_share, "iterations": iterations,
              "work": work, "history": history, "window": window, "threads": threads, "warm_start": warm_start,
              "finish_share": finish_share, "finish_iterations": finish_iterations}
    untimed = time_limit is None

    def run(data, fixed, deadline):
        return improve(data, fixed, seed=seed, deadline=deadline,
                       rounds=DEFAULT_ROUNDS if untimed and rounds is None else rounds,
                       iterations=DEFAULT_MOVES if untimed and iterations is None else iterations,
                       work=DEFAULT_WORK if untimed and work is None else work, round_seconds=float(round_seconds),
                       lahc_share=float(lahc_share), history=int(history), window=int(window), threads=int(threads))

    finish = None
    if float(finish_share) > 0 or finish_iterations is not None:
        windows = DEFAULT_FINISH_WINDOWS if untimed and finish_iterations is None else finish_iterations
        finish = finisher(seed, None if windows is None else int(windows))
    return cglns.fixed_search(instance, SOLVER_NAME, params, run, summary, time_limit=time_limit, seed=seed,
                              warm_start=warm_start, finish=finish, finish_share=float(finish_share))

__all__ = ["solve", "improve", "round_seeds", "finish_seed", "finisher", "summary", "SOLVER_NAME", "ROUND_SECONDS",
           "LAHC_SHARE", "FINISH"]
