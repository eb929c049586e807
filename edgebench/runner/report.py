"""``edgebench report``: tables, plots and exports from a results store.

Per family and solver configuration (label): runs, feasible share, mean and median gap to
the best known objective, share solved to proven optimality, shifted geometric mean of the
runtime (shift 10 s), wins; Dolan–Moré performance profiles on runtime and on gap; gap
against instance size; anytime curves (runs whose solutions carry a trace); the mapping
Pareto fronts. Written as ``report.md`` and ``report.html`` with PNG plots (matplotlib, Agg,
800x500 px at 100 dpi) and CSV / Parquet exports. Conventions: ``docs/runner.md``.
"""

from __future__ import annotations

import csv
import html
import json
import math
import os
import re
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

#: shifted geometric mean shift, seconds
SHIFT = 10.0
#: runtimes below this floor count as the floor in the runtime performance profile
RUNTIME_FLOOR = 1e-3
#: plot size: 800 x 500 pixels
FIGSIZE = (8.0, 5.0)
DPI = 100
#: at most this many traces per (family, label) enter an anytime curve
MAX_TRACES = 1000
#: at most this many mapping instances get a Pareto plot
MAX_PARETO_PLOTS = 6
#: at most this many points per label in a gap-vs-size scatter
MAX_SCATTER = 1000
FAMILIES = ("placement", "mapping", "offloading")
FAILED = ("error", "killed", "memory", "crash")

EXPORT_COLUMNS = ("key", "sweep", "suite", "family", "instance_set", "instance_id", "instance_hash", "size", "solver",
                  "label", "kind", "params", "params_hash", "seed", "time_limit", "memory_limit_mb", "status",
                  "feasible", "proven", "units_ok", "primary_name", "sense", "primary_value", "gap", "bound_gap",
                  "best_known", "best_bound", "objectives", "violations", "reported_objective", "bound", "runtime",
                  "solver_wall", "wall", "peak_mem_mb", "message", "env", "started", "finished")
_LOAD_COLUMNS = ("key", "sweep", "suite", "family", "instance_set", "instance_id", "instance_hash", "size", "solver",
                 "label", "kind", "params", "params_hash", "seed", "time_limit", "memory_limit_mb", "status",
                 "feasible", "proven", "units_ok", "primary_name", "sense", "primary_value", "objectives",
                 "violations", "reported_objective", "bound", "runtime", "solver_wall", "wall", "peak_mem_mb",
                 "message", "env", "started", "finished", "trace", "pareto")


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
         "params_hash", "status", "primary_name", "sense", "objectives", "message", "env", "started", "finished",
         "trace", "pareto")
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
        opt = np.zeros(n, dtype=bool)
        cache = {h: (np.nan if b.get("objective") is None else b["objective"],
                     np.nan if b.get("bound") is None else b["bound"], bool(b.get("optimal")))
                 for h, b in best.items()}
        for i, h in enumerate(hashes):
            t = cache.get(h)
            if t is not None:
                obj[i], bnd[i], opt[i] = t
        v = self.c["primary_value"]
        self.c["ok"] = (self.c["feasible"] == 1) & np.isfinite(v)
        ok = self.c["ok"]
        is_min = self.c["sense"] != "max"
        self.c["best_known"], self.c["best_bound"] = obj, bnd
        self.c["gap"] = _gap_array(v, obj, is_min, ok)
        bg = _gap_array(v, bnd, is_min, ok & ~opt)
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


def load(store, keys: Iterable[str] | None = None) -> Data:
    """Read a store's runs (columns; ``keys`` restricts them) with gaps, and its tables.
    Anytime traces are read for at most MAX_TRACES runs per (family, label)."""
    names = [c for c in _LOAD_COLUMNS if c != "trace"]
    cur = store.conn.execute(f"SELECT {', '.join(names)}, rowid, trace IS NOT NULL FROM runs ORDER BY rowid")
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
    return Data(runs=runs, best=best, envs=store.envs(), sweeps=store.sweeps(), meta=store.meta())


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


