"""Calibration of the TapFinger placement baselines against the authors' saved figures.

Runs every placement baseline on held-out seeds of whole episodes of three settings and writes
the Markdown table of ``docs/calibration.md``: mean completion time per method (mean over
seeds, 95 % t confidence interval), our method/Optimus ratio and the authors' ratio from their
saved single-seed run (github.com/nooblyh/TapFinger, ``img/<setting>/<Method>_jct.json``).

    .venv/bin/python -m bench.calibration --seeds 5 --out runs/calibration.md

Settings, each in two forms:

* ``authors``: our generator with the authors' simulator settings where our preset differs
  (variant, arrival rate, switching overhead, eligibility 1..N clusters, test-bed capacities,
  rate and task count of the saved run; noise 0 in the multi-task run, whose saved Min times
  show none; rows "the authors' speed model": no CPU bottleneck, and noise 0 where their saved
  config says so) and the authors' baseline semantics (``optimus`` fit="authors-transposed":
  their pre-run as their code runs it, on their grid 0..16 (fit_max=16), gain="per-unit"; ``optimus``
  with our default fit="authors" beside it; ``tiresias`` elastic with admission="authors" (their
  count cap and one task per cluster and pass) and ``random`` rounds="authors" (their step
  loop), each with our default beside it; ``optimus-np`` /
  ``tiresias-np`` with rule="authors" (their ``non_preemptable_*`` rules) for the test-bed
  run, whose saved figures come from the non-preemptive versions);
* rows with the suite's earlier baseline defaults and with our presets as shipped.

The TapFinger column is read from the shipped ``tapfinger`` checkpoints when they fit the
setting (``--tapfinger``); it is slow on one core and off by default.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: the authors' saved mean completion times (time slots, one seed): setting -> method -> value
AUTHORS: dict[str, dict[str, float]] = {
    "synthetic-3": {"TapFinger": 6.42, "Optimus": 8.56, "Tiresias": 14.66, "Random": 12.84, "Min": 12.74},
    "synthetic-3-multi": {"TapFinger": 4.29, "Optimus": 7.73, "Tiresias": 7.55, "Random": 15.12, "Min": 28.82},
    "hetero-6": {"TapFinger": 4.87, "Optimus": 8.12, "Tiresias": 10.79, "Random": 23.57, "Min": 33.46},
    "testbed": {"TapFinger": 23.1, "Optimus": 31.0, "Tiresias": 26.8, "Random": 55.3, "Min": 67.9},
}


@dataclass(frozen=True)
class Setting:
    """One row group of the table: generator preset, overrides and the solvers per method."""

    key: str                      # AUTHORS key
    label: str
    preset: str
    overrides: dict[str, Any]
    methods: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    #: the authors' speed model: the resource-sensitive type's speed depends on its GPUs only
    #: (``cpu_per_gpu`` null, no CPU bottleneck), as in their ``config.py`` (``lm_weight``)
    authors_speed_model: bool = False


def authors_speed_model(inst):
    """The instance with every synthetic type's CPU bottleneck removed (``cpu_per_gpu`` null):
    the authors' ``lm_weight = tanh(gpu / 16)``, whatever the CPUs."""
    import json

    from edgebench.instances import io

    data = json.loads(io.dump_json_text(inst))
    for t in data["placement"]["performance"]["types"].values():
        t["cpu_per_gpu"] = None
    data["id"] += "-authors-speed"
    return io.instance_from_dict(data)


_AUTHORS_METHODS = {"Optimus": ("optimus", {"fit": "authors-transposed", "gain": "per-unit", "fit_max": 16}),
                    "Optimus (fit=authors, our default)": ("optimus", {"fit": "authors", "gain": "per-unit"}),
                    "Tiresias": ("tiresias", {"elastic": True, "admission": "authors"}),
                    "Tiresias (admission=fit, our default)": ("tiresias", {"elastic": True, "admission": "fit"}),
                    "Random": ("random", {"rounds": "authors"}),
                    "Random (rounds=pack, our default)": ("random", {"rounds": "pack"}),
                    "Min": ("min", {})}
_OLD_METHODS = {"Optimus": ("optimus", {"fit": "bounded", "gain": "drop"}),
                "Tiresias": ("tiresias", {"elastic": False}),
                "Random": ("random", {}), "Min": ("min", {})}
