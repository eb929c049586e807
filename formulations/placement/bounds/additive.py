"""A lower bound on ``total_completion_time`` for placement instances with the TapFinger
authors' additive clipped noise (``noise_model = "additive"``), valid for every schedule the
referee accepts (re-allocation, pauses, switching loss).

The proofs of :mod:`placement.bounds.ladder` do not cover this model (a clipped
step gains 0 and still advances the task's noise index), so it has its own, weaker bound:
**optimistic draws**. Every executed step k of task j gains at most ``max(g*_j + eps_k, 0)``,
with ``g*_j`` the largest noise-free gain any of its allocations gives at any progress; so
task j needs at least ``K_j`` executed steps, the first K with
``sum_{k<K} max(g*_j + eps_k, 0) >= 1 - PROGRESS_EPS`` (the same draws eps_k as the referee's),
and ``sum_j K_j`` bounds the total completion time. In variant single the tasks also need
distinct (cluster, first step) slots, so the start-slot assignment of
:func:`placement.bounds.ladder.start_slot_bound` over the per-cluster counts ``K_j(n)`` (the best gain on
cluster n alone) bounds it too, and is never below ``sum_j K_j``.

With the capacities: bound (6)'s column generation with its rounding cuts
(:func:`trajectory_additive`), whose labelling follows each history's progress through the
*envelope* of the additive step (:func:`placement.bounds.trajectory.additive_envelope`: the most one
step can reach from any progress at most the current one), started from the start-slot
assignment. Proofs: docs/formulations/placement.md, "A bound under additive noise"; brute-force
tests: tests/formulations/test_placement_bound_additive.py.
"""

from __future__ import annotations

import numpy as np

from edgebench.formulations.placement.bounds.ladder import BoundTooLarge, cluster_durations, start_slot_bound
from edgebench.formulations.placement.bounds.lagrange import SCALE, assignment_duals, greedy_columns, horizon
from edgebench.formulations.placement.bounds.trajectory import CUT_ROUNDS, ROUNDS, STALL, WORK, Rounded, generate
from edgebench.instances import semantics

KIND = "combinatorial: optimistic draws (additive noise)"
KIND_SLOTS = "combinatorial: optimistic draws and start slots (additive noise)"
KIND_TRAJECTORY = "combinatorial: envelope-trajectory column generation with rounding cuts (additive noise)"
#: completion is taken at 1 - PROGRESS_EPS - SLACK: a margin against last-bit differences
#: between the referee's per-allocation float arithmetic and the optimistic sum
SLACK = 1e-9


def best_gain(payload, j: int, clusters=None) -> float:
    """The largest noise-free gain task j gets in one step at any allocation it may be given
    (minimum <= allocation <= capacity of an eligible cluster, or of one of ``clusters``) and any
    progress >= 0.
    Synthetic: ``w sqrt(max(kappa - p, 0)) + base`` is non-increasing in p and w =
    tanh(min(gpu, cpu / cpu_per_gpu) / gpu_scale) non-decreasing in the allocation, so each
    cluster's full capacity at progress 0 decides. Table: the gain does not depend on the
    progress; every allocation is looked at (the measured seconds need not fall with more
    resources)."""
    task = payload.tasks[j]
    best = 0.0
    for n in task.eligible if clusters is None else clusters:
        cap = payload.clusters[n].capacity
        if not semantics.fits(task.minimum, cap):
            continue
        if payload.performance.kind == "synthetic":
            best = max(best, semantics.increment(payload, j, cap.cpu, cap.gpu, 0.0))
        else:
            for c, g in semantics.allocation_options(payload, j, n):
                best = max(best, semantics.increment(payload, j, c, g, 0.0))
    return best


