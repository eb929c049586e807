"""daggen DOT DAGs -> offloading instance.

daggen (F. Suter's random DAG generator) writes Graphviz DOT: node attributes ``size``
(computation, in flops), ``alpha`` (Amdahl's sequential fraction) and ``expect_size``
(bytes the node produces); edge attribute ``size`` (bytes sent along the edge). The
generator's command line is the second ``//`` comment line. The DOT text is parsed with
pydot; the server model (speeds, CPU/memory, images, distances, bandwidth) is the one
shared with the WfCommons reader (:func:`edgebench.instances.traces.build_offloading`).
Choices: docs/traces.md.
"""

from __future__ import annotations

import contextlib
import io as _stdio
import os
import re
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.model import Instance
from edgebench.instances.traces import (
    OFFLOADING_DEFAULTS,
    RawTask,
    RawWorkflow,
    build_offloading,
    find_cycle,
    json_safe,
    merge_params,
    p_float,
    p_int,
    params_tag,
    source_files,
)

REFERENCE = "F. Suter: daggen, a synthetic task graph generator, https://github.com/frs69wq/daggen"
TERMS = f"research use; cite {REFERENCE}"

DEFAULTS: dict[str, Any] = dict(
    OFFLOADING_DEFAULTS,
    flops_per_second=1e9,  # execution time on a speed-1 server = size / flops_per_second
    images=4,              # generic image names image0..image{images-1}, one drawn per task
    task_cpu=1.0,
    task_mem=1.0,
    # No free unlimited cloud by default: daggen DAGs have no input data, so a cloud that holds
    # every image and has no capacity limit makes all-cloud optimal and every solver tie
    # (issue 14). cloud=true keeps the earlier setting; docs/traces.md.
    cloud=False,
)

_DOT_DEFAULTS = {"node", "edge", "graph"}


def _unquote(value: Any) -> str:
    s = str(value).strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        s = s[1:-1]
    return s


def _number(value: Any, *, file: str, field: str) -> float:
    s = _unquote(value)
    try:
        x = float(s)
    except ValueError:
        raise InputError(f"not a number: {s!r}", file=file, field=field) from None
    if not np.isfinite(x) or x < 0:
        raise InputError(f"must be a finite non-negative number, got {s!r}", file=file, field=field)
    return x


def _parse_dot(text: str, file: str):
    captured = _stdio.StringIO()
    try:
        # pydot prints parse errors on stdout and returns None; its grammar uses pyparsing
        # names that newer pyparsing releases warn about (silenced here, for this call only)
        with contextlib.redirect_stdout(captured), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                import pydot  # local: only the daggen reader needs it
            except ImportError as exc:  # an installation problem, not bad input
                raise ImportError("the daggen reader needs pydot: pip install pydot") from exc
            graphs = pydot.graph_from_dot_data(text)
    except ImportError:
        raise
    except Exception as exc:  # pyparsing / pydot internals: report, never a traceback
        raise InputError(f"malformed DOT: {exc}", file=file) from None
    if not graphs:
        msg = [ln for ln in captured.getvalue().splitlines() if ln.strip()]
        reason = msg[-1].strip() if msg else "not a DOT graph"
        m = re.search(r"line:(\d+), col:(\d+)", reason)
        reason = re.sub(r"\s*\(at char \d+\),?\s*\(line:\d+, col:\d+\)", "", reason)
        field = f"line {m.group(1)}, column {m.group(2)}" if m else None
        raise InputError(f"malformed DOT: {reason}", file=file, field=field)
    if len(graphs) != 1:
        raise InputError(f"expected one graph, the file has {len(graphs)}", file=file)
    return graphs[0]


