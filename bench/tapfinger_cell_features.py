"""How fast behaviour cloning fits the LNS expert's allocations with the generic cell features
"v1" and "v2" (``ModelConfig.cell_features``), the one-hot model for reference (issue 42, item 4;
docs/tapfinger.md "Behaviour cloning of generic models").

The setting of the session-15 measurement: synthetic-3 (``--variant``, default single), 10
tasks, ``--instances`` (5) training instances solved by placement-lns in 1 s (cached under
``--cache``), replayed through the env; default network (hidden 64), torch seed 0, Adam
(``--lr``, eps 1e-5), minibatch 8, ``--epochs`` BC epochs. Every ``--every`` epochs (and
before the first) each model is read on all training states: the cross-entropies by one epoch
at learning rate 0 (``behaviour_cloning``: pointer, allocation) and the greedy accuracies of
the pointer (on the expert's slot) and of the allocation head (argmax over the allowed cells
== the expert's cell, on the expert's starts).

    OMP_NUM_THREADS=1 .venv/bin/python bench/tapfinger_cell_features.py [--epochs 40] [--lr 1e-3]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from edgebench.errors import InputError
from edgebench.learned import tapfinger as tf
from edgebench.learned.train_tapfinger import TrainArgs, behaviour_cloning, expert_dataset

MODELS = {"onehot": dict(inputs="onehot"), "generic v1": dict(inputs="generic", cell_features="v1"),
          "generic v2": dict(inputs="generic", cell_features="v2")}


def accuracies(model, data: dict) -> tuple[float, float]:
    """(pointer accuracy on the active agents, allocation accuracy on the expert's starts) of the
    greedy heads over all states of ``data`` (one forward pass, no gradient)."""
    import torch

    idx = np.arange(len(data["slot"]))
    with torch.no_grad():
        masks = torch.as_tensor(data["masks"])
        logits, z, clus, _ = model(data["obs"], data["ids"], masks, data["void_ok"])
        slot = torch.as_tensor(data["slot"])
        active = torch.as_tensor(data["active"])
        ptr = float((logits.argmax(-1) == slot)[active].float().mean())
        B, N, P, d = z.shape
        win = np.flatnonzero(data["m"].reshape(-1))
        if model.cfg.inputs == "generic":
            wt = torch.as_tensor(win)
            hj = z.reshape(B * N, P, d)[wt, torch.as_tensor(data["slot"].reshape(-1)[win])]
            ok = torch.as_tensor(data["alloc_ok"].reshape(B * N, -1)[win])
            al = model.alloc_head(hj, clus.reshape(B * N, d)[wt], ok, tf.batch_cells(data, idx), compact=True)
        else:
            al = model.alloc_logits(z, clus, slot, masks).reshape(B * N, -1)[torch.as_tensor(win)]
        alloc = float((al.argmax(-1).numpy() == data["alloc"].reshape(-1)[win]).mean())
    return ptr, alloc


def losses(model, data: dict, args: TrainArgs) -> dict[str, float]:
    """The BC cross-entropies over all states at the current weights (one epoch at lr 0)."""
    import torch

    frozen = torch.optim.SGD(model.parameters(), lr=0.0)
    return behaviour_cloning(model, frozen, data, args, np.random.default_rng(0), epochs=1)[0]


def run(name: str, opts: argparse.Namespace) -> list[tuple[int, float, float, float, float]]:
    """One model's (epoch, pointer loss, allocation loss, pointer accuracy, allocation accuracy) rows."""
    import torch

    cfg = tf.ModelConfig(**MODELS[name])
    args = TrainArgs(preset="synthetic-3", variant=opts.variant, steps=0, gen_params={"num_tasks": opts.tasks},
                     seed=0, threads=1, device="cpu", minibatch=8, lr=opts.lr, bc_instances=opts.instances,
                     bc_epochs=opts.epochs, bc_time_limit=1.0, expert="placement-lns", bc_cache=opts.cache,
                     model=cfg)
    lay = tf.EnvLayout.of_env(tf.make_env(preset=args.preset, params=args.gen_params, variant=args.variant,
                                          inputs=cfg.inputs))
    data = expert_dataset(args, lay)
    torch.manual_seed(0)
    model = tf.make_model(cfg, lay)
    opt = torch.optim.Adam(model.parameters(), lr=opts.lr, eps=1e-5)
    rng = np.random.default_rng(1)
    rows = []
    for epoch in range(0, opts.epochs + 1, opts.every):
        if epoch:
            behaviour_cloning(model, opt, data, args, rng, epochs=opts.every)
        lo = losses(model, data, args)
        rows.append((epoch, lo["bc_pointer"], lo["bc_alloc"], *accuracies(model, data)))
    print(f"# {name}: {len(data['slot'])} states, {int(data['m'].sum())} expert starts", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variant", choices=("single", "multi"), default="single")
    p.add_argument("--tasks", type=int, default=10)
    p.add_argument("--instances", type=int, default=5)
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--every", type=int, default=10)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--cache", default="runs/cell-features-cache")
    p.add_argument("--models", default=",".join(MODELS))
    opts = p.parse_args(argv)
    try:
        names = opts.models.split(",")
        bad = [n for n in names if n not in MODELS]
        if bad or opts.every < 1 or opts.epochs < 0:
            raise InputError(f"unknown models {bad}" if bad else "--every must be >= 1, --epochs >= 0",
                             field="--models")
        print("| model | epoch | pointer CE | allocation CE | pointer acc | allocation acc |")
        print("|---|---|---|---|---|---|")
        for name in names:
            for e, pl, al, pa, aa in run(name, opts):
                print(f"| {name} | {e} | {pl:.3f} | {al:.3f} | {pa:.2f} | {aa:.2f} |", flush=True)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
