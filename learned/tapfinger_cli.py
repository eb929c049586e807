"""``edgebench train tapfinger``: MAPPO training of the TapFinger placement policy.

:func:`add_train_parser` is called once from :func:`edgebench.cli.build_parser` with the
sub-parsers of the shared ``train`` command; torch loads only when the command runs.

    edgebench train tapfinger --preset synthetic-3 --variant multi --steps 20000 --seed 0 --out runs/tf
    edgebench train tapfinger --preset synthetic-3 --variant multi --steps 40000 --seed 0 --out runs/tf --resume
    edgebench train tapfinger --preset synthetic-3 --variant multi --steps 0 --bc-instances 400 --bc-epochs 10 \
        --out runs/tfbc --export tf.pt      # behaviour cloning from the exact model (the shipped checkpoints)

The run writes ``OUT/metrics.csv``, TensorBoard scalars under ``OUT/tb``, ``OUT/last.pt``
(model, optimizer, RNG and training state: ``--resume`` continues from it), ``OUT/best.pt``
(best held-out evaluation) and, with ``--export PATH``, a weights-only copy of the final model
(the shipped checkpoints in ``learned/checkpoints/`` are such exports). See docs/tapfinger.md.
"""

from __future__ import annotations

import argparse

from edgebench.argtypes import fraction, int_in, nonneg_float as _nonneg_float, parse_assignments
from edgebench.argtypes import nonneg_int as _nonneg_int
from edgebench.argtypes import positive_float as _pos_float
from edgebench.argtypes import positive_float_at_most
from edgebench.argtypes import positive_int as _pos_int
from edgebench.errors import InputError

__all__ = ["add_train_parser", "cmd_train_tapfinger", "train_args_from_cli"]

CMDLINE = "<command line>"


def training_command(args: argparse.Namespace) -> str:
    """The training command line, rebuilt from the parsed options (provenance of an export)."""
    parts = ["edgebench train tapfinger", f"--preset {args.preset}", f"--variant {args.variant}",
             f"--steps {args.steps}", f"--seed {args.seed}", f"--out {args.out}"]
    parts += [f"--set {s}" for s in args.set or []]
    parts += [f"--val-set {s}" for s in getattr(args, "val_set", None) or []]
    for opt in ("num_envs", "rollout_steps", "lr", "hidden", "layers", "heads", "conv", "void_rule", "encoder",
                "pointer", "eval_every", "eval_episodes", "ent_coef", "bc_instances", "bc_epochs", "bc_time_limit",
                "bc_lr", "bc_eval_every", "bc_value_coef", "val_episodes", "val_seed_base", "init", "dagger_rounds", "dagger_instances",
                "dagger_cuts", "dagger_epochs", "epochs", "minibatch", "target_kl", "critic_warmup", "critic_lr"):
        if getattr(args, opt) is None:
            continue
        parts.append(f"--{opt.replace('_', '-')} {getattr(args, opt)}")
    if getattr(args, "dagger_window", 0):
        parts.append(f"--dagger-window {args.dagger_window}")
    if getattr(args, "anneal_steps", 0):
        parts.append(f"--anneal-lr {args.anneal_steps}")
    if getattr(args, "bc_window_repair", 0.0):
        parts.append(f"--bc-window-repair {args.bc_window_repair}")
    if getattr(args, "expert", "placement-milp") != "placement-milp":
        parts.append(f"--expert {args.expert}")
    if getattr(args, "dagger_expert", "placement-milp") != "placement-milp":
        parts.append(f"--dagger-expert {args.dagger_expert}")
    if getattr(args, "dagger_myopic_labels", "plan") != "plan":
        parts.append(f"--dagger-myopic-labels {args.dagger_myopic_labels}")
    for opt in ("dagger_samples", "dagger_temperature"):  # self-best's; recorded when given
        if getattr(args, opt, None) is not None:
            parts.append(f"--{opt.replace('_', '-')} {getattr(args, opt)}")
    if getattr(args, "inputs", "onehot") != "onehot":
        parts.append(f"--inputs {args.inputs}")
    if getattr(args, "cell_features", "v1") != "v1":
        parts.append(f"--cell-features {args.cell_features}")
    for flag in ("critic_detach", "team_reward", "sparse_alloc", "entropy_norm", "cross_features", "plan_features"):
        if getattr(args, flag, False):
            parts.append(f"--{flag.replace('_', '-')}")
    return " ".join(parts)


