"""``edgebench convert``: real traces -> instance files.

``add_parser(subparsers)`` adds the ``convert`` sub-command (with one sub-command per trace)
to the main CLI's argparse sub-parsers; each sets ``func(args) -> int``. Errors in the input
are raised as :class:`edgebench.errors.InputError` for the main CLI to print as one line.
"""

from __future__ import annotations

import argparse
import os
import textwrap
from pathlib import Path
from typing import Any, Callable

from edgebench.argtypes import parse_assignments
from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.model import Instance

EXAMPLES = """\
examples:
  edgebench convert alibaba --pods ../shared/traces/alibaba_gpu_v2023_openb_pod_list_default.csv \\
      --nodes ../shared/traces/alibaba_gpu_v2023_openb_node_list_gpu_node.csv --clusters 3 --seed 0 -o ali.json
  edgebench convert alibaba --count 5 --set step_seconds=120 --set max_tasks=100 -o runs/alibaba/
  edgebench convert testbed --profiles ../shared/traces/tapfinger_testbed_profiles.csv --seed 1 -o testbed.json
  edgebench convert testbed --set clusters=6 --set 'capacity={"cpu": 32, "gpu": 16}' -o testbed6.json
  edgebench convert daggen ../shared/traces/daggen_dags/random.10.0.gv -o dag10.json
  edgebench convert daggen ../shared/traces/daggen_dags/ --set servers=6 --set cloud=false -o runs/daggen/
  edgebench convert daggen a.gv b.gv --combine --set arrival_rate=0.5 -o two_workflows.json
  edgebench convert wfcommons montage.json --seed 3 -o montage.json.gz
  edgebench convert stg ../shared/traces/stg/50/rand0000.stg --servers 4 -o stg0000-m4.json
  edgebench convert stg ../shared/traces/stg/50/ --servers 2 4 8 16 -o runs/stg50/

-o is a file for one instance (.json or .json.gz) or a directory for several (files named
<instance id>.json). --set key=value sets a converter parameter; the value is read as JSON
(numbers, true/false, null, lists, objects) and otherwise kept as a string. The traces
folder (../shared/traces or $EDGEBENCH_TRACES) is used when --pods/--nodes/--profiles are
left out. See docs/traces.md for every parameter and how each trace maps to the format.
"""


def _expand(files: list[str], suffixes: tuple[str, ...]) -> list[Path]:
    out: list[Path] = []
    for f in files:
        p = Path(f)
        if p.is_dir():
            found = sorted(q for q in p.iterdir() if q.is_file() and q.name.endswith(suffixes))
            if not found:
                raise InputError(f"no {' / '.join(suffixes)} file in the folder", file=str(p))
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            raise InputError("file not found", file=str(p))
    return out


def write_instances(instances: list[Instance], out: str) -> list[Path]:
    """One instance: ``out`` is its file (unless it is an existing folder or ends with a
    slash). Several: ``out`` is a folder, files ``<id>.json``. Writes are atomic."""
    out_p = Path(out)
    is_dir_like = out.endswith(("/", os.sep)) or out_p.is_dir()
    if len(instances) == 1 and not is_dir_like:
        targets = [out_p]
    else:
        if out_p.exists() and not out_p.is_dir():
            raise InputError("several instances: -o must be a folder, not a file", file=out, field="-o")
        if not is_dir_like and out_p.name.endswith((".json", ".json.gz")):
            raise InputError(f"{len(instances)} instances: -o must be a folder", file=out, field="-o")
        targets = [out_p / f"{inst.id}.json" for inst in instances]
        if len(set(targets)) != len(targets):
            raise InputError("two instances would get the same file name (same instance id)", file=out, field="-o")
    for inst, path in zip(instances, targets):
        io.write_json(path, inst)
        print(f"wrote {path} ({inst.id}, {_size(inst)})")
    return targets


def _size(inst: Instance) -> str:
    pl = inst.payload
    if inst.family == "placement":
        return f"{len(pl.tasks)} tasks, {len(pl.clusters)} clusters"
    if inst.family == "offloading":
        return (f"{len(pl.workflows)} workflow(s), {sum(len(w.tasks) for w in pl.workflows)} tasks, "
                f"{len(pl.servers)} servers")
    return inst.family


