"""Micro-benchmarks of the foundation: generators, loader, referee.

Run:  .venv/bin/python -m pytest bench/bench_core.py --benchmark-enable -q
(the project's pytest config disables benchmarks by default so that the test suite stays fast).
"""

import pytest

from edgebench.instances import io
from edgebench.instances.generators import generate
from edgebench.referee import evaluate
from edgebench.registry import solve

CASES = [
    ("placement", "synthetic-3", {}),
    ("mapping", "thesis", {"task_nodes": 8}),
    ("offloading", "heft-random", {"v": 50}),
]


@pytest.mark.parametrize("family,preset,params", CASES, ids=[c[0] for c in CASES])
def test_generate(benchmark, family, preset, params):
    inst = benchmark(generate, family, preset, seed=0, **params)
    benchmark.extra_info["size_bytes"] = len(io.dump_json_text(inst))


@pytest.mark.parametrize("family,preset,params", CASES, ids=[c[0] for c in CASES])
def test_load(benchmark, tmp_path, family, preset, params):
    path = io.write_json(tmp_path / "i.json", generate(family, preset, seed=0, **params))
    benchmark(io.load_instance, path)


@pytest.mark.parametrize("family,preset,params", CASES, ids=[c[0] for c in CASES])
def test_referee(benchmark, family, preset, params):
    inst = generate(family, preset, seed=0, **params)
    sol = solve(inst, "random", seed=0).solution
    ev = benchmark(evaluate, inst, sol)
    assert ev.feasible
    benchmark.extra_info["primary"] = ev.primary_value
