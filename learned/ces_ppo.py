"""CES-PPO: the CES thesis's learned mapping + bandwidth policy (SPEC.md Family B, "Learned
method"), its ablation without the heuristic reward and the PPO-Balance baseline, as
registered solvers (kind "learned", family "mapping").

The policy plays :class:`edgebench.learned.envs.mapping.MappingEnv` (two phases per job:
map each task node to a physical node, then give each routed task link a bandwidth level).

* **State** (the env's observation, zero-padded to the checkpoint's maximum sizes and
  normalised into [0, 1] by the env): per physical node free CPU, free RAM and mean free
  bandwidth of its links; per task node CPU, RAM and mean out-link ``bw_max``; the one-hot
  task -> node matrix of the decisions made so far; the decision vector (phase, index,
  totals, fraction done, current item). :func:`flatten_obs` concatenates them.
* **Network** (:func:`build_network`): a shared 2-layer ReLU MLP encoder; a mapping head
  (logits over the ``max_nodes`` physical nodes), a bandwidth head (logits over the
  ``max_levels`` levels) and a value head. The head of the current phase gives the logits
  of the env's single ``Discrete(max(max_nodes, L))`` action; every action the env's mask
  forbids (and every action beyond the phase's head) gets logit ``MASK_LOGIT`` (-1e9, i.e.
  probability 0 in float32), so a sampled or greedy action is always allowed.
* **PPO-Balance** (variant ``ppo-balance``): the network chooses only the physical nodes
  (trained on the balance reward, ``train_ces_ppo``); every bandwidth decision is made by
  :class:`DegreeBandwidth`, the node-degree importance rule.

Solvers: ``ces-ppo``, ``ces-ppo-noheur`` and ``ppo-balance`` load the checkpoints shipped in
``learned/checkpoints/`` (or the file given by ``checkpoint=``) and decode greedily (argmax;
``greedy=False`` samples with the solver seed). They are also the single-job schedulers of
CES-Multi (``solvers/mapping_queue``, ``scheduler="ces-ppo"``): the stream simulator calls them
on the single-job residual instance of the moment (``mapping_sim.residual_instance``); a job
that fits nowhere gives status "infeasible" (the simulator then waits).

torch is imported only inside functions (the registry imports this module to list solvers).
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgebench.errors import InputError
from edgebench.learned import checkpoint
from edgebench.learned.acting import one_torch_thread, pick_max
from edgebench.learned.provenance import checkpoints_of, sha256_file
from edgebench.learned.sampling import best_of
from edgebench.registry import Result, make_result, register

__all__ = ["ARCHS", "CHECKPOINT_DIR", "CHECKPOINT_FORMAT", "DEFAULT_CHECKPOINTS", "MASK_LOGIT", "VARIANTS", "DegreeBandwidth",
           "LoadedPolicy", "NODE_FEATURES", "build_network", "decide", "degree_level", "flatten_obs", "load_policy",
           "make_env", "read_checkpoint",
           "obs_dim", "run_policy"]

#: the three trained variants: the thesis method, its ablation, the baseline
VARIANTS = ("ces-ppo", "ces-ppo-noheur", "ppo-balance")
CHECKPOINT_DIR = Path(__file__).resolve().parent / "checkpoints"
#: the shipped checkpoint of each variant (trained with ``edgebench train ces-ppo``, see docs/ces-ppo.md)
#: (the size-independent per-node networks trained on 10- and 20-node networks, warm-started by
#: behaviour cloning of the best heuristic, then PPO; the pure-PPO per-node ``ces-*-mix.pt`` and the
#: earlier 10-node flat ``ces-*-thesis.pt`` stay selectable with ``checkpoint=``)
DEFAULT_CHECKPOINTS = {
    "ces-ppo": CHECKPOINT_DIR / "ces-ppo-bc-mix.pt",
    "ces-ppo-noheur": CHECKPOINT_DIR / "ces-ppo-noheur-bc-mix.pt",
    "ppo-balance": CHECKPOINT_DIR / "ces-ppo-balance-bc-mix.pt",
}
CHECKPOINT_FORMAT = "edgebench-ces-ppo/1"
#: logit of a masked action (float32 softmax gives it probability exactly 0)
MASK_LOGIT = -1e9
#: per-node inputs of the optional node scorer: free CPU, free RAM, mean free bandwidth, job tasks on the node
NODE_FEATURES = 4


# --------------------------------------------------------------------------------------
# Observation and environment
# --------------------------------------------------------------------------------------


def obs_dim(max_nodes: int, max_tasks: int) -> int:
    """Length of :func:`flatten_obs`'s vector."""
    from edgebench.learned.envs.mapping import DECISION_FEATURES

    return max_nodes * 3 + max_tasks * 3 + max_tasks * max_nodes + len(DECISION_FEATURES)


