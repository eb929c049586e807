"""Shape LNS for the placement problem (``placement-shape-lns``, kind heuristic; issue 45).

The window searches before it free tasks of one neighbourhood (consecutive arrivals, the runs of
one cluster) and let each freed task finish at most a slack later than now
(``placement-history-lns``). On testbed-v2 (identical clusters, three task types, no noise) the
moves that were left need many tasks of *several* clusters to change together, some of them to
finish much later. This search frees a window in *time* instead and lets the freed tasks take any
start, cluster and shape (docs/formulations/placement-search.md, "Shape LNS"):

1. **Start.** As ``placement-cg-lns`` (:func:`.cglns.window_search`): a warm start (a solution
   file, ``best-known`` or ``lagrangian``) or else the better of ``sjf`` and ``optimus``.
2. **Shapes.** A *shape* (:class:`.shapes.Shape`) is a history relative to its first start. Per
   class of interchangeable tasks (:func:`interchangeable`) and eligible cluster (listed once for
   the classes that differ only in their eligible clusters, :func:`same_steps`): every dominant
   fixed allocation, and every *two-piece* shape (a dominant allocation for ``split`` steps, then
   any other allocation of the grid to the finish), durations by the referee's
   :func:`referee.placement.task_finish`; the dominated ones dropped (:func:`undominated`); and
   per window, the current histories of the class's tasks as shapes too, so the current
   schedule is always among the choices. On a noise-free instance a shape takes the same steps
   at any start and for every task of its class; with noise each task is its own class.
3. **Window.** The tasks whose first start lies in ``[t0, t0 + length)``, on any cluster, are
   freed (``t0`` drawn among multiples of ``length // 2``, a window that gave nothing not again
   until an improvement). Each class's freed tasks choose, together, how many of them take each
   (cluster, shape, start); starts lie within ``reach`` steps after a freed task's arrival or
   around its current start.
4. **Sub-MIP** (:class:`ShapeWindow`, HiGHS, one thread, ``sub_limit`` seconds, seeded with the
   window's number, from the current choice, so never worse): integer counts per (class,
   cluster, shape, start), each class's count equal to its freed tasks; per start s, a class
   takes at most as many starts <= s as it has freed tasks arrived by s (then the k-th start
   in order can go to the k-th arrival: :func:`assign`); the capacity the kept tasks leave per
   cluster, resource (cpu, gpu, memory while running) and step; in variant single one first
   start per cluster and step. Minimise the freed tasks' sum of ``F - a``.
5. **Accept.** The decoded histories are re-simulated by the referee (each must finish where its
   shape says) and the whole schedule is scored by the referee; only a better one is taken.

A heuristic: shapes of at most two pieces (and the current histories), starts near arrivals and
current starts, windows sampled. Seeded: windows come from ``numpy.random.default_rng(seed)``;
with ``iterations`` and sub-MIPs that finish within ``sub_limit`` the same seed gives the same
schedule.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import numpy as np

from edgebench.formulations.linear import LinearModel
from edgebench.formulations.placement.deadline import Deadline, Expired
from edgebench.formulations.placement.highs import solve_highs
from edgebench.formulations.placement.search.cglns import (ScoredHistory, add_room_rows, column, kept_usage,
                                                           not_applicable, to_decisions, window_search)
from edgebench.formulations.placement.search.lns import BEST_KNOWN, LAGRANGIAN, check_warm_start
from edgebench.formulations.placement.search.shapes import Shape
from edgebench.instances import semantics
from edgebench.referee.placement import evaluate, task_finish
from edgebench.registry import register

SOLVER_NAME = "placement-shape-lns"
#: steps of first starts a window frees
LENGTH = 16
#: starts a freed task may take: within this many steps after its arrival, or of its current start
REACH = 4
#: seconds per sub-MIP
SUB_LIMIT = 60.0
#: windows without a time limit or ``iterations``
DEFAULT_ITERATIONS = 20
#: steps past the incumbent's last finish that a shape may end at
HORIZON = 20
#: integer columns a window's MIP may have; a larger window is skipped (counted in the stats)
MAX_VARS = 200_000


def interchangeable(payload) -> list[int]:
    """Per task, its class: tasks that differ only in arrival and name share one on a
    noise-free instance (the rule of :func:`.bounds.branch_price.symmetric_classes`); with
    noise every task is its own (the draws are per task)."""
    if payload.noise > 0:
        return list(range(len(payload.tasks)))
    ids: dict[str, int] = {}
    return [ids.setdefault(t.model_dump_json(exclude={"arrival", "name"}), len(ids)) for t in payload.tasks]


def same_steps(payload) -> list:
    """Per task, a key shared by the tasks whose shapes on a cluster take the same steps: on a
    noise-free instance, every field but arrival, name and the eligible clusters equal (testbed-v2:
    its three types against 21 classes); with noise the task itself."""
    if payload.noise > 0:
        return list(range(len(payload.tasks)))
    return [t.model_dump_json(exclude={"arrival", "name", "eligible"}) for t in payload.tasks]


def held(shape: Shape) -> tuple[tuple[int, int], ...]:
    """(cpu, gpu) per step offset from the shape's start to its finish ((0, 0): paused)."""
    out = []
    for k, (r, c, g) in enumerate(shape.pieces):
        end = shape.pieces[k + 1][0] if k + 1 < len(shape.pieces) else shape.steps
        out += [(c, g)] * (min(end, shape.steps) - r)
    return tuple(out)