_NP_METHODS = {"Optimus": ("optimus-np", {"fit": "authors-transposed", "gain": "per-unit", "rule": "authors"}),
               "Optimus (rule=suite, our default)": ("optimus-np", {"fit": "authors-transposed", "gain": "per-unit",
                                                                    "rule": "suite"}),
               "Tiresias": ("tiresias-np", {"rule": "authors"}),
               "Tiresias (rule=suite, our default)": ("tiresias-np", {"rule": "suite"}),
               "Random": ("random", {"rounds": "authors"}), "Min": ("min", {})}

#: the settings of the table: the authors' img/synthetic (the paper's single-task run),
#: img/multiple-gamma=1 (multi-task), img/hetero_6_agent and img/container_version
#: configurations, rebuilt with our generators
SETTINGS: tuple[Setting, ...] = (
    Setting("synthetic-3", "synthetic-3 single-task (rate 2, overhead 0.5)", "synthetic-3",
            {"variant": "single", "switching_overhead": 0.5}, _AUTHORS_METHODS),
    Setting("synthetic-3", "same, the suite's earlier baseline defaults", "synthetic-3",
            {"variant": "single", "switching_overhead": 0.5}, _OLD_METHODS),
    Setting("synthetic-3", "same at the authors' load (rate 1.8: their noise model's shorter tasks)", "synthetic-3",
            {"variant": "single", "switching_overhead": 0.5, "rate": 1.8}, _AUTHORS_METHODS),
    Setting("synthetic-3", "same with the authors' speed model (no CPU bottleneck)", "synthetic-3",
            {"variant": "single", "switching_overhead": 0.5}, _AUTHORS_METHODS, authors_speed_model=True),
    Setting("synthetic-3-multi", "synthetic-3 multi-task (rate 3, no overhead, no noise)", "synthetic-3",
            {"variant": "multi", "switching_overhead": 0.0, "rate": 3.0, "noise": 0.0}, _AUTHORS_METHODS),
    Setting("synthetic-3-multi", "same with the authors' speed model (no CPU bottleneck)", "synthetic-3",
            {"variant": "multi", "switching_overhead": 0.0, "rate": 3.0, "noise": 0.0}, _AUTHORS_METHODS,
            authors_speed_model=True),
    Setting("hetero-6", "hetero-6 multi-task (rate 6, no overhead, 1..6 clusters per task)", "hetero-6",
            {"variant": "multi", "switching_overhead": 0.0, "max_eligible": 6}, _AUTHORS_METHODS),
    Setting("hetero-6", "same with the authors' speed model and noise 0 (their saved config)", "hetero-6",
            {"variant": "multi", "switching_overhead": 0.0, "max_eligible": 6, "noise": 0.0}, _AUTHORS_METHODS,
            authors_speed_model=True),
    Setting("hetero-6", "same with our preset's 1..3 clusters per task", "hetero-6",
            {"variant": "multi", "switching_overhead": 0.0}, _AUTHORS_METHODS),
    Setting("testbed", "test-bed, our preset (single, 16/8 x 3, rate 1.5, 192 tasks)", "testbed",
            {}, _NP_METHODS),
    Setting("testbed", "test-bed, closer to the authors' run (multi, 16/4, 16/4, 16/8, rate 1, 200 tasks)",
            "testbed", {"variant": "multi", "num_tasks": 200, "rate": 1.0,
                        "capacity": [{"cpu": 16, "gpu": 4}, {"cpu": 16, "gpu": 4}, {"cpu": 16, "gpu": 8}]},
            _NP_METHODS),
    # issue 24: the authors' own noise model in their single-task run (placement-synthetic-3-v3);
    # last, so that the earlier rows keep their plot numbers
    Setting("synthetic-3", "synthetic-3 single-task with the authors' additive noise (+-0.1 clipped at 0)",
            "synthetic-3", {"variant": "single", "switching_overhead": 0.5, "noise_model": "additive"},
            _AUTHORS_METHODS),
    Setting("synthetic-3", "same with the authors' additive noise and speed model (no CPU bottleneck)",
            "synthetic-3", {"variant": "single", "switching_overhead": 0.5, "noise_model": "additive"},
            _AUTHORS_METHODS, authors_speed_model=True),
)


def mean_ci(values: list[float]) -> tuple[float, float]:
    """Mean and half-width of the 95 % Student-t confidence interval."""
    from scipy.stats import t as student_t

    m = statistics.fmean(values)
    if len(values) < 2:
        return m, math.nan
    return m, float(student_t.ppf(0.975, len(values) - 1)) * statistics.stdev(values) / math.sqrt(len(values))


