"""Certification's bounds, re-exported from their one home, :mod:`edgebench.formulations.certify`
(kept so that ``edgebench.runner.bounds`` imports keep working; new code imports from there).

* :func:`combinatorial_bound` — the bound of an instance from the instance alone, by family
  (placement: :mod:`edgebench.formulations.placement.bounds.certify`; offloading:
  :mod:`edgebench.formulations.offloading_certify`; mapping:
  :mod:`edgebench.formulations.mapping_certify`);
* :func:`solver_bound_applies` — whether a solver's reported bound is a bound of the referee's
  problem: the family's rule on the bound the solver DECLARES (``register(..., bound="instance"
  | "restriction" | None)``, listed in the solver catalogue), never a compare of its name.
"""

from __future__ import annotations

from edgebench.formulations.certify import combinatorial_bound, declared_bound, solver_bound_applies
from edgebench.formulations.mapping_certify import STREAM_BUDGET

__all__ = ["combinatorial_bound", "solver_bound_applies", "declared_bound", "STREAM_BUDGET"]