def train_args_from_cli(args: argparse.Namespace):
    """The :class:`~edgebench.learned.train_tapfinger.TrainArgs` of parsed ``train tapfinger`` options
    (also used to re-create a shipped checkpoint's evaluation from its recorded command)."""
    from edgebench.instances.generators import generate
    from edgebench.learned import tapfinger as tf
    from edgebench.learned.train_tapfinger import TrainArgs

    params = {"num_tasks": 24, **parse_assignments(args.set)}
    try:
        generate("placement", args.preset, seed=0, **params)  # bad presets / overrides fail before training
    except InputError as exc:
        raise InputError(exc.args[0] if exc.args else str(exc), file=CMDLINE, field="--set") from None
    val_params = parse_assignments(getattr(args, "val_set", None), "--val-set")
    if val_params:
        try:
            generate("placement", args.preset, seed=0, **{**params, **val_params})
        except InputError as exc:
            raise InputError(exc.args[0] if exc.args else str(exc), file=CMDLINE, field="--val-set") from None
    if args.hidden % args.heads:
        raise InputError("--hidden must be a multiple of --heads", file=CMDLINE, field="--hidden")
    labels = getattr(args, "dagger_myopic_labels", "plan")
    if labels != "plan" and getattr(args, "dagger_expert", "placement-milp") not in ("placement-lns-myopic", "online-list"):
        raise InputError(f"--dagger-myopic-labels {labels} needs --dagger-expert placement-lns-myopic or online-list",
                         file=CMDLINE,
                         field="--dagger-myopic-labels")
    self_best_given = {k: getattr(args, k) for k in ("dagger_samples", "dagger_temperature")
                       if getattr(args, k, None) is not None}  # TrainArgs holds the defaults
    if self_best_given and getattr(args, "dagger_expert", "placement-milp") != "self-best":
        flag = "--" + next(iter(self_best_given)).replace("_", "-")  # the first one given is named
        raise InputError(f"{flag} needs --dagger-expert self-best", file=CMDLINE, field=flag)
    if getattr(args, "cell_features", "v1") != "v1" and getattr(args, "inputs", "onehot") != "generic":
        raise InputError("--cell-features v2 needs --inputs generic", file=CMDLINE, field="--cell-features")
    if getattr(args, "cross_features", False) and getattr(args, "inputs", "onehot") != "generic":
        raise InputError("--cross-features needs --inputs generic", file=CMDLINE, field="--cross-features")
    if getattr(args, "plan_features", False) and getattr(args, "inputs", "onehot") != "generic":
        raise InputError("--plan-features needs --inputs generic", file=CMDLINE, field="--plan-features")
    model = tf.ModelConfig(hidden=args.hidden, layers=args.layers, heads=args.heads, encoder=args.encoder,
                           pointer=args.pointer, conv=args.conv, void_rule=args.void_rule,
                           inputs=getattr(args, "inputs", "onehot"),
                           cell_features=getattr(args, "cell_features", "v1"))
    return TrainArgs(preset=args.preset, variant=args.variant, gen_params=params, steps=args.steps, seed=args.seed,
                     num_envs=args.num_envs, rollout_steps=args.rollout_steps, lr=args.lr, ent_coef=args.ent_coef,
                     eval_every=args.eval_every, eval_episodes=args.eval_episodes, threads=args.threads,
                     model=model, out=args.out, resume=args.resume, bc_instances=args.bc_instances,
                     bc_epochs=args.bc_epochs, bc_time_limit=args.bc_time_limit, expert=args.expert,
                     bc_cache=None if args.bc_cache == "none" else args.bc_cache, bc_lr=args.bc_lr,
                     bc_eval_every=args.bc_eval_every, val_episodes=args.val_episodes,
                     val_seed_base=args.val_seed_base, val_params=val_params, init=args.init, dagger_rounds=args.dagger_rounds,
                     dagger_instances=args.dagger_instances, dagger_cuts=args.dagger_cuts,
                     dagger_epochs=args.dagger_epochs, dagger_expert=getattr(args, "dagger_expert", "placement-milp"),
                     dagger_myopic_labels=labels,
                     dagger_window=getattr(args, "dagger_window", 0), **self_best_given,
                     epochs=args.epochs, minibatch=args.minibatch,
                     target_kl=args.target_kl, critic_warmup=args.critic_warmup, critic_detach=args.critic_detach, critic_lr=args.critic_lr,
                     anneal_steps=getattr(args, "anneal_steps", 0),
                     team_reward=args.team_reward, device=args.device,
                     sparse_alloc=getattr(args, "sparse_alloc", False),
                     bc_window_repair=getattr(args, "bc_window_repair", 0.0),
                     bc_value_coef=getattr(args, "bc_value_coef", None),
                     entropy_norm=getattr(args, "entropy_norm", False),
                     cross_features=getattr(args, "cross_features", False),
                     plan_features=getattr(args, "plan_features", False))


