"""The fixed-allocation model (``placement-milp``): TapFinger's offline problem (1)-(8) as a
time-indexed MILP — a RESTRICTION of the referee's re-allocating problem (every task keeps one
allocation from start to finish), registered as kind heuristic with ``bound="restriction"``: its
bound is reported as ``stats["restriction_bound"]``, never as the instance's.

With a known performance model a task's duration is a function of its (fixed) allocation,
so the paper's problem becomes a choice, for every task j, of one *option* (cluster n,
allocation (cpu, gpu), duration d in steps — the Pareto-minimal ones from
:func:`edgebench.instances.semantics.dominant_options`) and one start step t:

* binary ``y[j,k,t]`` = task j starts with its option k at step t;
* (1) minimise ``sum_j (t + d[j,k] - arrival_j) y[j,k,t]`` (total completion time);
* (3) every task starts exactly once;
* (5) per cluster, resource and step: the tasks running at that step fit the capacity;
* (7) eligibility and (8) the minimum hold by construction of the options;
* (2) single-task variant: at most one start per cluster per step (dropped for "multi").

Time is bounded by a proof (see ``docs/formulations/placement.md``): a feasible schedule
(the best greedy list schedule, then improved by a fix-and-optimise local search over blocks
of tasks) gives an upper bound UB on the optimum, and in any schedule at least as good task
j finishes by ``arrival_j + UB - sum_{k != j} min_d(k)``.  Inside that horizon the model
starts with a short start *window* per task plus one "late" variable ``z_j`` that stands
for every later start: it costs the least completion a late start can have and uses no
resources, so the windowed model is a relaxation of the full one (its optimum and its
best bound are valid lower bounds) and, when its optimum uses no ``z``, that optimum is
feasible for the full model and therefore optimal.  Windows of tasks that use ``z`` are
widened and the model solved again until no ``z`` is used, the best schedule found reaches
the relaxation's bound, or the time runs out (then the gap is reported).  Before the first
MILP the windows are chosen by LP: tasks whose late variable the LP relaxation uses are
widened until it uses none (cheap LP solves instead of MILP rounds).  Every capacity row
carries a clique row (at most one option using more than half of the capacity), valid for
every integer point, which tightens the LP.

Build (:func:`build_model`), solve (:func:`solve_model`) and decode (:func:`decode`) are
separate; :func:`solve` (registered as ``placement-milp``) runs them with the time limit.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

import numpy as np

from edgebench.formulations.linear import BACKENDS, LinearModel, LinearSolution, run_cpsat, solve_linear
from edgebench.formulations.placement.highs import lp_solution, lp_with_reduced_costs, solve_highs
from edgebench.formulations.placement.problem import (
    ModelTooLarge,
    Option,
    PHASE_MARGIN,
    PlacementData,
    Schedule,
    best_greedy,
    finish_bounds,
    prepare,
    remaining,
    repair_schedule,
    schedule_objective,
    schedule_violations,
    to_decisions,
)
from edgebench.registry import make_result, register

SOLVER_NAME = "placement-milp"
#: the dedicated CP-SAT model (optional intervals + cumulative), see :func:`solve_cpsat_intervals`
CPSAT_INTERVALS = "cpsat-intervals"
#: HiGHS through its own Python API, started from the best known schedule (MIP start)
HIGHSPY = "highspy"
PLACEMENT_BACKENDS = BACKENDS + (HIGHSPY, CPSAT_INTERVALS)
DEFAULT_BACKEND = "highspy"
#: initial start slack (steps after arrival) of every task in the windowed model
DEFAULT_WINDOW = 4
#: steps added to the windows of a late task's neighbours when widening
NEIGHBOUR_STEP = 2
#: local search before the exact solve: blocks of this many tasks (by arrival), half overlapping
LNS_BLOCK = 32
#: at most this many local-search passes (each only while the previous one improved)
LNS_PASSES = 12
#: a local-search pass that improves the objective by less than this (relative) moves on to larger blocks
LNS_ESCALATE = 0.01
#: the local search grows its blocks only on instances of at least this many blocks' worth of tasks
LNS_GROW_TASKS_PER_BLOCK = 4
#: coarse late-start ring variables (2 steps each) after every window
DEFAULT_RINGS = 0
#: share of the time limit the local search may use
LNS_SHARE = 0.25
#: at most this many LP rounds widen the windows before the first MILP (``lp_widen``)
LP_WIDEN_ROUNDS = 20
#: share of the time left that the LP window widening may use (the MILP needs the rest)
LP_WIDEN_SHARE = 0.3
#: share of the time limit that the greedy rules may use beyond the first one
GREEDY_SHARE = 0.1
#: the highspy backend switches HiGHS's presolve off for MILPs with more nonzeros than this:
#: on them presolve alone takes 25-40 s and overshoots the time limit (it checks the clock
#: only between passes); see docs/formulations/placement.md
PRESOLVE_MAX_NONZEROS = 500_000
MAX_MODEL_NONZEROS = 10_000_000
#: building a model costs about this per nonzero of :func:`model_nonzeros` (2-5 us measured on
#: the 2-core machine: 4.4 s for the 0.94 million of 1,000 synthetic-3 tasks at load 8): a first
#: build starts only when the time left covers it and half a second of solving (issues 43/44:
#: the build is not interruptible, and 1,000 tasks at a 5 s limit took 9.2 s)
BUILD_SECONDS_PER_NONZERO = 4e-6


# --------------------------------------------------------------------------------------
# Build
# --------------------------------------------------------------------------------------


@dataclass
class BuiltModel:
    """The MILP and the maps from its variables back to decisions."""

    model: LinearModel
    data: PlacementData
    #: per y variable (task, option index, start); z variables are not listed here
    y_vars: list[int] = field(default_factory=list)
    y_task: list[int] = field(default_factory=list)
    y_option: list[int] = field(default_factory=list)
    y_start: list[int] = field(default_factory=list)
    #: task -> its late variable z_j (only tasks whose window is shorter than their horizon)
    late_vars: dict[int, int] = field(default_factory=dict)
    late_cost: dict[int, int] = field(default_factory=dict)
    #: coarse late starts: (var, task, option index, first start s1, last start s2)
    ring_vars: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    #: per task: last explicit start step, latest allowed finish
    last_start: list[int] = field(default_factory=list)
    finish_by: list[int] = field(default_factory=list)

    @property
    def horizon(self) -> int:
        return max(self.finish_by) if self.finish_by else 0

    @property
    def is_relaxation(self) -> bool:
        return bool(self.late_vars) or bool(self.ring_vars)


def model_nonzeros(data: PlacementData, last_start: Sequence[int],
                   fixed: Sequence[tuple[Option, int] | None] | None = None) -> int:
    """The model's nonzeros at most, counted before any row is built (issue 28): every start
    variable has one entry per capacity row of each step it runs (3 resources) plus its
    assignment and objective entries."""
    return sum(max(0, last_start[j] - data.arrivals[j] + 1) * sum(3 * o.steps + 2 for o in data.options[j])
               for j in range(data.num_tasks) if fixed is None or fixed[j] is None)


def build_model(data: PlacementData, finish_by: Sequence[int], last_start: Sequence[int] | None = None, *,
                fixed: Sequence[tuple[Option, int] | None] | None = None, late: bool = True, rings: int = 0,
                ring_width: int = 2, cliques: bool = True, name: str = "placement") -> BuiltModel:
    """The time-indexed MILP.  Task j may finish by ``finish_by[j]``; explicit starts are
    ``arrival_j .. last_start[j]`` (None: up to the horizon, i.e. the full model).  With
    ``late`` a late variable z_j stands for every later start when the window is shorter than
    the horizon (the model is then a relaxation); without it the window is a hard limit (a
    restriction).  Tasks with an entry in ``fixed`` keep that (option, start): they are
    constants that use capacity and start slots (a sub-problem for local search).  With
    ``cliques`` every capacity row gets its clique inequality: the options using more than
    half of the (residual) capacity at that step, at most one of them (valid: two of them
    would exceed it)."""
    J = data.num_tasks
    if last_start is None:
        last_start = [f for f in finish_by]
    nonzeros = model_nonzeros(data, last_start, fixed)
    if nonzeros > MAX_MODEL_NONZEROS:
        raise ModelTooLarge(f"instance too large for the exact placement model: up to {nonzeros:,} nonzeros "
                            f"(start windows x options x steps), limit {MAX_MODEL_NONZEROS:,}")
    m = LinearModel(name=name, sense="min")
    bm = BuiltModel(model=m, data=data, last_start=list(last_start), finish_by=list(finish_by))
    # capacity and start slots taken by fixed tasks
    used: dict[tuple[int, int], list[int]] = {}
    taken: set[tuple[int, int]] = set()
    const = 0
    free = list(range(J))
    if fixed is not None:
        free = [j for j in range(J) if fixed[j] is None]
        for j in range(J):
            if fixed[j] is None:
                continue
            o, t0 = fixed[j]
            const += t0 + o.steps - data.arrivals[j]
            taken.add((o.cluster, t0))
            for u in range(t0, t0 + o.steps):
                row = used.setdefault((o.cluster, u), [0, 0, 0])
                row[0] += o.cpu
                row[1] += o.gpu
                row[2] += o.memory
    residual: dict[tuple[int, int], tuple[int, int, int]] = {}

    def room(n: int, u: int) -> tuple[int, int, int]:
        r = residual.get((n, u))
        if r is None:
            c, g, mm = data.capacity[n]
            uc, ug, um = used.get((n, u), (0, 0, 0))
            r = (c - uc, g - ug, (mm - um) if mm is not None else 1 << 60)
            residual[(n, u)] = r
        return r

    obj: list[tuple[int, float]] = []
    # per (cluster, step): contributions (var, task, cpu, gpu, mem)
    running: dict[tuple[int, int], list[tuple[int, int, int, int, int]]] = {}
    starting: dict[tuple[int, int], list[tuple[int, int]]] = {}
    assign_rows: dict[int, list[tuple[int, float]]] = {j: [] for j in free}
    for j in free:
        a = data.arrivals[j]
        late_min = None
        for k, o in enumerate(data.options[j]):
            hi_start = finish_by[j] - o.steps
            for t in range(a, min(last_start[j], hi_start) + 1):
                if used or taken:
                    if data.single and (o.cluster, t) in taken:
                        continue
                    if any(rc < o.cpu or rg < o.gpu or rm < o.memory
                           for rc, rg, rm in (room(o.cluster, u) for u in range(t, t + o.steps))):
                        continue
                v = m.add_binary(f"y[{j},{k},{t}]")
                bm.y_vars.append(v)
                bm.y_task.append(j)
                bm.y_option.append(k)
                bm.y_start.append(t)
                assign_rows[j].append((v, 1.0))
                obj.append((v, float(t + o.steps - a)))
                for u in range(t, t + o.steps):
                    running.setdefault((o.cluster, u), []).append((v, j, o.cpu, o.gpu, o.memory))
                if data.single:
                    starting.setdefault((o.cluster, t), []).append((v, j))
            first_late = last_start[j] + 1
            if late and rings > 0:
                # coarse "ring" variables: a start somewhere in [s1, s2] costs at least
                # s1 + d - a and surely occupies [s2, s1 + d)
                for i in range(rings):
                    s1 = last_start[j] + 1 + i * ring_width
                    if s1 > hi_start:
                        break
                    s2 = min(s1 + ring_width - 1, hi_start)
                    v = m.add_binary(f"r[{j},{k},{s1}]")
                    bm.ring_vars.append((v, j, k, s1, s2))
                    assign_rows[j].append((v, 1.0))
                    obj.append((v, float(s1 + o.steps - a)))
                    for u in range(s2, s1 + o.steps):
                        running.setdefault((o.cluster, u), []).append((v, j, o.cpu, o.gpu, o.memory))
                    if data.single and s1 == s2:
                        starting.setdefault((o.cluster, s1), []).append((v, j))
                    first_late = s2 + 1
            if late and first_late <= hi_start:
                c = first_late + o.steps - a
                late_min = c if late_min is None else min(late_min, c)
        if late_min is not None:
            z = m.add_binary(f"z[{j}]")
            bm.late_vars[j] = z
            bm.late_cost[j] = int(late_min)
            assign_rows[j].append((z, 1.0))
            obj.append((z, float(late_min)))
    # (3) each task placed exactly once (a start in its window, or late)
    for j in free:
        m.add_eq(assign_rows[j], 1.0, name=f"assign[{j}]")
    # (5) capacity per cluster, resource and step; rows that can never bind are left out
    for (n, u) in sorted(running):
        items = running[(n, u)]
        caps = room(n, u) if (used or taken) else data.capacity[n]
        for r, rname in ((0, "cpu"), (1, "gpu"), (2, "mem")):
            cap = caps[r]
            if cap is None or (r == 2 and data.capacity[n][2] is None):
                continue
            most: dict[int, int] = {}
            for it in items:
                amt = it[2 + r]
                if amt > most.get(it[1], 0):
                    most[it[1]] = amt
            if sum(most.values()) <= cap:
                continue
            m.add_le(((it[0], float(it[2 + r])) for it in items if it[2 + r] > 0), float(cap),
                     name=f"cap_{rname}[{n},{u}]")
            if cliques:
                # two options that each use more than half the capacity never run together
                big = [it for it in items if 2 * it[2 + r] > cap]
                if len({it[1] for it in big}) > 1:
                    m.add_le(((it[0], 1.0) for it in big), 1.0, name=f"clique_{rname}[{n},{u}]")
    # (2) single-task variant: at most one start per cluster per step
    if data.single:
        for (n, t) in sorted(starting):
            items = starting[(n, t)]
            if len({j for _, j in items}) < 2:
                continue
            m.add_le(((v, 1.0) for v, _ in items), 1.0, name=f"single[{n},{t}]")
    m.set_objective(obj, constant=float(const))
    return bm


def hint_vector(bm: BuiltModel, schedule: Sequence[tuple[Option, int] | None]) -> np.ndarray | None:
    """The model's variable values of a schedule (None if some task's start is not a variable:
    outside its window or taken by a fixed task)."""
    look = {(j, k, t): v for v, j, k, t in zip(bm.y_vars, bm.y_task, bm.y_option, bm.y_start)}
    x = np.zeros(bm.model.num_vars)
    tasks = set(bm.y_task) | set(bm.late_vars)
    for j in tasks:
        item = schedule[j]
        if item is None:
            return None
        o, t = item
        v = look.get((j, bm.data.options[j].index(o), t))
        if v is None:
            return None
        x[v] = 1.0
    return x


def widen_windows(data: PlacementData, last_start: list[int], late: Sequence[int], finish_by: Sequence[int],
                  neighbour_step: int = NEIGHBOUR_STEP) -> None:
    """Widen the start windows after the relaxation used the late variables of ``late``:
    a late task's slack doubles (+1), and every task sharing an eligible cluster with it whose
    window overlaps the widened one gains ``neighbour_step`` steps.  Windows never pass the
    proven horizon."""
    clusters = [{o.cluster for o in opts} for opts in data.options]
    grown = set()
    for j in late:
        a = data.arrivals[j]
        old_hi = last_start[j]
        last_start[j] = min(a + 2 * (old_hi - a + 1), finish_by[j])
        grown.add(j)
        for k in range(data.num_tasks):
            if k in grown or not (clusters[k] & clusters[j]):
                continue
            if data.arrivals[k] <= last_start[j] and last_start[k] >= a:
                last_start[k] = min(last_start[k] + neighbour_step, finish_by[k])
                grown.add(k)


def widen_by_lp(data: PlacementData, finish_by: Sequence[int], last_start: list[int],
                schedule: Sequence[tuple[Option, int] | None] | None = None, *, rings: int = 0,
                deadline: float | None = None, threads: int = 1, seed: int = 0, rounds: int = LP_WIDEN_ROUNDS,
                info: dict[str, Any] | None = None) -> float:
    """Cheap window choice before the first MILP: solve the windowed model's LP relaxation and
    widen (:func:`widen_windows`) the tasks whose late variable it uses, until it uses none,
    ``rounds`` are done or the time is up.  ``last_start`` is changed in place.  Returns the
    best LP value seen (a valid lower bound: each LP relaxes a relaxation of the full
    model), or -inf."""
    best = -math.inf
    info = {} if info is None else info
    info.update({"rounds": 0, "lp": None, "widened": 0})
    last_round = 0.0
    for _ in range(rounds):
        rem = remaining(deadline)
        if rem is not None and (rem <= 1.0 or rem < PHASE_MARGIN * last_round):
            info["stopped"] = "time"  # the next round (build + LP) would not fit
            break
        tr = time.perf_counter()
        if schedule is not None:
            for j, item in enumerate(schedule):
                if item is not None:
                    last_start[j] = max(last_start[j], item[1])
        bm = build_model(data, finish_by, last_start, rings=rings)
        rem = remaining(deadline)
        if rem is not None and rem <= 0.5:
            info["stopped"] = "time"
            break
        lp = lp_solution(bm.model, time_limit=rem, threads=threads, seed=seed)
        info["rounds"] += 1
        last_round = time.perf_counter() - tr
        if lp is None:
            break
        best = max(best, lp[0])
        info["lp"] = lp[0]
        x = lp[1]
        late = [j for j, z in bm.late_vars.items() if x[z] > 1e-6]
        late += [j for v, j, _, _, _ in bm.ring_vars if x[v] > 1e-6 and j not in late]
        if not late:
            break
        info["widened"] += len(late)
        widen_windows(data, last_start, late, finish_by)
    return best


# --------------------------------------------------------------------------------------
# Solve and decode
# --------------------------------------------------------------------------------------


def solve_model(bm: BuiltModel, backend: str, *, time_limit: float | None = None, threads: int = 1, seed: int = 0,
                mip_gap: float = 1e-9, hint: Sequence[tuple[Option, int] | None] | None = None,
                options: dict[str, Any] | None = None) -> LinearSolution:
    """Solve the built MILP with one backend (never raises).  ``hint`` (a schedule) is used as
    a MIP start by the ``highspy`` backend when it lies inside the model's windows; ``options``
    are further HiGHS options (highspy backend only)."""
    if backend == CPSAT_INTERVALS:
        return LinearSolution("error", None, None, None, 0.0, backend,
                              "cpsat-intervals is a separate model; use solve_cpsat_intervals", bm.model.size())
    if backend == HIGHSPY:
        x = hint_vector(bm, hint) if hint is not None else None
        big = bm.model.size()["nonzeros"] > PRESOLVE_MAX_NONZEROS
        sol = solve_highs(bm.model, hint=x, time_limit=time_limit, threads=threads, seed=seed, mip_gap=mip_gap,
                          presolve=not big, options=options)
        sol.backend = HIGHSPY
        return sol
    return solve_linear(bm.model, backend, time_limit=time_limit, threads=threads, seed=seed, mip_gap=mip_gap)


def improve_schedule(data: PlacementData, schedule: Schedule, finish_by: Sequence[int], *, backend: str,
                     block: int = LNS_BLOCK, slack: int = DEFAULT_WINDOW, deadline: float | None = None,
                     block_limit: float | None = None, threads: int = 1, seed: int = 0,
                     horizon: int | None = None, passes: int = LNS_PASSES) -> tuple[Schedule, dict[str, Any]]:
    """Local search (fix and re-optimise): blocks of ``block`` tasks in arrival order, half
    overlapping; the tasks of a block are freed, all others stay fixed, and the block's
    restricted model (windows ``arrival .. arrival + max(slack, current delay + 1)``, no late
    variables) is solved; a better schedule replaces the current one.  Up to ``passes``
    passes over the tasks while time is left: after a pass that improved by at least
    ``LNS_ESCALATE`` (relative), the next one shifts the blocks by a quarter block (other
    neighbours meet); after one that did not, the blocks grow (1.5x, then 2x, slack at least
    doubled; only with at least ``LNS_GROW_TASKS_PER_BLOCK`` blocks' worth of tasks); the
    search ends when a pass with the largest blocks improves nothing."""
    J = data.num_tasks
    order = sorted(range(J), key=lambda j: (data.arrivals[j], j))
    cur = list(schedule)
    cur_val = schedule_objective(data, cur)
    info: dict[str, Any] = {"start": cur_val, "blocks": 0, "improved": 0, "passes": 0}
    # (block, slack) levels: the next level starts when a pass of the current one improves nothing
    # (larger blocks only on instances of at least LNS_GROW_TASKS_PER_BLOCK blocks: on smaller ones the
    # whole MILP improves the schedule better than the larger blocks' hard sub-MILPs)
    levels = [(block, slack)]
    if J >= LNS_GROW_TASKS_PER_BLOCK * block:
        levels += [(b, max(2 * slack, 2 * DEFAULT_WINDOW)) for b in (block * 3 // 2, block * 2)]
    level = shift = 0
    for _ in range(max(1, passes)):
        blk, slk = levels[level]
        step = max(1, blk // 2)
        val_before = cur_val
        for first in range(shift, max(1, J - step), step):
            rem = remaining(deadline)
            if rem is not None and rem <= 0.05:
                break
            free = set(order[first:first + blk])
            fixed = [None if j in free else cur[j] for j in range(J)]
            last = [data.arrivals[j] + max(slk, cur[j][1] - data.arrivals[j] + 1) for j in range(J)]
            bm = build_model(data, finish_by, last, fixed=fixed, late=False, name="placement-lns")
            tl = rem if block_limit is None else (block_limit if rem is None else min(rem, block_limit))
            sol = solve_model(bm, backend, time_limit=tl, threads=threads, seed=seed, hint=cur)
            info["blocks"] += 1
            if sol.values is None:
                continue
            part = decode_partial(bm, sol.values)
            new = [part[j] if part[j] is not None else cur[j] for j in range(J)]
            val = schedule_objective(data, new)
            if val < cur_val and not schedule_violations(data, new, horizon):
                cur, cur_val = new, val
                info["improved"] += 1
        info["passes"] += 1
        rem = remaining(deadline)
        if rem is not None and rem <= 0.05:
            break
        last_level = level + 1 == len(levels)
        if cur_val == val_before and last_level:
            break
        if not last_level and cur_val > (1 - LNS_ESCALATE) * val_before:
            level, shift = level + 1, 0
        else:
            shift = (step // 2) if shift == 0 else 0  # the next pass's blocks straddle this one's
    info["end"] = cur_val
    return cur, info


def decode_partial(bm: BuiltModel, values: Sequence[float]) -> list[tuple[Option, int] | None]:
    """Per task its (option, start), or None when it took its late variable."""
    vals = np.asarray(values, dtype=float)
    chosen: list[tuple[Option, int] | None] = [None] * bm.data.num_tasks
    for v, j, k, t in zip(bm.y_vars, bm.y_task, bm.y_option, bm.y_start):
        if vals[v] > 0.5:
            chosen[j] = (bm.data.options[j][k], t)
    return chosen


def decode(bm: BuiltModel, values: Sequence[float]) -> tuple[Schedule | None, list[int]]:
    """(schedule, late tasks): the schedule is None when some task took a late or ring
    variable (then the point is a solution of the relaxation only)."""
    chosen = decode_partial(bm, values)
    late = [j for j, c in enumerate(chosen) if c is None]
    if late:
        return None, late
    return chosen, []  # type: ignore[return-value]


def ring_starts(bm: BuiltModel, values: Sequence[float]) -> dict[int, int]:
    """Task -> last start s2 of the ring variable it took (tasks on z are not listed)."""
    vals = np.asarray(values, dtype=float)
    return {j: s2 for v, j, k, s1, s2 in bm.ring_vars if vals[v] > 0.5}


def lp_relaxation_bound(bm: BuiltModel, *, time_limit: float | None = None, threads: int = 1,
                        seed: int = 0) -> float | None:
    """Optimal value of the LP relaxation (a valid lower bound), None if not solved."""
    lp = lp_with_reduced_costs(bm.model, time_limit=time_limit, threads=threads, seed=seed)
    return None if lp is None else lp[0]


# --------------------------------------------------------------------------------------
# The dedicated CP-SAT model
# --------------------------------------------------------------------------------------


def cpsat_intervals_model(data: PlacementData, finish_by: Sequence[int], hint: Schedule | None = None):
    """The problem as a CP-SAT model: per task and option one optional interval of fixed size d
    (start in [arrival, finish_by - d]), exactly one present; per cluster and resource a
    cumulative; in the single-task variant the unit intervals [start, start + 1) of a cluster's
    tasks do not overlap. Objective: the total completion time (from arrival). ``hint``: a
    schedule to start from, hinted completely (an absent option's start sits at its arrival, as
    the model pins it). Returns (model, choice): ``choice[j]`` lists task j's (presence, start,
    option); a task with no option that fits makes the model infeasible."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    expr = []
    per_cluster: dict[int, list[tuple[Any, Option]]] = {}
    starts_cluster: dict[int, list[Any]] = {}
    choice: list[list[tuple[Any, Any, Option]]] = []
    for j in range(data.num_tasks):
        a = data.arrivals[j]
        mine = []
        for k, o in enumerate(data.options[j]):
            hi = finish_by[j] - o.steps
            if hi < a:
                continue
            p = m.NewBoolVar(f"p[{j},{k}]")
            s = m.NewIntVar(a, hi, f"s[{j},{k}]")
            iv = m.NewOptionalFixedSizeIntervalVar(s, o.steps, p, f"iv[{j},{k}]")
            per_cluster.setdefault(o.cluster, []).append((iv, o))
            if data.single:
                starts_cluster.setdefault(o.cluster, []).append(m.NewOptionalFixedSizeIntervalVar(s, 1, p, ""))
            # completion of task j = sum_k p_k * (s_k + d_k - a): s_k is free when p_k = 0, so pin
            # it to its lower bound then: (s_k - a) <= (hi - a) * p_k
            m.Add(s - a <= (hi - a) * p)
            expr.append(s - a + o.steps * p)
            mine.append((p, s, o))
            if hint is not None:
                ho, hs = hint[j]
                m.AddHint(p, o == ho)
                m.AddHint(s, hs if o == ho else a)
        choice.append(mine)
        if not mine:
            m.AddBoolOr([])  # no option fits in the horizon: infeasible
            continue
        m.AddExactlyOne([p for p, _, _ in mine])
    for n, items in per_cluster.items():
        cc, cg, cm = data.capacity[n]
        ivs = [iv for iv, _ in items]
        m.AddCumulative(ivs, [o.cpu for _, o in items], cc)
        m.AddCumulative(ivs, [o.gpu for _, o in items], cg)
        if cm is not None and any(o.memory for _, o in items):
            m.AddCumulative(ivs, [o.memory for _, o in items], cm)
    if data.single:
        for n, ivs in starts_cluster.items():
            m.AddNoOverlap(ivs)
    m.Minimize(sum(expr))
    return m, choice