def summarize(data: Data, pi: PerInstance | None = None) -> list[dict[str, Any]]:
    """One row per (family, label): runs, instances, feasible, proven share, mean / median
    gap, shifted geometric mean runtime (shift 10 s), wins, failures, statuses."""
    from edgebench.runner.bestknown import close

    runs = data.runs
    if len(runs) == 0:
        return []
    pi = pi or per_instance(runs)
    # wins: per instance, the labels whose median feasible value is the best (ties: all)
    fi_gid, fi_keys = runs.groups("family", "instance_hash")
    first_of = np.unique(fi_gid, return_index=True)[1]
    sense = {fi_keys[g]: runs["sense"][i] for g, i in enumerate(first_of)}
    by_inst: dict[tuple[str, str], list[tuple[str, float]]] = defaultdict(list)
    for (fam, label, h), v in zip(pi.keys, pi.value):
        if not math.isnan(v):
            by_inst[(fam, h)].append((label, float(v)))
    wins: Counter = Counter()
    for (fam, h), vals in by_inst.items():
        b = (max if sense[(fam, h)] == "max" else min)(v for _, v in vals)
        for label, v in vals:
            if close(v, b):
                wins[(fam, label)] += 1
    gid, keys = runs.groups("family", "label")
    ng = len(keys)
    counts = np.bincount(gid, minlength=ng)
    ok = runs["ok"]
    feas = np.bincount(gid, weights=ok.astype(float), minlength=ng)
    proven = np.bincount(gid, weights=(runs["proven"] == 1).astype(float), minlength=ng)
    gfin = np.where(ok & np.isfinite(runs["gap"]), runs["gap"], np.nan)
    gcount = np.bincount(gid, weights=~np.isnan(gfin), minlength=ng)
    gsum = np.bincount(gid, weights=np.nan_to_num(gfin, nan=0.0), minlength=ng)
    gmed = group_median(gid, gfin, ng)
    rt = runs["runtime"]
    rt_ok = np.isfinite(rt)
    logs = np.where(rt_ok, np.log(np.maximum(np.nan_to_num(rt, nan=0.0), 0.0) + SHIFT), 0.0)
    lsum = np.bincount(gid, weights=logs, minlength=ng)
    lcnt = np.bincount(gid, weights=rt_ok.astype(float), minlength=ng)
    n_inst = Counter((f, lb) for f, lb, _ in pi.keys)
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
    for g, (fam, label) in enumerate(keys):
        st = statuses[g]
        rows.append({
            "family": fam, "label": label, "solver": solver_of[g], "kind": kind_of[g], "runs": int(counts[g]),
            "instances": n_inst[(fam, label)], "feasible": int(feas[g]), "feasible_share": feas[g] / counts[g],
            "proven": int(proven[g]), "proven_share": proven[g] / counts[g],
            "mean_gap": float(gsum[g] / gcount[g]) if gcount[g] else None,
            "median_gap": None if math.isnan(gmed[g]) else float(gmed[g]),
            "sgm_runtime": float(np.exp(lsum[g] / lcnt[g]) - SHIFT) if lcnt[g] else None,
            "wins": wins[(fam, label)], "failed": sum(st[s] for s in FAILED), "statuses": dict(sorted(st.items())),
        })
    rows.sort(key=lambda r: (FAMILIES.index(r["family"]) if r["family"] in FAMILIES else 9, r["label"]))
    return rows


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


def summary_table(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    head = ["family", "solver", "kind", "runs", "feasible", "optimal", "mean gap", "median gap", "SGM time (s)",
            "wins", "failed"]
    body = []
    for r in rows:
        failed = ", ".join(f"{k} {v}" for k, v in r["statuses"].items() if k in FAILED) or "0"
        body.append([r["family"], r["label"], r["kind"] or "", str(r["runs"]), f"{r['feasible']}",
                     f"{100 * r['proven_share']:.0f}%", fmt_pct(r["mean_gap"]), fmt_pct(r["median_gap"]),
                     fmt_num(r["sgm_runtime"], 3), str(r["wins"]), failed])
    return head, body


def text_table(head: list[str], body: list[list[str]]) -> str:
    widths = [max(len(x) for x in col) for col in zip(head, *body)] if body else [len(h) for h in head]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    for row in body:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)))
    return "\n".join(lines)


# ======================================================================================
# plots
# ======================================================================================


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _figure():
    plt = _plt()
    fig, ax = plt.subplots(figsize=FIGSIZE, dpi=DPI)
    return plt, fig, ax