def write_sidecar(export: str, targs, final: dict, command: str, init_extra: dict,
                  ledger: dict | None = None) -> None:
    """The provenance sidecar of an exported checkpoint (``NAME.json`` beside ``NAME.pt``; see
    :mod:`edgebench.learned.provenance`): preset, variant, algorithm, env_steps (the RL steps
    that produced the exported weights: the selected update's when MAPPO was selected on
    validation), the run's total RL steps, the command, the held-out evaluation and the budget of
    the whole run (``ledger``: env steps, CPU hours, resumptions)."""
    import json
    from pathlib import Path

    rl_steps = int(final.get("global_step", 0) or 0)
    warm = bool(targs.init) or targs.bc_instances > 0 or targs.dagger_rounds > 0
    if targs.steps == 0 or rl_steps == 0:
        algorithm = "bc+dagger" if targs.dagger_rounds > 0 else "bc"
    else:
        algorithm = "bc+mappo" if warm else "mappo"
    meta = {"preset": targs.preset, "variant": targs.variant, "algorithm": algorithm,
            "env_steps": int(final.get("selected_step", rl_steps)) if "selected_update" in final else rl_steps,
            "env_steps_run": rl_steps, "episode_tasks": targs.gen_params.get("num_tasks"), "command": command,
            "eval": {"held_out_seeds": f"10**9 + k, k < {targs.eval_episodes}",
                     "mean_completion_time": final.get("eval_mean_ct")}}
    if ledger:  # the whole run's budget (issue 42): every process of it, resumptions included
        meta["budget"] = {"env_steps_total": int(ledger["env_steps"]),
                          "cpu_hours": round(float(ledger["cpu_seconds"]) / 3600.0, 3),
                          "resumptions": int(ledger["resumptions"])}
    if "selected_update" in final:
        meta["selected_update"] = final["selected_update"]
        meta["val_mean_ct"] = final.get("val_mean_ct")
    if init_extra.get("init_command"):
        meta["init_command"] = init_extra["init_command"]
    path = Path(export).with_suffix(".json")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2) + "\n")
    tmp.replace(path)


def cmd_train_tapfinger(args: argparse.Namespace) -> int:
    from edgebench.learned import tapfinger as tf
    from edgebench.learned.train_tapfinger import train

    targs = train_args_from_cli(args)
    init_extra = {}
    if args.init:  # provenance of the starting weights (read before training: the file may be replaced)
        from edgebench.learned.checkpoint import reading

        _, _, iblob = tf.load_checkpoint(args.init)
        with reading(args.init, "checkpoint.extra"):  # a malformed record is an InputError
            init_extra = {"init_command": iblob["extra"].get("command"), "init_eval": iblob["extra"].get("eval")}
    res = train(targs, log=lambda s: print(s, flush=True))
    first = next((h for h in res["history"] if "eval_mean_ct" in h), {})
    final = res["final"]
    if args.export:
        tf.save_checkpoint(args.export, res["model"], res["layout"],
                           extra={"command": training_command(args),
                                  "eval": {k: v for k, v in final.items() if isinstance(v, (int, float))},
                                  "eval_cts": list(final.get("eval_cts", [])), **init_extra})
        write_sidecar(args.export, targs, final, training_command(args), init_extra, res.get("ledger"))
    sps = [h["sps"] for h in res["history"] if "sps" in h]
    print(f"done: {final.get('global_step', 0)} steps, held-out mean completion time "
          f"{first.get('eval_mean_ct', float('nan')):.3f} (random init) -> {final.get('eval_mean_ct', float('nan')):.3f}"
          f", {sps[-1] if sps else 0:.0f} env steps/s, {final.get('ms_per_decision', float('nan')):.1f} ms/decision")
    return 0


