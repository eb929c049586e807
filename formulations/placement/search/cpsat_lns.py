"""CP-SAT's own large-neighbourhood search on the fixed-allocation model (``placement-cpsat-lns``,
kind heuristic; issue 45, session 43).

``placement-lahc`` showed where hetero-6-v2's improving moves are: chains of small shifts across a
cluster's queue, which no window of the window searches holds. CP-SAT's LNS subsolvers
(``scheduling_time_window_lns``, ``scheduling_precedences_lns``, ``scheduling_resource_windows_lns``,
the graph and random neighbourhoods) free such sets of intervals and re-solve them exactly with
the cumulative and no-overlap propagators, so this solver hands the whole schedule to them:

1. **Start.** As the window searches (:func:`.cglns.window_search`): the warm start (a solution
   file, ``best-known`` or ``lagrangian``) or else the better of ``sjf`` and ``optimus``; its
   fixed-allocation schedule (:func:`.lns.to_schedule`).
2. **Model.** :func:`.milp.cpsat_intervals_model`: one optional interval per task and dominant
   option, cumulatives per cluster and resource, unit start intervals in a no-overlap per cluster
   (single variant); finishes bounded by :func:`.problem.finish_bounds` at the start's fixed value
   (no schedule at or below that value finishes a task later), the start hinted completely.
3. **Search.** CP-SAT with ``interleave_search`` (its subsolvers take turns on ``threads``
   threads, deterministically) and its full-problem subsolvers left out (``FULL_SUBSOLVERS``)
   unless ``full`` is set: on one thread the LNS subsolvers get the time (hetero-6-v2 s0, 150 s
   from the best known's fixed version 3195: about 200 neighbourhoods, 3195 -> 3178; with the full
   subsolvers interleaved, 10 neighbourhoods in 90 s and nothing).
4. **Result.** The best schedule, then placement-lns's re-allocating moves on it
   (:func:`.grow.grow`), each scored by the referee; the frame returns the best of these and the
   start.

Its bound is the fixed-allocation restriction's (CP-SAT's objective bound), not reported.
Seeded: ``seed`` is CP-SAT's ``random_seed``; with ``work`` (CP-SAT's deterministic time limit,
``max_deterministic_time``) instead of a wall-clock limit the same seed gives the same schedule.
Declines the authors' additive noise, as the window searches' frame does.
"""

from __future__ import annotations

import time
from typing import Any

from edgebench.formulations.linear import run_cpsat
from edgebench.formulations.placement.milp import cpsat_intervals_model, cpsat_schedule
from edgebench.formulations.placement.problem import finish_bounds, schedule_objective
from edgebench.formulations.placement.search import cglns
from edgebench.formulations.placement.search.lns import BEST_KNOWN, LAGRANGIAN, check_warm_start
from edgebench.registry import register

SOLVER_NAME = "placement-cpsat-lns"
#: CP-SAT's full-problem subsolvers (OR-Tools 9.15's names), left out unless ``full``
FULL_SUBSOLVERS = ("core", "max_lp", "max_lp_sym", "no_lp", "pseudo_costs", "quick_restart", "quick_restart_no_lp",
                   "reduced_costs", "fixed")
#: CP-SAT's deterministic time without a time limit and without ``work``
DEFAULT_WORK = 30.0


def cpsat_parameters(*, seed: int, threads: int, full: bool, seconds: float | None,
                     work: float | None) -> dict[str, Any]:
    """CP-SAT's parameters for the search (step 3 of the module doc)."""
    params: dict[str, Any] = {"interleave_search": True}
    if not full:
        params["ignore_subsolvers"] = list(FULL_SUBSOLVERS)
    if work is not None:
        params["max_deterministic_time"] = float(work)
    return params


def improve(data, fixed, *, seed: int, threads: int, full: bool, deadline: float | None,
            work: float | None) -> tuple[list, dict[str, Any]]:
    """The best fixed-allocation schedule CP-SAT's search finds from ``fixed`` (never worse: the
    start is hinted and kept if nothing better is found) and counters."""
    start_value = schedule_objective(data, fixed)
    finish_by = finish_bounds(data, start_value)
    model, choice = cpsat_intervals_model(data, finish_by, fixed)
    seconds = None if deadline is None else max(0.1, deadline - time.perf_counter())
    if seconds is None and work is None:
        work = DEFAULT_WORK
    solver, code, status = run_cpsat(model, time_limit=seconds, threads=threads, seed=seed,
                                     params=cpsat_parameters(seed=seed, threads=threads, full=full, seconds=seconds,
                                                             work=work))
    info: dict[str, Any] = {"cpsat_status": status, "decoded_start": start_value, "value": start_value,
                            "deterministic_time": float(solver.deterministic_time)}
    best = fixed
    if status in ("optimal", "feasible"):
        sched = cpsat_schedule(solver.Value, choice)
        value = schedule_objective(data, sched)
        info["restriction_bound"] = float(solver.BestObjectiveBound())
        if value < start_value:
            best, info["value"] = sched, value
    return best, info


def summary(info: dict) -> str:
    """One line for the run's store (its ``message``)."""
    grown = info.get("grown_value")
    return (f"CP-SAT {info['cpsat_status']} ({info['deterministic_time']:.1f} deterministic s): fixed start "
            f"{info['decoded_start']} -> {info['value']}"
            + (f"; re-allocating moves -> {grown:g}" if grown is not None and grown < info["value"] else ""))


@register(SOLVER_NAME, families=("placement",), kind="heuristic",
          description="CP-SAT's large-neighbourhood search (its scheduling, graph and random neighbourhoods, "
                      "interleaved on the given threads) on the fixed-allocation interval model, from a warm "
                      "start's fixed version; then re-allocating moves; scored by the referee",
          params={"threads": "int: CP-SAT workers the interleaved subsolvers share (default 1)",
                  "full": "bool: also CP-SAT's full-problem subsolvers (default false: the LNS ones only)",
                  "work": "float: CP-SAT's deterministic time limit (max_deterministic_time; default: the "
                          f"time limit, {DEFAULT_WORK:g} without one); with it the same seed gives the same schedule",
                  "warm_start": f"start from this schedule instead of sjf / optimus: a placement solution file, "
                                f"{BEST_KNOWN!r} or {LAGRANGIAN!r} (as for placement-lns)"},
          bounds={"threads": (1, 64), "work": (0.0, None)},
          check=lambda p: check_warm_start(p.get("warm_start")), applies=cglns.not_applicable)
def solve(instance, *, time_limit: float | None = None, seed: int = 0, threads: int = 1, full: bool = False,
          work: float | None = None, warm_start: str | None = None):
    """Improve a start schedule by CP-SAT's LNS. A bad warm start is an InputError (raised before
    any work; unknown parameters are the registry's InputError); nothing else raises."""
    params = {"threads": threads, "full": full, "work": work, "warm_start": warm_start}

    def run(data, fixed, deadline):
        return improve(data, fixed, seed=seed, threads=int(threads), full=bool(full), deadline=deadline,
                       work=None if work is None else float(work))

    return cglns.fixed_search(instance, SOLVER_NAME, params, run, summary, time_limit=time_limit, seed=seed,
                              warm_start=warm_start)

__all__ = ["solve", "improve", "cpsat_parameters", "summary", "SOLVER_NAME", "FULL_SUBSOLVERS", "DEFAULT_WORK"]