def _save(plt, fig, path: Path) -> Path:
    # fixed margins (tight_layout would cost one more full draw per plot)
    fig.subplots_adjust(left=0.1, right=0.98, bottom=0.11, top=0.93)
    # no bbox_inches: exactly 800 x 500 pixels; light compression: much faster, a little larger
    fig.savefig(path, dpi=DPI, format="png", pil_kwargs={"compress_level": 1})
    plt.close(fig)
    return path


def _colors(n: int) -> list:
    plt = _plt()
    cmap = plt.get_cmap("tab20" if n > 10 else "tab10")
    return [cmap(i % cmap.N) for i in range(n)]


def _legend(ax, n: int) -> None:
    if n:
        ax.legend(fontsize=7 if n > 8 else 8, ncol=2 if n > 12 else 1, loc="upper right" if n > 4 else "best",
                  framealpha=0.8)


def plot_profile(m: np.ndarray, labels: list[str], title: str, xlabel: str, path: Path) -> Path | None:
    if m.size == 0 or not labels:
        return None
    taus, rho = performance_profile(m)
    tmax = float(taus[-1]) * 1.25 if taus[-1] > 1 else 2.0
    plt, fig, ax = _figure()
    for s, (label, color) in enumerate(zip(labels, _colors(len(labels)))):
        xs = np.concatenate([taus, [tmax]])
        ys = np.concatenate([rho[s], [rho[s][-1]]])
        ax.step(xs, ys, where="post", label=label, color=color, linewidth=1.6)
    ax.set_xscale("log", base=2)
    ax.set_xlim(1.0, tmax)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of instances within factor τ of the best")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    _legend(ax, len(labels))
    return _save(plt, fig, path)


def plot_gap_vs_size(runs: Runs, idx: np.ndarray, title: str, path: Path) -> Path | None:
    sel = idx[runs["ok"][idx] & np.isfinite(runs["gap"][idx]) & np.isfinite(runs["size"][idx])]
    if sel.size == 0:
        return None
    labels = sorted(set(runs["label"][sel]))
    plt, fig, ax = _figure()
    n = len(labels)
    lab = runs["label"][sel]
    xs_all, ys_all = runs["size"][sel], runs["gap"][sel]
    span = float(xs_all.max() - xs_all.min() + 1)
    for i, (label, color) in enumerate(zip(labels, _colors(n))):
        m = np.flatnonzero(lab == label)
        if m.size > MAX_SCATTER:  # evenly thinned, deterministic
            m = m[np.linspace(0, m.size - 1, MAX_SCATTER).astype(int)]
        jitter = (i - (n - 1) / 2) * 0.012 * span / max(n, 1)
        ax.scatter(xs_all[m] + jitter, ys_all[m], s=14, label=label, color=color, alpha=0.75, edgecolors="none",
                   rasterized=True)
    ax.set_yscale("symlog", linthresh=1e-3)
    ax.set_ylim(bottom=-1e-4)
    ax.set_xlabel("instance size")
    ax.set_ylabel("gap to the best known")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    _legend(ax, n)
    return _save(plt, fig, path)


def anytime_curves(runs: Runs, idx: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """label -> (time grid, median gap of the incumbent over the traced runs)."""
    trace = runs["trace"]
    sel = idx[np.array([trace[i] is not None for i in idx], dtype=bool)] if idx.size else idx
    sel = sel[np.isfinite(runs["best_known"][sel])]
    out = {}
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
        out[label] = (grid, np.median(gaps, axis=0))
    return out


def plot_anytime(runs: Runs, idx: np.ndarray, title: str, path: Path) -> Path | None:
    curves = {k: v for k, v in anytime_curves(runs, idx).items() if np.isfinite(v[1]).any()}
    if not curves:
        return None
    plt, fig, ax = _figure()
    labels = sorted(curves)
    for label, color in zip(labels, _colors(len(labels))):
        grid, med = curves[label]
        ok = np.isfinite(med)
        ax.step(grid[ok], med[ok], where="post", label=label, color=color, linewidth=1.6)
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=1e-3)
    top = max((float(np.max(m[np.isfinite(m)])) for _, m in curves.values()), default=0.0)
    ax.set_ylim(-1e-4, max(top * 1.2, 1e-2))
    ax.set_xlabel("seconds")
    ax.set_ylabel("median gap of the incumbent to the best known")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    _legend(ax, len(labels))
    return _save(plt, fig, path)


