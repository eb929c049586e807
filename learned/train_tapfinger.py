"""MAPPO training of TapFinger (:mod:`edgebench.learned.tapfinger`) on the placement environment.

One readable file in the CleanRL manner: a dataclass of arguments, an explicit rollout loop
that stores every agent's observation, pending ids and action masks in the buffer, GAE per
agent, and a clipped-surrogate update that re-applies the stored masks. The policy ratio is
taken on log Pr(j | n) + m log Pr*(x | j, n) with m = 1 only for the agent that won its task's
conflict; agents whose only action was void this step (idle or full clusters) are left out of
the policy loss. Variant "multi": several logical steps per real interval (the env handles
them; intermediate rewards are 0) and gamma = 1.

Optional behaviour-cloning warm start (``bc_instances`` / ``bc_epochs``; a documented deviation
from the paper, which trains MAPPO from scratch): training instances are solved by the exact
model (``placement-milp``, cached as JSON), each schedule is replayed through the env
(:func:`replay_expert`, which reproduces the exact objective) and the policy is fitted to the
expert's pointer and allocation choices (cross-entropy on the masked logits) and its value head
to the expert's returns (:func:`behaviour_cloning`); MAPPO then fine-tunes for ``steps``.
Generic inputs too: the replay records what the MAPPO rollout records of a decision, with the
same builder (:func:`tapfinger.decision_records`: the chosen slots' allowed cells and the
expert's starts' compact cell features), and the BC loss reads them as the update does.
Optional DAgger rounds (``dagger_rounds`` / ``dagger_instances``): the student plays new
training instances, the exact model is re-solved from some of the states it visits with the
tasks it already started fixed (:func:`expert_from_state`), the continuations are replayed and
their states added to the data (:func:`dagger_dataset`). With ``val_episodes`` > 0 the
supervised phase keeps the weights best on the validation seeds ``val_seed_base`` + k
(disjoint from training and held-out seeds); ``init`` starts from a checkpoint's weights.

Training instances are drawn from the generator with seeds in [0, 10**9) from the run's
RNG; evaluation uses the held-out seeds 10**9 + k (k = 0 .. eval_episodes-1), greedy actions.
See ``docs/tapfinger.md``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from edgebench.instances.io import write_text_atomic
from edgebench.learned import checkpoint, ppo
from edgebench.learned import tapfinger as tf
from edgebench.learned.envs.placement import PlacementVectorEnv
from edgebench.formulations.placement.search.online import (continuation_start, myopic_from_state, next_arrival,
                                                            started_option)

__all__ = ["TrainArgs", "train", "evaluate", "transfer_layout", "EVAL_SEED_BASE", "expert_schedule", "replay_expert", "expert_seeds",
           "expert_dataset", "behaviour_cloning", "expert_from_state", "student_states", "dagger_dataset",
           "lns_from_state", "myopic_window", "DAGGER_EXPERTS", "MYOPIC_LABELS"]

EVAL_SEED_BASE = 10**9


#: columns of OUT/metrics.csv
METRICS_KEYS = ["update", "global_step", "sps", "episodes", "train_mean_ct", "policy_loss", "value_loss",
                "entropy", "approx_kl", "eval_mean_ct", "eval_done", "ms_per_decision", "bc_epoch", "bc_pointer",
                "bc_alloc", "bc_value", "bc_acc", "expert_mean_ct", "val_mean_ct", "dagger_round", "bc_states",
                "train_return", "critic_warmup", "clipfrac", "epochs", "selected_update"]


def write_metrics(path: Path, rows: list[dict[str, Any]]) -> None:
    """``metrics.csv`` holding exactly ``rows`` (written atomically)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=METRICS_KEYS, extrasaction="ignore", lineterminator="\r\n")
    w.writeheader()
    w.writerows(rows)
    write_text_atomic(path, buf.getvalue())


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
    #: stop an update's epochs once the approx KL to the rollout policy exceeds this (None: never)
    target_kl: float | None = None
    #: first updates of MAPPO in which only the critic learns (the actor frozen; a warm start's
    #: value head is fitted to the expert's returns, not to the sampled policy's)
    critic_warmup: int = 0
    #: the value loss does not reach the encoder shared with the actor
    critic_detach: bool = False
    critic_lr: float | None = None  # learning rate of the critic's own layers (None: lr)
    #: linear decay of both learning rates to 0 at this many env steps of the run's whole life
    #: (lr x max(0, 1 - global_step / anneal_steps) before each update; CleanRL's ``anneal_lr``, the
    #: MAPPO code's linear decay); a horizon of its own, not ``steps``, so that a run stopped early and
    #: resumed follows the same schedule. 0: off (constant rates)
    anneal_steps: int = 0
    #: MAPPO on the team reward (every agent gets the sum of the agents' rewards, i.e. minus the
    #: tasks in the system) instead of each agent's own (minus the tasks associated with its cluster)
    team_reward: bool = False
    eval_every: int = 5  # updates between evaluations (0: only at the end)
    eval_episodes: int = 4
    threads: int = 1
    device: str = "auto"  # "auto": CUDA when available, else the CPU (checkpoints are saved on the CPU)
    model: tf.ModelConfig = field(default_factory=tf.ModelConfig)
    out: str | None = None  # folder: metrics.csv, TensorBoard events, last.pt, best.pt
    resume: bool = False  # continue from out/last.pt
    #: generic inputs: the allocation head scores the allowed cells only (faster, not bit for bit
    #: the default's trajectory: TapFingerNet.sparse_alloc); a run-time choice, not in the checkpoint
    sparse_alloc: bool = False
    #: divide the pointer's and the allocation's entropies by ln(number of allowed choices) in the
    #: bonus, so a head over hundreds of cells is not rewarded for staying flat (generic inputs;
    #: docs/tapfinger.md, "the greedy gap"); off: the paper's raw entropies
    entropy_norm: bool = False
    #: generic inputs: the pending rows' cross-cluster features (``PlacementParallelEnv(cross_features=True)``,
    #: :data:`tapfinger_features.CROSS_FEATURES`); stored in the checkpoint's layout
    cross_features: bool = False
    #: generic inputs: the pending rows' plan features (``PlacementParallelEnv(plan_features=True)``,
    #: :data:`tapfinger_features.PLAN_FEATURES`: the step's shared plan of the windows); in the layout
    plan_features: bool = False
    # behaviour-cloning warm start from the exact model's schedules (0 instances: pure MAPPO, the paper)
    bc_instances: int = 0  # training instances solved by placement-milp (cached under bc_cache)
    bc_epochs: int = 0  # supervised epochs over the expert's states before MAPPO
    bc_time_limit: float = 5.0  # seconds per expert solve (one thread)
    #: the expert of the warm start's schedules: "placement-milp" (the fixed-allocation MILP, the
    #: first checkpoints'), "placement-lns" (the large-neighbourhood search that set most of the
    #: library's best knowns, gaps 0-10 % to a valid bound) or "placement-lns-online" (the same LNS
    #: as a rolling horizon on the tasks known so far); DAgger's continuations: dagger_expert
    expert: str = "placement-milp"
    bc_cache: str | None = "runs/tapfinger-expert"  # folder of cached expert schedules (None: no cache)
    bc_lr: float | None = None  # None: lr
    bc_eval_every: int = 0  # BC epochs between evaluations (0: only after the last)
    # validation split (model selection): seeds val_seed_base + k, k < val_episodes, disjoint from the
    # training seeds [0, 10**9) and the held-out 10**9 + k; 0 episodes: no selection (the last weights)
    val_seed_base: int = 2 * 10**9
    val_episodes: int = 0
    #: generator parameters of the validation instances over the run's (``gen_params``), e.g.
    #: {"num_tasks": 384}: select the weights at the held-out scale while training on shorter
    #: episodes (empty: the training instances' parameters)
    val_params: dict[str, Any] = field(default_factory=dict)
    init: str | None = None  # start from this checkpoint's weights (same model configuration)
    # DAgger: rounds of (student episodes on new training instances, expert continuations from their
    # states, aggregation, bc on the aggregate); the expert is placement's exact model re-solved
    dagger_rounds: int = 0
    dagger_instances: int = 0  # student episodes (training instances) per round
    dagger_cuts: int = 3  # states per student episode from which the expert's continuation is solved
    dagger_epochs: int | None = None  # supervised epochs per round (None: bc_epochs)
    #: weight of the value regression in the supervised (BC / DAgger) loss (None: vf_coef). At 384
    #: tasks the returns are large (value loss ~1,800 against cross-entropies ~2): its gradient
    #: dominates the global grad-norm clip and the policy hardly moves; 0 leaves the value head alone
    bc_value_coef: float | None = None
    #: the expert of DAgger's continuations (:data:`DAGGER_EXPERTS`): "placement-milp" (the exact
    #: fixed-allocation model, :func:`expert_from_state`) or "placement-lns" (the LNS improving the
    #: student's own continuation, :func:`lns_from_state`; window repair with bc_window_repair > 0)
    #: or "placement-lns-myopic" (that LNS on the tasks known at the state only, imitated until the
    #: next arrival: :func:`placement.search.online.myopic_from_state`, :func:`myopic_window`) or
    #: "online-list" (the same with no LNS neighbourhood: the list-scheduling plan of the known tasks)
    dagger_expert: str = "placement-milp"
    #: the myopic expert's labels (:data:`MYOPIC_LABELS`, :func:`myopic_window`): "plan" (a window
    #: is kept only when the env's starts equal the plan's) or "played" (the window-repaired replay
    #: is kept whenever the env allowed and started every start the repair chose: the plan as the
    #: agents can play it; the repair is on whatever ``bc_window_repair``)
    dagger_myopic_labels: str = "plan"
    #: the "self-best" expert (:func:`self_best_dataset`): sampled episodes per training instance after
    #: the greedy one, and their temperature (the solvers' ``samples`` and ``temperature``)
    dagger_samples: int = 16
    #: DAgger's aggregate keeps the states of the last this many rounds only (0: every round's, as
    #: DAgger aggregates); the warm start's expert states are always kept
    dagger_window: int = 0
    dagger_temperature: float = 0.25
    #: the window repair of the expert's schedules (:func:`replay_expert` ``repair``): a start the
    #: agent cannot make (the task is not among its cluster's first pending_size pending tasks) is
    #: delayed until it can; the repaired schedule is imitated when its referee value is within this
    #: relative tolerance of the expert's (0: off, only schedules replayed exactly are imitated)
    bc_window_repair: float = 0.0

    def resolved_gamma(self) -> float:
        return self.gamma if self.gamma is not None else (1.0 if self.variant == "multi" else 0.99)


