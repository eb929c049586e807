"""``edgebench report``: the report's numbers, computed once from a results store.

Per family, variant (placement single/multi-task, the mapping objective, ...) and solver
configuration (label): runs, feasible share, mean and median gap to the best known objective,
mean gap to the best proven bound, share solved to proven optimality, shifted geometric mean
of the runtime (shift 10 s), wins; a leaderboard per instance set (mean and geometric-mean gap
to the best known, share closed, share feasible, runtime, the mean over seeds with a 95 %
confidence interval); per instance its best known value, bound and status; the data behind
the plots (performance profiles, gap against size, anytime curves, Pareto fronts). Written as
CSV / Parquet tables; :mod:`.plots` draws them, :mod:`.layout` and :mod:`.page` lay out ``report.md``
and ``report.html``, and :mod:`.report_folder` writes the whole folder. Conventions: ``docs/runner.md``.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from edgebench.errors import InputError
from edgebench.instances.io import atomic_target, write_text_atomic
from edgebench.text import printable

#: shifted geometric mean shift, seconds
SHIFT = 10.0
#: runtimes below this floor count as the floor in the runtime performance profile
RUNTIME_FLOOR = 1e-3
#: at most this many traces per (family, label) enter an anytime curve
MAX_TRACES = 1000
#: at most this many mapping instances get a Pareto plot
MAX_PARETO_PLOTS = 6
#: confidence level of the leaderboard's interval over seeds
CONFIDENCE = 0.95
FAMILIES = ("placement", "mapping", "offloading")
FAILED = ("error", "killed", "memory", "crash")

EXPORT_COLUMNS = ("key", "sweep", "suite", "family", "instance_set", "instance_id", "instance_hash", "size", "solver",
                  "label", "kind", "params", "params_hash", "seed", "time_limit", "memory_limit_mb", "status",
                  "feasible", "proven", "units_ok", "primary_name", "sense", "primary_value", "gap", "bound_gap",
                  "best_known", "best_bound", "objectives", "violations", "reported_objective", "bound", "runtime",
                  "solver_wall", "wall", "startup", "peak_mem_mb", "message", "env", "checkpoint", "started",
                  "finished")
_LOAD_COLUMNS = ("key", "sweep", "suite", "family", "instance_set", "instance_id", "instance_hash", "size", "solver",
                 "label", "kind", "params", "params_hash", "seed", "time_limit", "memory_limit_mb", "status",
                 "feasible", "proven", "units_ok", "primary_name", "sense", "primary_value", "objectives",
                 "violations", "reported_objective", "bound", "runtime", "solver_wall", "wall", "startup",
                 "peak_mem_mb", "message", "env", "checkpoint", "started", "finished", "trace", "pareto")


# ======================================================================================
# numbers
# ======================================================================================


def shifted_geomean(values: Iterable[float], shift: float = SHIFT) -> float | None:
    """exp(mean(log(t + shift))) - shift over the finite values (None when there are none)."""
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    if v.size == 0:
        return None
    return float(np.exp(np.mean(np.log(np.maximum(v, 0.0) + shift))) - shift)


def performance_profile(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dolan & Moré (2002): ``m`` [problems, solvers] of costs (lower is better; inf = failed).
    Returns (taus, rho [solvers, taus]) where rho[s, k] is the share of problems on which
    solver s is within a factor taus[k] of the best solver on that problem."""
    m = np.asarray(m, dtype=float)
    P, S = m.shape
    if S == 0 or P == 0:
        return np.array([1.0]), np.zeros((S, 1))
    best = np.min(m, axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(np.isfinite(m) & np.isfinite(best), m / np.where(best > 0, best, 1.0), np.inf)
    r = np.where(np.isfinite(m) & (best <= 0) & (m <= 0), 1.0, r)
    finite = r[np.isfinite(r)]
    taus = np.unique(np.concatenate([[1.0], finite])) if finite.size else np.array([1.0])
    rs = np.sort(r, axis=0)  # per solver, sorted ratios
    rho = np.vstack([np.searchsorted(rs[:, s], taus, side="right") / P for s in range(S)])
    return taus, rho


def factorize(col: np.ndarray | list) -> tuple[np.ndarray, list]:
    """Codes 0..k-1 in order of first appearance, and the k distinct values (a dict, not a
    sort: fast for text columns)."""
    index: dict[Any, int] = {}
    codes = np.fromiter((index.setdefault(x, len(index)) for x in col), dtype=np.int64, count=len(col))
    return codes, list(index)


def group_median(gid: np.ndarray, values: np.ndarray, ngroups: int) -> np.ndarray:
    """Median of ``values`` per group, NaNs left out (NaN for a group without values)."""
    keep = ~np.isnan(values)
    g, v = gid[keep], values[keep]
    out = np.full(ngroups, np.nan)
    if g.size == 0:
        return out
    order = np.lexsort((v, g))
    g, v = g[order], v[order]
    counts = np.bincount(g, minlength=ngroups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    has = counts > 0
    lo = starts[has] + (counts[has] - 1) // 2
    hi = starts[has] + counts[has] // 2
    with np.errstate(invalid="ignore"):
        out[has] = np.where(v[lo] == v[hi], v[lo], (v[lo] + v[hi]) / 2)
    return out


# ======================================================================================
# data
# ======================================================================================

_TEXT = ("key", "suite", "family", "instance_set", "instance_id", "instance_hash", "solver", "label", "kind", "params",
         "params_hash", "status", "primary_name", "sense", "objectives", "message", "env", "checkpoint", "started",
         "finished", "trace", "pareto")
_INT = ("sweep", "size", "seed", "feasible", "proven", "units_ok", "violations")


class Runs:
    """The runs of a store as columns: text columns are object arrays ("" for NULL, except
    trace / pareto / objectives / message which keep None), numbers are float arrays with NaN
    for NULL. Derived: ``ok`` (referee-feasible with a value), ``gap``, ``bound_gap``,
    ``best_known``, ``best_bound`` (NaN where undefined)."""

    def __init__(self, columns: dict[str, Any]) -> None:
        self.n = len(next(iter(columns.values()))) if columns else 0
        self.c: dict[str, np.ndarray] = {}
        for name, values in columns.items():
            col = values if isinstance(values, np.ndarray) and values.dtype == object else _objects(values)
            if name in _TEXT:
                col = col.copy()
                if name not in ("trace", "pareto", "objectives", "message"):
                    col[col == None] = ""  # noqa: E711 - elementwise
                self.c[name] = col
            else:
                null = col == None  # noqa: E711 - elementwise
                self.c[name] = (np.where(null, np.nan, col) if null.any() else col).astype(float)

    def __len__(self) -> int:
        return self.n

    def codes(self, name: str) -> tuple[np.ndarray, list]:
        """:func:`factorize` of a column, computed once."""
        cache = self.__dict__.setdefault("_codes", {})
        if name not in cache:
            cache[name] = factorize(self.c[name])
        return cache[name]

    def groups(self, *names: str) -> tuple[np.ndarray, list[tuple]]:
        """Group rows by the named columns: (group id per row, key tuple of each group)."""
        if self.n == 0:
            return np.zeros(0, dtype=np.int64), []
        combined = np.zeros(self.n, dtype=np.int64)
        for name in names:
            codes, uniq = self.codes(name)
            combined = combined * len(uniq) + codes
        _, first, gid = np.unique(combined, return_index=True, return_inverse=True)
        return gid.reshape(self.n), [tuple(self.c[nm][i] for nm in names) for i in first]

    def __getitem__(self, name: str) -> np.ndarray:
        return self.c[name]

    def row(self, i: int) -> dict[str, Any]:
        return {k: _py(v[i]) for k, v in self.c.items()}

    def enrich(self, best: dict[str, dict[str, Any]]) -> None:
        """Gaps to the best known objective and bound (see :mod:`.bestknown`)."""
        n = self.n
        hashes = self.c["instance_hash"]
        obj = np.full(n, np.nan)
        bnd = np.full(n, np.nan)
        cache = {h: (np.nan if b.get("objective") is None else b["objective"],
                     np.nan if b.get("bound") is None else b["bound"]) for h, b in best.items()}
        for i, h in enumerate(hashes):
            t = cache.get(h)
            if t is not None:
                obj[i], bnd[i] = t
        v = self.c["primary_value"]
        self.c["ok"] = (self.c["feasible"] == 1) & np.isfinite(v)
        ok = self.c["ok"]
        is_min = self.c["sense"] != "max"
        self.c["best_known"], self.c["best_bound"] = obj, bnd
        self.c["gap"] = _gap_array(v, obj, is_min, ok)
        bg = _gap_array(v, bnd, is_min, ok)
        self.c["bound_gap"] = np.maximum(bg, 0.0)


def _gap_array(v: np.ndarray, ref: np.ndarray, is_min: np.ndarray, mask: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        den = np.where(np.abs(ref) >= 1e-9, np.abs(ref), 1.0)
        g = np.where(is_min, v - ref, ref - v) / den
    g = np.where(mask & np.isfinite(ref), g, np.nan)
    g[np.abs(g) < 1e-9] = 0.0
    return np.where(g < 0, 0.0, g)  # a manifest value this store does not reach, or rounding


def _objects(values: Any) -> np.ndarray:
    arr = np.empty(len(values), dtype=object)
    arr[:] = list(values)
    return arr


def _py(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


@dataclass
class Data:
    runs: Runs
    best: dict[str, dict[str, Any]]
    envs: dict[str, dict[str, Any]] = field(default_factory=dict)
    sweeps: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
    #: instance hash -> {"file", "solution", "variant"} for instances found in a set manifest
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: instance hash -> features (edgebench.features), for the footprints
    features: dict[str, dict[str, float]] = field(default_factory=dict)


#: columns holding JSON text
_JSON = ("params", "objectives", "trace", "pareto")


def check_cells(store) -> None:
    """Every cell of the runs table has its column's type — text (valid JSON where the
    column holds JSON) or a number — else one InputError naming the store, the column and
    the run (issue 28: a wrong-typed cell was a ValueError traceback in ``report``)."""
    conn = store.conn
    cols = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    for name in _LOAD_COLUMNS:
        if name not in cols:
            continue
        want = ("'text'",) if name in _TEXT else ("'integer'", "'real'")
        cond = f"typeof({name}) NOT IN ('null', {', '.join(want)})"
        if name in _JSON:
            cond += f" OR (typeof({name}) = 'text' AND NOT json_valid({name}))"
        bad = conn.execute(f"SELECT rowid, typeof({name}) FROM runs WHERE {cond} LIMIT 1").fetchone()
        if bad is not None:
            what = "JSON text" if name in _JSON else "text" if name in _TEXT else "a number"
            raise InputError(f"run at row {bad[0]}: column {name!r} holds {bad[1]} where {what} belongs "
                             "(the store was changed outside edgebench)", file=str(store.path), field=f"runs.{name}")


def check_store(store) -> None:
    """:func:`check_cells`, and the environment and sweep records (JSON where JSON belongs):
    one InputError naming the store and the table's field for what edgebench did not write
    (issue 44: tracebacks in report, leaderboard and bestknown)."""
    check_cells(store)
    store.envs()
    store.sweeps()


def load(store, keys: Iterable[str] | None = None) -> Data:
    """Read a store's runs (columns; ``keys`` restricts them) with gaps, and its tables.
    Anytime traces are read for at most MAX_TRACES runs per (family, label)."""
    check_store(store)
    names = [c for c in _LOAD_COLUMNS if c != "trace"]
    cur = store.conn.execute(f"SELECT {store.select_list(names)}, rowid, trace IS NOT NULL FROM runs ORDER BY rowid")
    cur.row_factory = None
    rows = cur.fetchall()
    if keys is not None:
        ks = set(keys)
        rows = [r for r in rows if r[0] in ks]
    table = np.array(rows, dtype=object).reshape(len(rows), len(names) + 2)
    rowids = table[:, -2].tolist()
    has_trace = table[:, -1].astype(bool)
    runs = Runs({c: table[:, j] for j, c in enumerate(names)})
    trace = np.empty(len(runs), dtype=object)
    if has_trace.any():
        gid, _ = runs.groups("family", "label")
        picked: list[int] = []
        taken: Counter = Counter()
        for i in np.flatnonzero(has_trace):
            if taken[gid[i]] < MAX_TRACES:
                taken[gid[i]] += 1
                picked.append(int(i))
        where = {rowids[i]: i for i in picked}
        ids = list(where)
        for k in range(0, len(ids), 900):
            chunk = ids[k:k + 900]
            q = store.conn.execute(f"SELECT rowid, trace FROM runs WHERE rowid IN ({', '.join('?' * len(chunk))})",
                                   chunk)
            q.row_factory = None
            for rid, text in q:
                trace[where[rid]] = text
    runs.c["trace"] = trace
    best = {r["instance_hash"]: r for r in store.bestknown()}
    runs.enrich(best)
    files = instance_files(runs)
    runs.c["variant"] = variants(runs, files)
    return Data(runs=runs, best=best, envs=store.envs(), sweeps=store.sweeps(), meta=store.meta(), files=files,
                features=store.features())


def instance_files(runs: Runs, data_dir: Path | None = None) -> dict[str, dict[str, Any]]:
    """instance hash -> {"file": instance file, "solution": best-known solution file or None,
    "variant": the instance's variant or None} for the store's instances that an instance set
    manifest (under ``data_dir``, default the embedded sets) lists. Unreadable manifests and
    instance files are left out (the report then shows no link and the objective as variant)."""
    from edgebench.instances import sets
    from edgebench.instances.io import read_json
    from edgebench.instances.manifest import read_manifest_file

    root = Path(data_dir) if data_dir is not None else sets.DATA_DIR
    wanted = set(runs["instance_hash"].tolist()) if len(runs) else set()
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(set(runs["instance_set"].tolist()) if len(runs) else ()):
        folder = root / str(name)
        if not name or not (folder / "manifest.json").is_file():
            continue
        try:
            manifest = read_manifest_file(folder / "manifest.json")
            entries = [e for e in manifest.get("instances", []) if isinstance(e, dict) and e.get("hash") in wanted]
        except (InputError, AttributeError):
            continue
        for e in entries:
            f = folder / str(e.get("file") or "")
            if not f.is_file():
                continue
            sol = (e.get("best_known") or {}).get("solution") if isinstance(e.get("best_known"), dict) else None
            sol_path = folder / str(sol) if isinstance(sol, str) and sol else None
            try:
                variant = _variant_of(read_json(f))
            except InputError:
                variant = None
            out[e["hash"]] = {"file": f, "solution": sol_path if sol_path and sol_path.is_file() else None,
                              "variant": variant}
    return out


def _variant_of(doc: Any) -> str | None:
    """placement: ``single-task`` / ``multi-task``; mapping: the objective's weights when they
    are not the default equal weights; otherwise None (the primary objective names the
    variant)."""
    if not isinstance(doc, dict):
        return None
    fam = doc.get("family")
    body = doc.get(fam) if isinstance(fam, str) else None
    if not isinstance(body, dict):
        return None
    if fam == "placement" and body.get("variant") in ("single", "multi"):
        return f"{body['variant']}-task"
    if fam == "mapping" and isinstance(body.get("objective"), dict):
        w = body["objective"].get("weights")
        if isinstance(w, list) and len(w) > 1 and len({round(float(x), 9) for x in w}) > 1:
            return "weights " + "/".join(f"{float(x):.3g}" for x in w)
    return None


def variants(runs: Runs, files: dict[str, dict[str, Any]]) -> np.ndarray:
    """Per run: the variant its tables are kept apart by — ``<primary objective>`` plus the
    instance's variant where it has one (``total_completion_time, multi-task``)."""
    out = np.empty(len(runs), dtype=object)
    memo: dict[tuple[str, str], str] = {}
    for i, (h, name) in enumerate(zip(runs["instance_hash"], runs["primary_name"])):
        key = (h, name)
        if key not in memo:
            v = (files.get(h) or {}).get("variant")
            memo[key] = ", ".join(x for x in (name, v) if x) or "-"
        out[i] = memo[key]
    return out


@dataclass
class PerInstance:
    """Medians over seeds per (family, label, instance): value (feasible runs; NaN if none),
    runtime and gap (runs without a feasible solution count as inf)."""

    keys: list[tuple]
    value: np.ndarray
    runtime: np.ndarray
    gap: np.ndarray
    gid: np.ndarray


def per_instance(runs: Runs) -> PerInstance:
    gid, keys = runs.groups("family", "label", "instance_hash")
    ng = len(keys)
    ok = runs["ok"]
    t = np.where(ok, np.maximum(np.nan_to_num(runs["runtime"], nan=np.inf), RUNTIME_FLOOR), np.inf)
    g = np.where(ok & ~np.isnan(runs["gap"]), runs["gap"], np.inf)
    v = np.where(ok, runs["primary_value"], np.nan)
    return PerInstance(keys, group_median(gid, v, ng), group_median(gid, t, ng), group_median(gid, g, ng), gid)


def _family_rank(fam: str) -> int:
    return FAMILIES.index(fam) if fam in FAMILIES else len(FAMILIES)


def summarize(data: Data, pi: PerInstance | None = None) -> list[dict[str, Any]]:
    """One row per (family, variant, label): runs, instances, feasible, proven share, mean /
    median gap to the best known, mean gap to the best bound, shifted geometric mean runtime
    (shift 10 s), wins, failures, statuses."""
    from edgebench.runner.bestknown import close

    runs = data.runs
    if len(runs) == 0:
        return []
    pi = pi or per_instance(runs)
    # wins: per instance, the labels whose median feasible value is the best (ties: all)
    fi_gid, fi_keys = runs.groups("family", "instance_hash")
    first_of = np.unique(fi_gid, return_index=True)[1]
    sense = {fi_keys[g]: runs["sense"][i] for g, i in enumerate(first_of)}
    variant_of = {fi_keys[g][1]: runs["variant"][i] for g, i in enumerate(first_of)}
    by_inst: dict[tuple[str, str], list[tuple[str, float]]] = defaultdict(list)
    for (fam, label, h), v in zip(pi.keys, pi.value):
        if not math.isnan(v):
            by_inst[(fam, h)].append((label, float(v)))
    wins: Counter = Counter()
    for (fam, h), vals in by_inst.items():
        b = (max if sense[(fam, h)] == "max" else min)(v for _, v in vals)
        for label, v in vals:
            if close(v, b):
                wins[(fam, variant_of[h], label)] += 1
    gid, keys = runs.groups("family", "variant", "label")
    ng = len(keys)
    counts = np.bincount(gid, minlength=ng)
    ok = runs["ok"]
    feas = np.bincount(gid, weights=ok.astype(float), minlength=ng)
    proven = np.bincount(gid, weights=(runs["proven"] == 1).astype(float), minlength=ng)
    gfin = np.where(ok & np.isfinite(runs["gap"]), runs["gap"], np.nan)
    gcount = np.bincount(gid, weights=~np.isnan(gfin), minlength=ng)
    gsum = np.bincount(gid, weights=np.nan_to_num(gfin, nan=0.0), minlength=ng)
    gmed = group_median(gid, gfin, ng)
    bfin = np.where(ok & np.isfinite(runs["bound_gap"]), runs["bound_gap"], np.nan)
    bcount = np.bincount(gid, weights=~np.isnan(bfin), minlength=ng)
    bsum = np.bincount(gid, weights=np.nan_to_num(bfin, nan=0.0), minlength=ng)
    rt = runs["runtime"]
    rt_ok = np.isfinite(rt)
    logs = np.where(rt_ok, np.log(np.maximum(np.nan_to_num(rt, nan=0.0), 0.0) + SHIFT), 0.0)
    lsum = np.bincount(gid, weights=logs, minlength=ng)
    lcnt = np.bincount(gid, weights=rt_ok.astype(float), minlength=ng)
    n_inst = Counter((f, variant_of[h], lb) for f, lb, h in pi.keys)
    kind_of = {}
    solver_of = {}
    for i in np.unique(gid, return_index=True)[1]:
        kind_of[int(gid[i])] = runs["kind"][i]
        solver_of[int(gid[i])] = runs["solver"][i]
    statuses: dict[int, Counter] = defaultdict(Counter)
    scodes, snames = runs.codes("status")
    scount = np.bincount(gid * len(snames) + scodes, minlength=ng * len(snames)).reshape(ng, len(snames))
    for g, j in zip(*np.nonzero(scount)):
        statuses[int(g)][snames[j]] = int(scount[g, j])
    rows = []
    for g, (fam, variant, label) in enumerate(keys):
        st = statuses[g]
        rows.append({
            "family": fam, "variant": variant, "label": label, "solver": solver_of[g], "kind": kind_of[g],
            "runs": int(counts[g]), "instances": n_inst[(fam, variant, label)], "feasible": int(feas[g]),
            "feasible_share": feas[g] / counts[g], "proven": int(proven[g]), "proven_share": proven[g] / counts[g],
            "mean_gap": float(gsum[g] / gcount[g]) if gcount[g] else None,
            "median_gap": None if math.isnan(gmed[g]) else float(gmed[g]),
            "mean_bound_gap": float(bsum[g] / bcount[g]) if bcount[g] else None,
            "sgm_runtime": float(np.exp(lsum[g] / lcnt[g]) - SHIFT) if lcnt[g] else None,
            "wins": wins[(fam, variant, label)], "failed": sum(st[s] for s in FAILED),
            "statuses": dict(sorted(st.items())),
        })
    rows.sort(key=lambda r: (_family_rank(r["family"]), r["variant"], r["label"]))
    return rows


def leaderboard(runs: Runs, instance_set: str | None = None) -> list[dict[str, Any]]:
    """One row per (family, instance set, variant, solver configuration), best first within
    a set: runs, instances, seeds; ``feasible_share`` (referee-feasible runs / runs);
    ``closed_share`` (runs proven optimal by this configuration / runs); over feasible runs
    with a best known value: ``mean_gap`` and ``geo_gap`` (geometric mean of 1 + gap, minus 1)
    to the best known and ``mean_bound_gap`` to the best bound; ``sgm_runtime`` (shifted
    geometric mean, all runs); the per-seed mean gaps aggregated as ``seed_mean`` with a
    ``CONFIDENCE`` Student-t interval ``ci_low`` .. ``ci_high`` (scipy; None with one seed).
    Ranked by feasible share (higher first), then mean gap, then runtime."""
    from scipy.special import stdtrit

    if len(runs) == 0:
        return []
    sel = np.arange(len(runs)) if instance_set is None else np.flatnonzero(runs["instance_set"] == instance_set)
    gid, keys = runs.groups("family", "instance_set", "variant", "label")
    ok = runs["ok"]
    gap, bgap, rt = runs["gap"], runs["bound_gap"], runs["runtime"]
    out = []
    order = sel[np.argsort(gid[sel], kind="stable")]
    bounds = np.flatnonzero(np.diff(gid[order])) + 1
    for idx in np.split(order, bounds) if order.size else []:
        fam, iset, variant, label = keys[gid[idx[0]]]
        feas = ok[idx]
        g = gap[idx][feas & np.isfinite(gap[idx])]
        bg = bgap[idx][feas & np.isfinite(bgap[idx])]
        per_seed = []
        seeds = runs["seed"][idx]
        for sd in np.unique(seeds[np.isfinite(seeds)]):
            m = (seeds == sd) & feas & np.isfinite(gap[idx])
            if m.any():
                per_seed.append(float(np.mean(gap[idx][m])))
        lo = hi = None
        seed_mean = float(np.mean(per_seed)) if per_seed else None
        if len(per_seed) >= 2:
            k = len(per_seed)
            # Student-t: scipy.special.stdtrit is the t quantile of scipy.stats.t.ppf, without
            # the seconds that importing scipy.stats takes
            half = float(stdtrit(k - 1, 0.5 + CONFIDENCE / 2) * np.std(per_seed, ddof=1) / math.sqrt(k))
            lo, hi = seed_mean - half, seed_mean + half
        out.append({
            "family": fam, "instance_set": iset, "variant": variant, "label": label, "solver": runs["solver"][idx[0]],
            "kind": runs["kind"][idx[0]], "runs": int(idx.size),
            "instances": len(set(runs["instance_hash"][idx].tolist())), "seeds": len(per_seed),
            "feasible_share": float(feas.mean()), "closed_share": float((runs["proven"][idx] == 1).mean()),
            "mean_gap": float(g.mean()) if g.size else None,
            "geo_gap": float(np.expm1(np.mean(np.log1p(g)))) if g.size else None,
            "mean_bound_gap": float(bg.mean()) if bg.size else None,
            "sgm_runtime": shifted_geomean(rt[idx].tolist()),
            "seed_mean": seed_mean, "ci_low": lo, "ci_high": hi,
        })
    inf = math.inf
    out.sort(key=lambda r: (_family_rank(r["family"]), r["instance_set"], r["variant"], -r["feasible_share"],
                            inf if r["mean_gap"] is None else r["mean_gap"],
                            inf if r["sgm_runtime"] is None else r["sgm_runtime"], r["label"]))
    rank, prev = 0, None
    for r in out:
        key = (r["family"], r["instance_set"], r["variant"])
        rank = rank + 1 if key == prev else 1
        prev = key
        r["rank"] = rank
    return out


def instance_rows(data: Data) -> list[dict[str, Any]]:
    """Per instance of the store: family, set, variant, id, size, sense, best known objective
    and bound with their solvers, ``status`` (closed: bound and best known agree; open: both
    known, gap between them in ``open_gap``; conflict; no bound), instance and best-known
    solution files (when a set manifest lists them)."""
    from edgebench.runner.bestknown import gap as rel_gap

    runs = data.runs
    variant_of = dict(zip(runs["instance_hash"].tolist(), runs["variant"].tolist())) if len(runs) else {}
    rows = []
    for h, b in data.best.items():
        if h not in variant_of:
            continue
        o, bd = b.get("objective"), b.get("bound")
        if b.get("conflict"):
            status = "conflict"
        elif b.get("optimal"):
            status = "closed"
        elif o is None:
            status = "no solution"
        elif bd is None:
            status = "open (no bound)"
        else:
            status = "open"
        f = data.files.get(h) or {}
        rows.append({
            "family": b.get("family") or "", "instance_set": b.get("instance_set") or "", "variant": variant_of[h],
            "instance_id": b.get("instance_id") or "", "instance_hash": h, "size": b.get("size"),
            "sense": b.get("sense") or "", "objective": o, "obj_solver": b.get("obj_solver") or "", "bound": bd,
            "bound_solver": b.get("bound_solver") or "", "status": status,
            "open_gap": rel_gap(o, bd, b.get("sense") or "min") if status == "open" else None,
            "conflict": b.get("conflict") or "", "file": f.get("file"), "solution": f.get("solution"),
        })
    rows.sort(key=lambda r: (_family_rank(r["family"]), r["instance_set"], r["instance_id"]))
    return rows


def kind_labels(rows: Iterable[dict[str, Any]]) -> dict[str, str]:
    """label -> the kind as shown: ``learned (bc, ppo)`` for a learned solver whose registry
    entry lists ``checkpoints`` (their training algorithms), else the stored kind."""
    out = {}
    info: dict[str, Any] = {}
    for r in rows:
        kind = r.get("kind") or ""
        if kind == "learned":
            solver = r.get("solver") or ""
            if solver not in info:
                info[solver] = _checkpoints(solver)
            algos = sorted({str(c["algorithm"]) for c in info[solver] if isinstance(c, dict) and c.get("algorithm")})
            if algos:
                kind = f"learned ({', '.join(algos)})"
        out[r["label"]] = kind
    return out


def _checkpoints(solver: str) -> list:
    from edgebench import registry

    try:
        ck = registry.get(solver).as_dict().get("checkpoints")
    except KeyError:  # a solver of a plugin that is not loaded here
        return []
    return ck if isinstance(ck, list) else []


# ======================================================================================
# plot data
# ======================================================================================


def profile_matrix(pi: PerInstance, fam: str, hashes: list[str], labels: list[str], metric: str) -> np.ndarray:
    """[instances, labels] of the per-instance median ``runtime`` or 1 + ``gap`` (inf: none)."""
    arr = pi.runtime if metric == "runtime" else 1.0 + pi.gap
    index = {k: i for i, k in enumerate(pi.keys)}
    m = np.full((len(hashes), len(labels)), np.inf)
    for i, h in enumerate(hashes):
        for j, lb in enumerate(labels):
            k = index.get((fam, lb, h))
            if k is not None and not math.isnan(arr[k]):
                m[i, j] = arr[k]
    return m


Series = dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]


def gap_by_size(runs: Runs, idx: np.ndarray) -> Series:
    """label -> (sizes, median, 25th and 75th percentile of the gap to the best known) over
    the feasible runs (instances and seeds) of each size."""
    sel = idx[runs["ok"][idx] & np.isfinite(runs["gap"][idx]) & np.isfinite(runs["size"][idx])]
    out: Series = {}
    lab, size, gap = runs["label"][sel], runs["size"][sel], runs["gap"][sel]
    order = np.lexsort((gap, size, lab))  # sorted by label, size, gap: quantiles by position
    lab, size, gap = lab[order], size[order], gap[order]
    cut = np.flatnonzero((lab[1:] != lab[:-1]) | (size[1:] != size[:-1])) + 1
    for g in np.split(np.arange(lab.size), cut) if lab.size else []:
        v = gap[g]
        q = [float(np.interp(f * (v.size - 1), np.arange(v.size), v)) for f in (0.5, 0.25, 0.75)]
        xs, med, q1, q3 = out.setdefault(lab[g[0]], ([], [], [], []))
        xs.append(float(size[g[0]]))
        med.append(q[0])
        q1.append(q[1])
        q3.append(q[2])
    return {k: tuple(np.asarray(a) for a in v) for k, v in out.items()}


def anytime_curves(runs: Runs, idx: np.ndarray) -> Series:
    """label -> (time grid, median, 25th and 75th percentile of the incumbent's gap to the
    best known over the traced runs; inf before a run's first incumbent)."""
    trace = runs["trace"]
    sel = idx[np.array([trace[i] is not None for i in idx], dtype=bool)] if idx.size else idx
    sel = sel[np.isfinite(runs["best_known"][sel])]
    out: Series = {}
    labels = runs["label"]
    best_known, sense_col, time_limit, runtime = runs["best_known"], runs["sense"], runs["time_limit"], runs["runtime"]
    for label in sorted(set(labels[sel])):
        li = sel[labels[sel] == label][:MAX_TRACES]
        traces = []
        tmin, tmax = math.inf, 0.0
        for i in li:
            try:
                pts = np.asarray(json.loads(trace[i]), dtype=float)
            except (ValueError, TypeError):
                continue
            if pts.ndim != 2 or pts.shape[0] == 0 or pts.shape[1] < 2:
                continue
            if pts.shape[0] > 1 and (np.diff(pts[:, 0]) < 0).any():
                pts = pts[np.argsort(pts[:, 0], kind="stable")]
            traces.append((pts, float(best_known[i]), sense_col[i]))
            tmin = min(tmin, max(float(pts[0, 0]), 1e-4))
            tl, rt = float(time_limit[i]), float(runtime[i])
            tmax = max(tmax, float(pts[-1, 0]), tl if tl == tl else 0.0, rt if rt == rt else 0.0)
        if not traces:
            continue
        tmax = max(tmax, tmin * 10)
        grid = np.logspace(math.log10(tmin), math.log10(tmax), 60)
        gaps = np.full((len(traces), grid.size), np.inf)
        for k, (pts, best, sense) in enumerate(traces):
            # best-so-far in the improving direction, then a step function on the grid
            vals = np.maximum.accumulate(pts[:, 1]) if sense == "max" else np.minimum.accumulate(pts[:, 1])
            den = abs(best) if abs(best) >= 1e-9 else 1.0
            g = (best - vals) / den if sense == "max" else (vals - best) / den
            g[np.abs(g) < 1e-9] = 0.0
            pos = np.searchsorted(pts[:, 0], grid, side="right") - 1
            ok = pos >= 0
            gaps[k, ok] = np.maximum(g[pos[ok]], 0.0)
        q = np.percentile(gaps, [50, 25, 75], axis=0, method="inverted_cdf")  # no inf - inf
        out[label] = (grid, q[0], q[1], q[2])
    return {k: v for k, v in out.items() if np.isfinite(v[1]).any()}


def _exact_front(runs: Runs, i: int) -> bool:
    """A front is exact when an exact solver recorded it and finished inside its time limit
    (each point then solved its epsilon-problem to optimality); an imported front never is,
    whatever kind it was imported as (its points are re-scored, its exactness unprovable)."""
    rt, tl = runs["runtime"][i], runs["time_limit"][i]
    return bool(runs["kind"][i] == "exact" and runs["suite"][i] != "import"
                and runs["status"][i] in ("optimal", "feasible")
                and not (math.isfinite(tl) and rt >= tl))


def pareto_panels(runs: Runs, items: list[tuple[str, np.ndarray]]) -> list:
    """One :class:`.plots.ParetoPanel` per (instance id, run indices) with a recorded front;
    a front is *exact* as :func:`_exact_front` says."""
    from edgebench.runner.plots import ParetoPanel

    panels = []
    for iid, idx in items:
        fronts, points = [], []
        for i in idx:
            label = runs["label"][i]
            if runs["pareto"][i]:
                pts = sorted((float(p["L"]), float(p["D_BW"])) for p in json.loads(runs["pareto"][i])
                             if isinstance(p, dict) and "L" in p and "D_BW" in p)
                if pts:
                    fronts.append((label, pts, _exact_front(runs, i)))
            if runs["ok"][i] and runs["objectives"][i]:
                ob = json.loads(runs["objectives"][i])
                if ob.get("L") is not None and ob.get("D_BW") is not None:
                    points.append((label, float(ob["L"]), float(ob["D_BW"])))
        if fronts:
            panels.append(ParetoPanel(str(iid), fronts, points))
    return panels[:MAX_PARETO_PLOTS]


# ======================================================================================
# formatting
# ======================================================================================


def fmt_pct(x: float | None) -> str:
    if x is None:
        return "–"
    if not math.isfinite(x):
        return "inf"
    return f"{100 * x:.2f}%"


def fmt_num(x: Any, digits: int = 4) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        if not math.isfinite(x):
            return "inf" if x > 0 else "-inf"
        if x == int(x) and abs(x) < 1e12:
            return str(int(x))
        return f"{x:.{digits}g}"
    return str(x)


#: column headers that say which reference a gap is measured against
GAP_BEST = "gap to best known"
GAP_BOUND = "gap to bound"


def summary_table(rows: list[dict[str, Any]], kinds: dict[str, str] | None = None
                  ) -> tuple[list[str], list[list[str]]]:
    """Rows of :func:`summarize` as text: the gap to the best known (mean, median) and to the
    best proven bound (mean) in separate, labelled columns."""
    head = ["family", "variant", "solver", "kind", "runs", "feasible", "proven optimal", f"{GAP_BEST} (mean)",
            f"{GAP_BEST} (median)", f"{GAP_BOUND} (mean)", "SGM time (s)", "wins", "failed"]
    body = []
    for r in rows:
        failed = ", ".join(f"{k} {v}" for k, v in r["statuses"].items() if k in FAILED) or "0"
        body.append([r["family"], r["variant"], r["label"], (kinds or {}).get(r["label"], r["kind"] or ""),
                     str(r["runs"]), f"{r['feasible']}", f"{100 * r['proven_share']:.0f}%", fmt_pct(r["mean_gap"]),
                     fmt_pct(r["median_gap"]), fmt_pct(r.get("mean_bound_gap")), fmt_num(r["sgm_runtime"], 3),
                     str(r["wins"]), failed])
    return head, body


def leaderboard_table(rows: list[dict[str, Any]], kinds: dict[str, str] | None = None
                      ) -> tuple[list[str], list[list[str]]]:
    """Rows of :func:`leaderboard` (one set) as text."""
    pct = int(round(100 * CONFIDENCE))
    head = ["rank", "solver", "kind", "runs", "seeds", "feasible", "closed", f"{GAP_BEST} (mean)",
            f"{GAP_BEST} (geo. mean)", f"{GAP_BOUND} (mean)", f"per-seed mean gap [{pct}% CI]", "SGM time (s)"]
    body = []
    for r in rows:
        ci = "" if r["ci_low"] is None else f" [{fmt_pct(r['ci_low'])}, {fmt_pct(r['ci_high'])}]"
        body.append([str(r["rank"]), r["label"], (kinds or {}).get(r["label"], r["kind"] or ""), str(r["runs"]),
                     str(r["seeds"]), f"{100 * r['feasible_share']:.0f}%", f"{100 * r['closed_share']:.0f}%",
                     fmt_pct(r["mean_gap"]), fmt_pct(r["geo_gap"]), fmt_pct(r["mean_bound_gap"]),
                     fmt_pct(r["seed_mean"]) + ci, fmt_num(r["sgm_runtime"], 3)])
    return head, body


def text_table(head: list[str], body: list[list[str]]) -> str:
    head, body = [printable(h) for h in head], [[printable(c) for c in row] for row in body]  # labels are data
    widths = [max(len(x) for x in col) for col in zip(head, *body)] if body else [len(h) for h in head]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    for row in body:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)))
    return "\n".join(lines)


