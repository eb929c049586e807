"""The runner's sub-commands of ``edgebench``: ``run``, ``report`` and ``bestknown``.

:func:`add_run_parsers` is called once from :func:`edgebench.cli.build_parser`; heavy imports
happen inside the commands.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from edgebench.argtypes import MAX_WORKERS
from edgebench.argtypes import seconds as _positive_float
from edgebench.argtypes import workers as _workers
from edgebench.errors import InputError
from edgebench.runner.selection import RERUN_MODES, again, parse_only, select_plan

CMDLINE = "<command line>"
DEFAULT_RUNS_DIR = Path("runs")


def _seeds(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip()
        try:
            x = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
        if x < 0 or x > 2 ** 63 - 1:  # suite.MAX_SEED: the store keeps seeds as SQLite integers
            raise argparse.ArgumentTypeError(f"a seed must be an integer from 0 to 2^63 - 1, got {x}")
        if x in out:
            raise argparse.ArgumentTypeError(f"seed {x} given twice")
        out.append(x)
    return out


#: worker counts --estimate-workers takes at most (each <= argtypes.MAX_WORKERS)
MAX_WORKER_COUNTS = 16


def _worker_counts(text: str) -> list[int]:
    if text.count(",") >= MAX_WORKER_COUNTS:
        raise argparse.ArgumentTypeError(f"at most {MAX_WORKER_COUNTS} worker counts")
    out = _seeds(text)
    bad = [x for x in out if not 1 <= x <= MAX_WORKERS]
    if bad:
        raise argparse.ArgumentTypeError(f"a worker count must be from 1 to {MAX_WORKERS}, got {bad[0]}")
    return out


def _memory_mb(text: str) -> int:
    from edgebench.runner.suite import MAX_MEMORY_MB

    try:
        x = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of MiB (0: no limit), got {text!r}") from None
    if not 0 <= x <= MAX_MEMORY_MB:
        raise argparse.ArgumentTypeError(f"must be in [0, {MAX_MEMORY_MB}] MiB, got {x}")
    return x


def _only(text: str) -> tuple[str, frozenset[str]]:
    try:
        return parse_only(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.reason) from None


def _names(text: str) -> list[str]:
    out = [x.strip() for x in text.split(",") if x.strip()]
    if not out:
        raise argparse.ArgumentTypeError("expected comma-separated solver names (or kind:K)")
    return out


# ======================================================================================
# commands
# ======================================================================================


def _resolve_plan(args: argparse.Namespace):
    from edgebench.runner import suite as S

    adhoc = bool(args.instances or args.solvers)
    if args.suite:
        path = Path(args.suite)
        if not path.exists() and (S.SUITES_DIR / f"{args.suite}.toml").is_file():  # an embedded suite: paper
            path = S.SUITES_DIR / f"{args.suite}.toml"
        base_suite = S.load_suite(path)
        file, base_dir = str(path), path.resolve().parent
    else:
        base_suite = S.default_suite()
        file, base_dir = str(S.DEFAULT_SUITE), S.SUITES_DIR
    if adhoc:
        data = S.adhoc_suite(base=base_suite, instances=args.instances, solvers=args.solvers,
                             name=None if args.suite else "adhoc")
        suite = S.suite_from_dict(data, CMDLINE)
        if not args.suite:
            file, base_dir = CMDLINE, Path.cwd()
    else:
        suite = base_suite
    plan = S.plan(suite, file=file, base_dir=base_dir, time_limit=args.time_limit, seeds=args.seeds,
                  extra_plugins=args.plugin, memory_limit_mb=getattr(args, "memory_limit", None))
    if getattr(args, "only", None):
        select_plan(plan, args.only)
    return plan


def cmd_run(args: argparse.Namespace) -> int:
    from collections import Counter

    from edgebench.runner.execute import WorkerStartError, estimate_seconds, run_sweep
    from edgebench.runner.store import FAILED_STATUSES, Store

    plan = _resolve_plan(args)
    db = Path(args.db) if args.db else DEFAULT_RUNS_DIR / plan.suite.name / "results.sqlite"
    out_dir = Path(args.output) if args.output else db.parent / "report"
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"{out_dir} exists and is not a folder", file=CMDLINE, field="-o")
    # the store must open (and be ours, and not newer) before anything runs; a dry run creates nothing
    have: set[str] = set()
    redo: set[str] = set()
    if not args.dry_run or db.exists():
        with Store.open(db, create=not args.dry_run) as store:
            have = store.keys()
            if args.retry_failed:
                have -= store.keys(FAILED_STATUSES)
            redo = again(store, plan.runs, args.rerun)
            have -= redo
    for note in plan.notes:
        print(note, file=sys.stderr)
    workers = args.workers or plan.suite.workers or 1
    todo = [r for r in plan.runs if r.key not in have]
    where = f"Dask cluster {args.dask}" if args.dask else f"{workers} local worker{'s' * (workers > 1)}"
    print(f"suite {plan.suite.name}: {len(plan.runs)} runs ({len(plan.instances)} instances, "
          f"{len({r.label for r in plan.runs})} solver configurations); {len(plan.runs) - len(todo)} already in {db}; "
          f"{len(todo)} to run{f' ({len(redo)} of them again: --rerun {args.rerun})' if redo else ''} on {where} "
          f"(their time limits add up to "
          f"{estimate_seconds(todo, workers) / 60:.1f} min per worker; most runs stop far sooner)")
    mem = {r.memory_limit_mb for r in plan.runs}
    print("memory limit per run: " + ", ".join("none" if m is None else f"{m} MiB" for m in sorted(mem, key=str)))
    if args.dry_run:
        from edgebench.runner.estimate import DEFAULT_WORKER_COUNTS, lines

        for line in lines(todo, args.estimate_workers or (workers, *DEFAULT_WORKER_COUNTS), plan.suite.threads):
            print(line)
        counts = Counter((r.family, r.label, r.kind, r.time_limit) for r in plan.runs)
        from edgebench.runner.report import text_table

        body = [[f, lb, k, f"{tl:g}", str(n)] for (f, lb, k, tl), n in sorted(counts.items())]
        print(text_table(["family", "solver", "kind", "time limit (s)", "runs"], body))
        return 0
    try:
        res = run_sweep(plan, db, workers=workers, dask=args.dask, retry_failed=args.retry_failed, rerun=args.rerun,
                        progress=False if args.no_progress else None,
                        argv=["edgebench", *(sys.argv[1:] if args.argv is None else args.argv)])
    except WorkerStartError as exc:
        print(f"edgebench: error: {exc}", file=sys.stderr)
        return 1
    from edgebench.runner import report as R

    with Store.open(db, create=False) as store:
        data = R.load(store, res.keys)
    rows = R.summarize(data)
    head, body = R.summary_table(rows, R.kind_labels(rows))
    print(R.text_table(head, body))
    print(f"{res.done} runs done, {res.skipped} skipped (already stored)"
          + (f", {res.elsewhere} left to another runner" if res.elsewhere else "")
          + f" in {res.seconds:.1f} s; store: {db}")
    if not args.no_report:
        from edgebench.runner.report_folder import build_report

        files = build_report(db, out_dir)
        print(f"report: {files.html} (Markdown: {files.markdown})")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from edgebench.runner.report_folder import build_report

    files = build_report(args.db, args.output)
    print(f"report: {files.html}")
    print(f"markdown: {files.markdown}")
    print(f"plots: {len(files.plots)} in {files.folder / 'plots'}")
    print("exports: " + ", ".join(str(p.name) for p in files.csv + files.parquet))
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from edgebench.runner import report as R
    from edgebench.runner.store import Store

    with Store.open(args.db, create=False, readonly=True) as store:
        data = R.load(store)
    sets = sorted(set(data.runs["instance_set"].tolist())) if len(data.runs) else []
    if args.set is not None and args.set not in sets:
        raise InputError(f"no runs on instance set {args.set!r} in {args.db} (sets: {', '.join(sets) or 'none'})",
                         file=CMDLINE, field="--set")
    rows = R.leaderboard(data.runs, args.set)
    if args.json:
        print(json.dumps({"leaderboard": rows}, indent=2))
        return 0
    if not rows:
        print(f"no runs in {args.db}")
        return 0
    kinds = R.kind_labels(rows)
    groups: dict[tuple, list] = {}
    for r in rows:
        groups.setdefault((r["family"], r["instance_set"], r["variant"]), []).append(r)
    for (fam, iset, variant), rs in groups.items():
        print(f"== {iset or '(no set)'} ({fam}, {variant}; {rs[0]['instances']} instances)")
        print(R.text_table(*R.leaderboard_table(rs, kinds)))
        print()
    return 0


def cmd_bestknown(args: argparse.Namespace) -> int:
    from edgebench.runner.bestknown import write_manifests
    from edgebench.runner.report import check_store, fmt_num, text_table
    from edgebench.runner.store import Store

    if args.data_dir is not None and not Path(args.data_dir).is_dir():
        raise InputError(f"no such folder: {args.data_dir}", file=CMDLINE, field="--data-dir")
    if args.db is None and not args.refresh_bounds:
        raise InputError("--db is required (it may be left out only with --refresh-bounds)", file=CMDLINE, field="--db")
    if args.keep_bounds and args.refresh_bounds:
        raise InputError("--keep-bounds and --refresh-bounds contradict each other", file=CMDLINE,
                         field="--keep-bounds")
    write = args.write_manifests or args.refresh_bounds
    with contextlib.ExitStack() as stack:
        db = args.db
        if db is None:  # --refresh-bounds alone: an empty store, only combinatorial bounds join
            db = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "empty.sqlite"
        # a given store is only read (it may be read-only); the manifests are what is written
        store = stack.enter_context(Store.open(db, create=args.db is None, readonly=args.db is not None))
        check_store(store)  # a damaged cell or record is one line, before any manifest is read (issue 44)
        rows = store.bestknown()
        changes = (write_manifests(store, args.data_dir, refresh_bounds=args.refresh_bounds,
                                   keep_bounds=args.keep_bounds) if write else [])
    if args.json:
        print(json.dumps({"bestknown": rows, "manifest_changes": changes}, indent=2))
        return 0
    body = [[r["family"] or "", r["instance_set"] or "", r["instance_id"] or "", r["sense"] or "",
             fmt_num(r["objective"], 10), r["obj_solver"] or "", fmt_num(r["bound"], 10), r["bound_solver"] or "",
             "yes" if r["optimal"] else "no", "CONFLICT" if r["conflict"] else ""] for r in rows]
    print(text_table(["family", "set", "instance", "sense", "objective", "by", "bound", "by", "optimal", ""], body))
    if write:
        for c in changes:
            print(f"updated {c}")
        print(f"{len(changes)} manifest entries improved")
    return 0


# ======================================================================================
# parsers
# ======================================================================================


def add_run_parsers(sub: Any) -> None:
    """Add ``run``, ``report``, ``leaderboard`` and ``bestknown`` to the ``edgebench`` sub-parsers."""
    from edgebench.cli import _sub

    p = _sub(sub, "run", "run a benchmark suite (default: the embedded default suite) into a results store",
             "Run a suite — a TOML file naming instance sets, solvers with parameters, time limits (fixed, by size "
             "or by solver kind) and seeds — or an ad-hoc matrix (--instances / --solvers). Without arguments: the "
             "embedded default suite (every embedded instance set x every registered solver kind). Each run executes "
             "in an isolated worker process with a hard wall-clock kill; results go to an SQLite store, one "
             "transaction per run, and a rerun skips the runs already stored (kill it and rerun: nothing is lost "
             "or duplicated). Prints a summary table and writes the report (edgebench report). The format and the "
             "protocol: docs/runner.md.",
             "  edgebench run                                   # default suite -> runs/default/\n"
             "  edgebench run my-suite.toml --workers 2\n"
             "  edgebench run --instances instances/ --solvers heft,peft,kind:exact --time-limit 10 --seeds 0,1,2\n"
             "  edgebench run --instances mapping-thesis-v1 --solvers kind:heuristic --db runs/m.sqlite\n"
             "  edgebench run my-suite.toml --dask tcp://scheduler:8786\n",
             cmd_run)
    p.add_argument("suite", nargs="?", metavar="SUITE",
                   help="suite TOML file or an embedded suite's name (default, paper); default: the default suite")
    p.add_argument("--instances", action="extend", nargs="+", metavar="SRC",
                   help="instance set name, folder or instance file (repeatable); replaces the suite's instances")
    p.add_argument("--solvers", type=_names, metavar="A,B,...",
                   help="comma-separated solver names or kind:K; replaces the suite's solvers")
    p.add_argument("--time-limit", type=_positive_float, metavar="S", help="seconds per run (overrides the suite)")
    p.add_argument("--seeds", type=_seeds, metavar="0,1,2", help="seeds (override the suite)")
    p.add_argument("--memory-limit", type=_memory_mb, metavar="MB",
                   help="address-space limit of each run and every process it starts, in MiB (overrides the "
                        "suite's memory_limit_mb; default 4096; 0: none); a run over it is stored as 'memory'")
    p.add_argument("--workers", type=_workers, metavar="N", help="local worker processes (default: the "
                   "suite's 'workers', else 1)")
    p.add_argument("--dask", metavar="ADDRESS", help="run on a Dask distributed cluster (scheduler address)")
    p.add_argument("--db", metavar="FILE", help="results store (default runs/<suite name>/results.sqlite)")
    p.add_argument("-o", "--output", metavar="DIR", help="report folder (default: next to the store, report/)")
    p.add_argument("--no-report", action="store_true", help="do not write the report")
    p.add_argument("--retry-failed", action="store_true",
                   help="run again the stored runs whose status is error, killed, memory or crash")
    p.add_argument("--only", action="append", type=_only, metavar="FIELD=V,...",
                   help="keep only the planned runs whose FIELD (kind, solver, label, family, set, instance, seed) "
                        "is one of the values (repeatable: all must hold); the suite's own runs, same keys")
    p.add_argument("--rerun", choices=RERUN_MODES,
                   help="run stored runs again, replacing them: 'stale' = runs of learned solvers whose recorded "
                        "checkpoint sha256 is not one of the solver's checkpoint files now (resumable); 'all' = "
                        "every selected run")
    p.add_argument("--plugin", action="append", metavar="FILE",
                   help="Python file imported by the driver and every worker (extra solvers; repeatable)")
    p.add_argument("--dry-run", action="store_true", help="print the planned runs, the estimated CPU time and "
                   "the wall time on N workers, and stop")
    p.add_argument("--estimate-workers", type=_worker_counts, metavar="N,N,...", help="--dry-run: worker counts to estimate "
                   "the wall time for (default: --workers, 1, 16, 64, 256)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(argv=None)

    p = _sub(sub, "report", "write the Markdown / HTML report of a results store",
             "Per family, variant and solver configuration: mean and median gap to the best known and mean gap to "
             "the proven bound (separate columns), share solved to proven optimality, shifted geometric mean of the "
             "runtime (shift 10 s), wins; a leaderboard per instance set; per instance its best known value, bound, "
             "status and files; Dolan-More performance profiles on runtime and gap; gap against instance size; "
             "anytime curves per set; mapping Pareto fronts (PNG and SVG); a self-contained, browsable "
             "report.html; CSV and Parquet exports; the suites of the store's sweeps (to reproduce them).",
             "  edgebench report --db runs/default/results.sqlite -o runs/default/report\n",
             cmd_report)
    p.add_argument("--db", required=True, metavar="FILE", help="results store")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="report folder (created)")

    p = _sub(sub, "leaderboard", "per instance set, the solver configurations ranked by their gap to the best known",
             "Per instance set (and variant) of a results store, one row per solver configuration: share feasible, "
             "share closed (proven optimal by that configuration), mean and geometric-mean gap to the best known, "
             "mean gap to the best proven bound, the per-seed mean gap with a 95% confidence interval over seeds, "
             "and the shifted geometric mean runtime; best first. The report has the same tables.",
             "  edgebench leaderboard --db runs/default/results.sqlite\n"
             "  edgebench leaderboard --db runs/default/results.sqlite --set placement-synthetic-3-v1\n",
             cmd_leaderboard)
    p.add_argument("--db", required=True, metavar="FILE", help="results store")
    p.add_argument("--set", metavar="NAME", help="only this instance set")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = _sub(sub, "bestknown", "best known objectives and bounds of a results store; write them to manifests",
             "Print, per instance, the best referee-verified objective and the best proven bound with their "
             "provenance. With --write-manifests, write improvements into the best_known fields of the instance "
             "set manifests (atomically; values only improve).",
             "  edgebench bestknown --db runs/default/results.sqlite\n"
             "  edgebench bestknown --db runs/default/results.sqlite --write-manifests\n"
             "  edgebench bestknown --refresh-bounds\n",
             cmd_bestknown)
    p.add_argument("--db", metavar="FILE", help="results store (required unless --refresh-bounds)")
    p.add_argument("--write-manifests", action="store_true", help="update the instance-set manifests")
    p.add_argument("--refresh-bounds", action="store_true",
                   help="also give every shipped best-known entry the current combinatorial bound where it is "
                        "better (implies --write-manifests; without --db no runs are read)")
    p.add_argument("--keep-bounds", action="store_true",
                   help="--write-manifests without recomputing the combinatorial bounds (minutes per large placement "
                        "instance): only the store's objectives and proven bounds join")
    p.add_argument("--data-dir", metavar="DIR", help="folder of instance sets (default: the embedded sets)")
    p.add_argument("--json", action="store_true", help="print JSON")
