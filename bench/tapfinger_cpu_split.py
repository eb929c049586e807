"""Where a TapFinger MAPPO update's CPU goes, old hot path vs new (issue 42, item 2: "old" is the
path before it, commit f72171f -- the unpacked graph and pointer, per-agent observations and
draws; "new" the packed path, array observations and draws), in CPU seconds of this process
(``time.process_time``: a loaded shared machine does not distort it).
For one setting, twice alternating old/new: rollout (16 envs x 32 steps, ``act_batch`` sampled
with the critic, ``PlacementVectorEnv.step``) in env steps per CPU second, and the PPO update
phase on those 512 samples (2 epochs x minibatch 128: ``_logp_entropy``, backward, Adam with
lr 0 so the weights stay put) in samples per CPU second; "combined" = one env step's rollout
plus its share of the update. Freshly initialised default network (hidden 64, 2 layers).

    OMP_NUM_THREADS=1 .venv/bin/python bench/tapfinger_cpu_split.py synthetic-3 \
        '{"num_tasks": 192, "switching_overhead": 0.0, "noise": 0.0}'
    OMP_NUM_THREADS=1 .venv/bin/python bench/tapfinger_cpu_split.py hetero-6 \
        '{"num_tasks": 384, "switching_overhead": 0.0, "noise": 0.0, "max_eligible": 6}'

``--flops PRESET PARAMS``: the update phase's floating-point operations and where its time goes
(:func:`flops`; docs/tapfinger.md, "Where the update's time goes, counted")::

    OMP_NUM_THREADS=1 .venv/bin/python bench/tapfinger_cpu_split.py --flops synthetic-3 \
        '{"num_tasks": 192, "switching_overhead": 0.0, "noise": 0.0}'

``--inputs PRESET PARAMS``: one-hot vs generic inputs instead (:func:`inputs_side_by_side`;
``--trainer``: the same through ``train`` itself, :func:`trainer_side_by_side`)::

    OMP_NUM_THREADS=1 .venv/bin/python bench/tapfinger_cpu_split.py --inputs hetero-6 \
        '{"num_tasks": 96, "switching_overhead": 0.0, "noise": 0.0, "max_eligible": 6}'
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import torch

from edgebench.learned import tapfinger as tf
from edgebench.learned import train_tapfinger as tt
from edgebench.learned.envs.placement import PlacementParallelEnv, PlacementVectorEnv


def set_path(new: bool) -> None:
    """Issue 42's hot path (new) or the one before it (typed projections and memoised masks on)."""
    tf.TYPED_PROJECTIONS = True
    PlacementParallelEnv.memo_masks = True
    tf.PACKED = new
    tf.ARRAY_SAMPLING = new
    PlacementParallelEnv.keep_grids = new


def fresh_setting(preset: str, params: dict):
    """(fresh default network with seed 0, 16 multi-variant envs of the setting, their layout)."""
    envs = [tf.make_env(preset=preset, params=params, variant="multi") for _ in range(16)]
    lay = tf.EnvLayout.of_env(envs[0])
    torch.manual_seed(0)
    return tf.make_model(tf.ModelConfig(), lay), envs, lay


def rollout(model, envs, lay) -> tuple[float, dict]:
    """One rollout (16 envs x 32 steps of sampled ``act_batch`` and ``PlacementVectorEnv.step``):
    (env steps per CPU s, the 512 samples as the update reads them)."""
    seeds = iter(range(10**6))
    venv = PlacementVectorEnv(envs, lambda env: env.reset(seed=next(seeds))[0])
    obs = venv.reset()
    rng = np.random.default_rng(0)
    recs = []
    c0 = time.process_time()
    for _ in range(32):
        actions, rec = tf.act_batch(model, envs, obs, lay, rng, greedy=False)
        obs, *_ = venv.step(actions)
        recs.append(rec)
    roll = 512 / (time.process_time() - c0)
    batch = {k: np.concatenate([r[k] for r in recs])
             for k in ("obs", "ids", "masks", "slot_ok", "alloc_ok", "void_ok", "slot", "alloc", "m", "cells")
             if k in recs[0]}
    return roll, batch


