"""Placement certification: the bound computed from the instance alone, and which solvers'
bounds are bounds of the referee's problem.

* :func:`combinatorial_bound`: ``reallocating_bound`` of the bound ladder (every task needs at
  least its fewest steps on its cluster; in the single-task variant the tasks' (cluster, first
  step) pairs are distinct; then the Lagrangian / trajectory rungs where they are cheap), or,
  under the TapFinger authors' additive noise, ``additive_bound`` (its own proof); proofs in
  docs/formulations/placement.md ("Bounds").
* :func:`bound_applies`: a solver's bound counts only when the solver declares it a bound of
  the instance (``register(..., bound="instance")``: ``placement-exact``). ``placement-milp``
  declares ``bound="restriction"``: it optimises fixed-allocation schedules only, and
  re-allocating or pausing schedules (Optimus, Tiresias) are referee-feasible and may beat its
  optimum. A solver the registry does not list declares nothing: its bound does not count.
"""

from __future__ import annotations

from edgebench.formulations.placement.bounds.ladder import reallocating_bound
from edgebench.formulations.placement.bounds.additive import additive_bound


def combinatorial_bound(payload) -> tuple[float, str] | None:
    """(bound on total completion time, kind) of a placement payload, or None where no proof
    applies."""
    b = reallocating_bound(payload)  # None where a precondition of the proof fails
    if b is None:
        b = additive_bound(payload)  # the authors' additive noise: its own proof
    return None if b is None else (float(b[0]), b[1])


def bound_applies(instance, scope: str | None) -> bool:
    """Whether a bound reported by a solver that declares ``scope`` (registry ``bound``;
    ``"undeclared"`` for a name the registry does not list) bounds every referee-feasible
    schedule of ``instance``."""
    return scope == "instance"


__all__ = ["combinatorial_bound", "bound_applies"]