def lr_factor(step: int, anneal_steps: int) -> float:
    """The linear decay's factor of the learning rates for an update whose rollout began at env step
    ``step``: ``max(0, 1 - step / anneal_steps)`` (1 at the first update)."""
    return max(0.0, 1.0 - step / anneal_steps)


def set_rates(opt, critic_opt, lr: float, critic_lr: float, factor: float) -> None:
    """The rates of the PPO optimiser's two groups (actor and encoder; critic) and of the critic's
    warm-up optimiser, each its base rate times ``factor``."""
    for g, base in zip(opt.param_groups, (lr, critic_lr)):
        g["lr"] = base * factor
    for g in critic_opt.param_groups:
        g["lr"] = critic_lr * factor


def evaluate(model, args: TrainArgs, lay: tf.EnvLayout, *, episodes: int | None = None,
             greedy: bool = True, seed_base: int = EVAL_SEED_BASE,
             params: dict[str, Any] | None = None) -> dict[str, float]:
    """Episodes on the held-out seeds 10**9 + k (``seed_base`` + k; greedy, or sampled with seed k)
    of instances generated with ``params`` (None: ``args.gen_params``):
    mean completion time (steps) over episodes, fraction of episodes that finished every task,
    ms per decision, the per-episode mean completion times ("eval_cts") and the smallest greedy
    decision margin ("decision_margin", :func:`tapfinger.pick_max`)."""
    from edgebench.instances.generators import generate

    params = args.gen_params if params is None else params
    env = tf.make_env(preset=args.preset, params=params, variant=args.variant, lay=lay)
    cts, dones, dt, margin = [], [], [], math.inf
    for k in range(episodes or args.eval_episodes):
        inst = generate("placement", args.preset, seed=seed_base + k, **params)
        out = tf.run_episode(model, env, lay, seed=k, greedy=greedy, instance=inst)
        cts.append(out["mean_ct"])
        dones.append(out["done"])
        dt.append(out["decision_time"])
        margin = min(margin, out["decision_margin"])
    return {"eval_mean_ct": float(np.mean(cts)), "eval_done": float(np.mean(dones)),
            "ms_per_decision": 1000.0 * float(np.mean(dt)), "eval_cts": [float(c) for c in cts],
            "decision_margin": margin}


def validate(model, args: TrainArgs, lay: tf.EnvLayout) -> dict[str, float]:
    """The validation episodes of model selection: seeds ``val_seed_base`` + k, k <
    ``val_episodes``, instances with ``gen_params`` updated by ``val_params``."""
    return evaluate(model, args, lay, episodes=args.val_episodes, seed_base=args.val_seed_base,
                    params={**args.gen_params, **args.val_params})


def transfer_layout(own: tf.EnvLayout, init: tf.EnvLayout, *, file: str) -> tf.EnvLayout:
    """The layout of a run started from a checkpoint (``--init``) of another preset: the run's
    clusters and task-type names with the checkpoint's tensor shapes (allocation grid, running
    rows), so that every weight keeps its shape. Allowed when the cluster count, the pending
    window and the number of task types are equal and the run's capacities lie within the
    checkpoint's grid (e.g. synthetic-6 from a hetero-6 file, sjf-ablation from a synthetic-3
    file: the type one-hots keep their positions, their meaning is re-learned); otherwise
    InputError naming the difference. Generic inputs (both layouts generic): the run's own
    layout (no weight depends on it)."""
    if own.inputs != init.inputs:
        raise tf.InputError(f"the checkpoint's inputs are {init.inputs!r}, this run's {own.inputs!r}", file=file,
                            field="init")
    if own.inputs == "generic":
        for what, a, b in (("cross-cluster", own.cross, init.cross), ("plan", own.plan, init.plan)):
            if a != b:
                raise tf.InputError(f"the checkpoint reads {b} {what} features per pending task, this run {a}",
                                    file=file, field="init")
        return own
    for what, a, b in (("clusters", own.n, init.n), ("pending window", own.pending_size, init.pending_size),
                       ("number of task types", own.types, init.types)):
        if a != b:
            raise tf.InputError(f"the checkpoint's {what} is {b}, this run's {a}", file=file, field="init")
    if own.max_cpu > init.max_cpu or own.max_gpu > init.max_gpu:
        raise tf.InputError(f"this run's capacities {own.caps} exceed the checkpoint's grid ({init.max_cpu}, "
                            f"{init.max_gpu})", file=file, field="init")
    return tf.EnvLayout(list(own.caps), own.pending_size, init.max_running, list(own.type_names),
                        init.max_cpu, init.max_gpu)


def _log_choices(logits):
    """ln(max(2, number of allowed entries)) of masked logits (masked entries are ``tf.NEG``): the
    largest entropy over those choices, the divisor of ``TrainArgs.entropy_norm``."""
    import torch

    n = (logits > tf.NEG / 2).sum(-1).clamp(min=2)
    return torch.log(n.to(logits.dtype))


def _logp_entropy(model, batch: dict, idx: np.ndarray, *, critic_grad: bool = True,
                 entropy_norm: bool = False):
    """Recompute log pi and entropies of the stored actions with the stored masks
    (``critic_grad=False``: the value loss does not reach the shared encoder; ``entropy_norm``:
    each entropy divided by ln(allowed choices), :func:`_log_choices`)."""
    import torch

    if tf.PACKED and "slot_ok" in batch:
        return _logp_entropy_packed(model, batch, idx, critic_grad=critic_grad, entropy_norm=entropy_norm)
    dev = model.void.device
    masks = torch.as_tensor(batch["masks"][idx], device=dev)
    logits, z, clus, values = model(batch["obs"][idx], batch["ids"][idx], masks, batch["void_ok"][idx],
                                    critic_grad=critic_grad)
    slot = torch.as_tensor(batch["slot"][idx], device=dev)
    m = torch.as_tensor(batch["m"][idx], device=dev).float()
    logp_s = torch.log_softmax(logits, -1)
    lp_slot = logp_s.gather(-1, slot.unsqueeze(-1)).squeeze(-1)
    ent_slot = -(logp_s.exp() * logp_s).sum(-1)
    cells = tf.full_cells(batch, idx) if "cells" in batch else None
    al = model.alloc_logits(z, clus, slot, masks, cells)
    logp_a = torch.log_softmax(al, -1)
    lp_alloc = logp_a.gather(-1, torch.as_tensor(batch["alloc"][idx], device=dev).unsqueeze(-1)).squeeze(-1)
    ent_alloc = -(logp_a.exp() * logp_a).sum(-1)
    if entropy_norm:
        ent_slot, ent_alloc = ent_slot / _log_choices(logits), ent_alloc / _log_choices(al)
    if model.cfg.pointer == "random":  # the ablation's selection has no parameters
        lp_slot = torch.zeros_like(lp_slot)
        ent_slot = torch.zeros_like(ent_slot)
    logp = lp_slot + m * lp_alloc
    return logp, ent_slot + m * ent_alloc, values


def _logp_entropy_packed(model, batch: dict, idx: np.ndarray, *, critic_grad: bool = True,
                        entropy_norm: bool = False):
    """:func:`_logp_entropy` on the packed path (``tf.PACKED``): the packed forward, the slots'
    and the chosen cells' masks as the rollout recorded them (``slot_ok``, ``alloc_ok``: the full
    masks are not read), and the allocation head on the winners (m = 1) only -- the others' terms
    are multiplied by m = 0. The same values in exact arithmetic."""
    import torch

    dev = model.void.device
    logits, z, clus, values = model(batch["obs"][idx], batch["ids"][idx], None, batch["void_ok"][idx],
                                    critic_grad=critic_grad, packed=True, slot_ok=batch["slot_ok"][idx])
    B, N, P, d = z.shape
    m_np = batch["m"][idx]
    slot = torch.as_tensor(batch["slot"][idx], device=dev)
    m = torch.as_tensor(m_np, device=dev).float()
    logp_s = torch.log_softmax(logits, -1)
    lp_slot = logp_s.gather(-1, slot.unsqueeze(-1)).squeeze(-1)
    ent_slot = -(logp_s.exp() * logp_s).sum(-1)
    lp_alloc = z.new_zeros(B * N)
    ent_alloc = z.new_zeros(B * N)
    if m_np.any():
        wt, a_logits, chosen = _winner_alloc_logits(model, batch, idx, z, clus)
        logp_a = torch.log_softmax(a_logits, -1)
        lp_alloc = lp_alloc.index_put((wt,), logp_a.gather(-1, chosen.unsqueeze(-1)).squeeze(-1))
        ent_a = -(logp_a.exp() * logp_a).sum(-1)
        if entropy_norm:
            ent_a = ent_a / _log_choices(a_logits)
        ent_alloc = ent_alloc.index_put((wt,), ent_a)
    lp_alloc, ent_alloc = lp_alloc.view(B, N), ent_alloc.view(B, N)
    if entropy_norm:
        ent_slot = ent_slot / _log_choices(logits)
    if model.cfg.pointer == "random":  # the ablation's selection has no parameters
        lp_slot = torch.zeros_like(lp_slot)
        ent_slot = torch.zeros_like(ent_slot)
    return lp_slot + m * lp_alloc, ent_slot + m * ent_alloc, values


