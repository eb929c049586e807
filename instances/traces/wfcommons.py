"""WfCommons WfFormat JSON -> offloading workflow(s).

Two layouts are read:

* schema 1.5 and later: ``workflow.specification.tasks`` (name, id, parents, children,
  inputFiles, outputFiles), ``workflow.specification.files`` (id, sizeInBytes) and
  ``workflow.execution.tasks`` (id, runtimeInSeconds, coreCount, memoryInBytes);
* schema 1.0-1.4: ``workflow.tasks`` (``workflow.jobs`` before 1.3) with name, id,
  parents / children (by name or id), runtimeInSeconds or runtime, cores, memoryInBytes or
  memory (KB, converted x 1000 as WfCommons' own migration does), category, and files with
  link input/output, name and sizeInBytes or size (bytes).

Edge data = total size of the files the child reads that the parent writes; task cpu =
cores (default 1), mem = memory in GB, execution time = runtime (seconds on a speed-1
server); image = the task's category, else its name without a trailing ``_ID<digits>`` /
``_<digits>``. The server model is shared with the daggen reader. Choices: docs/traces.md.
"""

from __future__ import annotations

import os
import re
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

REFERENCE = ("T. Coleman, H. Casanova, L. Pottier, M. Kaushik, E. Deelman, R. Ferreira da Silva: WfCommons: "
             "A Framework for Enabling Scientific Workflow Research and Development. Future Generation "
             "Computer Systems 128, 2022")
TERMS = f"research use; cite {REFERENCE} and the workflow's own authors"

DEFAULTS: dict[str, Any] = dict(
    OFFLOADING_DEFAULTS,
    mem_unit=1e9,     # bytes per memory unit (GB)
    task_cpu=1.0,     # cores of a task whose trace gives none
    task_mem=1.0,     # memory (GB) of a task whose trace gives none
)

_SUFFIX = re.compile(r"(_ID\d+|_\d+)$")


def _err(reason: str, file: str, field: str | None = None) -> InputError:
    return InputError(reason, file=file, field=field)