def run_setting(setting: Setting, seeds: list[int], *, tapfinger: bool = False, log=None) -> dict[str, list[float]]:
    """Mean completion time of every method on every seed (whole episodes)."""
    from edgebench.instances.generators import generate
    from edgebench.referee import evaluate
    from edgebench.registry import solve

    methods = dict(setting.methods)
    if tapfinger:
        methods = {"TapFinger": ("tapfinger", {}), **methods}
    out: dict[str, list[float]] = {m: [] for m in methods}
    for seed in seeds:
        inst = generate("placement", setting.preset, seed=seed, **setting.overrides)
        if setting.authors_speed_model:
            inst = authors_speed_model(inst)
        for method, (solver, params) in methods.items():
            t0 = time.perf_counter()
            res = solve(inst, solver, seed=seed, **params)
            ev = evaluate(inst, res.solution)  # the referee's value, never the solver's
            if not ev.feasible:
                raise RuntimeError(f"{solver} on {inst.id}: {res.status} {res.stats.get('reason', '')}")
            out[method].append(ev.objectives["mean_completion_time"])
            if log:
                log(f"{setting.label} seed {seed} {method}: {out[method][-1]:.2f} ({time.perf_counter() - t0:.1f}s)")
    return out


def markdown_table(rows: list[tuple[Setting, dict[str, list[float]]]]) -> str:
    """The calibration table: per setting and method our mean (CI), ratio to Optimus, the
    authors' value and ratio, and the deviation of the ratios."""
    lines = ["| setting | method | ours: mean completion (95% CI) | ours / Optimus (per-seed range) | authors "
             "| authors / Optimus | deviation of the ratio |", "|---|---|---|---|---|---|---|"]
    for setting, res in rows:
        authors = AUTHORS[setting.key]
        opt = statistics.fmean(res["Optimus"])
        for method, vals in res.items():
            m, h = mean_ci(vals)
            ratio = m / opt
            per_seed = [v / o for v, o in zip(vals, res["Optimus"])]
            a_ratio = authors[method.split(" (")[0]] / authors["Optimus"]
            dev = (ratio / a_ratio - 1.0) * 100.0
            flag = " **>15%**" if abs(dev) > 15 and method != "Optimus" else ""
            ci = "" if math.isnan(h) else f" ± {h:.2f}"
            lines.append(f"| {setting.label} | {method} | {m:.2f}{ci} | {ratio:.2f} ({min(per_seed):.2f}-"
                         f"{max(per_seed):.2f}) | {authors[method.split(' (')[0]]:.2f} | {a_ratio:.2f} | {dev:+.0f}%{flag} |")
    return "\n".join(lines) + "\n"


def percentile_of(value: float, sample: list[float]) -> float:
    """Where ``value`` lies in ``sample``, in percent (ties count half: the mid-rank)."""
    below = sum(v < value for v in sample)
    equal = sum(v == value for v in sample)
    return 100.0 * (below + 0.5 * equal) / len(sample)


#: a row is consistent with the authors' figure when it lies in the central 90 % of ours
CENTRAL = (5.0, 95.0)


def distribution_table(rows: list[tuple[Setting, dict[str, list[float]]]]) -> str:
    """Calibration by distribution (issue 24, item 2): per setting and method, our per-seed
    values (mean completion time of each episode) as a distribution, the authors' single figure
    placed in it as a percentile, and the same for the ratio to Optimus (per seed); a row is
    *consistent* when the authors' value lies within the central 90 % of ours."""
    lines = ["| setting | method | ours: median (5th-95th pct) | authors | authors' percentile | verdict "
             "| ours / Optimus: median (5th-95th) | authors' ratio | its percentile |",
             "|---|---|---|---|---:|---|---|---:|---:|"]
    for setting, res in rows:
        authors = AUTHORS[setting.key]
        for method, vals in res.items():
            a = authors[method.split(" (")[0]]
            q = statistics.quantiles(vals, n=20, method="inclusive")  # 5 % steps: q[0] = 5th, q[-1] = 95th
            pct = percentile_of(a, vals)
            ratios = [v / o for v, o in zip(vals, res["Optimus"])]
            qr = statistics.quantiles(ratios, n=20, method="inclusive")
            a_ratio = a / authors["Optimus"]
            verdict = "consistent" if CENTRAL[0] <= pct <= CENTRAL[1] else "**outside**"
            ratio_cell = "1 (by definition)" if method == "Optimus" else \
                f"{statistics.median(ratios):.2f} ({qr[0]:.2f}-{qr[-1]:.2f})"
            rpct = "" if method == "Optimus" else f"{percentile_of(a_ratio, ratios):.0f}"
            lines.append(f"| {setting.label} | {method} | {statistics.median(vals):.2f} ({q[0]:.2f}-{q[-1]:.2f}) "
                         f"| {a:.2f} | {pct:.0f} | {verdict} | {ratio_cell} | {a_ratio:.2f} | {rpct} |")
    return "\n".join(lines) + "\n"


