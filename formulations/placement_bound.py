"""Lower bounds on the placement referee's ``total_completion_time`` that hold for EVERY schedule
the referee accepts, re-allocating / pausing ones included (Optimus, Tiresias, their np
variants, every heuristic and policy, the MILP).  Proofs: docs/formulations/placement.md,
"A bound for every referee-feasible schedule".

* :func:`cluster_durations` — per task and eligible cluster, the fewest executed steps of any
  allocation history on that cluster (the constant run at the cluster's full capacity);
* :func:`start_slot_bound` — single-task variant: at most one task starts per cluster and
  step, so the tasks' (cluster, first step) pairs are distinct; the cheapest such assignment
  (a rectangular assignment problem, exact integers) bounds the total completion time;
* :func:`reallocating_bound` — the best applicable bound and its kind.

All values are integers (step counts): no floating-point tolerance enters the bound.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from edgebench.instances import semantics

#: kind strings written into the manifests' best_known.bound_kind
KIND_SHORTEST = "combinatorial: shortest durations"
KIND_SLOTS = "combinatorial: start slots x per-cluster durations"


def curvature_ok(payload) -> bool:
    """The duration proof needs curvature > 1 for every synthetic type (every preset: 1.2)."""
    perf = payload.performance
    return perf.kind != "synthetic" or all(t.curvature > 1 for t in perf.types.values())


def cluster_durations(payload) -> list[dict[int, int]]:
    """Per task j, {eligible cluster n: fewest executed steps on n} for the clusters where j can
    finish at all: the shortest constant run among :func:`semantics.dominant_options` (the
    cluster's full capacity is among them or dominated by an equally short one)."""
    out: list[dict[int, int]] = []
    for j, task in enumerate(payload.tasks):
        row: dict[int, int] = {}
        for n in task.eligible:
            steps = [d for _, _, d in semantics.dominant_options(payload, j, n)]
            if steps:
                row[n] = int(min(steps))
        out.append(row)
    return out


def shortest_bound(durations: list[dict[int, int]]) -> int:
    """sum_j min_n d_j(n) (tasks that can finish nowhere add 0)."""
    return int(sum(min(row.values(), default=0) for row in durations))


def start_slot_bound(payload, durations: list[dict[int, int]]) -> int:
    """Single-task variant: min over injective maps j -> (n, s) with n eligible, s >= a_j of
    sum_j (s - a_j + d_j(n)).  Slots s >= max arrival + #tasks are never needed (a free
    earlier slot on the same cluster is always cheaper), so the assignment is finite."""
    arr = [int(t.arrival) for t in payload.tasks]
    rows = [j for j, row in enumerate(durations) if row]
    if not rows:
        return 0
    N = len(payload.clusters)
    t0 = min(arr[j] for j in rows)
    T = max(arr[j] for j in rows) + len(rows) - t0
    big = np.int64(1) << 40
    cost = np.full((len(rows), N * T), big, dtype=np.int64)
    steps = np.arange(T, dtype=np.int64) + t0
    for i, j in enumerate(rows):
        for n, d in durations[j].items():
            c = steps - arr[j] + d
            c[steps < arr[j]] = big
            cost[i, n * T:(n + 1) * T] = c
    r, c = linear_sum_assignment(cost)
    total = cost[r, c]
    assert (total < big).all(), "every task has a slot on an eligible cluster"
    return int(total.sum())


def reallocating_bound(payload) -> tuple[int, str] | None:
    """(bound, kind): the larger of the applicable bounds; None where no proof applies."""
    if not curvature_ok(payload):
        return None
    durations = cluster_durations(payload)
    best, kind = shortest_bound(durations), KIND_SHORTEST
    if payload.variant == "single":
        slots = start_slot_bound(payload, durations)
        if slots > best:
            best, kind = slots, KIND_SLOTS
    return best, kind
