"""A bound of the mapping family's multi-job stream problem as the referee scores it.

Jobs of a stream may wait (``start >= arrival``); the referee cuts time into segments with a
constant active set, takes ``L`` as the duration-weighted mean of the segments' ``L`` and
``D_BW`` as the mean over every task link of every job (docs/referee.md). This module bounds
the referee's ``composite`` over EVERY such stream solution (not only the schedule where all
jobs start at their arrivals):

* per active set A (jobs that can be active together), the branch and bound of
  :mod:`mapping_bnb` bounds ``H(A) = max (1 - pi_A/2) + (pi_A/2) D_A - L_A/2`` over the
  placements of A together (``pi_A`` = A's share of all task links, ``D_A`` its own links'
  mean delta) — every segment whose active set is A scores at most H(A);
* the composite is the duration-weighted mean of the segments' scores, and each job is active
  for exactly its duration: an LP over the shares of time of the active sets (solved in its
  dual form, whose every feasible point is a bound) combines the H(A).

Proof and limits: docs/formulations/mapping.md, "Multi-job streams: a bound of the referee's
problem".
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from scipy.optimize import linprog

from edgebench.formulations.mapping_bnb import branch_and_bound
from edgebench.formulations.mapping_problem import Goal, build_problem
from edgebench.instances.model import Instance
from edgebench.referee.common import ATOL, RTOL

#: seconds of branch and bound per active set (its proven bound at the limit is used)
SET_TIME_LIMIT = 5.0


@dataclass(frozen=True)
class StreamBound:
    """``bound``: the referee's composite of every feasible stream solution is <= it.
    ``set_bounds``: H(A) per active set (None: A cannot be active together); ``lam``: the
    dual multipliers per job; ``set_status``: the branch and bound's status per set."""

    bound: float
    set_bounds: dict[tuple[int, ...], float | None]
    lam: tuple[float, ...]
    set_status: dict[tuple[int, ...], str] = field(default_factory=dict)


def set_goal(instance: Instance, jobs: Sequence[int]) -> Goal:
    """The goal whose maximum over the placements of ``jobs`` together bounds the score
    ``0.5 + 0.5 D_BW - 0.5 L_s`` of any segment where exactly ``jobs`` are active."""
    m = instance.mapping
    v_all = sum(len(j.links) for j in m.jobs)
    pi = sum(len(m.jobs[j].links) for j in jobs) / v_all if v_all else 0.0
    return Goal("stream-set", 1.0 - 0.5 * pi, 0.5 * pi, 0.5)


def fits_in_total(instance: Instance, jobs: Sequence[int]) -> bool:
    """False when the jobs' total CPU or RAM demand exceeds the network's total free capacity
    (beside the background) even with the referee's tolerance on every node: then no
    placement of them together passes the referee's capacity checks."""
    m = instance.mapping
    for res, bg in (("cpu", "bg_cpu"), ("ram", "bg_ram")):
        free = sum(getattr(n, res) - getattr(n, bg) for n in m.nodes)
        tol = sum(ATOL + RTOL * abs(getattr(n, res) - getattr(n, bg)) for n in m.nodes)
        if sum(getattr(t, res) for j in jobs for t in m.jobs[j].tasks) > free + tol:
            return False
    return True


def active_set_bound(instance: Instance, jobs: Sequence[int], *, time_limit: float | None = SET_TIME_LIMIT
                     ) -> tuple[float | None, str]:
    """(H(jobs), status): None when no placement of the jobs together fits the network."""
    g = set_goal(instance, jobs)
    if not fits_in_total(instance, jobs):
        return None, "infeasible (total demand)"
    pr = build_problem(instance, list(jobs))
    if pr.routing != "shortest_path":
        return 1.0, "not searched (the branch and bound needs shortest-path routing)"
    r = branch_and_bound(pr, g, time_limit=time_limit)
    if r.status == "infeasible":
        return None, r.status
    if not math.isfinite(r.bound):
        return 1.0, r.status  # no bound from the search: the segment score is <= 1 anyway
    return min(1.0, float(r.bound)), r.status


