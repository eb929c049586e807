"""Branch-and-price on the exact-trajectory master of (6) (bound (8)).  Proof:
docs/formulations/placement.md, "(8) Branch-and-price".

The master LP of (6) (with (6)'s rounding cuts) is solved at the nodes of a search tree.  A node
restricts some tasks (:class:`Rule`): the clusters a task may run on, and a window
``lo <= s <= hi`` for its first start s.  Every referee-feasible schedule's tasks meet the rules
of exactly one child of each branching, so a node's certified Lagrangian value, computed with
prices restricted to the node's rules, bounds every schedule of its region, and

    bound = min(U, min over the open nodes of their certified values)

bounds every schedule at ANY stop (node limit, time limit), U being the referee value of a known
schedule (every schedule of value < U lies in some open node's region, the pruned regions hold
none below U).  The total completion time is an integer, so a node whose value reaches U is
pruned.

* pricing under a rule (:func:`price_restricted`): clusters outside the rule are not priced; a
  first start ``>= lo`` prices the task as if it arrived at lo (its cost keeps the true arrival);
  a first start ``<= hi`` adds :data:`PENALTY` to the start multiplier of every step after hi —
  the penalised price is at most the restricted one whatever the penalty (a minimum over more
  histories, the allowed ones at their own cost), so it is always a valid price; columns that
  break the rule are never added to the node's master;
* branching: on a task's cluster (the task whose cluster share is nearest 1/2), then on a task's
  first start (a split ``s <= t`` / ``s >= t + 1`` of a task with fractional starts); a node whose
  master solution is fractional in neither stays open (its value stays in the bound);
* cuts at the nodes: once a node's column generation has converged, the rounding cuts of (6)
  (:meth:`.Cuts.separate`) its master solution violates are added to the shared pool — valid
  for every referee-feasible schedule, so at every node — with every pool column's coefficients,
  to the node's master and to every later node's, and the column generation continues; up to
  :data:`NODE_CUT_ROUNDS` rounds a node, while the pool holds fewer than :data:`CUT_LIMIT` cuts.
  A point laid out before a cut existed gets nu = 0 on it (:meth:`Context.pad`): a valid point;
* identical tasks (``symmetry``, noise-free instances only): tasks that differ only in their
  arrival are interchangeable, so some optimal schedule starts each class's tasks in the order of
  their arrival (ties: task order); the tree searches those schedules only, and a split of task
  i's first start at t also restricts its class-mates (those before i start by t in the first
  child, those after it from t + 1 in the second), and start splits come before cluster splits
  (docs/formulations/placement.md, "(8) Branch-and-price", *Identical tasks*);
* best-bound node selection (ties: shallower first, then creation order — the bound rises only
  once every node of least value is gone, so diving does not raise it): deterministic under a
  node limit; a time limit only stops the search (the node under way stays open at its parent's
  value);
* memory (issue 46): before each node the search checks its :class:`.MemoryBudget` (a share of
  the ``memory_mb`` / ``RLIMIT_AS`` / cgroup limits in force) and stops as at a time limit when
  the process is past it; a ``MemoryError`` while solving a node (HiGHS's ``std::bad_alloc``)
  stops it too, that node staying open at its parent's value, so the bound above stays valid.
  Each node's master LP is freed when the node is done (:meth:`.MasterLP.close`): it was the
  memory that grew, about 14 MB per node at 192 tasks.
"""

from __future__ import annotations

import copy
import heapq
from dataclasses import dataclass, field

import numpy as np

from edgebench.formulations.placement.bounds.ladder import cluster_durations, proof_applies
from edgebench.formulations.placement.bounds.lagrange import (SCALE, MasterLP, generate_columns, greedy_columns,
                                                              lagrangian_multipliers)
from edgebench.formulations.placement.bounds.rounding import Cuts
from edgebench.formulations.placement.bounds.trajectory import (SWITCHING, WORK, Task, price_pair, rounded_multipliers,
                                                                 tasks_of)
