"""The trajectory bound (6) on one shipped placement instance (docs/formulations/placement.md,
"(6) Trajectory pricing" and "Rounding cuts on (6)"): (4), then (6) started from (4)'s point and
its rounding cuts, with CPU seconds and peak memory; ``-v`` prints the column-generation rounds.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python bench/probe_trajectory_bound.py placement-testbed-v2 0

Not a pytest module; one instance per call.
"""

from __future__ import annotations

import argparse
import logging
import resource
import sys
import time

from edgebench.formulations import placement_bound as PB
from edgebench.formulations import placement_lagrange as PL
from edgebench.formulations import placement_trajectory as PT
from edgebench.instances import sets


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("set")
    ap.add_argument("index", type=int)
    ap.add_argument("-v", action="store_true", help="print the rounds")
    a = ap.parse_args(argv)
    if a.v:
        PL._log.addHandler(logging.StreamHandler(sys.stdout))
        PL._log.setLevel(logging.DEBUG)
    p = sets.load_set(a.set)[a.index].placement
    d = PB.cluster_durations(p)
    c0 = time.process_time()
    start = PL.lagrangian_multipliers(p, d)
    c1 = time.process_time()
    r = PT.rounded_multipliers(p, d, start)
    c2 = time.process_time()
    print(f"{a.set}[{a.index}] {len(p.tasks)} tasks {p.variant}: (4) {start[0]} ({c1 - c0:.1f} s CPU), "
          f"(6) {r.plain}, with {r.stats.get('cuts', 0)} rounding cuts {r.value} ({c2 - c1:.1f} s CPU for both), "
          f"peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")


if __name__ == "__main__":
    main()
