"""Column-generation LNS for the placement problem (``placement-cg-lns``, kind heuristic; issue 23).

The other placement heuristics search fixed-allocation schedules (``placement-milp``,
``placement-lns``) or re-allocate greedily (``placement-grow``, the policies). Bound (6)'s column
generation (:mod:`placement.bounds.trajectory`) meanwhile prices thousands of *allocation histories* —
per step a pause or an integer allocation, re-allocations included — that are cheap at its
Lagrangian prices. This solver turns that pool into schedules (docs/formulations/placement-search.md,
"Column-generation LNS"):

1. **Pool.** (6)'s column generation runs from (4)'s multipliers (``rounds`` rounds at most,
   ``cut_rounds`` rounds of rounding cuts); every history it generated becomes a *column*: task,
   cluster, first start, the allocation changes, and its finish **re-simulated by the referee's
   own** :func:`referee.placement.task_finish` (the labelling rounds progress up, so its finish is
   never trusted). Histories reaching past (6)'s horizon are dropped.
2. **Start.** The warm start (``best-known``, a solution file or ``lagrangian``, as for
   ``placement-lns``) or else the better of ``sjf`` and ``optimus`` by the referee; its
   decisions — fixed or re-allocating — become one column per task, so the incumbent is always
   a choice of columns.
3. **Search.** Each neighbourhood frees the ``block`` tasks whose first starts lie nearest a
   random step (ties broken at random) and keeps the others. The freed tasks choose among their
   columns that fit beside the kept ones in a set-partitioning MIP: one column per freed task,
   per cluster, resource (cpu, gpu, memory) and step the capacity left by the kept tasks, in
   variant single one first start per cluster and step; minimise the freed tasks' sum of
   ``F - a``. HiGHS (one thread, ``sub_limit`` seconds, seeded) starts from the incumbent's
   columns, so it never returns worse; a better choice replaces the incumbent.
4. **Result.** The incumbent, scored by the referee (its objective is the referee's value).

Seeded: the neighbourhoods come from ``numpy.random.default_rng(seed)`` and HiGHS's seed is the
neighbourhood's number. With ``iterations`` and sub-MIPs that finish within ``sub_limit``, the
same seed gives the same schedule; under a wall-clock limit the number of neighbourhoods depends
on the machine, as for every time-limited solver.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgebench import registry
from edgebench.formulations.linear import LinearModel
from edgebench.formulations.placement.bounds.ladder import cluster_durations
from edgebench.formulations.placement.deadline import Deadline, Expired
from edgebench.formulations.placement.highs import solve_highs
from edgebench.formulations.placement.bounds.lagrange import SCALE, BoundTooLarge, lagrangian_multipliers
from edgebench.formulations.placement.problem import prepare
from edgebench.formulations.placement.search import grow as placement_grow
from edgebench.formulations.placement.search.lns import (BEST_KNOWN, GROW_RESERVE, LAGRANGIAN, check_warm_start,
                                                         to_schedule, warm_start_decisions)
from edgebench.formulations.placement.bounds.trajectory import ROUNDS, STALL, WORK, Task, generate, price_pair, tasks_of
from edgebench.referee.placement import evaluate, task_finish
from edgebench.registry import make_result, register
from edgebench.solution import AllocationChange, PlacementDecision, PlacementDecisions

SOLVER_NAME = "placement-cg-lns"
#: tasks freed per neighbourhood
BLOCK = 30
#: seconds per sub-MIP
SUB_LIMIT = 10.0
#: neighbourhoods without a time limit or ``iterations``
DEFAULT_ITERATIONS = 200
#: share of the time limit the column generation may use (it stops between rounds)
POOL_SHARE = 0.6
#: steps past the incumbent's last finish that a fitted history may use
REACH = 200
#: a cost no fitted history reaches: an allocation that does not fit, a start slot that is taken
BLOCKED = 1 << 45
#: start solvers without a warm start (the better by the referee)
STARTS = ("sjf", "optimus")


@dataclass(frozen=True, order=True)
class ScoredHistory:
    """One allocation history of task j on cluster n: first start s, finish F (the referee's),
    ``use`` = ((step, cpu, gpu), ...) over the steps it holds resources, ``changes`` = the
    allocation changes ((step, cpu, gpu), ...; (0, 0) = paused) as the decisions write them."""

    j: int
    n: int
    s: int
    F: int
    use: tuple
    changes: tuple


def column(payload, j: int, n: int, changes: list[tuple[int, int, int]]) -> ScoredHistory | None:
    """The column of task j on n with these allocation changes (the first one its first start),
    its finish simulated by the referee; None when it never finishes."""
    s = changes[0][0]
    F = task_finish(payload, j, s, changes)
    if F is None:
        return None
    use = []
    for k, (t0, c, g) in enumerate(changes):
        t1 = changes[k + 1][0] if k + 1 < len(changes) else F
        if c or g:
            use.extend((t, c, g) for t in range(t0, min(t1, F)))
    return ScoredHistory(j, n, s, F, tuple(use), tuple(changes))


def changes_of(steps: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Allocation changes of a history given as its allocated steps ((step, cpu, gpu), sorted):
    a gap between two allocated steps is a pause."""
    out: list[tuple[int, int, int]] = []
    last, prev = None, None
    for t, c, g in steps:
        if prev is not None and t > prev + 1:
            out.append((prev + 1, 0, 0))
            last = (0, 0)
        if (c, g) != last:
            out.append((t, c, g))
            last = (c, g)
        prev = t
    return out


def usage_column(payload, j: int, n: int, amounts) -> ScoredHistory | None:
    """The column of task j on n that holds, per (step, resource 0 = cpu / 1 = gpu, amount) of
    ``amounts``, that amount (steps not listed: paused); None when it is empty or never finishes."""
    steps: dict[int, list[int]] = {}
    for t, r, x in amounts:
        steps.setdefault(t, [0, 0])[r] = x
    if not steps:
        return None
    return column(payload, j, n, changes_of(sorted((t, c, g) for t, (c, g) in steps.items())))


def pool_columns(payload, *, rounds: int = ROUNDS, cut_rounds: int = 0, deadline: float | None = None,
                 until: Deadline | float | None = None) -> list[ScoredHistory]:
    """Step 1: the histories of (6)'s column generation as referee-simulated columns (sorted,
    without duplicates).  ``deadline`` stops the column generation between rounds; ``until``
    (the run's own deadline) stops every phase: :class:`.Expired`."""
    until = Deadline.of(until)
    durations = cluster_durations(payload)
    if not all(durations):
        return []
    r = generate(payload, durations, lagrangian_multipliers(payload, durations, deadline=until), rounds=rounds,
                  stall=STALL, work=WORK, cut_rounds=cut_rounds, deadline=deadline, expire=until)
    pool = r.pool
    if pool is None:
        return []
    H = pool.H
    out = set()
    for c in range(len(pool.task)):  # every task is live (checked above): pool.task[c] is the task's index
        rows, vals = pool.rows[c], pool.vals[c]
        j, m = pool.task[c], pool.base[c] >> SCALE
        if rows.size == 0 or int(payload.tasks[j].arrival) + m > H:  # usage past H is not recorded
            continue
        col = usage_column(payload, j, int(rows[0]) // (2 * H),
                           ((flat % H, (flat // H) % 2, x) for flat, x in zip(rows.tolist(), vals.tolist())))
        if col is not None:
            out.add(col)
    return sorted(out)


def decisions_columns(payload, decisions: PlacementDecisions) -> list[ScoredHistory] | None:
    """One column per task of a referee-feasible schedule (fixed or re-allocating)."""
    out = []
    for j, d in enumerate(decisions.tasks):
        changes = [(c.step, c.cpu, c.gpu) for c in d.history] if d.history else [(d.start, d.cpu, d.gpu)]
        while changes and not (changes[0][1] or changes[0][2]):  # a leading pause: not yet started
            changes = changes[1:]
        col = column(payload, j, d.cluster, changes) if changes and d.cluster is not None else None
        if col is None:
            return None
        out.append(col)
    return out


def to_decisions(cols: list[ScoredHistory]) -> PlacementDecisions:
    return PlacementDecisions(tasks=[
        PlacementDecision(cluster=c.n, start=c.s,
                          history=[AllocationChange(step=t, cpu=x, gpu=g) for t, x, g in c.changes])
        for c in cols])


def free_capacity(payload, task: Task, n: int, others: list[ScoredHistory], H: int):
    """What ``others`` leave to ``task`` on cluster n over steps < H, as the labelling's prices:
    a (H - a, options) array, per step from the task's arrival and allocation option,
    ``BLOCKED`` where the option does not fit beside them (cpu, gpu, memory) and 0 where it
    does; and in variant single the start prices Mu (clusters x H: ``BLOCKED`` at each step
    < H where one of them starts on n), else None."""
    cap = payload.clusters[n].capacity
    opt = task.opts[n]
    free = np.array([[cap.cpu] * H, [cap.gpu] * H, [cap.memory if cap.memory is not None else 0] * H],
                    dtype=np.int64)
    taken = []
    for c in others:
        if c.n != n:
            continue
        if c.s < H:
            taken.append(c.s)
        m = payload.tasks[c.j].minimum.memory or 0
        for t, x, g in c.use:
            if t < H:
                free[0, t] -= x
                free[1, t] -= g
                free[2, t] -= m
    mem = payload.tasks[task.j].minimum.memory or 0
    short = free[2] < mem if (cap.memory is not None and mem > 0) else np.zeros(H, dtype=bool)
    # non-decreasing in cpu, gpu: an option that does not fit is priced out of every history
    off = ((opt.cpu[None, :] > free[0, task.a:, None]) | (opt.gpu[None, :] > free[1, task.a:, None])
           | short[task.a:, None])
    Mu = None
    if payload.variant == "single":
        Mu = np.zeros((len(payload.clusters), H), dtype=np.int64)
        Mu[n, taken] = BLOCKED
    return np.where(off, BLOCKED, 0).astype(np.int64), Mu


def fitted_columns(payload, task: Task, others: list[ScoredHistory]) -> list[ScoredHistory]:
    """Per eligible cluster, the history of ``task`` that finishes first in what ``others``
    leave free (capacities per step, variant single their first starts): (6)'s labelling with
    zero prices and every allocation that does not fit, and every taken start slot, priced out
    of reach (its ``cap``). Finishes re-simulated by the referee."""
    H = max((c.F for c in others), default=task.a) + REACH
    N = len(payload.clusters)
    out = []
    for n, opt in task.opts.items():
        blocked, Mu = free_capacity(payload, task, n, others, H)
        r = price_pair(opt, task.a, n, np.zeros((N, 2, H), dtype=np.int64), Mu, H, cap=BLOCKED, extra=blocked)
        if r is None:
            continue
        col = usage_column(payload, task.j, n, ((t, rr, x) for (_, rr, t), x in r[3].items()))
        if col is not None:
            out.append(col)
    return out


def kept_usage(payload, cur: list[ScoredHistory], free) -> tuple[dict[tuple, int], set[tuple[int, int]]]:
    """What the tasks of ``cur`` not in ``free`` hold: {(cluster, resource 0 = cpu / 1 = gpu /
    2 = memory, step): amount} (nonzero amounts only) and their first starts {(cluster, step)}."""
    mem = [t.minimum.memory or 0 for t in payload.tasks]
    used: dict[tuple, int] = {}
    starts = set()
    for c in cur:
        if c.j in free:
            continue
        starts.add((c.n, c.s))
        for t, x, g in c.use:
            for r, amount in ((0, x), (1, g), (2, mem[c.j])):
                if amount:
                    used[(c.n, r, t)] = used.get((c.n, r, t), 0) + amount
    return used, starts


def add_room_rows(m: LinearModel, payload, used: dict[tuple, int], rows: dict[tuple, list], slots: dict[tuple, list]):
    """A window's shared rows: per (cluster, resource, step) of ``rows`` the room the kept tasks
    leave (``used``: :func:`kept_usage`), where the terms could exceed it; in variant single, at
    most one first start per (cluster, step) of ``slots``."""
    caps = [(c.capacity.cpu, c.capacity.gpu, c.capacity.memory) for c in payload.clusters]
    for (n, r, t), terms in sorted(rows.items()):
        room = caps[n][r] - used.get((n, r, t), 0)
        if sum(a for _, a in terms) > room:
            m.add_le(terms, float(room), f"cap[{n},{r},{t}]")
    if payload.variant == "single":
        for (n, t), terms in sorted(slots.items()):
            if len(terms) > 1:
                m.add_le(terms, 1.0, f"start[{n},{t}]")


class Window:
    """Step 3's sub-MIP: the freed tasks' columns that fit beside the kept ones."""

    def __init__(self, payload, by_task: dict[int, list[ScoredHistory]], cur: list[ScoredHistory], free: set[int]):
        caps = [(c.capacity.cpu, c.capacity.gpu, c.capacity.memory) for c in payload.clusters]
        mem = [t.minimum.memory or 0 for t in payload.tasks]
        used, starts = kept_usage(payload, cur, free)
        single = payload.variant == "single"
        self.model = m = LinearModel("placement-cg-lns-window")
        self.vars: list[tuple[int, ScoredHistory]] = []
        self.hint: list[float] = []
        rows: dict[tuple, list] = {}
        slots: dict[tuple, list] = {}
        for j in sorted(free):
            terms = []
            for c in by_task[j]:
                if single and (c.n, c.s) in starts:
                    continue
                left = caps[c.n]
                if any(used.get((c.n, r, t), 0) + amount > left[r]
                       for t, x, g in c.use for r, amount in ((0, x), (1, g), (2, mem[j]))
                       if amount and left[r] is not None):
                    continue
                v = m.add_binary(f"y{len(self.vars)}")
                self.vars.append((v, c))
                self.hint.append(1.0 if c == cur[j] else 0.0)
                terms.append((v, 1.0))
                for t, x, g in c.use:
                    for r, amount in ((0, x), (1, g), (2, mem[j])):
                        if amount and left[r] is not None:
                            rows.setdefault((c.n, r, t), []).append((v, float(amount)))
                slots.setdefault((c.n, c.s), []).append((v, 1.0))
            m.add_eq(terms, 1.0, f"one[{j}]")
        add_room_rows(m, payload, used, rows, slots)
        arr = [int(t.arrival) for t in payload.tasks]
        m.set_objective([(v, float(c.F - arr[c.j])) for v, c in self.vars], sense="min")

    def solve(self, *, time_limit: float | None, seed: int, presolve: bool = True) -> list[ScoredHistory] | None:
        sol = solve_highs(self.model, hint=self.hint, time_limit=time_limit, threads=1, seed=seed, presolve=presolve)
        if sol.values is None:
            return None
        return [c for (v, c), x in zip(self.vars, sol.values[[v for v, _ in self.vars]]) if x > 0.5]


def rechoose(payload, by_task: dict[int, list[ScoredHistory]], cur: list[ScoredHistory], free: set[int], *,
             deadline: float | None, sub_limit: float, seed: int, presolve: bool = True) -> int | None:
    """One window: the freed tasks re-choose among their columns (:class:`Window`, HiGHS within
    ``sub_limit`` and the deadline, seeded); a better choice replaces theirs in ``cur`` (in
    place). Returns the gain in the sum of ``F - a`` (0: nothing better), None when the deadline
    has passed before the sub-MIP. ``presolve=False``: HiGHS without its MIP presolve, which
    checks the clock only between passes."""
    left = None if deadline is None else deadline - time.perf_counter()
    if left is not None and left <= 0:
        return None
    new = Window(payload, by_task, cur, free).solve(time_limit=sub_limit if left is None else min(sub_limit, left),
                                                    seed=seed, presolve=presolve)
    if new is None or len(new) != len(free):
        return 0
    gain = sum(cur[c.j].F - c.F for c in new)
    if gain <= 0:
        return 0
    for c in new:
        cur[c.j] = c
    return gain


def improve(payload, pool: list[ScoredHistory], start: list[ScoredHistory], *, seed: int = 0, block: int = BLOCK,
            sub_limit: float = SUB_LIMIT, iterations: int | None = None, deadline: float | None = None,
            fitted: bool = True) -> tuple[list[ScoredHistory], dict]:
    """Step 3: window neighbourhoods over the columns until ``iterations`` or the deadline; with
    ``fitted`` each freed task first gains its :func:`fitted_columns` beside the kept tasks and
    beside all the others."""
    arr = [int(t.arrival) for t in payload.tasks]
    J = len(payload.tasks)
    by_task: dict[int, list[ScoredHistory]] = {j: [] for j in range(J)}
    for c in sorted(set(pool) | set(start)):
        by_task[c.j].append(c)
    cur = list(start)
    value = sum(c.F - arr[c.j] for c in cur)
    rng = np.random.default_rng(seed)
    known = {j: set(v) for j, v in by_task.items()}
    tasks = {t.j: t for t in tasks_of(payload, cluster_durations(payload))} if fitted else {}
    info = {"columns": sum(len(v) for v in by_task.values()), "start_value": value, "improvements": 0,
            "fitted_columns": 0}
    it = 0
    while (iterations is None or it < iterations) and (deadline is None or time.perf_counter() < deadline):
        it += 1
        step = int(rng.integers(0, max(c.F for c in cur)))
        noise = rng.random(J)
        free = set(sorted(range(J), key=lambda j: (abs(cur[j].s - step), noise[j]))[:block])
        if fitted:
            kept = [c for c in cur if c.j not in free]
            for j in sorted(free):
                for others in (kept, [c for c in cur if c.j != j]):
                    for c in fitted_columns(payload, tasks[j], others):
                        if c not in known[j]:
                            known[j].add(c)
                            by_task[j].append(c)
                            info["fitted_columns"] += 1
        gain = rechoose(payload, by_task, cur, free, deadline=deadline, sub_limit=sub_limit, seed=it)
        if gain is None:
            break  # building the window passed the deadline
        if gain > 0:
            value -= gain
            info["improvements"] += 1
    info.update(iterations=it, value=value, columns=sum(len(v) for v in by_task.values()))
    return cur, info


def start_schedule(instance, warm_start: str | None, seed: int, deadline: float | None, until: float | None = None):
    """(referee value, decisions, source) of step 2's start, or None."""
    warm = warm_start_decisions(instance, warm_start, seed=seed, deadline=deadline, until=until)
    if warm is not None:
        return warm[:3]
    best = None
    for name in STARTS:
        try:
            dec = registry.solve(instance, name, seed=seed).solution.placement
        except Exception:  # a start solver that breaks is skipped: the other may still start the search
            continue
        if dec is None:
            continue
        ev = evaluate(instance, dec)
        if ev.feasible and (best is None or float(ev.primary_value) < best[0]):
            best = (float(ev.primary_value), dec, name)
    return best


def not_applicable(instance, params: dict | None = None) -> str | None:
    """Why the solver declines ``instance``, or None: its column pool and fitted histories come
    from (6)'s labelling, whose progress recursion models multiplicative noise only (the authors'
    additive clipped noise can make any step gain exactly 0)."""
    p = instance.placement
    if p is not None and p.noise > 0 and p.noise_model == "additive":
        return "additive noise: the column pool is bound (6)'s, whose labelling models multiplicative noise only"
    return None


def window_search(instance, name: str, params: dict, search, *, time_limit: float | None, seed: int,
                  warm_start: str | None, iterations: int | None, default_iterations: int):
    """The frame the window searches share (this one and ``placement-history-lns``): decline
    additive noise, find the start (:func:`start_schedule`), turn it into columns, call
    ``search(payload, start_columns, deadline, iterations, stats) -> (columns or None, status)``
    and return the better of the start and the search's schedule, scored by the referee, as the
    solver ``name``'s result. ``iterations`` defaults to ``default_iterations`` without a time
    limit. Never raises: an exception becomes status ``error`` with its message."""
    t0 = time.perf_counter()
    stats: dict[str, Any] = {"message": ""}

    def result(status: str, decisions=None, objective=None):
        stats["solve_time"] = time.perf_counter() - t0
        return make_result(instance, name, status=status, decisions=decisions, seed=seed, params=params,
                           objective=objective, started=t0, stats=stats)

    why = not_applicable(instance)
    if why is not None:
        stats["message"] = why
        return result("error")
    deadline = None if time_limit is None else t0 + float(time_limit)
    if iterations is None and deadline is None:
        iterations = default_iterations
    try:
        payload = instance.placement
        start = start_schedule(instance, warm_start, seed, None if deadline is None else t0 + 0.1 * (deadline - t0),
                               deadline)
        if start is None:
            stats["message"] = "no start schedule"
            return result("timeout")
        best_val, best_dec, source = start
        stats["start"] = {"source": source, "value": best_val}
        start_cols = decisions_columns(payload, best_dec)
        status = "feasible"
        if start_cols is not None:
            cols, status = search(payload, start_cols, deadline, iterations, stats)
            if cols is not None:
                dec = to_decisions(cols)
                ev = evaluate(instance, dec)
                if ev.feasible and float(ev.primary_value) < best_val:
                    best_val, best_dec, source = float(ev.primary_value), dec, name
        stats["source"] = source
        return result(status, best_dec, best_val)
    except Exception as exc:  # never raise out of solve
        stats["message"] = f"{type(exc).__name__}: {exc}"
        return result("error")


def fixed_search(instance, name: str, params: dict, improve, summary, *, time_limit: float | None, seed: int,
                 warm_start: str | None, finish=None, finish_share: float = 0.0):
    """The frame of the searches over fixed-allocation schedules (placement-cpsat-lns,
    placement-lahc-cpsat): :func:`window_search`'s start; its fixed-allocation version
    (:func:`.lns.to_schedule`); ``improve(data, fixed, deadline) -> (schedule, info)`` with the
    deadline less the reserve of the re-allocating moves (:func:`.grow.better_of_grown`), which
    follow; ``summary(info)`` is the run's message.  ``finish(payload, columns, deadline, stats) ->
    columns``, where given, then continues from that schedule (as histories) for the last
    ``finish_share`` of the time."""

    def search(payload, start_cols, deadline, _iterations, stats):
        data = prepare(payload)
        fixed = to_schedule(payload, data, to_decisions(start_cols))
        if fixed is None:
            stats["message"] = "the start has no fixed-allocation schedule among the dominant options"
            return None, "feasible"
        end = None if deadline is None else deadline - finish_share * max(0.0, deadline - time.perf_counter())
        sched, info = improve(data, fixed, None if end is None else end - GROW_RESERVE)
        best = placement_grow.better_of_grown(instance, data, sched, info["value"], deadline=end, info=info)
        stats.update(info)
        stats["message"] = summary(info)
        cols = decisions_columns(payload, best)
        if finish is not None and cols is not None:
            cols = finish(payload, cols, deadline, stats)
        return cols, "feasible"

    return window_search(instance, name, params, search, time_limit=time_limit, seed=seed, warm_start=warm_start,
                         iterations=None, default_iterations=0)


@register(SOLVER_NAME, families=("placement",), kind="heuristic",
          description="Column-generation LNS: bound (6)'s column generation yields allocation histories (re-allocations "
                      "and pauses included, finishes re-simulated by the referee); window neighbourhoods of a start "
                      "schedule re-choose the freed tasks' histories by a set-partitioning MIP (HiGHS); scored by the "
                      "referee",
          params={"block": f"int: tasks freed per neighbourhood (default {BLOCK})",
                  "sub_limit": f"seconds per sub-MIP (default {SUB_LIMIT})",
                  "iterations": "int: stop after this many neighbourhoods (default: the time limit; "
                                f"{DEFAULT_ITERATIONS} without one)",
                  "rounds": f"int: column-generation rounds at most (default {ROUNDS})",
                  "cut_rounds": "int: rounds of rounding cuts in the column generation (default 0)",
                  "fitted": "bool: per neighbourhood, also each freed task's fastest histories in the capacity the "
                            "others leave (default true)",
                  "warm_start": f"start from this schedule instead of sjf / optimus: a placement solution file, "
                                f"{BEST_KNOWN!r} or {LAGRANGIAN!r} (as for placement-lns)"},
          bounds={"block": (1, None), "sub_limit": (0.1, None), "iterations": (0, None), "rounds": (1, None),
                  "cut_rounds": (0, None)},
          check=lambda p: check_warm_start(p.get("warm_start")), applies=not_applicable)
def solve(instance, *, time_limit: float | None = None, seed: int = 0, block: int = BLOCK,
          sub_limit: float = SUB_LIMIT, iterations: int | None = None, rounds: int = ROUNDS, cut_rounds: int = 0,
          fitted: bool = True, warm_start: str | None = None):
    """Improve a start schedule with (6)'s histories. A bad warm start is an InputError (raised
    before any work; unknown parameters are the registry's InputError); nothing else raises."""
    params = {"block": block, "sub_limit": sub_limit, "iterations": iterations, "rounds": rounds,
              "cut_rounds": cut_rounds, "fitted": fitted, "warm_start": warm_start}
    t0 = time.perf_counter()

    def search(payload, start_cols, deadline, iterations, stats):
        c0 = time.process_time()
        try:
            pool = pool_columns(payload, rounds=int(rounds), cut_rounds=int(cut_rounds),
                                deadline=None if deadline is None else t0 + POOL_SHARE * (deadline - t0),
                                until=deadline)
        except Expired as exc:  # no column pool in the time: the start schedule, status timeout
            stats.update(pool_cpu_s=time.process_time() - c0, expired=str(exc))
            return None, "timeout"
        except BoundTooLarge as exc:  # no column pool within the memory budget: the start schedule
            stats.update(pool_cpu_s=time.process_time() - c0, message=str(exc))
            return None, "feasible"
        stats["pool_cpu_s"] = time.process_time() - c0
        cols, info = improve(payload, pool, start_cols, seed=seed, block=int(block), sub_limit=float(sub_limit),
                             iterations=iterations, deadline=deadline, fitted=bool(fitted))
        stats.update(info)
        return cols, "feasible"

    return window_search(instance, SOLVER_NAME, params, search, time_limit=time_limit, seed=seed,
                         warm_start=warm_start, iterations=iterations, default_iterations=DEFAULT_ITERATIONS)


__all__ = ["solve", "improve", "pool_columns", "fitted_columns", "usage_column", "not_applicable",
           "decisions_columns", "column", "changes_of", "to_decisions", "ScoredHistory", "SOLVER_NAME", "Window",
           "start_schedule", "free_capacity", "BLOCKED", "window_search", "fixed_search", "rechoose", "kept_usage", "add_room_rows"]