def flatten_obs(obs: dict[str, np.ndarray]) -> np.ndarray:
    """The policy's input: nodes, tasks, task -> node one-hot and decision vector, flattened
    (float32). The phase is ``decision[0]`` (the last block's first entry)."""
    return np.concatenate([obs["nodes"].ravel(), obs["tasks"].ravel(), obs["task_nodes"].ravel(),
                           obs["decision"]]).astype(np.float32, copy=False)


def degree_level(env) -> int:
    """PPO-Balance's bandwidth rule for the env's current bandwidth decision: the link's
    importance is the sum of its two task nodes' degrees in the (undirected) task graph over
    the largest such sum in the job; the level is ``round(importance * (L - 1))``, lowered to
    the highest level the mask allows (the allowed levels are 0..a_max)."""
    base = env.unwrapped
    job = base._job
    k = base._bw_links[base._index]
    deg = [len(a) for a in job.adj]
    sums = [deg[s] + deg[d] for s, d, _, _ in job.links]
    imp = sums[k] / max(sums)
    L = base._net.levels
    target = int(round(imp * (L - 1)))
    mask = base.action_masks()
    allowed = [a for a in range(L) if mask[a]]
    below = [a for a in allowed if a <= target]
    return max(below) if below else min(allowed)


def _in_bandwidth_phase(env) -> bool:
    base = env.unwrapped
    return not base._over and base._phase == "bandwidth"


def _make_wrapper_class():
    import gymnasium as gym

    class _DegreeBandwidth(gym.Wrapper):
        """Plays every bandwidth decision of the wrapped MappingEnv with :func:`degree_level`
        (rewards of those steps are added to the mapping step that led to them), so the agent
        only sees mapping decisions. Used by PPO-Balance."""

        def step(self, action):
            obs, reward, term, trunc, info = self.env.step(action)
            total = float(reward)
            while not (term or trunc) and _in_bandwidth_phase(self.env):
                obs, reward, term, trunc, info = self.env.step(degree_level(self.env))
                total += float(reward)
            return obs, total, term, trunc, info

    return _DegreeBandwidth


@functools.lru_cache(maxsize=1)
def _wrapper_class():
    return _make_wrapper_class()


def DegreeBandwidth(env):  # noqa: N802 - a class factory (gymnasium is imported lazily)
    """Wrap a MappingEnv so that bandwidth decisions follow the node-degree importance rule."""
    return _wrapper_class()(env)


def make_env(variant: str, instance: Any = None, *, max_nodes: int, max_tasks: int, max_levels: int,
             preset: str = "thesis", params: dict[str, Any] | None = None, reward_fn=None, shaping=()):
    """The MappingEnv a variant plays (PPO-Balance: wrapped in :class:`DegreeBandwidth`)."""
    from edgebench.learned.envs.mapping import MappingEnv

    if variant not in VARIANTS:
        raise InputError(f"unknown CES-PPO variant {variant!r} (expected {', '.join(VARIANTS)})", field="variant")
    env = MappingEnv(instance, preset=preset, params=params, max_nodes=max_nodes, max_tasks=max_tasks,
                     max_levels=max_levels, reward_fn=reward_fn, shaping=shaping)
    return DegreeBandwidth(env) if variant == "ppo-balance" else env