def _seeds(args) -> list[int]:
    if args.count < 1:
        raise InputError(f"must be at least 1, got {args.count}", field="--count")
    if args.seed < 0:
        raise InputError(f"must be non-negative, got {args.seed}", field="--seed")
    return list(range(args.seed, args.seed + args.count))


def _run_alibaba(args) -> int:
    from edgebench.instances.traces import alibaba

    params = parse_set(args.set)
    if args.clusters is not None:
        params["clusters"] = args.clusters
    insts = [alibaba.convert(args.pods, args.nodes, seed=s, **params) for s in _seeds(args)]
    write_instances(insts, args.output)
    return 0


def _run_testbed(args) -> int:
    from edgebench.instances.traces.testbed import generate_testbed

    params = parse_set(args.set)
    if args.profiles is not None:
        params["profiles"] = args.profiles
    insts = [generate_testbed(seed=s, **params) for s in _seeds(args)]
    write_instances(insts, args.output)
    return 0


def _run_dags(convert: Callable[..., Instance], suffixes: tuple[str, ...]) -> Callable[[Any], int]:
    def run(args) -> int:
        params = parse_set(args.set)
        files = _expand(args.files, suffixes)
        if args.seed < 0:
            raise InputError(f"must be non-negative, got {args.seed}", field="--seed")
        if args.combine:
            insts = [convert(files, seed=args.seed, **params)]
        else:
            insts = [convert(f, seed=args.seed, **params) for f in files]
        write_instances(insts, args.output)
        return 0

    return run


def _run_daggen(args) -> int:
    from edgebench.instances.traces import daggen

    return _run_dags(daggen.convert, (".gv", ".dot"))(args)


def _run_wfcommons(args) -> int:
    from edgebench.instances.traces import wfcommons

    return _run_dags(wfcommons.convert, (".json", ".json.gz"))(args)


def _run_stg(args) -> int:
    from edgebench.instances.traces import stg

    files = _expand(args.files, (".stg",))
    for m in args.servers:  # before any file is read: an instance grows with the square of M
        if not 1 <= m <= stg.MAX_SERVERS:
            raise InputError(f"must be from 1 to {stg.MAX_SERVERS} (the distance matrix grows with its square), "
                             f"got {m}", field="--servers")
    insts = [stg.convert(f, servers=m, optima=args.optima) for f in files for m in args.servers]
    write_instances(insts, args.output)
    return 0