def plot_pareto(runs: Runs, items: list[tuple[str, np.ndarray]], path: Path) -> Path | None:
    """The mapping Pareto fronts (L against D_BW) of up to MAX_PARETO_PLOTS instances in one
    figure: each front recorded by a run (line), and every feasible run's point (cross)."""
    items = [(iid, idx) for iid, idx in items if any(runs["pareto"][i] for i in idx)][:MAX_PARETO_PLOTS]
    if not items:
        return None
    plt = _plt()
    n = len(items)
    ncols = 1 if n == 1 else (2 if n <= 4 else 3)
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=FIGSIZE, dpi=DPI, squeeze=False)
    all_labels = sorted({runs["label"][i] for _, idx in items for i in idx})
    colors = dict(zip(all_labels, _colors(len(all_labels))))
    handles: dict[str, Any] = {}
    for ax, (iid, idx) in zip(axes.flat, items):
        for i in idx:
            label = runs["label"][i]
            if runs["pareto"][i]:
                pts = sorted((p["L"], p["D_BW"]) for p in json.loads(runs["pareto"][i]) if "L" in p and "D_BW" in p)
                if pts:
                    xs, ys = zip(*pts)
                    (h,) = ax.plot(xs, ys, "-o", color=colors[label], linewidth=1.3, markersize=4)
                    handles.setdefault(f"{label} (front)", h)
            if runs["ok"][i] and runs["objectives"][i]:
                ob = json.loads(runs["objectives"][i])
                if ob.get("L") is not None and ob.get("D_BW") is not None:
                    h = ax.scatter([ob["L"]], [ob["D_BW"]], marker="x", s=30, color=colors[label])
                    handles.setdefault(label, h)
        ax.set_title(iid, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.supxlabel("L (load imbalance, minimised)", fontsize=9, y=0.155)
    fig.supylabel("D_BW (bandwidth satisfaction, maximised)", fontsize=9)
    fig.suptitle("mapping: Pareto fronts (lines: fronts; crosses: each run's solution)", fontsize=10)
    fig.legend(list(handles.values()), list(handles), fontsize=6, loc="lower center", ncol=min(5, len(handles)),
               framealpha=0.8)
    fig.subplots_adjust(left=0.09, right=0.98, bottom=0.25, top=0.9, wspace=0.25, hspace=0.45)
    fig.savefig(path, dpi=DPI, format="png", pil_kwargs={"compress_level": 1})
    plt.close(fig)
    return path


# ======================================================================================
# exports
# ======================================================================================

_FLOAT_EXPORTS = ("time_limit", "memory_limit_mb", "primary_value", "gap", "bound_gap", "best_known", "best_bound",
                  "reported_objective", "bound", "runtime", "solver_wall", "wall", "peak_mem_mb")


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
        rows = ([_py(columns[c][i]) for c in columns] for i in range(n))
        return _write_csv(csv_path, list(columns), rows), None
    table = _arrow_table(columns)
    tmp = csv_path.with_name(f".{csv_path.name}.tmp")
    pcsv.write_csv(table, tmp)
    os.replace(tmp, csv_path)
    tmp = pq_path.with_name(f".{pq_path.name}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, pq_path)
    return csv_path, pq_path


def _write_csv(path: Path, head: list[str], rows: Iterable[Iterable[Any]]) -> Path:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(head)
        for row in rows:
            w.writerow(["" if x is None else x for x in row])
    os.replace(tmp, path)
    return path


# ======================================================================================
# the report
# ======================================================================================


@dataclass
class Block:
    kind: str  # h1 h2 h3 p table img code
    text: str = ""
    head: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)


def _md(blocks: list[Block]) -> str:
    out = []
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            out.append("#" * int(b.kind[1]) + " " + b.text + "\n")
        elif b.kind == "p":
            out.append(b.text + "\n")
        elif b.kind == "code":
            out.append("```\n" + b.text + "\n```\n")
        elif b.kind == "img":
            out.append(f"![{b.head[0] if b.head else ''}]({b.text})\n")
        elif b.kind == "table":
            esc = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
            out.append("| " + " | ".join(esc(h) for h in b.head) + " |")
            out.append("| " + " | ".join("---" for _ in b.head) + " |")
            for r in b.rows:
                out.append("| " + " | ".join(esc(c) for c in r) + " |")
            out.append("")
    return "\n".join(out)


_CSS = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
        "table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:0.9em}"
        "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}th{background:#f3f3f3}"
        "img{max-width:100%;border:1px solid #eee;margin:0.5em 0}code,pre{background:#f6f6f6}"
        "pre{padding:0.6em;overflow-x:auto}")


