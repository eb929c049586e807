"""``edgebench results snapshot``: a compact copy of a results store that is being run, to keep
in the repository, so that a long sweep (the paper suite, ``results/paper-run/``) continues
on another machine or in another session.

The copy is the whole store (every column: solutions, traces, Pareto fronts, environments,
sweeps, best known values; a store holds about 2.5 KB per run), written by SQLite's
``VACUUM INTO`` (a consistent snapshot even while a runner writes the store; no free pages),
without the ``claims`` table's rows (a claim names a live runner on the machine that made the
copy; elsewhere it would keep those runs from ever being run), in rollback-journal mode (one
file, no ``-wal`` / ``-shm`` beside it in the repository). It is written beside the target
under a temporary name and renamed into place: the previous snapshot is replaced, never
accumulated. ``progress.json`` beside it (:func:`progress`) says how far the sweep is.

To continue from a snapshot, copy it to the runner's store path (no store there yet) or
``edgebench merge`` it into the store there (both hold runs): a run's key is the same on every
machine, so ``edgebench run`` then runs only what neither holds.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from edgebench.errors import InputError
from edgebench.runner.store import Store, utcnow

CMDLINE = "<command line>"
PROGRESS_FILE = "progress.json"


def progress(store: Store) -> dict[str, Any]:
    """How far a store's sweeps are: runs stored by status, family and kind, the largest
    planned count of a sweep, run-seconds (sum of runtimes) and time-limit seconds."""
    rows = store.runs(("family", "kind", "status", "runtime", "time_limit", "checkpoint"))
    sweeps = store.sweeps()
    by_fk: Counter = Counter((r["family"], r["kind"] or "") for r in rows)
    return {
        "written": utcnow(),
        "runs": len(rows),
        "planned": max((int(s.get("planned") or 0) for s in sweeps), default=0),
        "sweeps": len(sweeps),
        "last_sweep": {k: sweeps[-1].get(k) for k in ("started", "finished", "planned", "skipped", "done")}
        if sweeps else None,
        "statuses": dict(sorted(Counter(r["status"] for r in rows).items())),
        "by_family_kind": {f"{f}/{k}": n for (f, k), n in sorted(by_fk.items())},
        "run_seconds": round(sum(r["runtime"] or 0.0 for r in rows), 1),
        "time_limit_seconds": round(sum(r["time_limit"] or 0.0 for r in rows), 1),
        "learned_checkpoints": sorted({r["checkpoint"] for r in rows if r["kind"] == "learned" and r["checkpoint"]}),
    }


def snapshot(store_path: str | os.PathLike, out_file: str | os.PathLike) -> dict[str, Any]:
    """Write the snapshot of the store at ``store_path`` to ``out_file`` and ``progress.json``
    beside it (both atomically); returns the progress record (with ``bytes``, the snapshot's size)."""
    out = Path(out_file)
    src = Path(store_path)
    if out.exists() and out.is_dir():
        raise InputError("is a folder (give the snapshot's file name)", file=str(out), field="-o")
    if out.exists() and src.exists() and out.resolve() == src.resolve():
        raise InputError("the snapshot would replace the store it copies", file=str(out), field="-o")
    if out.exists():
        with Store.open(out, create=False, readonly=True):  # only a store (an older snapshot) is replaced
            pass
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    tmp_progress = out.parent / f".{PROGRESS_FILE}.tmp-{os.getpid()}"
    try:
        tmp.unlink(missing_ok=True)
        with Store.open(src, create=False, readonly=True) as store:
            store.conn.execute("VACUUM INTO ?", (str(tmp),))
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=DELETE")
            conn.execute("DELETE FROM claims")
            conn.execute("VACUUM")
        finally:
            conn.close()
        with Store.open(tmp, create=False, readonly=True) as copy:
            rec = progress(copy)
        rec["bytes"] = tmp.stat().st_size
        rec["store"] = src.name
        tmp_progress.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
        os.chmod(tmp, 0o644)
        os.chmod(tmp_progress, 0o644)
        os.replace(tmp, out)
        os.replace(tmp_progress, out.parent / PROGRESS_FILE)
    finally:
        tmp.unlink(missing_ok=True)
        tmp_progress.unlink(missing_ok=True)
    return rec