def distribution_plots(rows: list[tuple[Setting, dict[str, list[float]]]], out: Path) -> list[Path]:
    """One PNG per setting: our per-seed values of each method (box and points) with the
    authors' single figure as a red diamond."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, (setting, res) in enumerate(rows):
        methods = list(res)
        fig, ax = plt.subplots(figsize=(1.3 * len(methods) + 2.5, 3.6))
        ax.boxplot([res[m] for m in methods], whis=(5, 95), showfliers=False)
        for k, m in enumerate(methods, start=1):
            xs = [k + 0.12 * ((j % 7) - 3) / 3 for j in range(len(res[m]))]
            ax.scatter(xs, res[m], s=8, alpha=0.45, color="tab:blue")
            ax.scatter([k], [AUTHORS[setting.key][m.split(" (")[0]]], marker="D", s=45, color="tab:red", zorder=3,
                       label="authors (one seed)" if k == 1 else None)
        ax.set_xticks(range(1, len(methods) + 1), [m.replace(" (", "\n(") for m in methods], fontsize=7)
        ax.set_ylabel("mean completion time (steps)")
        ax.set_title(f"{setting.label}: ours over {len(res[methods[0]])} seeds (box 5-95 %)", fontsize=8)
        ax.legend(fontsize=7, loc="upper left")
        fig.tight_layout()
        path = out / f"calibration-{i:02d}-{setting.key}.png"
        tmp = path.with_name(path.stem + ".tmp.png")
        fig.savefig(tmp, dpi=110)
        plt.close(fig)
        tmp.replace(path)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5, help="held-out seeds per setting (default 5: seeds 100..104)")
    ap.add_argument("--seed-base", type=int, default=100, help="first seed (default 100, never a training seed)")
    ap.add_argument("--only", nargs="*", default=None,
                    help="setting keys to run (synthetic-3 synthetic-3-multi hetero-6 testbed)")
    ap.add_argument("--rows", default=None, metavar="TEXT",
                    help="only the rows whose label contains TEXT (e.g. 'additive')")
    ap.add_argument("--tapfinger", action="store_true", help="add the shipped tapfinger policy (slow)")
    ap.add_argument("--out", default=None, help="write the Markdown table here (default: stdout)")
    ap.add_argument("--distribution", metavar="DIR", default=None,
                    help="calibration by distribution (use >= 30 seeds): the table places each authors' figure as "
                         "a percentile of our per-seed values, and one plot per setting goes to DIR")
    a = ap.parse_args(argv)
    seeds = list(range(a.seed_base, a.seed_base + a.seeds))
    from edgebench.errors import InputError

    rows, skipped = [], []
    for s in SETTINGS:
        if (a.only and s.key not in a.only) or (a.rows and a.rows not in s.label):
            continue
        with_tapfinger = a.tapfinger and s.methods is _AUTHORS_METHODS and not s.authors_speed_model
        try:
            rows.append((s, run_setting(s, seeds, tapfinger=with_tapfinger,
                                        log=lambda x: print(x, file=sys.stderr, flush=True))))
        except InputError as exc:  # e.g. the test-bed profiles live in ../shared/traces, absent on a bare clone
            print(f"calibration: skipped {s.label!r}: {exc}", file=sys.stderr, flush=True)
            skipped.append(f"* skipped {s.label}: {exc}")
    if a.distribution:
        plots = distribution_plots(rows, Path(a.distribution))
        text = (f"Seeds {seeds[0]}..{seeds[-1]}, whole episodes; consistent = the authors' figure lies in the "
                f"central 90 % of our per-seed values.\n\n" + distribution_table(rows)
                + "\n" + "\n".join(f"![{p.stem}]({p.as_posix()})" for p in plots) + "\n")
    else:
        text = f"Seeds {seeds[0]}..{seeds[-1]}, whole episodes.\n\n" + markdown_table(rows)
    if skipped:
        text += "\n" + "\n".join(skipped) + "\n"
    if a.out:
        p = Path(a.out)
        tmp = p.with_suffix(p.suffix + ".tmp")
        tmp.write_text(text)
        tmp.replace(p)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
