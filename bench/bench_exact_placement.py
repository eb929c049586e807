"""Benchmarks of the exact placement model (placement-milp): time to proven optimality, the
bound reached and the model size per backend, on the paper's synthetic setting (3 clusters
of 16 CPU / 16 GPU, lambda = 2) with {16, 32, 64, 96, 192} tasks, single- and multi-task.

Run (figures land in ``benchmark.extra_info``; ``--benchmark-json`` keeps them)::

    .venv/bin/python -m pytest bench/bench_exact_placement.py --benchmark-enable -q \\
        --benchmark-json runs/bench_exact_placement.json

Environment knobs (the full matrix is hours of CPU; pick what you need):

* ``EDGEBENCH_PLACEMENT_SIZES``    comma list of task counts        (default 16,32,64,96,192)
* ``EDGEBENCH_PLACEMENT_BACKENDS`` comma list of backends           (default: placement-milp's default)
* ``EDGEBENCH_PLACEMENT_VARIANTS`` comma list of single / multi     (default single,multi)
* ``EDGEBENCH_PLACEMENT_LIMIT``    time limit per solve in seconds  (default 300)
* ``EDGEBENCH_PLACEMENT_SEED``     instance seed                    (default 0)

``test_backends_small`` runs every backend on the 16- and 32-task instances (limit 120 s);
``test_paper_episode`` is the issue's target: the whole 192-task synthetic-3 episode proven
optimal or within 0.5 % of the proven bound in under 5 minutes.
"""

from __future__ import annotations

import os

import pytest

from edgebench.formulations import placement as P
from edgebench.instances.generators import generate
from edgebench.referee import evaluate


def _env_list(name: str, default: str) -> list[str]:
    return [x.strip() for x in os.environ.get(name, default).split(",") if x.strip()]


SIZES = [int(x) for x in _env_list("EDGEBENCH_PLACEMENT_SIZES", "16,32,64,96,192")]
BACKENDS = _env_list("EDGEBENCH_PLACEMENT_BACKENDS", P.DEFAULT_BACKEND)
VARIANTS = _env_list("EDGEBENCH_PLACEMENT_VARIANTS", "single,multi")
LIMIT = float(os.environ.get("EDGEBENCH_PLACEMENT_LIMIT", "300"))
SEED = int(os.environ.get("EDGEBENCH_PLACEMENT_SEED", "0"))


def _run(benchmark, num_tasks: int, variant: str, backend: str, limit: float) -> dict:
    inst = generate("placement", "synthetic-3", seed=SEED, num_tasks=num_tasks, variant=variant)
    box = {}

    def go():
        box["res"] = P.solve(inst, backend=backend, time_limit=limit)

    benchmark.pedantic(go, rounds=1, iterations=1)
    res = box["res"]
    st = res.stats
    info = {
        "instance": inst.id, "num_tasks": num_tasks, "variant": variant, "backend": backend, "time_limit": limit,
        "status": res.status, "objective": res.solution.objective, "bound": res.solution.bound,
        "mip_gap": st.get("mip_gap"), "runtime": res.runtime, "model_size": st.get("model_size"),
        "iterations": len(st.get("iterations", [])), "horizon": st.get("horizon"),
        "greedy_objective": st.get("greedy_objective"), "trivial_bound": st.get("trivial_bound"),
        "lp_bound": st.get("lp_bound"), "local_search": st.get("local_search"), "message": st.get("message"),
    }
    if res.solution.decisions is not None:
        ev = evaluate(inst, res.solution)
        info["referee_feasible"] = ev.feasible
        info["referee_objective"] = ev.primary_value
        assert ev.feasible
        assert ev.primary_value == pytest.approx(res.solution.objective, rel=1e-6)
    benchmark.extra_info.update(info)
    return info


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("num_tasks", SIZES)
def test_exact_placement(benchmark, num_tasks, variant, backend):
    info = _run(benchmark, num_tasks, variant, backend, LIMIT)
    assert info["status"] in ("optimal", "feasible", "timeout"), info["message"]


@pytest.mark.parametrize("backend", P.PLACEMENT_BACKENDS)
@pytest.mark.parametrize("variant", ["single", "multi"])
@pytest.mark.parametrize("num_tasks", [16, 32])
def test_backends_small(benchmark, num_tasks, variant, backend):
    info = _run(benchmark, num_tasks, variant, backend, min(LIMIT, 120.0))
    assert info["status"] in ("optimal", "feasible", "timeout"), info["message"]


@pytest.mark.parametrize("variant", ["single", "multi"])
def test_paper_episode(benchmark, variant):
    """The issue's target: 192 tasks, proven optimal or within 0.5 % of the bound, < 5 min
    (a 290 s limit leaves room for the work after the limit: decoding, the result)."""
    info = _run(benchmark, 192, variant, P.DEFAULT_BACKEND, 290.0)
    reached = info["status"] == "optimal" or (info["mip_gap"] is not None and info["mip_gap"] <= 0.005)
    benchmark.extra_info["target_reached"] = bool(reached and info["runtime"] < 300.0)
