"""Training CES-PPO (and its ablation, and PPO-Balance) with PPO: one readable file.

The style follows CleanRL's single-file PPO: a dataclass of arguments, an explicit rollout
loop over a few environments, a rollout buffer that stores the observation, the **action
mask**, the action, its log-probability, the reward, the done flag and the value; GAE; then
several epochs of clipped-surrogate updates on shuffled minibatches, in which the stored
masks are applied again so that the updated policy is evaluated on the same allowed actions.

The reward is the thesis's ``R_step + lambda_h * R_heuristic + R_final``
(:class:`ThesisReward`, plugged into the MappingEnv as its ``reward_fn``), with ``lambda_h``
decaying linearly from 0.8 to 0.1 over the run (0 throughout for the ``ces-ppo-noheur``
ablation). PPO-Balance is trained on the balance reward only (:class:`ThesisReward` with
``variant="ppo-balance"``: the mapping step's utilisation closeness and ``g_balance (1 - L)``
at the end), its bandwidth decisions made by the node-degree rule.

Optional **behaviour-cloning warm start** (``Args.bc_instances > 0``, a documented deviation
from the thesis, which trains from scratch): training instances are solved exactly
(:func:`expert_solution`, ``mapping-exact``'s model, cached as JSON), the solutions replayed
through the env (:func:`replay_expert`) and the network fitted to the expert's actions
(cross-entropy of the masked logits of both heads) and returns (:func:`behaviour_clone`)
before PPO starts. A cheaper teacher, the best of the registered heuristics per instance
(:func:`heuristic_solution`, ``Args.bc_teacher = "heuristics"``), and the load-balance optimum
as the objective (``Args.bc_objective = "L"``, PPO-Balance's teacher) are options; the shipped
per-node checkpoints use the heuristic teacher.

Every coefficient the thesis leaves open is a field of :class:`RewardCoefs` (documented there
and in docs/ces-ppo.md). Entry point: :func:`train` (``edgebench train ces-ppo`` wraps it).
"""

from __future__ import annotations

import csv
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from edgebench.errors import InputError
from edgebench.learned import ces_ppo, checkpoint, ppo

__all__ = ["Args", "BC_OBJECTIVES", "BC_SEED_FLOOR", "BC_TEACHERS", "TEACHER_HEURISTICS", "heuristic_solution",
           "RewardCoefs", "ThesisReward", "bc_seed", "behaviour_clone", "collect_expert_data",
           "evaluate_network", "expert_level", "expert_solution", "lambda_h_at", "replay_expert", "train",
           "training_seed"]

#: ideal CPU / RAM utilisation of a node after a mapping step (the thesis's 0.625)
IDEAL_UTILISATION = 0.625
#: objectives of the behaviour-cloning expert (``mapping-exact``): the composite optimum for
#: ``ces-ppo`` / ``ces-ppo-noheur``, the load-balance optimum for PPO-Balance (a balance-only baseline)
BC_OBJECTIVES = ("composite", "L")
#: teachers of the warm start: the exact optimum (``mapping-exact``) or, far cheaper on 20-node
#: networks, the best of the registered heuristics below by the referee's objective
BC_TEACHERS = ("exact", "heuristics", "best")
TEACHER_HEURISTICS = ("flexitask", "greedy-bw", "smart")


# ======================================================================================
# Arguments
# ======================================================================================


@dataclass
class RewardCoefs:
    """The reward's coefficients (the thesis names the terms, not their weights).

    Per mapping step (task node i -> physical node q):
      ``R_step = succ * success + util * closeness`` — success 1 when the action was allowed
      (0 when the env replaced a masked action); closeness = ``1 - (|u_cpu - 0.625| +
      |u_ram - 0.625|) / (2 * 0.625)`` clipped to [0, 1], u = utilisation of q after the
      placement (background and running jobs included);
      ``R_heuristic = eta_load * R_load + eta_affinity * R_affinity + eta_topo * R_topo`` —
      R_load = 1 - mean(CPU, RAM utilisation of q before the step); R_affinity = cosine of
      (cpu_i, ram_i) and (free CPU of q, free RAM of q); R_topo = bw_max-weighted mean over
      the task links between i and its already-mapped neighbours of 1 (same node), 0.5
      (neighbouring nodes) or 0 (else), 0 without mapped neighbours.
    Per bandwidth step (task link v given B):
      ``R_step = bw * delta(v)``, delta = (B - bw_min) / (bw_max - bw_min) (1 when equal);
      ``R_heuristic = eta_importance * rho(v) * delta(v) + eta_compete * R_compete`` — rho =
      min(1, share of v in the job's total bw_max x number of links) (1 for links at least of
      average importance); R_compete = smallest free-bandwidth ratio (free after the
      allocation / capacity) along v's route.
    At the end of an episode:
      ``R_final = g_balance * (1 - L) + g_dbw * D_BW + g_util * U_avg`` (the referee's values).
    """

    succ: float = 0.05
    util: float = 0.05
    bw: float = 0.1
    eta_load: float = 0.04
    eta_affinity: float = 0.03
    eta_topo: float = 0.03
    eta_importance: float = 0.05
    eta_compete: float = 0.05
    g_balance: float = 1.0
    g_dbw: float = 1.0
    g_util: float = 0.1


