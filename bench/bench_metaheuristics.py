"""Speed and anytime quality of the metaheuristics (pytest-benchmark; the figures are
recorded in ``benchmark.extra_info``, nothing is asserted on time).

Run (``--benchmark-json`` keeps the figures)::

    .venv/bin/python -m pytest bench/bench_metaheuristics.py --benchmark-enable -q -s \
        --benchmark-json=/tmp/bench_meta.json

Environment knobs: ``EDGEBENCH_BENCH_SEEDS`` (instances per case, default 3),
``EDGEBENCH_META_LIMIT`` (seconds per metaheuristic run of the gap table, default 10).

* ``test_evaluate``: ``Problem.evaluate`` alone on a fresh random population of 100 per
  round (decode + referee objective; vectorised for mapping): extra_info
  ``evals_per_second`` (median round) and ``evals_per_second_best_round``.
* ``test_search``: a whole GA / PSO run of 20,000 evaluations at population 100 — operators,
  decoding, evaluation, hall of fame, trace: ``evals_per_second`` (wall) and
  ``evals_per_cpu_second`` (process time; less sensitive to other processes on the machine).
  The issue's target is 50,000 per second for mapping on the thesis 10 x 8 instances.
* ``test_gap_vs_exact``: thesis 10 x 8 instances; the exact optimum (``mapping-exact``,
  branch and bound) and its incumbent trace; GA / PSO for ``EDGEBENCH_META_LIMIT`` seconds;
  the gap reached at 1 s and 10 s, and the time the exact solver needed to reach the same
  objective (its first incumbent at least as good) and to prove optimality.
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np
import pytest

from edgebench import registry
from edgebench.instances.generators import generate
from edgebench.referee import evaluate
from edgebench.solvers import ga, meta_common as mc, pso

SEEDS = int(os.environ.get("EDGEBENCH_BENCH_SEEDS", "3"))
META_LIMIT = float(os.environ.get("EDGEBENCH_META_LIMIT", "10"))
POP = 100
EVALS = 20_000

CASES = {
    "mapping-thesis-10x8": lambda s: generate("mapping", "thesis", seed=s, task_nodes=8),
    "placement-synthetic-3": lambda s: generate("placement", "synthetic-3", seed=s),
    "offloading-heft-random": lambda s: generate("offloading", "heft-random", seed=s),
}
#: fewer evaluations where one evaluation is a Python schedule builder
CASE_EVALS = {"mapping-thesis-10x8": EVALS, "placement-synthetic-3": 2_000, "offloading-heft-random": 5_000}
ALGOS = {"ga": (ga, lambda: ga.GAParams(population=POP)), "pso": (pso, lambda: pso.PSOParams(particles=POP))}


@pytest.mark.parametrize("case", sorted(CASES))
def test_evaluate(benchmark, case):
    problem = mc.make_problem(CASES[case](0))
    rng = np.random.default_rng(0)

    def fresh():  # a new random population each round: no memo hits (placement, offloading)
        return (rng.random((POP, problem.dim)),), {}

    rounds = 200 if case.startswith("mapping") else 5
    benchmark.pedantic(problem.evaluate, setup=fresh, rounds=rounds, iterations=1)
    stats = getattr(benchmark, "stats", None)
    if stats is not None and stats.stats.median > 0:
        benchmark.extra_info["evals_per_second"] = POP / stats.stats.median
        benchmark.extra_info["evals_per_second_best_round"] = POP / stats.stats.min
    benchmark.extra_info["dim"] = problem.dim


def _search(case: str, algo: str) -> dict:
    mod, make_params = ALGOS[algo]
    rows = []
    for seed in range(SEEDS):
        problem = mc.make_problem(CASES[case](seed))
        cpu, wall = time.process_time(), time.perf_counter()
        ev, gens = mod.run(problem, make_params(), mc.Budget(None, CASE_EVALS[case]), seed=0)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        rows.append({"seed": seed, "evaluations": ev.evaluations, "generations": gens, "seconds": round(wall, 4),
                     "evals_per_second": ev.evaluations / wall, "evals_per_cpu_second": ev.evaluations / cpu,
                     "best": ev.best_value})
    return {"case": case, "algo": algo, "population": POP,
            "evals_per_second": statistics.median(r["evals_per_second"] for r in rows),
            "evals_per_cpu_second": statistics.median(r["evals_per_cpu_second"] for r in rows), "runs": rows}


@pytest.mark.parametrize("algo", sorted(ALGOS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_search(benchmark, case, algo):
    info = benchmark.pedantic(_search, args=(case, algo), rounds=1, iterations=1)
    benchmark.extra_info.update(info)
    print(f"\n{case} {algo}: {info['evals_per_second']:.0f} evaluations/s wall, "
          f"{info['evals_per_cpu_second']:.0f} per CPU second (median of {SEEDS})")


def _first_time(trace: list, target: float, col_t: int, col_v: int) -> float | None:
    for row in trace:
        if row[col_v] >= target - 1e-9:
            return row[col_t]
    return None


def _gap_table(algo: str) -> dict:
    rows = []
    for seed in range(SEEDS):
        inst = CASES["mapping-thesis-10x8"](seed)
        t0 = time.perf_counter()
        exact = registry.solve(inst, "mapping-exact", time_limit=120)
        exact_s = time.perf_counter() - t0
        opt = evaluate(inst, exact.solution).primary_value
        inc = exact.stats.get("incumbent_trace") or [[exact_s, opt]]
        res = registry.solve(inst, algo, seed=0, time_limit=META_LIMIT)
        trace = mc.AnytimeTrace()
        for s, e, b in res.stats["trace"]:
            trace.record(s, int(e), b)
        row = {"seed": seed, "optimum": opt, "exact_status": exact.status, "exact_prove_s": round(exact_s, 3),
               "evaluations": res.stats["evaluations"]}
        for at in (1.0, META_LIMIT):
            v = trace.best_at(seconds=at)
            row[f"gap_{at:g}s"] = None if v is None else (opt - v) / opt
            row[f"exact_s_to_same_{at:g}s"] = None if v is None else _first_time(inc, v, 0, 1)
        rows.append(row)
    out = {"algo": algo, "limit_s": META_LIMIT, "runs": rows}
    for key in ("gap_1s", f"gap_{META_LIMIT:g}s"):
        vals = [r[key] for r in rows if r[key] is not None]
        out[f"mean_{key}"] = statistics.fmean(vals) if vals else None
        out[f"max_{key}"] = max(vals) if vals else None
    return out


@pytest.mark.parametrize("algo", sorted(ALGOS))
def test_gap_vs_exact(benchmark, algo):
    if "mapping-exact" not in {s.name for s in registry.solvers("mapping")}:
        pytest.skip("mapping-exact is not registered")
    info = benchmark.pedantic(_gap_table, args=(algo,), rounds=1, iterations=1)
    benchmark.extra_info.update(info)
    for r in info["runs"]:
        print(f"\n{algo} seed {r['seed']}: optimum {r['optimum']:.6f} ({r['exact_status']}, proved in "
              f"{r['exact_prove_s']} s); gap at 1 s {r['gap_1s']}, at {META_LIMIT:g} s {r[f'gap_{META_LIMIT:g}s']}; "
              f"exact reached the same objective at {r['exact_s_to_same_1s']} s / "
              f"{r[f'exact_s_to_same_{META_LIMIT:g}s']} s")
