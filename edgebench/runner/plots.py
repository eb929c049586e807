"""The report's drawing layer: one style for every plot, and one function per plot kind.

Every function takes numbers already computed by :mod:`edgebench.runner.report` (nothing
here reads a store or computes a statistic) and writes the figure twice, as PNG (for the
page and Markdown) and SVG (for papers). The style:

* a solver's **colour** says its kind (Okabe & Ito's colour-blind-safe palette: exact blue,
  heuristic orange, metaheuristic bluish green, MDP reddish purple, learned vermillion,
  anything else black); solvers of one kind are told apart by **marker** and **line style**
  (and a lighter or darker shade of the kind's colour);
* legends sit **outside** the axes, on the right, one entry per solver;
* log axes carry plain numbers (1, 2, 4, 8 ... for ratios; 0.1 %, 1 %, 10 % for gaps);
* ties stay visible: markers are staggered along each curve (solvers whose curves coincide
  show all their markers side by side), bands are translucent, and points of solvers at one
  instance size are spread sideways by a small fixed offset (the values are not changed).

Size: 1000 x 560 pixels at 100 dpi (the legend takes the right quarter).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from edgebench.instances.io import atomic_target

FIGSIZE = (10.0, 5.6)
DPI = 100
#: Okabe & Ito (2008), "Color Universal Design": colour per solver kind
KIND_COLORS = {"exact": "#0072B2", "heuristic": "#E69F00", "metaheuristic": "#009E73", "mdp": "#CC79A7",
               "learned": "#D55E00"}
OTHER_COLOR = "#000000"
KIND_ORDER = ("exact", "heuristic", "metaheuristic", "mdp", "learned")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p")
LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 2)), (0, (6, 2, 2, 2)))
#: the right edge of the axes (the legend lives to its right)
AXES_RIGHT = 0.72


@dataclass(frozen=True)
class Style:
    color: str | tuple
    marker: str
    linestyle: str | tuple
    kind: str = ""


def styles(kinds: dict[str, str]) -> dict[str, Style]:
    """label -> Style, from label -> solver kind. Deterministic: labels sorted by (kind,
    label); the k-th solver of a kind gets the k-th marker and line style."""
    from matplotlib.colors import to_rgb

    order = sorted(kinds, key=lambda lb: (_kind_rank(kinds[lb]), lb))
    out: dict[str, Style] = {}
    seen: dict[str, int] = {}
    per_kind = {k: sum(1 for v in kinds.values() if v == k) for k in set(kinds.values())}
    for label in order:
        kind = kinds[label]
        k = seen.get(kind, 0)
        seen[kind] = k + 1
        base = np.array(to_rgb(KIND_COLORS.get(kind, OTHER_COLOR)))
        n = per_kind[kind]
        # shades from 20 % darker to 40 % lighter than the kind's colour (darker would turn
        # orange and vermillion into one brown)
        t = 0.0 if n == 1 else -0.2 + 0.6 * k / (n - 1)
        rgb = base + (1 - base) * t if t > 0 else base * (1 + t)
        out[label] = Style(tuple(float(x) for x in np.clip(rgb, 0, 1)), MARKERS[k % len(MARKERS)],
                           LINESTYLES[k % len(LINESTYLES)], kind)
    return out


def _kind_rank(kind: str) -> int:
    return KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)


def ordered(labels: Iterable[str], st: dict[str, Style]) -> list[str]:
    """``labels`` in the order of the style table (by kind, then label)."""
    pos = {lb: i for i, lb in enumerate(st)}
    return sorted(labels, key=lambda lb: (pos.get(lb, len(pos)), lb))


# --------------------------------------------------------------------------------------
# figure plumbing
# --------------------------------------------------------------------------------------


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _figure(nrows: int = 1, ncols: int = 1):
    plt = _plt()
    with plt.rc_context(_RC):
        fig, axes = plt.subplots(nrows, ncols, figsize=FIGSIZE, dpi=DPI, squeeze=False)
    for ax in axes.flat:
        ax.grid(True, which="major", alpha=0.35, linewidth=0.6)
        ax.grid(True, which="minor", alpha=0.12, linewidth=0.4)
        ax.spines[["top", "right"]].set_visible(False)
    return plt, fig, axes


_RC = {"font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "legend.fontsize": 8, "svg.fonttype": "none"}


def _legend(fig, ax, st: dict[str, Style], title: str = "solver (colour = kind)") -> None:
    """The legend right of the axes, solvers grouped under a heading per kind."""
    from matplotlib.patches import Patch

    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    rows_h, rows_l = [], []
    kind = None
    for h, lb in zip(handles, labels):
        k = st[lb].kind if lb in st else ""
        if k != kind:
            kind = k
            rows_h.append(Patch(color=KIND_COLORS.get(k, OTHER_COLOR)))
            rows_l.append(k or "other")
        rows_h.append(h)
        rows_l.append(lb)
    ncol = 1 if len(rows_h) <= 26 else 2
    leg = ax.legend(rows_h, rows_l, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False,
                    ncol=ncol, title=title, title_fontsize=8, fontsize=8 if ncol == 1 else 7, handlelength=3.2)
    for h, text in zip(rows_h, leg.get_texts()):
        if isinstance(h, Patch):
            text.set_fontweight("bold")


def _save(plt, fig, path: Path, *, adjust: bool = True) -> list[Path]:
    """``path`` (.png) and its .svg twin; fixed margins (exact pixel size)."""
    if adjust:
        fig.subplots_adjust(left=0.08, right=AXES_RIGHT, bottom=0.11, top=0.92)
    svg = path.with_suffix(".svg")
    try:  # temp file then rename: a full disk leaves no 0-byte or truncated image (issue 28)
        _save_atomic(fig, path, dpi=DPI, format="png", pil_kwargs={"compress_level": 1})
        # no date and fixed element ids (matplotlib draws them at random otherwise): same data, same file
        with plt.rc_context({"svg.hashsalt": "edgebench"}):
            _save_atomic(fig, svg, format="svg", metadata={"Date": None})
    finally:
        plt.close(fig)
    return [path, svg]


def _save_atomic(fig, path: Path, **kwargs) -> None:
    with atomic_target(path) as tmp:
        fig.savefig(tmp, **kwargs)


def _plain(x: float, _pos=None) -> str:
    return f"{x:g}"


def _pct(x: float, _pos=None) -> str:
    if x == 0:
        return "0"
    v = 100 * x
    return f"{v:.2g}%" if abs(v) < 1 else f"{v:,.0f}%"


def _ratio_ticks(tmax: float) -> list[float]:
    """Ticks of a ratio axis from 1 to ``tmax``, spaced so that their labels do not touch."""
    if tmax <= 1.6:
        ticks = [1, 1.05, 1.1, 1.2, 1.3, 1.5]
    elif tmax <= 4.5:
        ticks = [1, 1.1, 1.25, 1.5, 2, 3, 4]
    elif tmax <= 16:
        ticks = [1, 1.5, 2, 3, 4, 6, 8, 12, 16]
    else:
        ticks = [2.0 ** k for k in range(0, int(math.log2(tmax)) + 1)]
    return [x for x in ticks if x <= tmax]


def _gap_axis(axis, top: float) -> None:
    """A symlog gap axis (linear below 0.1 %) labelled in per cent."""
    from matplotlib import ticker

    axis.axes.set_yscale("symlog", linthresh=1e-3, linscale=0.5) if axis.axis_name == "y" else \
        axis.axes.set_xscale("symlog", linthresh=1e-3, linscale=0.5)
    decades = [0.0] + [10.0 ** k for k in range(-3, int(math.ceil(math.log10(max(top, 1e-2)))) + 1)]
    axis.set_major_locator(ticker.FixedLocator(decades))
    axis.set_major_formatter(ticker.FuncFormatter(_pct))
    axis.set_minor_locator(ticker.NullLocator())


def _stagger(n_points: int, j: int, n: int, every: int = 8) -> list[int]:
    """Marker positions of the j-th of n curves: every ``every``-th point, shifted by j so
    that coinciding curves show each marker."""
    if n_points <= 0:
        return []
    step = max(1, n_points // every)
    start = int(round(j * step / max(n, 1)))
    return list(range(min(start, n_points - 1), n_points, step))


# --------------------------------------------------------------------------------------
# the plots
# --------------------------------------------------------------------------------------


def profile(taus: np.ndarray, rho: np.ndarray, labels: list[str], st: dict[str, Style], title: str, xlabel: str,
            path: Path) -> list[Path]:
    """Dolan-Moré performance profile: rho[s] against taus (log 2 axis, plain numbers)."""
    from matplotlib import ticker

    tmax = float(taus[-1]) * 1.25 if taus[-1] > 1 else 2.0
    grid = np.unique(np.concatenate([taus, np.geomspace(1.0, tmax, 64)]))
    plt, fig, axes = _figure()
    ax = axes[0, 0]
    for j, label in enumerate(labels):
        s = st[label]
        pos = np.searchsorted(taus, grid, side="right") - 1
        ys = np.where(pos >= 0, rho[labels.index(label)][np.maximum(pos, 0)], 0.0)
        ax.step(grid, ys, where="post", color=s.color, linestyle=s.linestyle, linewidth=1.8, label=label,
                marker=s.marker, markersize=5, markevery=_stagger(grid.size, j, len(labels)), alpha=0.95)
    ax.set_xscale("log", base=2)
    ax.set_xlim(1.0, tmax)
    ax.xaxis.set_major_locator(ticker.FixedLocator(_ratio_ticks(tmax)))
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(_plain))
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set_ylim(-0.02, 1.02)
    ax.yaxis.set_major_formatter(ticker.PercentFormatter(xmax=1.0))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("instances within factor τ of the best")
    ax.set_title(title)
    _legend(fig, ax, st)
    return _save(plt, fig, path)


def bands(series: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]], labels: list[str],
          st: dict[str, Style], title: str, xlabel: str, ylabel: str, path: Path, *, logx: bool = False,
          dodge: float = 0.0) -> list[Path]:
    """Median line (with markers) and interquartile band per solver: ``series[label]`` =
    (x, median, q25, q75). ``dodge``: sideways spread between solvers, as a fraction of the
    x range (log x: of a decade); ``logx``: a log time axis."""
    from matplotlib import ticker

    plt, fig, axes = _figure()
    ax = axes[0, 0]
    top = max((float(np.max(q3[np.isfinite(q3)])) for _, _, _, q3 in series.values() if np.isfinite(q3).any()),
              default=0.0)
    xs_all = np.concatenate([x for x, *_ in series.values()]) if series else np.zeros(0)
    span = float(np.ptp(xs_all)) if xs_all.size else 1.0
    n = len(labels)
    for j, label in enumerate(labels):
        x, med, q1, q3 = series[label]
        s = st[label]
        off = (j - (n - 1) / 2) * dodge
        xd = x * 10.0 ** off if logx else x + off * max(span, 4.0)
        ok = np.isfinite(med)
        kw = dict(color=s.color, linestyle=s.linestyle, linewidth=1.6, marker=s.marker, markersize=5, label=label)
        if logx:
            ax.step(xd[ok], med[ok], where="post", markevery=_stagger(int(ok.sum()), j, n), **kw)
            ax.fill_between(xd[ok], q1[ok], q3[ok], step="post", color=s.color, alpha=0.12, linewidth=0)
        else:
            ax.plot(xd[ok], med[ok], **kw)
            ax.fill_between(xd[ok], q1[ok], q3[ok], color=s.color, alpha=0.12, linewidth=0)
            # the band as whiskers too: visible where a solver has a single size
            ax.errorbar(xd[ok], med[ok], yerr=[med[ok] - q1[ok], q3[ok] - med[ok]], fmt="none", ecolor=s.color,
                        elinewidth=1.0, capsize=3, alpha=0.8)
    if logx:
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(_plain))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    else:
        sizes = np.unique(xs_all)
        ax.xaxis.set_major_locator(ticker.FixedLocator(sizes) if sizes.size <= 12 else ticker.MaxNLocator(integer=True))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(_plain))
        lo, hi = (float(xs_all.min()), float(xs_all.max())) if xs_all.size else (0.0, 1.0)
        pad = max(0.06 * (hi - lo), 0.6)
        ax.set_xlim(lo - pad, hi + pad)
    _gap_axis(ax.yaxis, top)
    ax.set_ylim(bottom=-2e-4, top=max(top * 1.5, 2e-2))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    _legend(fig, ax, st, "solver (line: median, band: 25-75 %)")
    return _save(plt, fig, path)


@dataclass
class ParetoPanel:
    title: str
    #: (label, [(L, D_BW) ...] sorted, exact) per recorded front
    fronts: list[tuple[str, list[tuple[float, float]], bool]]
    #: (label, L, D_BW) per feasible run
    points: list[tuple[str, float, float]]


def pareto(panels: list[ParetoPanel], st: dict[str, Style], path: Path) -> list[Path]:
    """Mapping Pareto fronts (L minimised against D_BW maximised), one panel per instance:
    the exact front (from a solver that proves it) thick and black, other fronts thin in the
    solver's style, each run's own solution as a hollow marker."""
    n = len(panels)
    ncols = 1 if n == 1 else (2 if n <= 4 else 3)
    nrows = math.ceil(n / ncols)
    plt, fig, axes = _figure(nrows, ncols)
    handles: dict[str, object] = {}
    for ax, panel in zip(axes.flat, panels):
        for label, pts, exact in panel.fronts:
            xs, ys = zip(*pts)
            if exact:
                (h,) = ax.plot(xs, ys, "-", color="black", linewidth=2.6, marker="o", markersize=6, zorder=1,
                               markerfacecolor="white")
                handles.setdefault(f"exact front ({label})", h)
            else:
                s = st[label]
                (h,) = ax.plot(xs, ys, color=s.color, linestyle=s.linestyle, marker=s.marker, linewidth=1.2,
                               markersize=4, zorder=3, alpha=0.9)
                handles.setdefault(f"{label} (front)", h)
        for label, x, y in panel.points:
            s = st[label]
            h = ax.scatter([x], [y], marker=s.marker, s=42, facecolors="none", edgecolors=[s.color], linewidths=1.3,
                           zorder=4)
            handles.setdefault(label, h)
        ax.set_title(panel.title, fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.supxlabel("L (load imbalance, minimised)", fontsize=9, x=AXES_RIGHT / 2)
    fig.supylabel("D_BW (bandwidth satisfaction, maximised)", fontsize=9)
    fig.suptitle("mapping: Pareto fronts (thick black: exact front; hollow markers: each run's solution)",
                 fontsize=10, x=AXES_RIGHT / 2)
    fig.legend(list(handles.values()), list(handles), loc="upper left", bbox_to_anchor=(AXES_RIGHT + 0.02, 0.92),
               frameon=False, fontsize=7)
    fig.subplots_adjust(left=0.08, right=AXES_RIGHT, bottom=0.1, top=0.88, wspace=0.3, hspace=0.5)
    return _save(plt, fig, path, adjust=False)


def _strip_figure(path: Path, n_rows: int, base: float, per_row: float):
    """(plt, fig, ax, height in inches) of a figure with one horizontal strip per row: the
    standard width, ``base + per_row`` inches per row high, an x grid only; ``path``'s folder made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    plt = _plt()
    height = base + per_row * max(n_rows, 1)
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(FIGSIZE[0], height), dpi=DPI)
    ax.grid(True, axis="x", alpha=0.35, linewidth=0.6)
    ax.spines[["top", "right"]].set_visible(False)
    return plt, fig, ax, height


