"""Alibaba cluster-trace-gpu-v2023 (openb) -> placement instance.

The pod list gives task arrivals, CPU/GPU/memory requests and one observed run per pod; the
GPU node list gives heterogeneous cluster capacities. ``convert`` samples ``clusters`` GPU
nodes (one node = one cluster) and a window of pods, and builds a placement instance whose
performance model is synthetic: the trace has one observed duration per pod, at the
requested allocation, and no information on how a pod would speed up with more resources,
so each distinct duration (in steps) becomes a resource-insensitive type ``fixed-<k>``
(progress 1/k per step at or above the minimum). Every choice is documented in
``docs/traces.md``.
"""

from __future__ import annotations

import csv
import functools
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.model import Instance
from edgebench.instances.traces import (
    json_safe,
    merge_params,
    p_float,
    p_int,
    params_tag,
    source_files,
    trace_file,
)

PODS_FILE = "alibaba_gpu_v2023_openb_pod_list_default.csv"
NODES_FILE = "alibaba_gpu_v2023_openb_node_list_gpu_node.csv"

TRACE = "Alibaba cluster-trace-gpu-v2023 (openb), https://github.com/alibaba/clusterdata"
REFERENCE = ("Q. Weng, L. Yang, Y. Yu, W. Wang, X. Tang, G. Yang, L. Zhang: Beware of Fragmentation: "
             "Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent. USENIX ATC 2023")
TERMS = f"research use; cite {REFERENCE}"

POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time", "deletion_time",
               "scheduled_time")
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu")

DEFAULTS: dict[str, Any] = {
    "clusters": 3,
    "window_start": None,     # trace seconds; None = a pod creation time drawn by the seed
    "window_seconds": None,   # None = no end: the window closes when max_tasks tasks are taken
    "max_tasks": None,        # None = 64 x clusters
    "step_seconds": 300,      # trace seconds per step
    "max_steps": 50,          # durations are capped at this many steps
    "switching_overhead": 0.5,
    "pending_size": 10,
    "variant": "single",
}


@dataclass(frozen=True)
class Pod:
    row: int
    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    qos: str
    phase: str
    creation: int
    deletion: int | None
    scheduled: int | None


@dataclass(frozen=True)
class Node:
    row: int
    sn: str
    cpu_milli: int
    memory_mib: int
    gpu: int
    model: str


def _int_cell(value: str, *, file: str, row: int, column: str, optional: bool = False) -> int | None:
    v = value.strip()
    if v == "":
        if optional:
            return None
        raise InputError("empty value", file=file, field=f"row {row}, column {column}")
    try:
        x = float(v)
    except ValueError:
        raise InputError(f"not a number: {v!r}", file=file, field=f"row {row}, column {column}") from None
    if not math.isfinite(x) or not x.is_integer():
        raise InputError(f"not an integer: {v!r}", file=file, field=f"row {row}, column {column}")
    if x < 0:
        raise InputError(f"negative value {v}", file=file, field=f"row {row}, column {column}")
    return int(x)


def _read_csv(path: str | os.PathLike, required: tuple[str, ...]) -> tuple[str, list[tuple[int, dict[str, str]]]]:
    file = str(path)
    try:
        fh = open(path, newline="", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=file) from None
    rows = []
    with fh:
        reader = csv.reader(fh)
        try:
            header = next(reader, None)
            if header is None:
                raise InputError("empty file (no header line)", file=file, field="row 1")
            header = [h.strip() for h in header]
            for col in required:
                if col not in header:
                    raise InputError(f"missing column (header has {', '.join(header)})", file=file,
                                     field=f"column {col}")
            for cells in reader:
                row = reader.line_num
                if not cells or all(not c.strip() for c in cells):
                    continue
                if len(cells) != len(header):
                    raise InputError(f"{len(cells)} values, the header has {len(header)} columns", file=file,
                                     field=f"row {row}")
                rows.append((row, dict(zip(header, cells))))
        except csv.Error as exc:
            raise InputError(f"malformed CSV: {exc}", file=file, field=f"row {reader.line_num}") from None
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text: {exc.reason}", file=file) from None
    return file, rows


