"""Quality of the learned policies (issues 7 and 8) on held-out instances, through the runner.

    python bench/learned_quality.py {placement,mapping,all} [--quick] [--out DIR] [--write-docs]

1. generates the held-out instances into ``DIR`` (default ``runs/learned-quality/``) with the
   generators (``edgebench.instances.generators.generate``, written with ``io.write_json``);
2. copies the suite files of ``bench/suites/`` next to them (``DIR/learned-*.toml``; their
   ``dir = ...`` entries are relative to the suite file) and runs them with the benchmark
   runner into ONE store, ``DIR/results.sqlite`` (resumable: a rerun reuses every finished
   run, keyed by instance hash, solver, parameters, seed and time limit);
3. renders the tables from the store (gaps exactly as the runner computes them, against the
   store's best known values, proven optimal by the exact models where they close) into
   ``DIR/quality.md`` and ``DIR/quality.json``, with plots (``DIR/*.png``); ``--write-docs``
   copies the tables into ``docs/learned-quality.md`` (between markers) and the plots into
   ``docs/img/``.

Placement (TapFinger): presets synthetic-3 and hetero-6, variants multi and single,
``num_tasks = 24``, held-out generator seeds 10^9 + k (k < 8; the TapFinger training draws its
seeds below 10^9 and evaluates on these), plus the 192-task synthetic-3 episode (seed 10^9,
multi) without ``--quick``. Mapping (CES-PPO): preset thesis, ``task_nodes = n`` for n = 3..8,
30 held-out seeds each, generator seed ``3*10^9 + 100 n + k`` — above 2^31 - 1, hence never one
of the training seeds (drawn in [0, 2^31 - 1)) nor a training-evaluation seed (10^9 + i).
The definitions are in docs/learned-quality.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import sys
import time
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SUITES = Path(__file__).resolve().parent / "suites"
DEFAULT_OUT = ROOT / "runs" / "learned-quality"
DOC = ROOT / "docs" / "learned-quality.md"
DOC_IMG = ROOT / "docs" / "img"

# ---- placement --------------------------------------------------------------------------------
PLACEMENT_SEED_BASE = 10**9
PLACEMENT_PRESETS = ("synthetic-3", "hetero-6")
PLACEMENT_VARIANTS = ("multi", "single")
PLACEMENT_TASKS = 24
LARGE_TASKS = 192
#: MAPPO-fine-tuned policies (the paper's method) and, beside them, the imitation-only ones (-bc)
LEARNED_P = ("tapfinger", "tapfinger-nograph", "tapfinger-nopointer", "tapfinger-bc", "tapfinger-nograph-bc",
             "tapfinger-nopointer-bc")
#: the baselines of the TapFinger paper
PAPER_BASELINES = ("optimus", "tiresias")
#: every placement baseline (heuristic) of the suite
BASELINES_P = ("optimus", "optimus-np", "tiresias", "tiresias-np", "min", "placement-fifo", "random")
EXACT_P = "placement-milp"
PLACEMENT_ORDER = LEARNED_P + BASELINES_P + (EXACT_P,)
#: (preset, variant) -> (reference, required reduction of the mean completion time, text)
PLACEMENT_TARGETS = {
    ("synthetic-3", "multi"): ("optimus", 0.25, "multi-task TapFinger >= 25 % below Optimus on synthetic-3"),
    ("synthetic-3", "single"): ("optimus", 0.15, "single-task TapFinger >= 15 % below Optimus on synthetic-3"),
    ("hetero-6", "multi"): ("paper", 0.40,
                            "multi-task TapFinger >= 40 % below the best baseline (of the paper's: Optimus, "
                            "Tiresias) on hetero-6"),
}
#: cells where the same reduction is also checked against the best baseline of the whole suite
#: (Optimus-np, Tiresias-np, ... are this suite's additions), with whether it is reachable at all
ALL_BASELINE_CHECK = {("hetero-6", "multi"): 0.40}

# ---- mapping ----------------------------------------------------------------------------------
MAPPING_SEED_BASE = 3 * 10**9
MAPPING_SIZES = (3, 4, 5, 6, 7, 8)
MAPPING_SEEDS = 30
LEARNED_M = ("ces-ppo", "ces-ppo-s16", "ces-ppo-noheur", "ppo-balance")
#: the policies the issue's targets are checked for: the method (greedy decoding) and, reported
#: apart, the same checkpoint decoded as the best of 16 seeded samples + greedy (``samples=16``)
TARGET_SUBJECTS_M = ("ces-ppo", "ces-ppo-s16")
BASELINES_M = ("flexitask", "smart", "random", "greedy-bw")
EXACT_M = "mapping-exact"
PARETO = "mapping-pareto"
MAPPING_ORDER = LEARNED_M + BASELINES_M + (EXACT_M,)
#: CES-PPO's composite must reach these at every size
COMPOSITE_RIVALS = ("flexitask", "smart", "random")
#: ... and its D_BW must be the best of these (the thesis's comparison; greedy-bw maximises D_BW
#: by an LP and is shown for reference)
DBW_RIVALS = ("flexitask", "smart", "random", "ppo-balance")
GAP_TARGET = 0.03
PARETO_POINTS_ORDER = ("ces-ppo", "ces-ppo-noheur", "ppo-balance", "flexitask", "smart", "random")

QUICK_SEEDS = 2
TOL = 1e-9


def say(msg: str) -> None:
    print(f"[learned-quality {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ==============================================================================================
# instances
# ==============================================================================================


def placement_seed(k: int) -> int:
    return PLACEMENT_SEED_BASE + k


def mapping_seed(n: int, k: int) -> int:
    return MAPPING_SEED_BASE + 100 * n + k


def _write_folder(folder: Path, instances: list) -> None:
    """Write ``instances`` into ``folder`` (``<id>.json``; a file with the same content is left
    alone), removing any other instance file there: a folder holds exactly the instances of the
    current invocation."""
    from edgebench.instances import io

    folder.mkdir(parents=True, exist_ok=True)
    want = {f"{inst.id}.json": inst for inst in instances}
    for p in folder.iterdir():
        if p.is_file() and (p.name.endswith(".json") or p.name.endswith(".json.gz")) and p.name not in want:
            p.unlink()
    for name, inst in want.items():
        path = folder / name
        if not path.exists() or io.content_hash(io.load_instance(path)) != io.content_hash(inst):
            io.write_json(path, inst)


def gen_placement(out: Path, presets, variants, seeds: int, large: bool) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """Instance hash -> {preset, variant, k, tasks} for every generated placement instance, and
    the folders written (relative to ``out``)."""
    from edgebench.instances.generators import generate

    cells: dict[str, dict[str, Any]] = {}
    dirs: set[str] = set()
    for preset in presets:
        for variant in variants:
            insts = [generate("placement", preset, seed=placement_seed(k), num_tasks=PLACEMENT_TASKS,
                              variant=variant) for k in range(seeds)]
            _write_folder(out / "placement" / f"{preset}-{variant}", insts)
            dirs.add(f"placement/{preset}-{variant}")
            for k, inst in enumerate(insts):
                cells[_hash(inst)] = {"preset": preset, "variant": variant, "k": k, "tasks": PLACEMENT_TASKS}
    if large:
        inst = generate("placement", "synthetic-3", seed=placement_seed(0), num_tasks=LARGE_TASKS, variant="multi")
        _write_folder(out / "placement" / f"synthetic-3-multi-{LARGE_TASKS}", [inst])
        dirs.add(f"placement/synthetic-3-multi-{LARGE_TASKS}")
        cells[_hash(inst)] = {"preset": "synthetic-3", "variant": "multi", "k": 0, "tasks": LARGE_TASKS}
    return cells, dirs


def gen_mapping(out: Path, sizes, seeds: int, pareto: bool) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """Instance hash -> {size, k} for every generated mapping instance, and the folders written;
    with ``pareto`` the first instance of each size is copied into ``mapping/pareto``."""
    from edgebench.instances.generators import generate

    cells: dict[str, dict[str, Any]] = {}
    dirs: set[str] = set()
    firsts = []
    for n in sizes:
        insts = [generate("mapping", "thesis", seed=mapping_seed(n, k), task_nodes=n) for k in range(seeds)]
        for k, inst in enumerate(insts):
            cells[_hash(inst)] = {"size": n, "k": k}
        _write_folder(out / "mapping" / f"size-{n}", insts)
        dirs.add(f"mapping/size-{n}")
        firsts.append(insts[0])
    if pareto:
        _write_folder(out / "mapping" / "pareto", firsts)
        dirs.add("mapping/pareto")
    return cells, dirs


def _hash(inst) -> str:
    from edgebench.instances import io

    return io.content_hash(inst)


# ==============================================================================================
# suites and the runner
# ==============================================================================================


def prepare_suite(template: str, out: Path, *, dirs: set[str], solvers: list[str] | None = None) -> Path:
    """Copy ``bench/suites/<template>`` into ``out`` keeping the instance folders in ``dirs``
    (generated by this invocation) and the solvers that are registered (and in ``solvers`` when
    given; the exact models are always kept). Returns the copy."""
    from edgebench import registry
    from edgebench.instances.io import write_text_atomic
    from edgebench.runner.suite import suite_from_dict, suite_to_toml

    src = SUITES / template
    data = tomllib.loads(src.read_text(encoding="utf-8"))
    data["instances"] = [e for e in data["instances"] if "dir" not in e or e["dir"] in dirs]
    known = {s.name for s in registry.solvers()}
    kept = []
    for e in data["solvers"]:
        name = e.get("name")
        if name is not None and name not in known:
            say(f"note: solver {name!r} is not registered; left out of {template}")
            continue
        if solvers is not None and name is not None and name not in solvers and name not in (EXACT_P, EXACT_M):
            continue
        kept.append(e)
    data["solvers"] = kept
    suite = suite_from_dict(data, file=str(src))
    dest = out / template
    write_text_atomic(dest, f"# generated by bench/learned_quality.py from bench/suites/{template}\n"
                      + suite_to_toml(suite))
    return dest


def run_suite(path: Path, store: Path, workers: int, family: str) -> list[str]:
    """Plan and run one suite file into ``store`` (finished runs are reused). Returns the keys."""
    from edgebench.runner.execute import estimate_seconds, run_sweep
    from edgebench.runner.store import Store
    from edgebench.runner.suite import load_suite, plan

    suite = load_suite(path)
    p = plan(suite, file=str(path), base_dir=path.parent)
    have: set[str] = set()
    if store.exists():
        with Store.open(store, create=False) as st:
            have = st.keys()
    todo = [r for r in p.runs if r.key not in have]
    say(f"{suite.name}: {len(p.runs)} runs planned, {len(p.runs) - len(todo)} already in the store, "
        f"{len(todo)} to run (time-limit budget {estimate_seconds(todo, workers):.0f} s on {workers} worker(s))")
    for note in p.notes:
        say(note)
    if not todo:
        return [r.key for r in p.runs]  # nothing to run: no sweep record
    sample_load(family)
    res = run_sweep(p, store, workers=workers, progress=True, argv=[sys.executable, *sys.argv])
    sample_load(family)
    say(f"{suite.name}: done {res.done} in {res.seconds:.0f} s; statuses "
        + (", ".join(f"{k} {v}" for k, v in sorted(res.statuses.items())) or "-"))
    return [r.key for r in p.runs]


CHECKPOINTS = ROOT / "learned" / "checkpoints"
#: checkpoint files of each family's learned solvers (by file-name prefix)
CHECKPOINT_PREFIX = {"placement": ("tapfinger",), "mapping": ("ces-ppo",)}


def checkpoint_fingerprint(family: str) -> dict[str, str]:
    """File name -> first 12 hex digits of the sha256 of every shipped checkpoint of the family."""
    import hashlib

    out = {}
    if CHECKPOINTS.is_dir():
        for p in sorted(CHECKPOINTS.iterdir()):
            if p.is_file() and p.name.startswith(CHECKPOINT_PREFIX[family]):
                out[p.name] = hashlib.sha256(p.read_bytes()).hexdigest()[:12]
    return out


def refresh_store(store: Path, family: str, fingerprint: dict[str, str]) -> None:
    """Run keys do not depend on the checkpoint files, so a store made with other checkpoints
    would hand back stale runs of the learned solvers. When the family's checkpoints differ from
    those recorded in ``DIR/checkpoints.json``, the store is rebuilt without that family's
    learned runs (every other run, with its solution, is copied with ``Store.add_runs_bulk``,
    which rebuilds the best-known table), so that only the learned runs run again."""
    from edgebench.instances.io import read_json, write_text_atomic
    from edgebench.runner.store import COLUMN_NAMES, Store

    rec_path = store.parent / "checkpoints.json"
    rec = read_json(rec_path) if rec_path.exists() else {}  # the one JSON reader (limits, duplicate keys)
    if store.exists() and rec.get(family) != fingerprint:
        with Store.open(store, create=False) as st:
            stale = st.conn.execute("SELECT COUNT(*) FROM runs WHERE kind='learned' AND family=?",
                                    (family,)).fetchone()[0]
            if stale:
                say(f"{family}: the checkpoints changed since the stored runs; dropping {stale} learned runs")
                rows = [r for r in st.runs(COLUMN_NAMES) if not (r["kind"] == "learned" and r["family"] == family)]
                envs = st.envs()
        if stale:
            tmp = store.with_name(store.name + ".rebuild")
            for q in (tmp, Path(str(tmp) + "-wal"), Path(str(tmp) + "-shm")):
                q.unlink(missing_ok=True)
            with Store.open(tmp, create=True) as new:
                new.add_runs_bulk(rows, envs)
            for q in (Path(str(store) + "-wal"), Path(str(store) + "-shm")):
                q.unlink(missing_ok=True)
            os.replace(tmp, store)
    rec[family] = fingerprint
    write_text_atomic(rec_path, json.dumps(rec, indent=1, sort_keys=True))


def load_runs(store: Path, keys: list[str]) -> list[dict[str, Any]]:
    """The planned runs from the store, with the runner's gaps (``report.load``): one dict per
    run (label, solver, instance hash, status, ok, objectives, gap, bound_gap, best known / bound,
    optimal, pareto)."""
    from edgebench.runner.report import load
    from edgebench.runner.store import Store

    with Store.open(store, create=False) as st:
        data = load(st, keys)
    r = data.runs
    out = []
    for i in range(len(r)):
        h = r["instance_hash"][i]
        obj = r["objectives"][i]
        out.append({
            "key": r["key"][i], "label": r["label"][i], "solver": r["solver"][i], "instance_hash": h,
            "instance_id": r["instance_id"][i], "status": r["status"][i], "ok": bool(r["ok"][i]),
            "objectives": json.loads(obj) if obj else {}, "primary_value": _f(r["primary_value"][i]),
            "gap": _f(r["gap"][i]), "bound_gap": _f(r["bound_gap"][i]), "best_known": _f(r["best_known"][i]),
            "best_bound": _f(r["best_bound"][i]), "optimal": bool((data.best.get(h) or {}).get("optimal")),
            "runtime": _f(r["runtime"][i]), "pareto": json.loads(r["pareto"][i]) if r["pareto"][i] else None,
            "message": r["message"][i],
        })
    return out


def _f(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


# ==============================================================================================
# numbers
# ==============================================================================================


def _mean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x is not None]
    return float(np.mean(xs)) if xs else None


def _pct(a: float | None, b: float | None) -> float | None:
    """(a - b) / b in percent (negative: a is below b)."""
    if a is None or b is None or b == 0:
        return None
    return 100.0 * (a - b) / b


def _fmt(x: float | None, nd: int = 3, pct: bool = False, sign: bool = False) -> str:
    if x is None:
        return "—"
    s = f"{x:+.{nd}f}" if sign else f"{x:.{nd}f}"
    return s + (" %" if pct else "")


@dataclass
class SolverStats:
    runs: int = 0
    ok: int = 0
    values: dict[str, list[float]] = field(default_factory=dict)
    gaps: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    runtime: list[float] = field(default_factory=list)
    first_error: str | None = None

    def add(self, run: dict[str, Any], metrics: tuple[str, ...]) -> None:
        self.runs += 1
        self.statuses[run["status"]] = self.statuses.get(run["status"], 0) + 1
        if run["runtime"] is not None:
            self.runtime.append(run["runtime"])
        if not run["ok"]:
            if self.first_error is None and run.get("message"):
                msg = " ".join(str(run["message"]).split())
                self.first_error = msg.split(" at /")[0][:200]  # without the file path of the raise
            return
        self.ok += 1
        for m in metrics:
            v = run["objectives"].get(m)
            if v is not None:
                self.values.setdefault(m, []).append(float(v))
        if run["gap"] is not None:
            self.gaps.append(run["gap"])

    def mean(self, metric: str) -> float | None:
        return _mean(self.values.get(metric, []))

    def as_dict(self, metrics: tuple[str, ...]) -> dict[str, Any]:
        return {"runs": self.runs, "ok": self.ok, "statuses": dict(self.statuses),
                **{m: self.mean(m) for m in metrics},
                "mean_gap": _mean(self.gaps), "max_gap": max(self.gaps) if self.gaps else None,
                "mean_runtime": _mean(self.runtime), "first_error": self.first_error}


def _order(labels, order) -> list[str]:
    return [x for x in order if x in labels] + sorted(x for x in labels if x not in order)


# ==============================================================================================
# placement tables
# ==============================================================================================

P_METRICS = ("mean_completion_time",)


def placement_tables(runs: list[dict[str, Any]], cells: dict[str, dict[str, Any]]) -> dict[str, Any]:
    groups: dict[tuple[str, str], dict[str, SolverStats]] = {}
    inst: dict[tuple[str, str], set[str]] = {}
    large: dict[str, SolverStats] = {}
    large_runs = []
    for r in runs:
        c = cells.get(r["instance_hash"])
        if c is None:
            continue
        if c["tasks"] != PLACEMENT_TASKS:
            large.setdefault(r["label"], SolverStats()).add(r, P_METRICS)
            large_runs.append(r)
            continue
        key = (c["preset"], c["variant"])
        groups.setdefault(key, {}).setdefault(r["label"], SolverStats()).add(r, P_METRICS)
        inst.setdefault(key, set()).add(r["instance_hash"])
    out: dict[str, Any] = {"cells": [], "large": None}
    optimal = {r["instance_hash"] for r in runs if r["optimal"]}
    for preset in PLACEMENT_PRESETS:
        for variant in PLACEMENT_VARIANTS:
            key = (preset, variant)
            if key not in groups:
                continue
            g = groups[key]
            ct = {lb: s.mean("mean_completion_time") for lb, s in g.items()}
            complete = {lb for lb, s in g.items() if s.ok == s.runs and s.runs > 0}
            paper = {b: ct[b] for b in PAPER_BASELINES if b in complete and ct.get(b) is not None}
            allb = {b: ct[b] for b in BASELINES_P if b in complete and ct.get(b) is not None}
            best_paper = min(paper, key=paper.get) if paper else None
            best_all = min(allb, key=allb.get) if allb else None
            rows = []
            for lb in _order(g, PLACEMENT_ORDER):
                s = g[lb]
                v = ct[lb] if lb in complete else None
                rows.append({"solver": lb, **s.as_dict(P_METRICS),
                             "vs_optimus_pct": _pct(v, ct.get("optimus")) if "optimus" in complete else None,
                             "vs_best_paper_pct": _pct(v, paper.get(best_paper)) if best_paper else None,
                             "vs_best_baseline_pct": _pct(v, allb.get(best_all)) if best_all else None})
            cell = {"preset": preset, "variant": variant, "instances": len(inst[key]),
                    "optimal_instances": len(inst[key] & optimal), "best_paper_baseline": best_paper,
                    "best_baseline": best_all, "rows": rows, "targets": []}
            tf = next((r for r in rows if r["solver"] == "tapfinger"), None)
            if key in PLACEMENT_TARGETS and tf is not None:
                ref, need, text = PLACEMENT_TARGETS[key]
                got = {"optimus": tf["vs_optimus_pct"], "paper": tf["vs_best_paper_pct"]}.get(ref,
                                                                                           tf["vs_best_baseline_pct"])
                cell["targets"].append({"target": text, "value_pct": got,
                                        "met": got is not None and got <= -100.0 * need + TOL})
            if key in ALL_BASELINE_CHECK and tf is not None and best_all is not None:
                need = ALL_BASELINE_CHECK[key]
                ex = next((r for r in rows if r["solver"] == EXACT_P), None)
                want = (1.0 - need) * ct[best_all]
                opt = ex["mean_completion_time"] if ex is not None and ex["ok"] == ex["runs"] else None
                detail = f"required mean CT {want:.3f} = {100 * (1 - need):g} % of {best_all} {ct[best_all]:.3f}"
                if opt is not None and cell["optimal_instances"] == len(inst[key]):
                    detail += (f"; the proven fixed-allocation optimum is {opt:.3f}"
                               + (" — below it, so no fixed-allocation policy (TapFinger's decisions are fixed "
                                  "allocations) can reach it" if want < opt - TOL else ""))
                got = tf["vs_best_baseline_pct"]
                cell["targets"].append({"target": f"(also) >= {100 * need:g} % below the best baseline of the "
                                                  f"whole suite ({best_all})", "value_pct": got,
                                        "met": got is not None and got <= -100.0 * need + TOL, "detail": detail})
            if tf is not None and tf["mean_completion_time"] is not None and tf["ok"] == tf["runs"]:
                for ab in ("tapfinger-nograph", "tapfinger-nopointer"):
                    a = next((r for r in rows if r["solver"] == ab), None)
                    if a is None:
                        continue
                    text = f"ablation {ab} worse than tapfinger"
                    if a["ok"] < a["runs"] or a["mean_completion_time"] is None:
                        # no checkpoint that fits (an error) or failed runs: nothing to compare
                        st = ", ".join(f"{k} {v}" for k, v in sorted(a["statuses"].items()))
                        cell["targets"].append({"target": text, "value_pct": None, "met": None,
                                                "detail": f"runs: {st}" + (f"; {a['first_error']}"
                                                                            if a.get("first_error") else "")})
                        continue
                    d = _pct(a["mean_completion_time"], tf["mean_completion_time"])
                    cell["targets"].append({"target": text, "value_pct": d,
                                            "met": a["mean_completion_time"] > tf["mean_completion_time"] + TOL})
            out["cells"].append(cell)
    if large:
        rows = []
        opt_ct = next((r["best_known"] / LARGE_TASKS for r in large_runs
                       if r["optimal"] and r["best_known"] is not None), None)
        bound = next((r["best_bound"] for r in large_runs if r["best_bound"] is not None), None)
        ref = large.get("optimus")
        ref_ct = ref.mean("mean_completion_time") if ref is not None and ref.ok == ref.runs else None
        for lb in _order(large, PLACEMENT_ORDER):
            s = large[lb]
            v = s.mean("mean_completion_time") if s.ok == s.runs else None
            rr = next(x for x in large_runs if x["label"] == lb)
            rows.append({"solver": lb, **s.as_dict(P_METRICS), "status": rr["status"],
                         "vs_optimus_pct": _pct(v, ref_ct),
                         # gap to the optimum where proven, else to the best proven bound
                         "bound_gap": rr["gap"] if rr["optimal"] else rr["bound_gap"]})
        out["large"] = {"tasks": LARGE_TASKS, "bound_mean_ct": bound / LARGE_TASKS if bound is not None else None,
                        "optimal_mean_ct": opt_ct, "rows": rows}
    return out


def placement_markdown(t: dict[str, Any]) -> str:
    lines = []
    for cell in t["cells"]:
        lines.append(f"#### {cell['preset']}, {cell['variant']}-task ({cell['instances']} held-out instances, "
                     f"best known proven optimal on {cell['optimal_instances']})")
        lines.append("")
        lines.append(f"Best paper baseline: {cell['best_paper_baseline'] or '—'}; best baseline of all: "
                     f"{cell['best_baseline'] or '—'}.")
        lines.append("")
        lines.append("| solver | ok / runs | mean CT (steps) | vs Optimus | vs best paper baseline | "
                     "vs best baseline | gap to optimum (mean) | gap (max) |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for r in cell["rows"]:
            lines.append(_table_row(r, [_fmt(r["mean_completion_time"]), _fmt(r["vs_optimus_pct"], 1, True, True),
                                        _fmt(r["vs_best_paper_pct"], 1, True, True),
                                        _fmt(r["vs_best_baseline_pct"], 1, True, True)], gap_digits=1))
        lines.append("")
        for tg in cell["targets"]:
            if tg["met"] is None:
                lines.append(f"* target — {tg['target']}: **not measured** ({tg.get('detail', '')})")
            else:
                lines.append(f"* target — {tg['target']}: **{'met' if tg['met'] else 'not met'}** "
                             f"({_fmt(tg['value_pct'], 1, True, True)}"
                             + (f"; {tg['detail']})" if tg.get("detail") else ")"))
        if cell["targets"]:
            lines.append("")
    lg = t.get("large")
    if lg:
        lines.append(f"#### synthetic-3, multi-task, {lg['tasks']} tasks (seed 10^9)")
        lines.append("")
        b = lg["optimal_mean_ct"] if lg["optimal_mean_ct"] is not None else lg["bound_mean_ct"]
        what = "optimum" if lg["optimal_mean_ct"] is not None else "best proven bound"
        lines.append(f"Exact model's {what}: mean CT {_fmt(b)} steps.")
        lines.append("")
        lines.append(f"| solver | status | mean CT (steps) | vs Optimus | gap to the {what} |")
        lines.append("|---|---|---|---|---|")
        for r in lg["rows"]:
            lines.append(f"| {r['solver']} | {r['status']} | {_fmt(r['mean_completion_time'])} | "
                         f"{_fmt(r['vs_optimus_pct'], 1, True, True)} | "
                         f"{_fmt(None if r['bound_gap'] is None else 100 * r['bound_gap'], 1, True)} |")
        lines.append("")
    return "\n".join(lines)


# ==============================================================================================
# mapping tables
# ==============================================================================================

M_METRICS = ("composite", "D_BW", "L")


def mapping_tables(runs: list[dict[str, Any]], cells: dict[str, dict[str, Any]]) -> dict[str, Any]:
    by_size: dict[Any, dict[str, SolverStats]] = {}
    inst: dict[Any, set[str]] = {}
    optimal = {r["instance_hash"] for r in runs if r["optimal"]}
    for r in runs:
        c = cells.get(r["instance_hash"])
        if c is None or r["solver"] == PARETO:
            continue
        for key in (c["size"], "all"):
            by_size.setdefault(key, {}).setdefault(r["label"], SolverStats()).add(r, M_METRICS)
            inst.setdefault(key, set()).add(r["instance_hash"])
    rows_by = {}
    for key in [s for s in MAPPING_SIZES if s in by_size] + (["all"] if "all" in by_size else []):
        g = by_size[key]
        rows_by[key] = {"size": key, "instances": len(inst[key]), "optimal_instances": len(inst[key] & optimal),
                        "rows": [{"solver": lb, **g[lb].as_dict(M_METRICS)} for lb in _order(g, MAPPING_ORDER)]}
    targets = []
    sizes = [s for s in MAPPING_SIZES if s in rows_by]

    def val(key, solver, metric):
        row = next((r for r in rows_by[key]["rows"] if r["solver"] == solver), None)
        if row is None or row["ok"] < row["runs"]:
            return None  # a failed run: no comparable mean
        return row[metric]

    for subj in TARGET_SUBJECTS_M:
        if not sizes or not any(r["solver"] == subj for r in rows_by["all"]["rows"]):
            continue
        who = "CES-PPO" if subj == "ces-ppo" else f"CES-PPO ({subj})"
        for rival in COMPOSITE_RIVALS:
            if not any(r["solver"] == rival for r in rows_by["all"]["rows"]):
                continue
            fails = [s for s in sizes if val(s, subj, "composite") is None or val(s, rival, "composite") is None
                     or val(s, subj, "composite") < val(s, rival, "composite") - TOL]
            targets.append({"target": f"{who} composite >= {rival} at every size", "met": not fails,
                            "detail": "sizes failing: " + ", ".join(map(str, fails)) if fails else "all sizes"})
        rivals = [x for x in DBW_RIVALS if any(r["solver"] == x for r in rows_by["all"]["rows"])]
        fails = []
        for s in sizes:
            mine = val(s, subj, "D_BW")
            for x in rivals:
                other = val(s, x, "D_BW")
                if mine is None or other is None or mine < other - TOL:
                    fails.append(f"{s} ({x})")
        targets.append({"target": f"{who} D_BW the best of " + ", ".join(rivals) + " at every size",
                        "met": not fails, "detail": "failing: " + ", ".join(fails) if fails else "all sizes"})
        g = next(r for r in rows_by["all"]["rows"] if r["solver"] == subj)["mean_gap"]
        targets.append({"target": f"{who} mean gap to the exact composite optimum <= {100 * GAP_TARGET:g} %",
                        "met": g is not None and g <= GAP_TARGET + TOL,
                        "detail": f"mean gap {_fmt(None if g is None else 100 * g, 2, True)}"})
    if sizes and any(r["solver"] == "ces-ppo" for r in rows_by["all"]["rows"]):
        a, b = val("all", "ces-ppo", "composite"), val("all", "ces-ppo-noheur", "composite")
        if b is not None:
            targets.append({"target": "ablation without the heuristic reward (reported)", "met": None,
                            "detail": f"composite ces-ppo {_fmt(a)} vs ces-ppo-noheur {_fmt(b)} "
                                      f"({_fmt(_pct(b, a), 1, True, True)})"})
    return {"sizes": [rows_by[k] for k in rows_by], "targets": targets}


def _table_row(r: dict[str, Any], values: list[str], *, gap_digits: int, tail: Sequence[str] = ()) -> str:
    """One Markdown table row: solver, ok / runs (with the failing statuses), the values, mean
    and max gap to the optimum in %, then ``tail``."""
    bad = "" if r["ok"] == r["runs"] else " (" + ", ".join(f"{k} {v}" for k, v in sorted(r["statuses"].items())) + ")"
    gaps = [_fmt(None if r[k] is None else 100 * r[k], gap_digits, True) for k in ("mean_gap", "max_gap")]
    return "| " + " | ".join([r["solver"], f"{r['ok']} / {r['runs']}{bad}", *values, *gaps, *tail]) + " |"


def mapping_markdown(t: dict[str, Any]) -> str:
    lines = []
    for block in t["sizes"]:
        name = f"job size {block['size']}" if block["size"] != "all" else "all sizes"
        lines.append(f"#### {name} ({block['instances']} held-out instances, composite optimum proven on "
                     f"{block['optimal_instances']})")
        lines.append("")
        lines.append("| solver | ok / runs | composite | D_BW | L | gap to optimum (mean) | gap (max) | mean s |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for r in block["rows"]:
            lines.append(_table_row(r, [_fmt(r["composite"], 4), _fmt(r["D_BW"], 4), _fmt(r["L"], 4)],
                                    gap_digits=2, tail=[_fmt(r["mean_runtime"], 3)]))
        lines.append("")
    for tg in t["targets"]:
        verdict = "reported" if tg["met"] is None else ("met" if tg["met"] else "not met")
        lines.append(f"* target — {tg['target']}: **{verdict}** ({tg['detail']})")
    if t["targets"]:
        lines.append("")
    return "\n".join(lines)


# ==============================================================================================
# plots
# ==============================================================================================


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_placement(t: dict[str, Any], path: Path) -> Path | None:
    """Bars per solver of the mean completion time per (preset, variant), with the gap to the
    optimum written above each bar."""
    cells = t["cells"]
    if not cells:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(cells), figsize=(3.2 * len(cells) + 1, 4.2), dpi=100, squeeze=False)
    for ax, cell in zip(axes.flat, cells):
        rows = [r for r in cell["rows"] if r["mean_completion_time"] is not None and r["ok"] == r["runs"]]
        names = [r["solver"] for r in rows]
        vals = [r["mean_completion_time"] for r in rows]
        colors = ["tab:red" if n in LEARNED_P else ("tab:green" if n == EXACT_P else "tab:blue") for n in names]
        bars = ax.bar(range(len(vals)), vals, color=colors)
        for b, r in zip(bars, rows):
            if r["mean_gap"] is not None:
                ax.text(b.get_x() + b.get_width() / 2, b.get_height(), f"{100 * r['mean_gap']:.0f}%",
                        ha="center", va="bottom", fontsize=6)
        ax.set_xticks(range(len(vals)))
        ax.set_xticklabels(names, rotation=70, ha="right", fontsize=7)
        ax.set_title(f"{cell['preset']} {cell['variant']} ({cell['instances']} inst.)", fontsize=9)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(True, axis="y", alpha=0.3)
    axes.flat[0].set_ylabel("mean completion time (steps)", fontsize=8)
    fig.suptitle("placement: mean completion time (label: mean gap to the exact optimum)\n"
                 "red: learned, blue: baselines, green: exact (placement-milp)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_pareto(runs: list[dict[str, Any]], cells: dict[str, dict[str, Any]], path: Path) -> Path | None:
    """One panel per job size: the exact front (mapping-pareto's epsilon-constraint points) of the
    size's first instance, with each policy's point and the composite optimum."""
    fronts = {}
    for r in runs:
        c = cells.get(r["instance_hash"])
        if r["solver"] == PARETO and r["pareto"] and c is not None:
            fronts[c["size"]] = r
    if not fronts:
        return None
    plt = _plt()
    sizes = sorted(fronts)
    ncols = min(3, len(sizes))
    nrows = math.ceil(len(sizes) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.0 * ncols, 3.4 * nrows + 0.8), dpi=100, squeeze=False)
    markers = {"ces-ppo": ("o", "tab:red"), "ces-ppo-noheur": ("s", "tab:orange"), "ppo-balance": ("^", "tab:purple"),
               "flexitask": ("D", "tab:blue"), "smart": ("v", "tab:cyan"), "random": ("x", "tab:gray"),
               EXACT_M: ("*", "tab:green")}
    handles = {}
    for ax, n in zip(axes.flat, sizes):
        fr = fronts[n]
        h = fr["instance_hash"]
        pts = sorted((p["L"], p["D_BW"]) for p in fr["pareto"] if "L" in p and "D_BW" in p)
        if pts:
            xs, ys = zip(*pts)
            (ln,) = ax.step(xs, ys, where="post", color="black", linewidth=1.0)
            ax.plot(xs, ys, "o", color="black", markersize=3, markerfacecolor="white")
            handles.setdefault("exact Pareto front (ε-constraint)", ln)
        for r in runs:
            if r["instance_hash"] != h or not r["ok"] or r["solver"] not in markers:
                continue
            L, D = r["objectives"].get("L"), r["objectives"].get("D_BW")
            if L is None or D is None:
                continue
            m, col = markers[r["solver"]]
            lab = "composite optimum (mapping-exact)" if r["solver"] == EXACT_M else r["solver"]
            sc = ax.scatter([L], [D], marker=m, color=col, s=70 if r["solver"] == EXACT_M else 30, zorder=3,
                            alpha=0.85)
            handles.setdefault(lab, sc)
        ax.set_title(f"job size {n} ({fr['instance_id']})", fontsize=8)
        ax.set_xlabel("L (load imbalance, lower is better)", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(sizes):]:
        ax.set_visible(False)
    fig.supylabel("D_BW (bandwidth satisfaction, higher is better)", fontsize=9)
    order = ["exact Pareto front (ε-constraint)", "composite optimum (mapping-exact)", *PARETO_POINTS_ORDER]
    names = sorted(handles, key=lambda k: order.index(k) if k in order else len(order))
    fig.legend([handles[k] for k in names], names, fontsize=7, loc="lower center", ncol=4)
    fig.suptitle("CES-PPO and baselines against the exact Pareto front (thesis preset, one held-out instance "
                 "per job size)", fontsize=10)
    fig.tight_layout(rect=(0, 0.1 if nrows == 1 else 0.06, 1, 1))
    fig.savefig(path)
    plt.close(fig)
    return path


# ==============================================================================================
# output
# ==============================================================================================

BEGIN = "<!-- learned-quality:{} begin -->"
END = "<!-- learned-quality:{} end -->"


#: per family, 1-minute load averages sampled before and after every sweep of this invocation
#: that ran something
LOADS: dict[str, list[float]] = {}


def sample_load(family: str) -> None:
    try:
        LOADS.setdefault(family, []).append(os.getloadavg()[0])
    except OSError:
        pass


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_line(family: str, previous: str | None = None) -> str:
    """The host and its load while this invocation ran the family's sweeps; when every run came
    from the store, the line recorded by the invocation that ran them (``previous``)."""
    loads = LOADS.get(family)
    if not loads:
        return previous or (f"{platform.node()}, {os.cpu_count()} CPUs ({cpu_model()}); every run reused from "
                            "the store (load not sampled)")
    return (f"{platform.node()}, {os.cpu_count()} CPUs ({cpu_model()}), 1-min load average "
            f"{min(loads):.1f}-{max(loads):.1f} during the sweeps")


def section_text(family: str, body: str, command: str, date: str, machine: str, table: dict[str, Any]) -> str:
    ck = ", ".join(f"`{k}` ({v})" for k, v in sorted(table.get("checkpoints", {}).items())) or "none found"
    return (f"Command: `{command}` — rendered {date} on {machine}.\n"
            f"Checkpoints (sha256 prefix): {ck}.\n\n" + body)


def replace_section(text: str, family: str, content: str) -> str:
    b, e = BEGIN.format(family), END.format(family)
    block = f"{b}\n{content.rstrip()}\n{e}"
    if b in text and e in text:
        head, rest = text.split(b, 1)
        _, tail = rest.split(e, 1)
        return head + block + tail
    return text.rstrip() + "\n\n" + block + "\n"


def write_outputs(out: Path, sections: dict[str, str], tables: dict[str, Any], plots: dict[str, Path],
                  write_docs: bool, command: str) -> None:
    from edgebench.instances.io import write_text_atomic

    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    jpath = out / "quality.json"
    prev = json.loads(jpath.read_text(encoding="utf-8")) if jpath.exists() else {}
    machine = {fam: machine_line(fam, (prev.get(fam) or {}).get("machine")) for fam in sections}
    qpath = out / "quality.md"
    old = qpath.read_text(encoding="utf-8") if qpath.exists() else "# Learned policies: quality on held-out instances\n"
    for fam, body in sections.items():
        old = replace_section(old, fam, section_text(fam, body, command, date, machine[fam], tables[fam]))
    write_text_atomic(qpath, old)
    for fam, t in tables.items():
        prev[fam] = {"command": command, "date": date, "machine": machine[fam], **t}
    write_text_atomic(jpath, json.dumps(prev, indent=1, sort_keys=True, default=str))
    say(f"wrote {qpath} and {jpath}")
    if write_docs:
        text = DOC.read_text(encoding="utf-8") if DOC.exists() else "# Learned policies: quality\n"
        for fam, body in sections.items():
            text = replace_section(text, fam, section_text(fam, body, command, date, machine[fam], tables[fam]))
        write_text_atomic(DOC, text)
        DOC_IMG.mkdir(parents=True, exist_ok=True)
        for name, p in plots.items():
            shutil.copyfile(p, DOC_IMG / name)
        say(f"updated {DOC} and {', '.join(str(DOC_IMG / n) for n in plots)}")


# ==============================================================================================
# main
# ==============================================================================================


def _csv(text: str | None, cast=str) -> list | None:
    if text is None:
        return None
    return [cast(x.strip()) for x in text.split(",") if x.strip()]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="learned_quality.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("family", choices=("placement", "mapping", "all"))
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_SEEDS} seeds per cell, no 192-task episode")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="output folder (default runs/learned-quality/)")
    ap.add_argument("--write-docs", action="store_true",
                    help="copy the tables into docs/learned-quality.md and the plots into docs/img/")
    ap.add_argument("--workers", type=int, default=1, help="runner worker processes (default 1)")
    ap.add_argument("--seeds", type=int, default=None, help="instances per cell (default 8 placement / 30 mapping)")
    ap.add_argument("--presets", default=None, help="placement presets (comma list; default synthetic-3,hetero-6)")
    ap.add_argument("--variants", default=None, help="placement variants (default multi,single)")
    ap.add_argument("--sizes", default=None, help="mapping job sizes (default 3,4,5,6,7,8)")
    ap.add_argument("--solvers", default=None,
                    help="restrict the suites to these solvers (the exact models always run: they define the gaps)")
    ap.add_argument("--no-pareto", action="store_true", help="skip the Pareto fronts")
    ap.add_argument("--no-large", action="store_true", help="skip the 192-task placement episode")
    args = ap.parse_args(argv)
    if args.workers < 1:
        ap.error("--workers must be >= 1")
    if args.seeds is not None and args.seeds < 1:
        ap.error("--seeds must be >= 1")
    args.presets = _csv(args.presets) or list(PLACEMENT_PRESETS)
    args.variants = _csv(args.variants) or list(PLACEMENT_VARIANTS)
    args.sizes = _csv(args.sizes, int) or list(MAPPING_SIZES)
    for p in args.presets:
        if p not in PLACEMENT_PRESETS:
            ap.error(f"unknown preset {p!r} (choose from {', '.join(PLACEMENT_PRESETS)})")
    for v in args.variants:
        if v not in PLACEMENT_VARIANTS:
            ap.error(f"unknown variant {v!r}")
    for s in args.sizes:
        if s not in MAPPING_SIZES:
            ap.error(f"job size {s} outside the thesis sizes 3..8")
    args.solvers = _csv(args.solvers)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    store = out / "results.sqlite"
    command = "python bench/learned_quality.py " + " ".join(argv if argv is not None else sys.argv[1:])
    t0 = time.monotonic()
    do_p = args.family in ("placement", "all")
    do_m = args.family in ("mapping", "all")
    large = do_p and not args.quick and not args.no_large
    pareto = do_m and not args.no_pareto
    # 1. instances (and stale learned runs out of the store)
    fps, cells, dirs = {}, {}, {}
    if do_p:
        seeds = args.seeds or (QUICK_SEEDS if args.quick else 8)
        say(f"placement: generating {len(args.presets) * len(args.variants)} x {seeds} instances"
            + (f" + the {LARGE_TASKS}-task episode" if large else "") + f" into {out / 'placement'}")
        cells["placement"], dirs["placement"] = gen_placement(out, args.presets, args.variants, seeds, large)
        fps["placement"] = checkpoint_fingerprint("placement")
        refresh_store(store, "placement", fps["placement"])
    if do_m:
        seeds = args.seeds or (QUICK_SEEDS if args.quick else MAPPING_SEEDS)
        say(f"mapping: generating {len(args.sizes)} sizes x {seeds} instances into {out / 'mapping'}")
        cells["mapping"], dirs["mapping"] = gen_mapping(out, args.sizes, seeds, pareto)
        fps["mapping"] = checkpoint_fingerprint("mapping")
        refresh_store(store, "mapping", fps["mapping"])
    # 2. the sweeps (the long 192-task episode last)
    keys: dict[str, list[str]] = {"placement": [], "mapping": []}
    sweeps = []
    if do_p:
        sweeps.append(("placement", "learned-placement.toml", args.solvers))
    if do_m:
        sweeps.append(("mapping", "learned-mapping.toml", args.solvers))
    if pareto:
        sweeps.append(("mapping", "learned-pareto.toml", args.solvers and args.solvers + [PARETO]))
    if large:
        sweeps.append(("placement", "learned-placement-large.toml", args.solvers))
    for fam, template, solvers in sweeps:
        keys[fam] += run_suite(prepare_suite(template, out, dirs=dirs[fam], solvers=solvers), store, args.workers,
                               fam)
    for fam, fp in fps.items():
        if checkpoint_fingerprint(fam) != fp:
            say(f"warning: {fam} checkpoints changed during the sweeps; rerun the script to redo the learned runs")
    # 3. tables and plots
    sections, tables, plots = {}, {}, {}
    if do_p:
        t = placement_tables(load_runs(store, keys["placement"]), cells["placement"])
        t["checkpoints"] = fps["placement"]
        tables["placement"] = t
        sections["placement"] = placement_markdown(t)
        p = plot_placement(t, out / "learned-placement.png")
        if p is not None:
            plots["learned-placement.png"] = p
    if do_m:
        runs = load_runs(store, keys["mapping"])
        t = mapping_tables(runs, cells["mapping"])
        t["checkpoints"] = fps["mapping"]
        tables["mapping"] = t
        sections["mapping"] = mapping_markdown(t)
        if pareto:
            p = plot_pareto(runs, cells["mapping"], out / "ces-ppo-pareto.png")
            if p is not None:
                plots["ces-ppo-pareto.png"] = p
    write_outputs(out, sections, tables, plots, args.write_docs, command)
    for fam, text in sections.items():
        print(f"\n### {fam}\n\n{text}")
    say(f"finished in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