def dominates(a: Shape, b: Shape) -> bool:
    """``a`` finishes no later than ``b`` and holds no more cpu and gpu at any offset (so no
    more memory: a shape holds memory exactly while it holds an allocation): wherever ``b``
    fits, ``a`` fits and is no slower."""
    if a.cluster != b.cluster or a.steps > b.steps:
        return False
    ha, hb = held(a), held(b)
    return all(ha[k][0] <= hb[k][0] and ha[k][1] <= hb[k][1] for k in range(a.steps))


def undominated(shapes, deadline=None) -> list[Shape]:
    """The shapes no other one dominates (:func:`dominates`; of equal ones the first), in the
    order (steps, total usage, pieces). Each is tested against the kept ones at once: usage
    arrays padded with (0, 0) past a shape's finish, where the definition reads (0, 0) too.
    ``deadline``: :class:`Expired` once it has passed (checked every 256 shapes)."""
    clock = Deadline.of(deadline)
    uniq = list(set(shapes))
    if not uniq:
        return []
    use = [held(x) for x in uniq]
    order = sorted(range(len(uniq)), key=lambda i: (uniq[i].steps, sum(c + g for c, g in use[i]), uniq[i].pieces))
    T = max(x.steps for x in uniq)
    arr = np.zeros((len(uniq), 2 * T), dtype=np.int64)
    for i, u in enumerate(use):
        if u:
            arr[i, :2 * len(u)] = np.asarray(u, dtype=np.int64).ravel()
    steps = np.array([x.steps for x in uniq])
    cluster = np.array([x.cluster for x in uniq])
    keep: list[int] = []
    for q, i in enumerate(order):
        if q % 256 == 0:
            clock.check("filtering shapes")
        if keep:
            K = np.asarray(keep)
            if ((cluster[K] == cluster[i]) & (steps[K] <= steps[i]) & (arr[K] <= arr[i]).all(axis=1)).any():
                continue
        keep.append(i)
    return [uniq[i] for i in keep]


def shape_of(payload, j: int, n: int, pieces) -> Shape | None:
    """Task j's shape on cluster n with these pieces ((offset, cpu, gpu), ...), its steps the
    referee's simulation from the task's arrival; None when it never finishes or finishes
    before its last piece begins."""
    a = int(payload.tasks[j].arrival)
    F = task_finish(payload, j, a, [(a + r, c, g) for r, c, g in pieces])
    if F is None or F - a <= pieces[-1][0]:
        return None
    cap = payload.clusters[n].capacity
    mem = payload.tasks[j].minimum.memory if cap.memory is not None else None
    return Shape(n, tuple(pieces), int(mem or 0), F - a)