def _common(p: argparse.ArgumentParser, *, count: bool) -> None:
    p.add_argument("--seed", type=int, default=0, help="seed of every random choice (default 0)")
    if count:
        p.add_argument("--count", type=int, default=1, metavar="N",
                       help="write N instances, seeds S..S+N-1 (-o is then a folder)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                   help="converter parameter (repeatable); VALUE is read as JSON, else as a string")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="output file (.json / .json.gz) for one instance, folder for several")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``convert`` (sub-commands alibaba, testbed, daggen, wfcommons, stg) to ``subparsers``."""
    fmt = argparse.RawDescriptionHelpFormatter
    wrap = textwrap.fill
    conv = subparsers.add_parser(
        "convert", help="convert real traces (Alibaba GPU, TapFinger test-bed, daggen, WfCommons, STG) into instances",
        description=wrap("Convert real public traces into validated edgebench instances (meta records the "
                    "converter, its parameters, the seed, the source files with their sha256 and the data's "
                    "terms of use)."),
        epilog=EXAMPLES, formatter_class=fmt)
    sub = conv.add_subparsers(dest="trace", metavar="TRACE", required=True)

    a = sub.add_parser("alibaba", help="Alibaba cluster-trace-gpu-v2023 pods + GPU nodes -> placement",
                       description=wrap("Sample GPU nodes (one per cluster) and a window of pods of the Alibaba "
                                   "openb trace into a placement instance. Parameters (--set): clusters, "
                                   "window_start, window_seconds, max_tasks, step_seconds, max_steps, "
                                   "switching_overhead, pending_size, variant."),
                       epilog=EXAMPLES, formatter_class=fmt)
    a.add_argument("--pods", metavar="F", help="pod list CSV (default: the traces folder's)")
    a.add_argument("--nodes", metavar="F", help="GPU node list CSV (default: the traces folder's)")
    a.add_argument("--clusters", type=int, metavar="N", help="GPU nodes to sample (default 3)")
    _common(a, count=True)
    a.set_defaults(func=_run_alibaba)

    t = sub.add_parser("testbed", help="TapFinger test-bed profiles -> placement (the paper's test-bed setting)",
                       description=wrap("The TapFinger test-bed setting with the measured performance table. "
                                   "Parameters (--set): clusters, capacity, rate, num_tasks, types, min_cpu, "
                                   "min_gpu, max_eligible, step_seconds, switching_overhead, noise, noise_seed, "
                                   "pending_size, variant."),
                       epilog=EXAMPLES, formatter_class=fmt)
    t.add_argument("--profiles", metavar="F", help="profiles CSV (default: the traces folder's)")
    _common(t, count=True)
    t.set_defaults(func=_run_testbed)

    server_params = ("servers, cloud, speed_min, speed_max, cloud_speed, cloud_distance, edge_cpu_min, "
                     "edge_cpu_max, edge_mem_min, edge_mem_max, data_unit, bandwidth, image_prob, "
                     "image_pull_delay, arrival_rate, task_cpu, task_mem")
    d = sub.add_parser("daggen", help="daggen DOT DAGs -> offloading",
                       description=wrap("One offloading instance per daggen DOT file (or one with all of them, "
                                   "--combine). Parameters (--set): flops_per_second, images, " + server_params),
                       epilog=EXAMPLES, formatter_class=fmt)
    d.add_argument("files", nargs="+", metavar="FILE", help="daggen .gv files or folders of them")
    d.add_argument("--combine", action="store_true", help="one instance with one workflow per file")
    _common(d, count=False)
    d.set_defaults(func=_run_daggen)

    w = sub.add_parser("wfcommons", help="WfCommons WfFormat JSON -> offloading",
                       description=wrap("One offloading instance per WfFormat file (or one with all of them, "
                                   "--combine). Parameters (--set): mem_unit, " + server_params),
                       epilog=EXAMPLES, formatter_class=fmt)
    w.add_argument("files", nargs="+", metavar="FILE", help="WfFormat .json files or folders of them")
    w.add_argument("--combine", action="store_true", help="one instance with one workflow per file")
    _common(w, count=False)
    w.set_defaults(func=_run_wfcommons)

    g = sub.add_parser("stg", help="Standard Task Graph Set (P|prec|Cmax) -> offloading",
                       description=wrap("One offloading instance per STG file and server count: identical servers "
                                   "(cpu = mem = speed = 1), one image, no cloud, no transfers, one workflow; "
                                   "the published optimum (or [lower, upper]) of the STG tables is kept in "
                                   "meta.stg.published. See docs/traces.md, section 5."),
                       epilog=EXAMPLES, formatter_class=fmt)
    g.add_argument("files", nargs="+", metavar="FILE", help="STG .stg files or folders of them")
    g.add_argument("--servers", type=int, nargs="+", required=True, metavar="M",
                   help="identical servers (processors), 1 to 1000; several values: one instance per value")
    g.add_argument("--optima", metavar="CSV", default=None,
                   help="optimum table (default: <graph folder>/../optimal/Case<n>_<M>_OPT.csv when it exists)")
    g.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="output file (.json / .json.gz) for one instance, folder for several")
    g.set_defaults(func=_run_stg)
    return conv


__all__ = ["add_parser", "parse_set", "write_instances"]


def parse_set(items: list[str] | None) -> dict[str, Any]:
    """``["k=v", ...]`` -> dict; values parsed as JSON, falling back to the raw string."""
    return parse_assignments(items, "--set", file=None, unique=False)
