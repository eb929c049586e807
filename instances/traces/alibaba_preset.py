"""The ``alibaba`` placement preset: windows of the Alibaba openb trace for training.

``generate_alibaba(seed=s, num_tasks=n, ...)`` is :func:`alibaba.convert` with the window
start chosen here, so that no instance it makes shares a pod with the shipped set
``placement-alibaba-v2`` (training, validation and held-out seeds alike; otherwise the set
would measure memorised windows):

1. the set's windows are recomputed with the converter itself, from the set's recipe (its
   seeds and parameters) on the same trace files: each is the creation-time interval
   ``[window start, creation of its last task]``;
2. the nodes are drawn as ``convert`` draws them, by its ``default_rng(node_seed)`` (``node_seed``
   defaults to the seed; a fixed one keeps the clusters of every instance the same, which
   ``edgebench train tapfinger`` needs: its environment has one action grid); with them,
   every candidate start (the creation time of a pod that was scheduled and deleted) is
   followed to the creation of its ``num_tasks``-th task; a start is allowed when that
   interval holds ``num_tasks`` tasks and is disjoint in time from every set window;
3. the start is drawn uniformly among the allowed ones by an rng of its own
   (``default_rng([seed, WINDOW_STREAM])``) and passed to ``convert`` as ``window_start``.

Parsed trace files and the set's windows are cached per (file, size, modification time).
Rule and parameters: docs/traces.md ("The alibaba preset").
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.generators import check_cells
from edgebench.instances.model import Instance
from edgebench.instances.sets import RECIPES
from edgebench.instances.traces import merge_params, p_int, trace_file
from edgebench.instances.traces.alibaba import (
    DEFAULTS,
    NODES_FILE,
    PODS_FILE,
    convert,
    file_key,
    load_nodes,
    load_pods,
    node_capacity,
    sample_nodes,
    skip_reason,
    time_ordered,
    usable_nodes,
)

#: the shipped set whose windows the preset never draws
HELD_SET = "placement-alibaba-v2"
#: second entropy word of the window draw's rng (the first is the seed)
WINDOW_STREAM = 0xA11BABA

PRESET_DEFAULTS: dict[str, Any] = {
    "num_tasks": None,        # tasks per instance (None = 64 x clusters); the converter's max_tasks
    "max_tasks": None,        # the converter's name for num_tasks (give one of the two)
    **{k: v for k, v in DEFAULTS.items() if k not in ("window_start", "max_tasks")},
    "node_seed": None,        # the seed convert samples the nodes with (None = the instance's seed)
    "pods": None,             # pod list path (None = the traces folder's)
    "nodes": None,            # node list path (None = the traces folder's)
}


@functools.lru_cache(maxsize=4)
def _held_windows(pods_key: tuple, nodes_key: tuple, pods: str, nodes: str) -> tuple[tuple[int, int], ...]:
    recipe = RECIPES[HELD_SET]
    out = []
    for item in recipe.items():
        inst = convert(pods, nodes, seed=item.seed, **{**recipe.params, **item.params})
        w = inst.meta["window"]
        out.append((int(w["start"]), int(w["last_task_created"])))
    return tuple(out)


def held_windows(pods: str | None = None, nodes: str | None = None) -> tuple[tuple[int, int], ...]:
    """The creation-time intervals ``(start, last task's creation)`` of the instances of
    ``placement-alibaba-v2``, recomputed by :func:`alibaba.convert` on these trace files."""
    pp = trace_file(PODS_FILE, pods, what="pod list")
    npath = trace_file(NODES_FILE, nodes, what="node list")
    return _held_windows(file_key(pp), file_key(npath), str(pp), str(npath))


def allowed_starts(ordered, caps: list[dict[str, int]], num_tasks: int,
                   held: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends): the candidate window starts (creation times of scheduled-and-deleted
    pods) whose window of ``num_tasks`` tasks on clusters ``caps`` is complete and disjoint in
    time from every ``held`` interval, with the creation time of each one's last task."""
    created = np.fromiter((pd.creation for pd in ordered), dtype=np.int64, count=len(ordered))
    memo: dict[tuple, bool] = {}
    is_task = np.zeros(len(ordered), dtype=bool)
    for i, pd in enumerate(ordered):
        key = (pd.scheduled is None, pd.deletion is None, pd.cpu_milli, pd.num_gpu, pd.memory_mib)
        if key not in memo:
            memo[key] = skip_reason(pd, caps) is None
        is_task[i] = memo[key]
    candidate = np.fromiter((pd.scheduled is not None and pd.deletion is not None for pd in ordered), dtype=bool,
                            count=len(ordered))
    starts = np.unique(created[candidate])
    task_pos = np.flatnonzero(is_task)
    first = np.searchsorted(task_pos, np.searchsorted(created, starts, side="left"), side="left")
    last = first + num_tasks - 1
    full = last < len(task_pos)
    starts, last = starts[full], last[full]
    ends = created[task_pos[last]]
    ok = np.ones(len(starts), dtype=bool)
    for lo, hi in held:
        ok &= (ends < lo) | (starts > hi)
    return starts[ok], ends[ok]


def generate_alibaba(*, seed: int = 0, **overrides: Any) -> Instance:
    """Placement preset ``alibaba``: a window of ``num_tasks`` openb pods (default 64 x
    clusters) on ``clusters`` sampled GPU nodes, never overlapping the windows of
    ``placement-alibaba-v2`` (module docstring). Other parameters: those of
    :func:`alibaba.convert` except ``window_start`` (drawn here), and ``node_seed``. The
    instance is ``convert(seed=node_seed, max_tasks=num_tasks, window_start=<drawn>, ...)``
    with the preset's id, ``meta.preset``, ``meta.seed`` and ``meta.params``."""
    if "window_start" in overrides:
        raise InputError("the alibaba preset draws the window start itself (outside the placement-alibaba-v2 "
                         "windows); convert a chosen window with `edgebench convert alibaba --set window_start=S`",
                         field="params.window_start")
    p = merge_params(PRESET_DEFAULTS, overrides, what="the alibaba preset")
    if p["num_tasks"] is not None and p["max_tasks"] is not None:
        raise InputError("give num_tasks or max_tasks (the same window size), not both", field="params.num_tasks")
    seed = p_int({"seed": seed}, "seed", minimum=0)
    node_seed = p_int(p, "node_seed", minimum=0, optional=True)
    if node_seed is None:
        node_seed = seed
    n_clusters = p_int(p, "clusters", minimum=1)
    size_key = "num_tasks" if p["num_tasks"] is not None else "max_tasks"
    num_tasks = p_int(p, size_key, minimum=1, optional=True)
    if num_tasks is None:
        num_tasks = 64 * n_clusters
    check_cells(3 * n_clusters + num_tasks * (5 + n_clusters), "3 x clusters + num_tasks x (5 + clusters)")
    pods = trace_file(PODS_FILE, p["pods"], what="pod list")
    nodes = trace_file(NODES_FILE, p["nodes"], what="node list")
    held = held_windows(str(pods), str(nodes))

    usable = usable_nodes(load_nodes(nodes))
    if len(usable) < n_clusters:
        raise InputError(f"the node list has {len(usable)} usable GPU nodes, {n_clusters} clusters asked",
                         file=str(nodes), field="params.clusters")
    sampled = sample_nodes(usable, n_clusters, np.random.default_rng(node_seed))  # convert's first draw
    starts, ends = allowed_starts(time_ordered(load_pods(pods)), [node_capacity(nd) for nd in sampled],
                                  num_tasks, held)
    if len(starts) == 0:
        raise InputError(f"no window of {num_tasks} tasks on the sampled nodes lies outside the {HELD_SET} windows",
                         field=f"params.{size_key}")
    k = int(np.random.default_rng([seed, WINDOW_STREAM]).integers(len(starts)))
    start, end = int(starts[k]), int(ends[k])

    conv = {key: p[key] for key in DEFAULTS if key not in ("window_start", "max_tasks")}
    inst = convert(pods, nodes, seed=node_seed, **conv, window_start=start, max_tasks=num_tasks)
    meta = dict(inst.meta)
    got = meta["window"]
    whole = p["window_seconds"] is None  # else the window may close before its num_tasks-th task
    if (meta["sampled_nodes"] != [nd.sn for nd in sampled] or got["last_task_created"] > end
            or any(not (got["last_task_created"] < lo or start > hi) for lo, hi in held)
            or (whole and (meta["counts"]["tasks"] != num_tasks or got["last_task_created"] != end))):
        # the two window computations drifted apart: a bug, not an input error
        raise RuntimeError(f"alibaba preset seed {seed} (nodes {node_seed}): the converter's window {got} is not "
                           f"the one drawn ({start}..{end}) outside {held}")
    params = dict(meta["params"])
    del params["max_tasks"]
    meta.update(generator="edgebench.instances.traces.alibaba_preset:generate_alibaba", preset="alibaba",
                seed=seed, params={"num_tasks": num_tasks, "node_seed": node_seed, **params},
                held_out={"set": HELD_SET, "windows": [list(w) for w in held]})
    data = inst.model_dump(mode="json")
    data.update(id=f"placement-alibaba-s{seed}", meta=meta,
                name=f"Alibaba openb window: {meta['counts']['tasks']} pods on {n_clusters} GPU nodes (seed {seed})")
    return io.instance_from_dict(data, file=str(pods))


__all__ = ["generate_alibaba", "held_windows", "allowed_starts", "HELD_SET", "WINDOW_STREAM", "PRESET_DEFAULTS"]
