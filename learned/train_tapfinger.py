"""MAPPO training of TapFinger (:mod:`edgebench.learned.tapfinger`) on the placement environment.

One readable file in the CleanRL manner: a dataclass of arguments, an explicit rollout loop
that stores every agent's observation, pending ids and action masks in the buffer, GAE per
agent, and a clipped-surrogate update that re-applies the stored masks. The policy ratio is
taken on log Pr(j | n) + m log Pr*(x | j, n) with m = 1 only for the agent that won its task's
conflict; agents whose only action was void this step (idle or full clusters) are left out of
the policy loss. Variant "multi": several logical steps per real interval (the env handles
them; intermediate rewards are 0) and gamma = 1.

Training instances are drawn from the generator with seeds in [0, 10**9) from the run's
RNG; evaluation uses the held-out seeds 10**9 + k (k = 0 .. eval_episodes-1), greedy actions.
See ``docs/tapfinger.md``.
"""

from __future__ import annotations

import csv
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from edgebench.learned import tapfinger as tf

__all__ = ["TrainArgs", "train", "evaluate", "EVAL_SEED_BASE"]

EVAL_SEED_BASE = 10**9


@dataclass
class TrainArgs:
    preset: str = "synthetic-3"
    variant: str = "multi"  # "single" or "multi"
    gen_params: dict[str, Any] = field(default_factory=lambda: {"num_tasks": 24})
    steps: int = 20_000  # environment steps (env.step calls, logical steps in "multi")
    seed: int = 0
    num_envs: int = 8  # environments stepped in lockstep (one batched forward pass per step)
    rollout_steps: int = 32  # steps per environment per update
    epochs: int = 4
    minibatch: int = 64
    lr: float = 1e-3
    gamma: float | None = None  # None: 1.0 for "multi", 0.99 for "single"
    gae_lambda: float = 0.95
    clip: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    reward_scale: float = 0.1
    eval_every: int = 5  # updates between evaluations (0: only at the end)
    eval_episodes: int = 4
    threads: int = 1
    model: tf.ModelConfig = field(default_factory=tf.ModelConfig)
    out: str | None = None  # folder: metrics.csv, TensorBoard events, last.pt, best.pt
    resume: bool = False  # continue from out/last.pt

    def resolved_gamma(self) -> float:
        return self.gamma if self.gamma is not None else (1.0 if self.variant == "multi" else 0.99)


def evaluate(model, args: TrainArgs, lay: tf.EnvLayout, *, episodes: int | None = None,
             greedy: bool = True) -> dict[str, float]:
    """Episodes on the held-out seeds 10**9 + k (greedy, or sampled with seed k): mean completion
    time (steps) over episodes, fraction of episodes that finished every task, ms per decision."""
    from edgebench.instances.generators import generate

    env = tf.make_env(preset=args.preset, params=args.gen_params, variant=args.variant, lay=lay)
    cts, dones, dt = [], [], []
    for k in range(episodes or args.eval_episodes):
        inst = generate("placement", args.preset, seed=EVAL_SEED_BASE + k, **args.gen_params)
        out = tf.run_episode(model, env, lay, seed=k, greedy=greedy, instance=inst)
        cts.append(out["mean_ct"])
        dones.append(out["done"])
        dt.append(out["decision_time"])
    return {"eval_mean_ct": float(np.mean(cts)), "eval_done": float(np.mean(dones)),
            "ms_per_decision": 1000.0 * float(np.mean(dt))}


def _logp_entropy(model, batch: dict, idx: np.ndarray):
    """Recompute log pi and entropies of the stored actions with the stored masks."""
    import torch

    masks = torch.as_tensor(batch["masks"][idx])
    logits, z, clus, values = model(batch["obs"][idx], batch["ids"][idx], masks, batch["void_ok"][idx])
    slot = torch.as_tensor(batch["slot"][idx])
    m = torch.as_tensor(batch["m"][idx]).float()
    logp_s = torch.log_softmax(logits, -1)
    lp_slot = logp_s.gather(-1, slot.unsqueeze(-1)).squeeze(-1)
    ent_slot = -(logp_s.exp() * logp_s).sum(-1)
    al = model.alloc_logits(z, clus, slot, masks)
    logp_a = torch.log_softmax(al, -1)
    lp_alloc = logp_a.gather(-1, torch.as_tensor(batch["alloc"][idx]).unsqueeze(-1)).squeeze(-1)
    ent_alloc = -(logp_a.exp() * logp_a).sum(-1)
    if model.cfg.pointer == "random":  # the ablation's selection has no parameters
        lp_slot = torch.zeros_like(lp_slot)
        ent_slot = torch.zeros_like(ent_slot)
    logp = lp_slot + m * lp_alloc
    return logp, ent_slot + m * ent_alloc, values