def add_train_parser(train_sub) -> argparse.ArgumentParser:
    """Add the ``tapfinger`` target to the ``train`` command's sub-parsers."""
    p = train_sub.add_parser(
        "tapfinger", help="train TapFinger (placement family): multi-agent PPO (optionally behaviour-cloned from the exact "
             "model first), heterogeneous graph attention encoder, pointer actor",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Train the TapFinger policy with MAPPO on instances of a placement generator preset (default "
                    "num_tasks=24 per episode; override with --set). Writes OUT/metrics.csv, TensorBoard scalars "
                    "under OUT/tb, OUT/last.pt (resumable) and OUT/best.pt; prints one line per PPO update with "
                    "periodic greedy evaluation on the held-out seeds 10**9+k. See docs/tapfinger.md.",
        epilog="examples:\n"
               "  edgebench train tapfinger --preset synthetic-3 --variant multi --steps 20000 --seed 0 --out runs/tf\n"
               "  edgebench train tapfinger --variant single --steps 20000 --out runs/tf1 --export tf1.pt\n"
               "  edgebench train tapfinger --steps 40000 --out runs/tf --resume\n"
               "  edgebench train tapfinger --bc-instances 400 --bc-epochs 10 --steps 0 --out runs/tfbc --export tf.pt\n")
    p.set_defaults(func=cmd_train_tapfinger)
    p.add_argument("--preset", default="synthetic-3", metavar="P", help="placement preset (default synthetic-3)")
    p.add_argument("--variant", choices=("single", "multi"), default="multi", help="single- or multi-task (default multi)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="generator parameter override (repeatable)")
    p.add_argument("--steps", type=int_in(0, 10**9), default=20_000, metavar="N",
                   help="MAPPO environment steps in all (default 20000; 0 with --bc-*: behaviour cloning only)")
    p.add_argument("--seed", type=_nonneg_int, default=0, metavar="S", help="training seed (default 0)")
    p.add_argument("--out", required=True, metavar="DIR", help="run folder")
    p.add_argument("--resume", action="store_true", help="continue from OUT/last.pt")
    p.add_argument("--export", metavar="PATH", help="also write a weights-only checkpoint of the final model")
    p.add_argument("--num-envs", type=int_in(1, 256), default=8, metavar="E", help="environments in lockstep (default 8)")
    p.add_argument("--rollout-steps", type=int_in(1, 4096), default=32, metavar="T", help="steps per env per update (default 32)")
    p.add_argument("--lr", type=_pos_float, default=1e-3, metavar="LR", help="Adam learning rate (default 1e-3)")
    p.add_argument("--hidden", type=int_in(1, 1024), default=64, metavar="D", help="embedding width (default 64; paper 256)")
    p.add_argument("--layers", type=int_in(1, 16), default=2, metavar="L", help="graph layers (default 2; paper 6)")
    p.add_argument("--heads", type=int_in(1, 16), default=4, metavar="H", help="attention heads (default 4)")
    p.add_argument("--conv", choices=("fused", "hgt", "gat"), default="fused",
                   help="graph attention layer: fused (default; all node/edge types in one pass), hgt (PyG HGTConv) "
                        "or gat (HeteroConv of GATConv per edge type)")
    p.add_argument("--void-rule", choices=("system", "cluster"), default="system",
                   help="when the pointer may choose void: system (default; while any cluster runs a task) or cluster "
                        "(the first checkpoints' rule)")
    p.add_argument("--encoder", choices=("graph", "mlp"), default="graph", help="graph (default) or mlp (ablation)")
    p.add_argument("--pointer", choices=("pointer", "random"), default="pointer",
                   help="pointer (default) or random task selection (ablation)")
    p.add_argument("--inputs", choices=("onehot", "generic"), default="onehot",
                   help="task inputs: onehot (default; the preset's task types, an allocation head sized to its grid) "
                        "or generic (type-free features from the performance model and a per-cell allocation head: "
                        "the model plays any placement instance; MAPPO, behaviour cloning and DAgger)")
    p.add_argument("--cell-features", choices=("v1", "v2"), default="v1",
                   help="generic inputs: the allocation head's cell features: v1 (default; absolute: share of the "
                        "capacity, run time, free after) or v2 (v1 plus each cell relative to the best run time and "
                        "the cheapest best-time cell among the allowed cells, a Pareto flag, its share of the free "
                        "resources; docs/tapfinger.md)")
    p.add_argument("--cross-features", action="store_true",
                   help="generic inputs: each pending task also shows what the other clusters of its queue could do "
                        "with it now (best run time startable now and when free, against this cluster's; "
                        "docs/tapfinger.md, \"Cross-cluster features\")")
    p.add_argument("--plan-features", action="store_true",
                   help="generic inputs: each pending task also shows what the step's shared plan of the windows "
                        "(placement-list-window's) does with it: planned here, planned here now, its planned wait "
                        "(the variant tapfinger-plan, not the paper's agents; docs/tapfinger.md, \"Plan features\")")
    p.add_argument("--sparse-alloc", action="store_true",
                   help="generic inputs: the allocation head scores the allowed cells only in training (about 2.5x "
                        "the update's throughput; the same values in exact arithmetic, not the default's trajectory "
                        "bit for bit)")
    p.add_argument("--entropy-norm", action="store_true",
                   help="divide the pointer's and the allocation's entropy bonus by ln(allowed choices), so a head "
                        "over hundreds of cells is not rewarded for staying flat (default: the raw entropies)")
    p.add_argument("--eval-every", type=_nonneg_int, default=5, metavar="U", help="updates between evaluations")
    p.add_argument("--eval-episodes", type=int_in(1, 10_000), default=4, metavar="K", help="held-out episodes per evaluation")
    p.add_argument("--threads", type=int_in(1, 256), default=1, metavar="K", help="torch CPU threads (default 1)")
    p.add_argument("--ent-coef", type=float, default=0.01, metavar="C", help="PPO entropy bonus (default 0.01)")
    p.add_argument("--epochs", type=int_in(1, 10_000), default=4, metavar="K", help="PPO epochs per update (default 4)")
    p.add_argument("--minibatch", type=int_in(1, 65_536), default=64, metavar="B", help="PPO minibatch (default 64)")
    p.add_argument("--target-kl", type=_pos_float, default=None, metavar="KL",
                   help="stop an update's epochs once the approx KL exceeds KL (default: never)")
    p.add_argument("--critic-warmup", type=_nonneg_int, default=0, metavar="U",
                   help="first U MAPPO updates train only the critic (actor frozen; default 0)")
    p.add_argument("--critic-detach", action="store_true",
                   help="the value loss does not reach the encoder shared with the actor")
    p.add_argument("--critic-lr", type=_pos_float, default=None, metavar="LR",
                   help="learning rate of the critic's layers (default: --lr)")
    p.add_argument("--anneal-lr", dest="anneal_steps", type=_nonneg_int, default=0, metavar="STEPS",
                   help="decay both learning rates linearly to 0 at env step STEPS of the run's whole life "
                        "(default 0: constant rates)")
    p.add_argument("--device", default="auto", metavar="DEV",
                   help="torch device: auto (CUDA when available, else CPU; default), cpu, cuda, cuda:K")
    p.add_argument("--team-reward", action="store_true",
                   help="every agent is trained on the team reward (minus all tasks in the system)")
    g = p.add_argument_group("behaviour-cloning warm start (a deviation from the paper; default off: pure MAPPO)")
    g.add_argument("--bc-instances", type=int_in(0, 10_000), default=0, metavar="K",
                   help="training instances solved by placement-milp whose schedules are imitated (default 0: off)")
    g.add_argument("--bc-epochs", type=int_in(0, 10_000), default=0, metavar="E", help="supervised epochs before MAPPO")
    g.add_argument("--expert", choices=("placement-milp", "placement-lns", "placement-lns-online", "online-list",
                                         "online-played", "list-window"),
                   default="placement-milp",
                   help="the warm start's expert: the fixed-allocation MILP (default), the LNS (near-optimal, "
                        "gaps 0-10 %% on the library), the online LNS (re-planning at every arrival on the tasks "
                        "known by then: non-clairvoyant), or online plans played by the agents' rules "
                        "(placement-lns-window: online-list, list-scheduling plans; online-played, an LNS plan "
                        "where its play beats the list plan's), or list-window (placement-list-window: the windows' "
                        "list plan re-made every step); DAgger's continuations: --dagger-expert")
    g.add_argument("--bc-time-limit", type=_pos_float, default=5.0, metavar="S",
                   help="seconds per exact solve, one thread (default 5)")
    g.add_argument("--bc-cache", default="runs/tapfinger-expert", metavar="DIR",
                   help="folder of cached expert schedules (default runs/tapfinger-expert; 'none': no cache)")
    g.add_argument("--bc-window-repair", type=fraction, default=0.0, metavar="TOL",
                   help="imitate window-repaired expert schedules within TOL (relative) of the expert's value: a "
                        "start outside the agent's pending window waits until the env allows it (default 0: off)")
    g.add_argument("--bc-value-coef", type=_nonneg_float, default=None, metavar="C",
                   help="weight of the value regression in the BC / DAgger loss (default: the PPO value "
                        "coefficient, 0.5; 0: the supervised phase leaves the value head alone)")
    g.add_argument("--bc-lr", type=_pos_float, default=None, metavar="LR", help="learning rate of the BC epochs "
                   "(default: --lr)")
    g.add_argument("--bc-eval-every", type=_nonneg_int, default=0, metavar="E",
                   help="BC epochs between evaluations (held-out, or validation with --val-episodes; default 0: "
                        "after the last)")
    g.add_argument("--val-episodes", type=int_in(0, 10_000), default=0, metavar="K",
                   help="validation seeds --val-seed-base + k, k < K: the BC/DAgger weights best on them are kept "
                        "(default 0: no selection, the last weights)")
    g.add_argument("--val-set", action="append", metavar="KEY=VALUE",
                   help="a generator parameter of the validation instances over --set (repeatable), e.g. "
                        "num_tasks=384: select at the held-out scale while training on shorter episodes")
    g.add_argument("--val-seed-base", type=_nonneg_int, default=2 * 10**9, metavar="B",
                   help="first validation seed (default 2*10**9; disjoint from training [0, 10**9) and held-out 10**9+k)")
    g.add_argument("--init", default=None, metavar="CKPT", help="start from this checkpoint's weights (same model)")
    g.add_argument("--dagger-rounds", type=int_in(0, 1000), default=0, metavar="R",
                   help="DAgger rounds after BC: student episodes relabelled by the expert (--dagger-expert; default 0)")
    g.add_argument("--dagger-instances", type=int_in(0, 10_000), default=0, metavar="K",
                   help="student episodes (new training instances) per DAgger round")
    g.add_argument("--dagger-cuts", type=_pos_int, default=3, metavar="C",
                   help="states per student episode from which the expert's continuation is solved (default 3)")
    g.add_argument("--dagger-epochs", type=_nonneg_int, default=None, metavar="E",
                   help="supervised epochs on the aggregate after each round (default: --bc-epochs)")
    g.add_argument("--dagger-window", type=_nonneg_int, default=0, metavar="W",
                   help="train each round on the last W rounds' states only (default 0: every round's, DAgger's "
                        "aggregate; the --bc-instances expert states are always kept)")
    g.add_argument("--dagger-expert", choices=("placement-milp", "placement-lns", "placement-lns-myopic", "online-list",
                                                "self-best"),
                   default="placement-milp",
                   help="the expert of DAgger's continuations: the exact fixed-allocation MILP from the state "
                        "(default) or the LNS improving the student's own continuation with its prefix frozen "
                        "(--bc-time-limit seconds each; window repair with --bc-window-repair), or that LNS "
                        "non-clairvoyant (placement-lns-myopic): on the tasks known at the state only, imitated "
                        "until the next arrival; online-list: the same with list-scheduling plans only; "
                        "self-best: the student's own best of its greedy and --dagger-samples sampled episodes "
                        "(expert iteration), every state of it labelled")
    g.add_argument("--dagger-samples", type=int_in(1, 10_000), default=None, metavar="K",
                   help="self-best: sampled episodes per training instance after the greedy one (default 16)")
    g.add_argument("--dagger-temperature", type=positive_float_at_most(10.0), default=None, metavar="T",
                   help="self-best: temperature of the sampled episodes, 0 < T <= 10 (default 0.25)")
    g.add_argument("--dagger-myopic-labels", choices=("plan", "played"), default="plan",
                   help="labels of placement-lns-myopic's windows: plan (default; a window is kept only when the env "
                        "plays the plan's starts exactly) or played (the window-repaired replay, the plan as the "
                        "agents can play it, is kept whenever the env allows every start it makes)")
    return p
