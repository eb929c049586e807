"""Certification's one home: the bound of an instance computed from the instance alone, and
whether a solver's reported bound is a bound of the referee's problem on it.

Each family's rules live with its formulations (:mod:`.placement.bounds.certify`,
:mod:`.offloading_certify`, :mod:`.mapping_certify`); this module only dispatches. Whether a
solver's bound counts is a declared property of the solver (``register(..., bound=...)``,
listed in the solver catalogue: "instance", "restriction" or None), read here by name from the
registry's list (no solver module is imported); a run label ``name[params]`` names the solver
``name``. The proofs of the combinatorial bounds are in docs/bks.md ("Bounds") and the family
pages of docs/formulations/.
"""

from __future__ import annotations

from edgebench import registry
from edgebench.formulations import mapping_certify, offloading_certify
from edgebench.formulations.placement.bounds import certify as placement_certify
from edgebench.instances.model import Instance

#: the scope given to a solver name the registry does not list (or no name)
UNDECLARED = "undeclared"
_FAMILIES = {"placement": placement_certify, "offloading": offloading_certify, "mapping": mapping_certify}


def declared_bound(solver: str | None) -> str | None:
    """The registry's ``bound`` of ``solver`` (a name or a run label ``name[params]``):
    "instance", "restriction", None, or :data:`UNDECLARED` for a name it does not list."""
    if not isinstance(solver, str):
        return UNDECLARED
    name = solver.split("[", 1)[0]
    for s in registry.solvers():
        if s.name == name:
            return s.bound
    return UNDECLARED


def combinatorial_bound(instance: Instance) -> tuple[float, str] | None:
    """(bound on the primary objective, kind) from the instance alone, or None when the
    family has none."""
    if instance.family == "placement":
        return placement_certify.combinatorial_bound(instance.placement)
    fam = _FAMILIES.get(instance.family)
    return None if fam is None else fam.combinatorial_bound(instance)


def solver_bound_applies(instance: Instance, solver: str | None = None) -> bool:
    """Whether the bound reported by ``solver`` (a name or run label) is a bound of the
    referee's problem on ``instance`` (every feasible solution), not only of the solver's
    restriction of it: the family's rule on the solver's declared ``bound``."""
    fam = _FAMILIES.get(instance.family)
    return fam is not None and fam.bound_applies(instance, declared_bound(solver))


__all__ = ["combinatorial_bound", "solver_bound_applies", "declared_bound", "UNDECLARED"]