def update_phase(model, batch) -> float:
    """The PPO update phase on the 512 samples (2 epochs x minibatch 128: ``_logp_entropy``,
    backward, Adam with lr 0 so the weights stay put): samples per CPU s."""
    opt = torch.optim.Adam(model.parameters(), lr=0.0)  # lr 0: the same work, the weights stay put
    model.train()
    c0 = time.process_time()
    for ep in range(2):
        perm = np.random.default_rng(ep).permutation(512)
        for s in range(0, 512, 128):
            logp, ent, values = tt._logp_entropy(model, batch, perm[s:s + 128])
            loss = -logp.mean() - 0.01 * ent.mean() + values.square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    return 512 / (time.process_time() - c0)


def one_round(model, envs, lay) -> tuple[float, float]:
    """(rollout env steps per CPU s, update samples per CPU s) of one rollout and update."""
    roll, batch = rollout(model, envs, lay)
    return roll, update_phase(model, batch)


def flops(preset: str, params: dict) -> dict[str, float]:
    """Where the update phase's time goes, counted (session 21): its floating-point operations
    (``torch.profiler`` with ``with_flops``: the matrix products), its CPU seconds, the GFLOP/s
    achieved, this core's matrix-product rate at the update's own shapes and at a large one, and
    the operations by self CPU time. Current path, fresh default network, one thread."""
    from torch.profiler import ProfilerActivity, profile

    torch.set_num_threads(1)
    set_path(True)
    model, envs, lay = fresh_setting(preset, params)
    _, batch = rollout(model, envs, lay)
    update_phase(model, batch)  # warm
    rate = max(update_phase(model, batch) for _ in range(2))
    with profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
        update_phase(model, batch)
    avg = prof.key_averages()
    gflop = sum(e.flops for e in avg if e.flops) / 1e9
    cpu_s = 512 / rate
    print(f"{preset}: update phase {gflop:.2f} GFLOP per 512 samples in {cpu_s:.3f} CPU s (best of two): "
          f"{gflop / cpu_s:.1f} GFLOP/s; by op: "
          + ", ".join(f"{e.key} {e.flops / 1e9:.2f}" for e in avg if e.flops))
    peaks = {}
    for m, k, n in ((2816, 64, 64), (2816, 64, 192), (4096, 1024, 1024)):
        a, b = torch.randn(m, k), torch.randn(k, n)
        for _ in range(3):
            a @ b
        reps = max(3, int(2e9 / (2 * m * k * n)))
        c0 = time.process_time()
        for _ in range(reps):
            a @ b
        peaks[f"{m}x{k}x{n}"] = 2 * m * k * n * reps / (time.process_time() - c0) / 1e9
    print("matrix products on this core: " + ", ".join(f"{k} {v:.1f} GFLOP/s" for k, v in peaks.items()))
    print(f"the arithmetic alone at the best of those rates: {gflop / max(peaks.values()):.3f} CPU s "
          f"({512 / (gflop / max(peaks.values())):.0f} samples per CPU s)")
    total = sum(e.self_cpu_time_total for e in avg)
    for e in sorted(avg, key=lambda e: -e.self_cpu_time_total)[:12]:
        print(f"  {e.key:40s} {100 * e.self_cpu_time_total / total:5.1f} % self CPU, {e.count} calls")
    return {"gflop": gflop, "cpu_s": cpu_s, **peaks}


def combined(roll: float, upd: float) -> float:
    return 1.0 / (1.0 / roll + 1.0 / upd)


def main(preset: str, params: dict) -> None:
    torch.set_num_threads(1)
    model, envs, lay = fresh_setting(preset, params)
    res: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
    try:
        for _ in range(2):
            for key in ("old", "new"):
                set_path(key == "new")
                roll, upd = one_round(model, envs, lay)
                res[key].append((roll, upd))
                print(f"{preset} {key}: rollout {roll:.1f} env steps per CPU s, update phase {upd:.1f} samples per "
                      f"CPU s, combined {combined(roll, upd):.1f}", flush=True)
    finally:
        set_path(True)
    best = {k: (max(r for r, _ in v), max(u for _, u in v)) for k, v in res.items()}
    for k, (r, u) in best.items():
        print(f"best {k}: rollout {r:.1f} update {u:.1f} combined {combined(r, u):.1f}")
    (ro, uo), (rn, un) = best["old"], best["new"]
    print(f"ratios new/old: rollout {rn / ro:.2f} update {un / uo:.2f} combined {combined(rn, un) / combined(ro, uo):.2f}")


