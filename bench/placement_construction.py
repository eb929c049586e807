"""The start comparison behind "Lagrangian-guided construction" in
docs/formulations/placement-construction.md: per instance the referee value, CPU and wall
seconds of placement-lagrange (and its best candidate per allocation rule), the best greedy
fixed-allocation list schedule (``placement.best_greedy``) and the start solvers of
placement-lns (placement-milp with a time limit, sjf, optimus), one line of JSON per start.

    nice -n 10 env OMP_NUM_THREADS=1 .venv/bin/python bench/placement_construction.py \\
        instances/data/placement-testbed-v2/placement-testbed-s0.json.gz --milp-limit 60

Seeded (the same seed gives the same values; the milp's under its time limit aside). Not a
pytest module.
"""

from __future__ import annotations

import argparse
import json
import time

from edgebench import registry
from edgebench.formulations import placement as P
from edgebench.formulations.placement.search import lagrange_list as C
from edgebench.instances.io import load_instance
from edgebench.referee.placement import evaluate


def _timed(fn):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, round(time.process_time() - c0, 1), round(time.perf_counter() - w0, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("instances", nargs="+")
    ap.add_argument("--milp-limit", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only-construction", action="store_true", help="placement-lagrange alone")
    args = ap.parse_args()
    for path in args.instances:
        inst = load_instance(path)
        name = inst.id

        def line(start, value, cpu, wall, **extra):
            print(json.dumps({"instance": name, "start": start, "value": value, "cpu_s": cpu, "wall_s": wall,
                              **extra}), flush=True)

        res, cpu, wall = _timed(lambda: registry.solve(inst, C.SOLVER_NAME, time_limit=None, seed=args.seed))
        st = res.solution.stats
        by_rule: dict[str, float] = {}
        by_order: dict[str, float] = {}
        for cand, v in st["candidates"].items():
            order, rule = cand.split("/")
            order = "random" if order.startswith("random") else order
            by_rule[rule] = min(v, by_rule.get(rule, v))
            by_order[order] = min(v, by_order.get(order, v))
        line(C.SOLVER_NAME, res.solution.objective, cpu, wall, chosen=st["chosen"],
             lagrangian_cpu_s=st["lagrangian_cpu_s"], lagrangian_value=st["lagrangian_value"], by_rule=by_rule,
             by_order=by_order)
        if args.only_construction:
            continue
        sched, cpu, wall = _timed(lambda: P.best_greedy(P.prepare(inst.placement)))
        line("best-greedy", evaluate(inst, P.to_decisions(sched)).primary_value, cpu, wall)
        for solver, tl in (("placement-milp", args.milp_limit), ("sjf", 30.0), ("optimus", 30.0)):
            r, cpu, wall = _timed(lambda: registry.solve(inst, solver, time_limit=tl, seed=args.seed))
            dec = r.solution.placement
            ev = evaluate(inst, dec) if dec is not None else None
            line(solver, float(ev.primary_value) if ev is not None and ev.feasible else None, cpu, wall,
                 time_limit=tl)


if __name__ == "__main__":
    main()