@dataclass
class Args:
    """PPO and run settings (``edgebench train ces-ppo`` exposes the main ones)."""

    variant: str = "ces-ppo"            # ces-ppo | ces-ppo-noheur | ppo-balance
    preset: str = "thesis"              # mapping generator preset of the training instances
    params: dict[str, Any] = field(default_factory=dict)  # generator overrides
    total_steps: int = 100_000          # environment decisions (agent steps) in all
    seed: int = 1
    num_envs: int = 4
    num_steps: int = 128                # rollout length per env and update
    learning_rate: float = 3e-4
    anneal_lr: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    norm_adv: bool = True
    clip_vloss: bool = True
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float | None = None
    hidden: int = 128
    node_head: bool = False             # add the per-node scorer to the mapping head (arch "flat")
    arch: str = "flat"                  # "flat" (fixed node count) or "per-node" (any node count)
    nodes_mix: tuple[int, ...] = ()     # physical node counts of the training instances (cycled); () = preset's
    lambda_h_start: float = 0.8
    lambda_h_end: float = 0.1
    eval_seeds: int = 20                # held-out instances, generator seeds eval_seed_base + i
    eval_seed_base: int = 1_000_000_000
    eval_every: int = 20                # updates between evaluations / checkpoints (0: only at the end)
    threads: int = 1
    reward: RewardCoefs = field(default_factory=RewardCoefs)
    # behaviour-cloning warm start from the exact optimum (0 instances: pure PPO, the thesis)
    bc_instances: int = 0               # training instances solved exactly and replayed
    bc_epochs: int = 40                 # supervised epochs over the replayed decisions
    bc_lr: float = 1e-3
    bc_batch: int = 256
    expert_cache: str | None = "runs/expert-cache"  # JSON cache of the exact solutions (None: no cache)
    expert_time_limit: float = 60.0     # seconds per exact solve
    bc_objective: str = "composite"     # the expert's objective: "composite" or "L" (PPO-Balance's teacher)
    bc_teacher: str = "exact"           # "exact" (mapping-exact), "heuristics" (best of TEACHER_HEURISTICS), "best" (both)

    def check(self) -> None:
        if self.variant not in ces_ppo.VARIANTS:
            raise InputError(f"unknown variant {self.variant!r} (expected {', '.join(ces_ppo.VARIANTS)})",
                             field="variant")
        for name in ("total_steps", "num_envs", "num_steps", "num_minibatches", "update_epochs", "hidden",
                     "eval_seeds", "threads", "bc_instances", "bc_epochs", "bc_batch"):
            v = getattr(self, name)
            low = 0 if name == "bc_instances" or (name == "total_steps" and self.bc_instances > 0) else 1
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise InputError(f"{name} must be an integer >= {low}, got {v!r}", field=name)
        for name in ("bc_lr", "expert_time_limit"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise InputError(f"{name} must be a positive number, got {v!r}", field=name)
        if self.bc_objective not in BC_OBJECTIVES:
            raise InputError(f"unknown expert objective {self.bc_objective!r} (expected {', '.join(BC_OBJECTIVES)})",
                             field="bc_objective")
        if self.bc_teacher not in BC_TEACHERS:
            raise InputError(f"unknown teacher {self.bc_teacher!r} (expected {', '.join(BC_TEACHERS)})",
                             field="bc_teacher")
        if self.bc_teacher == "best" and self.bc_objective != "composite":
            raise InputError("the 'best' teacher compares composites; use it with bc_objective 'composite'",
                             field="bc_teacher")
        if self.arch not in ces_ppo.ARCHS:
            raise InputError(f"unknown network architecture {self.arch!r} (expected {', '.join(ces_ppo.ARCHS)})",
                             field="arch")
        if not isinstance(self.nodes_mix, (tuple, list)) or any(
                isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in self.nodes_mix):
            raise InputError(f"nodes_mix must be a list of positive integers, got {self.nodes_mix!r}",
                             field="nodes_mix")
        if (self.num_envs * self.num_steps) % self.num_minibatches:
            raise InputError("num_envs * num_steps must be a multiple of num_minibatches", field="num_minibatches")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise InputError(f"seed must be a non-negative integer, got {self.seed!r}", field="seed")

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        """PPO updates (0 only for ``total_steps = 0`` after a BC warm start)."""
        if self.total_steps == 0:
            return 0
        return max(1, self.total_steps // self.batch_size)


def lambda_h_at(args: Args, progress: float) -> float:
    """The heuristic weight at training progress in [0, 1]: linear from lambda_h_start to
    lambda_h_end (0 for the ablation and for PPO-Balance)."""
    if args.variant != "ces-ppo":
        return 0.0
    p = min(max(progress, 0.0), 1.0)
    return args.lambda_h_start + (args.lambda_h_end - args.lambda_h_start) * p


# ======================================================================================
# The thesis reward (the MappingEnv's reward_fn)
# ======================================================================================


class ThesisReward:
    """``R_step + lambda_h * R_heuristic + R_final`` as a MappingEnv reward function.

    The env calls it after each step with a :class:`MappingStep`; the terms need the state
    *before* the step (free resources, the link decided), which it records at the end of each
    call for the next decision and in :meth:`observe`, to be called after every ``reset``.
    ``lambda_h`` is set by the training loop. ``variant="ppo-balance"``: only the mapping
    step's closeness term and ``g_balance * (1 - L)`` at the end."""

    def __init__(self, coefs: RewardCoefs | None = None, variant: str = "ces-ppo", lambda_h: float = 0.0) -> None:
        self.c = coefs or RewardCoefs()
        self.variant = variant
        self.lambda_h = float(lambda_h)
        self._ctx: dict[str, Any] | None = None
        #: the last step's terms (for tests and logging)
        self.last: dict[str, float] = {}

    def observe(self, env) -> None:
        """Record the context of the env's next decision (call after reset)."""
        base = env.unwrapped
        if base._over:
            self._ctx = None
            return
        cpu, ram, bw = base.free_resources()
        ctx: dict[str, Any] = {"phase": base._phase, "cpu": cpu, "ram": ram, "bw": bw, "job": base._job,
                               "nodes": list(base._nodes), "net": base._net}
        if base._phase == "map":
            ctx["task"] = base._index
        else:
            k = base._bw_links[base._index]
            ctx["link"] = k
            ctx["route"] = tuple(base._route(k))
        self._ctx = ctx

    def __call__(self, step) -> float:
        ctx = self._ctx
        terms: dict[str, float] = {}
        if ctx is not None and ctx["phase"] == step.phase:
            if step.phase == "map":
                terms = self._map_terms(ctx, int(step.action), step.invalid)
            else:
                terms = self._bw_terms(ctx, float(step.value))
        if step.terminated and step.evaluation is not None:
            o = step.evaluation.objectives
            if self.variant == "ppo-balance":
                terms["final"] = self.c.g_balance * (1.0 - o["L"])
            else:
                terms["final"] = (self.c.g_balance * (1.0 - o["L"]) + self.c.g_dbw * o["D_BW"]
                                  + self.c.g_util * o["U_avg"])
        self.last = terms
        if not step.terminated:
            self.observe(step.env)
        else:
            self._ctx = None
        lam = 0.0 if self.variant != "ces-ppo" else self.lambda_h
        return terms.get("step", 0.0) + lam * terms.get("heuristic", 0.0) + terms.get("final", 0.0)

    def _map_terms(self, ctx, q: int, invalid: bool) -> dict[str, float]:
        c, net, job, i = self.c, ctx["net"], ctx["job"], ctx["task"]
        cap_c, cap_r = net.cpu_cap[q], net.ram_cap[q]
        fc, fr = float(ctx["cpu"][q]), float(ctx["ram"][q])
        u_c, u_r = 1.0 - (fc - job.cpu[i]) / cap_c, 1.0 - (fr - job.ram[i]) / cap_r
        close = 1.0 - (abs(u_c - IDEAL_UTILISATION) + abs(u_r - IDEAL_UTILISATION)) / (2 * IDEAL_UTILISATION)
        close = min(max(close, 0.0), 1.0)
        if self.variant == "ppo-balance":
            return {"step": c.util * close, "closeness": close}
        success = 0.0 if invalid else 1.0
        r_load = 1.0 - ((1.0 - fc / cap_c) + (1.0 - fr / cap_r)) / 2.0
        dem = np.array([job.cpu[i], job.ram[i]])
        free = np.array([max(fc, 0.0), max(fr, 0.0)])
        den = float(np.linalg.norm(dem) * np.linalg.norm(free))
        r_aff = float(dem @ free) / den if den > 0 else 0.0
        wsum = score = 0.0
        for k, other, _ in job.adj[i]:
            po = ctx["nodes"][other]
            if po < 0:
                continue
            w = job.links[k][3]
            wsum += w
            if po == q:
                score += w
            elif _adjacent(net, po, q):
                score += 0.5 * w
        r_topo = score / wsum if wsum > 0 else 0.0
        heur = c.eta_load * r_load + c.eta_affinity * r_aff + c.eta_topo * r_topo
        return {"step": c.succ * success + c.util * close, "heuristic": heur, "closeness": close,
                "load": r_load, "affinity": r_aff, "topo": r_topo}

    def _bw_terms(self, ctx, value: float) -> dict[str, float]:
        c, net, job, k = self.c, ctx["net"], ctx["job"], ctx["link"]
        lo, hi = job.links[k][2], job.links[k][3]
        delta = 1.0 if hi <= lo else min(max((value - lo) / (hi - lo), 0.0), 1.0)
        if self.variant == "ppo-balance":
            return {"delta": delta}
        total = sum(lk[3] for lk in job.links)
        rho = min(1.0, hi / total * len(job.links)) if total > 0 else 1.0
        extra = value - lo
        ratios = [(float(ctx["bw"][r]) - extra) / net.bw0[r] for r in ctx["route"]]
        compete = min(max(min(ratios, default=1.0), 0.0), 1.0)
        heur = c.eta_importance * rho * delta + c.eta_compete * compete
        return {"step": c.bw * delta, "heuristic": heur, "delta": delta, "importance": rho, "compete": compete}


def _adjacent(net, a: int, b: int) -> bool:
    adj = getattr(net, "_eb_adjacent", None)
    if adj is None:
        adj = set()
        for lk in net.payload.links:
            adj.add((lk.src, lk.dst))
            adj.add((lk.dst, lk.src))
        net._eb_adjacent = adj
    return (a, b) in adj


# ======================================================================================
# Instances, evaluation
# ======================================================================================


def training_seed(rng: np.random.Generator, args: Args) -> int:
    """A generator seed for a training episode, never one of the held-out evaluation seeds."""
    while True:
        s = int(rng.integers(0, 2**31 - 1))
        if not args.eval_seed_base <= s < args.eval_seed_base + args.eval_seeds:
            return s


def _instance(args: Args, seed: int):
    """The training / evaluation instance of a generator seed; with ``nodes_mix`` its node
    count is ``nodes_mix[seed % len(nodes_mix)]`` (a function of the seed)."""
    from edgebench.instances.generators import generate

    params = dict(args.params)
    if args.nodes_mix:
        params["nodes"] = int(args.nodes_mix[seed % len(args.nodes_mix)])
    return generate("mapping", args.preset, seed=seed, **params)


def _sizes(args: Args) -> dict[str, int]:
    """Env sizes of training: the preset's, with room for the largest node count of ``nodes_mix``
    (smaller networks are padded; the per-node network ignores the padding)."""
    from edgebench.learned.envs.mapping import MappingEnv

    probe = MappingEnv(preset=args.preset, params=args.params)
    nodes = max([probe.max_nodes, *args.nodes_mix])
    return {"max_nodes": nodes, "max_tasks": probe.max_tasks, "max_levels": probe.max_levels}


def evaluate_network(net, variant: str, sizes: dict[str, int], instances) -> dict[str, Any]:
    """Greedy episodes of ``net`` on ``instances``: per-instance composite, L and D_BW and
    their means (a dead end counts as composite 0)."""
    per: list[dict[str, float]] = []
    for inst in instances:
        env = ces_ppo.make_env(variant, inst, **sizes)
        obs, info = env.reset(seed=0)
        while obs["action_mask"].any():  # empty only for a job that fits nowhere (a dead end)
            obs, _, term, trunc, info = env.step(ces_ppo.decide(net, obs, greedy=True))
            if term or trunc:
                break
        o = info.get("objectives") or {"composite": 0.0, "L": 1.0, "D_BW": 0.0}
        per.append({"composite": float(o["composite"]), "L": float(o["L"]), "D_BW": float(o["D_BW"]),
                    "feasible": bool(info.get("feasible", False))})
    mean = {k: float(np.mean([p[k] for p in per])) for k in ("composite", "L", "D_BW")}
    return {**mean, "per_instance": per}


# ======================================================================================
# Behaviour-cloning warm start from the exact optimum (a documented deviation)
# ======================================================================================

#: BC instances draw their generator seeds at or above this value (and never an evaluation
#: seed): the benchmark's held-out seeds (42..71 and other small seeds) are never trained on
BC_SEED_FLOOR = 1_000_000


def bc_seed(rng: np.random.Generator, args: Args) -> int:
    """A generator seed for a behaviour-cloning instance: >= BC_SEED_FLOOR, never one of the
    held-out evaluation seeds."""
    while True:
        s = int(rng.integers(BC_SEED_FLOOR, 2**31 - 1))
        if not args.eval_seed_base <= s < args.eval_seed_base + args.eval_seeds:
            return s


def expert_solution(instance, *, cache_dir: str | Path | None = None, time_limit: float = 60.0,
                    objective: str = "composite") -> dict[str, Any] | None:
    """The exact optimum of ``instance`` for ``objective`` (``mapping-exact``'s model,
    threads=1; "composite" or "L") as a plain dict ``{"status", "composite", "jobs": [{"nodes":
    [...], "bandwidth": [...]}]}`` (per job, the physical node of each task node and the
    bandwidth of each task link); None when the solver finds no solution. Cached as JSON under
    ``cache_dir`` by the instance's content hash (``HASH.json`` for the composite,
    ``HASH-L.json`` for L)."""
    import json

    from edgebench.formulations.mapping import solve_exact
    from edgebench.instances.io import content_hash

    path = None
    if cache_dir is not None:
        suffix = "" if objective == "composite" else f"-{objective}"
        path = Path(cache_dir) / f"{content_hash(instance)}{suffix}.json"
        if path.is_file():
            data = json.loads(path.read_text())
            return data if data.get("jobs") is not None else None
    r = solve_exact(instance, objective=objective, threads=1, time_limit=time_limit)
    data: dict[str, Any] = {"status": r.status, "composite": None, "jobs": None}
    dec = r.decisions() if r.status in ("optimal", "feasible") else None
    if dec is not None:
        data["composite"] = (r.objectives or {}).get("composite")
        data["jobs"] = [{"nodes": list(j.nodes), "bandwidth": [float(lk.bandwidth) for lk in j.links]}
                        for j in dec.jobs]
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")  # two trainings may share a cache
        tmp.write_text(json.dumps(data))
        tmp.replace(path)
    return data if data["jobs"] is not None else None


def heuristic_solution(instance, *, objective: str = "composite",
                       solvers: tuple[str, ...] = TEACHER_HEURISTICS) -> dict[str, Any] | None:
    """The best of ``solvers`` (registered mapping heuristics, seed 0) on ``instance`` by the
    referee's ``objective`` (composite: highest; L: lowest), in :func:`expert_solution`'s dict
    form plus ``"solver"``; None when none of them finds a feasible solution."""
    from edgebench import registry
    from edgebench.referee import evaluate

    best: dict[str, Any] | None = None
    for name in solvers:
        res = registry.solve(instance, name, seed=0)
        if res.solution.mapping is None:
            continue
        ev = evaluate(instance, res.solution)
        if not ev.feasible:
            continue
        score = -ev.objectives["L"] if objective == "L" else ev.objectives["composite"]
        if best is None or score > best["score"]:
            best = {"status": res.status, "solver": name, "score": score, "composite": ev.objectives["composite"],
                    "jobs": [{"nodes": list(j.nodes), "bandwidth": [float(lk.bandwidth) for lk in j.links]}
                             for j in res.solution.mapping.jobs]}
    if best is not None:
        del best["score"]
    return best


def expert_level(bw_min: float, bw_max: float, bandwidth: float, levels: int, mask: np.ndarray) -> int:
    """The bandwidth level closest to ``bandwidth`` among the levels the mask allows (ties:
    the lower level): the label of a bandwidth decision in the expert replay."""
    from edgebench.instances.semantics import bandwidth_level

    allowed = [a for a in range(levels) if mask[a]]
    return min(allowed, key=lambda a: (abs(bandwidth_level(bw_min, bw_max, a, levels) - bandwidth), a))


def replay_expert(env, instance, solution: dict[str, Any], reward: "ThesisReward | None" = None) -> dict[str, Any]:
    """Play the expert ``solution`` (:func:`expert_solution`) through ``env`` (a MappingEnv of a
    variant, :func:`ces_ppo.make_env`) on ``instance``: node actions = the expert's mapping,
    level actions = :func:`expert_level` of the expert's bandwidth (PPO-Balance's wrapper plays
    its own levels). Returns the agent-visible observations (flattened), masks and actions,
    the rewards of ``reward`` (None: the env's own), whether the whole solution was replayed
    (``complete``: False when an expert action was masked -- the samples before it are kept),
    and at the end the referee's ``objectives``."""
    if reward is not None:
        env.unwrapped.reward_fn = reward
    obs, _ = env.reset(seed=0, options={"instance": instance})
    if reward is not None:
        reward.observe(env)
    base = env.unwrapped
    out: dict[str, Any] = {"obs": [], "masks": [], "actions": [], "rewards": [], "complete": False,
                           "objectives": None, "feasible": None}
    while True:
        mask = obs["action_mask"]
        if not mask.any():
            break
        job = solution["jobs"][base._k]
        if base._phase == "map":
            a = int(job["nodes"][base._index])
        else:
            k = base._bw_links[base._index]
            lo, hi = base._job.links[k][2], base._job.links[k][3]
            a = expert_level(lo, hi, job["bandwidth"][k], base._net.levels, mask)
        if not (0 <= a < len(mask) and mask[a]):
            break
        out["obs"].append(ces_ppo.flatten_obs(obs))
        out["masks"].append(mask.astype(bool))
        out["actions"].append(a)
        obs, r, term, trunc, info = env.step(a)
        out["rewards"].append(float(r))
        if term or trunc:
            out["complete"] = not info.get("dead_end", False)
            out["objectives"] = info.get("objectives")
            out["feasible"] = info.get("feasible")
            break
    return out


def collect_expert_data(args: Args, sizes: dict[str, int], log=None) -> dict[str, Any]:
    """Expert replays of ``args.bc_instances`` training instances (seeds of :func:`bc_seed`):
    tensors ``obs``, ``mask``, ``action``, ``ret`` (discounted return of the thesis reward with
    the run's first ``lambda_h``) and counts."""
    import torch

    rng = np.random.default_rng([args.seed, 0xBC])
    obs, masks, acts, rets = [], [], [], []
    n_ok = n_partial = n_none = 0
    comps = []
    t0 = time.perf_counter()
    for i in range(args.bc_instances):
        inst = _instance(args, bc_seed(rng, args))
        sol = None
        if args.bc_teacher != "exact":
            sol = heuristic_solution(inst, objective=args.bc_objective)
        if args.bc_teacher != "heuristics":  # "best": the exact solve's incumbent when it is better
            exact = expert_solution(inst, cache_dir=args.expert_cache, time_limit=args.expert_time_limit,
                                    objective=args.bc_objective)
            if exact is not None and (sol is None or (exact["composite"] or -1.0) > sol["composite"] + 1e-12):
                sol = exact
        if sol is None:
            n_none += 1
            continue
        reward = ThesisReward(args.reward, args.variant, lambda_h_at(args, 0.0))
        env = ces_ppo.make_env(args.variant, inst, **sizes, reward_fn=reward)
        rep = replay_expert(env, inst, sol, reward)
        if not rep["actions"]:
            n_partial += 1
            continue
        n_ok += rep["complete"]
        n_partial += not rep["complete"]
        if rep["objectives"]:
            comps.append(float(rep["objectives"]["composite"]))
        g = 0.0
        ret = [0.0] * len(rep["rewards"])
        for t in reversed(range(len(ret))):
            g = rep["rewards"][t] + args.gamma * g
            ret[t] = g
        obs.extend(rep["obs"])
        masks.extend(rep["masks"])
        acts.extend(rep["actions"])
        rets.extend(ret)
        if log and (i + 1) % 100 == 0:
            log(f"expert data: {i + 1}/{args.bc_instances} instances, {len(acts)} decisions, "
                f"{time.perf_counter() - t0:.0f} s")
    if not acts:
        raise InputError(f"no expert decision collected from {args.bc_instances} instances "
                         f"({n_none} without an exact solution)", field="bc_instances")
    return {"obs": torch.from_numpy(np.stack(obs)), "mask": torch.from_numpy(np.stack(masks)),
            "action": torch.tensor(acts, dtype=torch.long), "ret": torch.tensor(rets, dtype=torch.float32),
            "complete": n_ok, "partial": n_partial, "no_solution": n_none,
            "expert_composite": float(np.mean(comps)) if comps else None}


def behaviour_clone(net, data: dict[str, Any], args: Args, log=None) -> dict[str, float]:
    """Supervised warm start: ``args.bc_epochs`` epochs of Adam (lr ``args.bc_lr``, minibatches
    of ``args.bc_batch``) on cross-entropy of the masked logits (both heads: the phase selects
    the head) against the expert actions plus ``args.vf_coef`` x the squared error of the value
    against the expert episodes' returns. Returns the last epoch's losses and accuracy."""
    import torch
    import torch.nn.functional as F

    opt = torch.optim.Adam(net.parameters(), lr=args.bc_lr, eps=1e-5)
    n = len(data["action"])
    stats: dict[str, float] = {}
    for epoch in range(args.bc_epochs):
        perm = torch.randperm(n)
        tot_ce = tot_v = correct = 0.0
        for s in range(0, n, args.bc_batch):
            idx = perm[s:s + args.bc_batch]
            logits, value = net.logits_value(data["obs"][idx], data["mask"][idx])
            ce = F.cross_entropy(logits, data["action"][idx])
            v = ((value - data["ret"][idx]) ** 2).mean()
            loss = ce + args.vf_coef * v
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), args.max_grad_norm)
            opt.step()
            tot_ce += ce.item() * len(idx)
            tot_v += v.item() * len(idx)
            correct += float((logits.argmax(-1) == data["action"][idx]).sum())
        stats = {"epoch": epoch + 1, "cross_entropy": tot_ce / n, "value_loss": tot_v / n, "accuracy": correct / n}
        if log and ((epoch + 1) % 10 == 0 or epoch + 1 == args.bc_epochs):
            log(f"bc epoch {epoch + 1}/{args.bc_epochs} cross-entropy {stats['cross_entropy']:.4f} "
                f"accuracy {stats['accuracy']:.3f} value loss {stats['value_loss']:.4f}")
    return stats


