"""``edgebench merge``: combine results stores made on different machines into one.

A run's key hashes everything that defines the run (instance hash, solver, parameters, seed,
time limit, memory limit; :mod:`.suite`), so **the same key is the same run**, wherever it ran:

* a key found in one store only is copied with every column (solution, trace, environment hash);
* a key found in several stores with the same outcome (status, feasibility and the referee's
  primary value within a relative 1e-9) is one run: the first copy is kept;
* a key whose outcomes differ is a **conflict**: reported (key, instance, solver, both
  outcomes, both stores) and resolved by keeping the first copy — except that a run of a failed
  status (error, killed, memory, crash) gives way to one that finished, as ``--retry-failed``
  would have done. Time-limited runs of non-deterministic solvers on different hardware
  conflict legitimately; the report says so and nothing is averaged.

Environment records (``envs``: package versions and host of each machine) are all kept, so every
run still names the machine it ran on; each source's sweeps are copied (their ids renumbered,
the runs' ``sweep`` column with them) and a ``merge`` sweep records the command. The best-known
table is rebuilt from every kept run plus the sources' best-known values that no run of the
merged stores made (those seeded from set manifests); a dropped conflicting copy leaves no value
behind. Values only improve; a bound beyond an objective is flagged, as in :mod:`.bestknown`.

The output is written to a temporary file next to it and renamed into place once everything
is in: an existing output store is merged into (it counts as the first source), never left half
written.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.errors import InputError
from edgebench.runner import bestknown
from edgebench.runner.store import COLUMN_NAMES, FAILED_STATUSES, Store, utcnow
from edgebench.text import printable

CMDLINE = "<command line>"
#: relative tolerance on the referee's primary value for two copies of a run to agree
REL_TOL = 1e-9


@dataclass
class MergeReport:
    """What :func:`merge_stores` did: runs added per source, duplicates, conflicts."""

    output: str
    added: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    replaced: int = 0
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    envs: int = 0
    runs: int = 0


def _outcome(row: dict[str, Any]) -> tuple:
    return row.get("status"), row.get("feasible"), row.get("primary_value")


def same_outcome(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Do two copies of one run agree (status, feasibility, primary value within REL_TOL)?"""
    (sa, fa, va), (sb, fb, vb) = _outcome(a), _outcome(b)
    if sa != sb or bool(fa) != bool(fb):
        return False
    if va is None or vb is None:
        return va is None and vb is None
    return math.isclose(float(va), float(vb), rel_tol=REL_TOL, abs_tol=1e-12)


def _rows(store: Store) -> list[dict[str, Any]]:
    cols = [c for c in COLUMN_NAMES]
    return store.runs(cols)


