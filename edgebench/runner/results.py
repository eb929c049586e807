"""``edgebench results export``: a compact, versioned export of a results store, the form in
which results are kept in the repository (``results/<name>/``) and read by the docs site's
results page (``scripts/mkdocs_hooks.py``) and by ``edgebench results diff`` (:mod:`.results_diff`).

An export folder holds:

* ``runs.parquet`` and ``runs.csv`` — one row per stored run: the columns of the report's runs
  table (:data:`edgebench.runner.report.EXPORT_COLUMNS`: instance, set, solver, label, kind,
  parameters, seed, time limit, status, the referee's verdict and value, the best known value and
  best bound of the instance and the gaps to them, runtime, peak memory, message, environment
  hash, the sha256 of a learned run's checkpoint file, ...) plus ``variant``;
* ``envs.json`` — the environment records (package versions, host) by hash;
* ``solutions/<set>/<instance>.<label>.json`` — the solution of every run that holds its
  instance's best known value in the store (no other solutions);
* ``metadata.json`` — :data:`EXPORT_VERSION`, the edgebench version and git commit, the suites
  (name, sha256 of the suite TOML, planned runs), the instance sets (version, recipe version,
  sha256 of the manifest), the learned solvers' checkpoints (file, algorithm, env steps, sha256),
  the learned rows per checkpoint file they ran and how many of them are stale (:func:`learned_runs`),
  the run count, planned vs stored, the run-seconds (sum of the runs' runtimes), and the
  failures by status with their reasons.

The folder is written beside the target under a temporary name and renamed into place (an
existing export is replaced as a whole; a folder that is not an export is refused).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from edgebench.errors import InputError
from edgebench.runner import report
from edgebench.runner.store import FAILED_STATUSES, Store, utcnow

#: the layout version of an export folder (metadata.json ``export_version``)
EXPORT_VERSION = 1
RUN_FILE = "runs.parquet"
METADATA_FILE = "metadata.json"
#: columns of runs.parquet / runs.csv (the report's runs table; it may gain columns)
RUN_COLUMNS = (*report.EXPORT_COLUMNS, "variant")
#: the columns every export of EXPORT_VERSION 1 has and readers rely on
READ_COLUMNS = ("key", "family", "instance_set", "instance_id", "instance_hash", "solver", "label", "kind", "seed",
                "status", "feasible", "proven", "sense", "primary_value", "gap", "bound_gap", "best_known",
                "best_bound", "runtime", "time_limit", "message", "variant")
#: numeric columns of the runs table (NULL: None)
NUMERIC_COLUMNS = ("sweep", "size", "seed", "time_limit", "memory_limit_mb", "feasible", "proven", "units_ok",
                   "primary_value", "gap", "bound_gap", "best_known", "best_bound", "violations",
                   "reported_objective", "bound", "runtime", "solver_wall", "wall", "peak_mem_mb")
#: text columns every row must have
TEXT_KEYS = ("key", "family", "instance_hash", "label", "status")
#: at most this many distinct reasons are listed per failed status
MAX_REASONS = 10

ROOT = Path(__file__).resolve().parents[2]


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def mean_ci(values: list[float], confidence: float = report.CONFIDENCE) -> tuple[float | None, float | None,
                                                                            float | None]:
    """(mean, low, high): the mean of ``values`` with its Student-t ``confidence`` interval
    (low = high = None with fewer than two values; mean None without values)."""
    from scipy.special import stdtrit  # the t quantile, as in report.leaderboard

    v = [x for x in values if x is not None and math.isfinite(x)]
    if not v:
        return None, None, None
    m = float(np.mean(v))
    if len(v) < 2:
        return m, None, None
    half = float(stdtrit(len(v) - 1, 0.5 + confidence / 2) * np.std(v, ddof=1) / math.sqrt(len(v)))
    return m, m - half, m + half


def git_commit(root: Path = ROOT) -> str | None:
    """``git describe --always --dirty --abbrev=40`` of the checkout (None outside one)."""
    try:
        out = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=40"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def set_records(names: list[str]) -> dict[str, dict[str, Any]]:
    """Per embedded instance set: its version (the ``-vN`` of its name), recipe version,
    manifest sha256 and instance count (sets that are not embedded: ``{"embedded": False}``)."""
    from edgebench.instances import sets

    out: dict[str, dict[str, Any]] = {}
    for name in sorted(n for n in names if n):
        path = sets.DATA_DIR / name / "manifest.json"
        if not path.is_file():
            out[name] = {"embedded": False}
            continue
        raw = path.read_bytes()
        doc = json.loads(raw)
        out[name] = {"version": name.rsplit("-v", 1)[1] if "-v" in name else None,
                     "recipe_version": (doc.get("recipe") or {}).get("version"),
                     "instances": doc.get("instances") if isinstance(doc.get("instances"), int)
                     else len(doc.get("instances") or []),
                     "manifest_sha256": sha256_bytes(raw)}
    return out


def checkpoint_records(solvers: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Per learned solver: its shipped checkpoints (file, preset, variant, algorithm, env steps
    of reinforcement learning, sha256), read from the checkpoint sidecars by the registry."""
    from edgebench import registry

    out: dict[str, list[dict[str, Any]]] = {}
    for name in sorted(set(solvers)):
        try:
            ck = registry.get(name).as_dict().get("checkpoints")
        except KeyError:
            continue
        if isinstance(ck, list):
            out[name] = [{k: c.get(k) for k in ("file", "preset", "variant", "algorithm", "env_steps", "sha256",
                                                      "default")}
                         for c in ck if isinstance(c, dict)]
    return out