def combine(durations: Sequence[float], set_bounds: dict[tuple[int, ...], float | None]) -> tuple[float, tuple[float, ...]]:
    """The LP bound from the per-set bounds: ``min mu`` s.t. ``mu + sum_{j in A} lam_j >= H(A)``
    for every set A that can be active, ``sum_j d_j lam_j <= 0``. The returned value is
    recomputed from ``lam`` (not taken from the LP solver), so it is a bound whatever the
    solver's accuracy. Returns (bound, lam)."""
    d = np.asarray(durations, dtype=float)
    J = len(d)
    sets = [A for A, h in set_bounds.items() if h is not None]
    if any((j,) not in set_bounds or set_bounds[(j,)] is None for j in range(J)):
        return 1.0, (0.0,) * J  # some job fits nowhere alone: no feasible stream exists
    if not d.max() > 0:
        return 1.0, (0.0,) * J  # no job is ever active: nothing to combine
    H = np.array([set_bounds[A] for A in sets])
    rows = np.zeros((len(sets), J + 1))
    rows[:, 0] = -1.0
    for i, A in enumerate(sets):
        rows[i, 1 + np.array(A)] = -1.0
    a_ub = np.vstack([rows, np.concatenate([[0.0], d])[None]])
    b_ub = np.concatenate([-H, [0.0]])
    res = linprog(np.eye(J + 1)[0], A_ub=a_ub, b_ub=b_ub, bounds=[(None, None)] * (J + 1), method="highs")
    lam = res.x[1:].copy() if res.status == 0 else np.zeros(J)
    s = float(d @ lam)
    if s > 0:  # restore sum_j d_j lam_j <= 0 exactly enough (the slack left is added below)
        k = int(np.argmax(d))
        lam[k] -= s / d[k]
        s = float(d @ lam)
    mu = max(h - float(lam[list(A)].sum()) for A, h in zip(sets, H))
    # composite <= mu + sum_j lam_j d_j / T and T >= max_j d_j
    return mu + max(s, 0.0) / float(d.max()), tuple(float(x) for x in lam)


def stream_bound(instance: Instance, *, set_time_limit: float | None = SET_TIME_LIMIT,
                 budget: float | None = None) -> StreamBound:
    """The bound of the referee's composite over every feasible stream solution of
    ``instance`` (any number of jobs; with one job it is the branch and bound's bound).

    The single jobs are searched first, then the other sets by decreasing shortest duration
    (every subset of a set comes before it); ``budget`` (seconds, all sets together) stops the
    searches early: every set not searched then gets the valid H(A) = 1 (a segment scores at most 1)."""
    m = instance.mapping
    assert m is not None
    J = len(m.jobs)
    set_bounds: dict[tuple[int, ...], float | None] = {}
    status: dict[tuple[int, ...], str] = {}
    end = None if budget is None else time.perf_counter() + budget
    d = [j.duration for j in m.jobs]
    # single jobs first, then by the time the set can be active at most (its shortest job),
    # so that a budget is spent where the LP can give a set most weight
    order = sorted((A for k in range(1, J + 1) for A in itertools.combinations(range(J), k)),
                   key=lambda A: (len(A) > 1, -min(d[j] for j in A), len(A), A))
    for A in order:
        k = len(A)
        # a superset of a set that cannot be active together cannot either (loads only add)
        if any(set_bounds.get(B, 0.0) is None for B in itertools.combinations(A, k - 1) if B):
            set_bounds[A], status[A] = None, "infeasible (a subset is)"
            continue
        limit = set_time_limit
        if end is not None:
            left = end - time.perf_counter()
            if left <= 0:
                set_bounds[A], status[A] = 1.0, "not searched (budget)"
                continue
            limit = left if limit is None else min(limit, left)
        set_bounds[A], status[A] = active_set_bound(instance, A, time_limit=limit)
    bound, lam = combine([j.duration for j in m.jobs], set_bounds)
    return StreamBound(min(1.0, bound), set_bounds, lam, status)


__all__ = ["StreamBound", "SET_TIME_LIMIT", "set_goal", "active_set_bound", "combine", "stream_bound"]