def cpsat_schedule(value, choice) -> Schedule:
    """The schedule of a CP-SAT solution of :func:`cpsat_intervals_model`: ``value`` reads a
    variable (a solver's or a solution callback's ``Value``)."""
    schedule = []
    for mine in choice:
        for p, s, o in mine:
            if value(p):
                schedule.append((o, int(value(s))))
                break
    return schedule


def solve_cpsat_intervals(data: PlacementData, finish_by: Sequence[int], *, time_limit: float | None = None,
                          threads: int = 1, seed: int = 0, hint: Schedule | None = None,
                          log: bool = False) -> tuple[str, Schedule | None, float | None, dict[str, int], str]:
    """Solve :func:`cpsat_intervals_model` with CP-SAT's default portfolio. Returns (status,
    schedule, bound, size, message)."""
    from ortools.sat.python import cp_model

    m, choice = cpsat_intervals_model(data, finish_by, hint)
    solver, code, status = run_cpsat(m, time_limit=time_limit, threads=threads, seed=seed, log=log)
    proto = m.Proto()
    size = {"variables": len(proto.variables), "integer_variables": len(proto.variables),
            "constraints": len(proto.constraints), "nonzeros": int(sum(len(c.linear.vars) for c in proto.constraints))}
    schedule = None
    bound = None
    if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        schedule = cpsat_schedule(solver.Value, choice)
        bound = float(solver.BestObjectiveBound())
    return status, schedule, bound, size, solver.StatusName(code)


