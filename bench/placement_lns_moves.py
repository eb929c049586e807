"""The neighbourhood-move comparison behind "Warm start, adaptive moves and re-allocating
moves" in docs/formulations/placement.md: ``placement_lns.improve`` from the same start (the
best greedy schedule) with the same number of neighbourhoods, one line of JSON per move
setting (start and end value, neighbourhoods tried / improved per kind, CPU and wall seconds).

    nice -n 10 env OMP_NUM_THREADS=1 .venv/bin/python bench/placement_lns_moves.py \\
        instances/data/placement-synthetic-3-v2/placement-synthetic-3-s4.json.gz --iterations 40 \\
        --moves classic,adaptive,wait,related --seed 0

Seeded (the same seed gives the same lines, the times aside). Not a pytest module.
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
    ap.add_argument("--iterations", type=int, default=40)
    ap.add_argument("--moves", default="classic,adaptive")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    inst = load_instance(args.instance)
    data = P.prepare(inst.placement)
    start = P.best_greedy(data)
    types = [t.type for t in inst.placement.tasks]
    for moves in args.moves.split(","):
        c0, w0 = time.process_time(), time.perf_counter()
        _, info = L.improve(data, start, seed=args.seed, deadline=None, iterations=args.iterations, moves=moves,
                            types=types)
        print(json.dumps({"instance": inst.id, "seed": args.seed, "moves": moves, "start": info["lns_start"],
                          "end": info["lns_end"], "neighbourhoods": info["neighbourhoods"],
                          "per_kind": {k: [v["tried"], v["improved"]] for k, v in info["moves"].items()},
                          "cpu_s": round(time.process_time() - c0, 1),
                          "wall_s": round(time.perf_counter() - w0, 1)}), flush=True)


if __name__ == "__main__":
    main()
