"""Lower bounds on the placement referee's ``total_completion_time`` that hold for EVERY schedule
the referee accepts, re-allocating / pausing ones included (Optimus, Tiresias, their np
variants, every heuristic and policy, the MILP).  Proofs: docs/formulations/placement.md,
"A bound for every referee-feasible schedule".

* :func:`cluster_durations` — per task and eligible cluster, the fewest executed steps of any
  allocation history on that cluster (the constant run at the cluster's full capacity);
* :func:`start_slot_bound` — single-task variant: at most one task starts per cluster and
  step, so the tasks' (cluster, first step) pairs are distinct; the cheapest such assignment
  (a rectangular assignment problem, exact integers) bounds the total completion time;
* :func:`min_energy` — per task, cluster and resource, the least resource-steps (sum over
  executed steps of the allocated cpu / gpu) of any history on that cluster reaching completion
  (a dynamic programme over executed steps and energy keeping the largest progress);
* :func:`energy_bound` — capacity: on a group of clusters at most the summed capacity is used
  per step, so the tasks that can only run there form a preemptive single-machine problem with
  release dates whose optimum (SRPT, exact fractions) bounds their total completion time;
* :func:`placement.bounds.lagrange.lagrangian_bound` — the time-indexed energy relaxation
  (per task a completion time, the least energy of a history finishing by then, per-step
  capacities and first starts priced by multipliers), certified from the multipliers in integers;
* :func:`placement.bounds.trajectory.trajectory_multipliers` — (6): the same Lagrangian
  with each task priced by an allocation history (labelling programme, switching loss included),
  started from (4)'s multipliers, then strengthened by rounding cuts (``sum_j floor((alpha c_j +
  beta g_j) / gamma) <= floor((alpha C + beta G) / gamma)`` per cluster and step, one resource or
  both; :mod:`placement.bounds.rounding`) separated on its master LP (:func:`placement.bounds.trajectory.rounded_multipliers`);
* :func:`reallocating_bound` — the best applicable bound and its kind.

Durations and assignments are integers (step counts) and SRPT is computed in exact fractions.
The energy programme (in placement.bounds.lagrange) evaluates progress with the referee's own float
operations and declares completion at ``1 - PROGRESS_EPS - ENERGY_SLACK`` (a safety margin
against the last-bit rounding of the dominance argument; see the docs).
"""

from __future__ import annotations

import heapq
from fractions import Fraction

import numpy as np
from scipy.optimize import linear_sum_assignment

from edgebench.formulations.placement.bounds.lagrange import BoundTooLarge, energy_front, lagrangian_multipliers
from edgebench.formulations.placement.bounds.trajectory import rounded_multipliers
from edgebench.instances import semantics

#: kind strings written into the manifests' best_known.bound_kind
KIND_SHORTEST = "combinatorial: shortest durations"
KIND_SLOTS = "combinatorial: start slots x per-cluster durations"
KIND_ENERGY = "combinatorial: per-cluster-group energy (SRPT)"
KIND_LAGRANGE = "combinatorial: time-indexed energy (Lagrangian)"
KIND_TRAJECTORY = "combinatorial: exact-trajectory column generation (Lagrangian)"
KIND_ROUNDED = "combinatorial: exact-trajectory column generation with rounding cuts (Lagrangian)"
#: the start-slot assignment's dense cost matrix (tasks x clusters x slots, int64) is refused
#: beyond this many cells (512 MiB; issue 44 case 2: 10,000 tasks asked for 3.35 GiB); every
#: shipped instance needs under 2 million
MAX_SLOT_CELLS = 64_000_000



