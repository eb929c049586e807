"""The sub-MILP stopping rules of placement-lns (``cutoff``: off / bound / first, see
docs/formulations/placement-construction.md) compared from the same start with the same
neighbourhoods: one line of JSON per (start, rule): start and end value, neighbourhoods
tried / improved, CPU and wall seconds, improvement per CPU second.

    nice -n 10 env OMP_NUM_THREADS=1 .venv/bin/python bench/placement_lns_cutoff.py \\
        instances/data/placement-hetero-6-v2/placement-hetero-6-s0.json.gz --iterations 12

Starts: the shipped best known (``best-known``) and the best greedy list schedule
(``greedy``). Seeded (the same neighbourhoods under every rule until the first different
acceptance). Not a pytest module.
"""

from __future__ import annotations

import argparse
import json
import time

from edgebench.formulations import placement as P
from edgebench.formulations.placement.search import lns as L
from edgebench.instances.io import load_instance


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("instance")
    ap.add_argument("--iterations", type=int, default=12)
    ap.add_argument("--cutoffs", default=",".join(L.CUTOFFS))
    ap.add_argument("--starts", default="greedy,best-known")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    inst = load_instance(args.instance)
    data = P.prepare(inst.placement)
    types = [t.type for t in inst.placement.tasks]
    for start in args.starts.split(","):
        if start == "greedy":
            cur = P.best_greedy(data)
        else:
            warm = L.warm_start_decisions(inst, L.BEST_KNOWN)
            cur = L.fixed_from_stats(data, warm[3]) or L.to_schedule(inst.placement, data, warm[1])
        for rule in args.cutoffs.split(","):
            c0, w0 = time.process_time(), time.perf_counter()
            _, info = L.improve(data, cur, seed=args.seed, deadline=None, iterations=args.iterations, block=32,
                                sub_limit=30.0, moves="adaptive", types=types, cutoff=rule)
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            gain = info["lns_start"] - info["lns_end"]
            print(json.dumps({"instance": inst.id, "start": start, "cutoff": rule, "from": info["lns_start"],
                              "to": info["lns_end"], "neighbourhoods": info["neighbourhoods"],
                              "improved": info["improved"], "cpu_s": round(cpu, 1), "wall_s": round(wall, 1),
                              "gain_per_cpu_s": round(gain / cpu, 3) if cpu else None}), flush=True)


if __name__ == "__main__":
    main()