def _num(value: Any, file: str, field: str, *, allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _err(f"expected a number, got {value!r}", file, field)
    if not np.isfinite(value) or value < 0:
        raise _err(f"must be a finite non-negative number, got {value!r}", file, field)
    return float(value)


def _list(obj: dict, key: str, file: str, field: str) -> list:
    v = obj.get(key, [])
    if v is None:
        return []
    if not isinstance(v, list):
        raise _err(f"expected a list, got {type(v).__name__}", file, f"{field}.{key}")
    return v


def image_of(name: str, category: str | None) -> str:
    """The task's image: its category if the trace gives one, else its name prefix."""
    if category:
        return str(category)
    return _SUFFIX.sub("", name) or name


class _Task:
    __slots__ = ("key", "name", "category", "parents", "children", "inputs", "outputs", "runtime", "cores",
                 "mem_bytes", "field")

    def __init__(self, key, name, category, field):
        self.key, self.name, self.category, self.field = key, name, category, field
        self.parents: list[str] = []
        self.children: list[str] = []
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.runtime: float | None = None
        self.cores: float | None = None
        self.mem_bytes: float | None = None


def _read_15(wf: dict, file: str) -> tuple[list[_Task], dict[str, float]]:
    spec = wf.get("specification")
    if not isinstance(spec, dict):
        raise _err("expected an object", file, "workflow.specification")
    stasks = spec.get("tasks")
    if not isinstance(stasks, list) or not stasks:
        raise _err("expected a non-empty list of tasks", file, "workflow.specification.tasks")
    sizes: dict[str, float] = {}
    for k, f in enumerate(_list(spec, "files", file, "workflow.specification")):
        where = f"workflow.specification.files[{k}]"
        if not isinstance(f, dict) or "id" not in f:
            raise _err("a file needs an id", file, where)
        if "sizeInBytes" not in f:
            raise _err("required field is missing", file, f"{where}.sizeInBytes")
        sizes[str(f["id"])] = _num(f["sizeInBytes"], file, f"{where}.sizeInBytes")
    tasks = []
    for k, t in enumerate(stasks):
        where = f"workflow.specification.tasks[{k}]"
        if not isinstance(t, dict):
            raise _err("expected an object", file, where)
        if "id" not in t:
            raise _err("required field is missing", file, f"{where}.id")
        task = _Task(str(t["id"]), str(t.get("name", t["id"])), t.get("category"), where)
        task.parents = [str(x) for x in _list(t, "parents", file, where)]
        task.children = [str(x) for x in _list(t, "children", file, where)]
        task.inputs = [str(x) for x in _list(t, "inputFiles", file, where)]
        task.outputs = [str(x) for x in _list(t, "outputFiles", file, where)]
        for j, fid in enumerate(task.inputs + task.outputs):
            if fid not in sizes:
                kind, idx = ("inputFiles", j) if j < len(task.inputs) else ("outputFiles", j - len(task.inputs))
                raise _err(f"file {fid!r} is not in workflow.specification.files", file, f"{where}.{kind}[{idx}]")
        tasks.append(task)
    by_key = {t.key: t for t in tasks}
    execution = wf.get("execution")
    if not isinstance(execution, dict):
        raise _err("missing: the task runtimes (runtimeInSeconds) are needed", file, "workflow.execution")
    for k, e in enumerate(_list(execution, "tasks", file, "workflow.execution")):
        where = f"workflow.execution.tasks[{k}]"
        if not isinstance(e, dict) or "id" not in e:
            raise _err("an execution task needs an id", file, where)
        task = by_key.get(str(e["id"]))
        if task is None:
            raise _err(f"task {e['id']!r} is not in workflow.specification.tasks", file, f"{where}.id")
        if "runtimeInSeconds" in e:
            task.runtime = _num(e["runtimeInSeconds"], file, f"{where}.runtimeInSeconds")
        if e.get("coreCount") is not None:
            task.cores = _num(e["coreCount"], file, f"{where}.coreCount")
        if e.get("memoryInBytes") is not None:
            task.mem_bytes = _num(e["memoryInBytes"], file, f"{where}.memoryInBytes")
        if task.category is None and e.get("category"):
            task.category = e["category"]
    return tasks, sizes


def _read_old(wf: dict, file: str) -> tuple[list[_Task], dict[str, float]]:
    key = "tasks" if "tasks" in wf else "jobs"
    otasks = wf.get(key)
    if not isinstance(otasks, list) or not otasks:
        raise _err("expected a non-empty list of tasks", file, f"workflow.{key}")
    sizes: dict[str, float] = {}
    tasks = []
    for k, t in enumerate(otasks):
        where = f"workflow.{key}[{k}]"
        if not isinstance(t, dict):
            raise _err("expected an object", file, where)
        if "name" not in t and "id" not in t:
            raise _err("a task needs a name or an id", file, where)
        name = str(t.get("name", t.get("id")))
        task = _Task(name, name, t.get("category"), where)
        task.parents = [str(x) for x in _list(t, "parents", file, where)]
        task.children = [str(x) for x in _list(t, "children", file, where)]
        rt = "runtimeInSeconds" if "runtimeInSeconds" in t else "runtime"
        if rt in t:
            task.runtime = _num(t[rt], file, f"{where}.{rt}")
        if t.get("cores") is not None:
            task.cores = _num(t["cores"], file, f"{where}.cores")
        if t.get("memoryInBytes") is not None:
            task.mem_bytes = _num(t["memoryInBytes"], file, f"{where}.memoryInBytes")
        elif t.get("memory") is not None:  # KB up to schema 1.3
            task.mem_bytes = _num(t["memory"], file, f"{where}.memory") * 1000.0
        for j, f in enumerate(_list(t, "files", file, where)):
            fw = f"{where}.files[{j}]"
            if not isinstance(f, dict) or "name" not in f:
                raise _err("a file needs a name", file, fw)
            fid = str(f.get("path", "")) + str(f["name"])
            sk = "sizeInBytes" if "sizeInBytes" in f else "size"
            if sk not in f:
                raise _err("required field is missing", file, f"{fw}.sizeInBytes")
            size = _num(f[sk], file, f"{fw}.{sk}")
            if fid in sizes and sizes[fid] != size:
                raise _err(f"file {fid!r} has two sizes ({sizes[fid]:g} and {size:g})", file, f"{fw}.{sk}")
            sizes[fid] = size
            link = str(f.get("link", "")).lower()
            if link == "input":
                task.inputs.append(fid)
            elif link == "output":
                task.outputs.append(fid)
            else:
                raise _err(f"link must be input or output, got {f.get('link')!r}", file, f"{fw}.link")
        tasks.append(task)
    # up to 1.4 tasks refer to each other by name; accept ids too
    alias = {}
    for t, raw in zip(tasks, otasks):
        if "id" in raw:
            alias.setdefault(str(raw["id"]), t.key)
    keys = {t.key for t in tasks}
    for t in tasks:
        t.parents = [x if x in keys else alias.get(x, x) for x in t.parents]
        t.children = [x if x in keys else alias.get(x, x) for x in t.children]
    return tasks, sizes


def read_workflow(path: str | os.PathLike, *, mem_unit: float = 1e9) -> tuple[RawWorkflow, dict[str, Any]]:
    """One WfFormat file as a raw workflow (work = runtime in seconds, edge data in bytes) and
    facts about it (name, schemaVersion, layout)."""
    file = str(path)
    data = io.read_json(path)
    if not isinstance(data, dict):
        raise _err("a WfFormat instance is a JSON object", file)
    wf = data.get("workflow")
    if not isinstance(wf, dict):
        raise _err("required field is missing (a WfFormat instance has a 'workflow' object)", file, "workflow")
    if "specification" in wf:
        layout = "1.5"
        tasks, sizes = _read_15(wf, file)
    elif "tasks" in wf or "jobs" in wf:
        layout = "1.4"
        tasks, sizes = _read_old(wf, file)
    else:
        raise _err("expected workflow.specification (schema 1.5+) or workflow.tasks (schema 1.0-1.4)", file,
                   "workflow")

    index: dict[str, int] = {}
    for i, t in enumerate(tasks):
        if t.key in index:
            raise _err(f"duplicate task {t.key!r}", file, f"{t.field}")
        index[t.key] = i
    deps: set[tuple[int, int]] = set()
    for i, t in enumerate(tasks):
        for rel, lst in (("parents", t.parents), ("children", t.children)):
            for k, ref in enumerate(lst):
                j = index.get(ref)
                if j is None:
                    raise _err(f"unknown task {ref!r}", file, f"{t.field}.{rel}[{k}]")
                if j == i:
                    raise _err(f"task {t.key!r} depends on itself: the workflow is cyclic", file,
                               f"{t.field}.{rel}[{k}]")
                deps.add((j, i) if rel == "parents" else (i, j))
    for i, t in enumerate(tasks):
        if t.runtime is None:
            raise _err(f"task {t.key!r} has no runtime", file,
                       f"{t.field}.runtimeInSeconds" if layout == "1.4" else "workflow.execution.tasks")

    producers: dict[str, set[int]] = {}
    for i, t in enumerate(tasks):
        for fid in t.outputs:
            producers.setdefault(fid, set()).add(i)
    edges = []
    for a, b in sorted(deps):
        shared = set(tasks[a].outputs) & set(tasks[b].inputs)
        edges.append((a, b, float(sum(sizes[f] for f in shared))))
    cyc = find_cycle(len(tasks), edges)
    if cyc is not None:
        raise _err("the workflow is cyclic: " + " -> ".join(tasks[i].key for i in cyc), file,
                   "workflow.specification.tasks" if layout == "1.5" else "workflow.tasks")
    has_parent = {b for _, b in deps}
    raw_tasks = []
    for i, t in enumerate(tasks):
        inp = 0.0
        if i not in has_parent:
            inp = float(sum(sizes[f] for f in set(t.inputs) if f not in producers))
        raw_tasks.append(RawTask(name=t.key, work=float(t.runtime), cpu=t.cores,
                                 mem=None if t.mem_bytes is None else t.mem_bytes / mem_unit,
                                 image=image_of(t.name, t.category), input_bytes=inp))
    name = str(data.get("name") or Path(path).name)
    info = {"file": Path(path).name, "name": name, "schemaVersion": data.get("schemaVersion"), "layout": layout,
            "tasks": len(tasks), "edges": len(edges)}
    return RawWorkflow(name=name, tasks=raw_tasks, edges=edges, file=file), info


def convert(paths: str | os.PathLike | Sequence[str | os.PathLike], *, seed: int = 0, **params: Any) -> Instance:
    """Offloading instance with one workflow per WfFormat file (several files: several
    workflows, arriving at 0 or as a Poisson process with ``arrival_rate``)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [Path(p) for p in paths]
    if not paths:
        raise InputError("no WfFormat file given")
    p = merge_params(DEFAULTS, params, what="the wfcommons converter")
    seed = p_int({"seed": seed}, "seed", minimum=0)
    mem_unit = p_float(p, "mem_unit", positive=True)
    task_cpu = p_float(p, "task_cpu", minimum=0.0)
    task_mem = p_float(p, "task_mem", minimum=0.0)
    workflows, infos = [], []
    for path in paths:
        wf, info = read_workflow(path, mem_unit=mem_unit)
        for t in wf.tasks:
            if t.cpu is None:
                t.cpu = task_cpu
            if t.mem is None:
                t.mem = task_mem
        workflows.append(wf)
        infos.append(info)
    rng = np.random.default_rng(seed)
    payload = build_offloading(workflows, p, rng)
    stem = re.sub(r"[^0-9A-Za-z_.-]+", "-", paths[0].name.removesuffix(".gz").removesuffix(".json"))
    ident = (f"offloading-wfcommons-{stem}-s{seed}{params_tag(p, DEFAULTS)}" if len(paths) == 1
             else f"offloading-wfcommons-{len(paths)}wf-{stem}-s{seed}{params_tag(p, DEFAULTS)}")
    n_tasks = sum(len(w.tasks) for w in workflows)
    data = {
        "format_version": 1,
        "family": "offloading",
        "id": ident,
        "name": f"WfCommons {', '.join(w.name for w in workflows[:3])}{' ...' if len(workflows) > 3 else ''}: "
                f"{n_tasks} tasks (seed {seed})",
        "meta": {
            "generator": "edgebench.instances.traces.wfcommons:convert",
            "converter": "wfcommons",
            "params": json_safe(p),
            "seed": seed,
            "source": {"trace": "WfCommons WfFormat instances", "files": source_files(paths)},
            "workflows": infos,
            "reference": REFERENCE,
            "terms": TERMS,
        },
        "offloading": payload,
    }
    return io.instance_from_dict(data, file=str(paths[0]) if len(paths) == 1 else None)


__all__ = ["read_workflow", "convert", "image_of", "DEFAULTS"]
