"""Exact model of the placement referee's own problem (re-allocating schedules): A* search.

The decision problem is exactly the referee's (``edgebench/referee/placement.py``): in every
step each arrived, unfinished task waits, starts on an eligible cluster or (once started)
takes any allocation of its cluster or the pause (0, 0); capacities per cluster and step,
one first start per cluster and step in the single variant; progress, noise (indexed by the
task's executed steps), the switching loss and the finish rule applied with the same float
operations as the referee; objective: total completion time.  A state is (step, per task:
waiting | (cluster, progress, executed steps, previous allocation) | finished).

Search: A* from step 0, f = (completions of finished tasks) + sum over unfinished tasks of
a lower bound on their completion: the fewest steps the task needs alone on its cluster from
its state (a breadth-first search over its own moves, capacity of other tasks ignored; a
search that grows past a cap stops at the depth reached, still a lower bound).  The
incumbent is the best fixed-allocation greedy schedule of :mod:`.placement` (feasible for the
referee); nodes with f >= incumbent are cut.  The first finished state popped is optimal
(admissible f); an empty queue proves the incumbent optimal; at the time limit the bound is
min(smallest f in the queue, incumbent), a bound of the referee's problem.  Before the search
the root bound, the integer time-indexed relaxation R of :mod:`placement.bounds.timip`, tries to prove
the incumbent optimal; the bound reported is the larger of the two.
The search stops as at its time limit on memory too (issue 46): past 80 % of ``memory_mb`` or of
the limits in force (:class:`.MemoryBudget`, checked before and inside each expansion) or at a
``MemoryError`` while expanding a node, which stays queued.

Reductions (proofs in docs/formulations/placement.md, "Exact model of the referee's
problem"), applied only where the monotonicity lemma holds (table performance models, or
every synthetic type with curvature >= 1): allocations are restricted to the componentwise
minimal ones of each class of equal progress rate, and a task never starts with a pause.
Elsewhere every allocation and pause-starts are searched.
"""

from __future__ import annotations

import heapq
import math
import time
from typing import Any

from edgebench.formulations.placement.problem import (
    PAUSE,
    JointUse,
    best_greedy,
    greedy_schedule,
    is_done,
    prepare,
    schedule_objective,
    step_progress,
    to_decisions,
)
from edgebench.formulations.placement.milp import solve as milp_solve
from edgebench.formulations.placement.bounds.ladder import BoundTooLarge
from edgebench.formulations.memory import FRACTION, MemoryBudget
from edgebench.formulations.placement.deadline import Deadline, Expired
from edgebench.formulations.placement.enum import decisions_from_path
from edgebench.formulations.placement.bounds.histip import MAX_COLUMNS as HISTIP_COLUMNS
from edgebench.formulations.placement.bounds.histip import MAX_LABELS as HISTIP_LABELS
from edgebench.formulations.placement.bounds.histip import histip_bound
from edgebench.formulations.placement.bounds.histsplit import read_checkpoint, split_bound
from edgebench.formulations.placement.bounds.residual import residual_slot_bound
from edgebench.formulations.placement.bounds.timip import timip_bound
from edgebench.errors import InputError
from edgebench.instances import semantics
from edgebench.referee.placement import evaluate
from edgebench.registry import make_result, register

SOLVER_NAME = "placement-exact"
FIN = ("F",)
#: a per-task breadth-first search for the completion bound stops past this many states per depth
BFS_CAP = 4000
DEFAULT_MAX_NODES = 2_000_000
#: share of the time limit given to the fixed-allocation MILP for the incumbent
MILP_SHARE = 0.3
#: ... or deeper than this many steps
BFS_DEPTH = 1000
#: the completion bound of a task that can never finish from its state
NEVER = 10**12
#: share of the time limit (after the MILP) given to the root bound, the integer relaxation R
ROOT_SHARE = 0.5


def lemma_holds(payload) -> bool:
    """Whether 'more progress never finishes later' is proven for this instance's model:
    table models (constant gain per allocation) and synthetic types with curvature >= 1."""
    perf = payload.performance
    if perf.kind != "synthetic":
        return True
    return all(t.curvature >= 1.0 for t in perf.types.values())


