"""Held-out evaluation of TapFinger policies against Optimus with confidence intervals
(issue 16, item 4): for each held-out generator seed 10^9 + k, k < SEEDS, every solver solves
the instance (``registry.solve``, solver seed 0, one thread); the referee's mean completion
time is recorded. Printed and written as JSON (``--out``): per solver the mean and its 95 %
confidence interval (Student t over the seeds), and per pair (A, B) the paired relative
difference mean_k (A_k - B_k) / B_k with its 95 % interval, so "A is x % below B" comes with
its uncertainty.

    .venv/bin/python bench/tapfinger_eval.py --preset synthetic-3 --variant multi --tasks 192 \\
        --seeds 5 --solvers tapfinger,tapfinger-bc,optimus --out runs/tapfinger-eval.json
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path

import numpy as np

SEED_BASE = 10**9
BOUND = "lower-bound"  # the --bound row: no solver, the instance's certified lower bound per task


def ci95(x: list[float]) -> tuple[float, float]:
    """(mean, half-width of the 95 % Student-t interval) of a sample."""
    from scipy import stats

    a = np.asarray(x, dtype=float)
    if len(a) < 2:
        return float(a.mean()), float("nan")
    return float(a.mean()), float(stats.t.ppf(0.975, len(a) - 1) * a.std(ddof=1) / math.sqrt(len(a)))


def parse_value(text: str):
    """A ``--set`` / solver-parameter value: JSON (numbers, true/false, null, strings in quotes)
    or else the bare string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def split_solvers(text: str) -> list[str]:
    """``--solvers``: comma-separated specs, a comma inside ``{...}`` parameters kept."""
    return re.findall(r"[^,{]+(?:\{[^}]*\})?", text)


