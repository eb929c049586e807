"""TapFinger MAPPO training on the CPU and on a GPU, side by side on one machine (issue 42, item 5:
``--device auto`` trains on CUDA when one is available; everything still trains, resumes and
passes on the CPU).

For each setting and device, in one process and alternating devices (cpu, cuda, cpu, cuda, ...):
a MAPPO run of ``--updates`` updates through :func:`train` itself (16 envs x 32 steps, 2 epochs x
minibatch 128, a freshly initialised network, one CPU thread).  The rate is measured over the
updates after the first (the first holds CUDA's start-up and the allocator's warm-up), from the
trainer's own per-update log lines: env steps per wall second and per CPU second of this process
(``time.process_time``).  Then, on every device asked for: the resumption check of
tests/learned/test_tapfinger_resume.py (N updates straight against N/2 + stop + resume + N/2,
weights compared bit for bit and by their largest absolute difference) and a repeat of the straight
run (same seed, same device: is the device itself deterministic?).

    OMP_NUM_THREADS=1 python bench/tapfinger_device.py --json bench/results/tapfinger-device.json
    OMP_NUM_THREADS=1 python bench/tapfinger_device.py --quick --devices cpu   # a smoke run

Writes one JSON (the settings, each run's rates, the check's differences, the machine).
Measured on an H200 (session 18): bench/results/tapfinger-device-h200-issue42.json and
docs/tapfinger.md, "Training on a GPU". ``train`` switches on deterministic algorithms on CUDA
itself (``tapfinger.make_deterministic``); ``--deterministic`` switches them on for the whole
process, as the session-18 measurement did before that.

The command line end to end on a GPU (export, resume, a folder resumed on the other device, the
files played on the CPU) is bench/tapfinger_device_cli.py, run on an H200 in session 24."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from edgebench.learned import tapfinger as tf
from edgebench.learned.train_tapfinger import TrainArgs, train

#: the paper-scale settings of issue 42's throughput targets (authors' settings: no switching
#: loss, no noise; hetero-6 with eligibility 1..6), plus the paper's own network size on hetero-6
SETTINGS = {
    "synthetic-3-multi-192": dict(preset="synthetic-3", variant="multi",
                                  gen_params={"num_tasks": 192, "switching_overhead": 0.0, "noise": 0.0},
                                  model=tf.ModelConfig()),
    "hetero-6-multi-384": dict(preset="hetero-6", variant="multi",
                               gen_params={"num_tasks": 384, "switching_overhead": 0.0, "noise": 0.0,
                                           "max_eligible": 6},
                               model=tf.ModelConfig()),
    "hetero-6-multi-384-paper-net": dict(preset="hetero-6", variant="multi",
                                         gen_params={"num_tasks": 384, "switching_overhead": 0.0, "noise": 0.0,
                                                     "max_eligible": 6},
                                         model=tf.ModelConfig(hidden=256, layers=6, heads=4)),
}
QUICK = {
    "synthetic-3-multi-24": dict(preset="synthetic-3", variant="multi", gen_params={"num_tasks": 24},
                                 model=tf.ModelConfig(hidden=16, layers=1, heads=2)),
}
#: the resumption check's run (tests/learned/test_tapfinger_resume.py's BASE)
RESUME = dict(preset="synthetic-3", variant="multi", gen_params={"num_tasks": 12}, seed=3, num_envs=4,
              rollout_steps=8, epochs=2, minibatch=16, eval_every=0, eval_episodes=1, threads=1,
              critic_warmup=1, val_episodes=1, model=tf.ModelConfig(hidden=16, layers=1, heads=2))
RESUME_UPDATES = 6


def rate(setting: dict, device: str, updates: int, num_envs: int, rollout: int, out: Path) -> dict:
    """One run of ``updates`` updates; env steps per wall / CPU second after the first update."""
    marks: list[tuple[int, float, float]] = []

    def log(msg: str) -> None:
        parts = msg.split()
        if len(parts) > 3 and parts[0] == "update" and parts[2] == "step":
            marks.append((int(parts[3].split("/")[0]), time.perf_counter(), time.process_time()))

    steps = updates * num_envs * rollout
    res = train(TrainArgs(**setting, steps=steps, seed=0, num_envs=num_envs, rollout_steps=rollout, epochs=2,
                          minibatch=128, eval_every=0, eval_episodes=1, threads=1, device=device, out=str(out)),
                log=log)
    # the last update's line comes after the final evaluation: measure from update 1 to update U-1
    # ("resolved": the device train() ran on; its model comes back on the CPU)
    (s0, w0, c0), (s1, w1, c1) = marks[0], marks[-2]
    return {"device": device, "resolved": str(tf.resolve_device(device)), "updates": updates,
            "steps_measured": s1 - s0, "wall_s": w1 - w0, "cpu_s": c1 - c0,
            "steps_per_wall_s": (s1 - s0) / (w1 - w0), "steps_per_cpu_s": (s1 - s0) / (c1 - c0),
            "train_mean_ct_last": res["history"][-2].get("train_mean_ct") if len(res["history"]) > 1 else None}


def weights(path: Path) -> dict[str, np.ndarray]:
    model, _, _ = tf.load_checkpoint(path)
    return {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}


def compare(a: dict, b: dict) -> dict:
    diff = max(float(np.max(np.abs(a[k].astype(np.float64) - b[k].astype(np.float64)))) if a[k].size else 0.0
               for k in a)
    return {"identical": a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a), "max_abs_diff": diff}


def resume_check(device: str, tmp: Path) -> dict:
    steps = RESUME_UPDATES * RESUME["num_envs"] * RESUME["rollout_steps"]
    runs = {}
    for name, parts in (("straight", [steps]), ("repeat", [steps]), ("split", [steps // 2, steps])):
        out = tmp / f"resume-{device.replace(':', '-')}-{name}"
        for i, s in enumerate(parts):
            train(TrainArgs(**RESUME, steps=s, out=str(out), device=device, resume=i > 0), log=None)
        runs[name] = weights(out / "last.pt")
    return {"device": device, "updates": RESUME_UPDATES,
            "split_vs_straight": compare(runs["straight"], runs["split"]),
            "repeat_vs_straight": compare(runs["straight"], runs["repeat"])}


def machine() -> dict:
    info = {"python": sys.version.split()[0], "torch": torch.__version__, "platform": platform.platform(),
            "cpu_count": os.cpu_count(), "cuda_available": torch.cuda.is_available()}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        info["cuda"] = torch.version.cuda
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--devices", default="cpu,cuda", help="comma-separated (default cpu,cuda)")
    ap.add_argument("--settings", default=None, help="comma-separated names (default: all)")
    ap.add_argument("--updates", type=int, default=4, help="updates per run (default 4; the first is not timed)")
    ap.add_argument("--rounds", type=int, default=1, help="alternations of the devices per setting (default 1)")
    ap.add_argument("--quick", action="store_true", help="a tiny setting (a smoke run)")
    ap.add_argument("--no-resume-check", action="store_true")
    ap.add_argument("--deterministic", action="store_true",
                    help="torch.use_deterministic_algorithms(True) (CUDA: with CUBLAS_WORKSPACE_CONFIG=:4096:8)")
    a = ap.parse_args(argv)
    if a.deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
    devices = [d for d in a.devices.split(",") if d]
    if any(d.startswith("cuda") for d in devices) and not torch.cuda.is_available():
        print("no CUDA device here: --devices cpu", file=sys.stderr)
        return 2
    table = QUICK if a.quick else SETTINGS
    names = a.settings.split(",") if a.settings else list(table)
    result: dict = {"machine": machine(), "deterministic": a.deterministic, "updates": a.updates, "num_envs": 16, "rollout_steps": 32, "rates": [],
                    "resume": []}
    def save() -> None:  # after every row: a run stopped at its time limit keeps what it measured
        if a.json:
            Path(a.json).parent.mkdir(parents=True, exist_ok=True)
            Path(a.json).write_text(json.dumps(result, indent=1) + "\n")

    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        for name in names:
            for r in range(a.rounds):
                for dev in devices:
                    row = {"setting": name, "round": r,
                           **rate(table[name], dev, a.updates, 16, 32, tmp_path / f"{name}-{dev}-{r}")}
                    result["rates"].append(row)
                    print(json.dumps(row), flush=True)
                    save()
        if not a.no_resume_check:
            for dev in devices:
                row = resume_check(dev, tmp_path)
                result["resume"].append(row)
                print(json.dumps(row), flush=True)
                save()
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
