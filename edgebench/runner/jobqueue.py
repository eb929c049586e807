"""Run a suite on a SLURM or PBS cluster through dask-jobqueue (extra ``cluster``).

    python -m edgebench.runner.jobqueue slurm --jobs 8 --cores 8 --memory 40GB --walltime 02:00:00 \\
        --queue normal -- paper --db runs/paper/results.sqlite

starts a ``SLURMCluster`` (or ``PBSCluster``; ``local`` starts a ``distributed.LocalCluster`` on
this machine, the same path without a batch system), submits ``--jobs`` batch jobs of ``--cores``
Dask workers each (one thread per worker: one run at a time each, as the local runner does),
waits for the first worker and runs ``edgebench run ARGS --dask ADDRESS`` against it. The
driver (this process) alone writes the store; it must stay up for the whole sweep (run it on the
login node in ``tmux`` or in a small batch job of its own). Killed or timed-out batch jobs lose
only their in-flight runs; rerun the same command to finish. ``--print-job-script`` prints the
batch script and stops (check it against your site's rules first).

Why a launcher and not ``edgebench run --cluster slurm``: the options of a batch system (queue,
account, walltime, memory, modules to load, network interface) are site-specific and are often
given by the administrators in dask-jobqueue's own configuration file
(``~/.config/dask/jobqueue.yaml``), which this launcher honours; ``edgebench run --dask ADDRESS``
stays the one way into a cluster, whatever started it. docs/cluster.md.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from edgebench.argtypes import CMDLINE, no_control, workers

KINDS = ("slurm", "pbs", "local")
#: the most memory a job may ask for (64 TiB: more than any batch node has)
MAX_JOB_MEMORY = 64 * 2 ** 40


def memory(text: str) -> str:
    """A memory size as dask-jobqueue reads it (``16GB``, ``500MiB``, ``1.5TB``), checked:
    a size in (0, 64 TiB] (issue 44 case 8: ``--memory abc`` / ``1e999GB`` were tracebacks)."""
    from dask.utils import parse_bytes

    no_control(text)
    try:
        n = parse_bytes(text)
    except (ValueError, OverflowError, TypeError):
        raise argparse.ArgumentTypeError(f"expected a size such as 16GB or 500MiB, got {text!r}") from None
    if not 0 < n <= MAX_JOB_MEMORY:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most 64TiB, got {text!r}")
    return text


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line (``edgebench: error: <command line>: ...``), exit code 2."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"edgebench: error: {CMDLINE}: {message}\n")


def make_cluster(kind: str, *, cores: int, memory: str, walltime: str, queue: str | None = None,
                 account: str | None = None, interface: str | None = None, prologue: list[str] | None = None) -> Any:
    """A Dask cluster whose jobs each hold ``cores`` single-threaded workers."""
    if kind == "local":
        from distributed import LocalCluster

        return LocalCluster(n_workers=cores, threads_per_worker=1, processes=True, dashboard_address=None)
    try:
        import dask_jobqueue
    except ModuleNotFoundError:
        raise SystemExit("edgebench: error: <command line>: KIND: dask-jobqueue is not installed "
                         "(pip install 'edgebench[cluster]')") from None
    cls = dask_jobqueue.SLURMCluster if kind == "slurm" else dask_jobqueue.PBSCluster
    opts: dict[str, Any] = {"cores": cores, "processes": cores, "memory": memory, "walltime": walltime,
                            "scheduler_options": {"dashboard_address": None}}
    if queue:
        opts["queue"] = queue
    if account:
        opts["account"] = account
    if interface:
        opts["interface"] = interface
    if prologue:
        opts["job_script_prologue"] = prologue
    return cls(**opts)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m edgebench.runner.jobqueue", description=__doc__.split("\n\n")[1],
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=KINDS, help="batch system (local: this machine, for a trial)")
    p.add_argument("--jobs", type=workers, default=1, metavar="N", help="batch jobs to submit (default 1, at most 1024)")
    p.add_argument("--cores", type=workers, default=4, metavar="C",
                   help="cores per job = workers per job (default 4, at most 1024)")
    p.add_argument("--memory", type=memory, default="16GB", metavar="M", help="memory per job (default 16GB, at "
                   "most 64TiB; give each worker at least the runs' memory limit, 4 GiB by default)")
    # the texts below end up in the batch script: no control characters (a newline adds a line)
    p.add_argument("--walltime", type=no_control, default="01:00:00", metavar="HH:MM:SS",
                   help="per job (default 01:00:00)")
    p.add_argument("--queue", type=no_control, metavar="Q", help="partition (SLURM) or queue (PBS)")
    p.add_argument("--account", type=no_control, metavar="A", help="project to charge")
    p.add_argument("--interface", type=no_control, metavar="IF", help="network interface of the workers (e.g. ib0)")
    p.add_argument("--prologue", type=no_control, action="append", metavar="LINE",
                   help="shell line run before each worker starts, e.g. 'source ~/eb/bin/activate' (repeatable)")
    p.add_argument("--print-job-script", action="store_true", help="print the batch script and stop")
    p.epilog = "Everything after -- goes to 'edgebench run' (suite, --db, --time-limit, ...)."
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    args, run_args = build_parser().parse_args(argv[:cut]), argv[cut + 1:]
    if "--dask" in run_args:
        print("edgebench: error: <command line>: --dask: the launcher gives the address itself", file=sys.stderr)
        return 2
    if args.print_job_script and args.kind == "local":  # printed before anything starts (issue 44 case 14)
        print("# local: no batch script")
        return 0
    cluster = make_cluster(args.kind, cores=args.cores, memory=args.memory, walltime=args.walltime,
                           queue=args.queue, account=args.account, interface=args.interface, prologue=args.prologue)
    try:
        if args.print_job_script:
            print(cluster.job_script() if args.kind != "local" else "# local: no batch script")
            return 0
        from distributed import Client

        from edgebench.cli import main as edgebench_main

        if args.kind != "local":
            cluster.scale(jobs=args.jobs)
        with Client(cluster) as client:
            print(f"[jobqueue] {args.kind}: {args.jobs} job(s) x {args.cores} workers requested; scheduler "
                  f"{cluster.scheduler_address}; waiting for the first worker", file=sys.stderr, flush=True)
            client.wait_for_workers(1)
            return edgebench_main(["run", *run_args, "--dask", cluster.scheduler_address])
    finally:
        cluster.close()


if __name__ == "__main__":
    sys.exit(main())
