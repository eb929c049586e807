"""The results store: one SQLite file in WAL mode, one transaction per finished run.

Tables:

* ``meta`` — ``format_version`` (this code writes and reads :data:`FORMAT_VERSION`; a store
  written by a newer version is refused, never overwritten), ``created``, ``edgebench``.
* ``runs`` — one row per finished run, keyed by the run key (see :mod:`.suite`): instance
  id / hash / set / family / size, solver / label / kind / parameters / parameter hash, seed,
  time limit, status, the referee's verdict (feasible, primary name / sense / value, every
  objective as JSON, number of violations), the solver's reported objective and bound,
  runtime, wall time, peak memory, message, anytime trace and Pareto front (JSON), the
  environment hash, start / finish times (UTC) and the solution (zlib-compressed JSON).
* ``envs`` — environment hash -> package and solver-library versions and host (JSON).
* ``bestknown`` — per instance: best referee-verified objective and best proven bound,
  each with provenance (solver, run key, date); see :mod:`.bestknown`.
* ``sweeps`` — one row per ``edgebench run``: the suite (as TOML), the command line, the
  host, the numbers planned / skipped / done.
* ``claims`` — the runs a runner is executing now (run key, owner, host, pid). A runner claims
  each run atomically (``BEGIN IMMEDIATE``) just before it starts it; a run that is stored or
  claimed by another live runner is left to that runner, so two runners on one store share the
  work. A claim goes away with its run's row (same transaction) or when its runner ends; a
  claim of a runner whose process is gone (same host) is taken over.

Only the driver writes (local workers and Dask workers send their results back to it).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator
from urllib.request import pathname2url

from edgebench.errors import InputError

FORMAT_VERSION = 1
SQLITE_MAGIC = b"SQLite format 3\x00"

#: runner statuses besides the solver statuses (optimal, feasible, infeasible, timeout, error)
RUNNER_STATUSES = ("killed", "memory", "crash")
#: statuses that --retry-failed runs again
FAILED_STATUSES = ("error", "killed", "memory", "crash")

RUN_COLUMNS: tuple[tuple[str, str], ...] = (
    ("key", "TEXT PRIMARY KEY"),
    ("sweep", "INTEGER"),
    ("suite", "TEXT"),
    ("instance_id", "TEXT NOT NULL"),
    ("instance_hash", "TEXT NOT NULL"),
    ("instance_set", "TEXT"),
    ("family", "TEXT NOT NULL"),
    ("size", "INTEGER"),
    ("solver", "TEXT NOT NULL"),
    ("label", "TEXT NOT NULL"),
    ("kind", "TEXT"),
    ("params", "TEXT"),
    ("params_hash", "TEXT"),
    ("seed", "INTEGER"),
    ("time_limit", "REAL"),
    ("memory_limit_mb", "REAL"),
    ("status", "TEXT NOT NULL"),
    ("claimed_status", "TEXT"),
    ("feasible", "INTEGER"),
    ("proven", "INTEGER"),
    ("units_ok", "INTEGER"),
    ("primary_name", "TEXT"),
    ("sense", "TEXT"),
    ("primary_value", "REAL"),
    ("objectives", "TEXT"),
    ("violations", "INTEGER"),
    ("reported_objective", "REAL"),
    ("bound", "REAL"),
    ("runtime", "REAL"),
    ("solver_wall", "REAL"),
    ("wall", "REAL"),
    # seconds from the hand-over of the run's task to its solver's start (instance load, validation);
    # added after format version 1's first release: older stores get it (NULL) when opened
    # for writing, and read NULL where they lack it (Store.select_list)
    ("startup", "REAL"),
    ("peak_mem_mb", "REAL"),
    ("message", "TEXT"),
    ("trace", "TEXT"),
    ("pareto", "TEXT"),
    ("env", "TEXT"),
    # sha256 of the checkpoint file a learned solver ran (its stats["checkpoint_sha256"]); NULL
    # for other solvers; added after format version 1's first release, as ``startup``
    ("checkpoint", "TEXT"),
    ("started", "TEXT"),
    ("finished", "TEXT"),
    ("solution", "BLOB"),
)
COLUMN_NAMES = tuple(c for c, _ in RUN_COLUMNS)
#: every column but the solution blob (what reports read)
SCALAR_COLUMNS = tuple(c for c in COLUMN_NAMES if c != "solution")

_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)",
    "CREATE TABLE IF NOT EXISTS runs (" + ", ".join(f"{c} {t}" for c, t in RUN_COLUMNS) + ")",
    "CREATE INDEX IF NOT EXISTS runs_instance ON runs (instance_hash)",
    "CREATE INDEX IF NOT EXISTS runs_family_label ON runs (family, label)",
    "CREATE TABLE IF NOT EXISTS envs (hash TEXT PRIMARY KEY, data TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS bestknown (
        instance_hash TEXT PRIMARY KEY, instance_id TEXT, instance_set TEXT, family TEXT, size INTEGER,
        primary_name TEXT, sense TEXT,
        objective REAL, obj_solver TEXT, obj_run TEXT, obj_date TEXT,
        bound REAL, bound_solver TEXT, bound_run TEXT, bound_date TEXT,
        optimal INTEGER NOT NULL DEFAULT 0, conflict TEXT)""",
    """CREATE TABLE IF NOT EXISTS sweeps (
        id INTEGER PRIMARY KEY AUTOINCREMENT, started TEXT, finished TEXT, suite TEXT, suite_toml TEXT,
        argv TEXT, host TEXT, planned INTEGER, skipped INTEGER, done INTEGER)""",
    "CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL, host TEXT, pid INTEGER, "
    "claimed TEXT)",
    # instance features (edgebench.features) of every instance a run was planned on, by hash
    "CREATE TABLE IF NOT EXISTS features (instance_hash TEXT PRIMARY KEY, family TEXT, data TEXT NOT NULL)",
]