# --------------------------------------------------------------------------------------
# Network
# --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _network_class():
    import torch
    from torch import nn

    class CESPPONet(nn.Module):
        """Shared 2-layer ReLU encoder; mapping, bandwidth and value heads."""

        def __init__(self, max_nodes: int, max_tasks: int, max_levels: int, hidden: int = 128,
                     node_head: bool = False) -> None:
            super().__init__()
            self.max_nodes, self.max_tasks, self.max_levels = max_nodes, max_tasks, max_levels
            self.n_actions = max(max_nodes, max_levels)
            self.in_dim = obs_dim(max_nodes, max_tasks)
            self.node_head = bool(node_head)
            self.encoder = nn.Sequential(nn.Linear(self.in_dim, hidden), nn.ReLU(),
                                         nn.Linear(hidden, hidden), nn.ReLU())
            self.map_head = nn.Linear(hidden, max_nodes)
            if self.node_head:
                # per-node scorer: logit_p = map_head(h)_p + w . ReLU(W [h, features of node p])
                self.node_score = nn.Sequential(nn.Linear(hidden + NODE_FEATURES, 64), nn.ReLU(), nn.Linear(64, 1))
                nn.init.orthogonal_(self.node_score[0].weight, 2**0.5)
                nn.init.zeros_(self.node_score[0].bias)
                nn.init.orthogonal_(self.node_score[2].weight, 0.01)
                nn.init.zeros_(self.node_score[2].bias)
            self.bw_head = nn.Linear(hidden, max_levels)
            self.value_head = nn.Linear(hidden, 1)
            # orthogonal init: sqrt(2) in the encoder, 0.01 for the policy heads (near-uniform
            # start), 1 for the value head
            for layer, gain in ((self.encoder[0], 2**0.5), (self.encoder[2], 2**0.5), (self.map_head, 0.01),
                                (self.bw_head, 0.01), (self.value_head, 1.0)):
                nn.init.orthogonal_(layer.weight, gain)
                nn.init.zeros_(layer.bias)

        def logits_value(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            """Masked logits over the env's actions and the state value; ``x`` (B, in_dim),
            ``mask`` (B, n_actions) bool. The phase is the decision vector's first entry."""
            h = self.encoder(x)
            A, B = self.n_actions, x.shape[0]
            fill = torch.full((B, A), MASK_LOGIT, dtype=x.dtype)
            map_l = fill.clone()
            map_l[:, :self.max_nodes] = self._map_logits(x, h)
            bw_l = fill.clone()
            bw_l[:, :self.max_levels] = self.bw_head(h)
            phase_bw = x[:, self.in_dim - _n_decision()] >= 0.5
            logits = torch.where(phase_bw.unsqueeze(1), bw_l, map_l)
            logits = logits.masked_fill(~mask, MASK_LOGIT)
            return logits, self.value_head(h).squeeze(-1)

        def _map_logits(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
            out = self.map_head(h)
            if not self.node_head:
                return out
            P, T, B = self.max_nodes, self.max_tasks, x.shape[0]
            nodes = x[:, :P * 3].reshape(B, P, 3)
            start = P * 3 + T * 3
            placed = x[:, start:start + T * P].reshape(B, T, P).sum(1, keepdim=False).unsqueeze(-1) / T
            feats = torch.cat([h.unsqueeze(1).expand(B, P, h.shape[1]), nodes, placed], dim=-1)
            return out + self.node_score(feats).squeeze(-1)

        def value(self, x: torch.Tensor) -> torch.Tensor:
            return self.value_head(self.encoder(x)).squeeze(-1)

    return CESPPONet


@functools.lru_cache(maxsize=1)
def _n_decision() -> int:
    from edgebench.learned.envs.mapping import DECISION_FEATURES

    return len(DECISION_FEATURES)


#: network architectures: "flat" (fixed node count: the MLP over the flattened, padded
#: observation) and "per-node" (any node count: one scorer applied to every physical node)
ARCHS = ("flat", "per-node")
#: inputs of the per-node network's global encoder: the decision vector and masked mean / max
#: pools of the node and task features
GLOBAL_FEATURES = 12 + 3 * 4


@functools.lru_cache(maxsize=1)
def _per_node_class():
    import torch
    from torch import nn

    class PerNodeNet(nn.Module):
        """Size-independent CES-PPO actor-critic. A global encoder reads the decision vector and
        masked mean / max pools of the node and task features; the mapping logit of physical
        node p is one shared MLP of (global embedding, p's free CPU / RAM / bandwidth, p's share
        of the job's placed tasks, p's features minus the node mean), so the same weights score
        10, 20 or any number of nodes. Bandwidth and value heads read the global embedding.
        The node and task counts of the flat input are set with :meth:`set_sizes` (padding
        rows, all zero, are left out of the pools; padded actions are masked by the env)."""

        arch = "per-node"

        def __init__(self, max_nodes: int, max_tasks: int, max_levels: int, hidden: int = 128) -> None:
            super().__init__()
            self.max_levels = max_levels
            self.set_sizes(max_nodes, max_tasks)
            self.encoder = nn.Sequential(nn.Linear(GLOBAL_FEATURES, hidden), nn.ReLU(),
                                         nn.Linear(hidden, hidden), nn.ReLU())
            self.node_score = nn.Sequential(nn.Linear(hidden + 7, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                                            nn.Linear(64, 1))
            self.bw_head = nn.Linear(hidden, max_levels)
            self.value_head = nn.Linear(hidden, 1)
            for layer, gain in ((self.encoder[0], 2**0.5), (self.encoder[2], 2**0.5), (self.node_score[0], 2**0.5),
                                (self.node_score[2], 2**0.5), (self.node_score[4], 0.01), (self.bw_head, 0.01),
                                (self.value_head, 1.0)):
                nn.init.orthogonal_(layer.weight, gain)
                nn.init.zeros_(layer.bias)

        def set_sizes(self, max_nodes: int, max_tasks: int) -> None:
            """The (padded) node and task counts of the observations to come."""
            self.max_nodes, self.max_tasks = int(max_nodes), int(max_tasks)
            self.n_actions = max(self.max_nodes, self.max_levels)
            self.in_dim = obs_dim(self.max_nodes, self.max_tasks)

        @staticmethod
        def _pool(feats: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
            w = valid.unsqueeze(-1).to(feats.dtype)
            mean = (feats * w).sum(1) / w.sum(1).clamp(min=1.0)
            mx = feats.masked_fill(~valid.unsqueeze(-1), 0.0).amax(1)
            return torch.cat([mean, mx], dim=-1)

        def _parts(self, x: torch.Tensor):
            if x.shape[1] != self.in_dim:
                raise ValueError(f"observation of length {x.shape[1]}, expected {self.in_dim} "
                                 f"({self.max_nodes} nodes, {self.max_tasks} tasks): call set_sizes")
            P, T, B = self.max_nodes, self.max_tasks, x.shape[0]
            nodes = x[:, :P * 3].reshape(B, P, 3)
            tasks = x[:, P * 3:P * 3 + T * 3].reshape(B, T, 3)
            start = P * 3 + T * 3
            placed = x[:, start:start + T * P].reshape(B, T, P).sum(1)
            dec = x[:, start + T * P:]
            node_ok = nodes.abs().sum(-1) > 0
            task_ok = tasks.abs().sum(-1) > 0
            g = torch.cat([dec, self._pool(nodes, node_ok), self._pool(tasks, task_ok)], dim=-1)
            share = placed / task_ok.sum(1, keepdim=True).clamp(min=1)
            return self.encoder(g), nodes, share, node_ok

        def logits_value(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            """Masked logits over the env's actions and the state value (as CESPPONet)."""
            h, nodes, share, node_ok = self._parts(x)
            B, P = x.shape[0], self.max_nodes
            w = node_ok.unsqueeze(-1).to(nodes.dtype)
            centred = nodes - (nodes * w).sum(1, keepdim=True) / w.sum(1, keepdim=True).clamp(min=1.0)
            feats = torch.cat([h.unsqueeze(1).expand(B, P, h.shape[1]), nodes, share.unsqueeze(-1), centred], -1)
            fill = torch.full((B, self.n_actions), MASK_LOGIT, dtype=x.dtype)
            map_l = fill.clone()
            map_l[:, :P] = self.node_score(feats).squeeze(-1)
            bw_l = fill.clone()
            bw_l[:, :self.max_levels] = self.bw_head(h)
            phase_bw = x[:, self.in_dim - _n_decision()] >= 0.5
            logits = torch.where(phase_bw.unsqueeze(1), bw_l, map_l)
            return logits.masked_fill(~mask, MASK_LOGIT), self.value_head(h).squeeze(-1)

        def value(self, x: torch.Tensor) -> torch.Tensor:
            return self.value_head(self._parts(x)[0]).squeeze(-1)

    return PerNodeNet


def build_network(max_nodes: int, max_tasks: int, max_levels: int, hidden: int = 128, node_head: bool = False,
                  arch: str = "flat"):
    """A fresh CES-PPO actor-critic (initialised from torch's current RNG). ``arch="flat"``:
    the fixed-size MLP (``node_head`` adds the per-node scorer to its mapping head);
    ``arch="per-node"``: the size-independent network (any node count)."""
    if arch == "per-node":
        return _per_node_class()(max_nodes, max_tasks, max_levels, hidden)
    if arch != "flat":
        raise InputError(f"unknown network architecture {arch!r} (expected {', '.join(ARCHS)})", field="arch")
    return _network_class()(max_nodes, max_tasks, max_levels, hidden, node_head)


def decide(net, obs: dict[str, np.ndarray], *, greedy: bool = True, generator=None) -> int:
    """One decision of ``net`` on a MappingEnv observation: argmax (greedy) or a sample of the
    masked softmax (``generator``: a torch.Generator). Always an allowed action."""
    import torch

    dtype = next(net.parameters()).dtype
    x = torch.from_numpy(flatten_obs(obs)).unsqueeze(0).to(dtype)
    m = torch.from_numpy(obs["action_mask"].astype(bool)).unsqueeze(0)
    with torch.inference_mode():
        logits, _ = net.logits_value(x, m)
        if greedy:  # deterministic ties (edgebench.learned.acting)
            return pick_max(logits[0].double().numpy(), m[0].numpy())[0]
        probs = torch.softmax(logits[0], dim=-1)
        return int(torch.multinomial(probs, 1, generator=generator))


# --------------------------------------------------------------------------------------
# Checkpoints
# --------------------------------------------------------------------------------------


@dataclass
class _Arch:
    """The network sizes a checkpoint records (checked before any network is built)."""

    max_nodes: int
    max_tasks: int
    max_levels: int
    hidden: int
    node_head: bool = False


_ARCH_BOUNDS = {k: (1, checkpoint.MAX_CONFIG_INT) for k in ("max_nodes", "max_tasks", "max_levels", "hidden")}


class LoadedPolicy:
    """A checkpoint's network (eval mode) with its variant, sizes and training record."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        with checkpoint.reading(path):
            arch = checkpoint.config_from_dict(_Arch, {**data["sizes"], "hidden": data["hidden"],
                                                       "node_head": data.get("node_head", False)},
                                               file=path, field="checkpoint.sizes", bounds=_ARCH_BOUNDS)
            variant = data["variant"]
        if variant not in VARIANTS:
            raise InputError(f"unknown variant {variant!r}", file=str(path), field="checkpoint.variant")
        self.path = path
        self.variant: str = variant
        self.max_nodes, self.max_tasks, self.max_levels = arch.max_nodes, arch.max_tasks, arch.max_levels
        with checkpoint.reading(path):
            self.arch: str = str(data.get("arch", "flat"))
        if self.arch not in ARCHS:
            raise InputError(f"unknown network architecture {self.arch!r} (known: {', '.join(ARCHS)})",
                             file=str(path), field="checkpoint.arch")
        self.net = checkpoint.build_checked(
            lambda: build_network(arch.max_nodes, arch.max_tasks, arch.max_levels, arch.hidden, arch.node_head,
                                  self.arch),
            data.get("model"), file=path, field="checkpoint.model")
        self.net.double().eval()  # acting in float64: the same decisions on any machine (edgebench.learned.acting)
        self.meta = {k: data.get(k) for k in ("args", "global_step", "eval", "preset", "params")}

    def env_sizes(self, instance) -> dict[str, int]:
        """The env sizes to play ``instance`` with. Flat network: the checkpoint's. Per-node
        network: the instance's node count (no padding) and at least the checkpoint's task
        count (the decision vector normalises the job's size by it)."""
        if self.arch != "per-node":
            return {"max_nodes": self.max_nodes, "max_tasks": self.max_tasks, "max_levels": self.max_levels}
        m = instance.mapping
        return {"max_nodes": len(m.nodes), "max_tasks": max(self.max_tasks, max(len(j.tasks) for j in m.jobs)),
                "max_levels": self.max_levels}

    def fits(self, instance) -> str | None:
        """None when the network can play the instance, else the reason (the per-node network
        plays any node and task count; the flat one only up to its checkpoint's sizes)."""
        m = instance.mapping
        if self.arch == "per-node":
            if m.objective.bandwidth_levels > self.max_levels:
                return f"{m.objective.bandwidth_levels} bandwidth levels > the checkpoint's {self.max_levels}"
            return None
        if len(m.nodes) > self.max_nodes:
            return f"{len(m.nodes)} physical nodes > the checkpoint's {self.max_nodes}"
        big = max(len(j.tasks) for j in m.jobs)
        if big > self.max_tasks:
            return f"a job of {big} task nodes > the checkpoint's {self.max_tasks}"
        if m.objective.bandwidth_levels > self.max_levels:
            return f"{m.objective.bandwidth_levels} bandwidth levels > the checkpoint's {self.max_levels}"
        return None


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """The raw checkpoint dict, read as data only (:mod:`edgebench.learned.checkpoint`;
    InputError when missing, unreadable or not a CES-PPO checkpoint)."""
    return checkpoint.load_checkpoint(path, CHECKPOINT_FORMAT, hint="train one with 'edgebench train ces-ppo'")


@functools.lru_cache(maxsize=16)
def _load_cached(path: str, mtime: float) -> LoadedPolicy:
    return LoadedPolicy(Path(path), read_checkpoint(path))


def load_policy(path: str | Path) -> LoadedPolicy:
    """Load (and cache, by path and modification time) a checkpoint's policy."""
    p = Path(path).resolve()
    if not p.is_file():
        read_checkpoint(p)  # raises the InputError
    return _load_cached(str(p), p.stat().st_mtime)


# --------------------------------------------------------------------------------------
# Running a policy
# --------------------------------------------------------------------------------------


def run_policy(policy: LoadedPolicy, instance, *, greedy: bool = True, seed: int = 0,
               deadline: float | None = None, generator=None) -> tuple[Any, dict[str, Any]]:
    """Play one episode of ``instance`` with the policy. Returns (MappingDecisions or None,
    info) with info = {"decisions": steps of the policy, "objectives", "feasible",
    "dead_end", "timeout"}. Sampling (``greedy=False``) uses ``generator`` (a
    torch.Generator) or one seeded with ``seed``."""
    import torch

    sizes = policy.env_sizes(instance)
    env = make_env(policy.variant, instance, **sizes)
    if policy.arch == "per-node":
        policy.net.set_sizes(sizes["max_nodes"], sizes["max_tasks"])
    gen = None
    if not greedy:
        gen = generator if generator is not None else torch.Generator().manual_seed(int(seed))
    obs, info = env.reset(seed=int(seed))
    steps = 0
    while True:
        if deadline is not None and time.perf_counter() > deadline:
            return None, {"decisions": steps, "timeout": True}
        if not obs["action_mask"].any():  # a job that does not fit at all (the env's mask is empty at reset)
            return None, {"decisions": steps, "timeout": False, "dead_end": True, "feasible": False,
                          "objectives": None}
        a = decide(policy.net, obs, greedy=greedy, generator=gen)
        obs, _, term, trunc, info = env.step(a)
        steps += 1
        if term or trunc:
            break
    out = {"decisions": steps, "timeout": False, "dead_end": bool(info.get("dead_end")),
           "feasible": info.get("feasible"), "objectives": info.get("objectives")}
    return info.get("decisions"), out


# --------------------------------------------------------------------------------------
# Registered solvers
# --------------------------------------------------------------------------------------

SOLVER_PARAMS = {
    "checkpoint": "str, default: the shipped checkpoint of the variant (learned/checkpoints/)",
    "greedy": "bool, default true: argmax decisions; false samples the masked softmax with the solver seed",
    "samples": "int >= 0, default 0: also play this many sampled episodes (torch generator seeded by the solver "
               "seed) and return the best of them and the greedy (or greedy=false) one by the referee's composite",
}


def _parse(name: str, params: dict[str, Any]) -> tuple[Path, bool, int]:
    unknown = set(params) - set(SOLVER_PARAMS)
    if unknown:
        raise InputError(f"unknown parameter of solver {name!r} (known: {', '.join(sorted(SOLVER_PARAMS))})",
                         field=f"params.{sorted(unknown)[0]}")
    ckpt = params.get("checkpoint", DEFAULT_CHECKPOINTS[name])
    if not isinstance(ckpt, (str, Path)):
        raise InputError(f"checkpoint must be a path, got {ckpt!r}", field="params.checkpoint")
    greedy = params.get("greedy", True)
    if not isinstance(greedy, bool):
        raise InputError(f"greedy must be true or false, got {greedy!r}", field="params.greedy")
    samples = params.get("samples", 0)
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 0:
        raise InputError(f"samples must be a non-negative integer, got {samples!r}", field="params.samples")
    return Path(ckpt), greedy, int(samples)


def _solve(name: str, instance, time_limit: float | None, seed: int, params: dict[str, Any]) -> Result:
    started = time.perf_counter()
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}", field="seed")
    path, greedy, samples = _parse(name, params)
    policy = load_policy(path)
    sha = sha256_file(path)  # the run's record of the file it ran (the store's checkpoint column)
    if policy.variant != name:
        raise InputError(f"the checkpoint is of variant {policy.variant!r}, not {name!r}", file=str(path),
                         field="checkpoint")
    why = policy.fits(instance)
    if why is not None:
        return make_result(instance, name, status="error", seed=seed, params=params, started=started,
                           stats={"reason": f"instance too large for the network: {why}", "checkpoint_sha256": sha})
    deadline = None if time_limit is None else started + float(time_limit)
    decisions, info = run_policy(policy, instance, greedy=greedy, seed=int(seed), deadline=deadline)
    stats = {"decisions": info["decisions"], "checkpoint": str(path), "checkpoint_sha256": sha}
    if samples and not info.get("timeout"):
        decisions, info, extra = _best_of_samples(policy, instance, samples, int(seed), deadline, decisions, info)
        stats.update(extra)
        stats["decisions"] = info["decisions"]
    if info.get("timeout"):
        return make_result(instance, name, status="timeout", seed=seed, params=params, started=started, stats=stats)
    if decisions is None:
        stats["reason"] = "dead end: no allowed action (a job the greedy completion cannot map)"
        return make_result(instance, name, status="infeasible", seed=seed, params=params, started=started,
                           stats=stats)
    stats.update(info["objectives"] or {})
    return make_result(instance, name, status="feasible" if info["feasible"] else "error", decisions=decisions,
                       seed=seed, params=params, objective=(info["objectives"] or {}).get("composite"),
                       started=started, stats=stats)


def _score(decisions, info) -> float:
    if decisions is None or not info.get("feasible"):
        return -math.inf
    return float((info.get("objectives") or {}).get("composite", -math.inf))


def _best_of_samples(policy: LoadedPolicy, instance, samples: int, seed: int, deadline: float | None, decisions,
                     info) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """Best of the first episode and ``samples`` sampled ones (one torch generator seeded by
    ``seed``, so the result is a function of the seed) by the referee's composite
    (:func:`edgebench.learned.sampling.best_of`, higher composite first); stops at the deadline
    with the best so far."""
    import torch

    gen = torch.Generator().manual_seed(seed)

    def play(_k: int):  # (decisions, info); None when the deadline cut the episode
        d, inf = run_policy(policy, instance, greedy=False, deadline=deadline, generator=gen)
        return None if inf.get("timeout") else (d, inf)

    got = best_of((decisions, info), lambda episode: -_score(*episode), play, samples, deadline=deadline)
    first = -got.scores[0]
    extra = {"samples": got.played, "chosen_sample": got.chosen - 1,
             "first_composite": None if first == -math.inf else first}
    return got.best[0], got.best[1], extra


@register("ces-ppo", families=("mapping",), kind="learned",
          description="CES-PPO (thesis): PPO actor-critic mapping task nodes and bandwidth levels with masks and a "
                      "decaying heuristic reward; shipped checkpoint",
          params=SOLVER_PARAMS, provenance=checkpoints_of("ces-ppo"))
def solve_ces_ppo(instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    """CES-PPO with the shipped checkpoint (see docs/ces-ppo.md)."""
    with one_torch_thread():
        return _solve("ces-ppo", instance, time_limit, seed, params)


@register("ces-ppo-noheur", families=("mapping",), kind="learned",
          description="CES-PPO ablation trained without the heuristic reward (lambda_h = 0); shipped checkpoint",
          params=SOLVER_PARAMS, provenance=checkpoints_of("ces-ppo-noheur"))
def solve_ces_ppo_noheur(instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    """CES-PPO ablation without heuristic reward."""
    with one_torch_thread():
        return _solve("ces-ppo-noheur", instance, time_limit, seed, params)


@register("ppo-balance", families=("mapping",), kind="learned",
          description="PPO-Balance baseline: RL node choice trained for load balance, bandwidth by node-degree "
                      "importance; shipped checkpoint",
          params=SOLVER_PARAMS, provenance=checkpoints_of("ces-ppo-balance"))
def solve_ppo_balance(instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    """PPO-Balance baseline."""
    with one_torch_thread():
        return _solve("ppo-balance", instance, time_limit, seed, params)