def rate_key(payload, j: int, cpu: int, gpu: int):
    """What task j's per-step gain depends on at an allocation (above its minimum): the
    synthetic w, or the table's seconds. Equal keys give equal gains at every progress."""
    perf = payload.performance
    task = payload.tasks[j]
    if perf.kind == "synthetic":
        t = perf.types[task.type]
        if t.gpu_scale is None:
            return 0.0
        g = float(gpu) if t.cpu_per_gpu is None else min(float(gpu), cpu / t.cpu_per_gpu)
        return math.tanh(g / t.gpu_scale)
    return semantics.table_seconds(perf, task.type, cpu, gpu)


def reduced_options(payload, j: int, n: int) -> list[tuple[int, int]]:
    """The componentwise-minimal allocations of each rate class of task j on cluster n."""
    opts = semantics.allocation_options(payload, j, n)
    groups: dict[Any, list[tuple[int, int]]] = {}
    for a in opts:
        groups.setdefault(rate_key(payload, j, *a), []).append(a)
    keep = []
    for members in groups.values():
        for a in members:
            if not any(b != a and b[0] <= a[0] and b[1] <= a[1] for b in members):
                keep.append(a)
    return sorted(keep)


#: the time limit passed inside one expansion (or while the search was being set up)
OutOfTime = Expired


class OutOfMemory(Exception):
    """The memory budget passed inside one expansion (its joint moves: issue 46); the message
    says which limit."""


