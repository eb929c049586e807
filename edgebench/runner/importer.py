"""``edgebench import``: store solutions produced elsewhere (another simulator, a paper's
code, a solver in another language) with the referee's scores.

Each solution file (solution format v1) is matched to its instance by ``instance_hash``
among the instances given with ``--instances`` (set names, folders or files, as for
``edgebench run``), scored by the referee exactly as a run of the runner is (the same
:func:`edgebench.runner.worker.record_solution`) and stored as a run row of the same format
(:func:`edgebench.runner.execute.make_row`), so that ``report``, the leaderboard and
``bestknown`` include it. Everything is checked before anything is written: a file that is
not a solution, or one whose instance is not among the given instances, is one error line
(exit 2) and nothing is stored; the rows then go in one transaction.

Choices (docs/cli.md): the solver's kind is ``--kind`` (default ``heuristic``); the run's
runtime is the wall time the solution reports (unknown when it reports none); its time limit
is unknown (NULL). An imported solution contributes its referee-verified objective to the
best known values but never a bound (``units_ok`` = 0, ``proven`` = 0): edgebench did not
see the model that would prove it. The run key hashes the solver name and the solution's
content, so importing the same file again stores nothing new.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from edgebench.errors import InputError

CMDLINE = "<command line>"
#: the ``suite`` column of imported rows (and the name of their sweep record)
SUITE = "import"


def load_instances(sources: list[str]) -> dict[str, Any]:
    """Instance hash -> InstanceRef of every instance named by ``sources``."""
    from edgebench.runner import suite as S

    data = S.adhoc_suite(base=None, instances=sources, solvers=["-"], name=SUITE)
    refs = S._load_instances(S.suite_from_dict(data, CMDLINE), CMDLINE, Path.cwd())
    return {r.hash: r for r in refs}


def printable(text: str) -> str:
    """``text`` as valid UTF-8: bytes of a non-UTF-8 file name (held by Python as surrogate
    escapes, which SQLite refuses) written as ``\\xff`` (issue 28)."""
    return os.fsencode(text).decode("utf-8", "backslashreplace")


def import_key(instance_hash: str, solver: str, solution_hash: str) -> str:
    text = json.dumps({"import": solution_hash, "instance": instance_hash, "solver": solver}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def score(path: str, instances: dict[str, Any], *, solver: str, kind: str) -> dict[str, Any]:
    """The store row of one solution file (InputError when it is no solution of the given
    instances)."""
    from edgebench.instances import io
    from edgebench.referee import evaluate
    from edgebench.runner.execute import make_row
    from edgebench.runner.suite import RunSpec, params_hash
    from edgebench.runner.worker import record_solution, utcnow

    sol = io.load_solution(path)
    ref = instances.get(sol.instance_hash)
    if ref is None:
        raise InputError(f"no instance among --instances has hash {sol.instance_hash[:16]}... (the solution names "
                         f"instance {sol.instance_id!r}); give the instances it was made for", file=path,
                         field="instance_hash")
    sol = io.solution_from_dict(sol.model_dump(mode="json"), file=path, instance=ref.instance)
    res: dict[str, Any] = {"status": sol.status, "feasible": 0,
                           "message": f"imported from {printable(Path(path).name)}",
                           "runtime": sol.wall_time, "started": utcnow(), "finished": utcnow()}
    record_solution(res, sol, evaluate(ref.instance, sol), ref.instance)
    res.update(units_ok=0, trace=None)  # an outside bound or trace is recorded, never trusted
    spec = RunSpec(key=import_key(ref.hash, solver, io.content_hash(sol)), inst=ref, solver=solver, label=solver,
                   kind=kind, params=dict(sol.params), params_hash=params_hash(dict(sol.params)),
                   seed=sol.seed if sol.seed is not None else 0, time_limit=None, kill_after=0.0,  # type: ignore[arg-type]
                   memory_limit_mb=None)
    return make_row(spec, res, sweep=None, suite=SUITE)


def import_solutions(db: str, *, solver: str, sources: list[str], files: list[str], kind: str = "heuristic",
                     argv: list[str] | None = None) -> tuple[list[dict[str, Any]], int]:
    """Score every file, then store them all in one transaction. Returns (rows, number newly
    stored)."""
    from edgebench.runner.store import Store
    from edgebench.runner.worker import env_hash, environment

    if printable(solver) != solver:
        raise InputError(f"the solver name {ascii(solver)} is not valid UTF-8", file="<command line>", field="--solver")
    instances = load_instances(sources)
    rows = [score(f, instances, solver=solver, kind=kind) for f in files]
    argv = [printable(a) for a in argv or []]
    env = environment()  # the process that scored the files, recorded as a run's worker records its own
    env_key = env_hash(env)
    with Store.open(db, create=True) as store:
        sweep = store.begin_sweep(suite=SUITE, suite_toml="", argv=list(argv or []), host=env,
                                  planned=len(rows), skipped=0)
        for r in rows:
            r.update(sweep=sweep, env=env_key)
        n = store.add_runs_bulk(rows, envs={env_key: env})
        store.end_sweep(sweep, n)
    return rows, n


def cmd_import(args) -> int:
    import sys

    from edgebench.runner.report import fmt_num, text_table

    rows, n = import_solutions(args.db, solver=args.solver, sources=args.instances, files=args.solutions,
                               kind=args.kind, argv=["edgebench", *sys.argv[1:]])
    body = [[r["family"], r["instance_id"], r["status"], "yes" if r["feasible"] else "NO",
             f"{r['primary_name']} = {fmt_num(r['primary_value'], 8)}"] for r in rows]
    print(text_table(["family", "instance", "status", "feasible", "primary objective (referee)"], body))
    print(f"{n} solutions stored as solver {args.solver!r} ({len(rows) - n} already there); store: {args.db}")
    return 0


def add_parser(sub: Any) -> None:
    from edgebench.cli import _sub
    from edgebench.registry import KINDS

    p = _sub(sub, "import", "store solutions made elsewhere, scored by the referee, in a results store",
             "Score each SOLUTION file (solution format v1, made by any program) with the referee against its "
             "instance — found by instance_hash among the instances of --instances (set names, folders or "
             "files) — and store it as a run of solver NAME, so that report and bestknown include it. Nothing "
             "is stored unless every file is a solution of one of the given instances. Imported solutions add "
             "referee-verified objectives to the best known values, never bounds.",
             "  edgebench import --db runs/r.sqlite --solver my-sim --instances offloading-heft-random-v1 sols/*.json\n"
             "  edgebench import --db runs/r.sqlite --solver paper-x --kind metaheuristic --instances my-instances/ "
             "out/*.json\n",
             cmd_import)
    p.add_argument("solutions", nargs="+", metavar="SOLUTION", help="solution files (.json or .json.gz)")
    p.add_argument("--db", required=True, metavar="STORE", help="results store (created if needed)")
    p.add_argument("--solver", required=True, metavar="NAME", help="the name the solutions are stored under")
    p.add_argument("--instances", required=True, action="append", metavar="SRC",
                   help="instance set name, folder or instance file (repeatable)")
    p.add_argument("--kind", choices=KINDS, default="heuristic", help="the solver's kind (default heuristic)")