def read_pods(path: str | os.PathLike) -> list[Pod]:
    """The pod list, in file order; InputError (file, ``row N, column C``) on a bad value.
    Rows are numbered as lines of the file (the header is row 1)."""
    file, rows = _read_csv(path, POD_COLUMNS)
    pods = []
    for row, d in rows:
        def cell(col, optional=False):
            return _int_cell(d[col], file=file, row=row, column=col, optional=optional)

        pod = Pod(row=row, name=d["name"].strip(), cpu_milli=cell("cpu_milli"), memory_mib=cell("memory_mib"),
                  num_gpu=cell("num_gpu"), gpu_milli=cell("gpu_milli"), qos=d.get("qos", "").strip(),
                  phase=d.get("pod_phase", "").strip(), creation=cell("creation_time"),
                  deletion=cell("deletion_time", True), scheduled=cell("scheduled_time", True))
        if pod.gpu_milli > 1000:
            raise InputError(f"gpu_milli {pod.gpu_milli} is above 1000 (one whole GPU)", file=file,
                             field=f"row {row}, column gpu_milli")
        if pod.scheduled is not None and pod.deletion is not None and pod.deletion < pod.scheduled:
            raise InputError(f"deletion_time {pod.deletion} is before scheduled_time {pod.scheduled}", file=file,
                             field=f"row {row}, column deletion_time")
        pods.append(pod)
    if not pods:
        raise InputError("no pods in the file", file=file)
    return pods


def read_nodes(path: str | os.PathLike) -> list[Node]:
    file, rows = _read_csv(path, NODE_COLUMNS)
    nodes = []
    for row, d in rows:
        def cell(col):
            return _int_cell(d[col], file=file, row=row, column=col)

        nodes.append(Node(row=row, sn=d["sn"].strip(), cpu_milli=cell("cpu_milli"), memory_mib=cell("memory_mib"),
                          gpu=cell("gpu"), model=d.get("model", "").strip()))
    if not nodes:
        raise InputError("no nodes in the file", file=file)
    return nodes


