"""Speed and memory of the placement bound (issue 23's target: a 384-task instance in <= 10 min
on one thread, < 4 GB), on shipped instances: the Lagrangian component (4) alone, and the whole
chain the certification runs — (4), then (6)'s column generation and its rounding cuts
(:func:`placement_trajectory.rounded_multipliers`). The values, CPU seconds, cut rounds and peak
resident memory land in ``benchmark.extra_info``::

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python -m pytest bench/bench_placement_bound.py \\
        --benchmark-enable -q --benchmark-json runs/bench_placement_bound.json
"""

from __future__ import annotations

import resource
import time

import numpy as np
import pytest

from edgebench.formulations.placement.bounds import ladder as PB
from edgebench.formulations.placement.bounds import lagrange as PL
from edgebench.formulations.placement.bounds import trajectory as PT
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


@pytest.mark.parametrize("name,index", [("placement-hetero-6-v2", 0), ("placement-hetero-6-v2", 1)])
def test_rounded_bound(benchmark, name, index):
    """The 384-task episodes the target names: (4), (6) and its cuts, CPU seconds of each."""
    p = sets.load_set(name)[index].placement
    durations = PB.cluster_durations(p)
    j = next(j for j, row in enumerate(durations) if row)
    n = next(iter(durations[j]))  # the compiled labelling loaded (or compiled) before the clock starts:
    PT.price_pair(PT.Options(p, j, n), 0, n, np.zeros((len(p.clusters), 2, 1), dtype=np.int64), None, 1)
    out = {}

    def run():
        c0 = time.process_time()
        start = PL.lagrangian_multipliers(p, durations)
        c1 = time.process_time()
        r = PT.rounded_multipliers(p, durations, start)
        out.update(lagrangian=start[0], plain=r.plain, value=r.value, stats=r.stats, cpu_4=c1 - c0,
                   cpu_6=time.process_time() - c1)

    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    benchmark.extra_info.update({
        "instance": f"{name}[{index}]", "tasks": len(p.tasks), "lagrangian": out["lagrangian"],
        "trajectory": out["plain"], "rounded": out["value"], "cuts": out["stats"]["cuts"],
        "cut_rounds": out["stats"]["cut_rounds"], "cpu_s_lagrangian": round(out["cpu_4"], 1),
        "cpu_s_trajectory_and_cuts": round(out["cpu_6"], 1), "cpu_s": round(out["cpu_4"] + out["cpu_6"], 1),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    })
    assert out["value"] >= out["plain"] >= 0
