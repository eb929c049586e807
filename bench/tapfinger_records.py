"""Re-record the held-out evaluations of the shipped TapFinger checkpoints with the current
greedy decision rule (float64 network, ties within ``TIE_TOL`` to the lowest index:
``learned.tapfinger.pick_max``), so that each record says exactly what any machine reproduces.

    .venv/bin/python bench/tapfinger_records.py [--check] [FILE.pt ...]

For each checkpoint (default: every ``tapfinger*.pt`` shipped) it replays the evaluation its
training command defines (``eval_episodes`` held-out seeds 10**9 + k), then writes into the
checkpoint's ``extra``: ``eval_cts`` (per episode), ``eval.eval_mean_ct`` and ``decisions``
({"precision", "tie_tol", "margin"}: the smallest margin of any greedy choice in those episodes),
and the same mean and ``decisions`` into the ``NAME.json`` sidecar. Both files are written
atomically. ``--check`` writes nothing and exits 1 when a record differs from the replay. Which
values changed is printed (old -> new).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from pathlib import Path

from edgebench.cli import build_parser
from edgebench.instances.generators import needs_traces
from edgebench.instances.traces import default_traces_dir
from edgebench.learned import tapfinger as tf
from edgebench.learned.tapfinger_cli import train_args_from_cli
from edgebench.learned.train_tapfinger import evaluate


def decision_record(margin: float) -> dict:
    return {"precision": "float64", "tie_tol": tf.TIE_TOL, "rule": "lowest index within tie_tol of the best",
            "margin": None if math.isinf(margin) else margin}


def replay(path: Path) -> tuple[dict, dict] | None:
    """(checkpoint blob, fresh evaluation) or None when its preset's input is missing."""
    model, lay, blob = tf.load_checkpoint(path)
    command = blob["extra"]["command"]
    ns = build_parser().parse_args(shlex.split(command)[1:])
    if needs_traces("placement", ns.preset) and default_traces_dir() is None:
        print(f"{path.name}: skipped (the {ns.preset} preset needs ../shared/traces)")
        return None
    return blob, evaluate(model, train_args_from_cli(ns), lay)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    args = ap.parse_args(argv)
    files = args.files or sorted(tf.CHECKPOINT_DIR.glob("tapfinger*.pt"))
    differ = 0
    for path in files:
        got = replay(path)
        if got is None:
            continue
        blob, ev = got
        extra = blob["extra"]
        old = extra.get("eval_cts")
        same = old == ev["eval_cts"]
        differ += not same
        print(f"{path.name}: {'same' if same else 'CHANGED'} mean {extra.get('eval', {}).get('eval_mean_ct')} -> "
              f"{ev['eval_mean_ct']}, margin {ev['decision_margin']:.3g}" + ("" if same else f" (was {old})"),
              flush=True)
        if args.check:
            continue
        model, lay, _ = tf.load_checkpoint(path)
        extra = dict(extra, eval_cts=ev["eval_cts"], decisions=decision_record(ev["decision_margin"]))
        extra["eval"] = dict(extra.get("eval", {}), eval_mean_ct=ev["eval_mean_ct"])
        tf.save_checkpoint(path, model, lay, extra=extra)
        side = path.with_suffix(".json")
        if side.exists():
            meta = json.loads(side.read_text())
            meta.setdefault("eval", {})["mean_completion_time"] = ev["eval_mean_ct"]
            meta["decisions"] = decision_record(ev["decision_margin"])
            tmp = side.with_name(side.name + ".tmp")
            tmp.write_text(json.dumps(meta, indent=2) + "\n")
            tmp.replace(side)
    return 1 if (args.check and differ) else 0


if __name__ == "__main__":
    sys.exit(main())