def _winner_alloc_logits(model, batch: dict, idx: np.ndarray, z, clus):
    """The allocation head on the winners (m = 1) of the samples ``idx`` only, from the recorded
    chosen slots' allowed cells (``alloc_ok``) and, for generic inputs, their compact cell
    features (``cells``, :func:`tapfinger.decision_records`; ``sparse_alloc`` honoured): (the
    winners' rows of the flattened (B * N) agents as a tensor, their logits (K, grid), their
    recorded allocations (K,)). Needs at least one winner. Read by the MAPPO update (packed
    path) and by behaviour cloning of generic models."""
    import torch

    dev = model.void.device
    B, N, P, d = z.shape
    win = np.flatnonzero(batch["m"][idx].reshape(-1))
    wt = torch.as_tensor(win, device=dev)
    hj = z.reshape(B * N, P, d)[wt, torch.as_tensor(batch["slot"][idx].reshape(-1)[win], device=dev)]
    ok = torch.as_tensor(batch["alloc_ok"][idx].reshape(B * N, -1)[win], device=dev)
    cells = tf.batch_cells(batch, idx) if "cells" in batch else None
    a_logits = model.alloc_head(hj, clus.reshape(B * N, d)[wt], ok, cells, compact=True)
    chosen = torch.as_tensor(batch["alloc"][idx].reshape(-1)[win], device=dev)
    return wt, a_logits, chosen


