"""``edgebench train ces-ppo``: train CES-PPO, its ablation or PPO-Balance.

:func:`add_train_parser` is called once from :func:`edgebench.cli.build_parser` with the
sub-parsers of the shared ``train`` command; torch loads only when the command runs.

    edgebench train ces-ppo --preset thesis --steps 200000 --seed 1 --out runs/ces-ppo
    edgebench train ces-ppo --variant ces-ppo-noheur --steps 200000 --seed 1 --out runs/noheur
    edgebench train ces-ppo --steps 400000 --seed 1 --out runs/ces-ppo --resume

The run writes ``OUT/checkpoint.pt`` (latest model, optimizer, RNG states and the held-out
evaluation), ``OUT/progress.csv`` and TensorBoard events in ``OUT/tb``; it prints one progress
line per PPO update and a final summary. The shipped checkpoints of the ``ces-ppo`` /
``ces-ppo-noheur`` / ``ppo-balance`` solvers are copies of such ``checkpoint.pt`` files
(``learned/checkpoints/``, see docs/ces-ppo.md).
"""

from __future__ import annotations

import argparse

from edgebench.argtypes import parse_assignments
from edgebench.argtypes import positive_float as _pos_float
from edgebench.argtypes import positive_int as _pos_int
from edgebench.argtypes import seed as _seed
from edgebench.errors import InputError

__all__ = ["add_train_parser", "cmd_train_ces_ppo"]

CMDLINE = "<command line>"


def cmd_train_ces_ppo(args: argparse.Namespace) -> int:
    from edgebench.learned.train_ces_ppo import Args, train

    params = parse_assignments(args.set)
    if params:
        from edgebench.instances.generators import generate

        try:
            generate("mapping", args.preset, seed=0, **params)  # bad overrides fail before training
        except InputError as exc:
            raise InputError(exc.args[0] if exc.args else str(exc), file=CMDLINE, field="--set") from None
    targs = Args(variant=args.variant, preset=args.preset, params=params, total_steps=args.steps, seed=args.seed,
                 num_envs=args.num_envs, num_steps=args.num_steps, learning_rate=args.lr,
                 eval_seeds=args.eval_seeds, eval_every=args.eval_every, threads=args.threads)
    try:
        targs.check()
    except InputError as exc:
        raise InputError(exc.args[0] if exc.args else str(exc), file=CMDLINE, field=exc.field) from None
    summary = train(targs, args.out, resume=args.resume, log=lambda s: print(s, flush=True),
                    tensorboard=not args.no_tensorboard)
    print(f"done: {summary['global_step']} steps, held-out composite {summary['initial_composite']:.4f} (random "
          f"init) -> {summary['final_composite']:.4f}, {summary['throughput_sps']:.0f} steps/s; checkpoint "
          f"{summary['checkpoint']}")
    return 0


def add_train_parser(train_sub) -> argparse.ArgumentParser:
    """Add the ``ces-ppo`` target to the ``train`` command's sub-parsers."""
    from edgebench.learned.ces_ppo import VARIANTS

    p = train_sub.add_parser(
        "ces-ppo", help="train CES-PPO (mapping family), its ablation or PPO-Balance",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Train a CES-PPO variant with PPO on instances of a mapping generator preset. Writes "
                    "OUT/checkpoint.pt (model, optimizer, RNG states, held-out evaluation), OUT/progress.csv and "
                    "TensorBoard events under OUT/tb; prints one line per PPO update. See docs/ces-ppo.md.",
        epilog="examples:\n"
               "  edgebench train ces-ppo --preset thesis --steps 200000 --seed 1 --out runs/ces-ppo\n"
               "  edgebench train ces-ppo --variant ppo-balance --steps 100000 --seed 1 --out runs/ppo-balance\n"
               "  edgebench train ces-ppo --steps 400000 --seed 1 --out runs/ces-ppo --resume\n")
    p.set_defaults(func=cmd_train_ces_ppo)
    p.add_argument("--variant", choices=VARIANTS, default="ces-ppo",
                   help="ces-ppo (default), ces-ppo-noheur (no heuristic reward) or ppo-balance")
    p.add_argument("--preset", default="thesis", metavar="P", help="mapping generator preset (default thesis)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="generator parameter override (repeatable)")
    p.add_argument("--steps", type=_pos_int, default=100_000, metavar="N",
                   help="environment decisions in all (default 100000)")
    p.add_argument("--seed", type=_seed, default=1, metavar="S", help="training seed (default 1)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created if needed)")
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    p.add_argument("--num-envs", type=_pos_int, default=4, metavar="E", help="environments (default 4)")
    p.add_argument("--num-steps", type=_pos_int, default=128, metavar="T", help="rollout length (default 128)")
    p.add_argument("--lr", type=_pos_float, default=3e-4, metavar="X", help="learning rate (default 3e-4)")
    p.add_argument("--eval-seeds", type=_pos_int, default=20, metavar="K",
                   help="held-out evaluation instances (default 20)")
    p.add_argument("--eval-every", type=_pos_int, default=20, metavar="U",
                   help="updates between evaluations and checkpoints (default 20)")
    p.add_argument("--threads", type=_pos_int, default=1, metavar="K", help="torch threads (default 1)")
    p.add_argument("--no-tensorboard", action="store_true", help="skip the TensorBoard events")
    return p
