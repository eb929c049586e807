"""Cluster scaling of the runner: a CPU-bound sub-suite on a Dask LocalCluster with 1 and 2 workers.

Each worker has one thread (one run at a time); the sub-suite (``bench/suites/scaling-cpu.toml``)
does a fixed amount of work per run (the GA's evaluation budget), so runs per second measure how
much CPU the workers get. The script starts a ``distributed.LocalCluster`` per worker count, runs
``edgebench run SUITE --dask ADDRESS`` into a fresh store, and prints per worker count:

* wall time, runs per second and the throughput ratio against the first count;
* CPU seconds: of the whole process tree (this process with the scheduler and the nannies, the
  Dask workers, the runs' processes and the driver: every descendant's user + system time,
  sampled every 0.1 s by psutil — ``getrusage(RUSAGE_CHILDREN)`` misses the runs, whose parents
  are killed, not reaped, when the cluster closes; a process loses at most its last 0.1 s), of
  the driver alone, and the runs' own ``runtime`` column (wall seconds inside the solvers: under
  load more than their CPU seconds);
* the load average (1 min) at the start and at the end of each measurement (the machine's other
  work: a ratio measured under load measures the other work as much as the runner);
* the launcher's overhead per run: worker-seconds not spent inside a solver
  ``(workers x wall - sum of run times) / runs`` (process start, instance loading, the referee,
  scheduling, the store) and CPU seconds not spent in a run's own process
  ``(tree CPU - runs' CPU) / runs`` (the runs' CPU: the processes the run workers fork, one per
  run; the referee's scoring happens there too, so it counts as run CPU).

Results: docs/cluster.md.

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
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUITE = HERE / "suites" / "scaling-cpu.toml"


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class TreeCPU:
    """User + system CPU seconds of this process and all its descendants, sampled every
    ``every`` seconds in a thread (psutil), from :meth:`start` to :meth:`stop`."""

    def __init__(self, every: float = 0.1) -> None:
        import psutil

        self.me, self.every, self.seen, self.info = psutil.Process(), every, {}, {}
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _sample(self) -> None:
        import psutil

        for p in self.me.children(recursive=True):
            try:
                key = (p.pid, p.create_time())
                if key not in self.info:  # parent, and whether it is a run worker ("zygote")
                    self.info[key] = (p.ppid(), "edgebench.runner.zygote" in " ".join(p.cmdline()))
                t = p.cpu_times()
                self.seen[key] = t.user + t.system
            except psutil.Error:
                pass

    def _loop(self) -> None:
        while not self.stop_event.wait(self.every):
            self._sample()

    def start(self) -> "TreeCPU":
        t = self.me.cpu_times()
        self.own0 = t.user + t.system
        self._sample()
        self.before = dict(self.seen)  # processes alive at the start count from there
        self.thread.start()
        return self

    def stop(self) -> tuple[float, float]:
        """(CPU seconds of the whole tree, of the runs: the processes a run worker forked, and
        their descendants, the worker itself not included)."""
        self.stop_event.set()
        self.thread.join()
        self._sample()
        t = self.me.cpu_times()
        cpu = {k: v - self.before.get(k, 0.0) for k, v in self.seen.items()}
        parent = {k[0]: ppid for k, (ppid, _) in self.info.items()}
        flagged = {k[0] for k, (_, w) in self.info.items() if w}
        # the run worker ("zygote") was started with the module on its command line; the run
        # processes it forks inherit that command line, but their parent is a zygote
        workers = {pid for pid in flagged if parent.get(pid) not in flagged}

        def in_run(pid: int) -> bool:
            while pid in parent:
                if parent[pid] in workers:
                    return True
                pid = parent[pid]
            return False

        runs = sum(v for k, v in cpu.items() if k[0] not in workers and in_run(k[0]))
        return (t.user + t.system - self.own0) + sum(cpu.values()), runs


def measure(workers: int, suite: Path, folder: Path) -> dict:
    from distributed import LocalCluster

    db = folder / f"w{workers}.sqlite"
    load0, tree = os.getloadavg()[0], TreeCPU().start()
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        exe = Path(sys.executable).with_name("edgebench")
        cmd = [str(exe), "run", str(suite), "--dask", cluster.scheduler_address, "--db", str(db),
               "--no-report", "--no-progress"]
        t0, c0 = time.perf_counter(), _cpu_children()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        wall, driver_cpu = time.perf_counter() - t0, _cpu_children() - c0
    tree_cpu, run_cpu = tree.stop()
    load1 = os.getloadavg()[0]
    with sqlite3.connect(db) as conn:
        n, runtime, bad = conn.execute("SELECT COUNT(*), SUM(runtime), SUM(status NOT IN ('feasible','optimal')) "
                                       "FROM runs").fetchone()
    return {"workers": workers, "runs": n, "failed": bad, "wall_s": round(wall, 2),
            "runs_per_s": round(n / wall, 4), "sum_runtime_s": round(runtime, 2),
            "tree_cpu_s": round(tree_cpu, 2), "run_cpu_s": round(run_cpu, 2), "driver_cpu_s": round(driver_cpu, 2),
            "overhead_worker_s_per_run": round((workers * wall - runtime) / n, 3),
            "overhead_cpu_s_per_run": round((tree_cpu - run_cpu) / n, 3),
            "load_1min_start": round(load0, 2), "load_1min_end": round(load1, 2)}


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
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows,
           "throughput_ratio": {r["workers"]: round(r["runs_per_s"] / base, 3) for r in rows},
           "cpu_ratio": {r["workers"]: round(r["tree_cpu_s"] / rows[0]["tree_cpu_s"], 3) for r in rows}}
    print(json.dumps(out["throughput_ratio"]))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
