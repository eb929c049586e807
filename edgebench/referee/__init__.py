"""The suite's one judge: pure functions of (instance, solution) that know nothing of any
solver and recompute every objective from scratch.

    from edgebench.referee import evaluate, evaluate_decisions, Evaluation, Violation

``evaluate(instance, solution)`` checks that the solution was made for the instance (family
and content hash; :class:`~edgebench.errors.InputError` otherwise) and never trusts the
solution's reported objective.  ``evaluate_decisions(instance, decisions)`` scores a bare
decisions model of the instance's family (the metaheuristics' fast path).  Every check and
objective is defined in ``docs/referee.md``.
"""

from __future__ import annotations

from typing import Any

from edgebench.errors import InputError
from edgebench.instances.io import content_hash, validate_model
from edgebench.instances.model import Instance
from edgebench.referee import mapping as _mapping
from edgebench.referee import offloading as _offloading
from edgebench.referee import placement as _placement
from edgebench.referee.common import (
    ATOL,
    MAX_VIOLATIONS,
    PRIMARY,
    RTOL,
    SENSE,
    Evaluation,
    IdentityCache,
    Violation,
    no_solution,
)
from edgebench.solution import MappingDecisions, OffloadingDecisions, PlacementDecisions, Solution

_EVAL = {"placement": _placement.evaluate, "mapping": _mapping.evaluate, "offloading": _offloading.evaluate}
_MODEL = {"placement": PlacementDecisions, "mapping": MappingDecisions, "offloading": OffloadingDecisions}

_hash = IdentityCache(content_hash, size=64)


def evaluate_decisions(instance: Instance, decisions: Any) -> Evaluation:
    """Score the decisions of ``instance``'s family (a PlacementDecisions / MappingDecisions /
    OffloadingDecisions model, or its plain-JSON dict form). ``None`` -> no_solution."""
    fam = instance.family
    if decisions is None:
        return no_solution(fam, "no decisions")
    model = _MODEL[fam]
    if isinstance(decisions, dict):
        decisions = validate_model(model, decisions)
    elif not isinstance(decisions, model):
        raise InputError(f"a {fam} instance needs {model.__name__}, got {type(decisions).__name__}",
                         field=fam)
    return _EVAL[fam](instance, decisions)


def evaluate(instance: Instance, solution: Solution) -> Evaluation:
    """Judge ``solution`` on ``instance``: feasibility, every violation, recomputed objectives.

    Raises InputError when the solution is for another family or another instance (content
    hash).  A solution without decisions (status infeasible / timeout / error) evaluates to
    feasible=False with one ``no_solution`` violation."""
    if solution.family != instance.family:
        raise InputError(f"solution is for family {solution.family!r}, instance is {instance.family!r}",
                         field="family")
    h = _hash(instance)
    if solution.instance_hash != h:
        raise InputError(f"solution was made for another instance (hash {solution.instance_hash[:12]}..., "
                         f"instance {instance.id!r} has {h[:12]}...)", field="instance_hash")
    decisions = solution.decisions
    if decisions is None:
        return no_solution(instance.family, solution.status)
    return _EVAL[instance.family](instance, decisions)


__all__ = ["evaluate", "evaluate_decisions", "Evaluation", "Violation", "PRIMARY", "SENSE", "ATOL", "RTOL",
           "MAX_VIOLATIONS"]