#: colour per instance family in plots of the certified library (Okabe & Ito, as above)
FAMILY_COLORS = {"placement": "#0072B2", "mapping": "#009E73", "offloading": "#E69F00"}


def gap_strips(rows: list[tuple[str, str, list[float | None]]], path: Path) -> list[Path]:
    """The certified library at a glance: one row per instance set (``rows``: (set, family, the
    gap of each certified instance, None where it is closed), in the order given), a dot per
    instance at its gap to its bound (symlog axis), closed instances as filled dots at 0, open
    ones hollow, the set's mean gap (closed instances count 0) as a bar; colour = family.
    Height grows with the number of sets."""
    from matplotlib.lines import Line2D

    plt, fig, ax, height = _strip_figure(path, len(rows), 1.3, 0.24)
    top = max((g for _, _, gaps in rows for g in gaps if g is not None), default=1e-2)
    for y, (name, family, gaps) in enumerate(rows):
        color = FAMILY_COLORS.get(family, OTHER_COLOR)
        closed = [0.0 for g in gaps if g is None]
        open_ = sorted(g for g in gaps if g is not None)
        # several instances at one gap: spread up and down a little (values unchanged)
        jitter = (np.arange(len(open_)) % 5 - 2) * 0.07
        if closed:
            ax.scatter(closed, np.full(len(closed), y, dtype=float), s=26, color=color, edgecolors=color, zorder=3)
        if open_:
            ax.scatter(open_, y + jitter, s=26, facecolors="white", edgecolors=color, linewidths=1.2, zorder=3)
        if gaps:
            m = sum(g or 0.0 for g in gaps) / len(gaps)
            ax.plot([m, m], [y - 0.38, y + 0.38], color=color, linewidth=2.4, zorder=2)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{name} ({len(gaps)})" for name, _, gaps in rows], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    _gap_axis(ax.xaxis, top)
    ax.set_xlim(left=-2e-4, right=max(top * 1.5, 2e-2))
    ax.set_xlabel("gap of the best known to the bound, |best known - bound| / |best known|")
    n_inst = sum(len(g) for _, _, g in rows)
    n_closed = sum(1 for _, _, g in rows for x in g if x is None)
    ax.set_title(f"The certified library: {n_closed} of {n_inst} certified instances closed")
    handles = [Line2D([], [], marker="o", linestyle="", color=c, label=f) for f, c in FAMILY_COLORS.items()]
    handles += [Line2D([], [], marker="o", linestyle="", color="grey", label="closed (optimal)"),
                Line2D([], [], marker="o", linestyle="", markerfacecolor="white", color="grey", label="open"),
                Line2D([], [], marker="|", linestyle="", markersize=12, markeredgewidth=2.4, color="grey",
                       label="set mean")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False,
              fontsize=8, title="family / instance", title_fontsize=8)
    fig.subplots_adjust(left=0.27, right=0.80, bottom=0.9 / height, top=1 - 0.45 / height)
    return _save(plt, fig, path, adjust=False)


