"""Benchmarks of the benchmark runner, and quality benchmarks of every solver kind.

Speed (asserted):

* ``test_runner_overhead`` — the runner's own cost per run, solver time excluded (pipes to
  and from the worker, the run's own process — forked ahead —, instance parsing, referee,
  solution compression, the store's transaction): median under 100 ms (issue 43's target;
  before warm workers one reused process served every run and the bound was a 50 ms mean).
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

Old vs new, side by side in one run (issue 43: per-run overhead, killed runs, main job)::

    git worktree add /tmp/eb-old 21fcd44          # the tree to compare with
    .venv/bin/python bench/bench_runner.py sweep --old /tmp/eb-old [--suite default] [-- RUN ARGS]

runs ``edgebench run SUITE --db FRESH --no-report`` with the old tree, then with this one (the
same interpreter and virtualenv, one after the other on the same machine), and prints per
side: runs, killed runs, the main job's wall time (the ``edgebench run`` process, start to
exit), the per-run overhead — the driver's wall time of a run minus the solver's own wall time
(``wall - solver_wall``; also ``wall - runtime``, the worker-measured time around the solver
call) — as median / mean / p90 in ms, and the median start-up (new side only; old stores have
no such column). How the old tree is imported: the package maps its top-level folders
(formulations/, instances/, learned/, solvers/) into ``edgebench`` by pyproject's package-dir,
so the benchmark builds a temporary "symlink farm" — a folder ``edgebench/`` whose entries link
to the old tree's ``edgebench/*`` and whose ``formulations`` etc. link to the old top-level
folders — and puts its parent first on ``PYTHONPATH`` (ahead of the editable install's finder,
which maps ``edgebench`` to this checkout). Both sides use the same numba cache.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

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
        run_local(plan.runs, on_result, workers=1, init=worker_init([], ["random"], plan.runs))

    benchmark.pedantic(sweep, rounds=1, iterations=1)
    store.close()
    per_run = float(np.mean(samples))
    benchmark.extra_info.update(overhead_ms_mean=1000 * per_run, overhead_ms_median=1000 * float(np.median(samples)),
                                overhead_ms_p90=1000 * float(np.percentile(samples, 90)), runs=len(samples))
    assert len(samples) == OVERHEAD_RUNS
    median = float(np.median(samples))
    assert median < 0.100, f"runner overhead {1000 * median:.1f} ms per run (median; mean {1000 * per_run:.1f} ms)"


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
    from edgebench.runner.report_folder import build_report

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


# ======================================================================================
# old vs new: a whole sweep on each side
# ======================================================================================

#: folders that pyproject's package-dir maps into ``edgebench``
MAPPED = ("formulations", "instances", "learned", "solvers")


def symlink_farm(tree: Path, dest: Path) -> Path:
    """A folder importable as the ``edgebench`` package of source tree ``tree`` (see the
    module's docstring); returns the folder to put on PYTHONPATH."""
    pkg = dest / "edgebench"
    pkg.mkdir(parents=True)
    for entry in sorted((tree / "edgebench").iterdir()):
        if entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry)
    for name in MAPPED:
        (pkg / name).symlink_to(tree / name)
    return dest


def overhead_stats(db: Path) -> dict[str, float | int | None]:
    """From a store: runs, killed runs and the per-run overhead (ms) of its runs."""
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        cols = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
        got = conn.execute("SELECT status, wall, runtime, solver_wall, "
                           + ("startup" if "startup" in cols else "NULL") + " FROM runs").fetchall()
    finally:
        conn.close()
    ok = [r for r in got if r[0] not in ("killed", "crash", "memory")]
    by_solver = np.array([1000 * (w - s) for _, w, _, s, _ in ok if w is not None and s is not None])
    by_runtime = np.array([1000 * (w - r) for _, w, r, _, _ in ok if w is not None and r is not None])
    startup = np.array([1000 * x for *_, x in got if x is not None])

    def q(a: np.ndarray, f: Any) -> float | None:
        return round(float(f(a)), 1) if a.size else None

    return {"runs": len(got), "killed": sum(r[0] == "killed" for r in got),
            "failed": sum(r[0] in ("killed", "crash", "memory", "error") for r in got),
            "overhead_ms_median": q(by_solver, np.median), "overhead_ms_mean": q(by_solver, np.mean),
            "overhead_ms_p90": q(by_solver, lambda a: np.percentile(a, 90)),
            "wall_minus_runtime_ms_median": q(by_runtime, np.median),
            "startup_ms_median": q(startup, np.median), "startup_ms_max": q(startup, np.max)}


def sweep_side(pythonpath: str | None, suite: str, db: Path, extra: list[str]) -> dict[str, Any]:
    """``edgebench run`` on a fresh store ``db`` with ``pythonpath`` first on the import path;
    its wall time and :func:`overhead_stats`."""
    import subprocess

    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, "-m", "edgebench", "run", *([suite] if suite else []), "--db", str(db), "--no-report",
           "--no-progress", *extra]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=db.parent, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return {"main_job_s": round(seconds, 1), **overhead_stats(db)}


def sweep_compare(old_tree: str, suite: str, extra: list[str]) -> dict[str, dict[str, Any]]:
    """Old tree vs this checkout, one after the other; prints the table and returns both."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="eb-bench-") as tmp:
        farm = symlink_farm(Path(old_tree).resolve(), Path(tmp) / "farm")
        (Path(tmp) / "old").mkdir()
        (Path(tmp) / "new").mkdir()
        sides = {"old": sweep_side(str(farm), suite, Path(tmp) / "old" / "r.sqlite", extra),
                 "new": sweep_side(None, suite, Path(tmp) / "new" / "r.sqlite", extra)}
    keys = list(sides["new"])
    width = max(len(k) for k in keys)
    print(f"{'':{width}}  {'old':>10}  {'new':>10}")
    for k in keys:
        print(f"{k:{width}}  {str(sides['old'].get(k)):>10}  {str(sides['new'].get(k)):>10}")
    return sides


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="compare the quality records of two pytest-benchmark JSON files "
                                             "(compare), or a whole sweep of an old tree with this one (sweep)")
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compare")
    c.add_argument("old")
    c.add_argument("new")
    c.add_argument("--max-gap-increase", type=float, default=0.01)
    c.add_argument("--max-feasible-drop", type=float, default=0.01)
    sw = sub.add_parser("sweep")
    sw.add_argument("--old", required=True, help="the old source tree (a git worktree)")
    sw.add_argument("--suite", default="", help="suite file or embedded suite name (default: the default suite)")
    sw.add_argument("--json", help="also write both sides to this JSON file")
    sw.add_argument("run_args", nargs="*", help="after --: more edgebench run arguments (--solvers, --instances ...)")
    a = ap.parse_args()
    if a.command == "compare":
        sys.exit(compare(a.old, a.new, a.max_gap_increase, a.max_feasible_drop))
    both = sweep_compare(a.old, a.suite, a.run_args)
    if a.json:
        Path(a.json).write_text(json.dumps(both, indent=2) + "\n")
