"""Destructive lower bounds for ``offloading-cpsat``: probe the model with an objective cap.

One CP-SAT worker minimising the objective raises its bound very little on the classic
``heft-random`` instances (50 tasks x 4 servers: 600 s left it at the combinatorial floor,
223.97 against an incumbent of 261.61), yet the *decision* question "is there a schedule
with ``Σ_w C_w <= T``?" is often answered fast when ``T`` lies below the optimum: the cap
gives every task a deadline, and the no-overlap / precedence propagation with tight windows
refutes it (50 x 4: ``T`` = 250 refuted in 5.6 s, 255 in 26 s). Each refuted cap raises the
model's lower bound to ``T + 1`` tick; a cap that is met gives a better schedule.

Validity (docs/formulations/offloading.md §4b): the probe model is the full CP-SAT model
plus ``Σ_w C_w <= T``. Some optimal schedule of the ticked data satisfies every constraint
of the full model (its windows hold for some optimal schedule, its cuts for every feasible
one), so if the ticked optimum were ``<= T`` the probe model would be feasible. Hence a
proven-infeasible probe means ticked optimum ``>= T + 1``: the same kind of bound as
CP-SAT's own objective bound, lowered by the rounding adjustment like it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from edgebench.formulations.linear import run_cpsat

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.formulations.offloading_cpsat import CpsatModel


def probe(cm: CpsatModel, cap_ticks: int, *, time_limit: float, seed: int = 0,
          params: dict | None = None) -> tuple[str, list[int] | None]:
    """Decide ``Σ_w C_w <= cap_ticks`` on the model: ("infeasible", None) when refuted,
    ("feasible", solution vector) when met, ("timeout", None) otherwise."""
    sub = cm.model.clone()
    sub.Add(sum(cm.cmax) <= int(cap_ticks))
    proto = sub.Proto()
    proto.clear_objective()  # a decision problem: any schedule under the cap will do
    proto.clear_solution_hint()
    solver, _, status = run_cpsat(sub, time_limit=time_limit, threads=1, seed=seed, params=params)
    if status in ("optimal", "feasible"):
        return "feasible", list(solver.ResponseProto().solution)
    return ("infeasible" if status == "infeasible" else "timeout"), None


def bisect(cm: CpsatModel, values: list[int], lo: int, *, deadline: float, seed: int = 0,
           params: dict | None = None, first_limit: float | None = None,
           min_limit: float = 2.0) -> tuple[list[int], int, dict]:
    """Raise the proven lower bound ``lo`` (ticks of ``Σ_w C_w``; the ticked optimum is at
    least ``lo``) by bisection between it and the incumbent ``values``, until ``deadline``
    (``time.perf_counter()``). A refuted cap ``T`` sets ``lo = T + 1``; a met one replaces the
    incumbent; a probe without an answer lowers the largest cap still worth probing to ``T - 1``
    (a lower cap is easier to refute). Each probe gets half of the time left (the first at most
    ``first_limit``); the search stops when ``lo`` meets the incumbent, no cap is left or less
    than ``min_limit`` seconds remain. Returns the best vector, the new ``lo`` and statistics."""
    cw = [v.Index() for v in cm.cmax]
    best = list(values)
    hi = sum(best[i] for i in cw)  # the incumbent: the optimum is at most hi
    top = hi - 1  # the largest cap still worth probing
    stats: dict = {"start_bound_ticks": lo, "probes": [], "improvements": 0}
    while lo <= top:
        left = deadline - time.perf_counter()
        if left < min_limit:
            break
        cap = (lo + top) // 2
        limit = left / 2 if left >= 2 * min_limit else left
        if first_limit is not None and not stats["probes"]:
            limit = min(limit, max(min_limit, first_limit))
        t0 = time.perf_counter()
        status, vec = probe(cm, cap, time_limit=limit, seed=seed + len(stats["probes"]), params=params)
        stats["probes"].append((cap, status, round(time.perf_counter() - t0, 2)))
        if status == "infeasible":
            lo = cap + 1
        elif status == "feasible" and vec is not None:
            obj = sum(vec[i] for i in cw)
            if obj < hi:
                best, hi = vec, obj
                stats["improvements"] += 1
            top = min(top, hi - 1)
        else:
            top = cap - 1
    stats["end_bound_ticks"] = lo
    stats["end_objective_ticks"] = hi
    stats["closed"] = lo >= hi
    return best, lo, stats