def read_dag(path: str | os.PathLike, *, flops_per_second: float = 1e9) -> tuple[RawWorkflow, dict[str, Any]]:
    """One daggen DAG as a raw workflow (task work in seconds on a speed-1 server, edge data in
    bytes) plus what the file says about itself (``command``: the daggen command line,
    ``alpha`` per task)."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=file) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc.reason}", file=file) from None
    comments = [ln.strip()[2:].strip() for ln in text.splitlines() if ln.strip().startswith("//")]
    command = comments[1] if len(comments) >= 2 else None

    g = _parse_dot(text, file)
    if g.get_type() != "digraph":
        raise InputError(f"expected a digraph, got a {g.get_type()}", file=file)
    if g.get_subgraphs():
        raise InputError("subgraphs are not supported in a daggen DAG", file=file)

    attrs: dict[str, dict[str, Any]] = {}
    order: list[str] = []

    def see(name: str) -> None:
        if name not in attrs:
            attrs[name] = {}
            order.append(name)

    for node in g.get_nodes():
        name = _unquote(node.get_name())
        if name in _DOT_DEFAULTS:
            continue
        see(name)
        attrs[name].update(node.get_attributes())
    raw_edges = []
    for e in g.get_edges():
        a, b = _unquote(e.get_source()), _unquote(e.get_destination())
        see(a)
        see(b)
        raw_edges.append((a, b, e.get_attributes()))
    if not order:
        raise InputError("the graph has no nodes", file=file)
    if all(re.fullmatch(r"-?\d+", n) for n in order):
        order.sort(key=int)
    index = {n: i for i, n in enumerate(order)}

    tasks = []
    alphas = []
    for name in order:
        a = attrs[name]
        if "size" not in a:
            raise InputError("missing attribute (the task's work in flops)", file=file,
                             field=f"node {name}, attribute size")
        work = _number(a["size"], file=file, field=f"node {name}, attribute size")
        alphas.append(_number(a["alpha"], file=file, field=f"node {name}, attribute alpha") if "alpha" in a
                      else None)
        tasks.append(RawTask(name=name, work=work / flops_per_second))
    sizes: dict[tuple[int, int], float] = {}
    merged = 0
    for a, b, ea in raw_edges:
        where = f"edge {a} -> {b}"
        if "size" not in ea:
            raise InputError("missing attribute (bytes sent along the edge)", file=file,
                             field=f"{where}, attribute size")
        size = _number(ea["size"], file=file, field=f"{where}, attribute size")
        key = (index[a], index[b])
        if key[0] == key[1]:
            raise InputError("self-loop: the DAG is cyclic", file=file, field=where)
        if key in sizes:
            # daggen sometimes writes the same edge twice, identically: one dependency
            if sizes[key] != size:
                raise InputError(f"the edge appears twice with different sizes ({sizes[key]:g} and {size:g})",
                                 file=file, field=f"{where}, attribute size")
            merged += 1
            continue
        sizes[key] = size
    edges = [(a, b, d) for (a, b), d in sizes.items()]
    cyc = find_cycle(len(tasks), edges)
    if cyc is not None:
        raise InputError("the graph is cyclic: " + " -> ".join(order[i] for i in cyc), file=file, field="edges")
    wf = RawWorkflow(name=Path(path).name, tasks=tasks, edges=edges, file=file)
    return wf, {"file": Path(path).name, "command": command, "alpha": alphas, "duplicate_edges_merged": merged}


def convert(paths: str | os.PathLike | Sequence[str | os.PathLike], *, seed: int = 0, **params: Any) -> Instance:
    """Offloading instance with one workflow per daggen file (several files: several workflows,
    arriving at 0 or as a Poisson process with ``arrival_rate``). Parameters: ``DEFAULTS``."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [Path(p) for p in paths]
    if not paths:
        raise InputError("no daggen file given")
    p = merge_params(DEFAULTS, params, what="the daggen converter")
    seed = p_int({"seed": seed}, "seed", minimum=0)
    fps = p_float(p, "flops_per_second", positive=True)
    n_images = p_int(p, "images", minimum=1)
    task_cpu = p_float(p, "task_cpu", minimum=0.0)
    task_mem = p_float(p, "task_mem", minimum=0.0)

    workflows, infos = [], []
    for path in paths:
        wf, info = read_dag(path, flops_per_second=fps)
        for t in wf.tasks:
            t.cpu, t.mem = task_cpu, task_mem
        workflows.append(wf)
        infos.append({"file": info["file"], "command": info["command"],
                      "duplicate_edges_merged": info["duplicate_edges_merged"]})
    rng = np.random.default_rng(seed)
    payload = build_offloading(workflows, p, rng, generic_images=[f"image{k}" for k in range(n_images)])

    stem = paths[0].name.removesuffix(".gv").removesuffix(".dot")
    tag = params_tag(p, DEFAULTS)
    ident = (f"offloading-daggen-{stem}-s{seed}{tag}" if len(paths) == 1
             else f"offloading-daggen-{len(paths)}wf-{stem}-s{seed}{tag}")
    meta = {
        "generator": "edgebench.instances.traces.daggen:convert",
        "converter": "daggen",
        "params": json_safe(p),
        "seed": seed,
        "source": {"trace": "daggen DAGs", "files": source_files(paths)},
        "daggen": infos,
        "reference": REFERENCE,
        "terms": TERMS,
    }
    n_tasks = sum(len(w.tasks) for w in workflows)
    data = {
        "format_version": 1,
        "family": "offloading",
        "id": ident,
        "name": f"daggen {', '.join(x.name for x in paths[:3])}{' ...' if len(paths) > 3 else ''}: "
                f"{n_tasks} tasks (seed {seed})",
        "meta": meta,
        "offloading": payload,
    }
    return io.instance_from_dict(data, file=str(paths[0]) if len(paths) == 1 else None)


__all__ = ["read_dag", "convert", "DEFAULTS"]