def pod_minimum(pod: Pod) -> dict[str, int]:
    """cpu = ceil(cpu_milli / 1000) cores; gpu = num_gpu (a fractional share, num_gpu 1 with
    gpu_milli < 1000, takes one whole GPU unit); memory = ceil(memory_mib / 1024) GiB."""
    return {"cpu": -(-pod.cpu_milli // 1000), "gpu": pod.num_gpu, "memory": -(-pod.memory_mib // 1024)}


def node_capacity(node: Node) -> dict[str, int]:
    """cpu = cpu_milli // 1000 cores, gpu = gpu count, memory = memory_mib // 1024 GiB."""
    return {"cpu": node.cpu_milli // 1000, "gpu": node.gpu, "memory": node.memory_mib // 1024}


def fits(minimum: dict[str, int], cap: dict[str, int]) -> bool:
    return all(minimum[r] <= cap[r] for r in ("cpu", "gpu", "memory"))


def skip_reason(pod: Pod, caps: list[dict[str, int]]) -> str | None:
    """None when the pod becomes a task on clusters of capacities ``caps``, else the count
    (``meta.counts`` key) it goes to: never scheduled, never deleted, or fits no cluster."""
    if pod.scheduled is None:
        return "skipped_unscheduled"
    if pod.deletion is None:
        return "skipped_no_deletion"
    if not any(fits(pod_minimum(pod), cap) for cap in caps):
        return "dropped_no_fit"
    return None


def usable_nodes(node_list: list[Node] | tuple[Node, ...]) -> list[Node]:
    """The nodes a cluster can be made of: at least one GPU, one core and 1 GiB."""
    return [nd for nd in node_list if nd.gpu >= 1 and nd.cpu_milli >= 1000 and nd.memory_mib >= 1024]


def sample_nodes(usable: list[Node], n_clusters: int, rng: np.random.Generator) -> list[Node]:
    """``n_clusters`` distinct usable nodes, in file order (the first draw of ``convert``'s rng)."""
    chosen = sorted(int(i) for i in rng.choice(len(usable), size=n_clusters, replace=False))
    return [usable[i] for i in chosen]


def time_ordered(pod_list: list[Pod] | tuple[Pod, ...]) -> list[Pod]:
    """The pods by creation time, file order among equal times (the order windows are cut in)."""
    order = sorted(range(len(pod_list)), key=lambda i: (pod_list[i].creation, i))
    return [pod_list[i] for i in order]


def file_key(path: str | os.PathLike) -> tuple[str, int, int]:
    """(resolved path, size, modification time in ns): what the parse caches are keyed on."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None
    return str(Path(path).resolve()), st.st_size, st.st_mtime_ns


@functools.lru_cache(maxsize=4)
def _cached_pods(key: tuple[str, int, int], path: str) -> tuple[Pod, ...]:
    return tuple(read_pods(path))


@functools.lru_cache(maxsize=4)
def _cached_nodes(key: tuple[str, int, int], path: str) -> tuple[Node, ...]:
    return tuple(read_nodes(path))


def load_pods(path: str | os.PathLike) -> tuple[Pod, ...]:
    """:func:`read_pods`, parsed once per (file, size, modification time): the preset calls
    the converter thousands of times in a training run (parsing the openb list takes ~0.1 s)."""
    return _cached_pods(file_key(Path(path)), str(path))


def load_nodes(path: str | os.PathLike) -> tuple[Node, ...]:
    """:func:`read_nodes`, cached like :func:`load_pods`."""
    return _cached_nodes(file_key(Path(path)), str(path))


def convert(pods: str | os.PathLike | None = None, nodes: str | os.PathLike | None = None, *, seed: int = 0,
            **params: Any) -> Instance:
    """Placement instance from the openb pod and node lists (defaults: the files in
    :func:`default_traces_dir`). Parameters: see ``DEFAULTS`` and docs/traces.md."""
    pods_path = trace_file(PODS_FILE, pods, what="pod list")
    nodes_path = trace_file(NODES_FILE, nodes, what="node list")
    p = merge_params(DEFAULTS, params, what="the alibaba converter")
    seed = p_int({"seed": seed}, "seed", minimum=0)
    n_clusters = p_int(p, "clusters", minimum=1)
    max_tasks = p_int(p, "max_tasks", minimum=1, optional=True)
    if max_tasks is None:
        max_tasks = 64 * n_clusters
    step = p_int(p, "step_seconds", minimum=1)
    max_steps = p_int(p, "max_steps", minimum=1)
    window_start = p_int(p, "window_start", minimum=0, optional=True)
    window_seconds = p_int(p, "window_seconds", minimum=1, optional=True)
    overhead = p_float(p, "switching_overhead", minimum=0.0, maximum=1.0)
    pending = p_int(p, "pending_size", minimum=1)
    if p["variant"] not in ("single", "multi"):
        raise InputError(f"must be 'single' or 'multi', got {p['variant']!r}", field="params.variant")

    pod_list = load_pods(pods_path)
    node_list = load_nodes(nodes_path)
    usable = usable_nodes(node_list)
    if len(usable) < n_clusters:
        raise InputError(f"the node list has {len(usable)} usable GPU nodes, {n_clusters} clusters asked",
                         file=str(nodes_path), field="params.clusters")

    rng = np.random.default_rng(seed)
    sampled = sample_nodes(usable, n_clusters, rng)
    caps = [node_capacity(nd) for nd in sampled]

    ordered = time_ordered(pod_list)
    candidates = [pd for pd in ordered if pd.scheduled is not None and pd.deletion is not None]
    if not candidates:
        raise InputError("no pod was scheduled and deleted: nothing to convert", file=str(pods_path))
    if window_start is None:
        last = max(len(candidates) - max_tasks, 0)
        window_start = candidates[int(rng.integers(last + 1))].creation
    window_end = None if window_seconds is None else window_start + window_seconds

    tasks: list[dict[str, Any]] = []
    last_created = window_start
    steps_of: list[int] = []
    counts = {"pods_in_window": 0, "skipped_unscheduled": 0, "skipped_no_deletion": 0, "dropped_no_fit": 0,
              "durations_capped": 0}
    for pd in ordered:
        if pd.creation < window_start:
            continue
        if window_end is not None and pd.creation >= window_end:
            break
        if len(tasks) >= max_tasks:
            break
        counts["pods_in_window"] += 1
        why = skip_reason(pd, caps)
        if why is not None:
            counts[why] += 1
            continue
        minimum = pod_minimum(pd)
        eligible = [n for n, cap in enumerate(caps) if fits(minimum, cap)]
        duration = pd.deletion - pd.scheduled
        k_raw = max(1, -(-duration // step))
        k = min(k_raw, max_steps)
        if k < k_raw:
            counts["durations_capped"] += 1
        steps_of.append(k)
        last_created = pd.creation
        tasks.append({"name": pd.name, "arrival": (pd.creation - window_start) // step, "type": f"fixed-{k}",
                      "minimum": minimum, "eligible": eligible})
    if not tasks:
        raise InputError(f"no pod of the window starting at {window_start} s is scheduled, deleted and fits a "
                         f"sampled node", file=str(pods_path), field="params.window_start")

    types = {f"fixed-{k}": {"base": 1.0 / k} for k in sorted(set(steps_of))}
    payload = {
        "clusters": [{"name": f"{nd.sn} ({nd.model})" if nd.model else nd.sn, "capacity": cap}
                     for nd, cap in zip(sampled, caps)],
        "tasks": tasks,
        "performance": {"kind": "synthetic", "types": types},
        "step_seconds": float(step),
        "switching_overhead": overhead,
        "noise": 0.0,
        "noise_seed": seed,
        "pending_size": pending,
        "variant": p["variant"],
    }
    recorded = dict(p, max_tasks=max_tasks, window_start=window_start)
    arrivals = [t["arrival"] for t in tasks]
    meta = {
        "generator": "edgebench.instances.traces.alibaba:convert",
        "converter": "alibaba",
        "params": json_safe(recorded),
        "seed": seed,
        "source": {"trace": TRACE, "files": source_files([pods_path, nodes_path])},
        "reference": REFERENCE,
        "terms": TERMS,
        "sampled_nodes": [nd.sn for nd in sampled],
        "window": {"start": window_start, "end": window_end, "last_task_created": last_created,
                   "steps": max(arrivals) + 1},
        "counts": dict(counts, tasks=len(tasks)),
        "notes": "one resource-insensitive type per observed duration: the trace gives no speed-up information",
    }
    tag = params_tag({k: v for k, v in p.items() if k != "clusters"}, DEFAULTS)
    data = {
        "format_version": 1,
        "family": "placement",
        "id": f"placement-alibaba-c{n_clusters}-s{seed}{tag}",
        "name": f"Alibaba openb: {len(tasks)} pods on {n_clusters} GPU nodes (seed {seed})",
        "meta": meta,
        "placement": payload,
    }
    return io.instance_from_dict(data, file=str(pods_path))


def sample_stats(path: str | os.PathLike | None = None, step_seconds: int = 300, window: int = 192) -> dict:
    """Arrival rate and duration percentiles (in steps) of the whole pod list at a given
    step length: the numbers behind the default ``step_seconds`` in docs/traces.md."""
    pods = read_pods(trace_file(PODS_FILE, path, what="pod list"))
    ok = sorted((pd for pd in pods if pd.scheduled is not None and pd.deletion is not None),
                key=lambda pd: pd.creation)
    created = np.array([pd.creation for pd in ok], dtype=float)
    dur = np.array([max(1, -(-(pd.deletion - pd.scheduled) // step_seconds)) for pd in ok], dtype=float)
    out = {"pods": len(ok), "duration_steps_p10_p25_p50_p75_p90": np.percentile(dur, [10, 25, 50, 75, 90]).tolist()}
    if len(ok) > window:
        spans = (created[window - 1:] - created[: -(window - 1)]) / step_seconds
        out[f"arrivals_per_step_median_over_{window}_pods"] = float(np.median(window / np.maximum(spans, 1e-9)))
    return out


__all__ = ["convert", "read_pods", "read_nodes", "load_pods", "load_nodes", "file_key", "pod_minimum",
           "node_capacity", "fits", "skip_reason", "usable_nodes", "sample_nodes", "time_ordered", "Pod", "Node",
           "DEFAULTS", "PODS_FILE", "NODES_FILE", "sample_stats"]