#: options of ``edgebench run`` that do not change which runs a sweep plans (with their value or not);
#: ``--only`` runs a subset of the same plan (``edgebench run paper --only kind=learned --rerun stale``
#: re-runs rows of the paper suite, not another suite): the plan's largest sweep counts
_NO_PLAN = {"--workers": 1, "--dask": 1, "--db": 1, "-o": 1, "--output": 1, "--estimate-workers": 1,
            "--no-report": 0, "--no-progress": 0, "--retry-failed": 0, "--rerun": 1, "--only": 1}


def plan_key(argv: list[str] | None) -> tuple[str, ...]:
    """A sweep's command line without the options that leave its plan unchanged: sweeps with the
    same key planned the same runs (a resumed or retried sweep is not counted twice)."""
    out, skip = [], 0
    for a in argv or []:
        if skip:
            skip -= 1
        elif a.split("=", 1)[0] in _NO_PLAN:
            skip = 0 if "=" in a else _NO_PLAN[a.split("=", 1)[0]]
        else:
            out.append(a)
    return tuple(out)


def _suites(sweeps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per distinct plan (:func:`plan_key`): the suite's name, the sha256 of the suite
    as last run (TOML, after the command line's overrides), the sweeps that ran it and the runs it
    plans (the largest plan of those sweeps)."""
    by: dict[tuple, dict[str, Any]] = {}
    for s in sweeps:
        if s.get("suite") == "merge":
            continue
        argv = json.loads(s["argv"]) if s.get("argv") else None
        key = plan_key(argv) if argv else ("toml", s.get("suite_toml") or "")
        e = by.setdefault(key, {"name": s.get("suite"), "sweeps": 0, "planned": 0})
        e["sweeps"] += 1
        e["planned"] = max(e["planned"], int(s.get("planned") or 0))
        e["sha256"] = sha256_bytes((s.get("suite_toml") or "").encode())
        e["argv"] = list(key) if argv else None
    return list(by.values())


def learned_runs(runs: report.Runs, shipped: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per learned solver: its runs, how many ran each checkpoint file (sha256 -> count; "" for
    runs that recorded none) and how many are ``stale`` — their file is not one the solver ships
    now, or they recorded none (``edgebench run --only kind=learned --rerun stale`` runs them again)."""
    out: dict[str, dict[str, Any]] = {}
    if not len(runs):
        return out
    for i in np.flatnonzero(runs["kind"] == "learned"):
        name, sha = runs["solver"][i], runs["checkpoint"][i] or ""
        e = out.setdefault(name, {"runs": 0, "checkpoints": Counter(), "stale": 0})
        e["runs"] += 1
        e["checkpoints"][sha] += 1
        e["stale"] += sha not in {c.get("sha256") for c in shipped.get(name, [])}
    return {k: {**v, "checkpoints": dict(sorted(v["checkpoints"].items()))} for k, v in sorted(out.items())}


def failures(runs: report.Runs) -> dict[str, dict[str, Any]]:
    """status -> {"runs": count, "reasons": [[message, count], ...]} for the failed statuses."""
    out: dict[str, dict[str, Any]] = {}
    for status in FAILED_STATUSES:
        idx = np.flatnonzero(runs["status"] == status)
        if idx.size:
            reasons = Counter(str(runs["message"][i] or "(no message)").splitlines()[0][:200] for i in idx)
            out[status] = {"runs": int(idx.size), "reasons": [list(x) for x in reasons.most_common(MAX_REASONS)]}
    return out


def metadata(data: report.Data, store_path: str, note: str | None = None) -> dict[str, Any]:
    runs = data.runs
    suites = _suites(data.sweeps)
    planned = sum(s["planned"] for s in suites)
    rt = runs["runtime"] if len(runs) else np.zeros(0)
    learned = sorted({s for s, k in zip(runs["solver"], runs["kind"]) if k == "learned"}) if len(runs) else []
    statuses = Counter(runs["status"].tolist()) if len(runs) else Counter()
    ckpts = checkpoint_records(learned)
    from edgebench import __version__

    return {
        "export_version": EXPORT_VERSION, "created": utcnow(), "edgebench": __version__, "git": git_commit(),
        "store": {"file": Path(store_path).name, "format_version": data.meta.get("format_version"),
                  "created": data.meta.get("created")},
        "suites": suites, "planned": planned, "runs": len(runs),
        "families": sorted(set(runs["family"].tolist())) if len(runs) else [],
        "statuses": dict(sorted(statuses.items())),
        "run_seconds": round(float(np.nansum(rt)), 3),
        "cpu_hours": round(float(np.nansum(rt)) / 3600.0, 4),
        "time_limit_hours": round(float(np.nansum(runs["time_limit"])) / 3600.0, 4) if len(runs) else 0.0,
        "cpu_hours_note": "sum of the runs' runtimes (each run single-threaded: its wall time, an upper "
                          "estimate of its CPU time); the runner's own overhead is not included",
        "sets": set_records(sorted(set(runs["instance_set"].tolist())) if len(runs) else []),
        "checkpoints": ckpts,
        "learned_runs": learned_runs(runs, ckpts),
        "failures": failures(runs),
        "environments": len(data.envs),
        "note": note,
    }


def _write_solutions(store: Store, data: report.Data, folder: Path) -> list[str]:
    """The solution of each run that holds its instance's best known value; relative paths."""
    keys = set(data.runs["key"].tolist()) if len(data.runs) else set()
    written = []
    for bk in data.best.values():
        key = bk.get("obj_run")
        if key not in keys:
            continue
        row = store.conn.execute("SELECT instance_set, instance_id, label, solution FROM runs WHERE key=?",
                                 (key,)).fetchone()
        if row is None or row["solution"] is None:
            continue
        text = zlib.decompress(row["solution"]).decode("utf-8")
        rel = Path("solutions") / safe_name(row["instance_set"] or "no-set") / \
            f"{safe_name(row['instance_id'])}.{safe_name(row['label'])}.json"
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(json.dumps(json.loads(text), indent=1, sort_keys=True) + "\n")
        written.append(rel.as_posix())
    return sorted(written)


def safe_name(text: str) -> str:
    """A file-name-safe form of a name (letters, digits, ``._-``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("._") or "x"


def _check_target(out: Path) -> None:
    for q in (out, *out.parents):
        if q.exists():
            if not q.is_dir():
                raise InputError(f"{q} exists and is not a folder", file="<command line>", field="-o")
            break
    if out.is_dir() and any(out.iterdir()) and not (out / METADATA_FILE).is_file():
        raise InputError("exists and is not an edgebench results export (no metadata.json); refusing to "
                         "replace it", file=str(out), field="-o")


def export(store_path: str | os.PathLike, out_dir: str | os.PathLike, *, note: str | None = None) -> dict[str, Any]:
    """Write the export of the store at ``store_path`` to ``out_dir`` (atomically: a temporary
    folder beside it, renamed into place). Returns the metadata."""
    out = Path(out_dir)
    _check_target(out)
    with Store.open(store_path, create=False, readonly=True) as store:
        data = report.load(store)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
        try:
            runs = data.runs
            report.write_tables(tmp, "runs", {c: runs[c] for c in RUN_COLUMNS} if len(runs)
                                else {c: np.zeros(0, dtype=object) for c in RUN_COLUMNS})
            (tmp / "envs.json").write_text(json.dumps(data.envs, indent=1, sort_keys=True) + "\n")
            meta = metadata(data, str(store_path), note)
            meta["solutions"] = _write_solutions(store, data, tmp)
            (tmp / METADATA_FILE).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
            for f in tmp.rglob("*"):  # mkstemp / mkdtemp make private files; an export is for reading
                os.chmod(f, 0o755 if f.is_dir() else 0o644)
            os.chmod(tmp, 0o755)
            old = None
            if out.exists():
                old = out.parent / f".{out.name}.old-{os.getpid()}"
                os.replace(out, old)
            os.replace(tmp, out)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return meta


# ---- reading an export ---------------------------------------------------------------------------


def read_export(folder: str | os.PathLike) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(metadata, runs as row dicts) of an export folder; InputError naming the file and the
    reason when it is not a readable export of a version this code knows."""
    f = Path(folder)
    if not f.is_dir():
        raise InputError("no such export folder", file=str(f))
    mpath = f / METADATA_FILE
    try:
        meta = json.loads(mpath.read_text())
    except FileNotFoundError:
        raise InputError("not an edgebench results export (no metadata.json)", file=str(f)) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"unreadable: {exc}", file=str(mpath)) from None
    if not isinstance(meta, dict) or not isinstance(meta.get("export_version"), int):
        raise InputError("no integer export_version", file=str(mpath), field="export_version")
    if meta["export_version"] > EXPORT_VERSION:
        raise InputError(f"export version {meta['export_version']} is newer than this edgebench reads "
                         f"({EXPORT_VERSION})", file=str(mpath), field="export_version")
    rpath = f / RUN_FILE
    try:
        import pyarrow.parquet as pq

        table = pq.read_table(rpath)
    except FileNotFoundError:
        raise InputError("missing", file=str(rpath)) from None
    except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError for a damaged file
        raise InputError(f"unreadable Parquet file: {str(exc).splitlines()[0][:200]}", file=str(rpath)) from None
    missing = [c for c in READ_COLUMNS if c not in table.column_names]
    if missing:
        raise InputError(f"missing columns {', '.join(missing)}", file=str(rpath))
    rows = table.select(list(READ_COLUMNS)).to_pylist()
    for c in (c for c in NUMERIC_COLUMNS if c in READ_COLUMNS):
        bad = next((r[c] for r in rows if r[c] is not None
                    and (isinstance(r[c], bool) or not isinstance(r[c], (int, float)))), None)
        if bad is not None:
            raise InputError(f"a number column holds {type(bad).__name__}", file=str(rpath), field=c)
    for c in TEXT_KEYS:
        bad = next((r[c] for r in rows if not isinstance(r[c], str)), None)
        if bad is not None or any(r[c] is None for r in rows):
            raise InputError("a text column holds something else or nothing", file=str(rpath), field=c)
    return meta, rows
