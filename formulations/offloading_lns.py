"""Large-neighbourhood search around CP-SAT's incumbent for ``offloading-cpsat``.

One CP-SAT worker does no LNS of its own; this loop does it in the same thread
(docs/formulations/offloading.md §2a). Each step copies the model, fixes the server of every
task outside a neighbourhood (a window of consecutive tasks in start order, the tasks of two
servers, or random tasks), keeps the incumbent's order of the fixed tasks on exclusive
servers (except in one kind of step, where only servers are fixed), demands a strictly
smaller objective, hints the incumbent and solves for a few seconds. Any solution of a step
is a solution of the full model (the step only adds constraints), so the search only ever
replaces the incumbent by a better feasible one; it proves nothing, and the bound stays the
full model's.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from edgebench.formulations.linear import run_cpsat
from edgebench.formulations.offloading_bounds import exclusive_servers

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.formulations.offloading_cpsat import CpsatModel


def _fix(proto, idx: int, value: int) -> None:
    dom = proto.variables[idx].domain
    dom.clear()
    dom.extend([value, value])


def _linear(proto, terms: list[tuple[int, int]], lo: int, hi: int) -> None:
    ct = proto.constraints.add()
    ct.linear.vars.extend([v for v, _ in terms])
    ct.linear.coeffs.extend([c for _, c in terms])
    ct.linear.domain.extend([lo, hi])


def improve(cm: CpsatModel, values: list[int], *, deadline: float, seed: int = 0, params: dict | None = None,
            step_limit: float = 5.0, patience: int | None = None) -> tuple[list[int], dict]:
    """Improve ``values`` (a full solution vector of ``cm.model``) until ``deadline``
    (``time.perf_counter()``), or until ``patience`` steps in a row found nothing better.
    Returns the best vector and statistics."""
    from ortools.sat.python import cp_model

    td, N = cm.data, cm.data.N
    rng = np.random.default_rng(seed)
    lit = [{s: v.Index() for s, v in cm.present[g].items()} for g in range(N)]
    st = [v.Index() for v in cm.start]
    en = [v.Index() for v in cm.end]
    cw = [v.Index() for v in cm.cmax]
    excl = exclusive_servers(td)
    best = list(values)
    best_obj = sum(best[i] for i in cw)
    k = max(4, N // 5)
    stats = {"steps": 0, "improvements": 0, "start_objective_ticks": best_obj, "stalled": False}
    idle = 0
    while True:
        left = deadline - time.perf_counter()
        if left < 0.5:
            break
        if patience is not None and idle >= patience:
            stats["stalled"] = True
            break
        server = [next(s for s, i in lit[g].items() if best[i]) for g in range(N)]
        order = sorted(range(N), key=lambda g: (best[st[g]], g))
        kind = int(rng.integers(4))
        if kind == 0:  # a window of consecutive tasks in start order
            a = int(rng.integers(0, max(1, N - k + 1)))
            free = set(order[a:a + k])
        elif kind == 1:  # the tasks of two servers (at most k of them)
            pick = set(rng.choice(td.S, size=min(2, td.S), replace=False).tolist())
            on = [g for g in range(N) if server[g] in pick]
            free = set(rng.choice(on, size=min(k, len(on)), replace=False).tolist()) if on else set()
        else:  # random tasks (kind 3: with every task's order free)
            free = set(rng.choice(N, size=min(k, N), replace=False).tolist())
        sub = cm.model.clone()
        proto = sub.Proto()
        for g in range(N):
            if g in free:
                continue
            for s, i in lit[g].items():
                _fix(proto, i, int(s == server[g]))
        for s in range(td.S):
            if excl[s] and kind != 3:  # kind 3: the order of every task is free
                chain = [g for g in order if server[g] == s and g not in free]
                for i, j in zip(chain, chain[1:]):
                    _linear(proto, [(st[j], 1), (en[i], -1)], 0, cp_model.INT_MAX)
        _linear(proto, [(i, 1) for i in cw], cp_model.INT_MIN, best_obj - 1)
        proto.clear_solution_hint()
        proto.solution_hint.vars.extend(range(len(best)))
        proto.solution_hint.values.extend(best)
        solver, _, status = run_cpsat(sub, time_limit=min(step_limit, left), threads=1,
                                      seed=seed + stats["steps"], params=params)
        stats["steps"] += 1
        idle += 1
        if status in ("optimal", "feasible"):
            best = list(solver.ResponseProto().solution)
            best_obj = sum(best[i] for i in cw)
            stats["improvements"] += 1
            idle = 0
        elif status == "infeasible":  # the neighbourhood holds nothing better: widen it
            k = min(N, k + max(1, k // 5))
        else:  # no answer in time: narrow it
            k = max(4, k - max(1, k // 5))
    stats["end_objective_ticks"] = best_obj
    stats["final_k"] = k
    return best, stats
