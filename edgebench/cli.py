"""The ``edgebench`` command line.

Sub-commands: ``generate``, ``validate``, ``info``, ``schema``, ``evaluate``, ``convert``,
``solvers``, ``solve`` and ``demo`` (``edgebench COMMAND --help`` shows each one's options
and examples; ``docs/cli.md`` is the reference).

Errors: every problem with the user's input — a bad file, a solution for another instance,
an unknown solver, family or preset, a bad ``--set`` / ``--param`` value — is reported as
exactly one line on stderr, ``edgebench: error: <file>: <field>: <reason>``, with exit code 2
(options given on the command line are reported with ``<command line>`` as the file).
Output files are written only once everything has been validated and computed, and
atomically (:func:`edgebench.instances.io.write_json`), so a failure never leaves a partial
file.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sqlite3
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Sequence

from edgebench.argtypes import parse_assignments  # noqa: F401  (public: used by tests and other CLIs)
from edgebench.argtypes import positive_int as _positive_int
from edgebench.argtypes import seconds as _positive_float
from edgebench.argtypes import seed as _seed
from edgebench.errors import InputError
from edgebench.text import printable

PROG = "edgebench"
#: the "file" named in error lines about command-line options
CMDLINE = "<command line>"
FAMILIES = ("placement", "mapping", "offloading")

#: the demo's instances: (family, preset, overrides)
DEMO_INSTANCES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("placement", "synthetic-3", {"num_tasks": 24}),
    ("mapping", "thesis", {}),
    ("offloading", "heft-random", {"tasks": 10}),
)
DEMO_SOLVER = "random"
DEMO_DIR = Path("runs") / "demo"
#: instances one ``generate`` call may make (docs/cli.md)
MAX_GENERATE_COUNT = 1000


# ======================================================================================
# helpers
# ======================================================================================


def _cmdline_error(field: str, reason: str) -> InputError:
    return InputError(reason, file=CMDLINE, field=field)


def _safe_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")
    return name or "instance"


def _finite(data: Any) -> Any:
    """JSON has no inf / nan: non-finite floats are printed as null."""
    if isinstance(data, float):
        return data if data == data and data not in (float("inf"), float("-inf")) else None
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_finite(v) for v in data]
    return data


def _print_json(data: Any) -> None:
    print(json.dumps(_finite(data), indent=2, ensure_ascii=False, allow_nan=False))


def _fmt_num(x: Any) -> str:
    if isinstance(x, bool) or x is None:
        return json.dumps(x)
    if isinstance(x, float):
        if x.is_integer() and abs(x) < 1e15:
            return str(int(x))
        return f"{x:.6g}"
    return str(x)


def _print_tree(data: dict[str, Any], indent: int = 0) -> None:
    pad = "  " * indent
    for key, value in data.items():
        if isinstance(value, dict):
            print(f"{pad}{key}:")
            _print_tree(value, indent + 1)
        elif isinstance(value, (list, tuple)):
            print(f"{pad}{key}: " + ", ".join(_fmt_num(v) if not isinstance(v, str) else v for v in value))
        else:
            print(f"{pad}{key}: {_fmt_num(value)}")


def _load_json_any(path: str):
    """Read a file and tell an instance from a solution (a solution has ``instance_hash``)."""
    from edgebench.instances import io

    data = io.read_json(path)
    if isinstance(data, dict) and "instance_hash" in data:
        return "solution", io.solution_from_dict(data, file=path)
    return "instance", io.instance_from_dict(data, file=path)


def _check_family(family: str, field: str) -> None:
    if family not in FAMILIES:
        raise _cmdline_error(field, f"unknown family {family!r} (expected {', '.join(FAMILIES)})")


def _get_solver(name: str, family: str | None = None):
    from edgebench import registry

    if registry.is_function_spec(name):
        try:
            info = registry.resolve(name)
        except ValueError as exc:
            raise _cmdline_error("--solver", f"cannot use solver {name!r}: {exc}") from None
    else:
        info = None
    try:
        info = info or registry.get(name)
    except registry.SolverLoadError as exc:  # it exists, but its module failed to import: say why
        raise _cmdline_error("--solver", str(exc)) from None
    except KeyError:
        known = ", ".join(s.name for s in registry.solvers())
        raise _cmdline_error("--solver", f"unknown solver {name!r} (known: {known})") from None
    if family is not None and family not in info.families:
        raise _cmdline_error("--solver", f"solver {name!r} does not support family {family!r} "
                                         f"(supports {', '.join(info.families)})")
    return info


def _run_solver(instance, name: str, *, time_limit: float | None, seed: int, params: dict[str, Any]):
    """Check the parameters (the registry's one check), then run; no time limit means the
    solver's default (``registry.DEFAULT_TIME_LIMITS``)."""
    from edgebench import registry

    info = _get_solver(name, instance.family)
    registry.check_params(info, params, file=CMDLINE)
    try:
        return info.fn(instance, time_limit=registry.check_time_limit(time_limit, info), seed=seed, **params)
    except InputError as err:
        if err.file is None:
            raise err.with_file(CMDLINE) from None
        raise


def _check_output_file(path: str) -> None:
    """Refuse, before any work, an output file that cannot be one."""
    p = Path(path)
    if p.is_dir():
        raise _cmdline_error("-o", f"{path} is a folder; give a file name (.json or .json.gz)")
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise _cmdline_error("-o", f"{parent} is not a folder")
            break
    from edgebench.instances.io import output_target

    output_target(path)  # a device, FIFO or socket (directly or by a link) is refused now, not after solving


def _check_output_dir(path: str) -> None:
    p = Path(path)
    for q in (p, *p.parents):
        if q.exists():
            if not q.is_dir():
                raise _cmdline_error("-o", f"{q} exists and is not a folder")
            break


# ======================================================================================
# summaries (info)
# ======================================================================================


def _span(values: Sequence[float]) -> dict[str, float]:
    return {"first": min(values), "last": max(values)} if values else {}


def _type_counts(counts: Counter, limit: int = 12) -> dict[str, Any]:
    if len(counts) <= limit:
        return dict(sorted(counts.items()))
    return {"distinct": len(counts), "most_common": dict(counts.most_common(limit))}


def summarize(instance) -> dict[str, Any]:
    """A family summary of an instance: counts, capacities, arrivals, settings."""
    fam = instance.family
    p = instance.payload
    if fam == "placement":
        caps = [c.capacity for c in p.clusters]
        arrivals = [t.arrival for t in p.tasks]
        return {
            "clusters": len(p.clusters),
            "capacities": [f"{c.cpu}cpu/{c.gpu}gpu" + (f"/{c.memory}mem" if c.memory is not None else "")
                           for c in caps],
            "total_capacity": {"cpu": sum(c.cpu for c in caps), "gpu": sum(c.gpu for c in caps)},
            "tasks": len(p.tasks),
            "task_types": _type_counts(Counter(t.type for t in p.tasks)),
            "arrivals": _span(arrivals),
            "horizon_steps": max(arrivals) + 1,
            "mean_eligible_clusters": round(sum(len(t.eligible) for t in p.tasks) / len(p.tasks), 4),
            "performance": p.performance.kind,
            "variant": p.variant,
            "pending_size": p.pending_size,
            "step_seconds": p.step_seconds,
            "switching_overhead": p.switching_overhead,
            "noise": p.noise,
            "noise_model": p.noise_model,
        }
    if fam == "mapping":
        from edgebench.instances import semantics

        n = len(p.nodes)
        connected = semantics.route_table(p).strongly_connected()
        sizes = [len(j.tasks) for j in p.jobs]
        return {
            "nodes": n,
            "links": len(p.links),
            "strongly_connected": connected,
            "total_capacity": {"cpu": sum(x.cpu for x in p.nodes), "ram": sum(x.ram for x in p.nodes),
                               "bandwidth": sum(x.bandwidth for x in p.links)},
            "background": {"cpu": sum(x.bg_cpu for x in p.nodes), "ram": sum(x.bg_ram for x in p.nodes)},
            "jobs": len(p.jobs),
            "task_nodes": {"total": sum(sizes), "min": min(sizes), "max": max(sizes)},
            "task_links": sum(len(j.links) for j in p.jobs),
            "demand": {"cpu": sum(t.cpu for j in p.jobs for t in j.tasks),
                       "ram": sum(t.ram for j in p.jobs for t in j.tasks)},
            "arrivals": _span([j.arrival for j in p.jobs]),
            "routing": p.objective.routing,
            "bandwidth_levels": p.objective.bandwidth_levels,
            "weights": list(p.objective.weights),
            "include_background": p.objective.include_background,
        }
    # offloading
    edge = [s for s in p.servers if not s.is_cloud]
    return {
        "servers": len(p.servers),
        "edge_servers": len(edge),
        "cloud_servers": len(p.servers) - len(edge),
        "edge_capacity": {"cpu": sum(s.cpu for s in edge), "mem": sum(s.mem for s in edge)},
        "images": sorted({f.image for w in p.workflows for t in w.tasks for f in t.functions}),
        "workflows": len(p.workflows),
        "tasks": sum(len(w.tasks) for w in p.workflows),
        "edges": sum(len(w.edges) for w in p.workflows),
        "arrivals": _span([w.arrival for w in p.workflows]),
        "bandwidth": p.bandwidth,
        "image_pull_delay": p.image_pull_delay,
    }


def describe(path: str) -> dict[str, Any]:
    """What ``info`` prints, as data."""
    from edgebench.instances import io

    kind, model = _load_json_any(path)
    if kind == "instance":
        return {"file": path, "kind": "instance", "hash": io.content_hash(model), "family": model.family,
                "id": model.id, "name": model.name, "format_version": model.format_version,
                "generator": model.meta.get("generator"), "summary": summarize(model)}
    sol = model
    return {"file": path, "kind": "solution", "hash": io.content_hash(sol), "family": sol.family,
            "instance_id": sol.instance_id, "instance_hash": sol.instance_hash, "solver": sol.solver,
            "params": dict(sol.params), "seed": sol.seed, "status": sol.status,
            "reported_objective": sol.objective, "reported_bound": sol.bound, "wall_time": sol.wall_time}


# ======================================================================================
# commands
# ======================================================================================


def _generator_field(field: str | None) -> str:
    """The command-line option behind a generator's InputError field."""
    if field in ("seed", "preset"):
        return f"--{field}"
    if field == "family":
        return "FAMILY"
    if field is None:
        return "--set"
    return field if field.startswith("--") else f"--set {field}"


def cmd_generate(args: argparse.Namespace) -> int:
    from edgebench.instances import io
    from edgebench.instances.generators import generate, presets

    _check_family(args.family, "FAMILY")
    if args.count > MAX_GENERATE_COUNT:  # every instance is built in memory before any is written
        raise _cmdline_error("--count", f"at most {MAX_GENERATE_COUNT} instances per call, got {args.count}")
    _check_output_dir(args.output)
    known = sorted(p for f, p in presets(args.family) if f == args.family)
    if args.preset not in known:
        raise _cmdline_error("--preset", f"unknown preset {args.preset!r} for family {args.family} "
                                         f"(known: {', '.join(known)})")
    overrides = parse_assignments(args.set, "--set")
    instances = []
    for k in range(args.count):
        seed = args.seed + k
        try:
            inst = generate(args.family, args.preset, seed=seed, **overrides)
        except InputError as err:
            if err.file is None:
                raise InputError(err.reason, file=CMDLINE, field=_generator_field(err.field)) from None
            raise
        except (TypeError, ValueError) as exc:
            if not overrides:
                raise
            raise _cmdline_error("--set", f"bad override value: {exc}") from None
        instances.append(inst)
    # file names: the instance id; ids repeated across seeds get the seed appended
    ids = Counter(inst.id for inst in instances)
    suffix = ".json.gz" if args.gzip else ".json"
    out_dir = Path(args.output)
    targets = []
    for k, inst in enumerate(instances):
        stem = _safe_name(inst.id if ids[inst.id] == 1 else f"{inst.id}-s{args.seed + k}")
        targets.append((out_dir / f"{stem}{suffix}", inst))
    from edgebench.instances.sets import check_generated_folder, write_generated_manifest

    check_generated_folder(out_dir, args.family)
    fresh = [p for p, _ in targets if not p.exists()]
    try:
        for path, inst in targets:
            io.write_json(path, inst)
            print(path)
    except BaseException:  # a full disk or a signal: no partial set of new files stays (issue 28)
        for p in fresh:
            p.unlink(missing_ok=True)
        raise

    write_generated_manifest(out_dir, args.family, args.preset, overrides,
                             [(p, inst, args.seed + k) for k, (p, inst) in enumerate(targets)])
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from edgebench.instances import io

    from edgebench.instances.setcheck import check_set, is_manifest

    instance = io.load_instance(args.instance) if args.instance else None
    for path in args.paths:
        if is_manifest(path):  # a set: its folder or its manifest.json
            print(check_set(path))
            sys.stdout.flush()
            continue
        kind, model = _load_json_any(path)
        if kind == "solution":
            if instance is not None:
                io.solution_from_dict(model.model_dump(mode="json"), file=path, instance=instance)
            print(f"OK {path} {model.family} {model.instance_id}")
        else:
            print(f"OK {path} {model.family} {model.id}")
        sys.stdout.flush()
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    data = describe(args.path)
    if args.json:
        _print_json(data)
    else:
        _print_tree({k: v for k, v in data.items() if v is not None})
    return 0


def schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the instance or solution format."""
    from edgebench.instances.model import Instance
    from edgebench.solution import Solution

    model = Instance if kind == "instance" else Solution
    out = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    out.update(model.model_json_schema())
    return out


def cmd_schema(args: argparse.Namespace) -> int:
    _print_json(schema(args.kind))
    return 0


def _import_plugins(args: argparse.Namespace) -> None:
    """``--plugin FILE`` (repeatable): import the files, as ``edgebench run`` does."""
    plugins = list(getattr(args, "plugin", None) or [])
    if plugins:  # the suite module (and the referee it imports) only when there is a plugin
        from edgebench.runner.suite import import_plugins

        import_plugins(plugins, field="--plugin")


def _add_plugin_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plugin", action="append", metavar="FILE",
                   help="Python file imported first (it may register solvers; repeatable)")


def cmd_evaluate(args: argparse.Namespace) -> int:
    from edgebench.instances import io
    from edgebench.referee import evaluate

    _import_plugins(args)
    instance = io.load_instance(args.instance)
    solution = io.load_solution(args.solution, instance)
    ev = evaluate(instance, solution)
    _print_json(ev.as_dict())
    return 0


def cmd_solvers(args: argparse.Namespace) -> int:
    from edgebench import registry

    if args.family is not None:
        _check_family(args.family, "--family")
    _import_plugins(args)
    infos = registry.solvers(args.family)
    if args.json:
        _print_json([{**s.as_dict(), "origin": s.origin} for s in infos])
        return 0
    rows = [(s.name, s.kind, ",".join(s.families), s.origin, s.description) for s in infos]
    head = ("name", "kind", "families", "origin", "description")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(4)]
    for r in [head] + rows:
        print("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4])
    return 0


def cmd_sets(args: argparse.Namespace) -> int:
    from edgebench.instances import sets

    if args.action == "build":
        if not args.recipes:
            raise _cmdline_error("RECIPE", "name at least one recipe (a shipped set's name or a .toml file)")
        out = Path(args.output) if args.output else None
        if out is not None:
            _check_output_dir(args.output)
        for r in args.recipes:
            print(sets.build_set(r, out_dir=out))
        return 0
    if args.action == "bks":
        from edgebench.instances.bks import instance_gaps, write_bks
        from edgebench.runner.plots import gap_strips

        page = write_bks(args.output or "docs/bks.md")
        print(page)
        for path in gap_strips(instance_gaps(), page.parent / "img" / "bks-gaps.png"):
            print(path)
        from edgebench.instances.references import disagreements

        bad = disagreements()  # a published optimum / bound that contradicts our certificate
        for line in bad:
            print(f"edgebench: error: disagrees with the published reference: {line}", file=sys.stderr)
        return 1 if bad else 0
    if args.recipes or args.output:
        raise _cmdline_error("RECIPE", "recipes and -o go with 'build' (or -o with 'bks')")
    rows = []
    for name in sets.list_sets():
        m = sets.read_manifest(name)
        rows.append({"name": name, "family": m["family"], "instances": len(m["instances"]),
                     "folder": str(sets.DATA_DIR / name), "description": m["description"]})
    if args.json:
        _print_json(rows)
        return 0
    head = ("name", "family", "instances", "description")
    table = [(r["name"], r["family"], str(r["instances"]), r["description"]) for r in rows]
    widths = [max(len(r[i]) for r in table + [head]) for i in range(3)]
    for r in [head] + table:
        print("  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3])
    return 0


def _objective_line(ev) -> str:
    value = ev.objectives.get(ev.primary)
    shown = "n/a" if value is None else _fmt_num(float(value))
    return f"{ev.primary}: {shown} ({ev.sense}, referee)"


def cmd_solve(args: argparse.Namespace) -> int:
    from edgebench.instances import io
    from edgebench.referee import evaluate

    _check_output_file(args.output)
    if (args.solver is None) == (args.command is None):
        raise _cmdline_error("--solver", "give exactly one of --solver NAME and --command CMD")
    _import_plugins(args)
    instance = io.load_instance(args.instance)
    params = parse_assignments(args.param, "--param")
    solver = args.solver
    if args.command is not None:  # an external program: the solver function of edgebench.external
        from edgebench.external import SOLVER

        solver, params = SOLVER, {**params, "command": args.command}
    _get_solver(solver, instance.family)
    from edgebench import kernels

    if kernels.loaded():  # the solver calls compiled kernels: compile them now, before its clock starts
        kernels.warm_kernels()
    from edgebench.external import contained_children

    with contained_children():  # a signal or Ctrl-C leaves no program, cbc or HiGHS process behind
        result = _run_solver(instance, solver, time_limit=args.time_limit, seed=args.seed, params=params)
    ev = evaluate(instance, result.solution)
    path = io.write_json(args.output, result.solution)
    print(f"instance: {instance.id} ({instance.family})")
    tl = args.time_limit
    if tl is None and getattr(args, "solver", None):
        tl = _get_solver(args.solver).default_time_limit
    print(f"solver: {args.solver or args.command} (seed {args.seed}" + (f", time limit {tl:g} s)" if tl else ", no time limit)"))
    print(f"status: {result.solution.status}")
    print(f"feasible: {'true' if ev.feasible else 'false'}")
    print(_objective_line(ev))
    print(f"wall_time: {result.runtime:.3f} s")
    print(f"solution: {path}")
    return 0


def run_demo(seed: int = 0, *, sets: bool = True) -> list[dict[str, Any]]:
    """Solve with the random baseline and evaluate with the referee: one freshly generated
    small instance per family (``source`` "generated"), then every instance of every embedded
    instance set (``source`` = the set's name). One row per instance."""
    from edgebench.instances import sets as instance_sets
    from edgebench.instances.generators import generate
    from edgebench.referee import evaluate

    todo = [("generated", family, generate(family, preset, seed=seed, **overrides), None)
            for family, preset, overrides in DEMO_INSTANCES]
    if sets:
        for name in instance_sets.list_sets():
            files = instance_sets.set_files(name)
            for inst, file in zip(instance_sets.load_set(name), files, strict=True):
                todo.append((name, inst.family, inst, file))
    rows = []
    for source, family, inst, file in todo:
        result = _run_solver(inst, DEMO_SOLVER, time_limit=60.0, seed=seed, params={})
        ev = evaluate(inst, result.solution)
        rows.append({"source": source, "family": family, "instance": inst, "solution": result.solution,
                     "evaluation": ev, "runtime": result.runtime, "file": file})
    return rows


def cmd_demo(args: argparse.Namespace) -> int:
    from edgebench.instances import io

    _check_output_dir(args.output)
    rows = run_demo(args.seed, sets=not args.no_sets)
    out = Path(args.output)
    table = []
    summary = []
    for r in rows:
        inst, sol, ev = r["instance"], r["solution"], r["evaluation"]
        table.append((r["family"], inst.id, sol.solver, sol.status, "yes" if ev.feasible else "NO", r["source"],
                      f"{ev.primary} = " + ("n/a" if ev.primary not in ev.objectives
                                            else _fmt_num(float(ev.objectives[ev.primary])))))
        stem = _safe_name(inst.id)
        ipath = out / "instances" / f"{stem}.json"
        if r["file"] is None:
            io.write_json(ipath, inst)
        else:  # a shipped file is already in the on-disk form (byte-stable): copy its text
            io.write_text_atomic(ipath, io.read_json_text(r["file"]))
        spath = io.write_json(out / "solutions" / f"{stem}.{sol.solver}.json", sol)
        summary.append({"source": r["source"], "family": r["family"], "instance": str(ipath),
                        "solution": str(spath), "solver": sol.solver, "status": sol.status, **ev.as_dict()})
    io.write_json(out / "summary.json", {"seed": args.seed, "runs": summary})
    head = ("family", "instance", "solver", "status", "feasible", "source", "primary objective (referee)")
    ncol = len(head) - 1
    widths = [max(len(str(x[i])) for x in table + [head]) for i in range(ncol)]
    for x in [head] + table:
        print("  ".join(str(x[i]).ljust(widths[i]) for i in range(ncol)) + "  " + x[ncol])
    print(f"{len(rows)} instances solved; instances, solutions and summary.json written to {out}")
    ok = all(r["evaluation"].feasible for r in rows)
    if not ok:
        print(f"{PROG}: demo: some solutions are infeasible", file=sys.stderr)
    return 0 if ok else 1


# ======================================================================================
# parser
# ======================================================================================

_FMT = argparse.RawDescriptionHelpFormatter


def _sub(sub, name: str, help_: str, description: str, examples: str, func: Callable) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help_, description=description, formatter_class=_FMT,
                       epilog="examples:\n" + examples)
    p.set_defaults(func=func)
    return p


class _Version(argparse.Action):
    """``--version``: argparse's version action, reading the version only when asked."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show program's version number and exit"):
        super().__init__(option_strings, dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        import edgebench

        print(f"{PROG} {edgebench.__version__}")
        parser.exit()


def _parser_head() -> tuple[argparse.ArgumentParser, Any]:
    parser = argparse.ArgumentParser(
        prog=PROG, formatter_class=_FMT,
        description="edgebench: benchmark suite for joint placement and resource allocation in edge "
                    "computing (families: placement, mapping, offloading).",
        epilog="examples:\n"
               "  edgebench demo                                   # generate, solve, evaluate, report\n"
               "  edgebench generate placement --preset synthetic-3 --seed 1 -o instances/\n"
               "  edgebench solve inst.json --solver random -o sol.json\n"
               "  edgebench evaluate inst.json sol.json\n"
               "  edgebench COMMAND --help                         # options of one command\n\n"
               "Input errors are reported as one line 'edgebench: error: <file>: <field>: <reason>' "
               "with exit code 2.")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    return parser, sub


def _add_generate(sub) -> None:
    p = _sub(sub, "generate", "generate instances from a preset",
             "Generate COUNT instances of FAMILY from a preset; instance k uses seed SEED+k. Files are "
             "named <id>.json (or .json.gz with --gzip) and are written only once every instance was "
             "generated; their paths are printed.",
             "  edgebench generate placement --preset synthetic-3 --set num_tasks=24 -o out/\n"
             "  edgebench generate mapping --preset thesis --set topology=ring --seed 7 --count 5 -o out/\n"
             "  edgebench generate offloading --preset heft-random --set tasks=10 --gzip -o out/\n",
             cmd_generate)
    from edgebench.instances.generators import presets

    p.epilog += "\npresets:\n" + "".join(f"  {f:<10} {name:<15} {desc}\n"
                                         for (f, name), desc in sorted(presets().items()))
    p.add_argument("family", metavar="FAMILY", help="placement, mapping or offloading")
    p.add_argument("--preset", required=True, metavar="P", help="generator preset (listed below)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a generator parameter (repeatable); VALUE is read as JSON, else as text")
    p.add_argument("--seed", type=_seed, default=0, metavar="S", help="seed of the first instance (default 0)")
    p.add_argument("--count", type=_positive_int, default=1, metavar="N", help=f"number of instances (default 1, at most {MAX_GENERATE_COUNT})")
    p.add_argument("--gzip", action="store_true", help="write .json.gz files")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="output folder (created if needed)")


def _add_validate(sub) -> None:
    p = _sub(sub, "validate", "validate instance and solution files",
             "Validate each file (instance or solution: a solution has an 'instance_hash' key) and print "
             "'OK <path> <family> <id>'. A folder or a manifest.json is an instance set: its manifest, every "
             "instance (id, content hash), every shipped solution (re-scored by the referee) and its recipe or "
             "generator are checked (docs/generators.md). Stops at the first bad file with its error line and exit code 2.",
             "  edgebench validate inst.json sol.json\n"
             "  edgebench validate runs/demo/instances/*.json\n"
             "  edgebench validate --instance inst.json sol.json   # also check the solution's instance hash\n"
             "  edgebench validate my-set/                          # a whole set (or my-set/manifest.json)\n",
             cmd_validate)
    p.add_argument("paths", nargs="+", metavar="PATH", help=".json or .json.gz files, set folders or manifests")
    p.add_argument("--instance", metavar="INSTANCE", help="check that solutions were made for this instance")


def _add_info(sub) -> None:
    p = _sub(sub, "info", "describe an instance (hash, family, summary)",
             "Print an instance's content hash (sha256 of its canonical JSON), family, id, name and a "
             "family summary (counts, capacities, arrivals, settings); for a solution, its instance, "
             "solver, status and reported values.",
             "  edgebench info inst.json\n"
             "  edgebench info --json inst.json.gz\n",
             cmd_info)
    p.add_argument("path", metavar="PATH")
    p.add_argument("--json", action="store_true", help="print JSON")


def _add_schema(sub) -> None:
    p = _sub(sub, "schema", "print the JSON Schema of the instance or solution format",
             "Print the JSON Schema (draft 2020-12, from the pydantic models) of instance or solution "
             "files.",
             "  edgebench schema instance > instance.schema.json\n"
             "  edgebench schema solution\n",
             cmd_schema)
    p.add_argument("kind", choices=("instance", "solution"))


def _add_evaluate(sub) -> None:
    p = _sub(sub, "evaluate", "score a solution with the referee",
             "Evaluate SOLUTION on INSTANCE with the referee and print JSON with the keys feasible, "
             "violations, objectives, primary and sense. An infeasible solution is a result (exit 0); a "
             "solution made for another instance is an input error (exit 2).",
             "  edgebench evaluate inst.json sol.json\n",
             cmd_evaluate)
    p.add_argument("instance", metavar="INSTANCE")
    p.add_argument("solution", metavar="SOLUTION")
    _add_plugin_option(p)


def _add_solvers(sub) -> None:
    p = _sub(sub, "solvers", "list the registered solvers",
             "List the solvers of the registry (name, kind, families, origin, description). The origin says "
             "where each comes from: built-in, plugin FILE (--plugin), entry point DIST VERSION (an installed "
             "package's 'edgebench.solvers' entry point) or module MODULE.",
             "  edgebench solvers\n"
             "  edgebench solvers --family mapping --json\n"
             "  edgebench solvers --plugin my_plugin.py\n",
             cmd_solvers)
    p.add_argument("--family", metavar="F", help="only solvers of this family")
    p.add_argument("--json", action="store_true",
                   help="print a JSON list of {name, families, kind, description, params, origin}")
    _add_plugin_option(p)


def _add_sets(sub) -> None:
    p = _sub(sub, "sets", "list, build (from recipes) and summarise the embedded instance sets",
             "List the versioned instance sets shipped with edgebench (instances/data/<name>/manifest.json): "
             "name, family, number of instances, description. 'build' rebuilds sets byte for byte from their "
             "recipes (instances/recipes/<name>.toml, or any recipe file) into DIR/<name>/ (default: the "
             "embedded data folder); 'bks' writes the best-known / bound table (default docs/bks.md) and, beside "
             "it, the figure of every certified instance's gap (img/bks-gaps.png and .svg).",
             "  edgebench sets\n"
             "  edgebench sets --json\n"
             "  edgebench sets build placement-synthetic-3-v2 -o /tmp/sets\n"
             "  edgebench sets build my-recipe.toml -o my-sets/\n"
             "  edgebench sets bks -o docs/bks.md\n",
             cmd_sets)
    p.add_argument("action", nargs="?", choices=("list", "build", "bks"), default="list")
    p.add_argument("recipes", nargs="*", metavar="RECIPE", help="build: set names or recipe .toml files")
    p.add_argument("-o", "--output", metavar="PATH", help="build: output folder; bks: output file")
    p.add_argument("--json", action="store_true", help="print a JSON list of {name, family, instances, folder, "
                   "description}")


def _add_solve(sub) -> None:
    p = _sub(sub, "solve", "solve an instance with a registered solver, a function or an external program",
             "Solve INSTANCE with solver NAME (or MODULE:FUNCTION, or the external program CMD), evaluate the solution with the referee, write it "
             "atomically to SOLUTION and print its status and the referee's primary objective.",
             "  edgebench solve inst.json --solver random -o sol.json\n"
             "  edgebench solve inst.json --solver random --seed 3 --time-limit 10 --param attempts=50 -o sol.json\n"
             "  edgebench solve inst.json --solver mysolver:solve -o sol.json       # mysolver.py in this folder\n"
             "  edgebench solve inst.json --plugin my_plugin.py --solver mine -o sol.json\n"
             "  edgebench solve inst.json --command 'python3 greedy.py {instance} {solution}' --time-limit 5 "
             "-o sol.json\n",
             cmd_solve)
    p.add_argument("instance", metavar="INSTANCE")
    p.add_argument("--solver", metavar="NAME", help="a registered solver (see 'edgebench solvers') or "
                   "MODULE:FUNCTION (a solve function importable from the current folder or sys.path)")
    p.add_argument("--command", metavar="CMD", help="instead of --solver: an external program run through the "
                   "shell with {instance}, {solution}, {time_limit}, {seed} substituted (docs/cli.md)")
    _add_plugin_option(p)
    p.add_argument("--time-limit", type=_positive_float, default=None, metavar="S",
                   help="seconds (default: the solver's default, 300 s for exact and MDP solvers; none for "
                        "metaheuristics, which stop at their evaluation budget, heuristics and learned policies)")
    p.add_argument("--seed", type=_seed, default=0, metavar="S", help="solver seed (default 0)")
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="solver parameter (repeatable); VALUE is read as JSON, else as text")
    p.add_argument("-o", "--output", required=True, metavar="SOLUTION", help="solution file (.json or .json.gz)")


def _add_demo(sub) -> None:
    p = _sub(sub, "demo", "solve and evaluate the embedded default instances (and one fresh one per family)",
             "Solve every instance of the embedded default instance sets (instances/data, see `edgebench "
             "sets`) plus one freshly generated small instance per family (placement synthetic-3 with "
             "num_tasks=24, mapping thesis, offloading heft-random with tasks=10) with the 'random' baseline, "
             "evaluate each with the referee, print a table and write instances, solutions and summary.json "
             "to DIR. Exit code 0 only if every solution is feasible.",
             "  edgebench demo\n"
             "  edgebench demo --seed 3 -o runs/demo3\n"
             "  edgebench demo --no-sets            # only the three generated instances\n",
             cmd_demo)
    p.add_argument("--no-sets", action="store_true", help="skip the embedded instance sets")
    p.add_argument("--seed", type=_seed, default=0, metavar="S", help="seed of generators and solver (default 0)")
    p.add_argument("-o", "--output", default=str(DEMO_DIR), metavar="DIR", help=f"default {DEMO_DIR}")


def _add_train(sub) -> None:
    train = sub.add_parser("train", help="train a learned policy (see 'edgebench train --help')",
                           description="Train a learned policy; each TARGET has its own options "
                                       "('edgebench train TARGET --help').", formatter_class=_FMT)
    train_sub = train.add_subparsers(dest="target", required=True, metavar="TARGET")
    from edgebench.learned.ces_ppo_cli import add_train_parser as add_ces_ppo_train

    add_ces_ppo_train(train_sub)
    from edgebench.learned.tapfinger_cli import add_train_parser as add_tapfinger_train

    add_tapfinger_train(train_sub)

def cmd_results(args: argparse.Namespace) -> int:
    if args.action == "export":
        from edgebench.runner.results import export

        meta = export(args.db, args.output, note=args.note)
        failed = sum(f["runs"] for f in meta["failures"].values())
        print(f"{args.output}: {meta['runs']} runs ({meta['planned']} planned, {failed} failed), "
              f"{len(meta['solutions'])} best-known solutions, {meta['cpu_hours']:.3f} run-hours")
        return 0
    if args.action == "snapshot":
        from edgebench.runner.snapshot import snapshot

        rec = snapshot(args.db, args.output)
        print(f"{args.output}: {rec['runs']} runs ({rec['planned']} planned), {rec['bytes'] / 1e6:.2f} MB "
              f"({rec['bytes'] / max(1, rec['runs']) / 1e3:.2f} KB per run), {rec['run_seconds'] / 3600:.3f} "
              f"run-hours; statuses: " + ", ".join(f"{k} {v}" for k, v in rec["statuses"].items()))
        return 0
    from edgebench.runner.results_diff import main as diff_main

    return diff_main(args.old, args.new, args.json)


def _add_results(sub) -> None:
    p = _sub(sub, "results", "export a results store to a versioned folder; compare two exports",
             "'export': write a compact, versioned export of a results store (runs table as Parquet and CSV "
             "with referee values, bounds, gaps, statuses, runtimes; environment records; the solutions that "
             "hold a best known value; metadata.json with the suite, set and checkpoint versions and sha256s, "
             "the run-hours, planned vs stored runs and the failures with their reasons), written to a "
             "temporary folder and renamed into place. 'diff': what changed between two exports (per set and "
             "solver: mean gaps and the paired change with 95% t-intervals; new best knowns; new failures; "
             "runs added / removed) as Markdown, or --json. 'snapshot': a compact copy of a store being run "
             "(every run, no claims, one file) and progress.json beside it, to commit so that a long sweep "
             "continues on another machine. docs/results.md.",
             "  edgebench results export --db runs/paper/results.sqlite -o results/paper-v1/\n"
             "  edgebench results diff results/paper-v0-slice results/paper-v1\n"
             "  edgebench results snapshot --db runs/paper/results.sqlite -o results/paper-run/results.sqlite\n",
             cmd_results)
    act = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    e = act.add_parser("export", help="write the export folder of a results store", formatter_class=_FMT)
    e.add_argument("--db", required=True, metavar="STORE", help="results store (SQLite)")
    e.add_argument("-o", "--output", required=True, metavar="DIR", help="export folder (replaced as a whole)")
    e.add_argument("--note", metavar="TEXT", help="a line kept in metadata.json and shown on the results page "
                   "(e.g. what slice of a suite this is)")
    n = act.add_parser("snapshot", help="a compact copy of a store being run, to commit (replaced, not accumulated)",
                       formatter_class=_FMT)
    n.add_argument("--db", required=True, metavar="STORE", help="results store (SQLite; a runner may be writing it)")
    n.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="snapshot file (replaced; progress.json is written beside it)")
    d = act.add_parser("diff", help="compare two export folders", formatter_class=_FMT)
    d.add_argument("old", metavar="OLD", help="the earlier export folder")
    d.add_argument("new", metavar="NEW", help="the later export folder")
    d.add_argument("--json", action="store_true", help="print the comparison as JSON")


def cmd_warm(args: argparse.Namespace) -> int:
    from edgebench import kernels

    compiled = kernels.warm_kernels(force=True)
    seconds = compiled.pop("seconds")
    ready = ", ".join(k for k, n in compiled.items() if n)
    print(f"numba kernels ready in {seconds:.1f} s: {ready}")
    print(f"cache: {kernels.cache_dir() or 'none (no writable folder: compiled in every process)'}")
    return 0


def _add_warm(sub) -> None:
    _sub(sub, "warm", "compile the numba kernels into the per-user cache (the set-up does this)",
         "Compile every numba kernel (the placement bound's labelling programme) into numba's cache, so that "
         "no solver pays the compilation (about 20 s) inside its time limit. The cache is $NUMBA_CACHE_DIR "
         "when set and writable, else $XDG_CACHE_HOME/edgebench/numba (~/.cache/edgebench/numba); "
         "`bash scripts/dev.sh setup` runs this command (docs/cli.md, \"Start-up\").",
         "  edgebench warm\n", cmd_warm)


#: every command in the order of ``edgebench --help``: (name, one-line help, the function that
#: adds its parser, or "MODULE:FUNCTION" for one that lives in another module; one function may
#: add several commands). tests/test_startup.py checks the help lines against the parsers.
COMMANDS: tuple[tuple[str, str, Any], ...] = (
    ("generate", "generate instances from a preset", _add_generate),
    ("validate", "validate instance and solution files", _add_validate),
    ("info", "describe an instance (hash, family, summary)", _add_info),
    ("schema", "print the JSON Schema of the instance or solution format", _add_schema),
    ("evaluate", "score a solution with the referee", _add_evaluate),
    ("convert", "convert real traces (Alibaba GPU, TapFinger test-bed, daggen, WfCommons, STG) into instances",
     "edgebench.instances.traces.cli:add_parser"),
    ("solvers", "list the registered solvers", _add_solvers),
    ("sets", "list, build (from recipes) and summarise the embedded instance sets", _add_sets),
    ("solve", "solve an instance with a registered solver, a function or an external program", _add_solve),
    ("demo", "solve and evaluate the embedded default instances (and one fresh one per family)", _add_demo),
    ("train", "train a learned policy (see 'edgebench train --help')", _add_train),
    ("run", "run a benchmark suite (default: the embedded default suite) into a results store",
     "edgebench.runner.cli:add_run_parsers"),
    ("report", "write the Markdown / HTML report of a results store", "edgebench.runner.cli:add_run_parsers"),
    ("leaderboard", "per instance set, the solver configurations ranked by their gap to the best known",
     "edgebench.runner.cli:add_run_parsers"),
    ("bestknown", "best known objectives and bounds of a results store; write them to manifests",
     "edgebench.runner.cli:add_run_parsers"),
    ("import", "store solutions made elsewhere, scored by the referee, in a results store",
     "edgebench.runner.importer:add_parser"),
    ("adversary", "search for instances where a solver is far from a reference (certified ratios)",
     "edgebench.adversary.cli:add_parser"),
    ("merge", "combine results stores made on different machines into one", "edgebench.runner.merge:add_parser"),
    ("results", "export a results store to a versioned folder; compare two exports", _add_results),
    ("warm", "compile the numba kernels into the per-user cache (the set-up does this)", _add_warm),
)


def _add_commands(sub, adder: Any) -> None:
    """Call one adder (a function, or "MODULE:FUNCTION": the module is imported now). A module
    that is not installed (the optional trace readers) leaves its commands out."""
    if callable(adder):
        adder(sub)
        return
    module, func = adder.split(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if not (exc.name and module.startswith(exc.name)):
            raise
        return
    getattr(mod, func)(sub)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser. ``command``: only that command's parser is built in full (and the
    modules it needs imported); every other command is a one-line stub, enough for ``--help``
    and for "invalid choice". None: every command in full (the reference docs, tests)."""
    parser, sub = _parser_head()
    chosen = next((a for n, _, a in COMMANDS if n == command), None)
    done: list[Any] = []
    for name, help_, adder in COMMANDS:
        if command is None or adder == chosen:
            if adder not in done:
                done.append(adder)
                _add_commands(sub, adder)
        else:
            sub.add_parser(name, help=help_)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # the command is the first word that is not an option (the only global options are --help and
    # --version): only its parser is built, so no other command's modules are imported
    parser = build_parser(next((a for a in argv if not a.startswith("-")), ""))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors (exit 2)
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    try:
        return int(args.func(args) or 0)
    except InputError as err:
        print(f"{PROG}: error: {err.line()}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `edgebench ... | head`: stop quietly, like other command-line tools
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return 141
    except OSError as exc:
        where = getattr(exc, "filename", None) or "<output>"
        reason = exc.strerror or str(exc)
        print(f"{PROG}: error: {printable(f'{where}: <root>: {reason}')}", file=sys.stderr)
        return 2
    except sqlite3.Error as exc:  # a full disk or an I/O error under a store: SQLite rolled the run back
        print(f"{PROG}: error: <store>: <root>: {exc} (what was stored before is kept; free the space and "
              "rerun to resume)", file=sys.stderr)
        return 2
    except MemoryError:  # a limit the documented bounds should prevent: still one line (issue 28)
        print(f"{PROG}: error: <input>: <root>: out of memory (see the limits in docs/instance-format.md)",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