def utcnow() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _set_wal(conn: sqlite3.Connection, wait: float = 60.0) -> None:
    """Switch to WAL. The switch needs the file to itself and SQLite answers "database is locked"
    at once, without its busy timeout, while another process has it open (runners opening a
    new store together): retried for up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _unreadable(path: str, reason: str) -> InputError:
    return InputError(f"unreadable results store: {reason}", file=path)


def _open_readonly(p: Path) -> tuple[sqlite3.Connection, set[str]]:
    """A read-only connection (no journal or lock file written) and the store's tables. A
    store in WAL mode whose folder or ``-shm`` file cannot be written (a read-only folder,
    another user's store) cannot be opened ``mode=ro``: it is then opened ``immutable=1``,
    which reads the file as it is (no other process can be writing it where we cannot)."""
    uri = "file:" + pathname2url(str(p.resolve()))
    last: sqlite3.OperationalError | None = None
    for query in ("?mode=ro", "?mode=ro&immutable=1"):
        conn = sqlite3.connect(uri + query, uri=True, timeout=60.0)
        conn.row_factory = sqlite3.Row
        try:
            return conn, {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.OperationalError as exc:
            conn.close()
            if "readonly" not in str(exc) and "unable to open" not in str(exc):
                raise
            last = exc
    assert last is not None
    raise last


class Store:
    """An open results store. Use :meth:`open`; close with :meth:`close` (or ``with``)."""

    def __init__(self, conn: sqlite3.Connection, path: str, readonly: bool) -> None:
        self.conn = conn
        self.path = path
        self.readonly = readonly

    # ---- opening ---------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike, *, create: bool = True, readonly: bool = False) -> "Store":
        """Open (or, with ``create``, create) a store. InputError for a file that is not an
        edgebench store, an unreadable one, or one written by a newer format version."""
        p = Path(path)
        sp = str(p)
        exists = p.exists()
        if exists:
            if p.is_dir():
                raise _unreadable(sp, "is a folder")
            try:
                with open(p, "rb") as fh:
                    head = fh.read(len(SQLITE_MAGIC))
            except OSError as exc:
                raise _unreadable(sp, exc.strerror or str(exc)) from None
            if head and head != SQLITE_MAGIC:
                raise _unreadable(sp, "not an SQLite file")
        elif not create:
            raise InputError("no such results store", file=sp)
        else:
            for parent in p.parents:
                if parent.exists():
                    if not parent.is_dir():
                        raise InputError(f"{parent} is not a folder", file=sp)
                    break
            p.parent.mkdir(parents=True, exist_ok=True)
        try:
            if readonly:
                conn, tables = _open_readonly(p)
            else:
                conn = sqlite3.connect(sp, timeout=60.0, isolation_level=None)
                conn.row_factory = sqlite3.Row
                # the check-and-create below runs in one write transaction, so that two runners
                # opening a new store at once never see the other's half-made schema (a meta
                # table without its format_version yet)
                conn.execute("BEGIN IMMEDIATE")
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as exc:
            raise _unreadable(sp, str(exc)) from None
        store = cls(conn, sp, readonly)
        try:
            if "meta" in tables:
                row = conn.execute("SELECT value FROM meta WHERE key='format_version'").fetchone()
                if row is None:
                    raise _unreadable(sp, "no format_version in its meta table")
                version = _format_version(row[0], sp)
                if version > FORMAT_VERSION:
                    raise InputError(f"store format version {version} was written by a newer edgebench "
                                     f"(this one reads up to {FORMAT_VERSION}); refusing to touch it", file=sp,
                                     field="meta.format_version")
                if not readonly:
                    store._init_schema()
            elif tables:
                raise _unreadable(sp, f"not an edgebench results store (tables: {', '.join(sorted(tables))})")
            elif readonly:
                raise _unreadable(sp, "empty file, not an edgebench results store")
            else:
                store._init_schema()
                conn.executemany("INSERT OR IGNORE INTO meta VALUES (?, ?)", [
                    ("format_version", str(FORMAT_VERSION)), ("created", utcnow()),
                    ("edgebench", _edgebench_version())])
            if not readonly:
                conn.execute("COMMIT")
                # WAL + NORMAL (outside any transaction, once the file is known to be a store): a
                # committed run survives a crash or kill of the process; a power cut may lose the
                # last commits, which are then simply run again
                _set_wal(conn)
                conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise _unreadable(sp, str(exc)) from None
        except BaseException:
            conn.close()
            raise
        return store

    def _init_schema(self) -> None:
        for stmt in _SCHEMA:
            self.conn.execute(stmt)
        have = {r[1] for r in self.conn.execute("PRAGMA table_info(runs)")}
        for col, typ in RUN_COLUMNS:  # columns added since the store was created
            if col not in have:
                self.conn.execute(f"ALTER TABLE runs ADD COLUMN {col} {typ}")

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- transactions ----------------------------------------------------------------

    class _Tx:
        def __init__(self, conn: sqlite3.Connection) -> None:
            self.conn = conn

        def __enter__(self) -> sqlite3.Connection:
            self.conn.execute("BEGIN IMMEDIATE")
            return self.conn

        def __exit__(self, et, ev, tb) -> None:
            if et is None:
                self.conn.execute("COMMIT")
            elif self.conn.in_transaction:
                # SQLite has already rolled back after some errors (a full disk): a second
                # ROLLBACK would hide the real error behind "no transaction is active" (issue 44)
                self.conn.execute("ROLLBACK")

    def transaction(self) -> "_Tx":
        return Store._Tx(self.conn)

    # ---- writing ---------------------------------------------------------------------

    def add_run(self, row: dict[str, Any], env: dict[str, Any] | None = None, *, replace: bool = False,
                force: bool = False) -> bool:
        """Insert one finished run and update the best-known table, in one transaction.
        Returns False (and changes nothing) when the key is already stored and neither
        ``replace`` (a stored run of a failed status is replaced) nor ``force`` (any stored run
        is replaced: ``edgebench run --rerun``) applies. A replaced run that held its instance's
        best known objective or bound no longer does: that record is folded again from the
        instance's stored runs (:func:`.bestknown.refold`)."""
        from edgebench.runner import bestknown

        with self.transaction() as conn:
            old = conn.execute("SELECT status FROM runs WHERE key=?", (row["key"],)).fetchone()
            if old is not None:
                if not force and (not replace or old[0] not in FAILED_STATUSES):
                    return False
                conn.execute("DELETE FROM runs WHERE key=?", (row["key"],))
            if env is not None and row.get("env"):
                conn.execute("INSERT OR IGNORE INTO envs VALUES (?, ?)", (row["env"], json.dumps(env, sort_keys=True)))
            cols = [c for c in COLUMN_NAMES if c in row]
            conn.execute(f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                         [row[c] for c in cols])
            conn.execute("DELETE FROM claims WHERE key=?", (row["key"],))
            if old is None or not bestknown.refold(conn, row["instance_hash"], row["key"]):
                bestknown.update(conn, row)
        return True

    # ---- claims (several runners on one store) -----------------------------------------

    def claim(self, key: str, owner: str, *, retry_failed: bool = False, again: bool = False,
              since: str | None = None) -> bool:
        """Claim run ``key`` for ``owner`` (see :func:`owner_id`), atomically. False when the
        run is stored (unless ``again``: it is to be run again — but not when it finished after
        ``since``, the sweep's start: another runner ran it again meanwhile —, or
        ``retry_failed`` and its status failed) or claimed by another runner that is still alive."""
        with self.transaction() as conn:
            row = conn.execute("SELECT status, finished FROM runs WHERE key=?", (key,)).fetchone()
            if again and row is not None and since is not None and (row[1] or "") > since:
                return False
            if row is not None and not again and not (retry_failed and row[0] in FAILED_STATUSES):
                return False
            c = conn.execute("SELECT owner, host, pid FROM claims WHERE key=?", (key,)).fetchone()
            if c is not None and c[0] != owner and _alive(c[1], c[2]):
                return False
            host, pid = _host_pid()
            conn.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?)", (key, owner, host, pid, utcnow()))
        return True

    def release_claims(self, owner: str) -> None:
        with self.transaction() as conn:
            conn.execute("DELETE FROM claims WHERE owner=?", (owner,))

    def claims(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.conn.execute("SELECT * FROM claims ORDER BY claimed")]

    def add_runs_bulk(self, rows: Iterable[dict[str, Any]], envs: dict[str, dict[str, Any]] | None = None) -> int:
        """Insert many runs in one transaction (imports and benchmarks; best known updated)."""
        from edgebench.runner import bestknown

        n = 0
        with self.transaction() as conn:
            for h, data in (envs or {}).items():
                conn.execute("INSERT OR IGNORE INTO envs VALUES (?, ?)", (h, json.dumps(data, sort_keys=True)))
            for row in rows:
                cols = [c for c in COLUMN_NAMES if c in row]
                cur = conn.execute(f"INSERT OR IGNORE INTO runs ({', '.join(cols)}) VALUES "
                                   f"({', '.join('?' * len(cols))})", [row[c] for c in cols])
                if cur.rowcount:
                    bestknown.update(conn, row)
                    n += 1
        return n

    def add_features(self, rows: Iterable[tuple[str, str, dict[str, float]]]) -> None:
        """Store (instance hash, family, features) rows; an instance's features are kept once."""
        with self.transaction() as conn:
            conn.executemany("INSERT OR IGNORE INTO features VALUES (?, ?, ?)",
                             [(h, fam, json.dumps(f, sort_keys=True)) for h, fam, f in rows])

    def features(self) -> dict[str, dict[str, float]]:
        """instance hash -> features (the runs' instances; see edgebench.features)."""
        try:
            rows = self.conn.execute("SELECT instance_hash, data FROM features").fetchall()
        except sqlite3.OperationalError:  # a store opened read-only from before the table existed
            return {}
        return {h: json.loads(d) for h, d in rows}

    def seed_bestknown(self, entries: Iterable[dict[str, Any]]) -> None:
        from edgebench.runner import bestknown

        with self.transaction() as conn:
            for e in entries:
                bestknown.seed(conn, e)

    def begin_sweep(self, *, suite: str, suite_toml: str, argv: list[str], host: dict[str, Any], planned: int,
                    skipped: int) -> int:
        with self.transaction() as conn:
            cur = conn.execute("INSERT INTO sweeps (started, suite, suite_toml, argv, host, planned, skipped, done) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?, 0)",
                               (utcnow(), suite, suite_toml, json.dumps(argv), json.dumps(host, sort_keys=True),
                                planned, skipped))
            return int(cur.lastrowid)

    def end_sweep(self, sweep: int, done: int) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE sweeps SET finished=?, done=? WHERE id=?", (utcnow(), done, sweep))

    # ---- reading ---------------------------------------------------------------------

    def keys(self, statuses: Iterable[str] | None = None) -> set[str]:
        if statuses is None:
            return {r[0] for r in self.conn.execute("SELECT key FROM runs")}
        st = list(statuses)
        q = f"SELECT key FROM runs WHERE status IN ({', '.join('?' * len(st))})"
        return {r[0] for r in self.conn.execute(q, st)}

    def count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def runs(self, columns: Iterable[str] = SCALAR_COLUMNS, where: str = "", args: tuple = ()) -> list[dict[str, Any]]:
        cols = list(columns)
        for c in cols:
            if c not in COLUMN_NAMES:
                raise ValueError(f"unknown column {c!r}")
        q = f"SELECT {self.select_list(cols)} FROM runs {where} ORDER BY rowid"
        cur = self.conn.execute(q, args)
        cur.row_factory = None  # plain tuples: much faster than Row for 100k rows
        return [dict(zip(cols, r)) for r in cur]

    def iter_rows(self, columns: Iterable[str] = SCALAR_COLUMNS) -> Iterator[tuple]:
        cols = list(columns)
        cur = self.conn.execute(f"SELECT {self.select_list(cols)} FROM runs ORDER BY rowid")
        cur.row_factory = None
        return iter(cur)

    def select_list(self, columns: Iterable[str]) -> str:
        """``columns`` for a SELECT on ``runs``; a known column that this store lacks (an older
        store opened read-only) reads as NULL."""
        have = {r[1] for r in self.conn.execute("PRAGMA table_info(runs)")}
        return ", ".join(c if c in have or c not in COLUMN_NAMES else f"NULL AS {c}" for c in columns)

    def run(self, key: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT * FROM runs WHERE key=?", (key,)).fetchone()
        return dict(row) if row is not None else None

    def solution(self, key: str):
        """The stored Solution of a run (None when the run has none)."""
        import zlib

        from edgebench.instances.io import solution_from_dict

        row = self.conn.execute("SELECT solution FROM runs WHERE key=?", (key,)).fetchone()
        if row is None or row[0] is None:
            return None
        return solution_from_dict(json.loads(zlib.decompress(row[0]).decode("utf-8")), file=f"{self.path}#{key}")

    def bestknown(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.conn.execute("SELECT * FROM bestknown ORDER BY family, instance_set, instance_id")]

    def envs(self) -> dict[str, dict[str, Any]]:
        """environment hash -> record; InputError naming the store and ``envs.data`` for a
        record that is not a JSON object (issue 44: a traceback in report, merge, bestknown)."""
        out = {}
        for h, data in self.conn.execute("SELECT hash, data FROM envs"):
            rec = _json_cell(data, self.path, "envs.data", f"environment record {str(h)[:16]!r}")
            if not isinstance(rec, dict):
                raise InputError(f"environment record {str(h)[:16]!r} is not a JSON object (the store was changed "
                                 "outside edgebench)", file=self.path, field="envs.data")
            out[h] = rec
        return out

    def sweeps(self) -> list[dict[str, Any]]:
        """The sweep records; InputError naming the store and the field for a command line
        (``argv``, a JSON list of strings) or host (JSON) that the runner did not write."""
        rows = [dict(r) for r in self.conn.execute("SELECT * FROM sweeps ORDER BY id")]
        for r in rows:
            what = f"sweep {r.get('id')!r}"
            if r.get("argv") is not None:
                argv = _json_cell(r["argv"], self.path, "sweeps.argv", what)
                if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
                    raise InputError(f"{what}: the command line is not a JSON list of strings (the store was changed "
                                     "outside edgebench)", file=self.path, field="sweeps.argv")
            if r.get("host") is not None:
                _json_cell(r["host"], self.path, "sweeps.host", what)
        return rows

    def meta(self) -> dict[str, str]:
        return {r[0]: r[1] for r in self.conn.execute("SELECT key, value FROM meta")}


def _format_version(value: Any, path: str) -> int:
    """The meta table's format version as an integer; InputError for anything else."""
    try:
        if isinstance(value, (bytes, float)):
            raise ValueError
        return int(value)
    except (TypeError, ValueError):
        raise InputError(f"format version {str(value)[:40]!r} is not an integer (the store was changed outside "
                         "edgebench)", file=path, field="meta.format_version") from None


def _json_cell(text: Any, path: str, field: str, what: str) -> Any:
    """A JSON cell's value; InputError naming the store and the field where it is not JSON text."""
    try:
        if not isinstance(text, str):
            raise ValueError(f"holds {type(text).__name__}")
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{what}: not JSON text ({str(exc)[:80]}; the store was changed outside edgebench)",
                         file=path, field=field) from None


def _host_pid() -> tuple[str, int]:
    import socket

    return socket.gethostname(), os.getpid()


def owner_id() -> str:
    """A runner's claim owner: host, process id and a random part."""
    import uuid

    host, pid = _host_pid()
    return f"{host}:{pid}:{uuid.uuid4().hex[:8]}"


def _alive(host: str | None, pid: int | None) -> bool:
    """Whether a claim's runner may still be running (another host: assumed alive)."""
    if host != _host_pid()[0] or pid is None:
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _edgebench_version() -> str:
    from edgebench import __version__

    return __version__

