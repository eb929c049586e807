"""Exact offloading models on the issue's size grid: {10, 20, 30, 50} tasks x {3, 4, 8}
servers, generators ``heft-random`` (classic per-server execution times and edge costs,
one task at a time per server) and ``daggen`` (cpu/mem capacities, cached images, a cloud),
every backend (CP-SAT interval model; the MILP through OR-Tools SCIP / CBC / HiGHS, PuLP
CBC / HiGHS, Pyomo HiGHS), a 60 s limit, one thread.

Each case solves once (``benchmark.pedantic``, one round) and records in
``benchmark.extra_info``: status, objective, bound, gap, whether optimality was proven,
solver runtime, model size. The targets of the issue ("30 tasks x {3, 4, 8} servers proven in
under 60 s; 20 x 8 in under 10 s") are read from these figures, not asserted.

Run (the whole grid is 168 solves of up to 60 s; select with -k)::

    .venv/bin/python -m pytest bench/bench_exact_offloading.py --benchmark-enable \
        -k "cpsat" --benchmark-json=offloading-exact.json

Environment: EDGEBENCH_BENCH_TIME_LIMIT (seconds, default 60), EDGEBENCH_BENCH_SEED (0).
"""

from __future__ import annotations

import os

import pytest

from edgebench import registry
from edgebench.formulations.offloading import MILP_BACKENDS
from edgebench.instances.generators import generate

TIME_LIMIT = float(os.environ.get("EDGEBENCH_BENCH_TIME_LIMIT", "60"))
SEED = int(os.environ.get("EDGEBENCH_BENCH_SEED", "0"))
SIZES = [(v, s) for v in (10, 20, 30, 50) for s in (3, 4, 8)]
GENERATORS = ("heft-random", "daggen")
BACKENDS = ("cpsat",) + MILP_BACKENDS


def _instance(gen: str, tasks: int, servers: int):
    return generate("offloading", gen, seed=SEED, tasks=tasks, servers=servers)


def _solve(inst, backend: str):
    if backend == "cpsat":
        return registry.solve(inst, "offloading-cpsat", time_limit=TIME_LIMIT, seed=0, threads=1)
    return registry.solve(inst, "offloading-milp", time_limit=TIME_LIMIT, seed=0, threads=1, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("tasks,servers", SIZES, ids=[f"{v}x{s}" for v, s in SIZES])
@pytest.mark.parametrize("gen", GENERATORS)
def test_exact_offloading(benchmark, gen, tasks, servers, backend):
    inst = _instance(gen, tasks, servers)
    res = benchmark.pedantic(_solve, args=(inst, backend), rounds=1, iterations=1, warmup_rounds=0)
    sol = res.solution
    st = res.stats
    benchmark.extra_info.update({
        "instance": inst.id, "generator": gen, "tasks": tasks, "servers": servers, "backend": backend,
        "time_limit": TIME_LIMIT, "status": res.status, "proven_optimal": res.status == "optimal",
        "objective": sol.objective, "bound": sol.bound, "gap": st.get("mip_gap"),
        "runtime": res.runtime, "solver_runtime": st.get("solver_runtime"),
        "model_size": st.get("model_size"), "message": st.get("message"),
        "time_scale": st.get("time_scale"), "bound_adjustment": st.get("bound_adjustment"),
    })
    # a benchmark never fails on speed; it only checks that the solve returned a status
    assert res.status in ("optimal", "feasible", "timeout", "infeasible", "error")
    if sol.decisions is not None:
        from edgebench.referee import evaluate

        ev = evaluate(inst, sol)
        benchmark.extra_info["referee_feasible"] = ev.feasible
        assert ev.feasible
