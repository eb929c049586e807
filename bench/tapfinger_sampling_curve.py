"""The sampling decode's curve (issue 42; docs/learned-baselines.md, "Sampling decode"): for each
set of issue 42's "within 15 %" target, the set mean of the best of the first k episodes of
one suite row (``--label``: ``plan-bc-sample128``, the variant ``tapfinger-plan-bc`` at T = 1, the
default; ``mappo-sample128``, the paper's MAPPO policy ``tapfinger`` at T = 0.25) — the greedy
episode, then sampled ones; referee values from each run's ``sample_values`` — over the mean of
the set's best knowns *as shipped now*, for every k, as a Markdown table (k = 1, 9, 33, 129: the
greedy episode and 8, 32, 128 sampled; and the last k of the shortest run where it is none of
these) and as a figure.

The runs come from a results store of ``bench/suites/tapfinger-sampling.toml`` or from the
committed export of one (``--runs``, the default). A run made with a checkpoint that no longer
ships is named and the exit status is 1::

    OMP_NUM_THREADS=1 .venv/bin/edgebench run bench/suites/tapfinger-sampling.toml --db runs/tapfinger-sampling.sqlite
    .venv/bin/python bench/tapfinger_sampling_curve.py --db runs/tapfinger-sampling.sqlite --export RUNS.json
    .venv/bin/python bench/tapfinger_sampling_curve.py     # the committed export
    .venv/bin/python bench/tapfinger_sampling_curve.py --label mappo-sample128    # the MAPPO row's
    # --figure PATH (default per label: docs/img/tapfinger-sampling-curve[-mappo].png, and its .svg)
"""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
import sys
import zlib
from pathlib import Path
from statistics import mean

import numpy as np

from edgebench.instances import sets
from edgebench.instances.io import read_toml, write_text_atomic
from edgebench.learned.provenance import CHECKPOINT_DIR, sha256_file
from edgebench.runner.plots import curves

ROOT = Path(__file__).resolve().parents[1]
#: per suite label: (the solver row it plays, its committed export, its figure)
LABELS = {
    "plan-bc-sample128": ("tapfinger-plan-bc", ROOT / "bench" / "results" / "tapfinger-sampling-curve-s38.json",
                          ROOT / "docs" / "img" / "tapfinger-sampling-curve.png"),
    "mappo-sample128": ("tapfinger{temperature=0.25}",
                        ROOT / "bench" / "results" / "tapfinger-sampling-curve-mappo-s40.json",
                        ROOT / "docs" / "img" / "tapfinger-sampling-curve-mappo.png"),
}
TARGET = 1.15
#: the sets of issue 42's "within 15 %" target, in the sampling suite's order (the table's)
ORDER = tuple(i["set"] for i in read_toml(ROOT / "bench" / "suites" / "tapfinger-sampling.toml", "suite")["instances"])
#: the episodes counted in the table's columns (1: the greedy episode alone)
COLUMNS = (1, 9, 33, 129)


def runs_from_store(db: str) -> list[dict]:
    """The seed-0 runs of a store (set, instance, label, checkpoint sha256, sample_values)."""
    if not Path(db).is_file():
        raise OSError(f"{db}: no such results store")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        out = []
        for s, i, lab, st, ck, blob in con.execute("SELECT instance_set, instance_id, label, status, checkpoint, "
                                                   "solution FROM runs WHERE seed = 0"):
            values = None
            if st == "feasible" and blob is not None:
                values = json.loads(zlib.decompress(blob).decode("utf-8")).get("stats", {}).get("sample_values")
            out.append({"set": s, "instance": i, "label": lab, "status": st, "checkpoint_sha256": ck,
                        "sample_values": values})
        return out
    finally:
        con.close()


def best_of_first(values: list) -> np.ndarray:
    """The best value among the first k episodes, k = 1 .. len(values) (None: did not finish)."""
    v = np.array([math.inf if x is None else float(x) for x in values])
    return np.minimum.accumulate(v)


