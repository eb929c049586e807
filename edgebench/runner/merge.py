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

**Nothing is taken at face value** (issue 44): every run of a source is checked first
(:func:`edgebench.runner.rescore.check_row`: its cells, its key, and its stored solution scored
again by the referee against its instance, found by content hash in the embedded sets or the
``--instances`` given); a run that fails is **refused** — left out, listed with its reason and
counted (exit code 1), while the other runs merge. A source store that is damaged as a whole
(not a store, a newer format, an environment record or a sweep's command line that is not JSON)
is one error line (exit code 2) and nothing is merged.

Environment records (``envs``) are all kept, so every run still names the machine it ran on;
each source's sweeps are copied (their ids renumbered, the runs' ``sweep`` column with them)
and a ``merge`` sweep records the command. The sources' best-known tables are **not** copied
(a best-known row is only a claim): the output's table folds in every run taken, plus the
``best_known`` fields of the set manifests of the instances found, as ``run`` seeds them (a
manifest bound counts only from a proving source, :func:`.bestknown.seed`).

The output is merged into **in place, in one SQLite transaction** (``BEGIN IMMEDIATE``; all
reading and re-scoring is done before it starts, so that it is short): a sweep writing to the
output at the same time waits for it (and the merge for the sweep's run), two merges into one
output run one after the other, and a merge that fails or is stopped (SIGTERM) leaves the
output as it was — never a half-written or renamed-over store. An output that cannot be locked
within a minute, or a full disk, is one error line (exit code 2), nothing changed.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.errors import InputError
from edgebench.runner import bestknown
from edgebench.runner.rescore import check_row
from edgebench.runner.store import COLUMN_NAMES, FAILED_STATUSES, Store, utcnow
from edgebench.text import printable

CMDLINE = "<command line>"
#: relative tolerance on the referee's primary value for two copies of a run to agree
REL_TOL = 1e-9


@dataclass
class MergeReport:
    """What :func:`merge_stores` did: runs added per source, duplicates, conflicts, refusals."""

    output: str
    added: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    replaced: int = 0
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    #: runs left out: store, key, instance, solver and the reason (:func:`.rescore.check_row`)
    refused: list[dict[str, Any]] = field(default_factory=list)
    envs: int = 0
    runs: int = 0


@dataclass
class _Source:
    """A source store, read and checked before the output is touched."""

    name: str
    envs: dict[str, dict[str, Any]]
    sweeps: list[dict[str, Any]]
    rows: list[dict[str, Any]]


class Terminated(Exception):
    """SIGTERM during a merge: raised where the merge is, so that its transaction rolls back."""


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


def _insert(conn: sqlite3.Connection, row: dict[str, Any]) -> None:
    cols = [c for c in COLUMN_NAMES if c in row]
    conn.execute(f"INSERT OR REPLACE INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                 [row[c] for c in cols])


def find_instances(set_names: set[str], given: list[str] | None) -> dict[str, Any]:
    """Content hash -> InstanceRef of the instances runs may be re-scored against: the embedded
    sets among ``set_names`` (the rows' ``instance_set``; other names are ignored, a row's text
    never becomes a path) and every set name, folder or file of ``--instances``."""
    from edgebench.instances import sets
    from edgebench.runner.importer import load_instances

    embedded = set(sets.list_sets())
    names = sorted(n for n in set_names if isinstance(n, str) and n in embedded)
    srcs = names + list(given or [])
    return load_instances(srcs) if srcs else {}


def read_source(store: Store, name: str, refs: dict[str, Any], report: MergeReport) -> _Source:
    """Every run of a source store checked (refused ones recorded in ``report``)."""
    instances = {h: r.instance for h, r in refs.items()}
    rows = []
    for row in store.runs(COLUMN_NAMES):
        why = check_row(row, instances, name)
        if why is None:
            rows.append(row)
        else:
            report.refused.append({"store": name, "key": row.get("key"), "instance": row.get("instance_id"),
                                   "solver": row.get("label"), "reason": why})
    return _Source(name, store.envs(), store.sweeps(), rows)


def _seed_entries(refs: dict[str, Any], hashes: set[str]) -> list[dict[str, Any]]:
    """The set manifests' best-known values of the merged runs' instances, as ``run`` seeds them."""
    from edgebench.referee.common import PRIMARY, SENSE

    return [{"instance_hash": h, "instance_id": r.id, "instance_set": r.set, "family": r.family, "size": r.size,
             "primary_name": PRIMARY[r.family], "sense": SENSE[r.family], "best_known": r.best_known}
            for h, r in sorted(refs.items()) if h in hashes and r.best_known]


def merge_stores(output: str | os.PathLike, sources: list[str | os.PathLike], *,
                 argv: list[str] | None = None, instances: list[str] | None = None) -> MergeReport:
    """Merge the results stores ``sources`` into ``output`` (created, or merged into when it
    exists, in one transaction); returns what was done. ``instances``: set names, folders or
    files holding the instances of runs outside the embedded sets (for the re-scoring).
    InputError (nothing written) for a source that is not a readable store, an output that is
    also a source, an output locked by another writer for a minute, or a full disk."""
    out = Path(output)
    if not sources:
        raise InputError("name at least one store to merge", file=CMDLINE, field="STORE")
    srcs = [Path(s) for s in sources]
    if out.exists() and any(s.exists() and s.resolve() == out.resolve() for s in srcs):
        raise InputError("the output store is also a source (an existing output is merged into anyway)",
                         file=str(out), field="-o")
    if len({s.resolve() for s in srcs}) != len(srcs):
        raise InputError("a store is named twice", file=CMDLINE, field="STORE")
    report = MergeReport(output=str(out))
    opened: list[Store] = []
    try:  # everything read and checked before the output is touched
        for s in srcs:
            opened.append(Store.open(s, create=False, readonly=True))
        set_names = {r[0] for st in opened for r in st.conn.execute("SELECT DISTINCT instance_set FROM runs")}
        refs = find_instances(set_names, instances)
        read = [read_source(st, str(p), refs, report) for st, p in zip(opened, srcs)]
    finally:
        for st in opened:
            st.close()
    created = not out.exists()
    dest = Store.open(out, create=True)
    ok = False
    try:
        _merge_into(dest, read, srcs, report, argv or [], _seed_entries(refs, {r["instance_hash"] for s in read
                                                                                for r in s.rows}))
        report.runs = dest.count()
        ok = True
    except sqlite3.OperationalError as exc:
        raise _store_error(out, exc) from None
    finally:
        _close_output(dest, out, created and not ok)
    return report


def _store_error(out: Path, exc: sqlite3.OperationalError) -> InputError:
    text = str(exc)
    if "full" in text:
        why = f"the disk is full ({text})"
    elif "locked" in text or "busy" in text:
        why = f"the store is in use by another writer that held it for a minute ({text})"
    else:
        why = text
    return InputError(f"{why}; nothing was merged, the store is as it was", file=str(out))


def _close_output(dest: Store, out: Path, remove: bool) -> None:
    """Close the output; an output this merge created and could not fill is removed again
    (with its -wal / -shm), unless another process has written to it meanwhile."""
    try:
        remove = remove and dest.count() == 0 and not dest.sweeps()
    except (sqlite3.Error, InputError):
        remove = False
    dest.close()
    if remove:
        for extra in ("", "-wal", "-shm"):
            try:
                os.unlink(f"{out}{extra}")
            except FileNotFoundError:
                pass


def _merge_into(dest: Store, read: list[_Source], srcs: list[Path], report: MergeReport, argv: list[str],
                seeds: list[dict[str, Any]]) -> None:
    with dest.transaction() as conn:  # BEGIN IMMEDIATE: the output's state below is the one written to
        have = {r["key"]: r for r in dest.runs(["key", "status", "feasible", "primary_value"])}
        origin = {k: str(dest.path) for k in have}
        taken: list[dict[str, Any]] = []
        for src in read:
            name = src.name
            report.added[name] = 0
            for h, data in src.envs.items():
                cur = conn.execute("INSERT OR IGNORE INTO envs VALUES (?, ?)", (h, json.dumps(data, sort_keys=True)))
                report.envs += cur.rowcount
            sweep_ids = {}
            for sw in src.sweeps:
                cur = conn.execute("INSERT INTO sweeps (started, finished, suite, suite_toml, argv, host, planned, "
                                   "skipped, done) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                   (sw["started"], sw["finished"], sw["suite"], sw["suite_toml"], sw["argv"],
                                    sw["host"], sw["planned"], sw["skipped"], sw["done"]))
                sweep_ids[sw["id"]] = cur.lastrowid
            for row in src.rows:
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
                taken.append(row)
                have[row["key"]] = {k: row.get(k) for k in ("key", "status", "feasible", "primary_value")}
                origin[row["key"]] = name
        for entry in seeds:  # the set manifests' values (a proving source's bound only), as `run` seeds them
            bestknown.seed(conn, entry)
        for row in taken:  # values only improve: the runs taken fold into what the output had
            bestknown.update(conn, row)
        conn.execute("INSERT INTO sweeps (started, finished, suite, suite_toml, argv, host, planned, skipped, done) "
                     "VALUES (?, ?, 'merge', '', ?, ?, ?, 0, ?)",
                     (utcnow(), utcnow(), json.dumps(argv), json.dumps({"sources": [str(s) for s in srcs]}),
                      sum(report.added.values()), sum(report.added.values()) + report.replaced))


def add_parser(sub: Any) -> None:
    """Add ``merge`` to the ``edgebench`` sub-parsers."""
    from edgebench.cli import _sub

    p = _sub(sub, "merge", "combine results stores made on different machines into one",
             "Merge the results stores STORE... into OUTPUT (created, or merged into when it exists). The same "
             "run key is the same run: a run stored twice with the same outcome is kept once; differing outcomes "
             "are conflicts, listed and resolved by keeping the first copy (a failed run gives way to a finished "
             "one). Every run of a source is checked first — its cells, its key, and its solution scored again "
             "by the referee against its instance (embedded sets, or --instances) — and refused (listed, left out) "
             "where the store's numbers are not the referee's. Environment records and sweeps are kept; best "
             "known values are rebuilt from the runs taken and the set manifests. The output is changed in one "
             "transaction (a sweep writing to it meanwhile waits; a failed or stopped merge changes nothing). "
             "Exit code 0, also with conflicts (they are reported); 1 when runs were refused (the others are "
             "merged); 2 for a damaged source store, a locked output or a full disk (nothing merged); "
             "docs/runner.md.",
             "  edgebench merge -o runs/paper/results.sqlite node1/results.sqlite node2/results.sqlite\n"
             "  edgebench merge -o all.sqlite a.sqlite b.sqlite --instances my-instances/ --json\n",
             cmd_merge)
    p.add_argument("stores", nargs="+", metavar="STORE", help="results stores to merge, in priority order")
    p.add_argument("-o", "--output", required=True, metavar="OUTPUT", help="merged store (created or merged into)")
    p.add_argument("--instances", action="append", metavar="SRC",
                   help="instance set name, folder or instance file holding instances of the runs that are not "
                        "in the embedded sets, to re-score their solutions (repeatable)")
    p.add_argument("--json", action="store_true", help="print the merge report as JSON")


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated()


def cmd_merge(args: Any) -> int:
    import sys

    old = signal.signal(signal.SIGTERM, _terminate)  # roll back and close instead of dying mid-transaction
    try:
        rep = merge_stores(args.output, args.stores, argv=["edgebench", *sys.argv[1:]], instances=args.instances)
    except Terminated:
        print(printable(f"edgebench: merge stopped (SIGTERM); nothing was merged, {args.output} is as it was"),
              file=sys.stderr)
        return 128 + signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, old)
    code = 1 if rep.refused else 0
    if args.json:
        print(json.dumps(rep.__dict__, indent=2))
        return code
    for src, n in rep.added.items():
        print(printable(f"{src}: {n} runs added"))
    print(f"{rep.duplicates} duplicate runs (same key, same outcome) kept once; {rep.replaced} failed runs "
          f"replaced by finished ones; {rep.envs} environment records added")
    for c in rep.conflicts:
        print(printable(f"CONFLICT {c['key'][:12]} {c['instance']} {c['solver']}: kept {c['kept']}, "
                        f"dropped {c['dropped']}"))
    for r in rep.refused:
        print(printable(f"REFUSED {r['store']} run {str(r['key'])[:12]} {r['instance']} {r['solver']}: {r['reason']}"))
    print(printable(f"{len(rep.conflicts)} conflicts; {len(rep.refused)} runs refused; {rep.output}: {rep.runs} runs"))
    return code
