"""``edgebench train ces-ppo``: train CES-PPO, its ablation or PPO-Balance.

:func:`add_train_parser` is called once from :func:`edgebench.cli.build_parser` with the
sub-parsers of the shared ``train`` command; torch loads only when the command runs.

    edgebench train ces-ppo --preset thesis --steps 200000 --seed 1 --out runs/ces-ppo
    edgebench train ces-ppo --variant ces-ppo-noheur --steps 200000 --seed 1 --out runs/noheur
    edgebench train ces-ppo --steps 400000 --seed 1 --out runs/ces-ppo --resume
    edgebench train ces-ppo --bc-instances 2000 --bc-epochs 60 --ent-coef 0.001 --node-head --steps 40000 --seed 1 --out runs/ces-ppo-bc
    edgebench train ces-ppo --arch per-node --nodes-mix 10 20 --bc-instances 1500 --bc-epochs 40 --bc-teacher heuristics
        --ent-coef 0.001 --steps 20000 --seed 1 --out runs/bch-ces-ppo      (the shipped ces-ppo-bc-mix.pt)

The run writes ``OUT/checkpoint.pt`` (latest model, optimizer, RNG states and the held-out
evaluation), ``OUT/progress.csv`` and TensorBoard events in ``OUT/tb``; it prints one progress
line per PPO update and a final summary. The shipped checkpoints of the ``ces-ppo`` /
``ces-ppo-noheur`` / ``ppo-balance`` solvers are copies of such ``checkpoint.pt`` files
(``learned/checkpoints/``, see docs/ces-ppo.md).
"""

from __future__ import annotations

import argparse

from edgebench.argtypes import nonneg_int as _nonneg_int
from edgebench.argtypes import int_in, parse_assignments
from edgebench.argtypes import positive_float as _pos_float
from edgebench.argtypes import positive_int as _pos_int
from edgebench.argtypes import seed as _seed
from edgebench.errors import InputError

