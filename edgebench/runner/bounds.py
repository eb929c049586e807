"""Combinatorial bounds computed from an instance alone (no solver), for the certified library.

Each function returns a bound on the referee's primary objective that holds for EVERY feasible
solution; the proofs are in ``docs/bks.md`` ("Bounds"). They give every instance a bound even
when no exact model finished in the certification's time limit.

* placement (``total_completion_time``, min): ``formulations.placement_bound.reallocating_bound`` —
  every task needs at least its fewest steps on its cluster, and in the single-task variant the
  tasks' (cluster, first step) pairs are distinct (valid for re-allocating schedules too); under
  the authors' additive noise ``formulations.placement_bound_additive.additive_bound``
  (optimistic draws, and the start slots in the single-task variant);
* offloading (``mean_makespan``, min): the largest of the proven bounds of
  ``formulations.offloading_bounds`` (critical path, load, heads / tails / windowed load), the
  one home of them, also used by the exact models (proofs in docs/formulations/offloading.md §4a);
* mapping (``composite``, max): 1 — ``composite = 0.5 (1 - L) + 0.5 D_BW`` with ``L`` a mean of
  non-negatively weighted standard deviations (>= 0) and ``D_BW`` a mean of per-link
  satisfactions clipped to [0, 1]; with several jobs (a stream) also the active-set LP of
  ``formulations.mapping_stream`` (docs/formulations/mapping.md, "Multi-job streams"), kept
  where it is below 1.
"""

from __future__ import annotations

from edgebench.formulations.mapping_stream import stream_bound
from edgebench.formulations.offloading_bounds import KINDS, lower_bounds
from edgebench.formulations.offloading_problem import prepare
from edgebench.formulations.placement_bound import reallocating_bound
from edgebench.formulations.placement_bound_additive import additive_bound
from edgebench.instances.model import Instance

#: seconds of branch and bound per stream instance for the active-set bound (all sets together)
STREAM_BUDGET = 10.0


def combinatorial_bound(instance: Instance) -> tuple[float, str] | None:
    """(bound on the primary objective, kind) or None when the family has none."""
    if instance.family == "placement":
        b = reallocating_bound(instance.placement)  # None where a precondition of the proof fails
        if b is None:
            b = additive_bound(instance.placement)  # the authors' additive noise: its own proof
        return None if b is None else (float(b[0]), b[1])
    if instance.family == "offloading":
        # the one home of the offloading bounds; a later kind is credited only when it is
        # strictly larger (relative 1e-9) than the earlier ones
        each = lower_bounds(prepare(instance))
        best, kind = -float("inf"), ""
        for k in KINDS:
            if k in each and (not kind or each[k] > best * (1 + 1e-9)):
                best, kind = max(best, each[k]), k
        return float(max(each.values())), f"combinatorial: {kind}"
    if instance.family == "mapping":
        if len(instance.mapping.jobs) > 1:
            sb = stream_bound(instance, budget=STREAM_BUDGET)
            if sb.bound < 1.0:
                return sb.bound, "combinatorial: stream active-set LP"
        return 1.0, "combinatorial: composite <= 1"
    return None


def solver_bound_applies(instance: Instance, solver: str | None = None) -> bool:
    """Whether an exact model's bound is a bound of the referee's problem (every feasible
    solution), not only of the model's restriction of it:

    * placement: only for ``placement-exact`` (the exact model of the referee's own problem);
      the fixed-allocation MILP ``placement-milp`` optimises fixed-allocation schedules only,
      and re-allocating / pausing policies (Optimus, Tiresias) are referee-feasible and may beat
      its optimum (docs/formulations/placement.md, "What bounds apply");
    * mapping with several jobs: no — the model places every job at its arrival, all
      simultaneously active, a restriction of the stream where jobs may wait;
    * otherwise yes."""
    if instance.family == "placement":  # ``solver`` may be a run label, "placement-exact[upper=1092]"
        return solver is not None and solver.split("[", 1)[0] == "placement-exact"
    return not (instance.family == "mapping" and len(instance.mapping.jobs) > 1)