# ======================================================================================
# Training
# ======================================================================================


def _save(path: Path, net, optimizer, args: Args, sizes, state: dict[str, Any]) -> None:
    data = {"format": ces_ppo.CHECKPOINT_FORMAT, "variant": args.variant, "sizes": dict(sizes),
            "hidden": args.hidden, "node_head": args.node_head, "arch": args.arch, "model": net.state_dict(),
            "optimizer": optimizer.state_dict(),
            "args": asdict(args), "preset": args.preset, "params": dict(args.params), **state}
    checkpoint.save_checkpoint(path, data)


def train(args: Args, out: str | Path, *, resume: bool = False, log: Callable[[str], None] | None = print,
          tensorboard: bool = True) -> dict[str, Any]:
    """Train a CES-PPO variant; write ``OUT/checkpoint.pt`` (latest: model, optimizer, RNG
    states, evaluation record), ``OUT/progress.csv`` and TensorBoard events under ``OUT/tb``.
    ``resume``: continue from ``OUT/checkpoint.pt`` (model, optimizer, step counter and RNG
    states restored; the environments start fresh episodes). Returns a summary."""
    import torch

    args.check()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    prev_threads, prev_det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    try:
        return _train(args, out, resume, log, tensorboard)
    finally:  # leave the process as it was (tests run other torch code afterwards)
        torch.set_num_threads(prev_threads)
        torch.use_deterministic_algorithms(prev_det)