from edgebench.formulations.memory import MemoryBudget
from edgebench.formulations.placement.deadline import NEVER, Deadline, Expired

#: added (2**-SCALE units) to the start multiplier of every step after a rule's latest first start
PENALTY = 1 << 40
#: nodes solved at most (the root included) by default: high, so that a time limit governs a certification run
NODES = 10_000
#: column-generation rounds per node, and rounds without a better certified value before stopping
ROUNDS = 200
STALL = 20
#: a master value at most this far from 0 or 1 counts as integral
EPS = 1e-6
#: separation rounds of the rounding cuts per node (after its column generation; 0: none, the
#: root's cuts only), and the pool size past which the nodes separate no more
NODE_CUT_ROUNDS = 3
CUT_LIMIT = 2_000


@dataclass(frozen=True)
class Rule:
    """A task's branching restrictions: the clusters it may run on (None: every eligible one) and
    its first start s in [lo, hi] (hi None: no upper limit)."""

    clusters: frozenset | None = None
    lo: int = 0
    hi: int | None = None
    #: (n, t, cpu, gpu): on cluster n the allocation (cpu, gpu) is not held in step t
    forbid: frozenset = frozenset()

    def allows(self, n: int, s: int, held: dict) -> bool:
        """Whether a history on n with first start s holding ``held`` {step: (cpu, gpu)} meets
        the rule."""
        return ((self.clusters is None or n in self.clusters) and s >= self.lo
                and (self.hi is None or s <= self.hi)
                and not any(nn == n and held.get(t) == (c, g) for nn, t, c, g in self.forbid))


def symmetric_classes(payload, tasks: list[Task]) -> dict[int, tuple[int, ...]] | None:
    """Live task index -> its class of identical tasks (every field but the arrival and the
    name equal), in the order (arrival, task), for classes of two or more; None when the
    instance has noise (the noise draws are per task, so no two tasks are interchangeable)."""
    if payload.noise > 0:
        return None
    by: dict = {}
    for i, t in enumerate(tasks):
        task = payload.tasks[t.j]
        key = task.model_dump_json(exclude={"arrival", "name"})
        by.setdefault(key, []).append((int(task.arrival), t.j, i))
    out: dict[int, tuple[int, ...]] = {}
    for members in by.values():
        if len(members) > 1:
            order = tuple(i for _, _, i in sorted(members))
            out.update((i, order) for i in order)
    return out


def held_of(use: dict) -> dict:
    """{step: (cpu, gpu)} of a usage {(n, r, t): amount} (one cluster)."""
    out: dict = {}
    for (_, r, t), x in use.items():
        out.setdefault(t, [0, 0])[r] = int(x)
    return {t: (c, g) for t, (c, g) in out.items()}


@dataclass(order=True)
class Node:
    """An open node: its certified value (a lower bound of every schedule in its region), its
    depth, creation number, the rules {live task index: Rule} and its parent's best point."""

    value: int
    depth: int
    number: int
    rules: dict = field(compare=False)
    grid: np.ndarray = field(compare=False)


@dataclass
class Result:
    """:func:`branch_and_price`'s answer: ``bound`` (None with ``reason`` where no proof
    applies), the root value (6)+cuts, the nodes solved, the open nodes left, statistics."""

    bound: int | None
    root: int | None = None
    nodes: int = 0
    open: int = 0
    reason: str = ""
    stats: dict = field(default_factory=dict)


