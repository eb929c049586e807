"""The docs site's results page, generated at build time from a results export
(:mod:`.results`; ``scripts/mkdocs_hooks.py`` calls :func:`render` on the newest
``results/*/`` folder and puts the text into ``docs/results.md``).

Per family: one line saying which non-exact solver configuration is closest to optimal (the
lowest mean gap to the certified bound, among those with a feasible result on every run) and
by how much; a performance profile (Dolan-Moré, per-instance median over seeds of 1 + gap to
the best known; :func:`edgebench.runner.plots.profile`); a sortable table per instance set and
solver: runs, feasible share, gap to the certified bound and to the best known (mean over
instances and seeds with a 95 % Student-t interval, :func:`.results.mean_ci`), share within 1 %
of the best known, share proven optimal, runtime (shifted geometric mean, shift 10 s, as in the
report) and, for learned solvers, the training budget (algorithm and env steps of the shipped
checkpoint that fits the set, from the checkpoint sidecars). Then the versions that produced it
(suite, sets, checkpoints, commit), planned vs stored runs, run-hours and failures with reasons.
Text from the data is HTML-escaped; tables are HTML with ``class="sortable"`` (the report's
sorting script, :mod:`.page`, is added to the site by the hook).
"""

from __future__ import annotations

import html
import json
import math
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from edgebench.runner.report import FAMILIES, performance_profile, shifted_geomean
from edgebench.runner.results import METADATA_FILE, mean_ci, read_export

WITHIN = 0.01
EXACT_KINDS = ("exact",)


def newest_export(root: Path) -> Path | None:
    """The export folder under ``root`` (``results/``) with the newest ``created`` time."""
    best: tuple[str, Path] | None = None
    for meta in sorted(Path(root).glob(f"*/{METADATA_FILE}")):
        try:
            created = str(json.loads(meta.read_text()).get("created", ""))
        except (OSError, ValueError, AttributeError):
            continue
        if best is None or created > best[0]:
            best = (created, meta.parent)
    return None if best is None else best[1]


def _ok(r: dict[str, Any]) -> bool:
    return r["feasible"] == 1 and r["primary_value"] is not None and math.isfinite(r["primary_value"])


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.2f}%"


def _mci(values: list[float]) -> str:
    m, lo, hi = mean_ci(values)
    if m is None:
        return "–"
    return _pct(m) + ("" if lo is None else f" [{100 * lo:.2f}, {100 * hi:.2f}]")


def budget(solver: str, iset: str, variant: str, checkpoints: dict[str, list[dict[str, Any]]]) -> str:
    """The training budget of the shipped checkpoint a learned solver uses on a set, by the
    solvers' own order of preference (``learned.tapfinger.nearest_checkpoint``: the set's preset
    and variant, then the same preset, then the same variant; its layout check may still pick a
    later one) — or, for solvers whose checkpoints are not per preset, the default ones."""
    recs = checkpoints.get(solver) or []
    var = "single" if "single-task" in variant else "multi" if "multi-task" in variant else None
    if var is not None and any(c.get("variant") in ("single", "multi") for c in recs):
        def rank(c: dict[str, Any]) -> tuple:
            return (f"-{c.get('preset')}-" not in f"-{iset}-", c.get("variant") != var, str(c.get("file")))

        best = min(recs, key=rank)
        fit = [best]
        exact = rank(best)[:2] == (False, False)
    else:
        fit, exact = [c for c in recs if c.get("default")] or recs, True
    return "; ".join(f"{c.get('algorithm')}, {int(c.get('env_steps') or 0):,} env steps ({c.get('file')}"
                     f"{'' if exact else ', nearest'})" for c in fit)