def inputs_side_by_side(preset: str, params: dict, rounds: int = 2) -> dict[str, tuple[float, float]]:
    """Issue 42 item 4's throughput: the one-hot model, the generic model (``--inputs generic``,
    bit for bit the first generic trajectory) and the generic model with the sparse allocation
    head (``--sparse-alloc``) at the same setting and network size, on the current path,
    alternating ``rounds`` times; returns the best (rollout, update) of each and prints each round
    and the one-hot/generic ratios of the combined rate (issue 42 item 4's target: at most 2)."""
    torch.set_num_threads(1)
    set_path(True)
    built = {}
    for name, inputs in (("onehot", "onehot"), ("generic", "generic"), ("generic-sparse", "generic")):
        envs = [tf.make_env(preset=preset, params=params, variant="multi", inputs=inputs) for _ in range(16)]
        lay = tf.EnvLayout.of_env(envs[0])
        torch.manual_seed(0)
        model = tf.make_model(tf.ModelConfig(inputs=inputs), lay).eval()
        model.sparse_alloc = name == "generic-sparse"
        built[name] = (model, envs, lay)
    res: dict[str, list[tuple[float, float]]] = {k: [] for k in built}
    for _ in range(rounds):
        for name, (model, envs, lay) in built.items():
            roll, upd = one_round(model, envs, lay)
            res[name].append((roll, upd))
            print(f"{preset} {name}: rollout {roll:.1f} env steps per CPU s, update phase {upd:.1f} samples per "
                  f"CPU s, combined {combined(roll, upd):.1f}", flush=True)
    best = {k: (max(r for r, _ in v), max(u for _, u in v)) for k, v in res.items()}
    for k, (r, u) in best.items():
        print(f"best {k}: rollout {r:.1f} update {u:.1f} combined {combined(r, u):.1f}")
    for k in ("generic", "generic-sparse"):
        print(f"ratio onehot/{k} combined {combined(*best['onehot']) / combined(*best[k]):.2f} (target <= 2)")
    return best


def trainer_side_by_side(preset: str, params: dict, rounds: int = 2, steps: int = 1024) -> dict[str, float]:
    """The same comparison through the trainer itself (``train``: 16 envs x 32 steps per update,
    its default 4 epochs x minibatch 64, ``steps`` env steps, one held-out episode at the start
    and at the end, no output folder): env steps per CPU second of the whole ``train`` call
    (``ledger["cpu_seconds"]``), alternating one-hot / generic / generic sparse ``rounds`` times;
    returns the best of each."""
    import tempfile

    torch.set_num_threads(1)
    set_path(True)
    variants = {"onehot": ("onehot", False), "generic": ("generic", False), "generic-sparse": ("generic", True)}
    res: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(rounds):
        for name, (inputs, sparse) in variants.items():
            with tempfile.TemporaryDirectory() as d:
                out = tt.train(tt.TrainArgs(preset=preset, variant="multi", gen_params=params, seed=0, num_envs=16,
                                            rollout_steps=32, steps=steps, eval_every=0, eval_episodes=1,
                                            device="cpu", out=d, model=tf.ModelConfig(inputs=inputs),
                                            sparse_alloc=sparse), log=None)
            sps = out["ledger"]["env_steps"] / out["ledger"]["cpu_seconds"]
            res[name].append(sps)
            print(f"{preset} trainer {name}: {sps:.1f} env steps per CPU s", flush=True)
    best = {k: max(v) for k, v in res.items()}
    for k in ("generic", "generic-sparse"):
        print(f"trainer ratio onehot/{k} {best['onehot'] / best[k]:.2f} (target <= 2)")
    return best


if __name__ == "__main__":
    if sys.argv[1] == "--flops":
        flops(sys.argv[2], json.loads(sys.argv[3]))
    elif sys.argv[1] == "--inputs":
        inputs_side_by_side(sys.argv[2], json.loads(sys.argv[3]))
    elif sys.argv[1] == "--trainer":
        trainer_side_by_side(sys.argv[2], json.loads(sys.argv[3]))
    else:
        main(sys.argv[1], json.loads(sys.argv[2]))