def least_steps(payload, j: int, n: int | None = None) -> int:
    """K_j: the fewest executed steps in which task j could finish, every step at its best
    gain under its own noise draws (:func:`semantics.noisy_gain`); with ``n``, K_j(n): the best
    gain on cluster n alone."""
    top = best_gain(payload, j, None if n is None else (n,))
    done = 1.0 - semantics.PROGRESS_EPS - SLACK
    total = 0.0
    for k in range(semantics.MAX_RUN_STEPS):
        total += semantics.noisy_gain(payload, j, k, top)
        if total >= done:
            return k + 1
    # even the best gain at every step does not finish: no referee-feasible schedule exists
    # (the referee stops a run after MAX_RUN_STEPS steps), so any value is a valid bound
    return semantics.MAX_RUN_STEPS


def slot_steps(payload) -> list[dict[int, int]]:
    """Per task j, {n: K_j(n)} over its eligible clusters where its minimum fits."""
    return [{n: least_steps(payload, j, n) for n in task.eligible
             if semantics.fits(task.minimum, payload.clusters[n].capacity)}
            for j, task in enumerate(payload.tasks)]


def trajectory_additive(payload, floor: int, *, cut_rounds: int = CUT_ROUNDS, rounds: int = ROUNDS,
                        stall: int = STALL, work: int = WORK) -> Rounded | None:
    """Bound (6) with its rounding cuts under additive noise: the column generation of
    :func:`placement.bounds.trajectory.generate`, whose labelling advances each history's progress by
    the monotone envelope of the additive step (:class:`placement.bounds.trajectory.Options` under
    additive noise, :func:`placement.bounds.trajectory.additive_envelope`).  Started at Lam = 0 and,
    variant single, the start-slot
    assignment's duals over the counts K_j(n) (so its first point is that assignment), with
    ``floor`` (a valid bound) as the value to beat.  None when some task could finish on a
    cluster only by re-allocating (no fixed run finishes there): the seed schedule needs one."""
    durations = cluster_durations(payload)
    slots = slot_steps(payload)
    if any(set(d) != set(k) for d, k in zip(durations, slots)):
        return None
    if not any(durations):
        return None
    N = len(payload.clusters)
    H = horizon(payload, greedy_columns(payload, durations))
    Mu = None
    if payload.variant == "single":
        while True:  # widen H until the assignment's tail holds at most one task per cluster
            _, mu, chosen = assignment_duals(payload, slots, H)
            tail = np.bincount([n for n, t in chosen if t >= H], minlength=N)
            if tail.max() <= 1:
                break
            H += int(tail.max())
        Mu = np.floor(mu * (1 << SCALE)).astype(np.int64)
    Lam = np.zeros((N, 2, H), dtype=np.int64)
    return generate(payload, durations, (floor, Lam, Mu, H), rounds=rounds, stall=stall, work=work,
                     cut_rounds=cut_rounds)


def additive_bound(payload) -> tuple[int, str] | None:
    """(bound, kind) for an instance with additive noise: the largest of the sum of K_j, in
    variant single the start-slot assignment over K_j(n), and the trajectory column generation
    with rounding cuts (:func:`trajectory_additive`) started from them; None for any other
    instance (the bounds of :mod:`placement.bounds.ladder` apply there)."""
    if payload.noise_model != "additive" or payload.noise <= 0:
        return None
    best, kind = sum(least_steps(payload, j) for j in range(len(payload.tasks))), KIND
    if payload.variant == "single":
        try:
            slots = start_slot_bound(payload, slot_steps(payload))
        except BoundTooLarge:  # its dense matrix passes the memory budget: left out (a weaker, valid bound)
            slots = 0
        if slots > best:
            best, kind = slots, KIND_SLOTS
    traj = trajectory_additive(payload, best)
    if traj is not None and traj.value > best:
        best, kind = traj.value, KIND_TRAJECTORY
    return best, kind


__all__ = ["additive_bound", "trajectory_additive", "least_steps", "slot_steps", "best_gain", "KIND", "KIND_SLOTS",
           "KIND_TRAJECTORY"]