def class_shapes(payload, j: int, n: int, deadline=None) -> list[Shape]:
    """Step 2 for task j (its class's representative) on cluster n: the undominated shapes
    among the dominant fixed allocations and the two-piece shapes that start with one.
    ``deadline`` (a Deadline or ``time.perf_counter()`` value) is checked per first piece's length:
    :class:`Expired` once it has passed."""
    clock = Deadline.of(deadline)
    out = []
    grid = semantics.allocation_options(payload, j, n)
    for c0, g0, d in semantics.dominant_options(payload, j, n):
        fixed = shape_of(payload, j, n, [(0, c0, g0)])
        if fixed is None:
            continue
        out.append(fixed)
        for split in range(1, int(d)):
            clock.check("listing shapes")
            for c, g in grid:
                if (c, g) != (c0, g0):
                    two = shape_of(payload, j, n, [(0, c0, g0), (split, c, g)])
                    if two is not None:
                        out.append(two)
    return undominated(out, clock)


def as_shape(payload, col: ScoredHistory) -> Shape:
    """A current history as a shape (its changes relative to its first start)."""
    cap = payload.clusters[col.n].capacity
    mem = payload.tasks[col.j].minimum.memory if cap.memory is not None else None
    pieces = tuple((t - col.s, c, g) for t, c, g in col.changes if t < col.F)
    return Shape(col.n, pieces, int(mem or 0), col.F - col.s)


def assign(arrivals: list[int], starts: list[int]) -> list[int] | None:
    """The k-th earliest start to the k-th earliest arrival (both as given, any order): the
    index of each arrival's start in ``starts``; None when some start comes before its
    arrival (the sub-MIP's per-start rows rule that out)."""
    by_start = sorted(range(len(starts)), key=lambda i: starts[i])
    by_arrival = sorted(range(len(arrivals)), key=lambda i: arrivals[i])
    out = [0] * len(arrivals)
    for i, k in zip(by_arrival, by_start):
        if starts[k] < arrivals[i]:
            return None
        out[i] = k
    return out


class ShapeWindow:
    """Step 4's sub-MIP for the freed tasks ``free`` beside the kept part of ``cur``."""

    def __init__(self, payload, cur: list[ScoredHistory], free: list[int], cls: list[int],
                 shapes: dict[int, list[Shape]], reach: int, H: int, deadline=None):
        clock = Deadline.of(deadline)
        caps = [(c.capacity.cpu, c.capacity.gpu, c.capacity.memory) for c in payload.clusters]
        arr = [int(t.arrival) for t in payload.tasks]
        used, taken = kept_usage(payload, cur, set(free))
        self.groups: dict[int, list[int]] = defaultdict(list)
        for j in free:
            self.groups[cls[j]].append(j)
        single = payload.variant == "single"
        self.model = m = LinearModel("placement-shape-lns-window")
        self.vars: list[tuple[int, int, Shape, int]] = []  # (variable, class, shape, start)
        current = defaultdict(int)
        for j in free:
            current[(cls[j], as_shape(payload, cur[j]), cur[j].s)] += 1
        rows: dict[tuple, list] = defaultdict(list)
        slots: dict[tuple, list] = defaultdict(list)
        for k, js in sorted(self.groups.items()):
            clock.check("building a window")
            starts = sorted({s for j in js for s in range(arr[j], arr[j] + reach + 1)}
                            | {s for j in js for s in range(max(arr[j], cur[j].s - reach), cur[j].s + reach + 1)})
            choices = list(shapes[k]) + [sh for (kk, sh, _), _x in current.items() if kk == k]
            by_start: dict[int, list[int]] = defaultdict(list)
            terms = []
            for sh in dict.fromkeys(choices):  # without duplicates, in order
                n, use, left = sh.cluster, held(sh), caps[sh.cluster]
                for s in starts:
                    if s + sh.steps > H or (single and (n, s) in taken):
                        continue
                    if any(used.get((n, r, s + o), 0) + amount > left[r]
                           for o, (x, g) in enumerate(use) if x or g
                           for r, amount in ((0, x), (1, g), (2, sh.memory)) if amount and left[r] is not None):
                        continue
                    v = m.add_var(f"x{len(self.vars)}", 0.0, float(len(js)), integer=True)
                    self.vars.append((v, k, sh, s))
                    terms.append((v, 1.0))
                    by_start[s].append(v)
                    for o, (x, g) in enumerate(use):
                        if x or g:
                            for r, amount in ((0, x), (1, g), (2, sh.memory)):
                                if amount and left[r] is not None:
                                    rows[(n, r, s + o)].append((v, float(amount)))
                    slots[(n, s)].append((v, 1.0))
            m.add_eq(terms, float(len(js)), f"count[{k}]")
            so_far: list = []
            for s in sorted(by_start):
                so_far += [(v, 1.0) for v in by_start[s]]
                arrived = sum(1 for j in js if arr[j] <= s)
                if arrived < len(js):
                    m.add_le(list(so_far), float(arrived), f"arrived[{k},{s}]")
        add_room_rows(m, payload, used, rows, slots)
        m.set_objective([(v, float(s + sh.steps)) for v, _k, sh, s in self.vars],
                        constant=-float(sum(arr[j] for j in free)), sense="min")
        self.hint = [float(current.get((k, sh, s), 0)) for _v, k, sh, s in self.vars]

    def solve(self, payload, *, time_limit: float | None, seed: int) -> tuple[dict[int, ScoredHistory] | None, Any]:
        """The freed tasks' new histories (re-simulated by the referee; None when HiGHS found
        no solution or a history does not finish where its shape says) and HiGHS's answer."""
        sol = solve_highs(self.model, hint=self.hint, time_limit=time_limit, threads=1, seed=seed)
        if sol.values is None:
            return None, sol
        chosen: dict[int, list[tuple[int, Shape]]] = defaultdict(list)
        for v, k, sh, s in self.vars:
            chosen[k] += [(s, sh)] * int(round(sol.values[v]))
        out: dict[int, ScoredHistory] = {}
        for k, js in self.groups.items():
            arrivals = [int(payload.tasks[j].arrival) for j in js]
            order = assign(arrivals, [s for s, _ in chosen[k]]) if len(chosen[k]) == len(js) else None
            if order is None:
                return None, sol
            for j, i in zip(js, order):
                s, sh = chosen[k][i]
                col = column(payload, j, sh.cluster, [(s + r, c, g) for r, c, g in sh.pieces])
                if col is None or col.F != s + sh.steps:
                    return None, sol
                out[j] = col
        return out, sol