def parse_solver(spec: str) -> tuple[str, str | None, dict]:
    """``NAME[@PATH][{KEY=VALUE,...}]`` -> (name, checkpoint path or None, solver params); the
    whole spec is the solver's label in the output, e.g. ``optimus{fit_max=16}``."""
    m = re.fullmatch(r"([^@{}]+)(?:@([^{}]+))?(?:\{(.*)\})?", spec)
    if not m:
        raise SystemExit(f"--solvers: cannot read {spec!r} (NAME[@PATH][{{KEY=VALUE,...}}])")
    params = {}
    for item in filter(None, (m.group(3) or "").split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise SystemExit(f"--solvers: {spec!r}: parameter {item!r} is not KEY=VALUE")
        params[key.strip()] = parse_value(value.strip())
    return m.group(1), m.group(2), params


def evaluate(preset: str, variant: str, tasks: int, seeds: int, solvers: list[str], *, log=print,
             seed_base: int = SEED_BASE, known: dict[str, list[float]] | None = None,
             gen_params: dict | None = None, bound: bool = False) -> dict:
    """``known``: per-seed values of solvers measured before on the same instances (``--add-to``,
    a previous run's ``per_seed``); they join the summary and the pairs without being re-run.
    ``gen_params``: generator parameters (``--set``, e.g. switching_overhead=0, max_eligible=6).
    ``bound``: add the row ``lower-bound``, the certified lower bound of each instance
    (``combinatorial_bound``: valid for every schedule the referee accepts, clairvoyant ones
    included) divided by its number of tasks, so that the pairs say how far each solver is from
    any schedule's limit and ``lower-bound vs optimus`` the least ratio any scheduler can reach."""
    import torch

    from edgebench import registry
    from edgebench.formulations.placement.bounds.certify import combinatorial_bound
    from edgebench.instances.generators import generate
    from edgebench.referee import evaluate as referee

    torch.set_num_threads(1)
    per: dict[str, list[float]] = {s: [] for s in solvers}
    run = list(solvers)
    if bound:
        per[BOUND] = []
    for s, vals in (known or {}).items():
        if s not in per:
            if len(vals) != seeds:
                raise SystemExit(f"--add-to: {s} has {len(vals)} seeds, not {seeds}")
            per[s] = list(vals)
    for k in range(seeds):
        inst = generate("placement", preset, seed=seed_base + k, variant=variant, num_tasks=tasks,
                        **(gen_params or {}))
        if bound:
            t0 = time.perf_counter()
            b = combinatorial_bound(inst.payload)
            if b is None:
                raise SystemExit(f"--bound: no proof applies to seed {seed_base + k} ({preset} {variant})")
            per[BOUND].append(b[0] / len(inst.payload.tasks))
            if log:
                log(f"seed {seed_base}+{k} {BOUND}: {per[BOUND][-1]:.4f} ({time.perf_counter() - t0:.1f} s, {b[1]})")
        for s in run:
            t0 = time.perf_counter()
            name, ckpt, params = parse_solver(s)  # "SOLVER@PATH{k=v}": that checkpoint file, those params
            res = registry.solve(inst, name, seed=0, **({"checkpoint": ckpt} if ckpt else {}), **params)
            ev = referee(inst, res.solution)
            if not ev.feasible:
                raise SystemExit(f"{s} on seed {seed_base + k}: status {res.status} "
                                 f"{res.solution.stats.get('reason', '')}")
            per[s].append(float(ev.objectives["mean_completion_time"]))
            if log:
                log(f"seed {seed_base}+{k} {s}: {per[s][-1]:.4f} ({time.perf_counter() - t0:.1f} s, "
                    f"{res.solution.stats.get('checkpoint', '')})")
    out = {"preset": preset, "variant": variant, "tasks": tasks, "gen_params": dict(gen_params or {}),
           "seeds": [seed_base + k for k in range(seeds)],
           "per_seed": per, "solvers": {}, "pairs": {}}
    for s in per:
        m, h = ci95(per[s])
        out["solvers"][s] = {"mean": m, "ci95": h}
    for a in per:
        for b in per:
            if a != b:
                d = [100.0 * (x - y) / y for x, y in zip(per[a], per[b])]
                m, h = ci95(d)
                out["pairs"][f"{a} vs {b}"] = {"mean_pct": m, "ci95_pct": h,
                                               "better": sum(x < y for x, y in zip(per[a], per[b])),
                                               "worse": sum(x > y for x, y in zip(per[a], per[b]))}
    return out


def plot_curves(runs: list[str], out: str) -> None:
    """Training curves of MAPPO runs (their ``metrics.csv``): the mean episode return and mean
    completion time of the sampled training episodes (per update) and the greedy validation
    mean completion time, against env steps; one line per run (label: the run folder)."""
    import csv

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for run in runs:
        with open(Path(run) / "metrics.csv", newline="") as fh:
            rows = [r for r in csv.DictReader(fh) if r.get("bc_epoch") in (None, "")]
        label = Path(run).name

        def series(key):
            pts = [(int(r["global_step"]), float(r[key])) for r in rows if r.get(key) not in (None, "", "nan")
                   and not r.get("selected_update")]
            return [x for x, _ in pts], [y for _, y in pts]

        for ax, key, title in zip(axes, ("train_return", "train_mean_ct", "val_mean_ct"),
                                  ("training episodes: return (sum of rewards)",
                                   "training episodes (sampled): mean completion time",
                                   "validation (greedy, 16 seeds): mean completion time")):
            x, y = series(key)
            ax.plot(x, y, marker="." if key == "val_mean_ct" else None, label=label)
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("env steps")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


def plot_ratios(results: list[str], solvers: list[str], out: str) -> None:
    """Per result file (one setting: an ``--out`` of this script) and per solver, the paired ratio
    to Optimus (the mean over seeds of value / Optimus's value) with its 95 % interval, as grouped
    bars; a solver missing from a file is left out there. Needs ``optimus`` in every file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = []
    for path in results:
        res = json.loads(Path(path).read_text())
        per = res["per_seed"]
        if "optimus" not in per:
            raise SystemExit(f"--ratios {path}: no optimus values to divide by")
        label = f"{res['preset']} {res['variant']}, {res['tasks']} tasks" + \
            "".join(f", {k}={v}" for k, v in res.get("gen_params", {}).items() if k == "rate")
        data.append((label, {s: ci95([x / o for x, o in zip(per[s], per["optimus"])]) for s in solvers if s in per}))
    fig, ax = plt.subplots(figsize=(max(6.0, 2.2 * len(data)), 3.8))
    width = 0.8 / len(solvers)
    for i, s in enumerate(solvers):
        xs = [g + (i - (len(solvers) - 1) / 2) * width for g, (_, d) in enumerate(data) if s in d]
        ms = [d[s] for _, d in data if s in d]
        ax.bar(xs, [m for m, _ in ms], width, yerr=[h for _, h in ms], capsize=2, label=s)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(data)), [label for label, _ in data], fontsize=8)
    ax.set_ylabel("mean completion time / Optimus's (paired)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="synthetic-3")
    p.add_argument("--variant", default="multi", choices=("multi", "single"))
    p.add_argument("--tasks", type=int, default=192)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--solvers", default="tapfinger,tapfinger-bc,optimus",
                   help="comma-separated solver names; SOLVER@PATH runs SOLVER with the checkpoint file PATH "
                        "(an exported run not yet shipped)")
    p.add_argument("--seed-base", type=int, default=SEED_BASE,
                   help="first generator seed (default 10^9: the held-out seeds; 2*10^9 = the validation seeds "
                        "that training selects on, for choosing between runs without touching the held-out ones)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a generator parameter of the instances (repeatable), e.g. switching_overhead=0, "
                        "max_eligible=6, noise_model=additive: the authors' own settings (docs/learned-baselines.md)")
    p.add_argument("--add-to", metavar="JSON", help="a previous run's --out on the same preset, variant, tasks, "
                   "seeds and seed base: its solvers' per-seed values are kept (not re-run) and compared")
    p.add_argument("--bound", action="store_true",
                   help="add the row lower-bound: each instance's certified lower bound on the mean completion "
                        "time (docs/formulations/placement.md), valid for every referee-feasible schedule")
    p.add_argument("--out", default=None)
    p.add_argument("--curves", nargs="+", metavar="RUN", help="plot these runs' training curves instead")
    p.add_argument("--ratios", nargs="+", metavar="JSON",
                   help="plot, per result file (--out of earlier runs), the --solvers' paired ratios to Optimus "
                        "instead")
    p.add_argument("--png", default="docs/img/tapfinger-mappo-curves.png", help="where --curves / --ratios write")
    a = p.parse_args(argv)
    if a.curves:
        plot_curves(a.curves, a.png)
        return 0
    if a.ratios:
        plot_ratios(a.ratios, split_solvers(a.solvers), a.png)
        return 0
    known = None
    if a.add_to:
        prev = json.loads(Path(a.add_to).read_text())
        if [prev[k] for k in ("preset", "variant", "tasks")] != [a.preset, a.variant, a.tasks] or \
                prev["seeds"] != [a.seed_base + k for k in range(a.seeds)]:
            raise SystemExit(f"--add-to {a.add_to}: other instances (preset, variant, tasks or seeds)")
        known = prev["per_seed"]
    gen_params = {}
    for item in a.set:
        key, eq, value = item.partition("=")
        if not eq:
            raise SystemExit(f"--set {item!r}: expected KEY=VALUE")
        gen_params[key] = parse_value(value)
    if a.add_to and prev.get("gen_params", {}) != gen_params:
        raise SystemExit(f"--add-to {a.add_to}: other generator parameters ({prev.get('gen_params', {})})")
    res = evaluate(a.preset, a.variant, a.tasks, a.seeds, split_solvers(a.solvers),
                   seed_base=a.seed_base, known=known, gen_params=gen_params, bound=a.bound)
    for s, r in res["solvers"].items():
        print(f"{s:>24}: mean completion time {r['mean']:.3f} ± {r['ci95']:.3f} (95 % CI, {a.seeds} seeds)")
    for k, r in res["pairs"].items():
        print(f"{k:>40}: {r['mean_pct']:+.1f} % ± {r['ci95_pct']:.1f} (paired, 95 % CI; "
              f"lower on {r['better']}, higher on {r['worse']} of {a.seeds} seeds)")
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(a.out + ".tmp")
        tmp.write_text(json.dumps(res, indent=1))
        tmp.replace(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