# --------------------------------------------------------------------------------------
# The registered solver
# --------------------------------------------------------------------------------------


def _num(x: Any) -> float | None:
    return None if x is None else float(x)


def _parse_window(window: Any) -> int | None:
    if window is None or window == "auto":
        return DEFAULT_WINDOW
    if window == "full":
        return None
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise ValueError(f"window must be a non-negative int, 'auto' or 'full', got {window!r}")
    return int(window)


def _check_params(backend, threads, horizon, lp_bound, window, mip_gap, improve, rings, lp_widen,
                  extra) -> int | None:
    if extra:
        raise ValueError(f"unknown parameter(s) {', '.join(sorted(extra))} (known: backend, threads, horizon, "
                         "lp_bound, window, mip_gap, improve, rings, lp_widen)")
    if isinstance(rings, bool) or not isinstance(rings, int) or rings < 0:
        raise ValueError(f"rings must be a non-negative int, got {rings!r}")
    if backend not in PLACEMENT_BACKENDS:
        raise ValueError(f"unknown backend {backend!r} (known: {', '.join(PLACEMENT_BACKENDS)})")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    if horizon is not None and (isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 0):
        raise ValueError(f"horizon must be a non-negative int, got {horizon!r}")
    if not isinstance(lp_bound, bool) or not isinstance(improve, bool) or not isinstance(lp_widen, bool):
        raise ValueError("lp_bound, improve and lp_widen must be true or false")
    if isinstance(mip_gap, bool) or not isinstance(mip_gap, (int, float)) or not 0 <= mip_gap < 1:
        raise ValueError(f"mip_gap must be a number in [0, 1), got {mip_gap!r}")
    return _parse_window(window)


