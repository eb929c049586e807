"""Cluster scaling of the runner: a CPU-bound sub-suite on a Dask LocalCluster with 1 and 2 workers.

Each worker has one thread (one run at a time); the sub-suite (``bench/suites/scaling-cpu.toml``)
does a fixed amount of work per run (the GA's evaluation budget), so runs per second measure how
much CPU the workers get. The script starts a ``distributed.LocalCluster`` per worker count, runs
``edgebench run SUITE --dask ADDRESS`` into a fresh store, and prints wall time, runs per second,
the throughput ratio and the CPU seconds the runs used (the runs' own ``runtime`` column and the
process tree's CPU time). Results: docs/cluster.md.

Run (on a shared machine, politely)::

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python bench/cluster_scaling.py --workers 1,2 --json runs/scaling.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUITE = HERE / "suites" / "scaling-cpu.toml"


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(workers: int, suite: Path, folder: Path) -> dict:
    from distributed import LocalCluster

    db = folder / f"w{workers}.sqlite"
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        exe = Path(sys.executable).with_name("edgebench")
        cmd = [str(exe), "run", str(suite), "--dask", cluster.scheduler_address, "--db", str(db),
               "--no-report", "--no-progress"]
        t0, c0 = time.perf_counter(), _cpu_children()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        wall, driver_cpu = time.perf_counter() - t0, _cpu_children() - c0
    with sqlite3.connect(db) as conn:
        n, runtime, bad = conn.execute("SELECT COUNT(*), SUM(runtime), SUM(status NOT IN ('feasible','optimal')) "
                                       "FROM runs").fetchone()
    return {"workers": workers, "runs": n, "failed": bad, "wall_s": round(wall, 2),
            "runs_per_s": round(n / wall, 4), "sum_runtime_s": round(runtime, 2),
            "driver_cpu_s": round(driver_cpu, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="1,2", help="comma-separated worker counts (default 1,2)")
    ap.add_argument("--suite", default=str(SUITE))
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    counts = [int(x) for x in args.workers.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for w in counts:
            rows.append(measure(w, Path(args.suite), Path(tmp)))
            print(json.dumps(rows[-1]), flush=True)
    base = rows[0]["runs_per_s"]
    out = {"suite": Path(args.suite).name, "cpus": os.cpu_count(), "load_avg_end": os.getloadavg(),
           "rows": rows, "throughput_ratio": {r["workers"]: round(r["runs_per_s"] / base, 3) for r in rows}}
    print(json.dumps(out["throughput_ratio"]))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
