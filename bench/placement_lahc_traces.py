"""How ``placement-lahc``'s certification runs progressed (issue 45, session 31), as a plot.

    python bench/placement_lahc_traces.py --db runs/certify/lahc-s31.sqlite [--db ...] \\
        --json bench/results/lahc-traces-s31-issue45.json --png docs/img/placement-lahc-traces.png
    python bench/placement_lahc_traces.py --json bench/results/lahc-traces-s31-issue45.json \\
        --png docs/img/placement-lahc-traces.png      # re-plot the shipped traces only

With ``--db`` it reads every ``placement-*`` run of the stores (the runner's ``trace``: seconds and
best referee value so far, from the fixed start; the run's ``message``) and the manifests' bounds,
and writes them to ``--json`` (small: the shipped record). Without ``--db`` it reads ``--json``.
The plot has one panel per instance: the gap of the best schedule so far to the instance's
certified bound, against seconds, one line per run, and a dot at the value the run returned (after
the re-allocating moves; the best known it started from where the search did not beat it). A trace
starts at the fixed-allocation schedule of the best known the run started from (``sgs.decode`` of
it: above the best known where that one pauses or re-allocates); the table in
docs/formulations/placement.md gives the best knowns before and after.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path

from edgebench.errors import InputError
from edgebench.instances import sets


def _bounds() -> dict[str, tuple[str, float]]:
    """instance hash -> (set name, certified bound) of every placement set."""
    out = {}
    for name in sets.list_sets():
        if not name.startswith("placement-"):
            continue
        for e in sets.read_manifest(name)["instances"]:
            bk = e.get("best_known") or {}
            if bk.get("bound") is not None:
                out[e["hash"]] = (name, float(bk["bound"]))
    return out


def read_stores(paths: list[str], labels: tuple[str, ...]) -> list[dict]:
    bounds = _bounds()
    runs = []
    for path in paths:
        if not Path(path).is_file():
            raise InputError("no such store", file=path, field="--db")
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
            rows = con.execute("select instance_id, instance_hash, label, seed, primary_value, runtime, message, trace "
                               "from runs where family = 'placement' order by started").fetchall()
        for iid, h, label, seed, value, runtime, message, trace in rows:
            if label not in labels or value is None:
                continue
            set_name, bound = bounds.get(h, (None, None))
            runs.append({"instance": iid, "set": set_name, "hash": h, "label": label, "seed": seed,
                         "value": value, "runtime": round(runtime, 1), "bound": bound, "message": message,
                         "trace": json.loads(trace) if trace else []})
    return runs


def plot(runs: list[dict], png: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted({(r["set"] or "?", r["instance"]) for r in runs})
    cols = min(3, len(keys))
    rows = (len(keys) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        mine = [r for r in runs if (r["set"] or "?", r["instance"]) == key]
        bound = mine[0]["bound"]
        gap = (lambda v: 100.0 * (v - bound) / v) if bound else (lambda v: v)
        for r in mine:
            xs = [t for t, _ in r["trace"]] + [r["runtime"]]
            ys = [gap(v) for _, v in r["trace"]]
            label = f"{r['label']} seed {r['seed']}: search {r['trace'][-1][1]:g}, returned {r['value']:g}"
            line, = ax.step(xs, ys + ys[-1:], where="post", label=label)
            ax.plot([r["runtime"]], [gap(r["value"])], "o", color=line.get_color(), ms=4)
        ax.set_title(f"{key[0].removeprefix('placement-')} {key[1].removeprefix('placement-')}", fontsize=9)
        ax.set_xlabel("seconds")
        ax.set_ylabel("gap to the bound (%)" if bound else "total completion time")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(keys):]:
        ax.set_visible(False)
    fig.suptitle("placement-lahc from the best known's fixed schedule:\ngap of the best so far to the bound",
                 fontsize=10)
    fig.tight_layout()
    tmp = Path(png).with_suffix(".tmp.png")
    fig.savefig(tmp)
    tmp.replace(png)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", action="append", default=[], help="a runner store (repeatable)")
    ap.add_argument("--labels", default="lahc", help="suite labels to read, comma-separated (default: lahc)")
    ap.add_argument("--json", required=True, help="the traces record: written with --db, read without")
    ap.add_argument("--png", help="the plot to write")
    args = ap.parse_args(argv)
    try:
        if args.db:
            runs = read_stores(args.db, tuple(args.labels.split(",")))
            tmp = Path(args.json).with_suffix(".tmp")
            tmp.write_text(json.dumps({"runs": runs}, indent=1) + "\n")
            tmp.replace(args.json)
        else:
            try:
                runs = json.loads(Path(args.json).read_text())["runs"]
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise InputError(f"not a traces record ({exc})", file=args.json, field="--json") from None
        if not runs:
            raise InputError("no placement runs with those labels", file=args.json, field="--labels")
        if args.png:
            plot(runs, args.png)
        print(f"{len(runs)} runs" + (f"; plot: {args.png}" if args.png else ""))
        return 0
    except InputError as exc:
        print(f"edgebench: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