def train(args: TrainArgs, *, log: Callable[[str], None] | None = print) -> dict[str, Any]:
    """Run MAPPO; returns {"model" (on the CPU), "layout", "history" (list of metric rows), "final" (last
    eval), "ledger"}."""
    import torch

    from edgebench.instances.generators import generate

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    init_model = None
    lay = tf.EnvLayout.of_env(tf.make_env(preset=args.preset, params=args.gen_params, variant=args.variant,
                                          inputs=args.model.inputs, cross=args.cross_features,
                                          plan=args.plan_features))
    generic = args.model.inputs == "generic"
    if args.init:
        init_model, init_lay, _ = tf.load_checkpoint(args.init)
        lay = transfer_layout(lay, init_lay, file=str(args.init))
    envs = [tf.make_env(preset=args.preset, params=args.gen_params, variant=args.variant, lay=lay)
            for _ in range(args.num_envs)]
    device = tf.resolve_device(args.device)
    tf.make_deterministic(device)
    model = tf.make_model(args.model, lay)
    if args.sparse_alloc and not generic:
        raise tf.InputError("the sparse allocation head needs generic inputs (--inputs generic)", field="sparse_alloc")
    model.sparse_alloc = bool(args.sparse_alloc)
    if init_model is not None:
        if asdict(init_model.cfg) != asdict(model.cfg):
            raise tf.InputError("the --init checkpoint's model differs from this run's", file=str(args.init),
                                field="init")
        model.load_state_dict(init_model.state_dict())
    model.to(device)
    critic_ids = {id(p) for p in model.critic.parameters()}
    critic_lr = args.critic_lr or args.lr
    opt = torch.optim.Adam([{"params": [p for p in model.parameters() if id(p) not in critic_ids], "lr": args.lr},
                            {"params": list(model.critic.parameters()), "lr": critic_lr}], eps=1e-5)
    critic_opt = torch.optim.Adam(model.critic.parameters(), lr=critic_lr, eps=1e-5)
    gamma = args.resolved_gamma()
    out = Path(args.out) if args.out else None
    history: list[dict[str, Any]] = []
    global_step, update, best = 0, 0, float("inf")
    bc_done = False
    #: the step ledger: env steps, CPU seconds and resumptions over the run's whole life
    ledger = {"env_steps": 0, "cpu_seconds": 0.0, "resumptions": 0}
    cpu_at_start = time.process_time()
    venv_state: dict | None = None  # the vector env's episodes in flight (a resumed run)
    # MAPPO model selection on the validation seeds (val_episodes > 0): the weights at the start of
    # MAPPO (the warm start) are a candidate; OUT/rl_best.pt keeps the best (its weights: "state"
    # in memory, None after a resume, then read from the file)
    rl_sel: dict[str, Any] = {"update": -1, "val": float("inf"), "state": None}
    if out is not None and args.resume and (out / "last.pt").is_file():
        last = out / "last.pt"
        blob = checkpoint.load_checkpoint(last, tf.CHECKPOINT_FORMAT, field="resume")  # data only
        checkpoint.load_state(model, blob.get("state_dict"), file=last, field="resume.state_dict")
        with checkpoint.reading(last, "resume"):  # a malformed training state is an InputError
            opt.load_state_dict(blob["optimizer"])
            for g, lr in zip(opt.param_groups, (args.lr, critic_lr)):  # a resumed run may change the learning rates
                g["lr"] = lr
            st = blob["extra"]["train_state"]
            global_step, update, best = int(st["global_step"]), int(st["update"]), float(st["best"])
            bc_done = bool(st.get("bc_done", False))
            rl_sel.update(st.get("rl_selected", {}))
            rng.bit_generator.state = st["rng"]
            torch.set_rng_state(blob["extra"]["torch_rng"])
            history = list(st["history"])
            if "critic_optimizer" in st:  # files before issue 42 did not keep it
                critic_opt.load_state_dict(st["critic_optimizer"])
            old = st.get("ledger", {})
            ledger = {"env_steps": int(old.get("env_steps", global_step)),
                      "cpu_seconds": float(old.get("cpu_seconds", 0.0)),
                      "resumptions": int(old.get("resumptions", 0)) + 1}
            venv_state = st.get("venv")
        # rows written after the checkpoint are recorded again by the resumed run: keep only the
        # checkpoint's history (issue 28: a resumed run duplicated metrics.csv rows)
        if (out / "metrics.csv").is_file():
            write_metrics(out / "metrics.csv", history)
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
            new = not path.exists()
            with open(path, "a", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=METRICS_KEYS, extrasaction="ignore")
                if new:
                    w.writeheader()
                w.writerow(row)
        if writer is not None:
            for k, v in row.items():
                if isinstance(v, (int, float)) and k not in ("update", "global_step") and v == v:
                    writer.add_scalar(k, v, row["global_step"])
            writer.flush()

    def draw_episode() -> list[int]:
        """The next training episode: [instance generator seed, env reset seed] from the run's RNG."""
        return [int(rng.integers(0, EVAL_SEED_BASE)), int(rng.integers(0, 2**31 - 1))]

    def start_episode(env, token):
        inst = generate("placement", args.preset, seed=int(token[0]), **args.gen_params)
        return env.reset(seed=int(token[1]), options={"instance": inst})[0]

    venv = None
    steps_in_process = [global_step]  # env steps already in the ledger when this process started

    if update == 0 and not history:
        row = {"update": 0, "global_step": 0, **evaluate(model, args, lay)}
        record(row)
        if log:
            log(f"update 0: held-out mean completion time {row['eval_mean_ct']:.3f} "
                f"({'--init weights' if args.init else 'random init'})")

    def evaluate_keep_best(row: dict[str, Any]) -> None:
        """Evaluate on the held-out seeds into ``row``; keep ``OUT/best.pt`` at the best so far."""
        nonlocal best
        row.update(evaluate(model, args, lay))
        if out is not None and row["eval_mean_ct"] < best:
            best = row["eval_mean_ct"]
            tf.save_checkpoint(out / "best.pt", model, lay, extra={"args": asdict(args), "eval": row})

    def save_last() -> None:
        """``OUT/last.pt``: the run's whole state (weights, both optimisers, the learner's RNGs,
        the vector env's episodes in flight, the step ledger, the history), written atomically."""
        if out is not None:
            st = {"global_step": global_step, "update": update, "best": best, "rng": rng.bit_generator.state,
                  "history": history, "bc_done": bc_done, "critic_optimizer": critic_opt.state_dict(),
                  "ledger": {**ledger, "env_steps": ledger["env_steps"] + global_step - steps_in_process[0],
                             "cpu_seconds": ledger["cpu_seconds"] + time.process_time() - cpu_at_start}}
            if venv is not None:
                st["venv"] = venv.state()
            st["rl_selected"] = {"update": rl_sel["update"], "val": rl_sel["val"]}
            tf.save_checkpoint(out / "last.pt", model, lay, optimizer=opt,
                               extra={"args": asdict(args), "train_state": st, "torch_rng": torch.get_rng_state()})

    supervised = (args.bc_instances > 0 and args.bc_epochs > 0) or (args.dagger_rounds > 0 and args.dagger_instances > 0)
    if supervised and not bc_done and update == 0:
        t_bc = time.perf_counter()
        data: dict[str, Any] = {}
        if args.bc_instances > 0:
            data = expert_dataset(args, lay, log=log)
            if log:
                log(f"expert: {data['instances']} instances ({data['repaired']} window-repaired, {data['skipped']} skipped), "
                    f"{len(data['slot'])} states, "
                    f"mean completion time {data['expert_mean_ct']:.3f}, {time.perf_counter() - t_bc:.0f} s")
        bc_opt = torch.optim.Adam(model.parameters(), lr=args.bc_lr or args.lr, eps=1e-5)
        val_best = float("inf")
        val_state: dict | None = None
        n_epochs = args.bc_epochs
        stage = {"round": 0, "epochs": args.bc_epochs}

        def select(row: dict[str, Any]) -> None:
            """Validation (model selection): the best weights on the validation seeds are kept."""
            nonlocal val_best, val_state
            v = validate(model, args, lay)
            row["val_mean_ct"] = v["eval_mean_ct"]
            if v["eval_mean_ct"] < val_best:
                val_best = v["eval_mean_ct"]
                val_state = {k: t.detach().clone() for k, t in model.state_dict().items()}

        if args.val_episodes > 0:
            row0 = {"update": 0, "global_step": 0, "bc_epoch": 0, "dagger_round": 0}
            select(row0)  # the initial weights (random, or --init) are a candidate too
            record(row0)
            if log:
                log(f"validation mean completion time {row0['val_mean_ct']:.3f} (initial weights)")

        def on_epoch(epoch: int, row: dict[str, float]) -> None:
            row = {"update": 0, "global_step": 0, "bc_epoch": epoch, "dagger_round": stage["round"],
                   "bc_states": len(data["slot"]), "expert_mean_ct": data["expert_mean_ct"], **row}
            at_eval = epoch == stage["epochs"] or (args.bc_eval_every and epoch % args.bc_eval_every == 0)
            if at_eval and args.val_episodes > 0:
                select(row)
            elif at_eval:
                evaluate_keep_best(row)
            record(row)
            if log:
                msg = (f"round {stage['round']} bc epoch {epoch}/{stage['epochs']} pointer {row['bc_pointer']:.3f} "
                       f"alloc {row['bc_alloc']:.3f} value {row['bc_value']:.3f} acc {row['bc_acc']:.3f}")
                if "val_mean_ct" in row:
                    msg += f" val_ct {row['val_mean_ct']:.3f} (best {val_best:.3f})"
                if "eval_mean_ct" in row:
                    msg += f" eval_ct {row['eval_mean_ct']:.3f} (expert on training instances {data['expert_mean_ct']:.3f})"
                log(msg)

        if data and n_epochs > 0:
            behaviour_cloning(model, bc_opt, data, args, rng, on_epoch=on_epoch)
        bc_data = data  # the warm start's expert states (empty without --bc-instances)
        rounds: list[dict[str, Any]] = []  # the last --dagger-window rounds' new states
        for r in range(args.dagger_rounds if args.dagger_instances > 0 else 0):
            if val_state is not None:  # the student is the best model so far on validation
                model.load_state_dict(val_state)
            t_r = time.perf_counter()
            new = dagger_dataset(model, args, lay, r, log=log)
            if log:
                named = (("repaired", "window-repaired"), ("improved", "improved"), ("exact", "exact"),
                         ("played", "played"))
                counts = "".join(f", {new[k]} {name}" for k, name in named if k in new)
                kept = f", kept episodes' mean {new['expert_mean_ct']:.3f}" if "expert_mean_ct" in new else ""
                log(f"dagger round {r + 1}: {new['instances']} student episodes "
                    f"(student mean {new['student_mean_ct']:.3f}{kept}), "
                    f"{new['cuts']} expert continuations ({new['skipped']} skipped{counts}), "
                    f"{len(new.get('slot', []))} states, {time.perf_counter() - t_r:.0f} s")
            if len(new.get("slot", [])) == 0:
                continue
            keys = [k for k in new if isinstance(new[k], np.ndarray)]
            if args.dagger_window:  # only the last rounds' states (the warm start's expert data stays)
                rounds.append({k: new[k] for k in keys})
                del rounds[:-args.dagger_window]
                parts = ([bc_data] if bc_data else []) + rounds
            else:  # DAgger's aggregate: this round's states appended (no second copy of the earlier ones)
                parts = ([data] if data else []) + [new]
            data = {k: np.concatenate([p[k] for p in parts]) for k in keys}
            data["expert_mean_ct"] = new.get("expert_mean_ct", bc_data["expert_mean_ct"] if bc_data else float("nan"))
            stage["round"], stage["epochs"] = r + 1, (args.dagger_epochs if args.dagger_epochs is not None
                                                       else args.bc_epochs)
            behaviour_cloning(model, bc_opt, data, args, rng, on_epoch=on_epoch, epochs=stage["epochs"])
        if val_state is not None:
            model.load_state_dict(val_state)  # the exported weights: the best on validation
            row = {"update": 0, "global_step": 0, "val_mean_ct": val_best, **evaluate(model, args, lay)}
            record(row)
            if log:
                log(f"selected on validation: val_ct {val_best:.3f}; held-out eval_ct {row['eval_mean_ct']:.3f}")
        bc_done = True
        del data
        save_last()
    # MAPPO model selection on the validation seeds (val_episodes > 0): the weights at the start of
    # MAPPO (update `rl_sel["update"]` = the warm start) are a candidate; OUT/rl_best.pt keeps the best
    def select_rl(row: dict[str, Any]) -> None:
        v = validate(model, args, lay)
        row["val_mean_ct"] = v["eval_mean_ct"]
        # during the critic warm-up the actor (hence the value) is unchanged: a tie keeps the newer critic
        if v["eval_mean_ct"] < rl_sel["val"] or (v["eval_mean_ct"] == rl_sel["val"] and update <= args.critic_warmup):
            rl_sel.update(update=update, val=v["eval_mean_ct"],
                          state={k: t.detach().clone() for k, t in model.state_dict().items()})
            if out is not None:
                tf.save_checkpoint(out / "rl_best.pt", model, lay, extra={"update": update, "val": v["eval_mean_ct"]})

    if args.val_episodes > 0 and args.steps > global_step and rl_sel["update"] < 0:
        row = {"update": update, "global_step": global_step}
        select_rl(row)
        record(row)
        if log:
            log(f"MAPPO start (update {update}): validation mean completion time {row['val_mean_ct']:.3f}")
    venv = PlacementVectorEnv(envs, draw=draw_episode, start=start_episode)
    if venv_state is not None:  # the episodes in flight when the run stopped, replayed
        with checkpoint.reading(out / "last.pt", "resume.venv"):
            obs = venv.restore(venv_state)
    else:
        obs = venv.reset()
    t_start = time.perf_counter()
    steps_at_start = global_step
    N, E = lay.n, args.num_envs
    while global_step < args.steps:
        model.eval()
        buf: dict[str, list] = {k: [] for k in ("obs", "ids", "masks", "slot_ok", "alloc_ok", "void_ok", "slot", "alloc",
                                                 "m", "active", "logp", "value", "reward", "done")
                                + (("cells",) if generic else ())}
        ep_cts: list[float] = []
        ep_rets: list[float] = []
        for _ in range(args.rollout_steps):
            actions, rec = tf.act_batch(model, envs, obs, lay, rng, greedy=False)  # one forward pass for all envs
            obs, rewards, dones, finished = venv.step(actions)
            for _e, ret_e, tasks in finished:
                ep_cts.append(-ret_e / tasks)
                ep_rets.append(ret_e)
            if args.team_reward:  # every agent gets the team's reward (minus all tasks in the system)
                rewards = np.repeat(rewards.sum(1, keepdims=True), N, 1)
            for k in buf.keys() & rec.keys():
                buf[k].append(rec[k])
            buf["reward"].append(rewards * args.reward_scale)
            buf["done"].append(dones)
            global_step += E
        cells = np.concatenate(buf.pop("cells")) if generic else None  # compact: the winners' allowed cells
        batch = {k: np.stack(v) for k, v in buf.items()}  # (T, E, ...)
        _, rec = tf.act_batch(model, envs, obs, lay, np.random.default_rng(0), greedy=True)
        T = args.rollout_steps
        adv_t, ret_t = ppo.gae(batch["reward"], batch["value"], rec["value"], 1.0 - batch["done"], gamma,
                               args.gae_lambda)
        batch = {k: v.reshape(T * E, *v.shape[2:]) for k, v in batch.items()}
        if generic:
            batch["cells"] = cells
        adv, ret = adv_t.reshape(T * E, N), ret_t.reshape(T * E, N)
        active = torch.as_tensor(batch["active"].astype(bool), device=device)
        old_logp = torch.as_tensor(batch["logp"], dtype=torch.float32, device=device)
        adv, ret = adv.to(device), ret.to(device)
        warm = update < args.critic_warmup  # critic warm-up: the actor is frozen, only the critic learns
        if args.anneal_steps:
            set_rates(opt, critic_opt, args.lr, critic_lr, lr_factor(global_step - T * E, args.anneal_steps))
        model.train()

        def loss_fn(idx):
            act_mb = active[idx]
            if not act_mb.any() and not warm:
                return None
            logp, ent, values = _logp_entropy(model, batch, idx, critic_grad=not args.critic_detach,
                                                  entropy_norm=args.entropy_norm)
            if warm:  # only the critic's layers step (critic_opt), clipped on their own gradient norm
                vl = 0.5 * ((values - ret[idx]) ** 2).mean()
                return vl, {"value_loss": vl.item()}
            return ppo.ppo_loss(logp, old_logp[idx], adv[idx], values, ret[idx], ent, clip=args.clip,
                                vf_coef=args.vf_coef, ent_coef=args.ent_coef, mask=act_mb)

        stats = ppo.ppo_update(critic_opt if warm else opt,
                               list(model.critic.parameters() if warm else model.parameters()), T * E, epochs=args.epochs,
                               minibatch=args.minibatch, permute=rng.permutation, loss_fn=loss_fn,
                               max_grad_norm=args.max_grad_norm, target_kl=None if warm else args.target_kl)
        update += 1
        sps = (global_step - steps_at_start) / max(time.perf_counter() - t_start, 1e-9)
        row: dict[str, Any] = {"update": update, "global_step": global_step, "sps": sps, "episodes": len(ep_cts),
                               "train_mean_ct": float(np.mean(ep_cts)) if ep_cts else float("nan"),
                               "train_return": float(np.mean(ep_rets)) if ep_rets else float("nan"),
                               "critic_warmup": int(warm),
                               **{k: stats.get(k, float("nan")) for k in ("policy_loss", "value_loss", "entropy",
                                                                          "approx_kl", "clipfrac", "epochs")}}
        last_update = global_step >= args.steps
        if (args.eval_every and update % args.eval_every == 0) or last_update:
            if args.val_episodes > 0:
                select_rl(row)
            else:
                evaluate_keep_best(row)
        record(row)
        if log:
            msg = (f"update {update} step {global_step}/{args.steps} sps {sps:.0f} "
                   f"train_ct {row['train_mean_ct']:.3f} pl {row['policy_loss']:.3f} vl {row['value_loss']:.3f} "
                   f"ent {row['entropy']:.3f}")
            if "eval_mean_ct" in row:
                msg += f" eval_ct {row['eval_mean_ct']:.3f} done {row['eval_done']:.2f}"
            log(msg)
        save_last()
    if args.val_episodes > 0 and args.steps > 0 and rl_sel["update"] >= 0:
        if rl_sel["state"] is None:  # resumed: the best weights are in the file
            rl_sel["state"] = tf.load_checkpoint(out / "rl_best.pt")[0].state_dict()
        model.load_state_dict(rl_sel["state"])
        sel_step = next((h["global_step"] for h in history if h.get("update") == rl_sel["update"]
                         and "global_step" in h), 0)
        row = {"update": update, "global_step": global_step, "val_mean_ct": rl_sel["val"],
               "selected_update": rl_sel["update"], "selected_step": sel_step, **evaluate(model, args, lay)}
        record(row)
        if log:
            log(f"MAPPO selected on validation: update {rl_sel['update']} val_ct {rl_sel['val']:.3f}; "
                f"held-out eval_ct {row['eval_mean_ct']:.3f}")
    if writer is not None:
        writer.close()
    final = next((h for h in reversed(history) if "eval_mean_ct" in h), {})
    ledger = {**ledger, "env_steps": ledger["env_steps"] + global_step - steps_in_process[0],
              "cpu_seconds": ledger["cpu_seconds"] + time.process_time() - cpu_at_start}
    # the model comes back on the CPU, as checkpoints are saved: callers never see the training device
    return {"model": model.cpu(), "layout": lay, "history": history, "final": final, "ledger": ledger}


