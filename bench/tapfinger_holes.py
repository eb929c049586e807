"""The former holes of ``tapfinger`` (issue 24, item 5) measured: every instance of a placement
set solved by ``tapfinger`` (the generic reading where no checkpoint fits as is), Optimus and
sjf (and ``tapfinger-bc``), referee-checked; prints the docs/learned-baselines.md "Holes" row
per set: mean completion time ± the 95 % t-interval over instances, and the per-instance
ratios tapfinger/Optimus and tapfinger/sjf (mean ± interval, how often lower).

    OMP_NUM_THREADS=1 .venv/bin/python bench/tapfinger_holes.py [SET ...]
    (default: placement-alibaba-v2 placement-sjf-ablation-v2)
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats

from edgebench import registry
from edgebench.instances.io import load_instance
from edgebench.referee import evaluate

DATA = Path(__file__).resolve().parents[1] / "instances" / "data"
SOLVERS = ("tapfinger", "optimus", "sjf", "tapfinger-bc")


def interval(x) -> tuple[float, float]:
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return float(x.mean()), float("nan")
    return float(x.mean()), float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))


def measure(name: str) -> dict[str, dict[str, float]]:
    """solver -> instance file -> mean completion time (steps); the files read, per solver."""
    out: dict[str, dict[str, float]] = {s: {} for s in SOLVERS}
    for f in sorted((DATA / name).glob("placement-*.json*")):
        inst = load_instance(f)
        for s in SOLVERS:
            res = registry.solve(inst, s, seed=0)
            if res.status != "feasible" or not evaluate(inst, res.solution).feasible:
                raise SystemExit(f"{f.name}: {s} gave {res.status} {res.solution.stats.get('reason', '')}")
            out[s][f.name] = float(res.solution.stats.get("mean_completion_time")
                                   or evaluate(inst, res.solution).objectives["mean_completion_time"])
            if s.startswith("tapfinger"):
                st = res.solution.stats
                print(f"  {f.name} {s}: {st['checkpoint']} {st['checkpoint_match']} {out[s][f.name]:.4f}", flush=True)
    return out


def main(argv: list[str]) -> None:
    for name in argv or ["placement-alibaba-v2", "placement-sjf-ablation-v2"]:
        vals = measure(name)
        cells = [f"{m:.3f} ± {h:.3f}" for m, h in (interval(list(vals[s].values())) for s in SOLVERS)]
        ratios = []
        for base in ("optimus", "sjf"):
            r = [vals["tapfinger"][k] / vals[base][k] for k in vals["tapfinger"]]
            m, h = interval(r)
            ratios.append(f"{m:.3f} ± {h:.3f} (lower on {sum(x < 1 for x in r)} of {len(r)})")
        print(f"| {name} ({len(vals['tapfinger'])}) | " + " | ".join(cells + ratios) + " |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