class Model:
    """The joint moves and the per-task completion bounds of one instance."""

    def __init__(self, payload, reduce: bool, slots: bool = True, deadline: Deadline | None = None):
        self.p = payload
        self.reduce = reduce
        self.overhead = 1.0 - payload.switching_overhead
        self.arrival = [t.arrival for t in payload.tasks]
        opt = reduced_options if reduce else semantics.allocation_options
        dl = Deadline.of(deadline)
        self.options = []
        for j, t in enumerate(payload.tasks):  # raises Expired past ``deadline``
            dl.check("listing the allocations")
            self.options.append({n: opt(payload, j, n) for n in t.eligible})
        self.move_cache: dict = {}
        self.rest_cache: dict = {}
        self.rank_cache: dict = {}
        self.slot_cache: dict = {}
        #: the residual start-slot bound applies (single variant)
        self.slots = slots and payload.variant == "single"
        #: past this time rest() stops at the depth reached (still a lower bound)
        self.deadline: float | None = None

    def step(self, j, prog, k, prev, a, first):
        prog = step_progress(self.p, j, a, prog, k, prev, first, self.overhead)
        return FIN if is_done(prog) else (prog, k + 1, a)

    def moves(self, j, st) -> list:
        """(next state, allocation, cluster, first non-empty allocation?) of task j."""
        key = (j, st)
        hit = self.move_cache.get(key)
        if hit is not None:
            return hit
        out = []
        if st is None:
            out.append((None, PAUSE, -1, False))
            for n, opts in self.options[j].items():
                if not self.reduce:
                    out.append(((n, 0.0, 0, PAUSE, False), PAUSE, n, False))
                for a in opts:
                    r = self.step(j, 0.0, 0, PAUSE, a, True)
                    out.append((FIN if r == FIN else (n, *r, True), a, n, True))
        else:
            n, prog, k, prev, held = st
            out.append(((n, prog, k, PAUSE, held), PAUSE, n, False))
            for a in self.options[j][n]:
                r = self.step(j, prog, k, prev, a, False)
                out.append((FIN if r == FIN else (n, *r, True), a, n, not held))
        self.move_cache[key] = out
        return out

    def rest(self, j, n, prog, k, prev, first) -> int:
        """A lower bound (>= 1) on the steps task j needs alone on cluster n from this state:
        breadth-first over its moves (pauses included), stopped at the depth where the
        frontier outgrows BFS_CAP, reaches BFS_DEPTH or the deadline passes."""
        key = (j, n, prog, k, prev, first)
        hit = self.rest_cache.get(key)
        if hit is not None:
            return hit
        frontier = {(prog, k, prev, first)}
        depth = 1
        while True:
            nxt = set()
            for (q, kk, pv, fs) in frontier:
                nxt.add((q, kk, PAUSE, False))
                for a in self.options[j][n]:
                    r = self.step(j, q, kk, pv, a, fs)
                    if r == FIN:
                        self.rest_cache[key] = depth
                        return depth
                    nxt.add((*r, False))
            if nxt == frontier:  # nothing but pauses: never finishes here
                self.rest_cache[key] = NEVER
                return NEVER
            if (len(nxt) > BFS_CAP or depth >= BFS_DEPTH
                    or (self.deadline is not None and time.perf_counter() > self.deadline)):
                self.rest_cache[key] = depth + 1
                return depth + 1
            frontier = nxt
            depth += 1

    def fresh_rest(self, j, n) -> int:
        """A lower bound on the steps task j needs on cluster n from its first non-empty
        allocation: the fresh start's; without the reductions also a start after a pause
        (which pays a switching loss, and without the lemma less progress need not be slower)."""
        r = self.rest(j, n, 0.0, 0, PAUSE, True)
        return r if self.reduce else min(r, self.rest(j, n, 0.0, 0, PAUSE, False))

    def min_rest(self, j) -> int:
        """fresh_rest of task j on its best cluster."""
        return min(self.fresh_rest(j, n) for n in self.options[j])

    def task_h(self, j, t: int, st) -> int:
        """Lower bound on task j's completion time (finish - arrival) from state st at step t."""
        if st is None:
            return max(t, self.arrival[j]) - self.arrival[j] + self.min_rest(j)
        n, prog, k, prev, _ = st
        return t - self.arrival[j] + self.rest(j, n, prog, k, prev, False)

    def h(self, t: int, states: tuple) -> int:
        """Sum of the tasks' own bounds; in the single variant the waiting tasks' part is
        replaced by the residual start-slot bound (never smaller: docs)."""
        total = 0
        waiting = []
        for j, st in enumerate(states):
            if st == FIN:
                continue
            if st is None and self.slots:
                waiting.append(j)
            else:
                total += self.task_h(j, t, st)
        if waiting:
            total += self.slot_h(t, tuple(waiting))
        return total

    def slot_h(self, t: int, waiting: tuple) -> int:
        key = (t, waiting)
        hit = self.slot_cache.get(key)
        if hit is None:
            durs = []
            for j in waiting:
                row = {n: self.fresh_rest(j, n) for n in self.options[j]}
                durs.append({n: d for n, d in row.items() if d < NEVER})
            if all(durs):
                try:
                    hit = residual_slot_bound(self.p.clusters, t, [self.arrival[j] for j in waiting], durs)
                except BoundTooLarge:  # its dense matrix passes the budget: the tasks' own bounds
                    hit = sum(self.task_h(j, t, None) for j in waiting)
            else:
                hit = NEVER
            self.slot_cache[key] = hit
        return hit

    def ranked_moves(self, j, st) -> list:
        """moves(j, st) with their bound key (0 finished, else the steps still needed),
        ascending: task_h after the step is (t + 1 - a_j) + key."""
        key = (j, st)
        hit = self.rank_cache.get(key)
        if hit is None:
            hit = []
            for mv in self.moves(j, st):
                ns = mv[0]
                if ns == FIN:
                    v = 0
                elif ns is None:
                    v = self.min_rest(j)
                else:
                    v = self.rest(j, ns[0], ns[1], ns[2], ns[3], False)
                hit.append((v, mv))
            hit.sort(key=lambda x: x[0])
            self.rank_cache[key] = hit
        return hit

    def children(self, t: int, states: tuple, deadline: float | None = None, g: int = 0,
                 limit: float = math.inf, memory: MemoryBudget | None = None):
        """Every joint move of step t whose child could have f < ``limit`` (g: the node's
        completed cost): (next states, completions added, allocations). Partial joint moves are
        cut by the separable part of the child's f (each task's own bound after the step; the
        tasks not yet decided at their smallest): a lower bound of every completion's f.
        Raises :class:`OutOfTime` past ``deadline`` and :class:`OutOfMemory` past ``memory`` (a
        step of many tasks has very many joint moves: at 192 tasks one node's list filled 4 GiB)."""
        tn = t + 1
        active = [j for j, s in enumerate(states) if s != FIN and self.arrival[j] <= t]
        act = set(active)
        base = g + sum(self.task_h(j, tn, s) for j, s in enumerate(states) if s != FIN and j not in act)
        ranked = [self.ranked_moves(j, states[j]) for j in active]
        suffix = [0] * (len(active) + 1)
        for i in range(len(active) - 1, -1, -1):
            suffix[i] = suffix[i + 1] + tn - self.arrival[active[i]] + ranked[i][0][0]
        use = JointUse(self.p)
        nxt = list(states)
        allocs: list = [None] * len(states)
        out = []

        calls = [0]

        def rec(i: int, cost: int, acc: int):
            calls[0] += 1
            if calls[0] % 4096 == 0:
                if deadline is not None and time.perf_counter() > deadline:
                    raise OutOfTime("expanding a node")
                why = None if memory is None else memory.exceeded()
                if why is not None:
                    raise OutOfMemory(why)
            if i == len(active):
                out.append((tuple(nxt), cost, tuple(allocs)))
                return
            j = active[i]
            own = tn - self.arrival[j]
            for v, (ns, a, n, first) in ranked[i]:
                if base + acc + own + v + suffix[i + 1] >= limit:
                    break  # ranked ascending: every later move is cut too
                u = None
                if a != PAUSE:
                    u = use.take(j, n, a, first)
                    if u is None:
                        continue
                nxt[j] = ns
                allocs[j] = (n, a)
                rec(i + 1, cost + (own if ns == FIN else 0), acc + own + v)
                if u is not None:
                    use.give_back(n, u, first)
            nxt[j] = states[j]
            allocs[j] = None

        rec(0, 0, 0)
        return out