__all__ = ["COMPARED", "add_train_parser", "cmd_train_ces_ppo", "compare", "markdown_tables", "read_rows",
           "summary_table"]

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
                 eval_seeds=args.eval_seeds, eval_every=args.eval_every, threads=args.threads,
                 bc_instances=args.bc_instances, bc_epochs=args.bc_epochs, bc_lr=args.bc_lr,
                 expert_cache=None if args.expert_cache == "none" else args.expert_cache,
                 bc_objective=args.bc_objective, bc_teacher=args.bc_teacher,
                 expert_time_limit=args.expert_time_limit)
    if args.ent_coef is not None:
        targs.ent_coef = args.ent_coef
    targs.hidden = args.hidden
    targs.node_head = args.node_head
    targs.arch = args.arch
    targs.nodes_mix = tuple(args.nodes_mix or ())
    try:
        targs.check()
    except InputError as exc:
        raise InputError(exc.args[0] if exc.args else str(exc), file=CMDLINE, field=exc.field) from None
    summary = train(targs, args.out, resume=args.resume, log=lambda s: print(s, flush=True),
                    tensorboard=not args.no_tensorboard)
    bc = summary.get("bc_composite")
    bc_text = "" if bc is None else f" -> {bc:.4f} (behaviour cloning)"
    print(f"done: {summary['global_step']} steps, held-out composite {summary['initial_composite']:.4f} (random "
          f"init){bc_text} -> {summary['final_composite']:.4f}, {summary['throughput_sps']:.0f} steps/s; checkpoint "
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
               "  edgebench train ces-ppo --steps 400000 --seed 1 --out runs/ces-ppo --resume\n"
               "  edgebench train ces-ppo --steps 40000 --seed 1 --bc-instances 2000 --bc-epochs 60 --ent-coef 0.001 "
               "--node-head --out runs/ces-ppo-bc\n")
    p.set_defaults(func=cmd_train_ces_ppo)
    p.add_argument("--variant", choices=VARIANTS, default="ces-ppo",
                   help="ces-ppo (default), ces-ppo-noheur (no heuristic reward) or ppo-balance")
    p.add_argument("--preset", default="thesis", metavar="P", help="mapping generator preset (default thesis)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="generator parameter override (repeatable)")
    p.add_argument("--steps", type=int_in(0, 10**9), default=100_000, metavar="N",
                   help="environment decisions of PPO in all (default 100000; 0 only with --bc-instances)")
    p.add_argument("--seed", type=_seed, default=1, metavar="S", help="training seed (default 1)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created if needed)")
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    p.add_argument("--num-envs", type=int_in(1, 256), default=4, metavar="E", help="environments (default 4)")
    p.add_argument("--num-steps", type=int_in(1, 4096), default=128, metavar="T", help="rollout length (default 128)")
    p.add_argument("--lr", type=_pos_float, default=3e-4, metavar="X", help="learning rate (default 3e-4)")
    p.add_argument("--eval-seeds", type=int_in(1, 10_000), default=20, metavar="K",
                   help="held-out evaluation instances (default 20)")
    p.add_argument("--eval-every", type=_pos_int, default=20, metavar="U",
                   help="updates between evaluations and checkpoints (default 20)")
    p.add_argument("--threads", type=int_in(1, 256), default=1, metavar="K", help="torch threads (default 1)")
    p.add_argument("--no-tensorboard", action="store_true", help="skip the TensorBoard events")
    p.add_argument("--ent-coef", type=float, default=None, metavar="X", help="entropy coefficient (default 0.01)")
    p.add_argument("--hidden", type=int_in(1, 1024), default=128, metavar="H", help="encoder width (default 128)")
    p.add_argument("--node-head", action="store_true",
                   help="add the per-node scorer to the mapping head (used by the shipped checkpoints)")
    p.add_argument("--arch", choices=("flat", "per-node"), default="flat",
                   help="network: flat (fixed node count, default) or per-node (any node count; the shipped "
                        "checkpoints)")
    p.add_argument("--nodes-mix", type=int_in(1, 1000), nargs="+", metavar="N",
                   help="physical node counts of the training instances, cycled by seed (e.g. 10 20)")
    bc = p.add_argument_group("behaviour-cloning warm start from the exact optimum (a deviation from the thesis)")
    bc.add_argument("--bc-instances", type=int_in(0, 10_000), default=0, metavar="K",
                    help="training instances solved exactly (mapping-exact, composite) and replayed before PPO "
                         "(default 0: pure PPO as in the thesis)")
    bc.add_argument("--bc-epochs", type=int_in(1, 10_000), default=40, metavar="E", help="supervised epochs (default 40)")
    bc.add_argument("--bc-lr", type=_pos_float, default=1e-3, metavar="X", help="supervised learning rate (1e-3)")
    bc.add_argument("--bc-objective", choices=("composite", "L"), default="composite",
                    help="the expert's objective (default composite; L, the load-balance optimum, for ppo-balance)")
    bc.add_argument("--bc-teacher", choices=("exact", "heuristics", "best"), default="exact",
                    help="exact (mapping-exact's optimum, default), heuristics (the best of flexitask, greedy-bw "
                         "and smart by the referee's objective; far cheaper on 20-node networks) or best (the better "
                         "of the two, the exact solve capped by --expert-time-limit; composite only)")
    bc.add_argument("--expert-time-limit", type=_pos_float, default=60.0, metavar="S",
                    help="seconds per exact solve of the teacher (default 60; on timeout its incumbent, if any)")
    bc.add_argument("--expert-cache", default="runs/expert-cache", metavar="DIR",
                    help="JSON cache of the exact solutions (default runs/expert-cache; 'none': no cache)")
    return p


# --------------------------------------------------------------------------------------
# The comparison of docs/ces-ppo.md (python -m edgebench.learned.ces_ppo_cli compare ...)
# --------------------------------------------------------------------------------------

#: the solvers of the comparison: (label, registered name, params)
COMPARED = (("ces-ppo", "ces-ppo", {}), ("ces-ppo-noheur", "ces-ppo-noheur", {}), ("ppo-balance", "ppo-balance", {}),
            ("flexitask", "flexitask", {}), ("smart", "smart", {}), ("random", "random", {}),
            ("greedy-bw", "greedy-bw", {}), ("mapping-exact", "mapping-exact", {"threads": 1}))


def compare(sizes=range(3, 9), seeds=range(42, 72), *, samples: int = 0, time_limit: float = 60.0,
            out: str | None = None, log=print, nodes=(10,), exact: bool = True,
            candidates: tuple[tuple[str, str], ...] = ()) -> list[dict]:
    """Every solver of :data:`COMPARED` (and ``ces-ppo`` with ``samples=K`` when ``samples``;
    each ``(label, checkpoint)`` of ``candidates`` played by its variant's solver under ``label``)
    on the thesis preset with ``task_nodes`` = each size and generator seeds ``seeds``;
    objectives from the referee, gap to the exact composite optimum. Returns the rows (and
    writes them as CSV to ``out``)."""
    import csv
    import time

    import torch

    from edgebench import registry
    from edgebench.instances.generators import generate
    from edgebench.referee import evaluate

    torch.set_num_threads(1)
    solvers = [c for c in COMPARED if exact or c[1] != "mapping-exact"]
    if samples:
        solvers.insert(1, (f"ces-ppo-s{samples}", "ces-ppo", {"samples": samples}))
    from edgebench.learned.ces_ppo import load_policy

    for label, path in candidates:
        solvers.insert(1, (label, load_policy(path).variant, {"checkpoint": str(path)}))
    rows = []
    for P, n, s in ((P, n, s) for P in nodes for n in sizes for s in seeds):
        inst = generate("mapping", "thesis", seed=s, task_nodes=n, **({} if P == 10 else {"nodes": P}))
        got = {}
        for label, name, params in solvers:
            t0 = time.perf_counter()
            res = registry.solve(inst, name, seed=0, time_limit=time_limit, **params)
            dt = time.perf_counter() - t0
            ev = evaluate(inst, res.solution) if res.solution.mapping is not None else None
            o = ev.objectives if ev is not None and ev.feasible else {}
            got[label] = o.get("composite")
            rows.append({"nodes": P, "size": n, "seed": s, "solver": label, "status": res.status,
                         "composite": o.get("composite"), "L": o.get("L"), "D_BW": o.get("D_BW"),
                         "seconds": dt, "decisions": res.stats.get("decisions")})
        best = got.get("mapping-exact")
        for r in rows[-len(solvers):]:
            r["gap"] = None if best is None or r["composite"] is None else (best - r["composite"]) / best
        if log and s == seeds[-1]:
            log(f"{P} nodes, size {n} done")
    if out:
        with open(out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return rows


def markdown_tables(rows: list[dict]) -> str:
    """Mean composite / L / D_BW per size and solver, and the mean gap to the optimum."""
    import numpy as np

    labels = list(dict.fromkeys(r["solver"] for r in rows))
    node_counts = sorted({r.get("nodes", 10) for r in rows})
    if len(node_counts) > 1:  # one table per node count
        return "\n\n".join(f"**{P} physical nodes**\n\n" + markdown_tables([r for r in rows if r.get("nodes", 10) == P])
                             for P in node_counts)
    sizes = sorted({r["size"] for r in rows})

    def cell(rs):
        ok = [r for r in rs if r["composite"] is not None]
        if not ok:
            return "-"
        return " / ".join(f"{np.mean([r[k] for r in ok]):.3f}" for k in ("composite", "L", "D_BW"))

    lines = ["| size | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
    for n in sizes + ["all"]:
        sel = [r for r in rows if n == "all" or r["size"] == n]
        lines.append(f"| {n} | " + " | ".join(cell([r for r in sel if r["solver"] == lab]) for lab in labels) + " |")
    if not any(r["gap"] is not None for r in rows):
        return "\n".join(lines)
    lines += ["", "| mean gap to the exact composite optimum | " + " | ".join(labels) + " |",
              "|---" * (len(labels) + 1) + "|"]
    for n in sizes + ["all"]:
        sel = [r for r in rows if (n == "all" or r["size"] == n) and r["gap"] is not None]
        lines.append(f"| {n} | " + " | ".join(
            f"{100 * np.mean([r['gap'] for r in sel if r['solver'] == lab]):.1f} %"
            if any(r["solver"] == lab for r in sel) else "-" for lab in labels) + " |")
    return "\n".join(lines)


def read_rows(path: str) -> list[dict]:
    """The rows of a ``compare --out`` CSV (InputError for a missing or malformed file)."""
    import csv

    num = {"nodes": int, "size": int, "seed": int, "composite": float, "L": float, "D_BW": float, "gap": float,
           "seconds": float}
    i, k = 0, "file"
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        if not rows:
            raise InputError("no rows", file=path, field="rows")
        for i, r in enumerate(rows):
            for k, conv in num.items():
                if k not in r:
                    raise InputError(f"missing column {k!r}", file=path, field=k)
                r[k] = None if r[k] in ("", None) else conv(r[k])
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", file=path, field="file") from None
    except InputError:
        raise
    except (ValueError, csv.Error) as exc:
        raise InputError(f"row {i + 1}: {exc}", file=path, field=k) from None
    return rows


def _mean_ci(values) -> tuple[float, float]:
    """Mean and half-width of the 95 % Student-t interval (nan with fewer than 2 values)."""
    import math

    import numpy as np
    from scipy.special import stdtrit

    v = np.asarray(values, dtype=float)
    if v.size < 2:
        return float(v.mean()), math.nan
    return float(v.mean()), float(stdtrit(v.size - 1, 0.975) * v.std(ddof=1) / math.sqrt(v.size))


def summary_table(rows: list[dict], reference: str = "flexitask") -> str:
    """Per node count and solver: mean composite / L / D_BW ± the 95 % Student-t interval over
    the generator seeds (each seed's value is its mean over the job sizes), and the paired
    difference to ``reference`` on composite and D_BW (same seeds; a missing or infeasible run
    counts as composite 0, L 1, D_BW 0 — none occurred in the documented runs)."""
    import numpy as np

    def per_seed(rs, solver, key):
        fill = {"composite": 0.0, "L": 1.0, "D_BW": 0.0}[key]
        seeds = sorted({r["seed"] for r in rs})
        return np.array([np.mean([fill if r[key] is None else r[key] for r in rs
                                  if r["seed"] == s and r["solver"] == solver]) for s in seeds])

    def fmt(m, h, signed=False):
        return f"{m:+.3f} ± {h:.3f}" if signed else f"{m:.3f} ± {h:.3f}"

    out = []
    for P in sorted({r.get("nodes", 10) for r in rows}):
        rs = [r for r in rows if r.get("nodes", 10) == P]
        labels = list(dict.fromkeys(r["solver"] for r in rs))
        out += [f"**{P} physical nodes** ({len({r['seed'] for r in rs})} seeds x {len({r['size'] for r in rs})} "
                f"job sizes; mean ± 95 % CI over the seeds)", "",
                f"| solver | composite | L | D_BW | composite − {reference} | D_BW − {reference} |",
                "|---|---|---|---|---|---|"]
        for lab in labels:
            cells = [fmt(*_mean_ci(per_seed(rs, lab, k))) for k in ("composite", "L", "D_BW")]
            for k in ("composite", "D_BW"):
                if reference in labels and lab != reference:
                    cells.append(fmt(*_mean_ci(per_seed(rs, lab, k) - per_seed(rs, reference, k)), signed=True))
                else:
                    cells.append("-")
            out.append(f"| {lab} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out).rstrip()


def _main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m edgebench.learned.ces_ppo_cli",
                                description="compare: the CES-PPO comparison table of docs/ces-ppo.md")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compare")
    c.add_argument("--sizes", default="3-8", help="job sizes lo-hi (default 3-8)")
    c.add_argument("--seeds", type=_pos_int, default=30, help="seeds per size, 42.. (default 30)")
    c.add_argument("--first-seed", type=_nonneg_int, default=42)
    c.add_argument("--samples", type=_nonneg_int, default=0, help="also ces-ppo with samples=K")
    c.add_argument("--out", default=None, help="CSV of every run")
    c.add_argument("--candidate", action="append", default=[], metavar="LABEL=CHECKPOINT",
                   help="also play a CES checkpoint (by its variant's solver) under LABEL (repeatable)")
    c.add_argument("--from-csv", default=None, metavar="CSV",
                   help="print the tables of an earlier --out CSV, run nothing")
    c.add_argument("--nodes", type=_pos_int, nargs="+", default=[10], help="physical node counts (default 10)")
    c.add_argument("--no-exact", action="store_true", help="leave mapping-exact (and the gap table) out")
    import sys

    a = p.parse_args(argv)
    try:
        rows = read_rows(a.from_csv) if a.from_csv else _run_compare(a)
    except InputError as err:
        print(f"edgebench: error: {err.line()}", file=sys.stderr)
        return 2
    print(markdown_tables(rows))
    print()
    print(summary_table(rows))
    return 0


def _run_compare(a: argparse.Namespace) -> list[dict]:
    lo, hi = (int(x) for x in a.sizes.split("-"))
    cands = []
    for c in a.candidate:
        label, sep, path = c.partition("=")
        if not sep or not label or not path:
            raise InputError(f"expected LABEL=CHECKPOINT, got {c!r}", file=CMDLINE, field="--candidate")
        cands.append((label, path))
    return compare(range(lo, hi + 1), range(a.first_seed, a.first_seed + a.seeds), samples=a.samples, out=a.out,
                   nodes=tuple(a.nodes), exact=not a.no_exact, candidates=tuple(cands))


if __name__ == "__main__":
    raise SystemExit(_main())