def _inline_html(text: str) -> str:
    t = html.escape(text)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    t = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", t)
    return re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r'<a href="\2">\1</a>', t)


def _html(blocks: list[Block], title: str) -> str:
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
           f"<style>{_CSS}</style></head><body>"]
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            out.append(f"<{b.kind}>{html.escape(b.text)}</{b.kind}>")
        elif b.kind == "p":
            out.append(f"<p>{_inline_html(b.text)}</p>")
        elif b.kind == "code":
            out.append(f"<pre>{html.escape(b.text)}</pre>")
        elif b.kind == "img":
            alt = html.escape(b.head[0] if b.head else "")
            out.append(f"<img src='{html.escape(b.text)}' alt='{alt}' width='800' height='500'>")
        elif b.kind == "table":
            out.append("<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in b.head) + "</tr>")
            for r in b.rows:
                out.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>")
            out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out)


def _write_text(path: Path, text: str) -> Path:
    from edgebench.instances.io import write_text_atomic

    return write_text_atomic(path, text)


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "x"


@dataclass
class ReportFiles:
    folder: Path
    markdown: Path
    html: Path
    plots: list[Path]
    csv: list[Path]
    parquet: list[Path]
    suites: list[Path]


def build_report(store_path: str | Path, out_dir: str | Path, *, keys: Iterable[str] | None = None) -> ReportFiles:
    """Write the report of the store at ``store_path`` into ``out_dir`` (created)."""
    from edgebench.errors import InputError
    from edgebench.runner.store import Store

    out = Path(out_dir)
    for q in (out, *out.parents):
        if q.exists():
            if not q.is_dir():
                raise InputError(f"{q} exists and is not a folder", file="<command line>", field="-o")
            break
    with Store.open(store_path, create=False) as store:
        data = load(store, keys)
    plots_dir = out / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)
    runs = data.runs
    # the big export (C++ in pyarrow, the GIL released) runs beside the plots
    pool = ThreadPoolExecutor(max_workers=1)
    runs_export = pool.submit(write_tables, out, "runs", {c: runs[c] for c in EXPORT_COLUMNS})
    pi = per_instance(runs)
    summary = summarize(data, pi)

    blocks: list[Block] = [Block("h1", "edgebench benchmark report")]
    fam_col = runs["family"]
    fams = [f for f in FAMILIES if (fam_col == f).any()]
    statuses = Counter(runs["status"].tolist())
    n_inst = len(set(runs["instance_hash"].tolist()))
    n_conf = len(set(zip(fam_col.tolist(), runs["label"].tolist())))
    blocks.append(Block("p", f"Store `{store_path}` (format {data.meta.get('format_version', '?')}): "
                             f"**{len(runs)} runs** on {n_inst} instances, {n_conf} solver configurations; statuses: "
                             + (", ".join(f"{k} {v}" for k, v in sorted(statuses.items())) or "none") + "."))
    blocks.append(Block("p", "Gap = (objective − best known) / |best known| in the objective's improving direction, "
                             "over referee-feasible runs; *optimal* = share of runs solved to proven optimality; "
                             f"SGM time = shifted geometric mean of the runtime, shift {SHIFT:g} s, over all runs; "
                             "wins = instances where the configuration's median feasible objective over seeds is the "
                             "best (ties count for each). Performance profiles after Dolan & Moré (2002): runtime of "
                             "referee-feasible runs (floor 1 ms), and 1 + gap. Conventions: `docs/runner.md`."))
    plots: list[Path] = []
    pi_index = {k: i for i, k in enumerate(pi.keys)}
    for fam in fams:
        idx = np.flatnonzero(fam_col == fam)
        blocks.append(Block("h2", f"Family: {fam}"))
        head, body = summary_table([s for s in summary if s["family"] == fam])
        blocks.append(Block("table", head=head[1:], rows=[b[1:] for b in body]))
        labels = sorted(set(runs["label"][idx].tolist()))
        hashes = sorted(set(runs["instance_hash"][idx].tolist()))
        for metric, title, xlabel, name in (
                ("runtime", f"{fam}: performance profile, runtime", "τ (runtime / best runtime)", "profile_runtime"),
                ("gap", f"{fam}: performance profile, gap", "τ ((1 + gap) / (1 + best gap))", "profile_gap")):
            arr = pi.runtime if metric == "runtime" else 1.0 + pi.gap
            m = np.full((len(hashes), len(labels)), np.inf)
            for i, h in enumerate(hashes):
                for j, lb in enumerate(labels):
                    k = pi_index.get((fam, lb, h))
                    if k is not None and not math.isnan(arr[k]):
                        m[i, j] = arr[k]
            p = plot_profile(m, labels, title, xlabel, plots_dir / f"{fam}_{name}.png")
            if p is not None:
                plots.append(p)
                blocks.append(Block("img", f"plots/{p.name}", head=[title]))
        p = plot_gap_vs_size(runs, idx, f"{fam}: gap against instance size", plots_dir / f"{fam}_gap_vs_size.png")
        if p is not None:
            plots.append(p)
            blocks.append(Block("img", f"plots/{p.name}", head=[f"{fam}: gap against size"]))
        else:
            blocks.append(Block("p", "No gap against size: no feasible run with a best known value."))
        p = plot_anytime(runs, idx, f"{fam}: anytime curves", plots_dir / f"{fam}_anytime.png")
        if p is not None:
            plots.append(p)
            blocks.append(Block("img", f"plots/{p.name}", head=[f"{fam}: anytime"]))
        else:
            blocks.append(Block("p", "No anytime curves: no run of this family recorded a trace "
                                     "(`stats[\"trace\"]`) in the referee's objective."))
        if fam == "mapping":
            par = runs["pareto"]
            with_front = sorted({(runs["instance_id"][i], runs["instance_hash"][i]) for i in idx if par[i]})
            if not with_front:
                blocks.append(Block("p", "No Pareto fronts: no mapping run recorded `stats[\"pareto\"]`."))
            else:
                hashes_m = runs["instance_hash"][idx]
                items = [(iid, idx[hashes_m == h]) for iid, h in with_front[:MAX_PARETO_PLOTS]]
                p = plot_pareto(runs, items, plots_dir / "mapping_pareto.png")
                if p is not None:
                    plots.append(p)
                    blocks.append(Block("img", f"plots/{p.name}", head=["mapping Pareto fronts"]))
                if len(with_front) > MAX_PARETO_PLOTS:
                    blocks.append(Block("p", f"Pareto fronts of {len(with_front) - MAX_PARETO_PLOTS} more instances "
                                             f"are in the store (the first {MAX_PARETO_PLOTS} by instance id are "
                                             "plotted)."))

    # best known
    blocks.append(Block("h2", "Best known solutions and bounds"))
    run_hashes = set(runs["instance_hash"].tolist())
    best_rows = [b for b in data.best.values() if keys is None or b["instance_hash"] in run_hashes]
    bk_head = ["family", "set", "instance", "size", "sense", "best objective", "by", "best bound", "by", "optimal",
               "conflict"]
    bk_rows = [[b.get("family") or "", b.get("instance_set") or "", b.get("instance_id") or "",
                fmt_num(b.get("size")), b.get("sense") or "", fmt_num(b.get("objective"), 10),
                b.get("obj_solver") or "", fmt_num(b.get("bound"), 10), b.get("bound_solver") or "",
                "yes" if b.get("optimal") else "no", b.get("conflict") or ""] for b in best_rows]
    if len(bk_rows) > 500:
        blocks.append(Block("p", f"{len(bk_rows)} instances: see `bestknown.csv`."))
    else:
        blocks.append(Block("table", head=bk_head, rows=bk_rows))
    conflicts = [b for b in best_rows if b.get("conflict")]
    if conflicts:
        blocks.append(Block("p", f"**{len(conflicts)} bound conflicts**: a referee-verified objective beats a "
                                 "solver's claimed bound (see the last column of `bestknown.csv`)."))

    # environment and reproduction
    blocks.append(Block("h2", "Environment"))
    env_counts = Counter(runs["env"].tolist())
    env_rows = []
    for h, e in data.envs.items():
        if h in env_counts:
            host = e.get("host", {})
            vers = ", ".join(f"{k} {v}" for k, v in e.get("versions", {}).items() if v)
            env_rows.append([h, str(env_counts[h]), f"{host.get('node')} ({host.get('cpus')} cpus, {host.get('cpu')})",
                             host.get("platform") or "", vers,
                             ", ".join(f"{k}={v}" for k, v in (e.get("threads") or {}).items() if v)])
    blocks.append(Block("table", head=["env", "runs", "host", "platform", "versions", "threads"], rows=env_rows))
    suite_files = []
    if data.sweeps:
        blocks.append(Block("h2", "Sweeps and reproduction"))
        sw_rows = []
        for s in data.sweeps:
            path = None
            if s.get("suite_toml"):
                path = _write_text(out / "suites" / f"sweep-{s['id']}-{_safe(s.get('suite') or 'suite')}.toml",
                                   s["suite_toml"])
                suite_files.append(path)
            argv = " ".join(json.loads(s["argv"])) if s.get("argv") else ""
            sw_rows.append([str(s["id"]), s.get("suite") or "", s.get("started") or "",
                            s.get("finished") or "not finished", str(s.get("planned")), str(s.get("skipped")),
                            str(s.get("done")), f"suites/{path.name}" if path else "", argv])
        blocks.append(Block("table", head=["sweep", "suite", "started", "finished", "planned", "skipped", "done",
                                           "suite file", "command"], rows=sw_rows))
        blocks.append(Block("p", "To reproduce a table: run the sweep's suite file into a new store on comparable "
                                 "hardware (same package versions as above), then build the report from it:"))
        blocks.append(Block("code", "edgebench run suites/sweep-<N>-<suite>.toml --db new.sqlite --workers <W>\n"
                                    "edgebench report --db new.sqlite -o new-report"))

    # exports
    csv_files, pq_files = [], []
    c_path, p_path = runs_export.result()
    pool.shutdown()
    csv_files.append(c_path)
    if p_path is not None:
        pq_files.append(p_path)
    for name, columns in (
            ("summary", {c: np.asarray([s[c] if s[c] is not None else np.nan for s in summary],
                                       dtype=float if c in _SUMMARY_FLOATS else object) for c in _SUMMARY_COLUMNS}),
            ("bestknown", {c: np.asarray([b.get(c) if b.get(c) is not None else (np.nan if c in _BK_FLOATS else None)
                                          for b in best_rows], dtype=float if c in _BK_FLOATS else object)
                           for c in _BK_COLUMNS})):
        c_path, p_path = write_tables(out, name, columns)
        csv_files.append(c_path)
        if p_path is not None:
            pq_files.append(p_path)
    blocks.append(Block("h2", "Files"))
    blocks.append(Block("p", "`runs.csv` / `runs.parquet` (one row per run, gaps included), `summary.csv` / "
                             "`summary.parquet` (the tables above), `bestknown.csv` / `bestknown.parquet`, "
                             "`plots/*.png`, `suites/*.toml`."
                             + ("" if pq_files else " Parquet files were not written: pyarrow is not installed.")))
    md = _write_text(out / "report.md", _md(blocks))
    ht = _write_text(out / "report.html", _html(blocks, "edgebench report"))
    return ReportFiles(folder=out, markdown=md, html=ht, plots=plots, csv=csv_files, parquet=pq_files,
                       suites=suite_files)


_SUMMARY_COLUMNS = ("family", "label", "solver", "kind", "runs", "instances", "feasible", "feasible_share", "proven",
                    "proven_share", "mean_gap", "median_gap", "sgm_runtime", "wins", "failed")
_SUMMARY_FLOATS = ("runs", "instances", "feasible", "feasible_share", "proven", "proven_share", "mean_gap",
                   "median_gap", "sgm_runtime", "wins", "failed")
_BK_COLUMNS = ("instance_hash", "instance_id", "instance_set", "family", "size", "primary_name", "sense", "objective",
               "obj_solver", "obj_run", "obj_date", "bound", "bound_solver", "bound_run", "bound_date", "optimal",
               "conflict")
_BK_FLOATS = ("size", "objective", "bound", "optimal")