def proof_applies(payload) -> bool:
    """The preconditions of the proofs (docs): curvature > 1 for every synthetic type (every
    preset: 1.2), and no allocation at or above a task's minimum gains nothing (such a step
    would run, advance the task's noise index and so let it skip noise draws).  Synthetic: the
    gain w sqrt(kappa - p) + base is 0 only if base = 0 and w = 0, i.e. no gpu scale, or a
    minimum of 0 GPUs (or 0 CPUs with a cpu_per_gpu); table: an allocation below the measured
    grid gains 0.  Additive noise (``noise_model = "additive"``): no bound is claimed (its
    clipped steps gain 0 and still advance the noise index; its own, weaker bound is
    `formulations/placement/bounds/additive.py`)."""
    if payload.noise_model != "multiplicative" and payload.noise > 0:
        return False
    perf = payload.performance
    if perf.kind == "synthetic":
        if any(t.curvature <= 1 for t in perf.types.values()):
            return False
        for task in payload.tasks:
            t = perf.types[task.type]
            if t.base <= 0 and (t.gpu_scale is None or task.minimum.gpu <= 0
                                or (t.cpu_per_gpu is not None and task.minimum.cpu <= 0)):
                return False
        return True
    for task in payload.tasks:
        entries = perf.types[task.type].entries
        if task.minimum.cpu < min(e.cpu for e in entries) or task.minimum.gpu < min(e.gpu for e in entries):
            return False
        if any(not (0 < e.seconds < float("inf")) for e in entries):
            return False
    return True


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
    earlier slot on the same cluster is always cheaper), so the assignment is finite.  Its
    dense cost matrix beyond :data:`MAX_SLOT_CELLS` raises :class:`BoundTooLarge` before any is
    allocated."""
    arr = [int(t.arrival) for t in payload.tasks]
    rows = [j for j, row in enumerate(durations) if row]
    if not rows:
        return 0
    N = len(payload.clusters)
    t0 = min(arr[j] for j in rows)
    T = max(arr[j] for j in rows) + len(rows) - t0
    cells = len(rows) * N * T
    if cells > MAX_SLOT_CELLS:
        raise BoundTooLarge(f"start-slot assignment too large: {len(rows):,} tasks x {N * T:,} (cluster, slot) "
                            f"pairs = {cells:,} int64 cells ({cells * 8 / 2**30:.2f} GiB), budget "
                            f"{MAX_SLOT_CELLS:,} cells ({MAX_SLOT_CELLS * 8 / 2**30:.2f} GiB)")
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


def min_energy(payload, j: int, n: int, r: int) -> int | None:
    """Least sum over executed steps of resource r (0 = cpu, 1 = gpu) that task j needs on
    cluster n under any allocation history (switching loss relaxed, noise per executed step
    exact); None when it cannot finish on n at any constant allocation (then, by the duration
    argument, at none): the last value of the energy front
    (:func:`placement.bounds.lagrange.energy_front`; by the dominance argument of the docs
    the largest progress per energy is the only state worth keeping)."""
    last = int(energy_front(payload, j, n, r, None, semantics.MAX_RUN_STEPS + 1)[-1])
    return None if last < 0 else last


def srpt_total(jobs: list[tuple[int, Fraction]]) -> Fraction:
    """Optimal sum of (completion - release) of 1 | r_j, pmtn | sum C_j (shortest remaining
    processing time first), exact; ``jobs`` = (release, processing time)."""
    order = sorted(jobs)
    heap: list[tuple[Fraction, int]] = []
    t = Fraction(0)
    total = Fraction(0)
    i = 0
    while i < len(order) or heap:
        if not heap and t < order[i][0]:
            t = Fraction(order[i][0])
        while i < len(order) and order[i][0] <= t:
            heapq.heappush(heap, (order[i][1], order[i][0]))
            i += 1
        rem, rel = heapq.heappop(heap)
        nxt = Fraction(order[i][0]) if i < len(order) else None
        if nxt is None or t + rem <= nxt:
            t += rem
            total += t - rel
        else:
            heapq.heappush(heap, (rem - (nxt - t), rel))
            t = nxt
    return total


def energy_bound(payload, durations: list[dict[int, int]]) -> int:
    """Tasks are split by their set of clusters where they can finish (disjoint groups); a group
    runs only on its clusters, whose summed capacity of resource r bounds its use per step, so
    sum over the group of (F_j - a_j) >= SRPT with p_j = min_n E_j(n, r) / capacity; per group
    the larger of that (both resources) and sum_j min_n d_j(n) is kept, and the groups add up."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for j, row in enumerate(durations):
        if row:
            groups.setdefault(tuple(sorted(row)), []).append(j)
    arr = [int(t.arrival) for t in payload.tasks]
    total = 0
    for clusters, js in groups.items():
        best = sum(min(durations[j].values()) for j in js)
        for r in (0, 1):
            cap = sum((payload.clusters[n].capacity.cpu, payload.clusters[n].capacity.gpu)[r] for n in clusters)
            if cap <= 0:
                continue
            jobs = []
            for j in js:
                e = [min_energy(payload, j, n, r) for n in clusters]
                jobs.append((arr[j], Fraction(min(x for x in e if x is not None), cap)))
            v = srpt_total(jobs)
            best = max(best, -((-v.numerator) // v.denominator))  # ceil: the sum of integers F_j - a_j
        total += best
    return int(total)


def reallocating_bound(payload) -> tuple[int, str] | None:
    """(bound, kind): the larger of the applicable bounds; None where no proof applies.  The
    start-slot assignment (2) is left out where its dense matrix passes :data:`MAX_SLOT_CELLS`
    (variant single: the Lagrangian (4) starts from its duals, so (4) >= (2) and the bound's
    value is the same; only a tie would have been labelled KIND_SLOTS).  Where (4)'s data pass
    their budgets (``placement.bounds.lagrange.MAX_FRONT_CELLS``, ``MAX_ASSIGNMENT_ENTRIES``), (4) and
    (6) are left out: the best of the bounds before them is returned."""
    if not proof_applies(payload):
        return None
    durations = cluster_durations(payload)
    best, kind = shortest_bound(durations), KIND_SHORTEST
    energy = energy_bound(payload, durations)
    if energy > best:
        best, kind = energy, KIND_ENERGY
    if payload.variant == "single":
        try:
            slots = start_slot_bound(payload, durations)
        except BoundTooLarge:  # (4) below starts from this assignment's duals: (4) >= (2) anyway
            slots = 0
        if slots > best:
            best, kind = slots, KIND_SLOTS
    try:
        start = lagrangian_multipliers(payload, durations)
    except BoundTooLarge:  # (4)'s data past its memory budget: the combinatorial bounds above
        return best, kind
    if start[0] > best:
        best, kind = start[0], KIND_LAGRANGE
    rounded = rounded_multipliers(payload, durations, start)  # (6) from (4)'s point, then its cuts
    if rounded.plain > best:
        best, kind = rounded.plain, KIND_TRAJECTORY
    if rounded.value > best:
        best, kind = rounded.value, KIND_ROUNDED
    return best, kind