@register(SOLVER_NAME, families=("placement",), kind="heuristic", time_limit=300.0, bound="restriction",
          description="Fixed-allocation MILP (TapFinger's offline problem (1)-(8)), a restriction of the referee's "
                      "re-allocating problem: optimal over fixed-allocation schedules only, a heuristic for the "
                      "referee's problem; its bound is the restriction's (stats restriction_bound), never reported "
                      "as the instance's (placement-exact's is)",
          params={
              "backend": f"one of {', '.join(PLACEMENT_BACKENDS)} (default {DEFAULT_BACKEND})",
              "threads": "solver threads (default 1)",
              "horizon": "int: every task must finish by this step (default: the proven horizon from the greedy "
                         "upper bound; a shorter one is reported as binding)",
              "lp_bound": "bool: solve the LP relaxation for a bound when the MILP does not close (default true)",
              "window": f"initial start slack per task: int, 'auto' ({DEFAULT_WINDOW}, or more where the best "
                        "known schedule waits longer) or 'full' (the plain model over the whole proven horizon)",
              "mip_gap": "relative MIP gap at which the backend stops (default 1e-9: prove optimality)",
              "improve": f"bool: local search over blocks of {LNS_BLOCK} tasks before the exact solve (default true)",
              "rings": f"int: coarse 2-step late-start variables after each window (default {DEFAULT_RINGS})",
              "lp_widen": "bool: before the first MILP, widen the windows of the tasks whose late variable the "
                          "windowed model's LP relaxation uses, until it uses none (default true)",
          }, choices={"backend": PLACEMENT_BACKENDS}, types={"window": int | Literal["auto", "full"]},
          bounds={"threads": (1, None), "mip_gap": (0, None), "horizon": (1, None), "rings": (0, None),
                  "window": (0, None)})
