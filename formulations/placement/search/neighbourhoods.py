"""Destroy moves of the placement large-neighbourhood search (``placement-lns``) and their
adaptive choice.

A move frees a set of tasks of the incumbent fixed-allocation schedule (every other task keeps
its (option, start)); :mod:`placement.search.lns` re-places the freed tasks with the fixed-allocation
MILP. The kinds:

* ``window``: the ``block`` tasks whose starts lie nearest a random step (all clusters);
* ``cluster``: the same on one random cluster;
* ``wait``: a seed task drawn with probability proportional to its waiting (start - arrival;
  uniformly when no task waits) and the tasks whose run overlaps the seed's interval
  [arrival, finish) on a cluster the seed may use, nearest first: the tasks that make it
  wait and the ones it could swap with;
* ``related`` (Shaw removal): a random seed task and the tasks most related to it: sharing an
  eligible cluster, of the same type, with arrival and start near the seed's.

:class:`Adaptive` chooses the kind by roulette over weights that follow each kind's recent
success (adaptive LNS, Ropke and Pisinger 2006): after each neighbourhood the kind's weight
moves a share ``reaction`` towards its score (``NEW_BEST`` for an improvement, ``TRIED``
otherwise). Everything is drawn from the caller's ``numpy`` generator: seeded.

``movable`` (every move): the tasks a move may free and draw its seed from (None: all; the
search with frozen tasks, :func:`placement.search.lns.improve` ``frozen``). With None the draws
are those of the moves without it, bit for bit.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from edgebench.formulations.placement.problem import PlacementData, Schedule

#: the destroy moves, in the order of the weights
KINDS = ("window", "cluster", "wait", "related")
#: ALNS scores: an improvement of the incumbent / a neighbourhood that improved nothing
NEW_BEST, TRIED = 10.0, 0.5
#: share of the way a kind's weight moves towards its last score
REACTION = 0.2
#: relatedness: steps a different type or no shared cluster counts as (Shaw removal)
TYPE_PENALTY, CLUSTER_PENALTY = 4, 1000


def _nearest(cand: list[int], key, block: int) -> set[int]:
    cand.sort(key=lambda j: (key(j), j))
    return set(cand[:block])


def _candidates(data: PlacementData, movable: Sequence[int] | None) -> list[int]:
    return list(range(data.num_tasks)) if movable is None else list(movable)


def window(rng: np.random.Generator, data: PlacementData, cur: Schedule, block: int,
           one_cluster: bool | None = None, movable: Sequence[int] | None = None) -> set[int]:
    """The ``block`` tasks nearest a random step: all clusters or (``one_cluster``; drawn
    half the time when None) one random cluster."""
    cand = _candidates(data, movable)
    pivot = cur[cand[int(rng.integers(len(cand)))]][1]
    if one_cluster is None:
        one_cluster = bool(rng.random() < 0.5)
    if one_cluster:
        n = cur[cand[int(rng.integers(len(cand)))]][0].cluster
        on = [j for j in cand if cur[j][0].cluster == n]
        if len(on) >= 2:
            cand = on
    return _nearest(cand, lambda j: abs(cur[j][1] - pivot), block)


def waiting(rng: np.random.Generator, data: PlacementData, cur: Schedule, block: int,
            movable: Sequence[int] | None = None) -> set[int]:
    """A seed drawn by its waiting and the tasks running across its interval (module doc)."""
    cand = _candidates(data, movable)
    K = len(cand)
    wait = np.array([cur[j][1] - data.arrivals[j] for j in cand], dtype=float)
    p = wait / wait.sum() if wait.sum() > 0 else np.full(K, 1.0 / K)
    s = cand[int(rng.choice(K, p=p))]
    lo, hi = data.arrivals[s], cur[s][1] + cur[s][0].steps
    mid = (lo + hi) / 2
    clusters = {o.cluster for o in data.options[s]}

    def key(j: int) -> float:
        o, t = cur[j]
        if j == s:
            return -1.0
        gap = max(0, t - hi, lo - (t + o.steps))  # 0: its run overlaps the seed's interval
        return (0 if o.cluster in clusters else CLUSTER_PENALTY) + gap + abs(t - mid) / (1 + hi - lo)

    return _nearest(cand, key, block)


def related(rng: np.random.Generator, data: PlacementData, cur: Schedule, block: int,
            types: Sequence[str] | None = None, movable: Sequence[int] | None = None) -> set[int]:
    """Shaw removal: a random seed and the tasks most related to it (module doc)."""
    J = data.num_tasks
    cand = _candidates(data, movable)
    s = cand[int(rng.integers(len(cand)))]
    clusters = {o.cluster for o in data.options[s]}

    def key(j: int) -> float:
        shared = any(o.cluster in clusters for o in data.options[j])
        return (abs(cur[j][1] - cur[s][1]) + abs(data.arrivals[j] - data.arrivals[s])
                + (0 if types is None or types[j] == types[s] else TYPE_PENALTY)
                + (0 if shared else CLUSTER_PENALTY) - (J + 1) * (j == s))

    return _nearest(cand, key, block)


def destroy(kind: str, rng: np.random.Generator, data: PlacementData, cur: Schedule, block: int,
            types: Sequence[str] | None = None, movable: Sequence[int] | None = None) -> set[int]:
    """The tasks freed by move ``kind`` (one of :data:`KINDS`), among ``movable`` (None: all)."""
    if kind == "window":
        return window(rng, data, cur, block, one_cluster=False, movable=movable)
    if kind == "cluster":
        return window(rng, data, cur, block, one_cluster=True, movable=movable)
    if kind == "wait":
        return waiting(rng, data, cur, block, movable)
    if kind == "related":
        return related(rng, data, cur, block, types, movable)
    raise ValueError(f"unknown neighbourhood kind {kind!r} (known: {', '.join(KINDS)})")


class Adaptive:
    """Roulette choice among ``kinds`` with adaptive weights (module doc); with one kind it
    always returns that one."""

    def __init__(self, kinds: Sequence[str], reaction: float = REACTION):
        self.kinds = tuple(kinds)
        self.weights = np.ones(len(self.kinds))
        self.reaction = reaction
        self.tried = dict.fromkeys(self.kinds, 0)
        self.won = dict.fromkeys(self.kinds, 0)

    def choose(self, rng: np.random.Generator) -> str:
        if len(self.kinds) == 1:
            return self.kinds[0]
        return self.kinds[int(rng.choice(len(self.kinds), p=self.weights / self.weights.sum()))]

    def update(self, kind: str, improved: bool) -> None:
        i = self.kinds.index(kind)
        self.tried[kind] += 1
        self.won[kind] += int(improved)
        score = NEW_BEST if improved else TRIED
        self.weights[i] = (1 - self.reaction) * self.weights[i] + self.reaction * score

    def summary(self) -> dict[str, dict[str, float]]:
        return {k: {"tried": self.tried[k], "improved": self.won[k], "weight": round(float(w), 3)}
                for k, w in zip(self.kinds, self.weights)}


__all__ = ["KINDS", "Adaptive", "destroy", "window", "waiting", "related"]