def search(payload, *, deadline: Deadline | float | None = None, max_nodes: int = DEFAULT_MAX_NODES,
           reduce: bool | None = None, incumbent: tuple | None = None, slots: bool = True,
           stop_at: float | None = None, data=None, memory: MemoryBudget | None = None) -> dict:
    """A* over the referee's problem. Returns value (best found), bound (valid lower bound),
    proven, decisions, nodes, source ('search', 'greedy' or the incumbent's name).
    ``incumbent``: (referee value, decisions, name) of a known feasible schedule; ``stop_at``:
    a proven lower bound (the root's): no search once the incumbent reaches it.  Past
    ``deadline`` while the search is being set up (options, greedy, the root's bound) it returns
    the incumbent with bound -inf and ``expired`` true; during the search, the queue's bound.
    ``data``: the instance's :func:`.placement.prepare` when the caller has it.  ``memory``
    (:class:`.MemoryBudget`; None: the limits in force): checked before each expansion and inside
    it; past it, or at a ``MemoryError`` in an expansion, the search stops as at its time limit
    (the node under way stays queued, the queue's bound holds) with ``memory`` saying why."""
    J = len(payload.tasks)
    budget = MemoryBudget.in_force() if memory is None else memory
    dl = Deadline.of(deadline)
    deadline = dl.at
    reduce = lemma_holds(payload) if reduce is None else bool(reduce)
    out = {"reduce": reduce}
    inc_value, inc_dec, source = math.inf, None, None

    def take_incumbent():
        nonlocal inc_value, inc_dec, source
        if incumbent is not None and incumbent[0] < inc_value:
            inc_value, inc_dec, source = incumbent

    def timed_out():
        take_incumbent()
        out.update(value=inc_value, bound=-math.inf, proven=False, decisions=inc_dec, nodes=0, expanded=0,
                   source=source, expired=True)
        return out

    if data is None:
        data = prepare(payload, deadline)  # first: it refuses an instance beyond the model's size (issue 28)
    if data is None:
        return timed_out()
    if all(data.options):
        sched = best_greedy(data, deadline)
        inc_value, inc_dec, source = float(schedule_objective(data, sched)), to_decisions(sched), "greedy"
    take_incumbent()
    init = tuple(None for _ in range(J))
    if stop_at is not None and inc_value <= stop_at:
        return {"reduce": reduce, "value": inc_value, "bound": float(inc_value), "proven": True,
                "decisions": inc_dec, "nodes": 0, "expanded": 0, "source": source}
    try:
        dl.check("setting up the search")
        model = Model(payload, reduce, slots, dl)
        model.deadline = deadline
        root = model.h(0, init)
        dl.check("bounding the root")
    except Expired:
        return timed_out()
    nodes = [(None, 0, None)]  # node id -> (parent id, step, allocations of the step that led here)
    heap = [(root, 0, 0, 0, init)]  # (f, -t, id, g, states)
    best_g: dict = {(0, init): 0}
    expanded = 0
    expired = False
    stopped_on = None  # why the search stopped on memory
    while heap:
        f, neg_t, nid, g, states = heapq.heappop(heap)
        if f >= inc_value:
            heap.clear()
            break
        t = -neg_t
        if best_g.get((t, states), math.inf) < g:
            continue
        if all(s == FIN for s in states):
            path = []
            i = nid
            while nodes[i][0] is not None:
                par, step, allocs = nodes[i]
                path.append((step, allocs))
                i = par
            inc_value, inc_dec, source = float(g), decisions_from_path(J, path[::-1]), "search"
            heap.clear()
            break
        stopped_on = budget.exceeded()
        if (deadline is not None and time.perf_counter() > deadline) or len(nodes) > max_nodes or stopped_on:
            heapq.heappush(heap, (f, neg_t, nid, g, states))
            expired = len(nodes) <= max_nodes
            break
        kids = None
        try:
            kids = model.children(t, states, deadline, g, inc_value, budget)
        except OutOfTime:
            expired = True
        except OutOfMemory as exc:
            expired, stopped_on = True, str(exc)
        except MemoryError as exc:  # a joint-move list (or a cache) hit the limit before a check
            kids = None  # free what the expansion built
            expired, stopped_on = True, f"stopped on memory: MemoryError while expanding a node ({exc or 'no message'})"
        if kids is None:
            heapq.heappush(heap, (f, neg_t, nid, g, states))
            break
        expanded += 1
        for i, (nxt, cost, allocs) in enumerate(kids):
            # the clock at every child (its bound h may solve a residual slot bound, unbounded in
            # time: 256 of them between checks could overrun the limit, issue 46), memory every 256
            if ((deadline is not None and time.perf_counter() > deadline)
                    or (i % 256 == 255 and (stopped_on := budget.exceeded()))):
                # the node is not fully expanded: keep it queued so the bound stays valid
                heapq.heappush(heap, (f, neg_t, nid, g, states))
                expired = True
                break
            g2 = g + cost
            key = (t + 1, nxt)
            if best_g.get(key, math.inf) <= g2:
                continue
            f2 = g2 + model.h(t + 1, nxt)
            if f2 >= inc_value:
                continue
            best_g[key] = g2
            nodes.append((nid, t, allocs))
            heapq.heappush(heap, (f2, -(t + 1), len(nodes) - 1, g2, nxt))
        else:
            continue
        break
    bound = min(heap[0][0], inc_value) if heap else inc_value
    out.update(value=inc_value, bound=float(bound), proven=not heap and math.isfinite(inc_value),
               decisions=inc_dec, nodes=len(nodes), expanded=expanded, source=source, expired=expired,
               memory=stopped_on)
    return out


