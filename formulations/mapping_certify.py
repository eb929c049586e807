"""Mapping certification: the bound computed from the instance alone, and which solvers'
bounds count.

* :func:`combinatorial_bound`: 1 — ``composite = 0.5 (1 - L) + 0.5 D_BW`` with ``L`` a mean of
  non-negatively weighted standard deviations (>= 0) and ``D_BW`` a mean of per-link
  satisfactions clipped to [0, 1]; with several jobs (a stream) also the active-set LP of
  :mod:`edgebench.formulations.mapping_stream` (docs/formulations/mapping.md, "Multi-job
  streams"), kept where it is below 1.
* :func:`bound_applies`: with several jobs no solver's bound counts — the exact model places
  every job at its arrival, all simultaneously active, a restriction of the stream where jobs
  may wait; with one job a reported bound counts unless the solver declares it a
  restriction's (as before the declaration existed, that of an unlisted solver counts too).
"""

from __future__ import annotations

from edgebench.formulations.mapping_stream import stream_bound

#: seconds of branch and bound per stream instance for the active-set bound (all sets together)
STREAM_BUDGET = 10.0


def combinatorial_bound(instance) -> tuple[float, str]:
    """(bound on the composite, a maximisation, kind) of a mapping instance."""
    if len(instance.mapping.jobs) > 1:
        sb = stream_bound(instance, budget=STREAM_BUDGET)
        if sb.bound < 1.0:
            return sb.bound, "combinatorial: stream active-set LP"
    return 1.0, "combinatorial: composite <= 1"


def bound_applies(instance, scope: str | None) -> bool:
    """Whether a bound of a solver declaring ``scope`` ("undeclared" when unlisted) counts."""
    return len(instance.mapping.jobs) <= 1 and scope != "restriction"


__all__ = ["combinatorial_bound", "bound_applies", "STREAM_BUDGET"]
