"""Instance-space footprints (Smith-Miles et al.'s instance space analysis, simplified): per
family, the instances projected to 2-D by PCA of their standardised features
(:mod:`edgebench.features`), one panel per solver configuration with the gap to the best
known as colour, and the solver's **footprint** — the instances where its median gap over
seeds is within :data:`FOOTPRINT_GAP` (1 %) — ringed. Conventions: ``docs/adversary.md``.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from edgebench.features import FEATURES, projection
from edgebench.runner import plots as P
from edgebench.runner.page import Block

#: an instance is in a solver's footprint when its gap to the best known is at most this
FOOTPRINT_GAP = 0.01
#: the colour scale of the gap is clipped here (a worse gap is drawn in the last colour)
GAP_CLIP = 0.5
#: panels per row
NCOLS = 4


def footprints(fam: str, hashes: list[str], labels: list[str], pi, feats: dict[str, dict[str, float]]
               ) -> tuple[np.ndarray, np.ndarray, list[str], dict[str, np.ndarray]]:
    """(2-D coordinates, explained variance share, the instances with features, per label the
    median gap per instance: NaN where the label did not run, inf where it found nothing)."""
    hs = [h for h in hashes if h in feats]
    if not hs:
        return np.zeros((0, 2)), np.zeros(2), [], {}
    names = FEATURES[fam]
    x = np.array([[feats[h].get(k, 0.0) for k in names] for h in hs], dtype=float)
    coords, share = projection(x)
    where = {k: i for i, k in enumerate(pi.keys)}
    gaps = {}
    for lb in labels:
        g = np.full(len(hs), np.nan)
        for i, h in enumerate(hs):
            j = where.get((fam, lb, h))
            if j is not None:
                g[i] = pi.gap[j]
        gaps[lb] = g
    return coords, share, hs, gaps


def plot(fam: str, coords: np.ndarray, share: np.ndarray, gaps: dict[str, np.ndarray], path: Path) -> list[Path]:
    """One panel per label: every instance as a small grey dot, the label's instances coloured
    by gap (clipped at GAP_CLIP; no feasible solution = black cross), its footprint ringed."""
    plt = P._plt()
    labels = list(gaps)
    nrows = max(1, math.ceil(len(labels) / NCOLS))
    ncols = min(NCOLS, max(1, len(labels)))
    with plt.rc_context(P._RC):
        fig, axes = plt.subplots(nrows, ncols, figsize=(3.1 * ncols + 1.2, 2.8 * nrows + 0.9), dpi=P.DPI,
                                 squeeze=False, sharex=True, sharey=True)
    cmap = plt.get_cmap("viridis")
    sc = None
    for k, ax in enumerate(axes.flat):
        if k >= len(labels):
            ax.axis("off")
            continue
        lb = labels[k]
        g = gaps[lb]
        ran = ~np.isnan(g)
        fin = ran & np.isfinite(g)
        fail = ran & ~np.isfinite(g)
        inside = fin & (g <= FOOTPRINT_GAP + 1e-12)
        ax.scatter(coords[:, 0], coords[:, 1], s=8, c="#d0d0d0", linewidths=0, zorder=1)
        sc = ax.scatter(coords[fin, 0], coords[fin, 1], s=22, c=np.minimum(g[fin], GAP_CLIP), cmap=cmap, vmin=0.0,
                        vmax=GAP_CLIP, edgecolors="#404040", linewidths=0.4, zorder=2)
        ax.scatter(coords[inside, 0], coords[inside, 1], s=70, facecolors="none", edgecolors="#d62728",
                   linewidths=1.1, zorder=3)
        ax.scatter(coords[fail, 0], coords[fail, 1], s=22, marker="x", c="black", linewidths=1.0, zorder=3)
        ax.set_title(f"{lb}: {int(inside.sum())}/{int(ran.sum())} within 1%", fontsize=9)
        ax.grid(True, alpha=0.3, linewidth=0.5)
        ax.tick_params(labelsize=7)
    for c in range(ncols):  # the lowest panel of each column carries the x axis
        r = max(r for r in range(nrows) if r * ncols + c < len(labels))
        axes[r, c].xaxis.set_tick_params(labelbottom=True)
        axes[r, c].set_xlabel(f"PC1 ({100 * share[0]:.0f}% of variance)", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel(f"PC2 ({100 * share[1]:.0f}%)", fontsize=8)
    fig.suptitle(f"{fam}: instance space (PCA of standardised features); colour = gap to best known, "
                 f"red ring = footprint (gap ≤ 1%), × = no feasible solution", fontsize=9)
    height = fig.get_figheight()  # margins in inches, whatever the number of rows
    fig.subplots_adjust(left=0.07, right=0.88, bottom=0.55 / height, top=1 - 0.75 / height, hspace=0.45,
                        wspace=0.12)
    if sc is not None:
        cax = fig.add_axes([0.9, 0.55 / height + 0.05, 0.015, 1 - 1.3 / height - 0.1])
        cb = fig.colorbar(sc, cax=cax)
        cb.set_label(f"gap to best known (clipped at {100 * GAP_CLIP:.0f}%)", fontsize=8)
        cb.ax.yaxis.set_major_formatter(P._pct)
        cb.ax.tick_params(labelsize=7)
    return P._save(plt, fig, path, adjust=False)


def section(fam: str, idx: np.ndarray, runs, pi, feats: dict[str, dict[str, float]], st, plots_dir: Path,
            plots: list[Path]) -> list[Block]:
    """The report's footprint block of one family ([] without features or with < 3 instances)."""
    hashes = sorted(set(runs["instance_hash"][idx].tolist()))
    labels = P.ordered(set(runs["label"][idx].tolist()), st)
    coords, share, hs, gaps = footprints(fam, hashes, labels, pi, feats)
    if len(hs) < 3:
        return []
    files = plot(fam, coords, share, gaps, plots_dir / f"{fam}_footprints.png")
    plots += files
    loadings = ", ".join(FEATURES[fam])
    return [Block("h3", f"{fam} — instance space and footprints"),
            Block("p", f"{len(hs)} instances placed by PCA of their standardised features ({loadings}); per solver "
                       f"configuration, the median gap over seeds as colour and its footprint (instances within "
                       f"{100 * FOOTPRINT_GAP:g}% of the best known) ringed. Method: docs/adversary.md."),
            Block("img", f"plots/{files[0].name}", head=[f"{fam}: footprints in the instance space"])]
