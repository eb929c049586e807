"""Benchmarks of the benchmark runner, and quality benchmarks of every solver kind.

Speed (asserted):

* ``test_runner_overhead`` — the runner's own cost per run, solver time excluded (pipe to and
  from the worker, instance cache, referee, solution compression, the store's transaction):
  under 50 ms.
* ``test_store_100k`` / ``test_report_100k`` — 100,000 synthetic results go into one store,
  and the report (tables, every plot, CSV / Parquet) builds from them in under 10 s.

Quality (recorded, per solver kind, in ``extra_info``): ``test_quality[KIND]`` — the gap to
the best known of every solver of that kind on a fixed small set (the embedded sets
placement-synthetic-3-v1, mapping-topologies-v1, offloading-heft-random-v1; exact solvers
run too, so that best known values exist), with mean / median gap, feasible and proven
shares per solver.

Run::

    .venv/bin/python -m pytest bench/bench_runner.py --benchmark-enable -q

Baseline and comparison (the documented pair; fails on a mean-time regression beyond 25 %,
or on a quality regression — a solver's mean gap up by more than 0.01 absolute, or its
feasible share down by more than 0.01)::

    .venv/bin/python -m pytest bench/bench_runner.py --benchmark-enable --benchmark-save=baseline
    .venv/bin/python -m pytest bench/bench_runner.py --benchmark-enable --benchmark-save=current \
        --benchmark-compare=0001 --benchmark-compare-fail=mean:25%
    .venv/bin/python bench/bench_runner.py compare .benchmarks/*/0001_baseline.json \
        .benchmarks/*/0002_current.json --max-gap-increase 0.01

Environment: EDGEBENCH_BENCH_QUALITY_TIME_LIMIT (seconds per run in the quality sweep,
default 5).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "data" / "good"
OVERHEAD_RUNS = 60
N_STORE = 100_000
QUALITY_SETS = ("placement-synthetic-3-v1", "mapping-topologies-v1", "offloading-heft-random-v1")
QUALITY_TIME_LIMIT = float(os.environ.get("EDGEBENCH_BENCH_QUALITY_TIME_LIMIT", "5"))
KINDS = ("exact", "heuristic", "metaheuristic", "mdp", "learned")


# ======================================================================================
# runner overhead
# ======================================================================================


def test_runner_overhead(benchmark, tmp_path):
    """Per run: driver-measured wall time minus the solver's runtime, plus the driver's
    bookkeeping (row, store transaction); workers start before the clock."""
    from edgebench.runner import suite as S
    from edgebench.runner.execute import make_row, run_local, worker_init
    from edgebench.runner.store import Store

    suite = S.suite_from_dict({"name": "overhead", "time_limit": 5, "seeds": list(range(OVERHEAD_RUNS // 3)),
                               "instances": [{"dir": str(TINY)}], "solvers": [{"name": "random"}]})
    plan = S.plan(suite)
    assert len(plan.runs) == OVERHEAD_RUNS
    store = Store.open(tmp_path / "o.sqlite")
    samples: list[float] = []

    def on_result(spec, res):
        t0 = time.perf_counter()
        store.add_run(make_row(spec, res, sweep=None, suite="overhead"))
        driver = time.perf_counter() - t0
        samples.append(res["wall"] - res["runtime"] + driver)

    def sweep():
        samples.clear()
        run_local(plan.runs, on_result, workers=1, init=worker_init([]))

    benchmark.pedantic(sweep, rounds=1, iterations=1)
    store.close()
    per_run = float(np.mean(samples))
    benchmark.extra_info.update(overhead_ms_mean=1000 * per_run, overhead_ms_median=1000 * float(np.median(samples)),
                                overhead_ms_p90=1000 * float(np.percentile(samples, 90)), runs=len(samples))
    assert len(samples) == OVERHEAD_RUNS
    assert per_run < 0.050, f"runner overhead {1000 * per_run:.1f} ms per run"


# ======================================================================================
# 100,000 results
# ======================================================================================

FAMS = {"placement": ("total_completion_time", "min", 40.0), "mapping": ("composite", "max", 0.9),
        "offloading": ("mean_makespan", "min", 150.0)}
LABELS = [("exact-a", "exact"), ("heur-a", "heuristic"), ("heur-b", "heuristic"), ("heur-c", "heuristic"),
          ("meta-a", "metaheuristic"), ("meta-b", "metaheuristic"), ("mdp-a", "mdp"), ("learned-a", "learned")]


def synthetic_rows(n: int, seed: int = 0):
    """``n`` plausible results (seeded): 3 families x 8 solver configurations x instances x
    seeds, with gaps, failures, traces for the metaheuristics and Pareto fronts for one
    mapping configuration."""
    rng = np.random.default_rng(seed)
    per_fam = n // 3
    n_inst = 250
    rows = []
    k = 0
    for fam, (primary, sense, scale) in FAMS.items():
        best = scale * (1.0 + rng.random(n_inst))
        sizes = rng.integers(5, 80, n_inst)
        for j in range(per_fam + (n - 3 * per_fam if fam == "offloading" else 0)):
            i = int(rng.integers(n_inst))
            label, kind = LABELS[j % len(LABELS)]
            seed_ = j // (len(LABELS) * n_inst)
            quality = {"exact": 0.0, "heuristic": 0.15, "metaheuristic": 0.05, "mdp": 0.1, "learned": 0.08}[kind]
            g = abs(rng.normal(quality, quality / 2 + 1e-3))
            v = best[i] * (1 + g) if sense == "min" else best[i] * (1 - min(g, 0.9))
            status = "optimal" if kind == "exact" and rng.random() < 0.7 else "feasible"
            r = rng.random()
            if r < 0.01:
                status = "killed"
            elif r < 0.02:
                status = "infeasible"
            feas = status in ("optimal", "feasible")
            tl = 10.0
            runtime = float(tl * 1.1 if status == "killed" else (rng.random() * tl if kind != "heuristic"
                                                                   else rng.random() * 0.01))
            trace = None
            if kind == "metaheuristic" and feas:
                ts = np.sort(rng.random(20)) * runtime
                vals = v * (1 + np.linspace(0.5, 0.0, 20)) if sense == "min" else v * (1 - np.linspace(0.5, 0, 20))
                trace = json.dumps([[float(t), float(x)] for t, x in zip(ts, vals)])
            pareto = None
            if fam == "mapping" and label == "exact-a" and feas:
                pareto = json.dumps([{"L": 0.1 + 0.05 * q, "D_BW": 0.5 + 0.1 * q, "composite": v} for q in range(4)])
            rows.append({
                "key": f"k{k:08d}", "sweep": 1, "suite": "synthetic", "instance_id": f"{fam}-{i}",
                "instance_hash": f"{fam}-{i:04d}", "instance_set": f"{fam}-synthetic", "family": fam,
                "size": int(sizes[i]), "solver": label, "label": label, "kind": kind, "params": "{}",
                "params_hash": "0", "seed": int(seed_), "time_limit": tl, "status": status, "feasible": int(feas),
                "proven": int(status == "optimal"), "units_ok": 1, "primary_name": primary, "sense": sense,
                "primary_value": float(v) if feas else None,
                "objectives": json.dumps({primary: float(v)}) if feas else None, "violations": 0 if feas else 1,
                "reported_objective": float(v) if feas else None, "bound": float(best[i]) if kind == "exact" else None,
                "runtime": runtime, "solver_wall": runtime, "wall": runtime + 0.005, "peak_mem_mb": 100.0,
                "message": None, "trace": trace, "pareto": pareto, "env": "synthetic",
                "started": "2026-01-01T00:00:00+00:00", "finished": "2026-01-01T00:00:10+00:00",
            })
            k += 1
    return rows


@pytest.fixture(scope="module")
def big_store(tmp_path_factory):
    from edgebench.runner.store import Store

    path = tmp_path_factory.mktemp("big") / "big.sqlite"
    rows = synthetic_rows(N_STORE)
    t0 = time.perf_counter()
    with Store.open(path) as st:
        st.add_runs_bulk(rows, envs={"synthetic": {"versions": {}, "host": {"node": "synthetic", "cpus": 1}}})
        assert st.count() == N_STORE
    return path, time.perf_counter() - t0


def test_store_100k(benchmark, big_store):
    from edgebench.runner.store import Store

    path, insert_seconds = big_store
    benchmark.extra_info["bulk_insert_seconds"] = insert_seconds

    def read():
        with Store.open(path, create=False) as st:
            return len(st.runs())

    assert benchmark.pedantic(read, rounds=1, iterations=1) == N_STORE


def test_report_100k(benchmark, big_store, tmp_path):
    from edgebench.runner.report import build_report

    path, _ = big_store
    t0 = time.perf_counter()
    files = benchmark.pedantic(build_report, args=(path, tmp_path / "report"), rounds=1, iterations=1)
    seconds = time.perf_counter() - t0
    benchmark.extra_info.update(report_seconds=seconds, plots=len(files.plots))
    assert files.plots and files.parquet
    assert seconds < 10.0, f"report of {N_STORE} results took {seconds:.1f} s"


# ======================================================================================
# quality
# ======================================================================================


@pytest.fixture(scope="module")
def quality_store(tmp_path_factory):
    from edgebench.runner import suite as S
    from edgebench.runner.execute import run_sweep

    suite = S.suite_from_dict({"name": "bench-quality", "time_limit": QUALITY_TIME_LIMIT, "seeds": [0],
                               "workers": 2, "instances": [{"set": s} for s in QUALITY_SETS],
                               "solvers": [{"kind": k} for k in KINDS]})
    plan = S.plan(suite)
    path = tmp_path_factory.mktemp("quality") / "q.sqlite"
    t0 = time.perf_counter()
    run_sweep(plan, path, workers=2, progress=False)
    return path, time.perf_counter() - t0


@pytest.mark.parametrize("kind", KINDS)
def test_quality(benchmark, quality_store, kind):
    from edgebench.runner import report as R
    from edgebench.runner.store import Store

    path, seconds = quality_store

    def summarize():
        with Store.open(path, create=False) as st:
            data = R.load(st)
        return [r for r in R.summarize(data) if r["kind"] == kind]

    rows = benchmark.pedantic(summarize, rounds=1, iterations=1)
    if not rows:
        pytest.skip(f"no registered {kind} solver")
    benchmark.extra_info["sweep_seconds"] = seconds
    benchmark.extra_info["quality"] = {
        f"{r['family']}/{r['label']}": {"mean_gap": r["mean_gap"], "median_gap": r["median_gap"],
                                        "feasible_share": r["feasible_share"], "proven_share": r["proven_share"],
                                        "runs": r["runs"]}
        for r in rows}
    gaps = [r["mean_gap"] for r in rows if r["mean_gap"] is not None]
    benchmark.extra_info["mean_gap"] = float(np.mean(gaps)) if gaps else None


# ======================================================================================
# comparing saved runs (quality regressions)
# ======================================================================================


def compare(old_path: str, new_path: str, max_gap_increase: float = 0.01, max_feasible_drop: float = 0.01) -> int:
    """Compare the quality records of two pytest-benchmark JSON files; print regressions;
    return 1 if any solver's mean gap grew by more than ``max_gap_increase`` (absolute) or
    its feasible share fell by more than ``max_feasible_drop``."""
    def quality(path: str) -> dict[str, dict]:
        data = json.loads(Path(path).read_text())
        out = {}
        for b in data.get("benchmarks", []):
            for name, q in (b.get("extra_info", {}).get("quality") or {}).items():
                out[name] = q
        return out

    from edgebench.pytest_plugin import regressions

    old, new = quality(old_path), quality(new_path)
    bad = regressions(old, new, max_gap_increase=max_gap_increase, max_feasible_drop=max_feasible_drop)
    for line in bad:
        print(f"REGRESSION {line}")
    print(f"{len(old)} solver records compared, {len(bad)} regressions")
    return 1 if bad else 0


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="compare the quality records of two pytest-benchmark JSON files")
    ap.add_argument("command", choices=["compare"])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--max-gap-increase", type=float, default=0.01)
    ap.add_argument("--max-feasible-drop", type=float, default=0.01)
    a = ap.parse_args()
    sys.exit(compare(a.old, a.new, a.max_gap_increase, a.max_feasible_drop))
