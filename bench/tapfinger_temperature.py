"""Choosing the sampling decode's temperature on other instances than the sets (issue 42;
docs/learned-baselines.md, "Sampling decode"). For each set of issue 42's "within 15 %" target,
instances generated with seeds 100, 101, ... of the set's recipe (its preset and parameters; the
sets use seeds 0-4) are played by a TapFinger row with ``samples = K`` at each temperature; the
table gives, per set and temperature, the mean over the instances of (the best of the first k
episodes) / (the greedy episode), k = 9 and K + 1, and the mean over the sets; the temperature
with the least mean at K + 1 is the choice (printed last). Resumable: each run is written to
``--out`` (atomically) as it ends, and a rerun skips the runs already there::

    OMP_NUM_THREADS=1 .venv/bin/python bench/tapfinger_temperature.py --solver tapfinger \\
        --temperatures 0.1,0.25,0.5,1 --samples 32 --seeds 100,101,102 --out runs/temperature.json
    .venv/bin/python bench/tapfinger_temperature.py --out bench/results/...json --report   # the table only
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import mean

import numpy as np

from edgebench import registry
from edgebench.instances import sets
from edgebench.instances.generators import generate
from edgebench.instances.io import read_toml, write_text_atomic

SUITE = Path(__file__).resolve().parent / "suites" / "tapfinger-sampling.toml"
#: the sets of issue 42's "within 15 %" target, as the sampling suite lists them (their recipes give
#: the preset and parameters)
TARGET_SETS = tuple(i["set"] for i in read_toml(SUITE, "suite")["instances"])


def validation_instance(name: str, seed: int):
    """The instance the set's recipe would make with ``seed`` (a seed the set does not use)."""
    recipe = sets.read_recipe(sets.recipe_path(name))
    if seed in recipe.seeds:
        raise ValueError(f"seed {seed} is one of {name}'s own seeds {recipe.seeds}")
    return generate(recipe.family, recipe.preset, seed=seed, **recipe.params)


def play(solver: str, name: str, seed: int, samples: int, temperature: float) -> dict:
    inst = validation_instance(name, seed)
    res = registry.solve(inst, solver, seed=0, samples=samples, temperature=temperature)
    st = res.solution.stats
    if res.status != "feasible":
        return {"status": res.status, "reason": st.get("reason")}
    return {"status": "feasible", "values": st["sample_values"], "checkpoint": st["checkpoint"],
            "checkpoint_sha256": st["checkpoint_sha256"]}


def key(solver: str, name: str, seed: int, samples: int, temperature: float) -> str:
    return f"{solver}|{name}|{seed}|{samples}|{temperature:g}"


def table(runs: dict, solver: str, names: list[str], seeds: list[int], samples: int,
          temps: list[float]) -> tuple[str, float | None]:
    """(Markdown table, the chosen temperature or None when a run is missing)."""
    ks = sorted({k for k in (9, samples + 1) if k <= samples + 1})
    head = "| set | " + " | ".join(f"T = {t:g}, best of {k}" for t in temps for k in ks) + " |"
    lines = [head, "| --- | " + " | ".join("---:" for _ in temps for _ in ks) + " |"]
    per_t: dict[float, list[float]] = {t: [] for t in temps}
    complete = True
    for name in names:
        cells = []
        for t in temps:
            for k in ks:
                ratios = []
                for s in seeds:
                    r = runs.get(key(solver, name, s, samples, t))
                    if r is None or r["status"] != "feasible":
                        continue
                    v = np.array([np.inf if x is None else x for x in r["values"]], dtype=float)
                    ratios.append(float(v[:k].min() / v[0]))
                if len(ratios) < len(seeds):
                    complete = False
                cells.append(f"{100 * (mean(ratios) - 1):+.1f} %" if ratios else "-")
                if k == ks[-1] and ratios:
                    per_t[t].append(mean(ratios))
        lines.append(f"| {name.removeprefix('placement-')} | " + " | ".join(cells) + " |")
    means = {t: mean(v) for t, v in per_t.items() if len(v) == len(names)}
    lines.append("| mean over the sets | " + " | ".join(
        (f"{100 * (means[t] - 1):+.1f} %" if t in means and k == ks[-1] else "") for t in temps for k in ks) + " |")
    best = min(means, key=lambda t: (means[t], t)) if complete and means else None
    return "\n".join(lines), best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--solver", default="tapfinger")
    ap.add_argument("--temperatures", default="0.1,0.25,0.5,1")
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--seeds", default="100,101,102")
    ap.add_argument("--sets", default=",".join(TARGET_SETS))
    ap.add_argument("--out", required=True, help="the runs (JSON), read first and written after each run")
    ap.add_argument("--report", action="store_true", help="print the table from --out, run nothing")
    args = ap.parse_args(argv)
    try:
        temps = [float(t) for t in args.temperatures.split(",")]
        seeds = [int(s) for s in args.seeds.split(",")]
        names = [n for n in args.sets.split(",") if n]
        out = Path(args.out)
        runs = json.loads(out.read_text())["runs"] if out.is_file() else {}
        if not isinstance(runs, dict):
            raise ValueError(f"{out}: 'runs' is not an object")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"tapfinger_temperature: error: {exc}", file=sys.stderr)
        return 2
    if not args.report:
        for name in names:
            for s in seeds:
                for t in temps:
                    k = key(args.solver, name, s, args.samples, t)
                    if k in runs:
                        continue
                    runs[k] = play(args.solver, name, s, args.samples, t)
                    write_text_atomic(out, json.dumps({"command": " ".join(sys.argv), "runs": runs}, indent=0) + "\n")
                    v = runs[k].get("values") or [None]
                    print(f"{k}: greedy {v[0]}, best {min((x for x in v if x is not None), default=None)}",
                          file=sys.stderr, flush=True)
    text, best = table(runs, args.solver, names, seeds, args.samples, temps)
    print(text)
    print(f"chosen temperature: {best:g}" if best is not None else "chosen temperature: - (runs missing)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