def _milp_incumbent(instance, time_limit: float | None, share: float):
    """(referee value, decisions, "placement-milp") of the fixed-allocation MILP's schedule,
    run for ``share`` of the time limit; None when it has none or the referee rejects it."""
    res = milp_solve(instance, time_limit=None if time_limit is None else share * float(time_limit))
    dec = res.solution.placement
    if dec is None:
        return None
    ev = evaluate(instance, dec)
    if not ev.feasible:
        return None
    return float(ev.primary_value), dec, "placement-milp"


def _root_bound(instance, incumbent, upper: int | None, time_limit: float | None, seed: int, stats: dict,
                histip: bool = True, data=None, histip_columns: int = HISTIP_COLUMNS,
                histip_labels: int = HISTIP_LABELS, timip: bool = True, histip_split: float | None = None,
                histip_checkpoint: str | None = None):
    """(bound, incumbent): the root bound, R (:mod:`placement.bounds.timip`) proving 'no schedule of
    value <= U - 1' for U = the smallest of ``upper``, the incumbent's and the greedy's value
    (any U is sound: docs), then, where R stays below U and ``histip``, bound (7)
    (:mod:`placement.bounds.histip`) for the same U with the time R left; the bound is None where
    both decline (``timip`` false: (7) alone, with all of the time; ``histip_split``: (7) by cases,
    :mod:`placement.bounds.histsplit`, with that share, its cases kept in ``histip_checkpoint``
    where given).  A referee-feasible schedule of
    (7)'s master better than ``incumbent`` replaces it.  Statistics in ``stats['root']`` and
    ``stats['histip']``."""
    p = instance.placement
    t0 = time.perf_counter()
    dl = Deadline.after(time_limit, t0)
    cands = [] if upper is None else [int(upper)]
    if incumbent is not None:
        cands.append(math.ceil(incumbent[0] - 1e-9))
    data = prepare(p, dl.at) if data is None else data
    if data is None:
        stats["root"] = {"bound": None, "reason": "out of time while listing the options"}
        return None, incumbent
    if all(data.options):
        cands.append(math.ceil(float(schedule_objective(data, best_greedy(data, dl.at))) - 1e-9))
    if not cands:
        return None, incumbent
    if timip:
        r = timip_bound(p, min(cands), time_limit=dl.remaining(), seed=seed)
        info = {k: v for k, v in r.stats.items() if k != "relaxed_schedule"}
        stats["root"] = dict(info, bound=r.bound, reason=r.reason)
        r_bound = r.bound
    else:
        r_bound = None
        stats["root"] = {"bound": None, "reason": "R not asked for (timip=false)"}
    if not histip or (r_bound is not None and r_bound >= min(cands)):
        return r_bound, incumbent
    left = None if time_limit is None else max(0.0, float(time_limit) - (time.perf_counter() - t0))
    caps = {"time_limit": left, "seed": seed, "max_columns": histip_columns, "max_labels": histip_labels}
    if histip_split is None:
        h = histip_bound(instance, min(cands), **caps)
    else:
        h = split_bound(instance, min(cands), share=float(histip_split), checkpoint=histip_checkpoint, **caps)
    stats["histip"] = dict(h.stats, bound=h.bound, reason=h.reason)
    if h.schedule is not None and (incumbent is None or h.schedule[0] < incumbent[0]):
        incumbent = (h.schedule[0], h.schedule[1], "placement-histip")
    bounds = [b for b in (r_bound, h.bound) if b is not None]
    return (max(bounds) if bounds else None), incumbent