class Context:
    """What every node shares: the live tasks, the horizon H, the capacities, the rounding cuts
    ((6)'s, then those the nodes separate) and the pool of every column generated (per column:
    task, cluster, F - a, first start (absolute), usage rows, cut coefficients and {step: (cpu,
    gpu)} before H)."""

    def __init__(self, payload, durations, rounded):
        self.tasks: list[Task] = tasks_of(payload, durations)
        self.H, self.N = rounded.H, len(payload.clusters)
        self.single = payload.variant == "single"
        self.caps = np.array([[c.capacity.cpu, c.capacity.gpu] for c in payload.clusters], dtype=np.int64)
        # a copy: the nodes add cuts, the caller's ``rounded`` (its nu) stays as it was
        self.cuts: Cuts = copy.deepcopy(rounded.cuts) if rounded.cuts is not None else Cuts(self.caps, self.H)
        self.ncap = self.N * 2 * self.H
        self.nbase = self.ncap + (self.N * self.H if self.single else 0)
        self.col: list[tuple] = []  # (i, n, m, s, rows, vals, cut ks, cut vs)
        self.held: list[dict] = []
        self.work = [0]
        self.node_cuts = [0, 0]  # cuts added at the nodes, nodes that added some

    def add(self, i: int, n: int, m: int, s: int, use: dict) -> int:
        use = {k: x for k, x in use.items() if k[2] < self.H}
        rows = np.array([(nn * 2 + r) * self.H + t for (nn, r, t) in use], dtype=np.int64)
        vals = np.array(list(use.values()), dtype=np.int64)
        ks, vs = self.cuts.column(use)
        self.col.append((i, n, int(m), int(s), rows, vals, np.array(ks, dtype=np.int64), np.array(vs, dtype=np.int64)))
        self.held.append(held_of(use))
        return len(self.col) - 1

    def add_cuts(self, new: list[int]) -> dict[int, list[tuple[int, int]]]:
        """Give every pool column its coefficients on the cuts ``new`` (just added to ``cuts``);
        returns {pool column: [(cut, coefficient)]} of the nonzero ones."""
        at: dict = {}
        for k in new:
            at.setdefault(self.cuts.keys[k][:2], []).append(k)
        out = {}
        for c, col in enumerate(self.col):
            n = col[1]
            hits = [(k, int(self.cuts.coef(k, cg[0], cg[1]))) for t, cg in sorted(self.held[c].items())
                    for k in at.get((n, t), ())]
            hits = [(k, v) for k, v in hits if v]
            if hits:
                ks = np.concatenate([col[6], np.array([k for k, _ in hits], dtype=np.int64)])
                vs = np.concatenate([col[7], np.array([v for _, v in hits], dtype=np.int64)])
                self.col[c] = col[:6] + (ks, vs)
                out[c] = hits
        return out

    def pad(self, grid: np.ndarray) -> np.ndarray:
        """A point laid out before cuts were added, with nu = 0 on them."""
        short = self.nbase + len(self.cuts) - grid.size
        return np.concatenate([grid, np.zeros(short, dtype=grid.dtype)]) if short > 0 else grid

    def allows(self, c: int, rule: Rule) -> bool:
        col = self.col[c]
        return rule.allows(col[1], col[3], self.held[c])

    def split(self, grid: np.ndarray):
        """(Lam (N, 2, H), Mu (N, H) or None, nu) of a point laid out as the master's duals."""
        Lam = grid[:self.ncap].reshape(self.N, 2, self.H)
        Mu = grid[self.ncap:self.nbase].reshape(self.N, self.H) if self.single else None
        return Lam, Mu, grid[self.nbase:]

    def cost(self, c: int, Lam, Mu, nu) -> int:
        """Column c's exact price (2**-SCALE units) at the point."""
        _, n, m, s, rows, vals, ks, vs = self.col[c]
        out = (int(m) << SCALE) + int(Lam.reshape(-1)[rows] @ vals) + (int(nu[ks] @ vs) if ks.size else 0)
        if Mu is not None and s < self.H:
            out += int(Mu[n, s])
        return out

    def master_column(self, c: int):
        """(cost, rows, values, task) of column c in :class:`MasterLP`'s layout (cut k at row
        nbase + k)."""
        i, n, m, s, rows, vals, ks, vs = self.col[c]
        r = [rows]
        v = [vals.astype(float)]
        if self.single and s < self.H:
            r.append(np.array([self.ncap + n * self.H + s], dtype=np.int64))
            v.append(np.ones(1))
        if ks.size:
            r.append(self.nbase + ks)
            v.append(vs.astype(float))
        return float(m), np.concatenate(r), np.concatenate(v), i

    def value(self, prices: list[int], Lam, Mu, nu) -> int:
        """ceil((sum prices - sum Lam C - sum Mu - sum nu rhs) / 2**SCALE), exact integers."""
        total = (sum(prices) - int((Lam * self.caps[:, :, None]).sum()) - (int(Mu.sum()) if Mu is not None else 0)
                 - self.cuts.total(nu))
        return -((-total) >> SCALE)


