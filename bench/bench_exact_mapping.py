"""pytest-benchmark suite of the exact mapping models (formulations/mapping*.py).

Run (figures land in benchmark.extra_info; ``--benchmark-json`` keeps them)::

    .venv/bin/python -m pytest bench/bench_exact_mapping.py --benchmark-enable -q \
        --benchmark-json=/tmp/bench_mapping.json

Environment knobs: ``EDGEBENCH_BENCH_SEEDS`` (instances per size, default 10),
``EDGEBENCH_BENCH_SEEDS_LARGE`` (20-node instances, default 3), ``EDGEBENCH_BENCH_LIMIT``
(seconds per solve, default 120).

* ``test_bnb_thesis``: the thesis composite by branch and bound, 10 physical nodes x 3..8
  task nodes (the issue's target: proven optimal at every size, median under 10 s);
* ``test_bnb_large``: 20 physical nodes x 8 task nodes;
* ``test_cpsat_thesis`` / ``test_milp_oa_small``: the CP-SAT model on scaled integers and the
  MILP outer-approximation loop on small sizes, for comparison.
"""

from __future__ import annotations

import os
import statistics
import time

import pytest

from edgebench.formulations.mapping import solve_exact
from edgebench.instances.generators import generate

SEEDS = int(os.environ.get("EDGEBENCH_BENCH_SEEDS", "10"))
SEEDS_LARGE = int(os.environ.get("EDGEBENCH_BENCH_SEEDS_LARGE", "3"))
LIMIT = float(os.environ.get("EDGEBENCH_BENCH_LIMIT", "120"))


def _batch(nodes: int, tasks: int, seeds: int, backend: str, limit: float, objective: str = "composite",
           **gen) -> dict:
    rows = []
    for seed in range(seeds):
        inst = generate("mapping", "thesis", seed=seed, nodes=nodes, task_nodes=tasks, **gen)
        t0 = time.perf_counter()
        r = solve_exact(inst, objective=objective, backend=backend, time_limit=limit)
        rows.append({"seed": seed, "status": r.status, "seconds": round(time.perf_counter() - t0, 3),
                     "value": r.value, "bound": r.bound, "nodes": r.stats.get("nodes"),
                     "rounds": r.stats.get("rounds")})
    secs = [row["seconds"] for row in rows]
    return {"nodes": nodes, "task_nodes": tasks, "backend": backend, "time_limit": limit,
            "instances": len(rows), "optimal": sum(row["status"] == "optimal" for row in rows),
            "median_s": statistics.median(secs), "max_s": max(secs), "mean_s": statistics.fmean(secs),
            "runs": rows}


def _record(benchmark, info: dict) -> None:
    benchmark.extra_info.update({k: v for k, v in info.items() if k != "runs"})
    benchmark.extra_info["runs"] = info["runs"]


@pytest.mark.parametrize("tasks", [3, 4, 5, 6, 7, 8])
def test_bnb_thesis(benchmark, tasks):
    info = benchmark.pedantic(_batch, args=(10, tasks, SEEDS, "bnb", LIMIT), rounds=1, iterations=1)
    _record(benchmark, info)
    assert info["optimal"] + sum(r["status"] == "feasible" for r in info["runs"]) == info["instances"]


def test_bnb_large(benchmark):
    info = benchmark.pedantic(_batch, args=(20, 8, SEEDS_LARGE, "bnb", LIMIT), rounds=1, iterations=1)
    _record(benchmark, info)
    assert all(r["status"] in ("optimal", "feasible") for r in info["runs"])


@pytest.mark.parametrize("tasks", [3, 4])
def test_cpsat_thesis(benchmark, tasks):
    info = benchmark.pedantic(_batch, args=(10, tasks, min(SEEDS, 3), "ortools-cpsat", min(LIMIT, 60.0)),
                              rounds=1, iterations=1)
    _record(benchmark, info)


@pytest.mark.parametrize("backend", ["ortools-highs", "pyomo-highs", "ortools-scip"])
def test_milp_oa_small(benchmark, backend):
    info = benchmark.pedantic(_batch, args=(4, 3, min(SEEDS, 3), backend, min(LIMIT, 60.0)),
                              kwargs={"link_bw_range": [40.0, 150.0]}, rounds=1, iterations=1)
    _record(benchmark, info)


@pytest.mark.parametrize("backend", ["ortools-highs", "pulp-cbc"])
def test_max_dbw_thesis(benchmark, backend):
    info = benchmark.pedantic(_batch, args=(10, 8, min(SEEDS, 3), backend, min(LIMIT, 60.0)),
                              kwargs={"objective": "dbw", "link_bw_range": [60.0, 150.0]}, rounds=1, iterations=1)
    _record(benchmark, info)
