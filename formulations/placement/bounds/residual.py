"""The start-slot bound of :mod:`placement.bounds.ladder` applied to the RESIDUAL problem at a node of
the exact search (:mod:`placement.exact`): proof in docs/formulations/placement.md, "Exact
model of the referee's problem", "Residual start-slot bound".

At step t (before the step's moves) the tasks that have not yet taken their first non-empty
allocation ("waiting") still each need a distinct (cluster, first step >= max(t, a_j)) pair in
the single variant. With d_j(n) any lower bound on the steps task j needs on cluster n from a
fresh start, sum over waiting j of (s_j - a_j + d_j(n_j)) over injective slot maps bounds
their completion times; :func:`placement.bounds.ladder.start_slot_bound` computes the cheapest such
map for release dates r_j = max(t, a_j), and the offset sum (r_j - a_j) restores the cost.
"""

from __future__ import annotations

from types import SimpleNamespace

from edgebench.formulations.placement.bounds.ladder import start_slot_bound


def residual_slot_bound(clusters, t: int, arrivals: list[int], durations: list[dict[int, int]]) -> int:
    """min over injective maps j -> (n, s), n in durations[j], s >= max(t, a_j), of
    sum_j (s - a_j + durations[j][n]) (0 for no task). Every row must be non-empty."""
    if not arrivals:
        return 0
    release = [max(t, a) for a in arrivals]
    residual = SimpleNamespace(tasks=[SimpleNamespace(arrival=r) for r in release], clusters=clusters)
    return start_slot_bound(residual, durations) + sum(r - a for r, a in zip(release, arrivals))


__all__ = ["residual_slot_bound"]