def _insert(conn: sqlite3.Connection, row: dict[str, Any]) -> None:
    cols = [c for c in COLUMN_NAMES if c in row]
    conn.execute(f"INSERT OR REPLACE INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                 [row[c] for c in cols])


def _seed_entry(bk: dict[str, Any], run_keys: set[str]) -> dict[str, Any]:
    """A source's best-known row in the form :func:`bestknown.seed` folds in. A value whose
    provenance is a run of the merged stores is left out: it comes back from the kept run (a
    dropped conflicting copy must not leave its value behind)."""
    obj_from_run, bound_from_run = bk.get("obj_run") in run_keys, bk.get("bound_run") in run_keys
    return {**bk, "best_known": {"objective": None if obj_from_run else bk.get("objective"),
                                 "bound": None if bound_from_run else bk.get("bound"),
                                 "solver": bk.get("obj_solver"), "run": bk.get("obj_run"),
                                 "date": bk.get("obj_date"), "bound_solver": bk.get("bound_solver"),
                                 "bound_run": bk.get("bound_run"), "bound_date": bk.get("bound_date")}}


def merge_stores(output: str | os.PathLike, sources: list[str | os.PathLike], *,
                 argv: list[str] | None = None) -> MergeReport:
    """Merge the results stores ``sources`` into ``output`` (created, or merged into when it
    exists); returns what was done. InputError (nothing written) for a source that is not a
    readable store, or an output that is also a source."""
    out = Path(output)
    if not sources:
        raise InputError("name at least one store to merge", file=CMDLINE, field="STORE")
    srcs = [Path(s) for s in sources]
    if out.exists() and any(s.exists() and s.resolve() == out.resolve() for s in srcs):
        raise InputError("the output store is also a source (an existing output is merged into anyway)",
                         file=str(out), field="-o")
    if len({s.resolve() for s in srcs}) != len(srcs):
        raise InputError("a store is named twice", file=CMDLINE, field="STORE")
    opened = [Store.open(s, create=False, readonly=True) for s in srcs]  # all checked before writing
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(fd)
    os.unlink(tmp)
    report = MergeReport(output=str(out))
    try:
        if out.exists():
            with Store.open(out, create=False, readonly=True) as old, sqlite3.connect(tmp) as dst:
                old.conn.backup(dst)
        with Store.open(tmp, create=True) as dest:
            _merge_into(dest, opened, srcs, report, argv or [])
            dest.conn.execute("PRAGMA journal_mode=DELETE")  # one self-contained file to rename
        os.replace(tmp, out)
    finally:
        for s in opened:
            s.close()
        for extra in (tmp, tmp + "-wal", tmp + "-shm"):
            if os.path.exists(extra):
                os.unlink(extra)
    return report


def _merge_into(dest: Store, opened: list[Store], srcs: list[Path], report: MergeReport,
                argv: list[str]) -> None:
    have = {r["key"]: r for r in dest.runs(["key", "status", "feasible", "primary_value"])}
    origin = {k: str(dest.path) for k in have}
    with dest.transaction() as conn:
        for src, path in zip(opened, srcs):
            name = str(path)
            report.added[name] = 0
            for h, data in src.envs().items():
                cur = conn.execute("INSERT OR IGNORE INTO envs VALUES (?, ?)", (h, json.dumps(data, sort_keys=True)))
                report.envs += cur.rowcount
            sweep_ids = {}
            for sw in src.sweeps():
                cur = conn.execute("INSERT INTO sweeps (started, finished, suite, suite_toml, argv, host, planned, "
                                   "skipped, done) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                   (sw["started"], sw["finished"], sw["suite"], sw["suite_toml"], sw["argv"],
                                    sw["host"], sw["planned"], sw["skipped"], sw["done"]))
                sweep_ids[sw["id"]] = cur.lastrowid
            for row in _rows(src):
                row["sweep"] = sweep_ids.get(row.get("sweep"))
                old = have.get(row["key"])
                if old is None:
                    _insert(conn, row)
                    report.added[name] += 1
                elif same_outcome(old, row):
                    report.duplicates += 1
                    continue
                else:
                    take = old["status"] in FAILED_STATUSES and row["status"] not in FAILED_STATUSES
                    report.conflicts.append({
                        "key": row["key"], "instance": row["instance_id"], "solver": row["label"],
                        "kept": {"store": name if take else origin[row["key"]], **dict(zip(
                            ("status", "feasible", "primary_value"), _outcome(row if take else old)))},
                        "dropped": {"store": origin[row["key"]] if take else name, **dict(zip(
                            ("status", "feasible", "primary_value"), _outcome(old if take else row)))}})
                    if not take:
                        continue
                    _insert(conn, row)
                    report.replaced += 1
                have[row["key"]] = {k: row.get(k) for k in ("key", "status", "feasible", "primary_value")}
                origin[row["key"]] = name
        run_keys = set(have) | {k for src in opened for k in src.keys()}
        for src in opened:  # values not made by a run of these stores (a manifest's, seeded at run time)
            for bk in src.bestknown():
                bestknown.seed(conn, _seed_entry(bk, run_keys))
        # every kept run folds into the best-known table (values only improve)
        for row in dest.runs():
            bestknown.update(conn, row)
        conn.execute("INSERT INTO sweeps (started, finished, suite, suite_toml, argv, host, planned, skipped, done) "
                     "VALUES (?, ?, 'merge', '', ?, ?, ?, 0, ?)",
                     (utcnow(), utcnow(), json.dumps(argv), json.dumps({"sources": [str(s) for s in srcs]}),
                      sum(report.added.values()), sum(report.added.values()) + report.replaced))
    report.runs = dest.count()


def add_parser(sub: Any) -> None:
    """Add ``merge`` to the ``edgebench`` sub-parsers."""
    from edgebench.cli import _sub

    p = _sub(sub, "merge", "combine results stores made on different machines into one",
             "Merge the results stores STORE... into OUTPUT (created, or merged into when it exists). The same "
             "run key is the same run: a run stored twice with the same outcome is kept once; differing outcomes "
             "are conflicts, listed and resolved by keeping the first copy (a failed run gives way to a finished "
             "one). Environment records and sweeps are kept; best known values are rebuilt. The output is written "
             "to a temporary file and renamed into place. Exit code 0 also with conflicts (they are reported); "
             "docs/cluster.md.",
             "  edgebench merge -o runs/paper/results.sqlite node1/results.sqlite node2/results.sqlite\n"
             "  edgebench merge -o all.sqlite a.sqlite b.sqlite --json\n",
             cmd_merge)
    p.add_argument("stores", nargs="+", metavar="STORE", help="results stores to merge, in priority order")
    p.add_argument("-o", "--output", required=True, metavar="OUTPUT", help="merged store (created or merged into)")
    p.add_argument("--json", action="store_true", help="print the merge report as JSON")


def cmd_merge(args: Any) -> int:
    import sys

    rep = merge_stores(args.output, args.stores, argv=["edgebench", *sys.argv[1:]])
    if args.json:
        print(json.dumps(rep.__dict__, indent=2))
        return 0
    for src, n in rep.added.items():
        print(f"{src}: {n} runs added")
    print(f"{rep.duplicates} duplicate runs (same key, same outcome) kept once; {rep.replaced} failed runs "
          f"replaced by finished ones; {rep.envs} environment records added")
    for c in rep.conflicts:
        print(printable(f"CONFLICT {c['key'][:12]} {c['instance']} {c['solver']}: kept {c['kept']}, "
                        f"dropped {c['dropped']}"))
    print(f"{len(rep.conflicts)} conflicts; {rep.output}: {rep.runs} runs")
    return 0
