"""Offloading certification: the bound computed from the instance alone, and which solvers'
bounds count.

* :func:`combinatorial_bound`: the largest of the proven bounds of
  :mod:`edgebench.formulations.offloading_bounds` (critical path, load, heads / tails /
  windowed load), the one home of them, also used by the exact models (proofs in
  docs/formulations/offloading.md §4a); a later kind is credited only when it is strictly
  larger (relative 1e-9) than the earlier ones.
* :func:`bound_applies`: the exact models solve the referee's own problem: a reported bound
  counts unless the solver declares it a restriction's (``register(..., bound="restriction")``);
  a solver the registry does not list (a plugin run stored earlier) is taken as before the
  declaration existed: its bound counts (the referee still scores every solution, and the
  adversary's certificate re-runs the solver). A solver declaring None reports no bound.
"""

from __future__ import annotations

from edgebench.formulations.offloading_bounds import KINDS, lower_bounds
from edgebench.formulations.offloading_problem import prepare


def combinatorial_bound(instance) -> tuple[float, str]:
    """(bound on mean makespan, kind) of an offloading instance."""
    each = lower_bounds(prepare(instance))
    best, kind = -float("inf"), ""
    for k in KINDS:
        if k in each and (not kind or each[k] > best * (1 + 1e-9)):
            best, kind = max(best, each[k]), k
    return float(max(each.values())), f"combinatorial: {kind}"


def bound_applies(instance, scope: str | None) -> bool:
    """Whether a bound of a solver declaring ``scope`` ("undeclared" when unlisted) counts."""
    return scope != "restriction"


__all__ = ["combinatorial_bound", "bound_applies"]
