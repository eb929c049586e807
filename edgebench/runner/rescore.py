"""Checking a stored run before another store takes it in (``edgebench merge``, issue 44).

A results store is a file anyone can edit. ``merge`` therefore takes no cell at face value;
:func:`check_row` answers, for one row of a source store, the reason it is refused (``None``
when it is taken):

* **cells** — every column has its declared type (text, a number, the solution's bytes; the
  ``NOT NULL`` columns are set) and the JSON columns hold JSON: what ``report`` would later
  refuse (:func:`edgebench.runner.report.check_cells`) never enters the output;
* **key** — the run key is what the runner (:func:`edgebench.runner.suite.run_key`) or
  ``import`` (:func:`edgebench.runner.importer.import_key`) derives from the row's instance,
  solver, parameters, seed and time limit: a row cannot take another run's key, and a row
  without one (``NULL``) is not a run;
* **referee** — the stored solution is scored again against its instance exactly as the runner
  scores a finished run (:func:`edgebench.runner.worker.record_solution`, then
  :func:`edgebench.runner.execute.proven_status` with the registry's ``proves`` of the solver):
  the stored status, feasibility, primary value, proof flag, units check, reported objective and
  bound must be what that gives. A bound therefore counts only where the runner would count it
  (an exact model of the referee's problem, reported objective = the referee's value); an
  ``optimal`` status only from a solver that can prove;
* **no solution** — a run without a stored solution may claim nothing (not feasible, no value,
  no bound, no proof, a status other than ``optimal`` / ``feasible``).

The instance of a run is found by its content hash (:class:`Instances`): in the embedded
instance sets the rows name, and in the sets, folders and files given with ``--instances``. A
run whose instance is found nowhere cannot be re-scored and is refused.

What cannot be checked without running the solver again: that the solver the row names really
made the solution, and its bound (a number no referee can verify): a forged row that keeps every
derived column consistent with a real solution and a proving solver's name is taken.
"""

from __future__ import annotations

import json
import math
import zlib
from typing import Any

from edgebench.errors import InputError
from edgebench.runner.bestknown import close, solver_proves
from edgebench.runner.store import RUN_COLUMNS, RUNNER_STATUSES
from edgebench.solution import STATUSES

#: the largest decompressed solution taken from a store (the instance files' limit)
MAX_SOLUTION_BYTES = 64 * 2**20
#: columns holding JSON text (as ``report`` checks them)
JSON_COLUMNS = ("params", "objectives", "trace", "pareto")
_NUMBER = (int, float)
_PYTYPES = {"TEXT": (str,), "INTEGER": _NUMBER, "REAL": _NUMBER, "BLOB": (bytes,)}
#: the yes / no columns (0 or 1, as ``report`` compares them)
FLAGS = ("feasible", "proven", "units_ok")
#: the ``suite`` of imported rows (edgebench.runner.importer.SUITE)
IMPORT_SUITE = "import"


def cell_problem(row: dict[str, Any]) -> str | None:
    """Why a row's cells are not what the runner writes (None when they are)."""
    for col, decl in RUN_COLUMNS:
        v = row.get(col)
        if v is None:
            if "NOT NULL" in decl or col == "key":
                return f"column {col!r} is NULL"
            continue
        want = _PYTYPES[decl.split()[0]]
        if isinstance(v, bool) or not isinstance(v, want):
            return f"column {col!r} holds {type(v).__name__} where {decl.split()[0].lower()} belongs"
        if col in JSON_COLUMNS:
            try:
                json.loads(v)
            except (ValueError, RecursionError):
                return f"column {col!r} is not JSON text"
    if not row["key"].strip():
        return "column 'key' is empty"
    if row["status"] not in STATUSES + RUNNER_STATUSES:
        return f"status {row['status'][:40]!r} is not a status the runner writes"
    for col in FLAGS:
        if row.get(col) not in (None, 0, 1):
            return f"column {col!r} holds {row[col]!r} where 0 or 1 belongs"
    return None


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    a, b = float(a), float(b)
    if not (math.isfinite(a) and math.isfinite(b)):
        return a == b
    return close(a, b)


def stored_solution(blob: bytes, where: str):
    """The solution dict of a stored (zlib-compressed JSON) solution; InputError when it is not one."""
    from edgebench.instances.io import parse_json

    try:
        d = zlib.decompressobj()
        raw = d.decompress(blob, MAX_SOLUTION_BYTES + 1)
        if len(raw) > MAX_SOLUTION_BYTES or d.unconsumed_tail:
            raise InputError(f"the solution decompresses to more than {MAX_SOLUTION_BYTES:,} bytes", file=where)
        text = raw.decode("utf-8")
    except (zlib.error, UnicodeDecodeError) as exc:
        raise InputError(f"the stored solution is not compressed JSON ({exc})", file=where) from None
    return parse_json(text, file=where)


