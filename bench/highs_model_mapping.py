"""Live highspy models and memory of the mapping branch and bound, whose every leaf solves a
bandwidth LP in HiGHS (``solve_bandwidth``; issue 46 follow-up, formulations/highs_model.py).

``--old`` switches ``release`` off (the code before: each dropped ``Highs`` waited for Python's
cyclic collector); ``--no-collector`` runs with the collector off (the worst case).  Prints the
status and value (unchanged by the release), the leaves' LP count, the most live ``Highs``
objects seen (sampled every 25 LPs), the live ones at the end, and the resident set.

Run (numbers in docs/formulations/mapping.md)::

    OMP_NUM_THREADS=1 .venv/bin/python bench/highs_model_mapping.py --size 10 --seconds 25 [--old]
    OMP_NUM_THREADS=1 .venv/bin/python bench/highs_model_mapping.py --size 6 --seconds 10 --no-collector [--old]
"""

from __future__ import annotations

import argparse
import gc
import time

import highspy
import psutil

from edgebench.formulations import highs_model, mapping_bnb
from edgebench.formulations.mapping_problem import GOALS, build_problem, solve_bandwidth
from edgebench.instances.generators import generate


def _live() -> int:
    return sum(isinstance(o, highspy.Highs) for o in gc.get_objects())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=10, help="thesis instance: nodes = task nodes (default 10)")
    ap.add_argument("--seconds", type=float, default=25.0, help="branch-and-bound time limit (default 25)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--old", action="store_true", help="switch release off (the code before)")
    ap.add_argument("--no-collector", action="store_true", help="run with Python's cyclic collector off")
    args = ap.parse_args()
    if args.old:
        highs_model.release = lambda h: None
    inst = generate("mapping", "thesis", seed=args.seed, nodes=args.size, task_nodes=args.size,
                    link_bw_range=[40.0, 150.0])
    pr = build_problem(inst)
    calls, peak = [0], [0]

    def counted(*a, **kw):
        calls[0] += 1
        res = solve_bandwidth(*a, **kw)
        if calls[0] % 25 == 0:
            peak[0] = max(peak[0], _live())
        return res

    mapping_bnb.solve_bandwidth = counted
    proc = psutil.Process()
    gc.collect()
    if args.no_collector:
        gc.disable()
    rss0 = proc.memory_info().rss
    t0 = time.perf_counter()
    r = mapping_bnb.branch_and_bound(pr, GOALS["composite"], time_limit=args.seconds)
    wall = time.perf_counter() - t0
    live, rss = _live(), proc.memory_info().rss
    print(f"{'old' if args.old else 'new'} collector={'off' if args.no_collector else 'on'} status={r.status} "
          f"value={r.value:.6f} bound={r.bound:.6f} wall={wall:.1f}s bandwidth LPs={calls[0]} "
          f"live Highs: most={peak[0]} end={live} RSS {rss0 / 2**20:.0f} -> {rss / 2**20:.0f} MiB "
          f"(+{(rss - rss0) / 2**20:.1f})")


if __name__ == "__main__":
    main()
