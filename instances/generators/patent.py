"""The patent's worked example (offloading preset ``patent-example``) and the list
scheduler used to check it.

Facts from the source: servers es1 = (6 CPU, 3 mem, {a}), es2 = (3, 2, {b}),
es3 = (2, 1, {a}), no cloud; adj = [[0, 1, 1.2], [1, 0, 0.2], [1.2, 0.2, 0]]; tasks
1:a 2:b 3:a 4:b 5:a 6:b; edges (1,2) (1,3) (2,4) (2,5) (3,5) (4,6) (5,6); every task takes
2 CPU and 1 mem; published placement {1:es1, 3:es1, 2:es2, 4:es2, 5:es3, 6:es2},
completion 2.8 s.

Chosen (the source gives none of them): every task runs 0.5 s; edge data 0.5 on (1,2),
(2,5), (3,5) and 1 on (1,3), (2,4), (4,6), (5,6); bandwidth 1; image_pull_delay 1 s; the
workflow arrives at es1 (its source) with 1 unit of input data for task 1. With these the
published placement, scheduled as early as possible, completes at 2.8 s, and every other
of the 3^6 placements completes at 3.4 s or later (:func:`brute_force` checks it; the test
suite runs it). In the files tasks and servers are 0-based: task k is index k-1, es_i is
server i-1.
"""

from __future__ import annotations

import itertools
from typing import Any, Sequence

from edgebench.errors import InputError
from edgebench.instances import io, semantics
from edgebench.instances.generators import check_seed, make_meta, resolve_params
from edgebench.instances.timeline import Timeline

GENERATOR = "edgebench.instances.generators.patent:generate_patent_example"
SOURCE = "workflow-offloading patent (seed 003), worked example"
REFERENCE = "一种基于马尔可夫决策过程的工作流任务卸载方法 (a workflow task offloading method based on a Markov decision process): worked example"

#: the published placement, 0-based: task index -> server index
PUBLISHED_PLACEMENT = (0, 1, 0, 1, 2, 1)
PUBLISHED_COMPLETION = 2.8

#: the values the source leaves open, as chosen (docs/generators.md)
EXEC_TIME = 0.5
EDGE_DATA = {(1, 2): 0.5, (1, 3): 1.0, (2, 4): 1.0, (2, 5): 0.5, (3, 5): 0.5, (4, 6): 1.0, (5, 6): 1.0}
INPUT_DATA = 1.0
BANDWIDTH = 1.0
IMAGE_PULL_DELAY = 1.0


def patent_example_dict(seed: int = 0) -> dict[str, Any]:
    images = ["a", "b", "a", "b", "a", "b"]
    tasks = []
    for k, img in enumerate(images, start=1):
        task: dict[str, Any] = {"name": f"task{k}",
                                "functions": [{"image": img, "cpu": 2.0, "mem": 1.0, "exec_time": EXEC_TIME}]}
        if k == 1:
            task["input_data"] = INPUT_DATA
        tasks.append(task)
    edges = [{"src": a - 1, "dst": b - 1, "data": d} for (a, b), d in EDGE_DATA.items()]
    chosen = {"exec_time": EXEC_TIME, "edge_data": {f"{a}->{b}": d for (a, b), d in EDGE_DATA.items()},
              "input_data_task1": INPUT_DATA, "bandwidth": BANDWIDTH, "image_pull_delay": IMAGE_PULL_DELAY,
              "source": "es1"}
    return {
        "format_version": 1,
        "family": "offloading",
        "id": f"offloading-patent-example-s{seed}",
        "name": "offloading patent-example: the patent's worked example, 3 edge servers, 6 tasks (published "
                "placement completes at 2.8 s)",
        "meta": make_meta(GENERATOR, "patent-example", {}, seed, SOURCE, REFERENCE, chosen=chosen,
                          published={"placement": {f"task{t + 1}": f"es{s + 1}"
                                                   for t, s in enumerate(PUBLISHED_PLACEMENT)},
                                     "completion": PUBLISHED_COMPLETION}),
        "offloading": {
            "servers": [
                {"name": "es1", "cpu": 6.0, "mem": 3.0, "images": ["a"]},
                {"name": "es2", "cpu": 3.0, "mem": 2.0, "images": ["b"]},
                {"name": "es3", "cpu": 2.0, "mem": 1.0, "images": ["a"]},
            ],
            "distance": [[0.0, 1.0, 1.2], [1.0, 0.0, 0.2], [1.2, 0.2, 0.0]],
            "bandwidth": BANDWIDTH,
            "image_pull_delay": IMAGE_PULL_DELAY,
            "workflows": [{"name": "example", "arrival": 0.0, "source": 0, "tasks": tasks, "edges": edges}],
        },
    }


def generate_patent_example(preset: str = "patent-example", *, seed: int = 0, **overrides: Any):
    """The worked example. It is deterministic: the seed only enters the id and meta."""
    if preset != "patent-example":
        raise InputError(f"unknown preset {preset!r} (known: patent-example)", field="preset")
    seed = check_seed(seed)
    resolve_params(preset, {}, overrides)  # no parameters: any override is unknown
    return io.instance_from_dict(patent_example_dict(seed))


# --------------------------------------------------------------------------------------
# List scheduling (the check)
# --------------------------------------------------------------------------------------


def topological_order(payload, w: int) -> list[int]:
    """Kahn's order of workflow w, smallest ready index first."""
    wf = payload.workflows[w]
    return semantics.topological_order(len(wf.tasks), ((e.src, e.dst) for e in wf.edges))


def list_schedule(payload, placement: Sequence[int], w: int = 0) -> dict[str, Any] | None:
    """Schedule workflow w with task t on server placement[t], tasks taken in topological
    order, each at the earliest time at which its inputs have arrived (predecessor finish
    + semantics.transfer_time; entry tasks: arrival + semantics.input_time) and its server
    has the CPU and memory free for its whole duration (semantics.task_duration), given
    the tasks already scheduled (the suite's one timeline, ``edgebench.instances.timeline``). Returns {"start", "finish", "makespan"} (makespan counted
    from the workflow's arrival) or None when a task cannot fit its server at all."""
    wf = payload.workflows[w]
    n = len(wf.tasks)
    if len(placement) != n:
        raise ValueError(f"placement needs {n} entries")
    preds: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for k, e in enumerate(wf.edges):
        preds[e.dst].append((e.src, k))
    start = [0.0] * n
    finish = [0.0] * n
    timeline = Timeline.of(payload)
    for t in topological_order(payload, w):
        s = int(placement[t])
        if not semantics.can_host(payload, w, t, s):
            return None
        ready = wf.arrival + semantics.input_time(payload, w, t, s)
        for u, k in preds[t]:
            ready = max(ready, finish[u] + semantics.transfer_time(payload, w, k, int(placement[u]), s))
        dur = semantics.task_duration(payload, w, t, s)
        st = timeline.place(s, ready, dur, *semantics.task_demand(payload, w, t))
        start[t], finish[t] = st, st + dur
    return {"start": start, "finish": finish, "makespan": max(finish) - wf.arrival}


def brute_force(payload, w: int = 0) -> dict[tuple[int, ...], float]:
    """Makespan of every placement of workflow w (servers^tasks of them); placements with
    a task that cannot fit its server are left out."""
    n = len(payload.workflows[w].tasks)
    out = {}
    for pl in itertools.product(range(len(payload.servers)), repeat=n):
        res = list_schedule(payload, pl, w)
        if res is not None:
            out[pl] = res["makespan"]
    return out
