"""What the agents' pending window costs an expert's schedules (issue 42, session 23).

For each held-out seed 10^9 + k (the instances of ``bench/tapfinger_eval.py``): the expert's
schedule (``learned/train_tapfinger.py``'s ``expert_schedule``, e.g. ``placement-lns-online``),
then its window-repaired replay through the PettingZoo env (``replay_expert(..., repair=True)``:
each cluster starts, among its expert tasks due by now, the first the env allows; the others wait)
on the same instance with pending windows of each ``--windows`` size. Only ``pending_size``
differs between these instances (checked: the same tasks). Prints and writes (atomically) the
per-seed mean completion times, Optimus's, and the means::

    bench/tapfinger_window_repair.py --preset hetero-6 --variant single --tasks 384 --seeds 10 \\
        --set switching_overhead=0 --set max_eligible=6 --set noise=0 --time-limit 600 \\
        --out bench/results/window-repair-h6s-384-10-issue42.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

SEED_BASE = 10**9


def measure(preset: str, variant: str, tasks: int, seeds: int, windows: list[int], *, expert: str,
            time_limit: float, gen_params: dict, log=print) -> dict:
    import numpy as np
    import torch

    from edgebench import registry
    from edgebench.instances.generators import generate
    from edgebench.learned import tapfinger as tf
    from edgebench.learned.train_tapfinger import expert_schedule, replay_expert
    from edgebench.referee import evaluate as referee

    torch.set_num_threads(1)
    per: dict[str, list[float]] = {"optimus": [], expert: []} | {f"repaired-{p}": [] for p in windows}
    for k in range(seeds):
        seed = SEED_BASE + k
        inst = generate("placement", preset, seed=seed, variant=variant, num_tasks=tasks, **gen_params)
        n = len(inst.payload.tasks)
        opt = registry.solve(inst, "optimus", seed=0)
        per["optimus"].append(float(referee(inst, opt.solution).objectives["mean_completion_time"]))
        t0 = time.perf_counter()
        sol = expert_schedule(inst, time_limit=time_limit, expert=expert)
        if sol["tasks"] is None:
            raise SystemExit(f"{expert} on seed {seed}: no plain schedule ({sol['status']})")
        per[expert].append(sol["objective"] / n)
        plan = [tuple(t) for t in sol["tasks"]]
        for p in windows:
            ip = generate("placement", preset, seed=seed, variant=variant, num_tasks=tasks,
                          **dict(gen_params, pending_size=p))
            if ip.payload.tasks != inst.payload.tasks:
                raise SystemExit(f"seed {seed}: the pending window changed the tasks")
            env = tf.make_env(ip, inputs="generic")
            rep = replay_expert(env, tf.EnvLayout.of_env(env), ip, plan, repair=True)
            if not rep["ok"] or rep["objectives"] is None:
                raise SystemExit(f"seed {seed}: the repaired replay at window {p} did not finish")
            per[f"repaired-{p}"].append(float(rep["objectives"]["total_completion_time"]) / n)
        if log:
            log(f"seed {seed}: " + ", ".join(f"{key} {vals[-1]:.3f}" for key, vals in per.items())
                + f" ({time.perf_counter() - t0:.0f} s)")
    opt_mean = float(np.mean(per["optimus"]))
    means = {key: {"mean": float(np.mean(v)), "ratio_to_optimus": float(np.mean(v)) / opt_mean} for key, v in per.items()}
    return {"preset": preset, "variant": variant, "tasks": tasks, "gen_params": gen_params, "expert": expert,
            "time_limit": time_limit, "seeds": [SEED_BASE + k for k in range(seeds)], "windows": windows,
            "per_seed": per, "means": means}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="hetero-6")
    ap.add_argument("--variant", default="single", choices=("single", "multi"))
    ap.add_argument("--tasks", type=int, default=384)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--windows", default="10,20,40", help="pending window sizes, comma-separated (default 10,20,40)")
    ap.add_argument("--expert", default="placement-lns-online")
    ap.add_argument("--time-limit", type=float, default=600.0, help="the expert's seconds per instance (default 600)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="generator parameter")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    try:
        windows = [int(w) for w in a.windows.split(",") if w.strip()]
        gen = {}
        for item in a.set:
            key, eq, value = item.partition("=")
            if not eq:
                raise ValueError(f"--set {item!r} is not KEY=VALUE")
            try:
                gen[key] = json.loads(value)
            except json.JSONDecodeError:
                gen[key] = value
        if a.tasks <= 0 or a.seeds <= 0 or not windows or min(windows) <= 0:
            raise ValueError("--tasks, --seeds and every window must be positive")
    except ValueError as exc:
        print(f"tapfinger_window_repair: {exc}", file=sys.stderr)
        return 2
    from edgebench.instances.io import write_text_atomic

    out = measure(a.preset, a.variant, a.tasks, a.seeds, windows, expert=a.expert, time_limit=a.time_limit,
                  gen_params=gen)
    for key, m in out["means"].items():
        print(f"{key:>24}: {m['mean']:.3f} (ratio to Optimus {m['ratio_to_optimus']:.3f})")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(Path(a.out), json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