# ---- behaviour cloning from the exact model (a documented deviation from the paper) ----------


#: the experts of the warm start (``TrainArgs.expert``) and their parameters (one thread; the
#: LNS without its re-allocating "grow" step, so that every task has one start and allocation).
#: "placement-lns-online" is the non-clairvoyant one (the LNS re-planning at every arrival on the
#: tasks known by then): its choice at a state never depends on a task that has not arrived
#: the warm start's experts: name -> (solver, its parameters). "online-list" is the list-scheduling
#: completion planned at every arrival step and played by the agents' rules (placement-lns-window
#: with no LNS neighbourhood), "online-played" the same with an improved LNS plan kept when its play
#: by the rules is better (played=true): online experts whose every schedule the env replays exactly
EXPERTS: dict[str, tuple[str, dict[str, Any]]] = {
    "placement-milp": ("placement-milp", {"threads": 1}), "placement-lns": ("placement-lns", {"grow": False}),
    "placement-lns-online": ("placement-lns-online", {}), "online-list": ("placement-lns-window", {"iterations": 0}),
    "online-played": ("placement-lns-window", {"played": True}), "list-window": ("placement-list-window", {})}


def expert_schedule(instance, *, time_limit: float = 5.0, seed: int = 0,
                    expert: str = "placement-milp") -> dict[str, Any]:
    """The expert's schedule of an instance (:data:`EXPERTS`: the fixed-allocation MILP or the
    LNS, one thread): {"status", "objective" (the referee's total completion time), "tasks":
    [(cluster, start, cpu, gpu)]}; no tasks when the expert found none or its schedule
    re-allocates (a history the env cannot replay as one start per task)."""
    from edgebench import registry
    from edgebench.referee import evaluate_decisions

    if expert not in EXPERTS:
        raise tf.InputError(f"unknown expert {expert!r} (one of {sorted(EXPERTS)})", field="expert")
    solver, params = EXPERTS[expert]
    res = registry.solve(instance, solver, time_limit=time_limit, seed=seed, **params)
    sol = res.solution
    if sol.decisions is None or any(getattr(d, "history", None) for d in sol.decisions.tasks):
        return {"status": sol.status, "objective": None, "tasks": None}
    ev = evaluate_decisions(instance, sol.decisions)  # the referee's value, never the solver's own
    if not ev.feasible:
        return {"status": "infeasible", "objective": None, "tasks": None}
    tasks = [(d.cluster, d.start, d.cpu, d.gpu) for d in sol.decisions.tasks]
    return {"status": sol.status, "objective": float(ev.objectives["total_completion_time"]), "tasks": tasks}


def replay_expert(env, lay: tf.EnvLayout, instance, tasks: list, *, seed: int = 0,
                  void_rule: str = "system", record_from: int = 0, cell_features: str = "v1",
                  repair: bool = False, stop_at: int | None = None) -> dict[str, Any]:
    """Replay a fixed-allocation schedule ``tasks`` [(cluster, start, cpu, gpu)] through the env
    (reset on ``instance``). At every logical step each cluster starts its next expert task whose
    start is now (shortest run first; the multi variant starts several per real step over logical
    steps) or sends the void action. Returns the visited states with the expert's labels as
    arrays (leading axis = state): obs, ids, masks, void_ok, slot (P = void), alloc (flat grid
    index), m, active, reward (per agent), plus "objectives" (the referee's, None if the replay
    did not finish), "ok" (every expert action was allowed by the env mask and started as
    planned), and what the MAPPO rollout records of a decision (:func:`tapfinger.decision_records`,
    the same builder): slot_ok, alloc_ok and, with a generic layout, "cells" (compact, (K, F):
    the expert's starts' allowed cells, in (state, agent) order; the model's ``cell_features``
    set). Only states at steps >=
    ``record_from`` are returned (DAgger: the schedule's tasks before it are the student's).

    ``repair``: the agent sees only the first ``pending_size`` pending tasks of its cluster (in
    arrival order), and the expert often starts a later arrival (on hetero-6 single, 85 of 150 LNS
    schedules). Repaired, each cluster starts, among its expert tasks due by now (planned start <=
    now, in planned order), the first the env allows now (in the window, its allocation free); the
    others wait. The states and labels are those of the repaired schedule, the one actually played,
    and "objectives" is its referee value (the caller compares it with the expert's).

    ``stop_at`` (DAgger's myopic expert): the replay stops at the first state whose step is >=
    ``stop_at`` (neither recorded nor played; the env is left in it) and "objectives" is None;
    None (the default): to the episode's end."""
    obs, _ = env.reset(seed=seed, options={"instance": instance})
    sim = env.sim
    P, G1 = lay.pending_size, lay.max_gpu + 1
    by_cluster: dict[int, list[int]] = {}
    for j, (n, s, c, g) in enumerate(tasks):
        by_cluster.setdefault(int(n), []).append(j)
    dur = {j: sim.run_steps(j, tasks[j][2], tasks[j][3]) or 0 for j in range(len(tasks))}
    generic = lay.inputs == "generic"
    recs: dict[str, list] = {k: [] for k in ("obs", "ids", "masks", "void_ok", "slot", "alloc", "m", "active",
                                             "slot_ok", "alloc_ok", "reward") + (("cells",) if generic else ())}
    ok = True
    info: dict = {}
    while env.agents:
        if stop_at is not None and sim.t >= stop_at:
            info = {}
            break
        o = np.stack([obs[a]["observation"] for a in env.possible_agents])
        ids = tf.pending_ids(env, lay)
        masks = tf.masks_from_obs(env, obs, lay)
        slot = np.full(lay.n, P, dtype=np.int64)
        alloc = np.zeros(lay.n, dtype=np.int64)
        actions = {}
        planned = {}
        for n, a in enumerate(env.possible_agents):
            actions[a] = env.void_action(a)
            if repair:
                pick = _repaired_start(env, a, obs[a]["action_mask"], list(ids[n]), by_cluster.get(n, []), tasks, dur)
                if pick is not None:
                    j, s = pick
                    slot[n], alloc[n] = s, tasks[j][2] * G1 + tasks[j][3]
                    actions[a] = env.encode_action(a, s, tasks[j][2], tasks[j][3])
                    planned[a] = j
                continue
            due = [j for j in by_cluster.get(n, []) if tasks[j][1] == sim.t and not sim.is_started(j)]
            due.sort(key=lambda j: (dur[j], j))
            if not due:
                continue
            j = due[0]
            pend = list(ids[n])
            if j not in pend:
                ok = False  # outside the pending window: the env cannot start it now
                continue
            s, c, g = pend.index(j), tasks[j][2], tasks[j][3]
            act = env.encode_action(a, s, c, g)
            if not obs[a]["action_mask"][act]:
                ok = False
                continue
            slot[n], alloc[n] = s, c * G1 + g
            actions[a] = act
            planned[a] = j
        keep = sim.t >= record_from
        if keep:
            recs["obs"].append(o)
            recs["ids"].append(ids)
            recs["masks"].append(masks)
            recs["void_ok"].append(tf.void_allowed(env, lay, void_rule))
            recs["slot"].append(slot)
            recs["alloc"].append(alloc)
            m = (slot < P).astype(np.int64)
            recs["m"].append(m)
            recs["active"].append(masks.reshape(lay.n, -1).any(-1))
            # what the MAPPO rollout records of a decision (the same builder, one env, before the step)
            chosen = tf.decision_records([env], ids[None], masks[None], slot[None], m[None], lay, generic=generic,
                                         cell_features=cell_features)
            for k, v in chosen.items():
                recs[k].append(v if k == "cells" else v[0])
        obs, rew, _, _, infos = env.step(actions)
        if keep:
            recs["reward"].append(np.array([rew.get(a, 0.0) for a in env.possible_agents]))
        info = next(iter(infos.values()))
        for a, j in planned.items():
            if infos[a].get("started") != j:
                ok = False
    cells = recs.pop("cells", None)
    out = {k: np.stack(v) if v else np.zeros((0,)) for k, v in recs.items()}
    if cells is not None:  # compact: the winners' allowed cells, in (state, agent) order
        out["cells"] = np.concatenate(cells)
    out["objectives"] = info.get("objectives")
    out["ok"] = ok
    return out


def _repaired_start(env, agent, mask, pend: list, mine: list, tasks: list, dur: dict) -> tuple[int, int] | None:
    """The window repair's start of one cluster now (:func:`replay_expert`): among its expert tasks
    ``mine`` not yet started whose planned start has come, in planned order (start, run time,
    index), the first in the pending window ``pend`` whose action the mask allows; (task, slot)
    or None (void)."""
    sim = env.sim
    due = sorted((j for j in mine if tasks[j][1] <= sim.t and not sim.is_started(j)),
                 key=lambda j: (tasks[j][1], dur[j], j))
    for j in due:
        if j in pend:
            s = pend.index(j)
            if mask[env.encode_action(agent, s, tasks[j][2], tasks[j][3])]:
                return j, s
    return None