def price_restricted(ctx: Context, i: int, rule: Rule, Lam, Mu, nu, cap: int | None):
    """(lower bound of task i's least price over the histories its rule allows, [(n, F, s, use)]
    of allowed histories cheaper than ``cap``), or (None, []) when the rule allows no cluster.
    ``cap``: the cost of an allowed column (the bound is then at most it)."""
    t = ctx.tasks[i]
    H = ctx.H
    lo = max(t.a, rule.lo)
    best, found = cap, []
    priced_any = cap is not None
    for n, opt in t.opts.items():
        if rule.clusters is not None and n not in rule.clusters:
            continue
        if rule.hi is not None and rule.hi < lo:
            continue
        Hx, Lx, Mx = H, Lam, Mu
        if rule.hi is not None:  # the penalty from hi + 1 on, with room after it
            Hx = max(H, rule.hi + 1) + H + 64
            Lx = np.zeros((ctx.N, 2, Hx), dtype=np.int64)
            Lx[:, :, :H] = Lam
            Mx = np.zeros((ctx.N, Hx), dtype=np.int64)
            if Mu is not None:
                Mx[:, :H] = Mu
            Mx[n, rule.hi + 1:] += PENALTY
        extra = None
        if len(ctx.cuts) and nu.any() and lo < H:
            ex = ctx.cuts.step_costs(nu, n, lo, opt.cpu, opt.gpu)
            if ex is not None:
                extra = np.zeros((Hx - lo, opt.cpu.size), dtype=np.int64)
                extra[:H - lo] = ex
        for nn, tt, c, g in sorted(rule.forbid):
            hit = np.nonzero((opt.cpu == c) & (opt.gpu == g))[0]
            if nn == n and lo <= tt < Hx and hit.size:
                if extra is None:
                    extra = np.zeros((Hx - lo, opt.cpu.size), dtype=np.int64)
                extra[tt - lo, hit] += PENALTY
        shift = (lo - t.a) << SCALE
        r = price_pair(opt, lo, n, Lx, Mx, Hx, cap=None if best is None else best - shift, switching=SWITCHING,
                       work=ctx.work, extra=extra)
        priced_any = True
        if r is None:
            continue
        cost, F, s, use = r[0] + shift, r[1], r[2], r[3]
        best = cost if best is None else min(best, cost)
        if rule.allows(n, s, held_of(use)):
            found.append((n, F, s, use))
    if not priced_any or best is None:
        return None, []
    return best, found