def improve(instance, start: list[ScoredHistory], *, seed: int = 0, length: int = LENGTH, reach: int = REACH,
            sub_limit: float = SUB_LIMIT, iterations: int | None = None,
            deadline: float | None = None) -> tuple[list[ScoredHistory], dict]:
    """Steps 2-5 from ``start`` (one history per task) until ``iterations`` windows, the
    ``deadline`` (a ``time.perf_counter()`` value) or every window gave nothing (stats
    ``exhausted``). Returns the incumbent and the stats."""
    payload = instance.placement
    t0 = time.perf_counter()
    arr = [int(t.arrival) for t in payload.tasks]
    cls, steps_key = interchangeable(payload), same_steps(payload)
    rep: dict[int, int] = {}
    for j, k in enumerate(cls):
        rep.setdefault(k, j)
    base: dict[tuple, list[Shape]] = {}  # per (same_steps key, cluster)
    cur = list(start)
    value = float(sum(c.F - arr[c.j] for c in cur))
    rng = np.random.default_rng(seed)
    failed: set[int] = set()
    info: dict[str, Any] = {"iterations": 0, "improvements": 0, "optimal_windows": 0, "skipped_large": 0,
                            "rejected": 0, "trace": [], "exhausted": False, "start_value": value}
    it = 0
    while iterations is None or it < iterations:
        if deadline is not None and time.perf_counter() >= deadline:
            break
        H = max(c.F for c in cur) + HORIZON
        offsets = [t for t in range(0, H, max(1, length // 2))
                   if t not in failed and any(t <= c.s < t + length for c in cur)]
        if not offsets:
            info["exhausted"] = True
            break
        it += 1
        w0 = offsets[int(rng.integers(0, len(offsets)))]
        free = [c.j for c in cur if w0 <= c.s < w0 + length]
        shapes: dict[int, list[Shape]] = defaultdict(list)
        try:
            for k in sorted({cls[j] for j in free}):
                j = rep[k]
                for n in payload.tasks[j].eligible:
                    if (steps_key[j], n) not in base:
                        base[(steps_key[j], n)] = class_shapes(payload, j, n, deadline)
                    shapes[k] += base[(steps_key[j], n)]
            for c in cur:  # every current history of a freed class, as a shape of that class
                if cls[c.j] in shapes:
                    shapes[cls[c.j]].append(as_shape(payload, c))
            win = ShapeWindow(payload, cur, free, cls, shapes, reach, H, deadline)
        except Expired:
            break
        if len(win.vars) > MAX_VARS:
            info["skipped_large"] += 1
            failed.add(w0)
            continue
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0:
            break
        new, sol = win.solve(payload, time_limit=sub_limit if left is None else min(sub_limit, left), seed=it)
        now = sum(cur[j].F - arr[j] for j in free)
        if new is None or sum(c.F - arr[j] for j, c in new.items()) >= now:
            if sol.status == "optimal":
                info["optimal_windows"] += 1
                failed.add(w0)
            elif new is None and sol.values is not None:  # a history that does not finish where its shape says
                info["rejected"] += 1
                failed.add(w0)
            continue
        trial = list(cur)
        for j, c in new.items():
            trial[j] = c
        ev = evaluate(instance, to_decisions(trial))
        if not ev.feasible or float(ev.primary_value) >= value:
            info["rejected"] += 1
            failed.add(w0)
            continue
        cur, value = trial, float(ev.primary_value)
        failed = set()
        info["improvements"] += 1
        info["trace"].append((round(time.perf_counter() - t0, 2), it, value))
    info.update(iterations=it, value=value, shape_lists=len(base), shapes=sum(len(v) for v in base.values()))
    return cur, info


def summary(info: dict) -> str:
    """One line for the run's store (its ``message``)."""
    end = ("exhausted: every window gave nothing on the incumbent (its sub-MIP optimal or skipped)"
           if info["exhausted"] else "stopped")
    return (f"{info['iterations']} windows, {info['improvements']} improvements, {info['optimal_windows']} "
            f"solved to optimality without gain, {info['skipped_large']} too large; {end}")


@register(SOLVER_NAME, families=("placement",), kind="heuristic",
          description="Shape LNS: windows in time free the tasks whose first start lies in a span of steps, on "
                      "every cluster; interchangeable tasks choose together among shapes (histories relative to "
                      "their start: dominant fixed allocations, two-piece re-allocations, the current histories; "
                      "finishes by the referee) at starts near their arrivals or current starts, by an integer "
                      "counting MIP (HiGHS); scored by the referee",
          params={"length": f"int: steps of first starts a window frees (default {LENGTH})",
                  "reach": f"int: a freed task may start within this many steps after its arrival or around its "
                           f"current start (default {REACH})",
                  "sub_limit": f"seconds per sub-MIP (default {SUB_LIMIT})",
                  "iterations": "int: stop after this many windows (default: the time limit; "
                                f"{DEFAULT_ITERATIONS} without one)",
                  "warm_start": f"start from this schedule instead of sjf / optimus: a placement solution file, "
                                f"{BEST_KNOWN!r} or {LAGRANGIAN!r} (as for placement-lns)"},
          bounds={"length": (1, 10_000), "reach": (0, 1_000), "sub_limit": (0.1, None), "iterations": (0, None)},
          check=lambda p: check_warm_start(p.get("warm_start")), applies=not_applicable)
def solve(instance, *, time_limit: float | None = None, seed: int = 0, length: int = LENGTH, reach: int = REACH,
          sub_limit: float = SUB_LIMIT, iterations: int | None = None, warm_start: str | None = None):
    """Improve a start schedule by time windows over shapes. A bad warm start is an InputError
    (raised before any work; unknown parameters are the registry's InputError); nothing else
    raises."""
    params = {"length": length, "reach": reach, "sub_limit": sub_limit, "iterations": iterations,
              "warm_start": warm_start}

    def search(payload, start_cols, deadline, iterations, stats):
        cols, info = improve(instance, start_cols, seed=seed, length=int(length), reach=int(reach),
                             sub_limit=float(sub_limit), iterations=iterations, deadline=deadline)
        stats.update(info)
        stats["message"] = summary(info)
        return cols, "feasible"

    return window_search(instance, SOLVER_NAME, params, search, time_limit=time_limit, seed=seed,
                         warm_start=warm_start, iterations=iterations, default_iterations=DEFAULT_ITERATIONS)


__all__ = ["solve", "improve", "ShapeWindow", "class_shapes", "interchangeable", "held", "dominates", "undominated",
           "shape_of", "as_shape", "assign", "same_steps", "summary", "SOLVER_NAME", "LENGTH", "REACH"]
