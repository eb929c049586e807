"""``placement-bnp``: bound (8), branch-and-price on the exact-trajectory master
(:mod:`placement.bounds.branch_price`; proof: docs/formulations/placement.md, "(8) Branch-and-price"),
as a solver that certification runs: it starts from a known schedule (the instance's shipped best
known, or a solution file), scores it with the referee, prunes with its value U and reports that
schedule with the tree's bound.  Its bound holds for every referee-feasible schedule (declared
``bound="instance"``): min(U, the open nodes' values), U being a referee value.  It stops on memory
as at its time limit (status ``timeout``, the message says so; issue 46): before each node once the
address space passes 80 % of ``memory_mb`` or of the ``RLIMIT_AS`` in force (the runner's
``--memory-limit``), or the resident set 80 % of a memory cgroup's limit, and at a ``MemoryError``
in a node (:mod:`edgebench.formulations.memory`)."""

from __future__ import annotations

import time
from typing import Any

from edgebench.formulations.memory import FRACTION, MemoryBudget
from edgebench.formulations.placement.bounds.branch_price import NODES, branch_and_price
from edgebench.formulations.placement.bounds.trajectory import WORK
from edgebench.formulations.placement.deadline import Deadline
from edgebench.formulations.placement.search.lns import BEST_KNOWN, warm_start_decisions
from edgebench.registry import make_result, register

SOLVER_NAME = "placement-bnp"


def _declines(instance, params: dict[str, Any]) -> str | None:
    p = instance.placement
    if p is not None and p.noise_model == "additive" and p.noise > 0:
        return "additive noise: the trajectory bound's proof does not apply"
    return None


@register(SOLVER_NAME, families=("placement",), kind="exact", applies=_declines,
          description="Bound (8): branch-and-price on the exact-trajectory master of (6) with its rounding cuts "
                      "(branching on a task's cluster, first start and held allocation; best bound first; optionally "
                      "identical tasks in arrival order), "
                      "pruned by the referee value of a warm start; reports the warm start and the tree's bound",
          params={"warm_start": f"{BEST_KNOWN!r} (the shipped best known; default) or a placement solution file",
                  "nodes": f"int: nodes solved at most (default {NODES})",
                  "memory_mb": f"number: a memory budget, MiB: the tree stops (status timeout, with its bound) once "
                               f"the address space passes {FRACTION:.0%} of it (default none: only the limits in "
                               f"force, RLIMIT_AS and a memory cgroup's, each at {FRACTION:.0%})",
                  "root_work": f"int: label extensions the root bound (6) may spend before its cut rounds (default "
                               f"{WORK:.0e}; testbed-v2's column generation converges only past it)",
                  "symmetry": "bool: on a noise-free instance, search only the schedules that start identical tasks "
                              "in arrival order (start splits first, applied to the class-mates too; default false)"},
          bounds={"nodes": (1, None), "memory_mb": (1, None), "root_work": (1, None)})
def solve(instance, *, time_limit: float | None = None, seed: int = 0, warm_start: str = BEST_KNOWN,
          nodes: int = NODES, memory_mb: float | None = None, root_work: int = WORK, symmetry: bool = False,
          **extra: Any):
    """The warm start with bound (8) (deterministic under the node limit; the time limit only
    stops the tree earlier, the bound being valid at any stop)."""
    t0 = time.perf_counter()
    params = {"warm_start": warm_start, "nodes": nodes, **({} if memory_mb is None else {"memory_mb": memory_mb}),
              **({} if root_work == WORK else {"root_work": root_work}), **({"symmetry": True} if symmetry else {})}
    stats: dict[str, Any] = {"message": ""}
    if extra:
        stats["message"] = f"unknown parameters: {', '.join(sorted(extra))}"
        return make_result(instance, SOLVER_NAME, status="error", seed=seed, params=params, started=t0, stats=stats)
    try:
        warm = warm_start_decisions(instance, warm_start)
        if warm is None:
            stats["message"] = "no warm start: the instance has no shipped best-known solution"
            return make_result(instance, SOLVER_NAME, status="error", seed=seed, params=params, started=t0,
                               stats=stats)
        value, decisions = warm[0], warm[1]
        r = branch_and_price(instance.placement, int(round(value)), nodes=int(nodes),
                             deadline=Deadline.after(time_limit, t0), memory=MemoryBudget.in_force(memory_mb),
                             root_work=int(root_work), symmetry=bool(symmetry))
    except Exception as exc:  # never raise out of solve
        stats["message"] = f"{type(exc).__name__}: {exc}"
        return make_result(instance, SOLVER_NAME, status="error", seed=seed, params=params, started=t0, stats=stats)
    if r.bound is None:
        stats["message"] = r.reason
        return make_result(instance, SOLVER_NAME, status="feasible", decisions=decisions, seed=seed, params=params,
                           objective=value, started=t0, stats=stats)
    bound = float(min(r.bound, value))
    stats.update(root=r.root, nodes=r.nodes, open=r.open, solve_time=time.perf_counter() - t0, **r.stats)
    stopped = r.stats.get("expired") or r.stats.get("memory")
    status = "optimal" if bound >= value else ("timeout" if stopped else "feasible")
    if r.stats.get("memory"):
        stats["message"] = f"{r.stats['memory']}; the bound is the open nodes' least value ({r.open} open)"
    return make_result(instance, SOLVER_NAME, status=status, decisions=decisions, seed=seed, params=params,
                       objective=value, bound=bound, started=t0, stats=stats)


__all__ = ["solve", "SOLVER_NAME"]