class _NodeMaster(MasterLP):
    """:class:`MasterLP` that remembers each column's pool index (-1: a task's artificial
    column) in ``tags``; a column is (cost, rows, values, task, tag)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.tags: list[int] = []

    def add(self, cols: list) -> None:
        self.tags.extend(c[4] for c in cols)
        super().add([c[:4] for c in cols])


def solve_node(ctx: Context, node: Node, cutoff: int, big: float, *, rounds: int = ROUNDS, stall: int = STALL,
               expire: Deadline = NEVER, cut_rounds: int = NODE_CUT_ROUNDS):
    """(certified value, its point, master solution {pool column: share} or None, artificial
    share per task): column generation on the node's master, seeded with the pool's allowed
    columns and one artificial column per task (cost ``big``, no rows: the master is feasible),
    then up to ``cut_rounds`` times: separate the rounding cuts its solution violates (added to
    ``ctx.cuts``, every node's) and continue the column generation.  The value is at least the
    node's own (its parent's); the search stops once it reaches ``cutoff``.  Raises
    :class:`.Expired` past ``expire``."""
    master = _NodeMaster(ctx.caps, ctx.H, ctx.single, len(ctx.tasks))
    try:
        return _solve_node(ctx, node, master, cutoff, big, rounds, stall, expire, cut_rounds)
    finally:
        master.close()  # its HiGHS model now, not at the next full garbage collection (issue 46)


def _separate(ctx: Context, master: _NodeMaster) -> int:
    """Separate the rounding cuts the master's last solution violates; add them to the pool and
    to ``master`` (rows over its columns).  Returns how many were added."""
    x = master.primal()
    steps: dict = {}  # (n, t) -> [(share, cpu, gpu)]
    pos: dict[int, int] = {}  # pool column -> master column
    for j, c in enumerate(master.tags):
        if c < 0:
            continue
        pos[c] = j
        if x[j] > 1e-9:
            n = ctx.col[c][1]
            for t, (cpu, gpu) in sorted(ctx.held[c].items()):
                steps.setdefault((n, t), []).append((float(x[j]), cpu, gpu))
    new = ctx.cuts.separate(steps)
    if not new:
        return 0
    rows: dict[int, tuple[list, list]] = {k: ([], []) for k in new}
    for c, hits in ctx.add_cuts(new).items():
        if c in pos:
            for k, v in hits:
                rows[k][0].append(pos[c])
                rows[k][1].append(v)
    for k in new:
        master.add_cut(np.array(rows[k][0], dtype=np.int64), np.array(rows[k][1], dtype=float), ctx.cuts.rhs[k])
    return len(new)


def _solve_node(ctx: Context, node: Node, master: _NodeMaster, cutoff: int, big: float, rounds: int, stall: int,
                expire: Deadline, cut_rounds: int):
    rules = node.rules
    free = Rule()
    ntasks = len(ctx.tasks)
    for k in range(len(ctx.cuts)):
        master.add_cut(np.zeros(0, dtype=np.int64), np.zeros(0), ctx.cuts.rhs[k])
    allowed = [c for c, col in enumerate(ctx.col) if ctx.allows(c, rules.get(col[0], free))]
    master.add([(big, np.zeros(0, dtype=np.int64), np.zeros(0), i, -1) for i in range(ntasks)]
               + [ctx.master_column(c) + (c,) for c in allowed])
    best_seen = [node.value]

    def price_point(grid):
        Lam, Mu, nu = ctx.split(grid)
        caps = [None] * ntasks
        for c in allowed:
            i = ctx.col[c][0]
            v = ctx.cost(c, Lam, Mu, nu)
            caps[i] = v if caps[i] is None else min(caps[i], v)
        prices, new = [], []
        for i in range(ntasks):
            expire.check("pricing a node")
            p, found = price_restricted(ctx, i, rules.get(i, free), Lam, Mu, nu, caps[i])
            if p is None:  # the rules leave task i no cluster: the region is empty
                return 1 << 62, []
            prices.append(p)
            for n, F, s, use in found:
                c = ctx.add(i, n, F - ctx.tasks[i].a, s, use)
                allowed.append(c)
                new.append(ctx.master_column(c) + (c,))
        v = ctx.value(prices, Lam, Mu, nu)
        best_seen[0] = max(best_seen[0], v)
        return v, new

    grid = ctx.pad(node.grid)
    v0, cols = price_point(grid)
    master.add(cols)
    best = max(node.value, v0)
    if best >= cutoff:
        return best, grid, None, None
    for cr in range(cut_rounds + 1):
        if cr:  # separate on the converged master (the pool not full); nothing new: done
            if len(ctx.cuts) >= CUT_LIMIT:
                break
            if master.solve(expire) is None:
                expire.check("solving the master LP")
                break
            added = _separate(ctx, master)
            if not added:
                break
            ctx.node_cuts[0] += added
            ctx.node_cuts[1] += cr == 1
            grid = ctx.pad(grid)
        center = grid.astype(float) / (1 << SCALE)
        best, grid = generate_columns(master, center, best, grid, price_point, rounds=rounds, smoothing=0.5,
                                      deadline=expire,
                                      stop=lambda rnd, last: rnd - last >= stall or best_seen[0] >= cutoff)
        if best >= cutoff:
            break
    if best >= cutoff:
        return best, grid, None, None
    sol = master.solve(expire)
    if sol is None:
        return best, grid, None, None
    x = master.primal()
    shares: dict[int, float] = {}
    art = np.zeros(ntasks)
    for col, tag in enumerate(master.tags):
        if x[col] > EPS:
            if tag < 0:
                art[master.meta[col][0]] += x[col]
            else:
                shares[tag] = shares.get(tag, 0.0) + float(x[col])
    return best, grid, (shares, float(sol[0])), art


def split_start(rules: dict, i: int, t: int, classes: dict | None):
    """The two children of the split ``s_i <= t`` | ``s_i >= t + 1``; with ``classes``
    (:func:`symmetric_classes`) the class-mates before i in the class order also start by t in the
    first, those after it from t + 1 in the second (the order the tree searches)."""
    order = (classes or {}).get(i, (i,))
    k = order.index(i)
    a, b = dict(rules), dict(rules)
    for m in order[:k + 1]:
        r = rules.get(m, Rule())
        a[m] = Rule(r.clusters, r.lo, t if r.hi is None else min(r.hi, t), r.forbid)
    for m in order[k:]:
        r = rules.get(m, Rule())
        b[m] = Rule(r.clusters, max(r.lo, t + 1), r.hi, r.forbid)
    return a, b


def branching(ctx: Context, rules: dict, shares: dict, classes: dict | None = None):
    """The two children's rules of a fractional master solution, or None.  In this order: the
    task whose cluster share is nearest 1/2 (cluster n | the others); the task whose first starts
    are split most evenly by some step t (s <= t | s >= t + 1); the task and step t at which its
    columns hold two or more allocations, the most held one o splitting them most evenly (o not
    held in t | no other allocation held in t: both keep the histories idle in t, a covering).
    With ``classes`` (:func:`symmetric_classes`; the tree then searches the schedules that start
    each class in its order) the start split comes first and restricts the class-mates too
    (:func:`split_start`)."""
    per: dict[int, list] = {}
    for c, x in shares.items():
        per.setdefault(ctx.col[c][0], []).append((c, x))
    best, pick = EPS, None

    def by_cluster():
        nonlocal best, pick
        for i, lst in sorted(per.items()):
            by_n: dict[int, float] = {}
            for c, x in lst:
                by_n[ctx.col[c][1]] = by_n.get(ctx.col[c][1], 0.0) + x
            for n, x in sorted(by_n.items()):
                if min(x, 1 - x) > best:
                    best, pick = min(x, 1 - x), ("cluster", i, n)

    def by_start():
        nonlocal best, pick
        for i, lst in sorted(per.items()):
            starts = sorted({ctx.col[c][3] for c, _ in lst})
            for t in starts[:-1]:
                x = sum(v for c, v in lst if ctx.col[c][3] <= t)
                if min(x, 1 - x) > best:
                    best, pick = min(x, 1 - x), ("start", i, t)

    for kind in ((by_start, by_cluster) if classes else (by_cluster, by_start)):
        if pick is None:
            kind()
    if pick is None:
        for i, lst in sorted(per.items()):
            held: dict = {}  # (n, t) -> {(cpu, gpu): share}
            for c, x in lst:
                for t, cg in ctx.held[c].items():
                    d = held.setdefault((ctx.col[c][1], t), {})
                    d[cg] = d.get(cg, 0.0) + x
            for (n, t), d in sorted(held.items()):
                if len(d) < 2:
                    continue
                o = max(sorted(d), key=lambda k: d[k])
                x, y = d[o], sum(d.values()) - d[o]
                if min(x, y) > best:
                    best, pick = min(x, y), ("held", i, (n, t, o))
    if pick is None:
        return None
    kind, i, v = pick
    r = rules.get(i, Rule())
    if kind == "cluster":
        allowed = frozenset(ctx.tasks[i].opts) if r.clusters is None else r.clusters
        a = Rule(frozenset({v}), r.lo, r.hi, r.forbid)
        b = Rule(allowed - {v}, r.lo, r.hi, r.forbid)
    elif kind == "start":
        return split_start(rules, i, v, classes)
    else:
        n, t, o = v
        opt = ctx.tasks[i].opts[n]
        others = {(n, t, int(c), int(g)) for c, g in zip(opt.cpu.tolist(), opt.gpu.tolist()) if (c, g) != o}
        a = Rule(r.clusters, r.lo, r.hi, r.forbid | {(n, t) + tuple(o)})
        b = Rule(r.clusters, r.lo, r.hi, r.forbid | others)
    return {**rules, i: a}, {**rules, i: b}


def branch_and_price(payload, upper: int | None = None, *, nodes: int = NODES, deadline=None,
                     rounded=None, rounds: int = ROUNDS, stall: int = STALL,
                     memory: MemoryBudget | None = None, cut_rounds: int = NODE_CUT_ROUNDS,
                     root_work: int = WORK, symmetry: bool = False) -> Result:
    """Bound (8): branch-and-price from (6)'s root point with its rounding cuts (``rounded``:
    :func:`placement.bounds.trajectory.rounded_multipliers`' result, computed when not given).
    ``upper``: the referee value of a known schedule (any U >= the optimum is sound, a smaller
    one is not); None: no pruning by an incumbent.  Stops after ``nodes`` nodes, when no node is
    open, at ``deadline`` (:class:`.Deadline`, seconds from now or None), or on memory: past
    ``memory`` (:class:`.MemoryBudget`; None: the limits in force, ``MemoryBudget.in_force()``)
    before a node, or at a ``MemoryError`` in one (``stats["memory"]`` then says why); the bound
    is valid at every stop.  ``cut_rounds``: rounding-cut separation rounds per node (0: the
    root's cuts only); ``stats["node_cuts"]`` counts the cuts added at the nodes,
    ``stats["cut_nodes"]`` the nodes that added some, ``stats["at_bound"]`` the open nodes whose
    value is the bound (those left to raise before it rises). ``root_work``: the label extensions
    the root's (6) may spend (``rounded_multipliers``' ``work``; any value gives a valid bound).
    ``symmetry``: on a noise-free instance, search only the schedules that start identical tasks
    in the order of their arrival (:func:`symmetric_classes`; some optimal schedule is one, so the
    bound stays valid for every schedule); ``stats["classes"]`` counts the classes used."""
    if not proof_applies(payload):
        return Result(None, reason="a precondition of the trajectory bound fails (proof_applies)")
    if payload.noise_model == "additive" and payload.noise > 0:
        return Result(None, reason="additive noise: (6)'s proof does not apply")
    expire = deadline if isinstance(deadline, Deadline) else Deadline.after(deadline)
    budget = MemoryBudget.in_force() if memory is None else memory
    durations = cluster_durations(payload)
    if not all(durations):
        return Result(None, reason="a task completes on no cluster")
    if rounded is None:
        try:
            rounded = rounded_multipliers(payload, durations, lagrangian_multipliers(payload, durations, deadline=expire),
                                          deadline=expire, work=int(root_work))
        except Expired:
            return Result(None, reason="the time limit ran out during the root bound (6) with cuts")
        except MemoryError as exc:
            return Result(None, reason=f"out of memory during the root bound (6) with cuts (MemoryError: {exc})")
    root = int(rounded.value)
    ctx = Context(payload, durations, rounded)
    classes = symmetric_classes(payload, ctx.tasks) if symmetry else None
    cutoff = (1 << 62) if upper is None else int(upper)
    if not ctx.tasks or rounded.H == 0 or root >= cutoff:
        return Result(min(root, cutoff), root, 0, 0, "the root closes" if root >= cutoff else "")
    greedy = greedy_columns(payload, durations)
    for i, t in enumerate(ctx.tasks):  # the greedy schedule's fixed runs seed the pool
        n, s0, (c, g, k) = greedy[t.j]
        ctx.add(i, n, s0 + k - t.a, s0, {(n, r, u): x for u in range(s0, s0 + k) for r, x in ((0, c), (1, g)) if x})
    big = float(max(upper if upper is not None else 0, ctx.H * 2, 1))
    grid0 = np.concatenate([rounded.Lam.reshape(-1)] + ([rounded.Mu.reshape(-1)] if ctx.single else [])
                           + [rounded.nu if rounded.nu is not None else np.zeros(0, dtype=np.int64)]).astype(np.int64)
    heap = [Node(root, 0, 0, {}, grid0)]
    stuck: list[int] = []  # values of nodes left open with nothing to branch on
    made, solved = 1, 0
    stats = {"pruned": 0, "integral": 0, "stuck": 0, "expired": False, "memory": None, "raised": 0,
             "root_lp": None, "classes": len(set((classes or {}).values()))}
    while heap and solved < nodes:
        if heap[0].value >= cutoff:
            heap.clear()
            break
        stats["memory"] = budget.exceeded()
        if stats["memory"] is not None:
            break
        node = heapq.heappop(heap)
        try:
            value, grid, sol, art = solve_node(ctx, node, cutoff, big, rounds=rounds, stall=stall, expire=expire,
                                               cut_rounds=cut_rounds)
        except Expired:
            heapq.heappush(heap, node)
            stats["expired"] = True
            break
        except MemoryError as exc:  # HiGHS's std::bad_alloc, or numpy's: the node stays open
            heapq.heappush(heap, node)
            stats["memory"] = f"stopped on memory: MemoryError while solving a node ({exc or 'no message'})"
            break
        solved += 1
        stats["raised"] += value > node.value
        if solved == 1 and sol is not None:
            stats["root_lp"] = round(sol[1], 4)
        if value >= cutoff:
            stats["pruned"] += 1
            continue
        kids = None if sol is None else branching(ctx, node.rules, sol[0], classes)
        if kids is None:
            integral = sol is not None and not art.any() and all(x > 1 - EPS for x in sol[0].values())
            if integral and value >= np.ceil(sol[1] - 1e-6):
                cutoff = min(cutoff, value)  # an integral master solution at the node's value: its minimum
                stats["integral"] += 1
            else:
                stuck.append(value)
                stats["stuck"] += 1
            continue
        for rules in kids:
            heapq.heappush(heap, Node(value, node.depth + 1, made, rules, grid))
            made += 1
    bound = min([cutoff] + [nd.value for nd in heap] + stuck)
    stats["at_bound"] = sum(v == bound for v in [nd.value for nd in heap] + stuck)  # open nodes to close next
    stats.update(columns=len(ctx.col), work=ctx.work[0], cuts=len(ctx.cuts), node_cuts=ctx.node_cuts[0],
                 cut_nodes=ctx.node_cuts[1])
    return Result(int(bound), root, solved, len(heap) + len(stuck), "", stats)


__all__ = ["branch_and_price", "Result", "Rule", "Node", "Context", "held_of", "price_restricted",
           "solve_node", "branching", "split_start", "symmetric_classes"]
