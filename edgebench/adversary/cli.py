"""``edgebench adversary``: search for instances where a solver breaks, and re-check them."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from edgebench.argtypes import CMDLINE, parse_assignments, positive_float, positive_int, seconds, seed
from edgebench.errors import InputError
from edgebench.text import printable

PROG = "edgebench"


def cmd_adversary(args: argparse.Namespace) -> int:
    from edgebench.adversary import certificate
    from edgebench.adversary.search import Config, contender, search

    if args.action == "check":
        if not args.folders:
            raise InputError("give one or more certificate folders", file=CMDLINE, field="FOLDER")
        limit = certificate.RERUN_TIME_LIMIT if args.reference_time_limit is None else args.reference_time_limit
        failed = False
        for folder in args.folders:  # one line each: OK on stdout, the reason on stderr (then exit 2)
            try:
                c = certificate.check(folder, time_limit=limit)
            except InputError as err:
                print(f"{PROG}: error: {err.line()}", file=sys.stderr)
                failed = True
                continue
            t, r = c["target"], c["reference"]
            print(printable(f"OK {folder}: {t['solver']} {t['value']:.6g} / {r['solver']} {r['value']:.6g} "
                            f"= {c['checked_ratio']:.4f} ({c['claim']}); reference: {c['reference_proof']}"))
        return 2 if failed else 0
    if args.family is None:
        raise InputError("search needs --family", file=CMDLINE, field="--family")
    if args.output is None:
        raise InputError("search needs -o DIR", file=CMDLINE, field="-o")
    from edgebench.cli import _import_plugins

    _import_plugins(args)

    def side(name: str) -> Any:
        try:
            return contender(args.family, solver=getattr(args, name), command=getattr(args, f"{name}_command"),
                             params=parse_assignments(getattr(args, f"{name}_param"), f"--{name}-param"),
                             time_limit=getattr(args, f"{name}_time_limit"), field_name=f"--{name}")
        except InputError as err:
            field = err.field or ""
            raise InputError(err.reason, file=CMDLINE, field=field if field.startswith("--")
                             else f"--{name}-param.{field.removeprefix('params.')}") from None

    try:
        config = Config(family=args.family, target=side("target"), reference=side("reference"), size=args.size,
                        preset=args.preset or "", start_seed=args.start_seed, seed=args.seed, evals=args.evals,
                        seconds=args.seconds, t0=args.t0, t_end=args.t_end, moves=args.moves,
                        instance_id=args.id or "")
    except InputError as err:
        raise InputError(err.reason, file=CMDLINE, field=err.field) from None
    try:
        summary = search(config, args.output, resume=args.resume, progress=not args.quiet)
    except InputError as err:
        if err.file is not None:
            raise
        raise InputError(err.reason, file=CMDLINE, field=err.field) from None
    print(json.dumps(summary, indent=1))
    return 0


def add_parser(sub: Any) -> None:
    from edgebench.cli import _add_plugin_option, _sub

    p = _sub(sub, "adversary", "search for instances where a solver is far from a reference (certified ratios)",
             "search: simulated annealing over the instances of one family (moves inside the generators' "
             "realistic ranges, size fixed by --size) maximising value(target) / value(reference) in the "
             "objective's worsening direction (min: larger, max: smaller). Both solutions are re-scored by the "
             "referee; every improvement is written to DIR/improvements/NNNN/ (instance, both "
             "solutions, certificate.json) and DIR/best links to the newest (both replaced atomically: a killed "
             "search resumes cleanly). With an exact reference the ratio is certified: for min the "
             "target's true ratio to the optimum is >= T/R, for max <= T/R; where a bound B is known the "
             "certificate adds the other side T/B. Resumable (DIR/state.json, --resume). "
             "check: re-check certificate folders: every number recomputed (both values by the referee, the ratio, the "
             "bound, the ratio limit, the claim's words, the reference's optimality; a 'solver: NAME' bound by "
             "re-running NAME for --reference-time-limit seconds, default 60); what cannot be verified is refused: "
             "one line each, exit code 2. Method: docs/adversary.md.",
             "  edgebench adversary search --family offloading --size 10 --target heft "
             "--reference offloading-cpsat --seconds 600 -o runs/adv-heft\n"
             "  edgebench adversary search --family placement --size 8 --target optimus "
             "--reference placement-milp --evals 300 --seed 1 -o runs/adv-optimus\n"
             "  edgebench adversary search --family mapping --size 10 --target-command "
             "'python3 my.py {instance} {solution}' --reference mapping-exact --seconds 60 -o runs/adv-mine\n"
             "  edgebench adversary search ... -o runs/adv-heft --resume     # continue a stopped search\n"
             "  edgebench adversary check runs/adv-heft/best\n",
             cmd_adversary)
    p.add_argument("action", choices=("search", "check"))
    p.add_argument("folders", nargs="*", metavar="FOLDER", help="check: certificate folders")
    p.add_argument("--family", choices=("placement", "mapping", "offloading"))
    for name, what in (("target", "the solver searched against"), ("reference", "the solver compared with "
                                                                                "(exact: certified ratio)")):
        p.add_argument(f"--{name}", metavar="NAME", help=f"{what}: registered, plugin or MODULE:FUNCTION")
        p.add_argument(f"--{name}-command", metavar="CMD", help=f"instead of --{name}: an external program "
                       "({instance}, {solution}, {time_limit}, {seed} substituted; docs/cli.md)")
        p.add_argument(f"--{name}-param", action="append", metavar="KEY=VALUE", help="solver parameter (repeatable)")
        p.add_argument(f"--{name}-time-limit", type=seconds, metavar="S", help="seconds per solve (default: the "
                       "solver's default)" + ("; check: seconds of the reference's re-run (default 60)"
                                              if name == "reference" else ""))
    p.add_argument("--size", type=positive_int, default=10, metavar="N",
                   help="tasks (placement, offloading) or physical nodes (mapping); default 10")
    p.add_argument("--preset", metavar="P", help="generator preset of the start instance (default: placement "
                   "synthetic-3, offloading heft-random, mapping thesis)")
    p.add_argument("--start-seed", type=seed, default=0, metavar="S", help="generator seed of the start instance")
    p.add_argument("--seed", type=seed, default=0, metavar="S", help="search seed (moves, acceptance; default 0)")
    p.add_argument("--evals", type=positive_int, metavar="N", help="budget: instances evaluated (reproducible)")
    p.add_argument("--seconds", type=seconds, metavar="S", help="budget: wall-clock seconds (anytime)")
    p.add_argument("--t0", type=positive_float, default=0.05, help="start temperature (log-ratio units; default 0.05)")
    p.add_argument("--t-end", type=positive_float, default=0.001, help="final temperature (default 0.001)")
    p.add_argument("--moves", type=positive_int, default=1, metavar="K", help="moves per proposal (default 1)")
    p.add_argument("--id", metavar="ID", help="instance id of the found instances (default "
                   "FAMILY-adversarial-TARGET-nSIZE-sSEED)")
    p.add_argument("--resume", action="store_true", help="continue the search in -o DIR from its state.json")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("-o", "--output", metavar="DIR", help="search folder")
    _add_plugin_option(p)