class _Spec:
    """What :func:`edgebench.runner.execute.proven_status` reads of a run's plan."""

    def __init__(self, kind: str, proves: bool) -> None:
        self.kind, self.proves = kind, proves


def rescored(row: dict[str, Any], instance: Any, where: str) -> tuple[dict[str, Any], Any]:
    """(the columns the runner derives from a run's stored solution, recomputed by the referee;
    the solution)."""
    from edgebench.instances.io import solution_from_dict
    from edgebench.referee import evaluate
    from edgebench.runner.execute import proven_status
    from edgebench.runner.worker import record_solution

    sol = solution_from_dict(stored_solution(row["solution"], where), file=where, instance=instance)
    res: dict[str, Any] = {"status": sol.status, "feasible": 0, "message": None}
    try:
        ev = evaluate(instance, sol)
    except InputError:
        ev = None
        res["status"] = "error"
    record_solution(res, sol, ev, instance)
    if row.get("suite") == IMPORT_SUITE:
        res["units_ok"] = 0  # an imported solution's bound is never trusted (importer)
    status, proven, _ = proven_status(_Spec(row.get("kind") or "", solver_proves(row["solver"])), res)
    res.update(status=status, proven=proven)
    return res, sol


def key_problem(row: dict[str, Any], sol: Any = None) -> str | None:
    """Why the row's key is not the one its run would have (None when it is)."""
    from edgebench.instances.io import content_hash
    from edgebench.runner.importer import import_key
    from edgebench.runner.suite import params_hash, run_key

    try:
        params = json.loads(row["params"]) if row.get("params") is not None else {}
        if row.get("suite") == IMPORT_SUITE and sol is not None:
            want = import_key(row["instance_hash"], row["solver"], content_hash(sol))
        else:
            if params_hash(params) != row.get("params_hash"):
                return "its params_hash is not the hash of its params"
            if row.get("seed") is None or row.get("time_limit") is None:
                return "a run key needs a seed and a time limit"
            want = run_key(row["instance_hash"], row["solver"], row["params_hash"], int(row["seed"]),
                           float(row["time_limit"]))
    except (TypeError, ValueError, OverflowError) as exc:
        return f"its key cannot be derived ({exc})"
    if want != row["key"]:
        return "its key is not the key of its instance, solver, parameters, seed and time limit"
    return None


#: the stored columns the referee's re-scoring must reproduce
CHECKED = ("feasible", "primary_value", "status", "proven", "units_ok", "reported_objective", "bound")


def check_row(row: dict[str, Any], instances: dict[str, Any], store: str) -> str | None:
    """Why ``row`` (every column of a source store's run) is refused; None when it is taken.
    ``instances``: content hash -> Instance."""
    from edgebench.referee.common import PRIMARY, SENSE

    bad = cell_problem(row)
    if bad:
        return bad
    where = f"{store}#{row['key'][:40]}"
    if row.get("solution") is None:
        bad = key_problem(row) if row.get("suite") != IMPORT_SUITE else None
        if bad:
            return bad
        if row["status"] in ("optimal", "feasible") or row.get("feasible") or row.get("proven") or any(
                row.get(c) is not None for c in ("primary_value", "bound")):
            return f"it claims a result (status {row['status']!r}) but holds no solution to check"
        return None
    inst = instances.get(row["instance_hash"])
    if inst is None:
        return "its instance is not among the embedded sets or --instances: it cannot be re-scored"
    if inst.family != row["family"]:
        return f"its family {row['family']!r} is not its instance's ({inst.family!r})"
    if (row.get("primary_name"), row.get("sense")) != (PRIMARY[inst.family], SENSE[inst.family]):
        return "its primary objective or sense is not the referee's"
    try:
        res, sol = rescored(row, inst, where)
    except InputError as err:
        return f"its solution does not load: {err.reason}"
    bad = key_problem(row, sol)
    if bad:
        return bad
    for col in CHECKED:
        mine, theirs = res.get(col), row.get(col)
        if col in FLAGS:
            mine, theirs = int(bool(mine)), int(bool(theirs))
        if col == "status" or col in FLAGS:
            same = mine == theirs
        else:
            same = _close(mine, theirs)
        if not same:
            return f"stored {col} {theirs!r}, the referee's re-scoring of its solution gives {mine!r}"
    return None