def table(runs: list[dict]) -> tuple[list[tuple[str, int, float, np.ndarray]], list[str]]:
    """(per set (set, instances, best-known mean, ratio of the set's mean best-of-first-k to it,
    k = 1 ..), stale runs), of runs of one suite row. A set enters when every instance has a run
    with its values."""
    ships = {sha256_file(p) for p in CHECKPOINT_DIR.glob("*.pt")}
    stale = sorted({f"{r['label']} on {r['instance']}" for r in runs
                    if r.get("checkpoint_sha256") and r["checkpoint_sha256"] not in ships})
    by: dict[str, dict[str, np.ndarray]] = {}
    for r in runs:
        if r["status"] == "feasible" and r.get("sample_values"):
            by.setdefault(r["set"], {})[r["instance"]] = best_of_first(r["sample_values"])
    rows = []
    for name in sorted(by, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n)):
        bk = {e["id"]: e["best_known"]["objective"] for e in sets.read_manifest(name)["instances"]
              if (e.get("best_known") or {}).get("objective") is not None}
        got = by[name]
        if not bk or not set(got) >= set(bk):
            continue
        k = min(len(got[i]) for i in bk)
        curve = np.mean([got[i][:k] for i in bk], axis=0) / mean(bk.values())
        rows.append((name, len(bk), mean(bk.values()), curve))
    return rows, stale


def markdown(rows) -> str:
    most = min((len(c) for *_, c in rows), default=1)
    cols = [k for k in COLUMNS if k <= most] + ([most] if most not in COLUMNS else [])
    head = "| set (instances) | best known | " + " | ".join(
        "greedy" if k == 1 else f"best of {k} (greedy + {k - 1})" for k in cols) + " | first k within 15 % |"
    lines = [head, "| --- | ---: | " + " | ".join("---:" for _ in cols) + " | ---: |"]
    for name, n, bk, curve in rows:
        cells = [f"{curve[k - 1] * bk:.1f} ({100 * (curve[k - 1] - 1):+.1f} %)" for k in cols]
        hit = np.nonzero(curve <= TARGET + 1e-12)[0]
        first = f"{int(hit[0]) + 1}" if hit.size else f"none of {len(curve)}"
        lines.append(f"| {name.removeprefix('placement-')} ({n}) | {bk:.1f} | " + " | ".join(cells) + f" | {first} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", default="plan-bc-sample128", choices=sorted(LABELS),
                    help="the suite row whose curve is drawn (default plan-bc-sample128)")
    ap.add_argument("--runs", help="an export of the runs (JSON, this script's --export form; default: the label's "
                                   "committed export)")
    ap.add_argument("--db", help="a results store of bench/suites/tapfinger-sampling.toml instead of --runs")
    ap.add_argument("--export", help="write the label's runs read to this JSON file (the --runs form)")
    ap.add_argument("--figure", help="the figure's PNG path, an SVG beside it (default: the label's)")
    args = ap.parse_args(argv)
    row, default_runs, default_figure = LABELS[args.label]
    try:
        runs = runs_from_store(args.db) if args.db else json.loads(Path(args.runs or default_runs).read_text())["runs"]
        runs = [r for r in runs if r.get("label") == args.label]
        rows, stale = table(runs)
    except (OSError, ValueError, KeyError, TypeError, sqlite3.Error, zlib.error) as exc:
        print(f"tapfinger_sampling_curve: error: cannot read the runs: {exc}", file=sys.stderr)
        return 2
    if args.export:
        write_text_atomic(args.export, json.dumps({"command": "edgebench run bench/suites/tapfinger-sampling.toml",
                                                   "runs": runs}) + "\n")
    print(markdown(rows))
    for s in stale:
        print(f"stale: {s} (its checkpoint no longer ships)", file=sys.stderr)
    series = {f"{name.removeprefix('placement-')} ({n})": (np.arange(1, len(c) + 1), c) for name, n, _, c in rows}
    for p in curves(series, Path(args.figure or default_figure), title=f"{row}: best of the first k episodes (seed 0)",
                    xlabel="episodes played, k (the greedy one, then sampled ones)",
                    ylabel="set mean / mean best known", line=TARGET, line_label="issue 42's target",
                    legend_title="set (instances)"):
        print(p, file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
