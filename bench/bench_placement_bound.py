"""Speed and memory of the placement bound's Lagrangian component (issue 23's target: a
384-task instance in <= 10 min on one thread, < 4 GB), on shipped instances; the values, CPU
seconds, rounds and peak resident memory land in ``benchmark.extra_info``::

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python -m pytest bench/bench_placement_bound.py \\
        --benchmark-enable -q --benchmark-json runs/bench_placement_bound.json
"""

from __future__ import annotations

import resource
import time

import pytest

from edgebench.formulations import placement_bound as PB
from edgebench.formulations import placement_lagrange as PL
from edgebench.instances import sets

CASES = [("placement-hetero-6-v2", 0), ("placement-hetero-6-multi-v2", 0), ("placement-testbed-v2", 0)]


@pytest.mark.parametrize("name,index", CASES)
def test_lagrangian_bound(benchmark, name, index):
    p = sets.load_set(name)[index].placement
    durations = PB.cluster_durations(p)
    out = {}

    def run():
        c0 = time.process_time()
        out["value"] = PL.lagrangian_bound(p, durations)
        out["cpu_s"] = time.process_time() - c0

    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    benchmark.extra_info.update({
        "instance": f"{name}[{index}]", "tasks": len(p.tasks), "lagrangian": out["value"],
        "others": max(PB.shortest_bound(durations), PB.energy_bound(p, durations),
                      PB.start_slot_bound(p, durations) if p.variant == "single" else 0),
        "cpu_s": round(out["cpu_s"], 1), "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    })
    assert out["value"] >= 0
