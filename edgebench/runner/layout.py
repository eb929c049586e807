"""What the report shows, in which order: the blocks of ``report.md`` / ``report.html`` from
the tables that :mod:`.report` computed, with the plots that :mod:`.plots` draws.

Sections: a summary (store, runs, how to read the gaps) and "at a glance" (per instance set
the best configuration and the runner-up with their gaps); per family, per variant: the
summary table, the performance profiles (runtime; 1 + gap) and the gap against size; per
instance set: its leaderboard, its anytime plot and its instances (best known, bound, status,
files); the mapping Pareto fronts; best-known conflicts; environment; sweeps; files.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgebench.runner import footprint
from edgebench.runner import plots as P
from edgebench.runner import report as R
from edgebench.runner.page import Block, Bold, Code, Link, anchor


#: the "set" of instances that were run from files outside an instance set
NO_SET = "(instances outside a set)"


@dataclass
class Tables:
    summary: list[dict[str, Any]]
    leaderboard: list[dict[str, Any]]
    instances: list[dict[str, Any]]
    #: label -> kind as shown ("learned (bc)")
    kinds: dict[str, str] = field(default_factory=dict)


def _rel(path: Path | None, out: Path) -> str | None:
    if path is None:
        return None
    try:
        return Path(os.path.relpath(Path(path).resolve(), out.resolve())).as_posix()
    except ValueError:  # another drive (Windows)
        return Path(path).resolve().as_uri()


def _img(path: Path, caption: str) -> Block:
    return Block("img", f"plots/{path.name}", head=[caption])


def compose(data: R.Data, pi: R.PerInstance, t: Tables, out: Path, store_path: str
            ) -> tuple[list[Block], list[Path], list[Path]]:
    """(blocks, plot files (PNG and SVG), suite files)."""
    runs = data.runs
    plots_dir = out / "plots"
    st = P.styles({r["label"]: r["kind"] or "" for r in t.summary})
    plots: list[Path] = []
    blocks = [Block("h1", "edgebench benchmark report")]
    statuses = Counter(runs["status"].tolist())
    n_inst = len(set(runs["instance_hash"].tolist()))
    n_conf = len(set(zip(runs["family"].tolist(), runs["label"].tolist())))
    blocks.append(Block("p", ["Store ", Code(store_path), f" (format {data.meta.get('format_version', '?')}): ",
                              Bold(f"{len(runs)} runs"), f" on {n_inst} instances, {n_conf} solver configurations; "
                              "statuses: " + (", ".join(f"{k} {v}" for k, v in sorted(statuses.items())) or "none")
                              + "." + _startup_note(runs)]))
    blocks.append(Block("p", [Bold(R.GAP_BEST), " = (objective − best known) / |best known| in the objective's "
                              "improving direction; ", Bold(R.GAP_BOUND), " = the same against the best proven bound "
                              "(an optimality gap: 0 only where optimality is proven). Both over referee-feasible "
                              "runs. ", Bold("proven optimal"), " / ", Bold("closed"), " = share of runs that proved "
                              f"optimality; SGM time = shifted geometric mean of the runtime (shift {R.SHIFT:g} s); "
                              "wins = instances where the configuration's median feasible objective over seeds is "
                              "the best (ties count for each). Tables never mix variants (placement single- and "
                              "multi-task, different objectives). Conventions: ", Code("docs/runner.md"), "."]))
    blocks += _glance(t)
    fams = [f for f in R.FAMILIES if (runs["family"] == f).any()]
    fams += sorted(set(runs["family"].tolist()) - set(fams))
    for fam in fams:
        blocks.append(Block("h2", f"Family: {fam}", id=anchor("family", fam)))
        idx_f = np.flatnonzero(runs["family"] == fam)
        for variant in sorted(set(runs["variant"][idx_f].tolist())):
            idx = idx_f[runs["variant"][idx_f] == variant]
            blocks += _variant_section(fam, variant, idx, runs, pi, t, st, plots_dir, plots)
        for iset in sorted(set(runs["instance_set"][idx_f].tolist())):
            blocks += _set_section(fam, iset, idx_f[runs["instance_set"][idx_f] == iset], runs, t, st, out, plots)
        if fam == "mapping":
            blocks += _pareto_section(runs, idx_f, st, plots_dir, plots)
        blocks += footprint.section(fam, idx_f, runs, pi, data.features, st, plots_dir, plots)
    conflicts = [r for r in t.instances if r["conflict"]]
    if conflicts:
        blocks.append(Block("h2", "Bound conflicts", id="conflicts"))
        blocks.append(Block("p", [Bold(f"{len(conflicts)} bound conflicts"), ": a referee-verified objective beats a "
                                  "solver's claimed bound."]))
        blocks.append(Block("table", head=["set", "instance", "conflict"],
                            rows=[[r["instance_set"], r["instance_id"], r["conflict"]] for r in conflicts]))
    blocks += _environment(data)
    sweep_blocks, suites = _sweeps(data, out)
    return blocks + sweep_blocks, plots, suites


def _startup_note(runs) -> str:
    """A sentence on the runs' start-up (the hand-over of a run's task to its own process, to its
    solver's start: instance load and validation; not part of any runtime in the report); empty
    for runs that did not record it (stores written before it was measured)."""
    x = runs["startup"].astype(float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return ""
    return (f" Start-up of a run (from its task's hand-over to its process, to its solver's start: instance load "
            f"and validation; column startup of runs.csv, not counted in any runtime): median {np.median(x):.3f} s, "
            f"max {np.max(x):.3f} s.")


def _glance(t: Tables) -> list[Block]:
    rows = []
    by_set: dict[tuple, list[dict]] = {}
    for r in t.leaderboard:
        by_set.setdefault((r["family"], r["instance_set"], r["variant"]), []).append(r)
    for (fam, iset, variant), lb in by_set.items():
        first = lb[0]
        second = lb[1] if len(lb) > 1 else None
        rows.append([fam, Link(iset or NO_SET, "#" + anchor("set", fam, iset or "none")), variant, first["label"],
                     t.kinds.get(first["label"], first["kind"]), R.fmt_pct(first["mean_gap"]),
                     f"{100 * first['feasible_share']:.0f}%",
                     second["label"] if second else "–", R.fmt_pct(second["mean_gap"]) if second else "–"])
    if not rows:
        return []
    return [Block("h2", "At a glance", id="glance"),
            Block("p", "Per instance set, the configuration ranked first by its leaderboard (feasible share, then "
                       f"mean {R.GAP_BEST}, then runtime) and the runner-up."),
            Block("table", head=["family", "set", "variant", "best", "kind", f"{R.GAP_BEST} (mean)", "feasible",
                                 "runner-up", f"runner-up {R.GAP_BEST}"], rows=rows, sortable=True)]


def _variant_section(fam, variant, idx, runs, pi, t, st, plots_dir, plots) -> list[Block]:
    blocks = [Block("h3", f"{fam} — {variant}", id=anchor("variant", fam, variant), nav=f"all sets: {variant}")]
    head, body = R.summary_table([s for s in t.summary if s["family"] == fam and s["variant"] == variant], t.kinds)
    blocks.append(Block("table", head=head[2:], rows=[b[2:] for b in body], sortable=True))
    labels = P.ordered(set(runs["label"][idx].tolist()), st)
    hashes = sorted(set(runs["instance_hash"][idx].tolist()))
    name = R.safe_name(f"{fam}_{variant}")
    for metric, title, xlabel in (
            ("runtime", "performance profile, runtime", "τ = runtime / best runtime (log scale)"),
            ("gap", "performance profile, gap to best known", "τ = (1 + gap) / (1 + best gap) (log scale)")):
        m = R.profile_matrix(pi, fam, hashes, labels, metric)
        if m.size:
            taus, rho = R.performance_profile(m)
            files = P.profile(taus, rho, labels, st, f"{fam} ({variant}): {title}", xlabel,
                              plots_dir / f"{name}_profile_{metric}.png")
            plots += files
            blocks.append(_img(files[0], f"{fam} ({variant}): {title}, {len(hashes)} instances"))
    series = R.gap_by_size(runs, idx)
    if series:
        files = P.bands(series, P.ordered(series, st), st, f"{fam} ({variant}): gap to best known against size",
                        "instance size", R.GAP_BEST, plots_dir / f"{name}_gap_vs_size.png", dodge=0.006)
        plots += files
        blocks.append(_img(files[0], f"{fam} ({variant}): {R.GAP_BEST} against instance size (median and "
                                     "interquartile band over instances and seeds)"))
    else:
        blocks.append(Block("p", "No gap against size: no feasible run with a best known value."))
    return blocks


def _set_section(fam, iset, idx, runs, t, st, out, plots) -> list[Block]:
    blocks = [Block("h3", f"Set: {iset or NO_SET}", id=anchor("set", fam, iset or "none"))]
    lb = [r for r in t.leaderboard if r["family"] == fam and r["instance_set"] == iset]
    for variant in sorted({r["variant"] for r in lb}):
        rows = [r for r in lb if r["variant"] == variant]
        head, body = R.leaderboard_table(rows, t.kinds)
        blocks.append(Block("p", [Bold("Leaderboard"), f" ({variant}; {rows[0]['instances']} instances): ranked by "
                                  f"feasible share, then mean {R.GAP_BEST}, then runtime. Per-seed mean gap: the mean "
                                  f"gap of each seed, averaged, with a {round(100 * R.CONFIDENCE)}% Student-t "
                                  "interval over seeds."]))
        blocks.append(Block("table", head=head, rows=body, sortable=True))
    curves = R.anytime_curves(runs, idx)
    if curves:
        files = P.bands(curves, P.ordered(curves, st), st, f"{iset or NO_SET}: anytime, gap of the incumbent",
                        "seconds (log scale)", f"incumbent's {R.GAP_BEST}",
                        out / "plots" / f"{fam}_set_{R.safe_name(iset or 'none')}_anytime.png", logx=True, dodge=0.01)
        plots += files
        blocks.append(_img(files[0], f"{iset or NO_SET}: anytime — median and interquartile band of the incumbent's "
                                     f"{R.GAP_BEST} over the traced runs"))
    inst = [r for r in t.instances if r["family"] == fam and r["instance_set"] == iset]
    if inst:
        rows = []
        for r in inst:
            f, sol = _rel(r["file"], out), _rel(r["solution"], out)
            rows.append([Link(r["instance_id"], f) if f else r["instance_id"], R.fmt_num(r["size"]), r["sense"],
                         R.fmt_num(r["objective"], 10), r["obj_solver"], R.fmt_num(r["bound"], 10), r["bound_solver"],
                         r["status"] + (f" ({R.fmt_pct(r['open_gap'])})" if r["open_gap"] is not None else ""),
                         Link("solution", sol) if sol else "–"])
        blocks.append(Block("p", [Bold("Instances"), ": best known objective and best proven bound (store and "
                                  "manifest); closed = they agree; open = the gap between them in brackets."]))
        blocks.append(Block("table", head=["instance", "size", "sense", "best known", "by", "bound", "by", "status",
                                           "best-known solution"], rows=rows, sortable=True))
    return blocks


def _pareto_section(runs, idx, st, plots_dir, plots) -> list[Block]:
    has = idx[np.not_equal(runs["pareto"][idx], None)]
    with_front = sorted(set(zip(runs["instance_id"][has].tolist(), runs["instance_hash"][has].tolist())))
    if not with_front:
        return [Block("p", ["No Pareto fronts: no mapping run recorded ", Code('stats["pareto"]'), "."])]
    hashes = runs["instance_hash"][idx]
    panels = R.pareto_panels(runs, [(iid, idx[hashes == h]) for iid, h in with_front[:R.MAX_PARETO_PLOTS]])
    if not panels:
        return []
    files = P.pareto(panels, st, plots_dir / "mapping_pareto.png")
    plots += files
    blocks = [Block("h3", "mapping: Pareto fronts", id="mapping-pareto"), _img(files[0], "mapping Pareto fronts")]
    if len(with_front) > R.MAX_PARETO_PLOTS:
        blocks.append(Block("p", f"Pareto fronts of {len(with_front) - R.MAX_PARETO_PLOTS} more instances are in the "
                                 f"store (the first {R.MAX_PARETO_PLOTS} by instance id are plotted)."))
    return blocks


def _environment(data: R.Data) -> list[Block]:
    env_counts = Counter(data.runs["env"].tolist())
    rows = []
    for h, e in data.envs.items():
        if h in env_counts:
            host = e.get("host", {})
            vers = ", ".join(f"{k} {v}" for k, v in e.get("versions", {}).items() if v)
            rows.append([h, str(env_counts[h]), f"{host.get('node')} ({host.get('cpus')} cpus, {host.get('cpu')})",
                         host.get("platform") or "", vers,
                         ", ".join(f"{k}={v}" for k, v in (e.get("threads") or {}).items() if v)])
    return [Block("h2", "Environment", id="environment"),
            Block("table", head=["env", "runs", "host", "platform", "versions", "threads"], rows=rows)]


def _sweeps(data: R.Data, out: Path) -> tuple[list[Block], list[Path]]:
    if not data.sweeps:
        return [], []
    suites, rows = [], []
    for s in data.sweeps:
        path = None
        if s.get("suite_toml"):
            path = R.write_text(out / "suites" / f"sweep-{s['id']}-{R.safe_name(s.get('suite') or 'suite')}.toml",
                                 s["suite_toml"])
            suites.append(path)
        argv = " ".join(json.loads(s["argv"])) if s.get("argv") else ""
        rows.append([str(s["id"]), s.get("suite") or "", s.get("started") or "", s.get("finished") or "not finished",
                     str(s.get("planned")), str(s.get("skipped")), str(s.get("done")),
                     Link(f"suites/{path.name}", f"suites/{path.name}") if path else "", argv])
    return [Block("h2", "Sweeps and reproduction", id="sweeps"),
            Block("table", head=["sweep", "suite", "started", "finished", "planned", "skipped", "done", "suite file",
                                 "command"], rows=rows),
            Block("p", "To reproduce a table: run the sweep's suite file into a new store on comparable hardware (same "
                       "package versions as above), then build the report from it:"),
            Block("code", "edgebench run suites/sweep-<N>-<suite>.toml --db new.sqlite --workers <W>\n"
                          "edgebench report --db new.sqlite -o new-report")], suites


def files_section(parquet: bool) -> list[Block]:
    return [Block("h2", "Files", id="files"),
            Block("p", [Code("runs.csv"), " / ", Code("runs.parquet"), " (one row per run, gaps included), ",
                        Code("summary.csv"), " (the family and variant tables), ", Code("leaderboard.csv"),
                        " (every set's leaderboard), ", Code("bestknown.csv"), " (per instance), ",
                        Code("plots/*.png"), " and ", Code("plots/*.svg"), ", ", Code("suites/*.toml"), ". Text "
                        "cells of the CSV files that a spreadsheet would read as a formula start with ", Code("'"),
                        "." + ("" if parquet else " Parquet files were not written: pyarrow is not installed.")])]