def replay_labels(env, lay: tf.EnvLayout, instance, tasks: list, objective: float, args: TrainArgs, *,
                  record_from: int = 0, repair: bool = True) -> tuple[dict[str, Any], float, bool] | None:
    """The expert's labels of a fixed-allocation schedule ``tasks`` whose referee value is
    ``objective``: its exact replay (:func:`replay_expert`) when every action was allowed, the
    env's objective equals ``objective`` and some state is recorded; else, with ``repair`` and
    ``args.bc_window_repair`` > 0, its window-repaired replay when that holds and its objective is
    within the tolerance. Returns (replay, the played schedule's value, repaired) or None."""
    kw = dict(void_rule=args.model.void_rule, record_from=record_from, cell_features=args.model.cell_features)
    rep = replay_expert(env, lay, instance, tasks, **kw)
    obj = rep["objectives"]
    if rep["ok"] and obj is not None and len(rep["slot"]) and float(obj["total_completion_time"]) == objective:
        return rep, objective, False
    if not repair or args.bc_window_repair <= 0:
        return None
    rep = replay_expert(env, lay, instance, tasks, repair=True, **kw)
    obj = rep["objectives"]
    if (not rep["ok"] or obj is None or not len(rep["slot"])
            or float(obj["total_completion_time"]) > objective * (1 + args.bc_window_repair)):
        return None
    return rep, float(obj["total_completion_time"]), True


def _returns(r: np.ndarray, gamma: float) -> np.ndarray:
    """Per-agent discounted returns-to-go of a (steps, agents) reward array."""
    ret = np.zeros_like(r)
    acc = np.zeros(r.shape[1])
    for t in reversed(range(len(r))):
        acc = r[t] + gamma * acc
        ret[t] = acc
    return ret


def expert_seeds(args: TrainArgs) -> list[int]:
    """Training-instance seeds of the expert data set: drawn in [0, 10**9) (never a held-out
    seed 10**9 + k) from an RNG of its own, so that adding instances keeps the earlier ones."""
    rng = np.random.default_rng([args.seed, 20_061])
    return [int(s) for s in rng.integers(0, EVAL_SEED_BASE, size=args.bc_instances)]


def _cache_key(args: TrainArgs, seed: int) -> str:
    import hashlib

    spec = {"preset": args.preset, "variant": args.variant, "params": args.gen_params, "seed": seed,
            "time_limit": args.bc_time_limit}
    if args.expert != "placement-milp":  # the MILP's cache keys stay those of the shipped files
        spec["expert"] = args.expert
    spec = json.dumps(spec, sort_keys=True, default=str)
    return hashlib.sha256(spec.encode()).hexdigest()[:20]


