"""Where a TapFinger checkpoint's greedy play loses its time against its sampled play (issue 42,
item 4: type-generic runs whose sampled training episodes average 9-14 steps while their greedy
validation gives 30-420; docs/tapfinger.md "Type-generic inputs: the greedy gap").

Each checkpoint (a ``train tapfinger`` file whose sidecar args name its preset, generator
parameters, variant and validation seeds) plays its run's first K validation instances (the
trainer's ``val_seed_base`` + k, episode seed k, as ``evaluate``) with five decodings of the
same network:

* ``greedy``: argmax pointer and allocation (``tapfinger.run_episode``, the validation's play);
* ``sample-pointer`` / ``sample-alloc``: that head sampled from the float64 policy, the other greedy;
* ``sample-both``: both sampled (the training rollout's policy);
* ``greedy-novoid``: greedy, with the pointer's void entry barred whenever a slot is placeable.

The acting code makes every greedy choice through ``tapfinger.pick_max`` (pointer rows: the
P + 1 log-probabilities and their mask; allocation rows: the grid's; conflicts: no mask), so a
decoding is a replacement of that one function for the episode; the network, masks, conflict
rule and env are the acting code's own. Per decoding, summed over the episodes: real timesteps,
logical steps, agent decisions with a placeable slot ("active"), the void picks among them,
"stalls" (timesteps executed after a logical step in which some agent could start a task and
none did), starts, the mean allocation (network grid cells, cpu/gpu) and the fraction of starts
at the smallest allowed cell; the smallest margin of a greedy choice (``pick_max``: a tie would
show as a margin near ``TIE_TOL``); and the mean completion time per episode.

    OMP_NUM_THREADS=1 .venv/bin/python bench/tapfinger_greedy_gap.py CHECKPOINT ... [--seeds K]
    [--decodings greedy,sample-alloc,...]
"""

from __future__ import annotations

import argparse
import contextlib
import sys

import numpy as np

from edgebench.errors import InputError
from edgebench.instances.generators import generate
from edgebench.learned import tapfinger as tf
from edgebench.learned.acting import pick_max

DECODINGS = ("greedy", "sample-pointer", "sample-alloc", "sample-both", "greedy-novoid")


def decoder(decoding: str, pointer_len: int, rng: np.random.Generator):
    """The replacement of ``tapfinger.pick_max`` for ``decoding`` (scores are log-probabilities)."""
    sample = {"greedy": (), "sample-pointer": ("pointer",), "sample-alloc": ("alloc",),
              "sample-both": ("pointer", "alloc"), "greedy-novoid": ()}[decoding]

    def choose(scores, ok=None, tol=None):
        s = np.asarray(scores, dtype=np.float64)
        kind = None if ok is None else ("pointer" if len(ok) == pointer_len else "alloc")
        if kind in sample:
            ok = np.asarray(ok, dtype=bool)
            p = np.where(ok, np.exp(s - s[ok].max()), 0.0)
            return int(rng.choice(len(p), p=p / p.sum())), np.inf
        if kind == "pointer" and decoding == "greedy-novoid" and np.asarray(ok)[:-1].any():
            ok = np.array(ok, dtype=bool)
            ok[-1] = False
        return pick_max(s, ok) if tol is None else pick_max(s, ok, tol)

    return choose


@contextlib.contextmanager
def decoding_of(choose):
    saved = tf.pick_max
    tf.pick_max = choose
    try:
        yield
    finally:
        tf.pick_max = saved


def play(model, inst, variant: str, seed: int, decoding: str) -> dict[str, float]:
    """One episode of ``inst`` with ``decoding``: its counts (module docstring)."""
    env = tf.make_env(inst, variant=variant, inputs=model.cfg.inputs)
    lay = tf.generic_layout(env) if model.cfg.inputs == "generic" else tf.EnvLayout.of_env(env)
    P, G1 = lay.pending_size, lay.max_gpu + 1
    if lay.grid == P + 1:
        raise InputError(f"the allocation grid has as many cells as the pointer ({P + 1}): decodings ambiguous",
                         field="layout")
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed, options={"instance": inst})
    net = tf.acting_model(model)
    c = dict(timesteps=0, logical=0, active=0, voids=0, stalls=0, starts=0, cpu=0.0, gpu=0.0, at_min=0, margin=np.inf)
    info: dict = {}
    with decoding_of(decoder(decoding, P + 1, rng)):
        while env.agents:
            actions, rec = tf.act(net, env, obs, lay, rng, greedy=True, values=False)
            active, slot, won = rec["active"], rec["slot"], rec["m"]
            c["active"] += int(active.sum())
            c["voids"] += int((active & (slot == P)).sum())
            c["starts"] += int(won.sum())
            c["margin"] = min(c["margin"], float(rec["margin"]))
            for n in np.flatnonzero(won):
                cpu, gpu = divmod(int(rec["alloc"][n]), G1)
                cs, gs = np.divmod(np.flatnonzero(rec["alloc_ok"][n]), G1)
                c["cpu"] += cpu
                c["gpu"] += gpu
                c["at_min"] += int(cpu == cs.min() and gpu == gs.min())
            obs, _, _, _, infos = env.step(actions)
            c["logical"] += 1
            info = next(iter(infos.values()))
            c["stalls"] += int(info["advanced"] and active.any() and not won.any())
    c["timesteps"] = int(env.sim.t)
    c["done"] = info.get("objectives") is not None
    c["mean_ct"] = float(info["objectives"]["mean_completion_time"]) if c["done"] else float("nan")
    return c


def measure(path: str, seeds: int, decodings) -> list[str]:
    model, _, blob = tf.load_checkpoint(path)
    args = (blob.get("extra") or {}).get("args")
    if not isinstance(args, dict) or not {"preset", "gen_params", "variant"} <= set(args):
        raise InputError("no training args (preset, gen_params, variant) in the checkpoint", file=path,
                         field="extra.args")
    base = int(args.get("val_seed_base") or 2_000_000_000)
    insts = [generate("placement", args["preset"], seed=base + k, **args["gen_params"]) for k in range(seeds)]
    lines = []
    for d in decodings:
        runs = [play(model, inst, args["variant"], k, d) for k, inst in enumerate(insts)]
        tot = {k: sum(r[k] for r in runs) for k in runs[0] if k not in ("done", "mean_ct", "margin")}
        s = max(tot["starts"], 1)
        cts = [r["mean_ct"] for r in runs]
        lines.append(f"{path} {d:15s} mean_ct {np.mean(cts):8.2f} per seed {np.round(cts, 2).tolist()} | "
                     f"timesteps {tot['timesteps']} logical {tot['logical']} active {tot['active']} voids "
                     f"{tot['voids']} stalls {tot['stalls']} starts {tot['starts']} mean alloc "
                     f"({tot['cpu'] / s:.2f}, {tot['gpu'] / s:.2f}) at minimum {tot['at_min'] / s:.2f} | smallest greedy margin "
                     f"{min(r['margin'] for r in runs):.2e}")
    return lines


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoints", nargs="+")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--decodings", default=",".join(DECODINGS))
    a = ap.parse_args(argv)
    decodings = a.decodings.split(",")
    try:
        bad = [d for d in decodings if d not in DECODINGS]
        if bad or a.seeds < 1:
            raise InputError(f"decodings must be among {', '.join(DECODINGS)} and seeds >= 1, got {bad or a.seeds}",
                             field="arguments")
        for path in a.checkpoints:
            for line in measure(path, a.seeds, decodings):
                print(line, flush=True)
    except (InputError, OSError) as exc:
        print(f"tapfinger_greedy_gap: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