def _train(args: Args, out: Path, resume: bool, log, tensorboard: bool) -> dict[str, Any]:
    import torch
    from torch.distributions import Categorical

    ckpt_path = out / "checkpoint.pt"
    torch.manual_seed(args.seed)
    sizes = _sizes(args)
    net = ces_ppo.build_network(sizes["max_nodes"], sizes["max_tasks"], sizes["max_levels"], args.hidden,
                                args.node_head, args.arch)
    optimizer = torch.optim.Adam(net.parameters(), lr=args.learning_rate, eps=1e-5)
    seed_rng = np.random.default_rng([args.seed, 0xCE5])
    eval_instances = [_instance(args, args.eval_seed_base + i) for i in range(args.eval_seeds)]
    eval_seeds = [args.eval_seed_base + i for i in range(args.eval_seeds)]

    start_update, global_step, history = 1, 0, []
    initial_eval: dict[str, Any] | None = None
    if resume and ckpt_path.is_file():
        data = ces_ppo.read_checkpoint(ckpt_path)  # data only (learned/checkpoint.py)
        if (data.get("variant") != args.variant or data.get("sizes") != sizes or data.get("hidden") != args.hidden
                or bool(data.get("node_head", False)) != args.node_head or data.get("arch", "flat") != args.arch):
            raise InputError("the checkpoint to resume is of another variant or size", file=str(ckpt_path),
                             field="variant")
        checkpoint.load_state(net, data.get("model"), file=ckpt_path, field="checkpoint.model")
        with checkpoint.reading(ckpt_path):  # a malformed training state is an InputError
            optimizer.load_state_dict(data["optimizer"])
            global_step = int(data["global_step"])
            start_update = int(data["update"]) + 1
            torch.set_rng_state(data["rng"]["torch"])
            seed_rng.bit_generator.state = data["rng"]["numpy"]
            initial_eval = data["eval"].get("initial")
            history = list(data.get("history", []))
        if log:
            log(f"resumed from {ckpt_path} at step {global_step} (update {start_update - 1})")
    if initial_eval is None:
        net.eval()
        initial_eval = evaluate_network(net, args.variant, sizes, eval_instances)
        net.train()
        if log:
            log(f"randomly initialised network: held-out composite {initial_eval['composite']:.4f}")
    bc_record: dict[str, Any] | None = None
    if resume and ckpt_path.is_file():
        bc_record = ces_ppo.read_checkpoint(ckpt_path).get("bc")
    elif args.bc_instances > 0:
        t_bc = time.perf_counter()
        data = collect_expert_data(args, sizes, log)
        if log:
            log(f"expert data: {len(data['action'])} decisions from {data['complete']} complete and "
                f"{data['partial']} partial replays ({data['no_solution']} without a solution), expert composite "
                f"{data['expert_composite']}")
        fit = behaviour_clone(net, data, args, log)
        net.eval()
        bc_eval = evaluate_network(net, args.variant, sizes, eval_instances)
        net.train()
        bc_record = {"decisions": len(data["action"]), "complete": data["complete"], "partial": data["partial"],
                     "no_solution": data["no_solution"], "expert_composite": data["expert_composite"], **fit,
                     "eval_composite": bc_eval["composite"], "eval_L": bc_eval["L"], "eval_D_BW": bc_eval["D_BW"],
                     "seconds": time.perf_counter() - t_bc}
        if log:
            log(f"after behaviour cloning: held-out composite {bc_eval['composite']:.4f} (L {bc_eval['L']:.4f}, "
                f"D_BW {bc_eval['D_BW']:.4f}), {bc_record['seconds']:.0f} s")
        if args.num_updates == 0:
            last = bc_eval
            state = {"global_step": 0, "update": 0, "history": history, "bc": bc_record,
                     "rng": {"torch": torch.get_rng_state(), "numpy": seed_rng.bit_generator.state},
                     "eval": {"seeds": eval_seeds, "preset": args.preset, "params": dict(args.params),
                              "composite": last["composite"], "L": last["L"], "D_BW": last["D_BW"],
                              "per_instance": [p["composite"] for p in last["per_instance"]],
                              "initial": initial_eval, "throughput_sps": 0.0}}
            _save(ckpt_path, net, optimizer, args, sizes, state)
            return {"checkpoint": str(ckpt_path), "global_step": 0, "initial_composite": initial_eval["composite"],
                    "bc_composite": bc_eval["composite"], "final_composite": bc_eval["composite"],
                    "throughput_sps": 0.0}

    rewards = [ThesisReward(args.reward, args.variant) for _ in range(args.num_envs)]
    envs = [ces_ppo.make_env(args.variant, _instance(args, training_seed(seed_rng, args)), **sizes,
                             reward_fn=rewards[e]) for e in range(args.num_envs)]
    D = ces_ppo.obs_dim(sizes["max_nodes"], sizes["max_tasks"])
    A = max(sizes["max_nodes"], sizes["max_levels"])
    T, E = args.num_steps, args.num_envs
    obs_b = torch.zeros((T, E, D))
    mask_b = torch.zeros((T, E, A), dtype=torch.bool)
    act_b = torch.zeros((T, E), dtype=torch.long)
    logp_b = torch.zeros((T, E))
    rew_b = torch.zeros((T, E))
    done_b = torch.zeros((T, E))
    val_b = torch.zeros((T, E))

    def reset_env(e: int):
        inst = _instance(args, training_seed(seed_rng, args))
        o, _ = envs[e].reset(seed=0, options={"instance": inst})
        rewards[e].observe(envs[e])
        return o

    cur = [reset_env(e) for e in range(E)]
    next_obs = torch.from_numpy(np.stack([ces_ppo.flatten_obs(o) for o in cur]))
    next_mask = torch.from_numpy(np.stack([o["action_mask"].astype(bool) for o in cur]))
    next_done = torch.zeros(E)
    ep_return = np.zeros(E)
    writer = None
    if tensorboard:
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(str(out / "tb"))
    csv_path = out / "progress.csv"
    fields = ["update", "global_step", "wall_s", "sps", "lambda_h", "learning_rate", "episodes", "mean_return",
              "mean_composite", "policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "eval_composite",
              "eval_L", "eval_D_BW"]
    new_csv = not (resume and csv_path.is_file())
    csv_file = open(csv_path, "w" if new_csv else "a", newline="")
    cw = csv.DictWriter(csv_file, fieldnames=fields)
    if new_csv:
        cw.writeheader()
    t0 = time.perf_counter()
    steps_at_start = global_step
    last_eval = None
    try:
        for update in range(start_update, args.num_updates + 1):
            progress = (update - 1) / args.num_updates
            if args.anneal_lr:
                optimizer.param_groups[0]["lr"] = args.learning_rate * (1.0 - progress)
            lam = lambda_h_at(args, progress)
            for r in rewards:
                r.lambda_h = lam
            ep_returns: list[float] = []
            ep_comps: list[float] = []
            # ---- rollout ----
            for t in range(T):
                global_step += E
                obs_b[t], mask_b[t], done_b[t] = next_obs, next_mask, next_done
                with torch.no_grad():
                    logits, value = net.logits_value(next_obs, next_mask)
                dist = Categorical(logits=logits)
                action = dist.sample()
                act_b[t], logp_b[t], val_b[t] = action, dist.log_prob(action), value
                nxt, dones = [], []
                for e in range(E):
                    o, r, term, trunc, info = envs[e].step(int(action[e]))
                    rew_b[t, e] = float(r)
                    ep_return[e] += float(r)
                    if term or trunc:
                        ep_returns.append(float(ep_return[e]))
                        ep_comps.append(float((info.get("objectives") or {}).get("composite", 0.0)))
                        ep_return[e] = 0.0
                        o = reset_env(e)
                    nxt.append(o)
                    dones.append(float(term or trunc))
                next_obs = torch.from_numpy(np.stack([ces_ppo.flatten_obs(o) for o in nxt]))
                next_mask = torch.from_numpy(np.stack([o["action_mask"].astype(bool) for o in nxt]))
                next_done = torch.tensor(dones)
            # ---- GAE and the PPO update (the shared core, edgebench.learned.ppo; masks re-applied) ----
            with torch.no_grad():
                next_value = net.value(next_obs)
                nonterminal = 1.0 - torch.cat([done_b[1:], next_done.unsqueeze(0)])
                adv_b, ret_b = ppo.gae(rew_b, val_b, next_value, nonterminal, args.gamma, args.gae_lambda)
            b_obs, b_mask = obs_b.reshape(-1, D), mask_b.reshape(-1, A)
            b_act, b_logp = act_b.reshape(-1), logp_b.reshape(-1)
            b_adv, b_ret, b_val = adv_b.reshape(-1), ret_b.reshape(-1), val_b.reshape(-1)

            def loss_fn(idx):
                logits, newv = net.logits_value(b_obs[idx], b_mask[idx])
                newlogp = Categorical(logits=logits).log_prob(b_act[idx])
                # entropy of the masked distribution (masked actions have probability 0)
                ent = -(torch.softmax(logits, -1) * torch.log_softmax(logits, -1)).sum(-1)
                return ppo.ppo_loss(newlogp, b_logp[idx], b_adv[idx], newv, b_ret[idx], ent, clip=args.clip_coef,
                                    vf_coef=args.vf_coef, ent_coef=args.ent_coef, norm_adv=args.norm_adv,
                                    old_value=b_val[idx], clip_vloss=args.clip_vloss)

            upd = ppo.ppo_update(optimizer, list(net.parameters()), args.batch_size, epochs=args.update_epochs,
                                 minibatch=args.batch_size // args.num_minibatches, permute=torch.randperm,
                                 loss_fn=loss_fn, max_grad_norm=args.max_grad_norm, target_kl=args.target_kl)
            # ---- logging, evaluation, checkpoint ----
            wall = time.perf_counter() - t0
            sps = (global_step - steps_at_start) / max(wall, 1e-9)
            row: dict[str, Any] = {
                "update": update, "global_step": global_step, "wall_s": round(wall, 3), "sps": round(sps, 1),
                "lambda_h": lam, "learning_rate": optimizer.param_groups[0]["lr"], "episodes": len(ep_returns),
                "mean_return": float(np.mean(ep_returns)) if ep_returns else math.nan,
                "mean_composite": float(np.mean(ep_comps)) if ep_comps else math.nan,
                "policy_loss": upd.get("policy_loss", 0.0), "value_loss": upd.get("value_loss", 0.0),
                "entropy": upd.get("entropy", 0.0), "approx_kl": upd.get("approx_kl", 0.0),
                "clipfrac": upd.get("clipfrac", 0.0),
                "eval_composite": "", "eval_L": "", "eval_D_BW": ""}
            is_last = update == args.num_updates
            if is_last or (args.eval_every and update % args.eval_every == 0):
                net.eval()
                last_eval = evaluate_network(net, args.variant, sizes, eval_instances)
                net.train()
                row.update(eval_composite=last_eval["composite"], eval_L=last_eval["L"],
                           eval_D_BW=last_eval["D_BW"])
                history.append({"update": update, "global_step": global_step, "composite": last_eval["composite"]})
                state = {"global_step": global_step, "update": update, "history": history, "bc": bc_record,
                         "rng": {"torch": torch.get_rng_state(), "numpy": seed_rng.bit_generator.state},
                         "eval": {"seeds": eval_seeds, "preset": args.preset, "params": dict(args.params),
                                  "composite": last_eval["composite"], "L": last_eval["L"],
                                  "D_BW": last_eval["D_BW"],
                                  "per_instance": [p["composite"] for p in last_eval["per_instance"]],
                                  "initial": initial_eval, "throughput_sps": sps}}
                _save(ckpt_path, net, optimizer, args, sizes, state)
            cw.writerow(row)
            csv_file.flush()
            if writer is not None:
                for key in ("sps", "lambda_h", "learning_rate", "mean_return", "mean_composite", "policy_loss",
                            "value_loss", "entropy", "approx_kl", "clipfrac", "eval_composite", "eval_L",
                            "eval_D_BW"):
                    v = row[key]
                    if v != "" and not (isinstance(v, float) and math.isnan(v)):
                        writer.add_scalar(f"ces_ppo/{key}", float(v), global_step)
            if log:
                ev = f" eval {row['eval_composite']:.4f}" if row["eval_composite"] != "" else ""
                mc = row["mean_composite"]
                log(f"update {update}/{args.num_updates} step {global_step} sps {sps:.0f} lambda_h {lam:.3f} "
                    f"episodes {len(ep_returns)} composite {mc:.4f}{ev}")
    finally:
        csv_file.close()
        if writer is not None:
            writer.close()
    final = last_eval
    if final is None:  # resumed a finished run
        final = ces_ppo.read_checkpoint(ckpt_path)["eval"]
    return {"checkpoint": str(ckpt_path), "global_step": global_step, "initial_composite": initial_eval["composite"],
            "bc_composite": (bc_record or {}).get("eval_composite"), "final_composite": final["composite"],
            "throughput_sps": (global_step - steps_at_start) /
            max(time.perf_counter() - t0, 1e-9)}
