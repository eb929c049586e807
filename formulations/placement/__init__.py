"""Placement (TapFinger's problem): every model, bound and search of the family, by role.

Map (``edgebench.formulations.placement``; issue 45)::

    problem.py        shared data (Option, PlacementData, prepare, Schedule, greedy schedules)
                      and THE step rule (step_progress: progress, noise, switching loss),
                      JointUse (one step's capacity check)
    deadline.py       Deadline / Expired: every phase honours the time limit (re-exported from
                      formulations/deadline.py, shared with the offloading models)
    highs.py          HiGHS helpers (LP solutions, reduced costs, row duals)
    milp.py           placement-milp: the fixed-allocation MILP, a RESTRICTION of the referee's
                      problem (kind heuristic, bound="restriction": its bound is
                      stats["restriction_bound"], never the instance's)
    exact.py          placement-exact: A* over the referee's re-allocating problem (its bound is
                      the instance's: bound="instance")
    bnp.py            placement-bnp: bound (8) as a solver for certification (the warm start's
                      referee value prunes; bound="instance")
    enum.py           the brute-force oracle for tests (every referee-feasible schedule of a
                      tiny instance; scored through the referee)
    bounds/           lower bounds of the referee's problem
      ladder.py       the bound ladder: shortest durations, energy, start slots, then (4), (6)
      lagrange.py     (4) the Lagrangian over (task, cluster) pairs and its master LP
      trajectory.py   (6) exact-trajectory pricing (column generation)
      labelling.py    (6)'s compiled labelling kernel and (7)'s dominance filter (numba)
      rounding.py     (6)'s rounding cuts
      additive.py     the bound under the authors' additive noise
      timip.py        (5) R, the integer time-indexed relaxation
      histip.py       (7) the exact-history integer master
      histsplit.py    (7) split by its knapsack row: the same bound, case by case
      residual.py     the residual start-slot bound (placement-exact's nodes)
      branch_price.py (8) branch-and-price on (6)'s master (cluster, first-start and
                      held-allocation branching; valid at any stop)
      certify.py      certification: the instance-only bound, which solvers' bounds count
    search/           heuristics (no bound)
      lns.py          placement-lns: large-neighbourhood search over fixed allocations
      cglns.py        placement-cg-lns: column-generation LNS over allocation histories
      histlns.py      placement-history-lns: windows re-choose among EVERY undominated
                      history that fits (bound (7)'s labelling), by a set-partitioning MIP
      lahc.py         placement-lahc: late acceptance over serial schedules (task order and
                      one fixed option per task)
      shapelns.py     placement-shape-lns: time windows over every cluster; interchangeable
                      tasks re-choose cluster, shape and start by a counting MIP
      cpsat_lns.py    placement-cpsat-lns: CP-SAT's own LNS subsolvers (interleaved on one
                      thread) on the fixed-allocation interval model (milp.py's)
      chain.py        placement-lahc-cpsat: late acceptance and CP-SAT's LNS in turn, each
                      from the other's best fixed schedule
      sgs.py          the serial schedule decoder placement-lahc moves in (numba)
      shapes.py       allocation histories relative to a start (a fixed option, two pieces,
                      a warm start's own histories) for that decoder
      neighbourhoods.py  the LNS's destroy moves
      grow.py         growing a fixed schedule's allocations (re-allocation, scored by the referee)
      lagrange_list.py   placement-lagrange: the Lagrangian-guided list schedule
      online.py       placement-lns-online: the rolling-horizon LNS on the tasks known so far
                      (non-clairvoyant); DAgger's myopic expert

The old flat modules ``edgebench.formulations.placement_*`` are deprecated shims for one
release (a DeprecationWarning on import). This package re-exports the old
``edgebench.formulations.placement`` module's public names (problem.py and milp.py) without a
warning: that import path is unchanged. Proofs and costs: docs/formulations/placement.md; the
searches: docs/formulations/placement-search.md.
"""

from __future__ import annotations

from edgebench.formulations.placement.problem import (
    PAUSE,
    step_progress,
    is_done,
    JointUse,
    PHASE_MARGIN,
    MAX_GRID_CELLS,
    MAX_OPTIONS,
    ModelTooLarge,
    Option,
    PlacementData,
    prepare,
    relaxation_bound,
    Schedule,
    schedule_objective,
    schedule_violations,
    Profile,
    greedy_schedule,
    repair_schedule,
    best_greedy,
    finish_bounds,
    to_decisions,
    FIXED_KEY,
    fixed_rows,
    remaining,
)
from edgebench.formulations.placement.milp import (
    SOLVER_NAME,
    CPSAT_INTERVALS,
    HIGHSPY,
    PLACEMENT_BACKENDS,
    DEFAULT_BACKEND,
    DEFAULT_WINDOW,
    NEIGHBOUR_STEP,
    LNS_BLOCK,
    LNS_PASSES,
    LNS_ESCALATE,
    LNS_GROW_TASKS_PER_BLOCK,
    DEFAULT_RINGS,
    LNS_SHARE,
    LP_WIDEN_ROUNDS,
    LP_WIDEN_SHARE,
    GREEDY_SHARE,
    PRESOLVE_MAX_NONZEROS,
    MAX_MODEL_NONZEROS,
    BUILD_SECONDS_PER_NONZERO,
    BuiltModel,
    model_nonzeros,
    build_model,
    hint_vector,
    widen_windows,
    widen_by_lp,
    solve_model,
    improve_schedule,
    decode_partial,
    decode,
    ring_starts,
    lp_relaxation_bound,
    solve_cpsat_intervals,
    solve,
)

__all__ = [
    "PAUSE",
    "step_progress",
    "is_done",
    "JointUse",
    "PHASE_MARGIN",
    "MAX_GRID_CELLS",
    "MAX_OPTIONS",
    "ModelTooLarge",
    "Option",
    "PlacementData",
    "prepare",
    "relaxation_bound",
    "Schedule",
    "schedule_objective",
    "schedule_violations",
    "Profile",
    "greedy_schedule",
    "repair_schedule",
    "best_greedy",
    "finish_bounds",
    "to_decisions",
    "FIXED_KEY",
    "fixed_rows",
    "remaining",
    "SOLVER_NAME",
    "CPSAT_INTERVALS",
    "HIGHSPY",
    "PLACEMENT_BACKENDS",
    "DEFAULT_BACKEND",
    "DEFAULT_WINDOW",
    "NEIGHBOUR_STEP",
    "LNS_BLOCK",
    "LNS_PASSES",
    "LNS_ESCALATE",
    "LNS_GROW_TASKS_PER_BLOCK",
    "DEFAULT_RINGS",
    "LNS_SHARE",
    "LP_WIDEN_ROUNDS",
    "LP_WIDEN_SHARE",
    "GREEDY_SHARE",
    "PRESOLVE_MAX_NONZEROS",
    "MAX_MODEL_NONZEROS",
    "BUILD_SECONDS_PER_NONZERO",
    "BuiltModel",
    "model_nonzeros",
    "build_model",
    "hint_vector",
    "widen_windows",
    "widen_by_lp",
    "solve_model",
    "improve_schedule",
    "decode_partial",
    "decode",
    "ring_starts",
    "lp_relaxation_bound",
    "solve_cpsat_intervals",
    "solve",
]