@register(SOLVER_NAME, families=("placement",), kind="exact",
          description="Exact model of the referee's own problem (re-allocation, pauses, switching loss, noise): "
                      "A* over joint step states with per-task completion bounds; its bound holds for every "
                      "referee-feasible schedule",
          params={"max_nodes": f"int: stop after this many search nodes (default {DEFAULT_MAX_NODES})",
                  "reduce": "bool: the proven reductions (minimal allocation per rate class, no pause-start); "
                            "default: where the monotonicity lemma holds",
                  "milp_share": f"share of the time limit for the fixed-allocation MILP's incumbent (default "
                                f"{MILP_SHARE}; 0: the greedy only)",
                  "root": "bool: the root bound of the integer time-indexed relaxation R (default true)",
                  "root_share": f"share of the time left after the MILP for R and (7) (default {ROOT_SHARE})",
                  "histip": "bool: bound (7), the exact-history integer master, after R where R stays below U "
                            "(default true)",
                  "upper": "int: prove 'no schedule of value <= upper - 1' at the root (default: the "
                           "incumbent's value; any value is sound)",
                  "timip": "bool: R at the root before (7) (default true; false: (7) alone, with all of the root's "
                           "time; R may take it all, or crash, on 192-task instances)",
                  "histip_columns": f"int: (7) declines past this many columns (default {HISTIP_COLUMNS})",
                  "histip_labels": f"int: (7) declines past this many live labels (default {HISTIP_LABELS})",
                  "histip_split": "number in [0.5, 1]: (7) by cases split at this share of its knapsack's slack, "
                                  "the same bound with the small pool and one task's large columns in memory at a "
                                  "time (default: unsplit)",
                  "histip_checkpoint": "path of a .json file: with histip_split, the cases solved so far are kept "
                                       "there after each case, and a run with the same arguments replays them and "
                                       "goes on (default: none)",
                  "memory_mb": f"number: a memory budget, MiB: the search stops (status timeout, with its bound) once "
                               f"the address space passes {FRACTION:.0%} of it (default none: only the limits in "
                               f"force, RLIMIT_AS and a memory cgroup's, each at {FRACTION:.0%})"},
          bounds={"max_nodes": (1, None), "milp_share": (0, 1), "root_share": (0, 1), "upper": (1, None),
                  "memory_mb": (1, None), "histip_columns": (1, 10_000_000), "histip_labels": (1, 100_000_000),
                  "histip_split": (0.5, 1)})
