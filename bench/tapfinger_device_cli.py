"""The ``edgebench train tapfinger`` command line end to end on a GPU (issue 42, item 5: ``--device
auto`` trains on CUDA when one is available; everything still trains, resumes and plays on the CPU).

bench/tapfinger_device.py measures the trainer's rate and reproducibility through ``train`` itself;
this script runs what a user runs, each step a separate process of the CLI:

1. ``auto-512``: 512 env steps with ``--device auto`` (CUDA where torch sees one), exported;
2. ``auto-resumed``: the same folder continued with ``--resume`` to 1,024 steps, exported;
3. ``auto-straight``: 1,024 steps straight in a fresh folder, exported: equal to 2 bit for bit when
   the device is deterministic (``train`` switches torch's deterministic algorithms on for CUDA);
4. ``cross-device``: a copy of 1's folder resumed **on the CPU** to 1,024 steps: a run folder moves
   between devices;
5. ``cpu-straight``: 1,024 steps straight on the CPU, for the CPU-against-CUDA difference;
6. every exported file (2, 4, 5) loaded and played **on the CPU** (``CUDA_VISIBLE_DEVICES=``) through
   the ``tapfinger`` solver on 3 held-out instances, scored by the referee, next to ``optimus``;
   and each file's sidecar read back (env steps, resumptions, device-independent load).

    OMP_NUM_THREADS=1 python bench/tapfinger_device_cli.py --json out.json     # on a GPU machine
    OMP_NUM_THREADS=1 python bench/tapfinger_device_cli.py --json out.json     # on a CPU one: all CPU

On a machine where edgebench is installed rather than checked out in place (the device machine:
``pip install --target``), set ``PYTHONSAFEPATH=1``: otherwise ``python -m`` puts the checkout first
on the path and its bare ``edgebench/`` folder shadows the installed package.

Writes one JSON: per step its device, wall seconds, exit status and last output line; the largest
absolute weight differences between the files; the sidecars' budgets; the evaluation. Exits 1 when
a step fails or a comparison that must hold does not (2 == 3 on a deterministic device, 2 == 4 ==
3 on the CPU alone)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ["-m", "edgebench", "train", "tapfinger", "--preset", "synthetic-3", "--variant", "multi",
         "--set", "num_tasks=24", "--num-envs", "4", "--rollout-steps", "16", "--hidden", "16",
         "--layers", "1", "--heads", "2", "--eval-every", "0", "--eval-episodes", "2", "--seed", "3"]


def run(cmd: list[str], *, cpu_only: bool = False) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    if cpu_only:
        env["CUDA_VISIBLE_DEVICES"] = ""
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, *cmd], cwd=ROOT, env=env, capture_output=True, text=True)
    lines = (p.stdout + p.stderr).strip().splitlines()
    return {"rc": p.returncode, "wall_s": round(time.perf_counter() - t0, 2),
            "last": lines[-1] if lines else "", "cpu_only": cpu_only}


def weights(path: Path) -> dict:
    from edgebench.learned.tapfinger import load_checkpoint

    model, _, _ = load_checkpoint(path)
    return model.state_dict()


def max_diff(a: Path, b: Path) -> float:
    wa, wb = weights(a), weights(b)
    if wa.keys() != wb.keys():
        return float("inf")
    return max(float((wa[k].double() - wb[k].double()).abs().max()) for k in wa)


def main(argv: list[str] | None = None) -> int:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", required=True, help="output JSON file")
    args = ap.parse_args(argv)
    cuda = torch.cuda.is_available()
    work = Path(tempfile.mkdtemp(prefix="tf-device-cli-"))
    out: dict = {"cuda_available": cuda, "torch": torch.__version__,
                 "gpu": torch.cuda.get_device_name(0) if cuda else None, "steps": {}}
    f = {k: work / f"{k}.pt" for k in ("auto-512", "auto-resumed", "auto-straight", "cross-device", "cpu-straight")}
    s = out["steps"]
    s["auto-512"] = run(TRAIN + ["--steps", "512", "--device", "auto", "--out", str(work / "a"),
                                 "--export", str(f["auto-512"])])
    if s["auto-512"]["rc"] == 0:
        shutil.copytree(work / "a", work / "x")
    s["auto-resumed"] = run(TRAIN + ["--steps", "1024", "--device", "auto", "--out", str(work / "a"), "--resume",
                                     "--export", str(f["auto-resumed"])])
    s["auto-straight"] = run(TRAIN + ["--steps", "1024", "--device", "auto", "--out", str(work / "b"),
                                      "--export", str(f["auto-straight"])])
    s["cross-device"] = run(TRAIN + ["--steps", "1024", "--device", "cpu", "--out", str(work / "x"), "--resume",
                                     "--export", str(f["cross-device"])], cpu_only=True)
    s["cpu-straight"] = run(TRAIN + ["--steps", "1024", "--device", "cpu", "--out", str(work / "c"),
                                     "--export", str(f["cpu-straight"])], cpu_only=True)
    ok = all(v["rc"] == 0 for v in s.values())
    if ok:
        out["max_abs_diff"] = {
            "resumed vs straight (auto)": max_diff(f["auto-resumed"], f["auto-straight"]),
            "cross-device vs resumed (auto)": max_diff(f["cross-device"], f["auto-resumed"]),
            "cpu-straight vs auto-straight": max_diff(f["cpu-straight"], f["auto-straight"])}
        out["sidecars"] = {k: json.loads(f[k].with_suffix(".json").read_text()).get("budget")
                           for k in ("auto-resumed", "auto-straight", "cross-device", "cpu-straight")}
        ev = work / "eval.json"
        solvers = ",".join(f"tapfinger@{f[k]}" for k in ("auto-resumed", "cross-device", "cpu-straight"))
        s["play-on-cpu"] = run(["bench/tapfinger_eval.py", "--preset", "synthetic-3", "--variant", "multi",
                                "--tasks", "24", "--seeds", "3", "--solvers", solvers + ",optimus",
                                "--out", str(ev)], cpu_only=True)
        if s["play-on-cpu"]["rc"] == 0:
            got = json.loads(ev.read_text())
            out["play_on_cpu"] = {k.split("/")[-1]: v for k, v in got["per_seed"].items()}
        d = out["max_abs_diff"]
        # on the CPU alone every run is the same run; on CUDA, resuming must not change the weights
        ok = s["play-on-cpu"]["rc"] == 0 and d["resumed vs straight (auto)"] == 0.0
        if not cuda:
            ok = ok and d["cross-device vs resumed (auto)"] == 0.0 and d["cpu-straight vs auto-straight"] == 0.0
    out["ok"] = ok
    Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