# ======================================================================================
# exports
# ======================================================================================

_FLOAT_EXPORTS = ("time_limit", "memory_limit_mb", "primary_value", "gap", "bound_gap", "best_known", "best_bound",
                  "reported_objective", "bound", "runtime", "solver_wall", "wall", "startup", "peak_mem_mb")


def _arrow_table(columns: dict[str, np.ndarray | list]):
    import pyarrow as pa

    arrays = {}
    for name, values in columns.items():
        v = np.asarray(values) if not isinstance(values, np.ndarray) else values
        if v.dtype.kind == "f":
            arrays[name] = pa.array(np.where(np.isfinite(v), v, 0.0), mask=~np.isfinite(v), type=pa.float64())
            if name in _INT:
                arrays[name] = arrays[name].cast(pa.int64())
        elif v.dtype.kind in "iub":
            arrays[name] = pa.array(v.astype(np.int64))
        else:
            arrays[name] = pa.array(v, type=pa.string())
    return pa.table(arrays)


def write_tables(out: Path, name: str, columns: dict[str, Any]) -> tuple[Path, Path | None]:
    """``<name>.csv`` and ``<name>.parquet`` (pyarrow; without it, CSV only) of the columns."""
    csv_path, pq_path = out / f"{name}.csv", out / f"{name}.parquet"
    try:
        import pyarrow.csv as pcsv
        import pyarrow.parquet as pq
    except ImportError:
        n = len(next(iter(columns.values()))) if columns else 0
        rows = ([csv_cell(_py(columns[c][i])) for c in columns] for i in range(n))
        return _write_csv(csv_path, list(columns), rows), None
    table = _arrow_table(columns)
    with atomic_target(csv_path) as tmp:
        pcsv.write_csv(_arrow_table({k: _csv_safe(v) for k, v in columns.items()}), str(tmp))
    with atomic_target(pq_path) as tmp:
        pq.write_table(table, str(tmp))
    return csv_path, pq_path


#: a text cell starting with one of these is read as a formula by spreadsheets
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(v: Any) -> Any:
    """A text value made inert for spreadsheets (OWASP: a leading ``'`` before a formula
    character); numbers and other text unchanged."""
    return "'" + v if isinstance(v, str) and v.startswith(_FORMULA_START) else v


def _csv_safe(values: Any) -> Any:
    v = np.asarray(values) if not isinstance(values, np.ndarray) else values
    if v.dtype.kind != "O":
        return v
    return _objects([csv_cell(x) for x in v])


def _write_csv(path: Path, head: list[str], rows: Iterable[Iterable[Any]]) -> Path:
    with atomic_target(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(head)
        for row in rows:
            w.writerow(["" if x is None else x for x in row])
    return path




def write_text(path: Path, text: str) -> Path:
    """Write a report file atomically (a temporary file, then a rename)."""
    return write_text_atomic(path, text)


def safe_name(text: str) -> str:
    """``text`` as a file name: runs of other characters than letters, digits, ``._-`` become ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "x"