def train(args: TrainArgs, *, log: Callable[[str], None] | None = print) -> dict[str, Any]:
    """Run MAPPO; returns {"model", "layout", "history" (list of metric rows), "final" (last eval)}."""
    import torch

    from edgebench.instances.generators import generate

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    envs = [tf.make_env(preset=args.preset, params=args.gen_params, variant=args.variant)
            for _ in range(args.num_envs)]
    lay = tf.EnvLayout.of_env(envs[0])
    model = tf.make_model(args.model, lay)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, eps=1e-5)
    gamma = args.resolved_gamma()
    out = Path(args.out) if args.out else None
    history: list[dict[str, Any]] = []
    global_step, update, best = 0, 0, float("inf")
    if out is not None and args.resume and (out / "last.pt").is_file():
        blob = torch.load(out / "last.pt", map_location="cpu", weights_only=False)
        model.load_state_dict(blob["state_dict"])
        opt.load_state_dict(blob["optimizer"])
        st = blob["extra"]["train_state"]
        global_step, update, best = st["global_step"], st["update"], st["best"]
        rng.bit_generator.state = st["rng"]
        torch.set_rng_state(blob["extra"]["torch_rng"])
        history = st["history"]
    writer = None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "args.json").write_text(json.dumps(asdict(args), indent=2, default=str))
        try:
            from torch.utils.tensorboard import SummaryWriter

            writer = SummaryWriter(str(out / "tb"))
        except ImportError:  # tensorboard missing: CSV only
            writer = None

    def record(row: dict[str, Any]) -> None:
        history.append(row)
        if out is not None:
            path = out / "metrics.csv"
            keys = ["update", "global_step", "sps", "episodes", "train_mean_ct", "policy_loss", "value_loss",
                    "entropy", "approx_kl", "eval_mean_ct", "eval_done", "ms_per_decision"]
            new = not path.exists()
            with open(path, "a", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=keys, extrasaction="ignore")
                if new:
                    w.writeheader()
                w.writerow(row)
        if writer is not None:
            for k, v in row.items():
                if isinstance(v, (int, float)) and k not in ("update", "global_step") and v == v:
                    writer.add_scalar(k, v, row["global_step"])
            writer.flush()

    def new_episode(env):
        inst = generate("placement", args.preset, seed=int(rng.integers(0, EVAL_SEED_BASE)), **args.gen_params)
        return env.reset(seed=int(rng.integers(0, 2**31 - 1)), options={"instance": inst})[0]

    if update == 0 and not history:
        row = {"update": 0, "global_step": 0, **evaluate(model, args, lay)}
        record(row)
        if log:
            log(f"update 0: held-out mean completion time {row['eval_mean_ct']:.3f} (random init)")
    obs = [new_episode(env) for env in envs]
    ep_ret = np.zeros(args.num_envs)
    t_start = time.perf_counter()
    steps_at_start = global_step
    N, E = lay.n, args.num_envs
    while global_step < args.steps:
        model.eval()
        buf: dict[str, list] = {k: [] for k in ("obs", "ids", "masks", "void_ok", "slot", "alloc", "m", "active", "logp",
                                                 "value", "reward", "done")}
        ep_cts: list[float] = []
        for _ in range(args.rollout_steps):
            actions, rec = tf.act_batch(model, envs, obs, lay, rng, greedy=False)
            rewards, dones = np.zeros((E, N)), np.zeros(E)
            for e, env in enumerate(envs):
                obs[e], rew, _, _, _ = env.step(actions[e])
                rewards[e] = [rew.get(a, 0.0) for a in env.possible_agents]
                ep_ret[e] += rewards[e].sum()
                if not env.agents:  # terminated or truncated: a fresh training instance
                    dones[e] = 1.0
                    ep_cts.append(-ep_ret[e] / env.sim.num_tasks)
                    ep_ret[e] = 0.0
                    obs[e] = new_episode(env)
            for k, v in rec.items():
                buf[k].append(v)
            buf["reward"].append(rewards * args.reward_scale)
            buf["done"].append(dones)
            global_step += E
        batch = {k: np.stack(v) for k, v in buf.items()}  # (T, E, ...)
        _, rec = tf.act_batch(model, envs, obs, lay, np.random.default_rng(0), greedy=True)
        next_value = rec["value"]  # (E, N): bootstrap after the rollout
        T = args.rollout_steps
        adv = np.zeros((T, E, N))
        last = np.zeros((E, N))
        for t in reversed(range(T)):
            nv = next_value if t == T - 1 else batch["value"][t + 1]
            nonterm = 1.0 - batch["done"][t][:, None]
            delta = batch["reward"][t] + gamma * nv * nonterm - batch["value"][t]
            last = delta + gamma * args.gae_lambda * nonterm * last
            adv[t] = last
        ret = adv + batch["value"]
        batch = {k: v.reshape(T * E, *v.shape[2:]) for k, v in batch.items()}
        adv, ret = adv.reshape(T * E, N), ret.reshape(T * E, N)
        T = T * E
        active = batch["active"].astype(bool)
        model.train()
        stats = {"policy_loss": [], "value_loss": [], "entropy": [], "approx_kl": []}
        for _ in range(args.epochs):
            perm = rng.permutation(T)
            for s in range(0, T, args.minibatch):
                idx = perm[s:s + args.minibatch]
                act_mb = torch.as_tensor(active[idx])
                if not act_mb.any():
                    continue
                logp, ent, values = _logp_entropy(model, batch, idx)
                old = torch.as_tensor(batch["logp"][idx], dtype=torch.float32)
                a = torch.as_tensor(adv[idx], dtype=torch.float32)
                a_act = a[act_mb]
                a = (a - a_act.mean()) / (a_act.std() + 1e-8) if a_act.numel() > 1 else a
                ratio = torch.exp(torch.where(act_mb, logp - old, torch.zeros_like(logp)))
                s1 = ratio * a
                s2 = torch.clamp(ratio, 1 - args.clip, 1 + args.clip) * a
                pl = -torch.min(s1, s2)[act_mb].mean()
                vl = 0.5 * ((values - torch.as_tensor(ret[idx], dtype=torch.float32)) ** 2).mean()
                en = ent[act_mb].mean()
                loss = pl + args.vf_coef * vl - args.ent_coef * en
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
                opt.step()
                with torch.no_grad():
                    kl = ((ratio - 1) - torch.log(ratio))[act_mb].mean().item()
                stats["policy_loss"].append(pl.item())
                stats["value_loss"].append(vl.item())
                stats["entropy"].append(en.item())
                stats["approx_kl"].append(kl)
        update += 1
        sps = (global_step - steps_at_start) / max(time.perf_counter() - t_start, 1e-9)
        row: dict[str, Any] = {"update": update, "global_step": global_step, "sps": sps, "episodes": len(ep_cts),
                               "train_mean_ct": float(np.mean(ep_cts)) if ep_cts else float("nan"),
                               **{k: float(np.mean(v)) if v else float("nan") for k, v in stats.items()}}
        last_update = global_step >= args.steps
        if (args.eval_every and update % args.eval_every == 0) or last_update:
            row.update(evaluate(model, args, lay))
            if out is not None and row["eval_mean_ct"] < best:
                best = row["eval_mean_ct"]
                tf.save_checkpoint(out / "best.pt", model, lay, extra={"args": asdict(args), "eval": row})
        record(row)
        if log:
            msg = (f"update {update} step {global_step}/{args.steps} sps {sps:.0f} "
                   f"train_ct {row['train_mean_ct']:.3f} pl {row['policy_loss']:.3f} vl {row['value_loss']:.3f} "
                   f"ent {row['entropy']:.3f}")
            if "eval_mean_ct" in row:
                msg += f" eval_ct {row['eval_mean_ct']:.3f} done {row['eval_done']:.2f}"
            log(msg)
        if out is not None:
            st = {"global_step": global_step, "update": update, "best": best, "rng": rng.bit_generator.state,
                  "history": history}
            tf.save_checkpoint(out / "last.pt", model, lay, optimizer=opt,
                               extra={"args": asdict(args), "train_state": st, "torch_rng": torch.get_rng_state()})
    if writer is not None:
        writer.close()
    final = next((h for h in reversed(history) if "eval_mean_ct" in h), {})
    return {"model": model, "layout": lay, "history": history, "final": final}