def solve(instance, *, time_limit: float | None = None, seed: int = 0, backend: str = DEFAULT_BACKEND,
          threads: int = 1, horizon: int | None = None, lp_bound: bool = True, window: Any = "auto",
          mip_gap: float = 1e-9, improve: bool = True, rings: int = None,  # type: ignore[assignment]
          lp_widen: bool = True, **extra: Any):
    """Solve the fixed-allocation model (a restriction of the referee's problem); never raises
    (failures are statuses). Its bound is the restriction's: ``stats["restriction_bound"]``."""
    t0 = time.perf_counter()
    if rings is None:
        rings = DEFAULT_RINGS
    params = {"backend": backend, "threads": threads, "horizon": horizon, "lp_bound": lp_bound, "window": window,
              "mip_gap": mip_gap, "improve": improve, "rings": rings, "lp_widen": lp_widen}
    stats: dict[str, Any] = {"backend": backend, "mip_gap": None, "model_size": {}, "message": ""}

    def result(status, schedule=None, objective=None, bound=None):
        # the model's bound holds for fixed-allocation schedules only: it is reported as the
        # restriction's (stats), never as the instance's (the Result's bound stays None)
        decisions = to_decisions(schedule) if schedule is not None else None
        stats["solve_time"] = time.perf_counter() - t0
        stats["restriction_bound"] = bound
        return make_result(instance, SOLVER_NAME, status=status, decisions=decisions, seed=seed, params=params,
                           objective=objective, bound=None, started=t0, stats=stats)

    try:
        slack0 = _check_params(backend, threads, horizon, lp_bound, window, mip_gap, improve, rings, lp_widen,
                               extra)
    except ValueError as exc:
        stats["message"] = str(exc)
        return result("error")
    try:
        return _solve(instance.placement, t0, time_limit, seed, backend, threads, horizon, lp_bound, slack0,
                      float(mip_gap), improve, rings, stats, result, lp_widen=lp_widen)
    except Exception as exc:  # never raise out of solve
        stats["message"] = f"{type(exc).__name__}: {exc}"
        return result("error")


