"""Adversarial search throughput: instances evaluated per second (propose a neighbour, run the
heuristic target and the exact reference, re-score both with the referee) on 10-task
offloading instances (HEFT against the CP-SAT model, one thread) and 8-task placement
instances (Optimus against the fixed-allocation MILP).

Each case times a whole short search (``EVALS`` evaluations, no files kept) with
pytest-benchmark and records in ``benchmark.extra_info`` the evaluations, the evaluations per
second (wall and process CPU) and the best ratio reached (not asserted: a benchmark never
fails on speed).

Run::

    OMP_NUM_THREADS=1 .venv/bin/python -m pytest bench/bench_adversary.py --benchmark-enable \
        --benchmark-columns=median,rounds

Environment: EDGEBENCH_BENCH_SEED (default 0), EDGEBENCH_BENCH_ADV_EVALS (default 20).
"""

from __future__ import annotations

import os
import tempfile
import time

import pytest

from edgebench.adversary.search import Config, contender, search

SEED = int(os.environ.get("EDGEBENCH_BENCH_SEED", "0"))
EVALS = int(os.environ.get("EDGEBENCH_BENCH_ADV_EVALS", "20"))
CASES = [
    ("offloading", 10, "heft", "offloading-cpsat", {}),
    ("placement", 8, "optimus", "placement-milp", {}),
    ("mapping", 10, "greedy-bw", "mapping-exact", {}),
]


@pytest.mark.parametrize("family,size,target,reference,ref_params", CASES, ids=[c[2] for c in CASES])
def test_search_throughput(benchmark, family, size, target, reference, ref_params):
    cfg = Config(family=family, target=contender(family, solver=target),
                 reference=contender(family, solver=reference, params=ref_params, time_limit=10.0,
                                     field_name="--reference"),
                 size=size, evals=EVALS, seed=SEED)
    seen = {}

    def run():
        with tempfile.TemporaryDirectory() as tmp:
            c0, w0 = time.process_time(), time.perf_counter()
            s = search(cfg, tmp, progress=False)
            seen.update(cpu=time.process_time() - c0, wall=time.perf_counter() - w0, summary=s)

    benchmark.pedantic(run, rounds=1, iterations=1)
    s = seen["summary"]
    benchmark.extra_info.update(family=family, target=target, reference=reference, evals=s["evals"],
                                evals_per_s_wall=s["evals"] / seen["wall"], evals_per_s_cpu=s["evals"] / seen["cpu"],
                                best_ratio=s["best"]["ratio"])