def ratio_strips(rows: list[tuple[str, dict[str, float]]], st: dict[str, Style], path: Path, *, title: str,
                 xlabel: str, line: float | None = None, line_label: str = "",
                 marked: Iterable[str] = ()) -> list[Path]:
    """One row per group (``rows``: (group, solver label -> ratio to a reference), in the order
    given), each solver's ratio as its marker on a log axis with plain-number ticks; ``line``: a
    vertical reference (e.g. a target ratio) with ``line_label``; the groups in ``marked`` get a
    shaded band (e.g. the ones a target applies to). Height grows with the number of groups."""
    from matplotlib import ticker

    plt, fig, ax, height = _strip_figure(path, len(rows), 1.4, 0.34)
    marked = set(marked)
    labels = ordered({lb for _, r in rows for lb in r}, st)
    n = len(labels)
    for y, (group, _) in enumerate(rows):
        if group in marked:
            ax.axhspan(y - 0.5, y + 0.5, color="#000000", alpha=0.05, linewidth=0)
    for j, label in enumerate(labels):
        s = st[label]
        pts = [(r[label], y + (j - (n - 1) / 2) * 0.6 / max(n, 1)) for y, (_, r) in enumerate(rows) if label in r]
        if pts:
            xs, ys = zip(*pts)
            ax.scatter(xs, ys, marker=s.marker, s=34, color=s.color, label=label, zorder=3)
    hi = max((v for _, r in rows for v in r.values()), default=2.0)
    lo = min((v for _, r in rows for v in r.values()), default=1.0)
    if line is not None:
        ax.axvline(line, color="#444444", linestyle="--", linewidth=1.2, label=line_label or None, zorder=2)
    ax.set_xscale("log")
    ax.set_xlim(min(lo, 1.0) / 1.03, hi * 1.15)
    ax.xaxis.set_major_locator(ticker.FixedLocator(_ratio_ticks(hi * 1.15)))
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(_plain))
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([g for g, _ in rows], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    _legend(fig, ax, st)
    fig.subplots_adjust(left=0.22, right=AXES_RIGHT, bottom=0.9 / height, top=1 - 0.45 / height)
    return _save(plt, fig, path, adjust=False)


#: Okabe & Ito's eight colours and a grey, for figures whose lines are not solvers (no kind to colour by)
PALETTE = ("#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#999999")


def curves(series: dict[str, tuple[np.ndarray, np.ndarray]], path: Path, *, title: str, xlabel: str, ylabel: str,
           line: float | None = None, line_label: str = "", legend_title: str = "") -> list[Path]:
    """One line per label (``series[label]`` = (x, y), x >= 1, in the order given) on a log-2 x
    axis with plain-number ticks, markers at the powers of two; lines are told apart by colour
    (:data:`PALETTE`), marker and line style, as for groups that are not solvers (e.g. instance
    sets); ``line``: a horizontal reference (a target) labelled ``line_label``."""
    from matplotlib import ticker

    plt, fig, axes = _figure()
    ax = axes[0, 0]
    n = len(series)
    for j, (label, (x, y)) in enumerate(series.items()):
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        ax.plot(x, y, color=PALETTE[j % len(PALETTE)], linestyle=LINESTYLES[j % len(LINESTYLES)], linewidth=1.5,
                marker=MARKERS[j % len(MARKERS)], markersize=4, markevery=_powers_of_two(x) or _stagger(len(x), j, n),
                label=label)
    if line is not None:
        ax.axhline(line, color="#444444", linestyle="--", linewidth=1.2, label=line_label or None)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(_plain))
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False, fontsize=8,
              title=legend_title or None, title_fontsize=8, handlelength=3.2)
    return _save(plt, fig, path)


def _powers_of_two(x: np.ndarray) -> list[int]:
    """The indices of ``x`` whose values are powers of two (the log-2 axis's ticks)."""
    return [i for i, v in enumerate(x) if v >= 1 and math.log2(v).is_integer()]
