"""Large-neighbourhood search for the placement problem (``placement-lns``, kind heuristic).

Start: the best, by the referee, of ``placement-milp`` (a share of the time limit), ``sjf``
and ``optimus``. The search works on fixed-allocation schedules (every task keeps its
cluster and allocation from its start to its finish: :data:`.placement.Schedule`): the best
start that is one (``placement-milp``'s always is; a policy's when it never re-allocated) is
improved, and the best of everything, by the referee, is returned.

Each neighbourhood frees a set of tasks of the incumbent and keeps every other task's
(option, start): a *window* (the ``block`` tasks whose starts lie nearest a random step) or a
*cluster* (the ``block`` tasks on a random cluster nearest a random step). The freed tasks are
re-placed by the fixed-allocation MILP of :mod:`.placement` on the sub-problem (the others are
constants using capacity and start slots; starts up to ``slack`` steps after arrival or one
past their current delay, so the incumbent is feasible for it and HiGHS starts from it). A
better schedule (by :func:`.placement.schedule_objective`, checked by
:func:`.placement.schedule_violations`) replaces the incumbent; after ``stall`` neighbourhoods
without improvement the blocks grow by half (up to ``4 x block``) and shrink back on an
improvement; the search ends at the time limit, after ``iterations`` neighbourhoods, or
when ``stall`` neighbourhoods of the largest blocks in a row improve nothing. The returned
schedule is scored by the referee (its objective is the referee's value, never the
search's own).

Second round (docs/formulations/placement-search.md, "Warm start, adaptive moves and re-allocating
moves"): ``warm_start`` (``"best-known"`` or a solution file) replaces the start solvers by a
given schedule; ``moves`` picks the destroy moves (``classic``: the above; ``adaptive``: the
kinds of :mod:`placement.search.neighbourhoods` by adaptive weights; or one kind); ``grow`` adds the
re-allocating moves of :mod:`placement.search.grow` after the search. Every candidate returned is
scored by the referee.

Continuations (TapFinger's DAgger expert, docs/tapfinger.md): :func:`improve` with ``frozen``
tasks (never freed) and ``not_before`` (no other task starts before that step) improves the
rest of a schedule whose prefix is fixed.

Seeded: the neighbourhoods are drawn from ``numpy.random.default_rng(seed)``. With
``iterations`` (a number of neighbourhoods) and sub-problems that finish within their own
limit, the same seed gives the same schedule; under a wall-clock limit alone the number of
neighbourhoods depends on the machine (as for every time-limited solver).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Collection, Sequence

import numpy as np

from edgebench import registry
from edgebench.errors import InputError
from edgebench.formulations.placement.problem import (
    FIXED_KEY,
    ModelTooLarge,
    Option,
    PlacementData,
    Schedule,
    finish_bounds,
    fixed_rows,
    prepare,
    repair_schedule,
    schedule_objective,
    schedule_violations,
    to_decisions,
)
from edgebench.formulations.placement.milp import build_model, decode_partial, hint_vector, solve_model
from edgebench.formulations.placement.search import grow as placement_grow
from edgebench.formulations.placement.search import lagrange_list as placement_lagrange_list
from edgebench.formulations.placement.deadline import Expired
from edgebench.formulations.placement.search.neighbourhoods import KINDS, Adaptive, destroy, window
from edgebench.instances import semantics, sets
from edgebench.instances.io import content_hash, load_solution
from edgebench.referee.placement import evaluate
from edgebench.registry import make_result, register

SOLVER_NAME = "placement-lns"
#: the starting solvers (best by the referee)
STARTS = ("placement-milp", "sjf", "optimus")
#: share of the time limit given to placement-milp's start
START_SHARE = 0.3
#: time limit of a policy's start run (they take well under a second)
POLICY_LIMIT = 30.0
#: tasks freed per neighbourhood at first; the start window of a freed task (steps after
#: arrival, at least one past its current delay); misses before the blocks grow
BLOCK, SLACK, STALL = 24, 8, 6
#: seconds per sub-MILP at most
SUB_LIMIT = 10.0
#: without a time limit: this many neighbourhoods
DEFAULT_ITERATIONS = 200
#: neighbourhood moves: "classic", "adaptive" or one kind of placement.search.neighbourhoods.KINDS
MOVES = ("classic", "adaptive") + KINDS
DEFAULT_MOVES = "classic"
#: non-classic moves: rounds of block growth in a row without improvement before the search stops
CYCLES = 4
#: the search stops when less than this many times the last sub-problem's build time is left
BUILD_MARGIN = 1.5
#: seconds of the time limit kept for the re-allocating moves after the search
GROW_RESERVE = 2.0
#: sub-MILP stopping rules: "off" (solve each to optimality from the incumbent as a MIP start),
#: "bound" (HiGHS objective_bound just below the incumbent's value: only improving solutions
#: count, the tree is pruned by it), "first" (bound, and stop at the first improving solution)
CUTOFFS = ("off", "bound", "first")
DEFAULT_CUTOFF = "off"
#: warm_start value that names the instance's shipped best-known solution
BEST_KNOWN = "best-known"
#: warm_start value that builds the Lagrangian-guided list schedule (placement-lagrange)
LAGRANGIAN = "lagrangian"


def to_schedule(payload, data: PlacementData, decisions) -> Schedule | None:
    """The fixed-allocation schedule of referee decisions: each task holds its first
    allocation to its finish, replaced by a dominant option of its cluster using no more cpu /
    gpu and running no longer. For decisions that never re-allocate, feasibility and
    completion times are kept or improved. For re-allocating ones the result is checked
    again; when it breaks a rule (a task started earlier at a small allocation, then grew:
    :mod:`placement.search.grow`), the tasks that re-allocate are placed again by
    :func:`.placement.repair_schedule` around the others (feasible by construction, possibly
    worse). None when a task is unplaced or an allocation runs no dominant option."""
    out: list[tuple[Option, int]] = []
    moving: list[int] = []
    for j, d in enumerate(decisions.tasks):
        if d.cluster is None or d.start is None:
            return None
        cpu, gpu = d.cpu, d.gpu
        if d.history:
            if d.history[0].step != d.start:
                return None
            cpu, gpu = d.history[0].cpu, d.history[0].gpu
            if len(d.history) > 1:
                moving.append(j)
        steps = semantics.fixed_run_steps(payload, j, cpu, gpu)
        if steps is None:
            return None
        fits = [o for o in data.options[j]
                if o.cluster == d.cluster and o.cpu <= cpu and o.gpu <= gpu and o.steps <= steps]
        if not fits:
            return None
        out.append((min(fits, key=lambda o: (o.steps, o.cpu + o.gpu)), int(d.start)))
    if not schedule_violations(data, out):
        return out
    if not moving:
        return None
    keep = set(range(len(out))) - set(moving)
    fixed = repair_schedule(data, [out[j] if j in keep else None for j in range(len(out))])
    return None if schedule_violations(data, fixed) else fixed


def neighbourhood(rng: np.random.Generator, data: PlacementData, cur: Schedule, block: int,
                  movable: Sequence[int] | None = None) -> set[int]:
    """The tasks freed by the classic move: ``block`` tasks nearest a random step, all
    clusters or (half the draws) one (:func:`placement.search.neighbourhoods.window`), among
    ``movable`` (None: all)."""
    return window(rng, data, cur, block, movable=movable)


def _move_kinds(moves: str) -> tuple[str, ...]:
    if moves == "adaptive":
        return KINDS
    if moves == "classic":
        return ("classic",)
    return (moves,)


def improve(data: PlacementData, cur: Schedule, *, seed: int, deadline: float | None, iterations: int | None,
            block: int = BLOCK, slack: int = SLACK, stall: int = STALL, sub_limit: float = SUB_LIMIT,
            moves: str = DEFAULT_MOVES, types: list[str] | None = None,
            cutoff: str = DEFAULT_CUTOFF, frozen: Collection[int] = (),
            not_before: int | None = None) -> tuple[Schedule, dict[str, Any]]:
    """The LNS loop (module docstring); returns the best schedule and counters. ``moves``:
    ``classic`` (windows / clusters, half each), ``adaptive`` (every kind of
    :data:`placement.search.neighbourhoods.KINDS`, chosen by adaptive weights) or one kind.

    A continuation (DAgger's expert, docs/tapfinger.md): the tasks in ``frozen`` are never freed
    (they keep their (option, start) of ``cur``: constants of every sub-problem), and with
    ``not_before`` no other task starts before that step (the sub-problems see its arrival as
    max(arrival, ``not_before``), which shifts the objective by a constant; ``cur`` must respect
    it: ValueError otherwise). The counters are on ``data``'s own arrivals. Without both, the
    search is the one above, bit for bit."""
    J = data.num_tasks
    frozen = set(frozen)
    movable = None if not frozen else [j for j in range(J) if j not in frozen]
    orig = data
    if not_before is not None:
        late = [j for j in range(J) if j not in frozen and cur[j][1] < not_before]
        if late:
            raise ValueError(f"task {late[0]} starts at {cur[late[0]][1]}, before not_before {not_before}")
        data = dataclasses.replace(data, arrivals=[a if j in frozen else max(a, not_before)
                                                   for j, a in enumerate(data.arrivals)])
    rng = np.random.default_rng(seed)
    K = J if movable is None else len(movable)
    cur_val = schedule_objective(data, cur)
    info: dict[str, Any] = {"lns_start": schedule_objective(orig, cur), "neighbourhoods": 0, "improved": 0}
    if not K:  # everything frozen: nothing to search
        info["lns_end"] = info["lns_start"]
        return cur, info
    chooser = Adaptive(_move_kinds(moves))
    blk, fails, build = min(block, K), 0, 0.0
    while iterations is None or info["neighbourhoods"] < iterations:
        rem = None if deadline is None else deadline - time.perf_counter()
        if rem is not None and rem <= 0.5 + BUILD_MARGIN * build:
            break  # building the next sub-problem (not time-limited) would pass the deadline
        kind = chooser.choose(rng)
        free = (neighbourhood(rng, data, cur, blk, movable) if kind == "classic"
                else destroy(kind, rng, data, cur, blk, types, movable))
        fixed = [None if j in free else cur[j] for j in range(J)]
        last = [data.arrivals[j] + max(slack, cur[j][1] - data.arrivals[j] + 1) for j in range(J)]
        tb = time.perf_counter()
        bm = build_model(data, finish_bounds(data, cur_val), last, fixed=fixed, late=False, name=SOLVER_NAME)
        build = time.perf_counter() - tb
        rem = None if deadline is None else deadline - time.perf_counter()
        if rem is not None and rem <= 0.5:
            break
        tl = sub_limit if rem is None else min(rem, sub_limit)
        options = None
        if cutoff != "off":
            x = hint_vector(bm, cur)
            if x is not None:  # the objective is integral: anything better is at least 1 lower
                options = {"objective_bound": bm.model.objective_value(x) - 0.5}
                if cutoff == "first":
                    options["mip_max_improving_sols"] = 1
        sol = solve_model(bm, "highspy", time_limit=tl, threads=1, seed=seed, hint=cur, options=options)
        info["neighbourhoods"] += 1
        better = False
        if sol.values is not None:
            part = decode_partial(bm, sol.values)
            new = [part[j] if part[j] is not None else cur[j] for j in range(J)]
            val = schedule_objective(data, new)
            if val < cur_val and not schedule_violations(data, new):
                cur, cur_val, better = new, val, True
                info["improved"] += 1
        chooser.update(kind, better)
        if better:
            blk, fails = min(block, K), 0
            info["cycles"] = 0
        else:
            fails += 1
            top = min(K, 4 * block)
            if fails >= stall and blk >= top:
                # the largest blocks improve nothing any more: the classic search stops; the
                # others start again from the smallest blocks, up to CYCLES times in a row
                info["cycles"] = info.get("cycles", 0) + 1
                if kind == "classic" or info["cycles"] >= CYCLES:
                    info["converged"] = True
                    break
                blk, fails = min(block, K), 0
                continue
            if fails >= stall:
                blk, fails = min(top, blk + max(1, blk // 2)), 0
    info["lns_end"] = schedule_objective(orig, cur)
    info["moves"] = chooser.summary()
    return cur, info


def _starts(instance, time_limit: float | None, share: float, seed: int):
    """[(referee value, decisions, solver)] of the feasible start runs."""
    out = []
    for name in STARTS:
        if name == "placement-milp":
            tl = None if time_limit is None else max(1.0, share * float(time_limit))
        else:
            tl = POLICY_LIMIT if time_limit is None else min(POLICY_LIMIT, max(1.0, 0.1 * float(time_limit)))
        res = registry.solve(instance, name, time_limit=tl, seed=seed)
        dec = res.solution.placement
        if dec is None:
            continue
        ev = evaluate(instance, dec)
        if ev.feasible:
            out.append((float(ev.primary_value), dec, name))
    return out


def _warm_file(value: str) -> Path:
    path = Path(value)
    if not path.is_file():
        raise InputError(f"no such solution file {value!r} (a solution JSON file, {BEST_KNOWN!r} or {LAGRANGIAN!r})",
                         field="params.warm_start")
    return path


def check_warm_start(value: Any) -> None:
    """The parameter check, before anything runs: ``best-known`` or a readable placement
    solution file with decisions (InputError naming the file and field otherwise)."""
    if value is None or value in (BEST_KNOWN, LAGRANGIAN):
        return
    path = _warm_file(value)
    try:
        sol = load_solution(path)
    except InputError as err:  # the parameter check names the parameter: the file goes into the reason
        raise InputError(err.line(), field="params.warm_start") from None
    if sol.family != "placement" or sol.placement is None:
        raise InputError(f"{path}: placement: has no placement decisions to start from", field="params.warm_start")


def warm_start_decisions(instance, value: str | None, *, seed: int = 0, deadline: float | None = None,
                         until: float | None = None):
    """(referee value, decisions, source, fixed schedule or None) of the warm start, or None
    without one (``value`` None, or ``best-known`` for an instance no shipped set lists with a
    solution). ``lagrangian``: the construction of :mod:`placement.search.lagrange_list` (seeded;
    ``deadline`` cuts its random samples, ``until`` every phase: past it, no warm start). The file is
    read by the project's solution loader and
    checked against the instance; a solution for another instance or one the referee rejects is
    an InputError naming the file."""
    if value is None:
        return None
    if value == LAGRANGIAN:
        try:
            val, sched, _ = placement_lagrange_list.construct(instance, seed=seed, deadline=until,
                                                              sample_deadline=deadline)
        except (ModelTooLarge, Expired):  # as the start solvers' own model: they run and say so
            return None
        return val, to_decisions(sched), "lagrangian construction", fixed_rows(sched)
    path = sets.best_known_solution(content_hash(instance)) if value == BEST_KNOWN else _warm_file(value)
    if path is None:
        return None
    sol = load_solution(path, instance)
    if sol.placement is None:
        raise InputError("has no placement decisions to start from", file=str(path), field="placement")
    ev = evaluate(instance, sol.placement)
    if not ev.feasible:
        raise InputError(f"the referee rejects the warm start: {ev.violations[0]}", file=str(path), field="placement")
    return float(ev.primary_value), sol.placement, f"warm-start {path.name}", (sol.stats or {}).get(FIXED_KEY)


def fixed_from_stats(data: PlacementData, raw: Any) -> Schedule | None:
    """The fixed-allocation schedule a grown result recorded in its stats (``FIXED_KEY``:
    per task [cluster, start, cpu, gpu]), when it is one of this instance's schedules and
    breaks no rule; else None. Only a starting point: the warm decisions stay the candidate."""
    if not isinstance(raw, list) or len(raw) != data.num_tasks:
        return None
    out: list[tuple[Option, int]] = []
    for j, item in enumerate(raw):
        if not (isinstance(item, list) and len(item) == 4 and all(type(x) is int for x in item)):
            return None
        n, start, cpu, gpu = item
        o = next((o for o in data.options[j] if (o.cluster, o.cpu, o.gpu) == (n, cpu, gpu)), None)
        if o is None:
            return None
        out.append((o, start))
    return None if schedule_violations(data, out) else out


@register(SOLVER_NAME, families=("placement",), kind="heuristic",
          description="Large-neighbourhood search: the best of placement-milp / sjf / optimus (or a warm start), "
                      "improved by re-solving parts of the schedule with the fixed-allocation MILP (HiGHS), then "
                      "re-allocating moves; scored by the referee",
          params={"block": f"int: tasks freed per neighbourhood at first (default {BLOCK}; grows when stuck)",
                  "slack": f"int: start window of a freed task, steps after arrival (default {SLACK})",
                  "stall": f"int: neighbourhoods without improvement before the blocks grow (default {STALL})",
                  "sub_limit": f"seconds per sub-problem (default {SUB_LIMIT})",
                  "start_share": f"share of the time limit for placement-milp's start (default {START_SHARE})",
                  "iterations": "int: stop after this many neighbourhoods (default: the time limit; "
                                f"{DEFAULT_ITERATIONS} without one)",
                  "moves": f"neighbourhood moves: {', '.join(MOVES)} (default {DEFAULT_MOVES}; docs/formulations/"
                           "placement-search.md)",
                  "warm_start": f"start from this schedule instead of the start solvers: a placement solution "
                                f"file, {BEST_KNOWN!r} for the instance's shipped best-known solution, or "
                                f"{LAGRANGIAN!r} for the Lagrangian-guided list schedule (placement-lagrange)",
                  "grow": "bool: after the search, re-allocating moves scored by the referee (default true; "
                          "formulations/placement/search/grow.py)",
                  "cutoff": f"sub-MILP stopping rule: {', '.join(CUTOFFS)} (default {DEFAULT_CUTOFF}; off: to "
                            "optimality; bound: only solutions better than the incumbent; first: stop at the first)"},
          choices={"moves": MOVES, "cutoff": CUTOFFS},
          bounds={"block": (2, None), "slack": (1, None), "stall": (1, None), "sub_limit": (0.1, None),
                  "start_share": (0.05, 0.9), "iterations": (0, None)},
          check=lambda p: check_warm_start(p.get("warm_start")))
def solve(instance, *, time_limit: float | None = None, seed: int = 0, block: int = BLOCK, slack: int = SLACK,
          stall: int = STALL, sub_limit: float = SUB_LIMIT, start_share: float = START_SHARE,
          iterations: int | None = None, moves: str = DEFAULT_MOVES, warm_start: str | None = None,
          grow: bool = True, cutoff: str = DEFAULT_CUTOFF, **extra: Any):
    """Improve the best start schedule by large-neighbourhood search. A bad warm start is an
    InputError (raised before any work); nothing else raises."""
    t0 = time.perf_counter()
    params = {"block": block, "slack": slack, "stall": stall, "sub_limit": sub_limit, "start_share": start_share,
              "iterations": iterations, "moves": moves, "warm_start": warm_start, "grow": grow}
    if cutoff != DEFAULT_CUTOFF:  # recorded only when set: stored runs keep their parameter hash
        params["cutoff"] = cutoff
    stats: dict[str, Any] = {"message": ""}

    def result(status, decisions=None, objective=None):
        stats["solve_time"] = time.perf_counter() - t0
        return make_result(instance, SOLVER_NAME, status=status, decisions=decisions, seed=seed, params=params,
                           objective=objective, started=t0, stats=stats)

    if extra:
        stats["message"] = f"unknown parameters: {', '.join(sorted(extra))}"
        return result("error")
    deadline = None if time_limit is None else t0 + float(time_limit)
    if iterations is None and deadline is None:
        iterations = DEFAULT_ITERATIONS
    warm = warm_start_decisions(instance, warm_start, seed=seed,
                                deadline=None if deadline is None else t0 + 0.1 * (deadline - t0), until=deadline)
    if warm_start is not None:
        stats["warm_start"] = warm[2] if warm else (
            "too large for the construction: the start solvers" if warm_start == LAGRANGIAN
            else "none shipped: the start solvers")
    try:
        payload = instance.placement
        data = prepare(payload, deadline)
        warm_sched = None
        if warm and data is not None:
            warm_sched = fixed_from_stats(data, warm[3]) or to_schedule(payload, data, warm[1])
        starts = [warm[:3]] if warm else []
        if warm_sched is None:
            starts += _starts(instance, time_limit, float(start_share), seed)
        if not starts:
            stats["message"] = "no start solver found a feasible schedule"
            return result("timeout")
        starts.sort(key=lambda s: s[0])
        stats["starts"] = {name: v for v, _, name in starts}
        best_val, best_dec, source = starts[0]
        fixed = None
        if warm_sched is not None:
            fixed = (warm[0], warm_sched, warm[2])
        elif data is not None:
            fixed = next((s for s in (( v, to_schedule(payload, data, d), n) for v, d, n in starts) if s[1]), None)
        if fixed is not None:
            sched, info = improve(data, fixed[1], seed=seed, iterations=iterations,
                                  deadline=None if deadline is None else deadline - (GROW_RESERVE if grow else 0.0),
                                  block=int(block), slack=int(slack), stall=int(stall), sub_limit=float(sub_limit),
                                  moves=moves, types=[t.type for t in payload.tasks], cutoff=cutoff)
            stats.update(info, lns_from=fixed[2])
            cands = [to_decisions(sched)]
            if grow:
                lines, ginfo = placement_grow.grow(payload, data, sched, deadline=deadline)
                stats.update(ginfo)
                cands.append(placement_grow.to_decisions(lines))
            for i, dec in enumerate(cands):  # every candidate scored by the referee
                ev = evaluate(instance, dec)
                if ev.feasible and float(ev.primary_value) < best_val:
                    best_val, best_dec, source = float(ev.primary_value), dec, SOLVER_NAME
                    # a grown result keeps the fixed schedule it grew from: the next warm start
                    # continues the search from there (fixed_from_stats)
                    stats.pop(FIXED_KEY, None)
                    if i:
                        stats[FIXED_KEY] = fixed_rows(sched)
        stats["source"] = source
        return result("feasible", best_dec, best_val)
    except Exception as exc:  # never raise out of solve
        stats["message"] = f"{type(exc).__name__}: {exc}"
        return result("error")


__all__ = ["solve", "improve", "to_schedule", "neighbourhood", "warm_start_decisions", "check_warm_start",
           "fixed_from_stats", "FIXED_KEY", "CUTOFFS",
           "SOLVER_NAME", "BEST_KNOWN", "LAGRANGIAN"]
