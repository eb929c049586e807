"""Where the column-generation rounds of the Lagrangian placement bound (4) go
(docs/formulations/placement.md, "Choosing the multipliers"): per round the restricted master LP
value against the best certified value, then (1)-(3), (4) and the CPU seconds and peak memory.

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python bench/probe_lagrange_rounds.py placement-hetero-6-v2 0

Not a pytest module; one instance per call (``--rounds`` caps the rounds).
"""

from __future__ import annotations

import argparse
import logging
import resource
import sys
import time

from edgebench.formulations import placement_bound as PB
from edgebench.formulations import placement_lagrange as PL
from edgebench.instances import sets


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("set")
    ap.add_argument("index", type=int)
    ap.add_argument("--rounds", type=int, default=PL.ROUNDS)
    a = ap.parse_args(argv)
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(relativeCreated)8.0f ms  %(message)s"))
    PL._log.addHandler(handler)
    PL._log.setLevel(logging.DEBUG)
    p = sets.load_set(a.set)[a.index].placement
    d = PB.cluster_durations(p)
    print(f"{a.set}[{a.index}]: {len(p.tasks)} tasks, {len(p.clusters)} clusters, variant {p.variant}")
    print("(1) shortest", PB.shortest_bound(d), " (3) energy", PB.energy_bound(p, d),
          " (2) start slots", PB.start_slot_bound(p, d) if p.variant == "single" else "-")
    c0 = time.process_time()
    value = PL.lagrangian_bound(p, d, rounds=a.rounds)
    print(f"(4) Lagrangian {value}: {time.process_time() - c0:.1f} s CPU, "
          f"peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")


if __name__ == "__main__":
    main()