def group_rows(rows: list[dict[str, Any]], checkpoints: dict[str, list]) -> list[dict[str, Any]]:
    """One entry per (family, set, variant, label) with the page's numbers."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["family"], r["instance_set"], r["variant"], r["label"])].append(r)
    out = []
    for (fam, iset, variant, label), rs in groups.items():
        ok = [r for r in rs if _ok(r)]
        gaps = [r["gap"] for r in ok if r["gap"] is not None]
        bgaps = [r["bound_gap"] for r in ok if r["bound_gap"] is not None]
        kind = rs[0]["kind"] or ""
        out.append({"family": fam, "set": iset, "variant": variant, "label": label, "kind": kind,
                    "solver": rs[0]["solver"], "runs": len(rs), "feasible": len(ok),
                    "instances": len({r["instance_hash"] for r in rs}), "gaps": gaps, "bgaps": bgaps,
                    "within": sum(g <= WITHIN for g in gaps), "proven": sum(r["proven"] == 1 for r in rs),
                    "runtime": shifted_geomean([r["runtime"] for r in rs if r["runtime"] is not None]),
                    "budget": budget(rs[0]["solver"], iset, variant, checkpoints) if kind == "learned" else ""})
    out.sort(key=lambda g: (g["set"], np.mean(g["bgaps"]) if g["bgaps"] else math.inf, g["label"]))
    return out


def headline(fam: str, groups: list[dict[str, Any]]) -> str:
    """Who is closest to optimal in a family, and by how much (HTML)."""
    by: dict[str, list[dict]] = defaultdict(list)
    for g in groups:
        by[g["label"]].append(g)
    sets = {g["set"] for g in groups}
    cands = []
    for label, gs in by.items():
        runs, feas = sum(g["runs"] for g in gs), sum(g["feasible"] for g in gs)
        b = [x for g in gs for x in g["bgaps"]]
        if gs[0]["kind"] not in EXACT_KINDS and feas == runs and {g["set"] for g in gs} == sets and b:
            cands.append((float(np.mean(b)), label, b, gs))
    if not cands:
        return f"<b>{html.escape(fam)}</b>: no non-exact solver has a feasible result on every run."
    _, label, b, gs = min(cands)
    within = sum(g["within"] for g in gs)
    n = sum(len(g["gaps"]) for g in gs)
    return (f"<b>{html.escape(fam)}</b>: closest to optimal (non-exact, feasible on every run) is "
            f"<b>{html.escape(label)}</b>, {_mci(b)} above the certified bound on average over {len(b)} runs "
            f"on {len(sets)} set(s); within 1 % of the best known on {within} of {n} runs.")


def _table(head: list[str], body: list[list[str]]) -> str:
    out = ['<table class="sortable"><thead><tr>' + "".join(f"<th>{html.escape(h)}</th>" for h in head)
           + "</tr></thead><tbody>"]
    for row in body:
        out.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
    return "\n".join(out) + "\n</tbody></table>\n"


def _profile_png(fam: str, rows: list[dict[str, Any]], folder: Path) -> Path | None:
    from edgebench.runner import plots

    per: dict[tuple[str, str], list[float]] = defaultdict(list)
    kinds: dict[str, str] = {}
    for r in rows:
        if r["family"] == fam:
            kinds[r["label"]] = r["kind"] or ""
            per[(r["instance_hash"], r["label"])].append(1.0 + r["gap"] if _ok(r) and r["gap"] is not None
                                                         else math.inf)
    insts = sorted({h for h, _ in per})
    st = plots.styles(kinds)
    labels = plots.ordered(kinds, st)
    if not insts or not labels:
        return None
    m = np.full((len(insts), len(labels)), np.inf)
    for (h, lb), vals in per.items():
        m[insts.index(h), labels.index(lb)] = float(np.median(vals))
    taus, rho = performance_profile(m)
    path = folder / f"profile-{fam}.png"
    plots.profile(taus, rho, labels, st, f"{fam}: performance profile ({len(insts)} instances)",
                  "τ (1 + gap to the best known, relative to the best solver on the instance)", path)
    return path


def render(folder: Path, img_prefix: str = "img/results") -> tuple[str, dict[str, bytes]]:
    """(Markdown of the results section, {site path: image bytes}) for an export folder."""
    meta, rows = read_export(folder)
    images: dict[str, bytes] = {}
    name = Path(folder).name
    md = []
    note = f" — {meta['note']}" if meta.get("note") else ""
    if "slice" in name.lower():  # an export named ...-slice is labelled as one, loudly
        md += ['!!! warning "A slice, not the full paper suite"',
               f"    This page shows the export `results/{name}/`: **{meta['runs']} runs**{note}. The full "
               "paper suite's export will replace this one.", ""]
    elif note:
        md.append(f"Note: {meta['note']}\n")
    md.append(f"Export `results/{name}/` (export format {meta['export_version']}), created {meta.get('created')}, "
              f"edgebench {meta.get('edgebench')}, commit `{meta.get('git')}`: {meta['runs']} runs stored of "
              f"{meta.get('planned')} planned, {meta.get('run_seconds', 0) / 3600:.3f} run-hours "
              f"(sum of the runs' runtimes; the time limits add up to {meta.get('time_limit_hours', 0):.2f} h).\n")
    md.append("Gaps: to the **certified bound** (the best proven bound of the instance: the sets' certified "
              "bounds and any bound proven in the runs) and to the **best known** value; mean over the "
              "referee-feasible runs (instances × seeds) with a 95 % Student-t interval. Click a column "
              "header to sort.\n")
    fams = [f for f in FAMILIES if any(r["family"] == f for r in rows)]
    groups = group_rows(rows, meta.get("checkpoints") or {})
    md.append("## Closest to optimal, per family\n")
    md += [f"- {headline(f, [g for g in groups if g['family'] == f])}" for f in fams]
    md.append("")
    with tempfile.TemporaryDirectory() as tmp:
        for fam in fams:
            md.append(f"## {fam.capitalize()}\n")
            png = _profile_png(fam, rows, Path(tmp))
            if png is not None:
                images[f"{img_prefix}/{png.name}"] = png.read_bytes()
                md.append(f"![{fam} performance profile]({img_prefix}/{png.name})\n")
            head = ["set", "solver", "kind", "training budget", "instances", "runs", "feasible",
                    "gap to bound [95% CI]", "gap to best known [95% CI]", "within 1%", "proven", "SGM time (s)"]
            body = [[g["set"], g["label"], g["kind"], g["budget"] or "–", str(g["instances"]), str(g["runs"]),
                     f"{100 * g['feasible'] / g['runs']:.0f}%", _mci(g["bgaps"]), _mci(g["gaps"]),
                     f"{g['within']}/{len(g['gaps'])}", f"{100 * g['proven'] / g['runs']:.0f}%",
                     "–" if g["runtime"] is None else f"{g['runtime']:.3g}"]
                    for g in groups if g["family"] == fam]
            md.append(_table(head, body))
    md += _provenance(meta)
    return "\n".join(md) + "\n", images


def _provenance(meta: dict[str, Any]) -> list[str]:
    md = ["## What produced it\n"]
    body = [[s.get("name") or "", str(s.get("sha256", ""))[:16], str(s.get("planned")), str(s.get("sweeps")),
             " ".join(a for a in (s.get("argv") or [])[2:] if not str(a).endswith(".sqlite"))]
            for s in meta.get("suites") or []]
    md += ["Suites (sha256 of the suite as run, after the command line's overrides):\n",
           _table(["suite", "sha256", "planned", "sweeps", "arguments"], body)]
    body = [[n, str(s.get("version")), str(s.get("recipe_version")), str(s.get("instances")),
             str(s.get("manifest_sha256", ""))[:16]] for n, s in sorted((meta.get("sets") or {}).items())]
    md += ["Instance sets:\n", _table(["set", "version", "recipe version", "instances", "manifest sha256"], body)]
    body = [[solver, str(c.get("file")), str(c.get("algorithm")), f"{int(c.get('env_steps') or 0):,}",
             str(c.get("sha256", ""))[:16]] for solver, cs in sorted((meta.get("checkpoints") or {}).items())
            for c in cs]
    if body:
        md += ["Checkpoints of the learned solvers (env steps: reinforcement-learning steps from the sidecars "
               "in `learned/checkpoints/*.json`; 0 = imitation only):\n",
               _table(["solver", "checkpoint", "algorithm", "env steps", "sha256"], body)]
    stale = {k: v["stale"] for k, v in (meta.get("learned_runs") or {}).items() if v.get("stale")}
    if stale:  # rows of a checkpoint that is not shipped any more: edgebench run --rerun stale
        md.append("**Stale learned rows** (run with a checkpoint file that is not the one shipped when this was "
                  "exported, or with none recorded): " + ", ".join(f"{k} {n}" for k, n in sorted(stale.items()))
                  + ".\n")
    fails = meta.get("failures") or {}
    md.append(f"Statuses: {', '.join(f'{k} {v}' for k, v in (meta.get('statuses') or {}).items())}.\n")
    if fails:
        body = [[st, str(f["runs"]), f"{reason} ({n})"] for st, f in fails.items() for reason, n in f["reasons"]]
        md += ["Failures, by status and reason (counted, not dropped):\n",
               _table(["status", "runs", "reason (runs)"], body)]
    return md