def solve(instance, *, time_limit: float | None = None, seed: int = 0, max_nodes: int = DEFAULT_MAX_NODES,
          reduce: bool | None = None, milp_share: float = MILP_SHARE, root: bool = True,
          root_share: float = ROOT_SHARE, upper: int | None = None, histip: bool = True,
          memory_mb: float | None = None, histip_columns: int = HISTIP_COLUMNS, histip_labels: int = HISTIP_LABELS,
          timip: bool = True, histip_split: float | None = None, histip_checkpoint: str | None = None,
          **extra: Any):
    """Solve the referee's placement problem exactly (deterministic: ``seed`` only seeds HiGHS in
    the root bound, whose result is the same for every seed up to its time limit)."""
    t0 = time.perf_counter()
    params = {"max_nodes": max_nodes, "reduce": reduce, "milp_share": milp_share, "root": root,
              "root_share": root_share, "upper": upper, "histip": histip,
              **({} if memory_mb is None else {"memory_mb": memory_mb}),
              **({} if histip_columns == HISTIP_COLUMNS else {"histip_columns": histip_columns}),
              **({} if histip_labels == HISTIP_LABELS else {"histip_labels": histip_labels}),
              **({} if timip else {"timip": False}),
              **({} if histip_split is None else {"histip_split": histip_split}),
              **({} if histip_checkpoint is None else {"histip_checkpoint": histip_checkpoint})}
    stats: dict[str, Any] = {"message": ""}
    if extra:
        stats["message"] = f"unknown parameters: {', '.join(sorted(extra))}"
        return make_result(instance, SOLVER_NAME, status="error", seed=seed, params=params, started=t0,
                           stats=stats)
    if histip_checkpoint is not None and (not isinstance(histip_checkpoint, str)
                                          or not histip_checkpoint.endswith(".json") or histip_split is None):
        stats["message"] = "histip_checkpoint must be the path of a .json file, given with histip_split"
        return make_result(instance, SOLVER_NAME, status="error", seed=seed, params=params, started=t0,
                           stats=stats)
    try:
        if histip_checkpoint is not None:
            read_checkpoint(histip_checkpoint)  # a file there that is not a checkpoint is refused before any work
    except InputError as exc:
        stats["message"] = f"histip_checkpoint: {exc}"
        return make_result(instance, SOLVER_NAME, status="error", seed=seed, params=params, started=t0,
                           stats=stats)
    if instance.placement.noise_model != "multiplicative" and instance.placement.noise > 0:
        stats["message"] = "additive noise is not modelled by placement-exact (its bounds assume multiplicative noise)"
        return make_result(instance, SOLVER_NAME, status="error", seed=seed, params=params, started=t0,
                           stats=stats)
    if reduce is not None and reduce and not lemma_holds(instance.placement):
        stats["message"] = "reduce=true needs the monotonicity lemma (curvature >= 1 or a table model)"
        return make_result(instance, SOLVER_NAME, status="error", seed=seed, params=params, started=t0,
                           stats=stats)
    deadline = Deadline.after(time_limit, t0)
    try:
        # the options first (every phase needs them; the size check of issue 28), then the cheap
        # constructive schedule that a run stopped by the clock returns when nothing better was found
        data = prepare(instance.placement, deadline.at)
        if data is None:
            stats["message"] = "no schedule: the time limit ran out while listing the tasks' options"
            return make_result(instance, SOLVER_NAME, status="timeout", seed=seed, params=params, started=t0,
                               stats=stats)
        fallback = _fallback(data) if deadline.at is not None else {}
        incumbent = None
        if milp_share > 0 and not deadline.expired():
            incumbent = _milp_incumbent(instance, deadline.share(float(milp_share)).remaining(), 1.0)
        lb = None
        if root and not deadline.expired():
            left = deadline.share(float(root_share)).remaining()
            lb, incumbent = _root_bound(instance, incumbent, upper, left, seed, stats, histip=bool(histip), data=data,
                                        histip_columns=int(histip_columns), histip_labels=int(histip_labels),
                                        timip=bool(timip), histip_split=histip_split,
                                        histip_checkpoint=histip_checkpoint)
        r = search(instance.placement, deadline=deadline, max_nodes=int(max_nodes), reduce=reduce,
                   incumbent=incumbent, stop_at=lb, data=data, memory=MemoryBudget.in_force(memory_mb))
        if r["decisions"] is None and r.get("expired"):
            r.update(fallback)
    except Exception as exc:  # never raise out of solve
        stats["message"] = f"{type(exc).__name__}: {exc}"
        return make_result(instance, SOLVER_NAME, status="error", seed=seed, params=params, started=t0,
                           stats=stats)
    if lb is not None and math.isfinite(r["value"]):
        # both bound every referee-feasible schedule; neither is above the value found
        r["bound"] = min(max(r["bound"], float(lb)), r["value"])
        r["proven"] = r["proven"] or r["bound"] >= r["value"]
    stats.update(nodes=r["nodes"], expanded=r["expanded"], source=r["source"], reduce=r["reduce"],
                 solve_time=time.perf_counter() - t0)
    if r.get("memory"):
        stats["memory"] = r["memory"]
        stats["message"] = f"{r['memory']}; the bound is the larger of the root's and the search queue's least f"
    if r["decisions"] is None:
        status = "infeasible" if r["proven"] else "timeout"
        return make_result(instance, SOLVER_NAME, status=status, seed=seed, params=params, started=t0,
                           bound=r["bound"] if math.isfinite(r["bound"]) else None, stats=stats)
    # stopped by the clock (not by max_nodes): timeout, with the best schedule found
    status = "optimal" if r["proven"] else ("timeout" if r.get("expired") else "feasible")
    return make_result(instance, SOLVER_NAME, status=status,
                       decisions=r["decisions"], seed=seed, params=params, objective=r["value"],
                       bound=r["bound"] if math.isfinite(r["bound"]) else None, started=t0, stats=stats)


def _fallback(data) -> dict:
    """The cheap constructive schedule that a run whose time ran out before any schedule was
    found returns: one greedy list schedule (arrival order; one pass over the tasks)."""
    if not all(data.options):
        return {}
    sched = greedy_schedule(data)
    return {"value": float(schedule_objective(data, sched)), "decisions": to_decisions(sched), "source": "greedy"}


__all__ = ["solve", "search", "lemma_holds", "reduced_options", "SOLVER_NAME"]