def expert_dataset(args: TrainArgs, lay: tf.EnvLayout, *, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Solve ``args.bc_instances`` training instances with the expert (cached as JSON under
    ``args.bc_cache``), replay each schedule through the env and return the stacked states and
    expert labels (see :func:`replay_expert`) plus "ret" (per-agent discounted returns of the
    expert, reward-scaled) and "expert_mean_ct" (mean over instances). Instances whose replay
    does not reproduce the exact objective are left out (counted in "skipped")."""
    from edgebench.instances.generators import generate

    cache = Path(args.bc_cache) if args.bc_cache else None
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
    env = tf.make_env(preset=args.preset, params=args.gen_params, variant=args.variant, lay=lay)
    gamma = args.resolved_gamma()
    parts: list[dict[str, Any]] = []
    cts: list[float] = []
    skipped = repaired = 0
    t0 = time.perf_counter()
    for i, seed in enumerate(expert_seeds(args)):
        inst = generate("placement", args.preset, seed=seed, variant=args.variant, **args.gen_params)
        path = cache / f"{_cache_key(args, seed)}.json" if cache is not None else None
        if path is not None and path.is_file():
            sol = json.loads(path.read_text())
        else:
            sol = expert_schedule(inst, time_limit=args.bc_time_limit, expert=args.expert)
            if path is not None:
                tmp = path.with_name(path.name + ".tmp")
                tmp.write_text(json.dumps(sol))
                tmp.replace(path)
        if sol["tasks"] is None:
            skipped += 1
            continue
        tasks = [tuple(t) for t in sol["tasks"]]
        got = replay_labels(env, lay, inst, tasks, sol["objective"], args)
        if got is None:
            skipped += 1
            continue
        rep, value, was_repaired = got
        repaired += was_repaired
        rep["ret"] = _returns(rep.pop("reward") * args.reward_scale, gamma)
        del rep["objectives"], rep["ok"]
        parts.append(rep)
        cts.append(value / env.sim.num_tasks)
        if log and (i + 1) % 50 == 0:
            log(f"expert: {i + 1}/{args.bc_instances} instances, {time.perf_counter() - t0:.0f} s")
    data = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}
    data["expert_mean_ct"] = float(np.mean(cts)) if cts else float("nan")
    data["skipped"] = skipped
    data["repaired"] = repaired
    data["instances"] = len(parts)
    return data


def behaviour_cloning(model, opt, data: dict[str, Any], args: TrainArgs, rng: np.random.Generator, *,
                      on_epoch: Callable[[int, dict[str, float]], None] | None = None,
                      epochs: int | None = None) -> list[dict[str, float]]:
    """Supervised warm start on the expert's states: cross-entropy of the pointer on the
    expert's slot (void included; labels the void rule forbids are left out), of the allocation
    head on the expert's (cpu, gpu) (for the agents that start a task), and the value head
    regressed on the expert's returns. The stored masks are applied as in the policy. Generic
    inputs: the forward of the MAPPO update (packed when ``tapfinger.PACKED``) and its
    allocation head on the expert's starts only, from the recorded compact cells
    (:func:`_winner_alloc_logits`; ``sparse_alloc`` honoured); one-hot: unchanged, bit for bit."""
    import torch

    S = len(data["slot"])
    generic = model.cfg.inputs == "generic"
    rows = []
    for epoch in range(args.bc_epochs if epochs is None else epochs):
        model.train()
        perm = rng.permutation(S)
        tot = {"bc_pointer": 0.0, "bc_alloc": 0.0, "bc_value": 0.0, "bc_acc": 0.0}
        nb = 0
        for s in range(0, S, args.minibatch):
            idx = perm[s:s + args.minibatch]
            dev = model.void.device
            masks = torch.as_tensor(data["masks"][idx], device=dev)
            fast = {"packed": True, "slot_ok": data["slot_ok"][idx]} if generic and tf.PACKED else {}
            logits, z, clus, values = model(data["obs"][idx], data["ids"][idx], masks, data["void_ok"][idx], **fast)
            slot = torch.as_tensor(data["slot"][idx], device=dev)
            lsm = torch.log_softmax(logits, -1)
            lp = lsm.gather(-1, slot.unsqueeze(-1)).squeeze(-1)
            allowed = logits.gather(-1, slot.unsqueeze(-1)).squeeze(-1) > tf.NEG / 2
            use = torch.as_tensor(data["active"][idx], device=dev) & allowed
            pl = -lp[use].mean() if use.any() else torch.zeros((), device=dev)
            m = torch.as_tensor(data["m"][idx], device=dev).bool() & allowed
            if generic:  # the expert's starts only (m = 1), from their compact cells
                la = z.new_zeros(slot.numel())
                if data["m"][idx].any():
                    wt, a_logits, chosen = _winner_alloc_logits(model, data, idx, z, clus)
                    lw = torch.log_softmax(a_logits, -1).gather(-1, chosen.unsqueeze(-1)).squeeze(-1)
                    la = la.index_put((wt,), lw)
                la = la.view(slot.shape)
            else:
                al = model.alloc_logits(z, clus, slot, masks)
                la = torch.log_softmax(al, -1).gather(-1, torch.as_tensor(data["alloc"][idx], device=dev).unsqueeze(-1)).squeeze(-1)
            alo = -la[m].mean() if m.any() else torch.zeros((), device=dev)
            vl = 0.5 * ((values - torch.as_tensor(data["ret"][idx], dtype=torch.float32, device=dev)) ** 2).mean()
            loss = pl + alo + (args.vf_coef if args.bc_value_coef is None else args.bc_value_coef) * vl
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            opt.step()
            with torch.no_grad():
                acc = (logits.argmax(-1) == slot)[use].float().mean().item() if use.any() else float("nan")
            tot["bc_pointer"] += pl.item()
            tot["bc_alloc"] += alo.item()
            tot["bc_value"] += vl.item()
            tot["bc_acc"] += acc
            nb += 1
        row = {k: v / max(nb, 1) for k, v in tot.items()}
        rows.append(row)
        if on_epoch is not None:
            on_epoch(epoch + 1, row)
    return rows


# ---- DAgger: the expert's continuation from the states the student visits ---------------------

#: the experts of DAgger's continuations (``TrainArgs.dagger_expert``); "online-list" is the myopic
#: expert with no LNS neighbourhood: the list-scheduling completion of the tasks known at t (the plans
#: of ``--expert online-list``, from the student's state); "self-best" is the student's own sampling
#: decode (expert iteration: the best of its greedy and sampled episodes, :func:`self_best_dataset`)
DAGGER_EXPERTS = ("placement-milp", "placement-lns", "placement-lns-myopic", "online-list", "self-best")
#: the myopic expert's labels (``TrainArgs.dagger_myopic_labels``, :func:`myopic_window`)
MYOPIC_LABELS = ("plan", "played")


def expert_from_state(instance, started: dict[int, tuple[int, int, int, int]], t: int, *,
                      time_limit: float = 5.0) -> dict[str, Any]:
    """The exact fixed-allocation model's continuation from a state: the tasks in ``started``
    ({task: (cluster, start, cpu, gpu)}, all with start < ``t``) keep their cluster, start and
    allocation (constants of ``formulations.placement.build_model(..., fixed=...)``), every
    other task starts at step ``t`` or later (its arrival is moved to max(arrival, t), which
    shifts the objective by a constant only). The full time-indexed model (no windows, horizon
    from the proof of ``finish_bounds`` with the list-scheduling completion as the upper
    bound) is solved by HiGHS (one thread) from that completion. Returns {"status" ("optimal",
    "feasible" or "heuristic": the list-scheduling completion), "objective" (total completion
    time of the whole schedule, original arrivals), "tasks": [(cluster, start, cpu, gpu)]}."""
    import dataclasses

    from edgebench.formulations import placement as pm

    payload = instance.placement
    data = pm.prepare(payload)
    J = data.num_tasks
    fixed: list = [None] * J
    for j, (n, s, c, g) in started.items():
        if s >= t:
            raise ValueError(f"task {j} starts at {s}, not before the state's step {t}")
        fixed[j] = (started_option(payload, data, j, n, c, g), int(s))
    # a started task's allocation need not be one of the dominant options: listed for the checks
    options = [list(o) if fixed[j] is None or fixed[j][0] in o else list(o) + [fixed[j][0]]
               for j, o in enumerate(data.options)]
    shifted = dataclasses.replace(data, options=options,
                                  arrivals=[a if fixed[j] is not None else max(a, t) for j, a in enumerate(data.arrivals)])
    sched = pm.repair_schedule(shifted, fixed)
    status = "heuristic"
    if any(f is None for f in fixed):
        ub = pm.schedule_objective(shifted, sched)
        finish_by = pm.finish_bounds(shifted, ub)
        bm = pm.build_model(shifted, finish_by, None, fixed=fixed, late=False, name="placement-dagger")
        sol = pm.solve_model(bm, pm.HIGHSPY, time_limit=time_limit, threads=1, hint=sched)
        if sol.values is not None:
            part = pm.decode_partial(bm, sol.values)
            full = [fixed[j] if fixed[j] is not None else part[j] for j in range(J)]
            if all(x is not None for x in full) and not pm.schedule_violations(shifted, full) and \
                    pm.schedule_objective(shifted, full) <= pm.schedule_objective(shifted, sched):
                sched = full
                status = "optimal" if sol.status == "optimal" else "feasible"
    else:
        status = "optimal"
    tasks = [(o.cluster, s, o.cpu, o.gpu) for o, s in sched]
    orig = dataclasses.replace(shifted, arrivals=data.arrivals)
    return {"status": status, "objective": float(pm.schedule_objective(orig, sched)), "tasks": tasks}


def lns_from_state(instance, tasks: list, t: int, *, time_limit: float | None = 5.0, seed: int = 0,
                   iterations: int | None = None) -> dict[str, Any]:
    """The LNS's continuation from a state (``dagger_expert`` placement-lns): ``tasks`` is the
    student's complete fixed-allocation schedule of the episode [(cluster, start, cpu, gpu)]; the
    tasks it started before step ``t`` (the prefix) keep their cluster, start and allocation and
    no other task starts before ``t``. The search (:func:`placement.search.lns.improve` with
    ``frozen`` = the prefix, ``not_before`` = t; one thread, seeded, ``time_limit`` seconds or
    ``iterations`` neighbourhoods, no re-allocating moves) starts from the better of the student's
    schedule and the list-scheduling completion of the prefix (:func:`placement.repair_schedule`;
    the student's on a tie). The better, by the referee (:func:`edgebench.referee.evaluate_decisions`),
    of the search's result and the student's schedule is returned: {"status" ("improved" or
    "student"), "objective" (the referee's total completion time), "tasks", "student_objective"
    (the referee's, of the student's schedule), "start" ("student" or "list"), "neighbourhoods"}.
    A student schedule that is not a feasible fixed-allocation schedule is a ValueError."""
    import dataclasses

    from edgebench.formulations import placement as pm
    from edgebench.formulations.placement.search import lns
    from edgebench.referee import evaluate_decisions

    payload = instance.placement
    data = pm.prepare(payload)
    J = data.num_tasks
    if len(tasks) != J:
        raise ValueError(f"{len(tasks)} tasks in the student's schedule, the instance has {J}")
    student = [(started_option(payload, data, j, n, c, g), int(s)) for j, (n, s, c, g) in enumerate(tasks)]
    # the student's allocations need not be dominant options: listed for the checks and the hint
    data = dataclasses.replace(data, options=[o if student[j][0] in o else o + [student[j][0]]
                                              for j, o in enumerate(data.options)])
    if bad := pm.schedule_violations(data, student):
        raise ValueError(f"the student's schedule is not feasible: {bad[0]}")
    prefix = {j for j in range(J) if student[j][1] < t}
    start, source = continuation_start(data, [student[j] if j in prefix else None for j in range(J)], t, student)
    deadline = None if time_limit is None else time.perf_counter() + float(time_limit)
    sched, info = lns.improve(data, start, seed=seed, deadline=deadline, iterations=iterations,
                              types=[x.type for x in payload.tasks], frozen=prefix, not_before=t)

    def referee(sch) -> float | None:
        ev = evaluate_decisions(instance, pm.to_decisions(sch))
        return float(ev.objectives["total_completion_time"]) if ev.feasible else None

    own = referee(student)
    if own is None:
        raise ValueError("the referee rejects the student's schedule")
    val = referee(sched)
    out = {"status": "student", "objective": own, "tasks": [tuple(x) for x in tasks], "student_objective": own,
           "start": source, "neighbourhoods": info["neighbourhoods"]}
    if val is not None and val < own:
        out.update(status="improved", objective=val, tasks=[(o.cluster, s, o.cpu, o.gpu) for o, s in sched])
    return out


def student_states(env) -> dict[int, tuple[int, int, int, int]]:
    """The tasks started so far in an env's episode: {task: (cluster, start, cpu, gpu)}."""
    sim = env.sim
    return {j: (int(sim.cluster_of(j)), int(sim.start_step(j)), *map(int, sim.allocation(j)))
            for j in range(sim.num_tasks) if sim.is_started(j)}


def dagger_dataset(model, args: TrainArgs, lay: tf.EnvLayout, round_: int, *,
                   log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """One DAgger round: the (greedy) student plays ``args.dagger_instances`` new training
    instances (seeds in [0, 10**9) from ``default_rng([seed, 20062, round])``); in each episode
    ``args.dagger_cuts`` of the steps at which it started a task (after its first) are drawn,
    and from each such step t the expert's continuation is solved (the student's tasks started
    before t fixed; cached as JSON under ``bc_cache``/dagger) and replayed through the env; the
    states from step t on, with the expert's labels, are returned (the arrays of
    :func:`expert_dataset`) plus "instances", "cuts", "skipped" (continuations whose replay did
    not reproduce the expert's objective or whose solve only found the list-scheduling
    completion), "student_mean_ct".

    ``args.dagger_expert``: "placement-milp" (:func:`expert_from_state`, the exact model) or
    "placement-lns" (:func:`lns_from_state`: the LNS improving the student's own continuation,
    ``bc_time_limit`` seconds; its cache key also holds the expert and the student's whole
    schedule, so the two never collide). With the LNS, a continuation the exact replay does not
    reproduce is replayed with the window repair when ``bc_window_repair`` > 0 and kept within
    that tolerance of the LNS's value, as :func:`expert_dataset` does (counted in "repaired"), and
    "improved" counts the kept continuations the LNS made better than the student's (the others
    label the student's own actions from t on); an episode that did not start every task
    (timed out) has no schedule to improve: its cuts are skipped.

    "placement-lns-myopic" (:func:`placement.search.online.myopic_from_state`): the LNS plans on the
    tasks known at t only (arrival <= t), and its plan is imitated on the states in [t, next
    arrival) only (:func:`myopic_window`; skipped when those starts are not played as planned;
    window repair with ``bc_window_repair`` > 0, kept only when its starts equal the plan's; with
    ``dagger_myopic_labels`` "played" the window-repaired replay is kept whenever the env played
    every start the repair chose). Own cache keys (the expert's name; the same plans for both
    labels), counts "repaired", "improved" (better than the LNS's start), "exact" (kept windows
    whose starts equal the plan's) and "played" (kept windows whose starts differ: "played" labels
    only). The value targets ("ret") of these states are the window's returns only (truncated)."""
    import hashlib

    from edgebench.instances.generators import generate

    if args.dagger_expert not in DAGGER_EXPERTS:
        raise tf.InputError(f"unknown DAgger expert {args.dagger_expert!r} (one of {list(DAGGER_EXPERTS)})",
                            field="dagger_expert")
    if args.dagger_myopic_labels not in MYOPIC_LABELS:
        raise tf.InputError(f"unknown myopic labels {args.dagger_myopic_labels!r} (one of {list(MYOPIC_LABELS)})",
                            field="dagger_myopic_labels")
    if args.dagger_expert == "self-best":
        return self_best_dataset(model, args, lay, round_, log=log)
    lns = args.dagger_expert == "placement-lns"
    myopic = args.dagger_expert in ("placement-lns-myopic", "online-list")
    rng = np.random.default_rng([args.seed, 20_062, round_])
    seeds = [int(x) for x in rng.integers(0, EVAL_SEED_BASE, size=args.dagger_instances)]
    cache = Path(args.bc_cache) / "dagger" if args.bc_cache else None
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
    env = tf.make_env(preset=args.preset, params=args.gen_params, variant=args.variant, lay=lay)
    gamma = args.resolved_gamma()
    parts: list[dict[str, Any]] = []
    student: list[float] = []
    cuts = skipped = repaired = improved = exact = played = 0
    for i, seed in enumerate(seeds):
        inst = generate("placement", args.preset, seed=seed, variant=args.variant, **args.gen_params)
        ep = tf.run_episode(model, env, lay, seed=0, greedy=True, instance=inst)
        student.append(ep["mean_ct"])
        started = student_states(env)
        times = sorted({v[1] for v in started.values()})[1:]
        if not times:
            continue
        chosen = sorted(int(x) for x in rng.choice(times, size=min(args.dagger_cuts, len(times)), replace=False))
        for t in chosen:
            prefix = {j: v for j, v in started.items() if v[1] < t}
            key = {"preset": args.preset, "variant": args.variant, "params": args.gen_params, "seed": seed,
                   "t": t, "prefix": sorted(prefix.items()), "time_limit": args.bc_time_limit}
            if lns or myopic:  # the MILP's keys stay those of the earlier caches
                key.update(expert=args.dagger_expert, student=sorted(started.items()))
            spec = json.dumps(key, sort_keys=True, default=str)
            path = cache / f"{hashlib.sha256(spec.encode()).hexdigest()[:20]}.json" if cache is not None else None
            if lns and len(started) < env.sim.num_tasks:  # the episode ran out: no student schedule to improve
                cuts += 1
                skipped += 1
                continue
            if path is not None and path.is_file():
                sol = json.loads(path.read_text())
            else:
                if myopic:
                    plans = {"iterations": 0} if args.dagger_expert == "online-list" else {}  # list plans only
                    sol = myopic_from_state(inst, started, t, time_limit=args.bc_time_limit, **plans)
                elif lns:
                    sol = lns_from_state(inst, [started[j] for j in range(len(started))], t,
                                         time_limit=args.bc_time_limit)
                else:
                    sol = expert_from_state(inst, prefix, t, time_limit=args.bc_time_limit)
                if path is not None:
                    tmp = path.with_name(path.name + ".tmp")
                    tmp.write_text(json.dumps(sol))
                    tmp.replace(path)
            cuts += 1
            if sol["status"] == "heuristic":
                skipped += 1
                continue
            tasks = [tuple(x) for x in sol["tasks"]]
            if myopic:
                rep = myopic_window(env, lay, inst, tasks, t, void_rule=args.model.void_rule,
                                    cell_features=args.model.cell_features, repair=args.bc_window_repair > 0,
                                    labels=args.dagger_myopic_labels)
                if rep is None:
                    skipped += 1
                    continue
                repaired += rep.pop("repaired")
                same = rep.pop("exact")
                exact += same
                played += 1 - same
                improved += sol["status"] == "improved"
                rep["ret"] = _returns(rep.pop("reward") * args.reward_scale, gamma)
                del rep["objectives"], rep["ok"]
                parts.append(rep)
                continue
            got = replay_labels(env, lay, inst, tasks, sol["objective"], args, record_from=t, repair=lns)
            if got is None:
                skipped += 1
                continue
            rep, _, was_repaired = got
            repaired += was_repaired
            improved += lns and sol["status"] == "improved"
            rep["ret"] = _returns(rep.pop("reward") * args.reward_scale, gamma)
            del rep["objectives"], rep["ok"]
            parts.append(rep)
        if log and (i + 1) % 25 == 0:
            log(f"dagger round {round_ + 1}: {i + 1}/{len(seeds)} student episodes")
    data: dict[str, Any] = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}
    data.update({"instances": len(seeds), "cuts": cuts, "skipped": skipped,
                 "student_mean_ct": float(np.mean(student)) if student else float("nan")})
    if lns or myopic:
        data.update(repaired=repaired, improved=improved)
    if myopic:
        data.update(exact=exact, played=played)
    return data


def self_best_dataset(model, args: TrainArgs, lay: tf.EnvLayout, round_: int, *,
                      log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """One round of self-imitation (expert iteration; ``dagger_expert`` "self-best"): on each of
    ``args.dagger_instances`` new training instances (the seeds of :func:`dagger_dataset`'s round)
    the student plays its greedy episode and ``args.dagger_samples`` sampled ones at
    ``args.dagger_temperature`` (the solvers' sampling decode, :func:`tapfinger.best_of_samples`,
    episode k seeded by :func:`tapfinger.sample_seed`). The episode the referee scores lowest
    (ties: the earlier) is played again with its records (:func:`tapfinger.run_episode`
    ``record``; it must give the same referee value) and every joint decision of it is a label:
    each agent's own pointer choice, the losers' of a conflict included (m = 0, as the MAPPO
    rollout records them), and the winners' allocations -- the decisions that made the kept
    schedule, not a replay of its starts. Returns the arrays of :func:`expert_dataset` plus
    "instances", "cuts" (instances labelled), "skipped" (no finished episode, or a second play
    that differs), "improved" (instances where a sampled episode beat the greedy one),
    "student_mean_ct" (greedy) and "expert_mean_ct" (the kept episodes), over the instances kept."""
    import torch

    from edgebench.instances.generators import generate

    rng = np.random.default_rng([args.seed, 20_062, round_])
    seeds = [int(x) for x in rng.integers(0, EVAL_SEED_BASE, size=args.dagger_instances)]
    gamma = args.resolved_gamma()
    keys = ("obs", "ids", "masks", "void_ok", "slot", "alloc", "m", "active", "slot_ok", "alloc_ok")
    parts: list[dict[str, Any]] = []
    greedy_ct: list[float] = []
    best_ct: list[float] = []
    skipped = improved = 0
    for i, seed in enumerate(seeds):
        inst = generate("placement", args.preset, seed=seed, variant=args.variant, **args.gen_params)
        env = tf.make_env(inst, lay=lay, variant=args.variant)  # every reset replays this instance
        with torch.no_grad():
            first = tf.run_episode(model, env, lay, seed=seed, greedy=True, instance=inst)
            value0 = tf.referee_value(inst, first["decisions"]) if first["done"] else math.inf
            _, value, values = tf.best_of_samples(model, env, lay, inst, seed=seed, samples=args.dagger_samples,
                                                  deadline=None, incumbent=(first["decisions"], value0),
                                                  temperature=args.dagger_temperature)
            if not math.isfinite(value):
                skipped += 1
                continue
            k = values.index(value)
            steps: list = []
            again = tf.run_episode(model, env, lay, seed=seed if k == 0 else tf.sample_seed(seed, k), greedy=k == 0,
                                   instance=inst, temperature=args.dagger_temperature, record=steps)
        if not again["done"] or tf.referee_value(inst, again["decisions"]) != value:
            skipped += 1
            continue
        rep = {key: np.stack([rec[key] for rec, _ in steps]) for key in keys}
        if lay.inputs == "generic":
            rep["cells"] = np.concatenate([rec["cells"] for rec, _ in steps])
        rep["ret"] = _returns(np.stack([r for _, r in steps]) * args.reward_scale, gamma)
        parts.append(rep)
        n = len(inst.placement.tasks)
        greedy_ct.append(value0 / n)
        best_ct.append(value / n)
        improved += value < value0
        if log and (i + 1) % 25 == 0:
            log(f"self-best round {round_ + 1}: {i + 1}/{len(seeds)} instances, greedy {np.mean(greedy_ct):.3f}, "
                f"kept {np.mean(best_ct):.3f}")
    data: dict[str, Any] = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}
    data.update({"instances": len(seeds), "cuts": len(parts), "skipped": skipped, "improved": improved,
                 "student_mean_ct": float(np.mean(greedy_ct)) if greedy_ct else float("nan"),
                 "expert_mean_ct": float(np.mean(best_ct)) if best_ct else float("nan")})
    return data


def myopic_window(env, lay: tf.EnvLayout, instance, tasks: list, t: int, *, void_rule: str = "system",
                  cell_features: str = "v1", repair: bool = False, labels: str = "plan") -> dict[str, Any] | None:
    """The labels of the myopic expert's plan ``tasks`` (:func:`myopic_from_state`: the known
    tasks at ``t``, the student's prefix included) where they are valid: replayed through the env
    on the full ``instance`` (:func:`replay_expert`, ``record_from`` = t) until the next arrival
    step after t (exclusive, ``stop_at``; the end when none). Kept (the arrays of
    :func:`replay_expert` plus "repaired" and "exact", each 0 or 1) only when every expert action
    was allowed by the env and started as planned ("ok") and the env's starts by the stop are
    exactly the plan's starts before it (same cluster, step and allocation; nothing else started;
    "exact" = 1); else None. With ``repair`` a window that fails replayed exactly is replayed with
    the window repair and kept under the same test (its starts equal the plan's: only the order of
    the env's starts within a step may differ).

    ``labels`` "played" (:data:`MYOPIC_LABELS`; the repair is then on whatever ``repair``): a
    window that fails that test is kept as its window-repaired replay whenever the env allowed and
    started every start the repair chose ("ok"), some state is recorded and the env's starts
    before t are the plan's (the student's prefix: the states are the student's from t on), even
    when its starts in [t, stop) differ from the plan's ("exact" = 0): the labels are the plan as
    the agents can play it (each cluster starts, among its due planned tasks, the first the env
    allows; the others wait; a cluster with no due task it can start waits, as planned)."""
    if labels not in MYOPIC_LABELS:
        raise tf.InputError(f"unknown myopic labels {labels!r} (one of {list(MYOPIC_LABELS)})",
                            field="dagger_myopic_labels")
    stop = next_arrival(instance, t)
    plan = {j: tuple(map(int, x)) for j, x in enumerate(tasks) if stop is None or x[1] < stop}
    prefix = {j: x for j, x in plan.items() if x[1] < t}
    played = labels == "played"
    for rep_mode in ((False, True) if repair or played else (False,)):
        rep = replay_expert(env, lay, instance, tasks, void_rule=void_rule, record_from=t,
                            cell_features=cell_features, repair=rep_mode, stop_at=stop)
        if not rep["ok"] or not len(rep["slot"]):
            continue
        starts = student_states(env)
        same = starts == plan
        if same or (played and rep_mode and {j: x for j, x in starts.items() if x[1] < t} == prefix):
            rep["repaired"], rep["exact"] = int(rep_mode), int(same)
            return rep
    return None
