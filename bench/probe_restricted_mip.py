"""A restricted MIP of a single-task placement instance whose small clusters hold the schedule
(docs/formulations/placement.md, "hetero-6-v2: where its gap sits"): it tries other choices of
the small clusters' tasks than the best known's, and writes the schedule it finds as a warm
start for the LNSs.

The model (HiGHS through ``placement_highs.solve_highs``, one thread, seeded, started from the
shipped best known or ``--start``):

* on the ``--small`` clusters, every task eligible there at each of its Pareto fixed allocations
  (``semantics.dominant_options``) from each start step: the cpu and gpu capacities per step;
* on the other clusters, start slots only: a task starting at s finishes at s plus its shortest
  duration there, and their capacities are dropped (on hetero-6-v2 the large clusters are held
  by the one-start-per-step rule, not by their capacity);
* every task once, one first start per cluster and step (variant single); minimise the flow time.

``--fast K`` models the other clusters too: each task at its K shortest Pareto options, with the
capacities, and every task also has one column that is its history in the start schedule (so the
MIP starts exactly there, re-allocating histories included). Every column is then a real fixed
run or a real history: the model is a *restriction* of the instance, and its solutions are
schedules, written as they are. ``--window W`` lets a task start at most W steps after its
arrival (a smaller model). Its dual bound is the restricted model's, not the instance's.

Without ``--fast`` it is neither a bound (the large clusters' capacities are dropped, the small
clusters' tasks do not re-allocate) nor a schedule. Its solution becomes one: the small clusters' tasks as the MIP
has them; the others list-scheduled on their MIP clusters in the MIP's start order, each at the
Pareto allocation that finishes first in what is left, on a free start slot. The referee scores
it; ``--out`` writes it as a solution file for ``warm_start`` (placement-lns, placement-cg-lns).

    .venv/bin/python bench/probe_restricted_mip.py placement-hetero-6-v2 0 --time-limit 1200 \\
        --out bench/warm/placement-hetero-6-v2-s0-rmip.json.gz
    .venv/bin/python bench/probe_restricted_mip.py placement-hetero-6-v2 0 --fast 4 --window 40 \\
        --time-limit 1800 --out bench/warm/placement-hetero-6-v2-s0-fast.json.gz

Not a pytest module; one instance per call.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from edgebench.errors import InputError
from edgebench.formulations.placement_bound import cluster_durations
from edgebench.formulations.linear import LinearModel
from edgebench.formulations.placement_cglns import decisions_columns
from edgebench.formulations.placement_highs import solve_highs
from edgebench.formulations.placement_lagrange import first_fit
from edgebench.instances import semantics, sets
from edgebench.instances.io import content_hash, load_solution, write_json
from edgebench.referee.placement import evaluate
from edgebench.solution import PlacementDecision, PlacementDecisions, Solution


def build(p, small: tuple[int, ...], smax: int, fast: int = 0, window: int | None = None,
          incumbent: list | None = None) -> tuple[list, LinearModel]:
    """Columns (task, cluster, start, option or None, cost) and the model: one binary per column;
    rows task (= 1), start slot (<= 1), small-cluster capacity per resource and step.  With
    ``fast`` > 0 the other clusters hold their ``fast`` shortest Pareto options and their
    capacities too (every column is then a fixed run: the model is a restriction, its solutions
    schedules); ``window``: starts at most that many steps after the arrival; ``incumbent`` (with
    ``fast``): (``decisions_columns`` column, its decision, whether it is the start schedule's)
    per history of one or more schedules, each one more column whose option is
    ``("history", column, decision, first)``: the MIP starts at the first schedule's."""
    dur = cluster_durations(p)
    N, th = len(p.clusters), smax + max((max(r.values()) for r in dur if r), default=1)
    cols = []
    for j, t in enumerate(p.tasks):
        a = int(t.arrival)
        for n in sorted(dur[j]):
            if n in small:
                opts = semantics.dominant_options(p, j, n)
            elif fast:
                opts = sorted(semantics.dominant_options(p, j, n), key=lambda o: o[2])[:fast]
            else:
                opts = [(None, None, dur[j][n])]
            last = smax if window is None else min(smax, a + window + 1)
            for c, g, d in opts:
                cols.extend((j, n, s, None if c is None else (c, g, d), s - a + d) for s in range(a, last))
    for col, dec, first in incumbent or ():
        cols.append((col.j, col.n, col.s, ("history", col, dec, first), col.F - int(p.tasks[col.j].arrival)))
    model = LinearModel("restricted-mip")
    for v in range(len(cols)):
        model.add_binary(f"x{v}")
    model.set_objective((v, col[4]) for v, col in enumerate(cols))
    task: dict = {}
    slot: dict = {}
    use: dict = {}
    for v, (j, n, s, o, _) in enumerate(cols):
        task.setdefault(j, []).append((v, 1.0))
        slot.setdefault((n, s), []).append((v, 1.0))
        if o is not None and o[0] == "history":
            for t, c, g in o[1].use:
                use.setdefault((n, "cpu", t), []).append((v, float(c)))
                use.setdefault((n, "gpu", t), []).append((v, float(g)))
        elif o is not None:
            c, g, d = o
            for t in range(s, min(s + d, th)):
                use.setdefault((n, "cpu", t), []).append((v, float(c)))
                use.setdefault((n, "gpu", t), []).append((v, float(g)))
    for terms in task.values():
        model.add_eq(terms, 1.0)
    for terms in slot.values():
        model.add_le(terms, 1.0)
    for (n, r, _), terms in use.items():
        model.add_le(terms, float(getattr(p.clusters[n].capacity, r)))
    return cols, model


def mip_start(p, inst, cols, small, path=None) -> np.ndarray | None:
    """A schedule (the solution file ``path``, else the shipped best known) as a MIP point: a
    small-cluster task at the Pareto option within its fixed allocation that fits its run; None
    when some task does not map (a re-allocating history, a start past ``--smax``)."""
    path = path or sets.best_known_solution(content_hash(inst))
    if path is None:
        return None
    index = {(j, n, s, o): v for v, (j, n, s, o, _) in enumerate(cols)}
    x = np.zeros(len(cols))
    sched = decisions_columns(p, load_solution(path, inst).placement)
    T = max(c.F for c in sched) + 40
    used = np.zeros((len(p.clusters), 2, T), dtype=np.int64)
    for col in sched:
        for t, c, g in col.use:
            used[col.n, :, t] += (c, g)
    slots = {(c2.n, c2.s): c2.j for c2 in sched}  # start slots as mapped so far
    for col in sched:
        v = None
        if col.n not in small:
            v = index.get((col.j, col.n, col.s, None))
        elif len(col.changes) == 1:  # a fixed run: the shortest Pareto option within its allocation
            _, c, g = col.changes[0]
            fit = [o for o in semantics.dominant_options(p, col.j, col.n)
                   if o[0] <= c and o[1] <= g and col.s + o[2] <= col.F and (col.j, col.n, col.s, o) in index]
            v = index.get((col.j, col.n, col.s, min(fit, key=lambda o: o[2]))) if fit else None
        if v is None and col.n in small:
            # re-allocating, or no modelled option within its run: the modelled option and free
            # start slot that finish first in its place
            cap = p.clusters[col.n].capacity
            for t, c, g in col.use:
                used[col.n, :, t] -= (c, g)
            free = np.array([[cap.cpu], [cap.gpu]]) - used[col.n]
            taken = {s for (n2, s), j2 in slots.items() if n2 == col.n and j2 != col.j}
            fit = [(s + o[2], s, o) for o in semantics.dominant_options(p, col.j, col.n)
                   for s in range(col.s, T - o[2]) if s not in taken and (col.j, col.n, s, o) in index
                   and (free[0, s:s + o[2]] >= o[0]).all() and (free[1, s:s + o[2]] >= o[1]).all()]
            if fit:
                _, s, o = min(fit)
                v = index.get((col.j, col.n, s, o))
                used[col.n, :, s:s + o[2]] += np.array([[o[0]], [o[1]]])
                if slots.get((col.n, col.s)) == col.j:
                    del slots[(col.n, col.s)]
                slots[(col.n, s)] = col.j
        if v is None:
            return None
        x[v] = 1.0
    return x


def schedule(p, cols, x, small) -> PlacementDecisions:
    """The MIP's fixed runs and histories as they are; the start-slot columns' tasks (without
    ``--fast``) list-scheduled on their clusters."""
    N, T = len(p.clusters), 1000
    free = np.array([[[c.capacity.cpu] * T, [c.capacity.gpu] * T] for c in p.clusters], dtype=np.int64)
    slot = np.ones((N, T), dtype=bool)
    dec: list = [None] * len(p.tasks)
    rest = []
    for v in np.nonzero(x > 0.5)[0]:
        j, n, s, o, _ = cols[v]
        if o is None:
            rest.append((s, j, n))
            continue
        if o[0] == "history":
            dec[j] = o[2]
            for t, c, g in o[1].use:
                free[n, :, t] -= (c, g)
            slot[n, s] = False
            continue
        c, g, d = o
        dec[j] = PlacementDecision(cluster=n, start=s, cpu=c, gpu=g)
        free[n, 0, s:s + d] -= c
        free[n, 1, s:s + d] -= g
        slot[n, s] = False
    for _, j, n in sorted(rest):
        a, best = int(p.tasks[j].arrival), None
        for c, g, k in semantics.dominant_options(p, j, n):
            s = first_fit(free[n], slot[n], a, c, g, k)
            if s is not None and (best is None or (s + k, c + g) < best[0]):
                best = ((s + k, c + g), s, c, g, k)
        _, s, c, g, k = best
        dec[j] = PlacementDecision(cluster=n, start=s, cpu=c, gpu=g)
        free[n, 0, s:s + k] -= c
        free[n, 1, s:s + k] -= g
        slot[n, s] = False
    return PlacementDecisions(tasks=dec)


def _fail(message: str) -> None:
    print(f"probe_restricted_mip: {message}", file=sys.stderr)
    sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("set")
    ap.add_argument("index", type=int)
    ap.add_argument("--small", default="0,1", help="clusters modelled in detail, e.g. 0,1")
    ap.add_argument("--time-limit", type=float, default=600.0, help="seconds of HiGHS")
    ap.add_argument("--smax", type=int, default=120, help="latest start step modelled")
    ap.add_argument("--fast", type=int, default=0,
                    help="model the other clusters too, each task at its FAST shortest Pareto options (0: start slots only)")
    ap.add_argument("--also", action="append",
                    help="with --fast: a further schedule (solution file) whose histories become columns too")
    ap.add_argument("--window", type=int, default=None, help="starts at most WINDOW steps after the arrival")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", help="solution file to write (a warm start)")
    ap.add_argument("--start", help="solution file to start the MIP from (default: the shipped best known)")
    ap.add_argument("--quiet", action="store_true", help="no HiGHS log")
    a = ap.parse_args(argv)
    try:
        small = tuple(sorted({int(x) for x in a.small.split(",")}))
        inst = sets.load_set(a.set)[a.index]
    except (InputError, ValueError, IndexError) as e:
        _fail(f"{a.set}[{a.index}] --small {a.small!r}: {e}")
    p = inst.placement
    if p is None or p.variant != "single":
        _fail(f"{a.set}[{a.index}]: not a single-task placement instance")
    if not small or min(small) < 0 or max(small) >= len(p.clusters):
        _fail(f"--small {a.small!r}: clusters are 0..{len(p.clusters) - 1}")
    if not (a.time_limit > 0 and a.smax > max(int(t.arrival) for t in p.tasks)):
        _fail("--time-limit must be > 0 and --smax after the last arrival")
    if a.fast < 0 or (a.window is not None and a.window < 0):
        _fail("--fast and --window must be >= 0")
    if a.also and not a.fast:
        _fail("--also needs --fast (its histories are columns only in that model)")
    try:
        inc = []  # with --fast: the start schedule's histories (the MIP starts exactly there), then --also's
        paths = [a.start or sets.best_known_solution(content_hash(inst))] + (a.also or []) if a.fast else []
        for k, path in enumerate(paths if paths and paths[0] else []):
            sched = load_solution(path, inst).placement.tasks
            hist = decisions_columns(p, PlacementDecisions(tasks=sched))
            if hist is None:
                raise InputError(f"{path}: not a complete schedule of the instance")
            inc.extend((col, d, k == 0) for col, d in zip(hist, sched) if k == 0 or d != inc[col.j][1])
        cols, model = build(p, small, a.smax, a.fast, a.window, inc)
        if inc:
            start = np.array([1.0 if (o is not None and o[0] == "history" and o[3]) else 0.0 for _, _, _, o, _ in cols])
        else:
            start = mip_start(p, inst, cols, small, a.start)
    except InputError as e:
        _fail(f"--start / --also: {e.line()}")
    res = solve_highs(model, hint=start, time_limit=a.time_limit, seed=a.seed, log=not a.quiet)
    if res.values is None:
        _fail(f"the restricted MIP has no solution: {res.status}, {res.message}")
    print(f"{a.set}[{a.index}]: {model.size()}; MIP start "
          f"{'none' if start is None else int(start @ np.array([c[4] for c in cols]))}; "
          f"restricted MIP {res.objective:.0f} (its dual bound {res.bound}: not a bound of the instance)")
    dec = schedule(p, cols, res.values, small)
    ev = evaluate(inst, dec)
    if not ev.feasible:
        _fail(f"the list-scheduled schedule is infeasible: {ev.violations[:2]}")
    print(f"schedule: referee value {ev.primary_value:.0f}; per cluster "
          f"{np.bincount([d.cluster for d in dec.tasks], minlength=len(p.clusters)).tolist()} tasks")
    if a.out:
        write_json(a.out, Solution(
            family="placement", instance_id=inst.id, instance_hash=content_hash(inst), solver="probe-restricted-mip",
            params={"small": list(small), "time_limit": a.time_limit, "smax": a.smax, "seed": a.seed}, seed=a.seed,
            status="feasible", placement=dec, objective=float(ev.primary_value)))
        print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
