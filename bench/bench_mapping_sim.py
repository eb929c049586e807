"""Speed of the CES baselines and of the mapping stream simulator (pytest-benchmark; the
figures are recorded in ``benchmark.extra_info``, nothing is asserted on time).

* ``test_single_job_solver``: every instance of the embedded set ``mapping-thesis-v1`` (the
  thesis's setting, one job of 3..8 task nodes each) solved through the registry — the
  placement, the Solution and the referee's evaluation for its stats; extra_info
  ``decisions_per_second`` = jobs placed per second, per baseline (``random`` included for
  comparison).
* ``test_single_job_placer``: the same jobs through the in-process placer API only
  (``mapping_sim.PLACERS``), which is what the stream simulator calls.
* ``test_stream``: the job stream of ``thesis-queue`` seed 0 (20 jobs) under each queue
  policy and in-process scheduler; extra_info ``jobs_per_second`` and ``events_per_second``.
  ``test_stream_external`` does the same with ``random`` as the scheduler, which runs on
  residual single-job instances (the path every other registered mapping solver takes).

Run:  .venv/bin/python -m pytest bench/bench_mapping_sim.py --benchmark-enable -q
"""

from __future__ import annotations

import pytest

from edgebench import registry
from edgebench.instances.generators import generate
from edgebench.instances.sets import load_set
from edgebench.solvers.mapping_queue import POLICIES, run_policy
from edgebench.solvers.mapping_sim import PLACERS, NetworkState

BASELINES = ("flexitask", "smart", "greedy-bw")
SET = "mapping-thesis-v1"


def _record(benchmark, key: str, count: int) -> None:
    stats = getattr(benchmark, "stats", None)
    if stats is not None and stats.stats.mean > 0:
        benchmark.extra_info[key] = count / stats.stats.mean


@pytest.fixture(scope="module")
def thesis_set():
    return load_set(SET)


@pytest.fixture(scope="module")
def stream_instance():
    return generate("mapping", "thesis-queue", seed=0)


@pytest.mark.parametrize("solver", BASELINES + ("random",))
def test_single_job_solver(benchmark, thesis_set, solver):
    def run():
        return [registry.solve(inst, solver, seed=0).status for inst in thesis_set]

    run()  # imports and caches outside the measurement
    statuses = benchmark(run)
    assert all(s == "feasible" for s in statuses)
    _record(benchmark, "decisions_per_second", len(thesis_set))


@pytest.mark.parametrize("placer", BASELINES)
def test_single_job_placer(benchmark, thesis_set, placer):
    fn = PLACERS[placer].fn

    def run():
        return [fn(NetworkState(inst.mapping), 0) for inst in thesis_set]

    run()
    out = benchmark(run)
    assert all(p is not None for p in out)
    _record(benchmark, "decisions_per_second", len(thesis_set))


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("scheduler", BASELINES)
def test_stream(benchmark, stream_instance, policy, scheduler):
    run_policy(stream_instance, policy, scheduler=scheduler)
    out = benchmark(run_policy, stream_instance, policy, scheduler=scheduler)
    assert out.reason is None
    _record(benchmark, "jobs_per_second", len(stream_instance.mapping.jobs))
    _record(benchmark, "events_per_second", out.stats["events"])
    benchmark.extra_info["scheduler_calls"] = out.stats["scheduler_calls"]


@pytest.mark.parametrize("policy", ("fifo", "ces-multi"))
def test_stream_external(benchmark, stream_instance, policy):
    out = benchmark.pedantic(run_policy, args=(stream_instance, policy), kwargs={"scheduler": "random"},
                             rounds=1, iterations=1)
    assert out.reason is None
    _record(benchmark, "jobs_per_second", len(stream_instance.mapping.jobs))
    benchmark.extra_info["scheduler_calls"] = out.stats["scheduler_calls"]