class _Incumbent:
    """The best truly feasible schedule so far and where it came from."""

    def __init__(self, data: PlacementData, horizon: int | None):
        self.data = data
        self.horizon = horizon
        self.schedule: Schedule | None = None
        self.value: int | None = None
        self.source: str | None = None

    def offer(self, schedule: Schedule | None, source: str) -> bool:
        if schedule is None or schedule_violations(self.data, schedule, self.horizon):
            return False
        val = schedule_objective(self.data, schedule)
        if self.value is None or val < self.value:
            self.schedule, self.value, self.source = list(schedule), val, source
            return True
        return False


def _solve(payload, t0, time_limit, seed, backend, threads, horizon, lp_bound, slack0, mip_gap, improve, rings,
           stats, result, lp_widen=True):
    deadline = None if time_limit is None else t0 + float(time_limit)
    data = prepare(payload, deadline)
    stats["prepare_time"] = time.perf_counter() - t0
    if data is None:
        stats["message"] = "no schedule: the time limit ran out while computing the tasks' options"
        return result("timeout")
    lb0 = data.trivial_bound
    inc = _Incumbent(data, horizon)
    # ---- upper bound and the proven horizon ------------------------------------------
    greedy = best_greedy(data, None if deadline is None else t0 + GREEDY_SHARE * float(time_limit))
    ub = schedule_objective(data, greedy)
    proven_finish = finish_bounds(data, ub)
    proven_horizon = max(proven_finish)
    inc.offer(greedy, "greedy")
    if horizon is not None:
        finish_by = [min(f, horizon) for f in proven_finish]
        stats["horizon_binds"] = horizon < proven_horizon
    else:
        finish_by = proven_finish
        stats["horizon_binds"] = False
    stats.update({"greedy_objective": ub, "trivial_bound": lb0, "proven_horizon": proven_horizon,
                  "horizon": max(finish_by), "greedy_time": time.perf_counter() - t0})
    if stats["horizon_binds"]:
        stats["horizon_note"] = (f"the given horizon {horizon} is shorter than the proven horizon {proven_horizon}: "
                                 "the result is optimal for the horizon-restricted problem only")
    bound = float(lb0)
    no_room = [j for j in range(data.num_tasks)
               if not any(data.arrivals[j] + o.steps <= finish_by[j] for o in data.options[j])]
    if no_room:
        stats["message"] = (f"infeasible: task {no_room[0]} cannot finish by the horizon {max(finish_by)} "
                            f"at any allocation ({len(no_room)} such task(s))")
        return result("infeasible")
    # ---- local search from the greedy (a better incumbent and better-placed windows) ----
    if improve and inc.schedule is not None and data.num_tasks > LNS_BLOCK and slack0 is not None:
        lns_backend = HIGHSPY if backend == CPSAT_INTERVALS else backend
        lns_deadline = None if deadline is None else time.perf_counter() + LNS_SHARE * remaining(deadline)
        tl = time.perf_counter()
        sched, info = improve_schedule(data, inc.schedule, finish_by, backend=lns_backend, slack=slack0,
                                       deadline=lns_deadline, block_limit=30.0, threads=threads, seed=seed,
                                       horizon=horizon)
        info["time"] = time.perf_counter() - tl
        stats["local_search"] = info
        if inc.offer(sched, "local-search"):
            # a better UB gives a shorter proven horizon
            finish_by = [min(f, g) for f, g in zip(finish_by, finish_bounds(data, inc.value))]
            stats["proven_horizon"] = max(finish_bounds(data, inc.value))
            stats["horizon"] = max(finish_by)
            if horizon is not None and horizon >= stats["proven_horizon"]:
                stats["horizon_binds"] = False
                stats.pop("horizon_note", None)
    # ---- windows ----------------------------------------------------------------------
    if slack0 is None:
        last_start = list(finish_by)
    else:
        last_start = [data.arrivals[j] + max(slack0, (inc.schedule[j][1] - data.arrivals[j] + 1)
                                             if inc.schedule is not None else 0)
                      for j in range(data.num_tasks)]
    if lp_widen and slack0 is not None and backend != CPSAT_INTERVALS:
        tw = time.perf_counter()
        rem = remaining(deadline)
        widen_deadline = None if rem is None else time.perf_counter() + LP_WIDEN_SHARE * rem
        bound = max(bound, widen_by_lp(data, finish_by, last_start, inc.schedule, rings=rings,
                                       deadline=widen_deadline, threads=threads, seed=seed,
                                       info=stats.setdefault("lp_widen", {})))
        stats["lp_widen"]["time"] = time.perf_counter() - tw
    iterations: list[dict[str, Any]] = []
    stats["iterations"] = iterations
    final_status = None
    last_bm = None
    last_build = 0.0
    while True:
        rem = remaining(deadline)
        if rem is not None and (rem <= 0.5 or rem < PHASE_MARGIN * last_build):
            break  # no time for another build and solve
        tb = time.perf_counter()
        if backend == CPSAT_INTERVALS:
            st, sched, bnd, size, msg = solve_cpsat_intervals(data, finish_by, time_limit=rem, threads=threads,
                                                              seed=seed, hint=inc.schedule)
            stats["model_size"] = size
            iterations.append({"status": st, "bound": _num(bnd), "message": msg, "solve_time": time.perf_counter() - tb,
                               "size": size, "late": 0})
            if st == "error":
                stats["message"] = msg
                return result("error")
            final_status = st
            if bnd is not None:
                bound = max(bound, bnd)
            inc.offer(sched, backend)
            break
        # keep the incumbent inside the windows (so that it stays a point of the model)
        if inc.schedule is not None:
            for j, (o, t) in enumerate(inc.schedule):
                last_start[j] = max(last_start[j], t)
        if rem is not None and not last_build and rem < BUILD_SECONDS_PER_NONZERO * model_nonzeros(data, last_start) + 0.5:
            stats["skipped_build"] = "the time left is below the model's estimated build time"
            break  # the first build would pass the deadline (later ones: PHASE_MARGIN above)
        bm = build_model(data, finish_by, last_start, rings=rings)
        last_bm = bm
        build_time = last_build = time.perf_counter() - tb
        stats["model_size"] = bm.model.size()
        rem = remaining(deadline)
        if rem is not None and rem <= 0.5:
            break
        sol = solve_model(bm, backend, time_limit=rem, threads=threads, seed=seed, mip_gap=mip_gap,
                          hint=inc.schedule)
        it = {"status": sol.status, "objective": _num(sol.objective), "bound": _num(sol.bound), "build_time": build_time,
              "solve_time": sol.runtime, "size": bm.model.size(), "late_vars": len(bm.late_vars), "late": 0,
              "message": sol.message}
        iterations.append(it)
        if sol.status == "error":
            if rem is not None and sol.runtime >= 0.9 * rem:
                # some backends report a time limit without a solution as an abnormal end
                final_status = "timeout"
                it["message"] += " (at the time limit: read as a timeout)"
                break
            stats["message"] = sol.message
            return result("error")
        if sol.status == "infeasible":
            final_status = "infeasible"  # the windowed model is a relaxation: the full one is infeasible too
            break
        if sol.bound is not None and math.isfinite(sol.bound):
            bound = max(bound, float(sol.bound))
        late: list[int] = []
        if sol.values is not None:
            sched, late = decode(bm, sol.values)
            it["late"] = len(late)
            if sched is None:  # complete the relaxation's point by list-scheduling its late tasks
                inc.offer(repair_schedule(data, decode_partial(bm, sol.values)), f"{backend}+repair")
            else:
                inc.offer(sched, backend)
        closed = inc.value is not None and inc.value <= math.ceil(bound - 1e-6)
        if sol.status == "optimal" and (not late or closed):
            final_status = "optimal"
            break
        if sol.status == "optimal" and late:
            # the relaxation's optimum starts some tasks after their window: widen those and
            # their neighbours (a later start of one task pushes the next ones)
            on_ring = ring_starts(bm, sol.values) if sol.values is not None else {}
            for j, s2 in on_ring.items():
                last_start[j] = max(last_start[j], s2)
            on_z = [j for j in late if j not in on_ring]
            if on_z:
                widen_windows(data, last_start, on_z, finish_by)
            continue
        final_status = sol.status  # feasible / timeout: the time is up
        break
    if final_status == "infeasible":
        stats["message"] = "infeasible: no schedule finishes every task within the horizon"
        return result("infeasible")
    # ---- LP bound when the MILP did not close ------------------------------------------
    closed = inc.value is not None and inc.value <= math.ceil(bound - 1e-6)
    if lp_bound and not closed and last_bm is not None:
        rem = remaining(deadline)
        if rem is None or rem >= max(1.0, PHASE_MARGIN * last_build):
            lpb = lp_relaxation_bound(last_bm, time_limit=rem, threads=threads, seed=seed)
            stats["lp_bound"] = lpb
            if lpb is not None:
                bound = max(bound, lpb)
    stats["incumbent_source"] = inc.source
    if inc.schedule is None:
        stats["message"] = "no schedule found within the time limit"
        return result("timeout", bound=bound)
    # the objective is integral (integer starts, durations, arrivals): round the bound up
    bound = float(math.ceil(bound - 1e-6))
    closed = inc.value <= bound
    bound = float(inc.value) if closed else bound
    stats["mip_gap"] = 0.0 if closed else (inc.value - bound) / max(abs(inc.value), 1e-9)
    stats["message"] = "optimal" if closed else f"stopped at the limit ({final_status or 'timeout'})"
    return result("optimal" if closed else "feasible", inc.schedule, float(inc.value), bound)
