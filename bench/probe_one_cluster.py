"""The tasks that only one cluster can run, as a one-cluster instance of their own: bound (6)
against the optimum over fixed-allocation schedules (docs/formulations/placement.md,
"hetero-6-v2: where its gap sits", session 10).

The sub-instance keeps the cluster and the tasks whose only eligible cluster it is (renumbered:
task j's noise draws are keyed by its index, so they differ from the full instance's). On it:

* ``reallocating_bound``: the suite's bound, valid for every referee-feasible schedule;
* ``probe_restricted_mip``'s model with that one cluster in detail (every Pareto fixed allocation
  from every start step up to ``--smax``): solved to optimality, it is the best fixed-allocation
  schedule, an upper bound of the optimum (re-allocating schedules may be better);
* with ``--histip S``, bound (7) (``placement_histip.histip_bound``) for that schedule's value,
  S seconds: it proves the schedule optimal for every schedule, or declines.

    .venv/bin/python bench/probe_one_cluster.py placement-hetero-6-v2 0 0

Not a pytest module; one instance per call.
"""

from __future__ import annotations

import argparse
import sys

from probe_restricted_mip import build, schedule

from edgebench.errors import InputError
from edgebench.formulations.placement_bound import reallocating_bound
from edgebench.formulations.placement_highs import solve_highs
from edgebench.formulations.placement_histip import histip_bound
from edgebench.instances import sets
from edgebench.instances.model import Instance
from edgebench.referee.placement import evaluate


def one_cluster(inst, n: int) -> Instance:
    """The instance of cluster n alone and the tasks that only n can run (renumbered)."""
    d = inst.model_dump(mode="json")
    pl = d["placement"]
    pl["tasks"] = [dict(t, eligible=[0]) for t in pl["tasks"] if t["eligible"] == [n]]
    pl["clusters"] = [pl["clusters"][n]]
    d["id"] = d["name"] = f"{inst.id}-cluster{n}-only"
    return Instance.model_validate(d)


def _fail(message: str) -> None:
    print(f"probe_one_cluster: {message}", file=sys.stderr)
    sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("set")
    ap.add_argument("index", type=int)
    ap.add_argument("cluster", type=int)
    ap.add_argument("--time-limit", type=float, default=600.0, help="seconds of HiGHS for the fixed-allocation MIP")
    ap.add_argument("--smax", type=int, default=140, help="latest start step modelled")
    ap.add_argument("--histip", type=float, default=0.0, help="seconds for bound (7) (0: not run)")
    a = ap.parse_args(argv)
    try:
        inst = sets.load_set(a.set)[a.index]
    except (InputError, IndexError) as e:
        _fail(f"{a.set}[{a.index}]: {e}")
    p = inst.placement
    if p is None or p.variant != "single":
        _fail(f"{a.set}[{a.index}]: not a single-task placement instance")
    if not 0 <= a.cluster < len(p.clusters):
        _fail(f"cluster {a.cluster}: clusters are 0..{len(p.clusters) - 1}")
    if a.time_limit <= 0 or a.histip < 0:
        _fail("--time-limit must be > 0 and --histip >= 0")
    sub = one_cluster(inst, a.cluster)
    q = sub.placement
    if not q.tasks:
        _fail(f"no task can run only on cluster {a.cluster}")
    if a.smax <= max(int(t.arrival) for t in q.tasks):
        _fail("--smax must be after the last arrival")
    print(f"{sub.id}: {len(q.tasks)} tasks; bound {reallocating_bound(q)}")
    cols, model = build(q, (0,), a.smax)
    res = solve_highs(model, time_limit=a.time_limit, seed=0, log=False)
    if res.values is None:
        _fail(f"the fixed-allocation MIP has no solution: {res.status}, {res.message}")
    ev = evaluate(sub, schedule(q, cols, res.values, (0,)))
    print(f"fixed-allocation MIP ({model.size()['variables']} columns): {res.status}, value {res.objective:.0f}, "
          f"its dual bound {res.bound}; referee {ev.primary_value:.0f} (feasible {ev.feasible})")
    if a.histip > 0:
        r = histip_bound(sub, int(round(ev.primary_value)), time_limit=a.histip)
        found = f"; its schedule: referee {r.schedule[0]:.0f}" if r.schedule else ""
        print(f"bound (7): {r.bound} ({r.reason}){found}")


if __name__ == "__main__":
    main()
