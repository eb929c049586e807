"""The solver protocol and the registry.

A solver is a function ``solve(instance, *, time_limit=None, seed=0, **params) -> Result``
registered with :func:`register`, which records its name, the families it supports, its
kind and a one-line description. Solver modules are imported lazily (torch, OR-Tools and
friends load only when a solver that needs them runs).

Model building, solving and decoding are separate steps inside each solver; every solver
returns the same :class:`Result`, whose ``solution`` is a :class:`edgebench.solution.Solution`.
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from edgebench.instances.io import content_hash
from edgebench.instances.model import Instance
from edgebench.solution import Solution

KINDS = ("exact", "heuristic", "metaheuristic", "mdp", "learned")

#: packages whose modules register solvers on import (every public module is imported, once,
#: the first time the registry is read). Solver modules keep heavy imports (OR-Tools, torch)
#: inside their functions so that listing the registry stays fast.
SOLVER_PACKAGES = ["edgebench.solvers", "edgebench.formulations", "edgebench.learned"]


@dataclass(frozen=True)
class Result:
    """What ``solve`` returns: the solution (decisions, status, reported objective/bound)
    plus the wall time; ``stats`` mirrors ``solution.stats``."""

    solution: Solution
    runtime: float

    @property
    def status(self) -> str:
        return self.solution.status

    @property
    def stats(self) -> dict[str, Any]:
        return self.solution.stats


class SolveFn(Protocol):
    def __call__(self, instance: Instance, *, time_limit: float | None = None, seed: int = 0,
                 **params: Any) -> Result: ...


@dataclass(frozen=True)
class SolverInfo:
    name: str
    families: tuple[str, ...]
    kind: str
    description: str
    fn: SolveFn = field(repr=False, compare=False)
    #: documented parameters: name -> one line (type, default, choices)
    params: dict[str, str] = field(default_factory=dict, compare=False)
    #: learned solvers: () -> one dict per shipped checkpoint (preset, variant, algorithm,
    #: env_steps, sha256, ...); as_dict() lists them under "checkpoints"
    provenance: Callable[[], list[dict[str, Any]]] | None = field(default=None, repr=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "families": list(self.families), "kind": self.kind,
               "description": self.description, "params": dict(self.params)}
        if self.provenance is not None:
            out["checkpoints"] = self.provenance()
        return out


_REGISTRY: dict[str, SolverInfo] = {}
#: solver modules that failed to import (module -> error); a test asserts it stays empty
LOAD_ERRORS: dict[str, str] = {}
_loaded = False


def register(name: str, *, families: tuple[str, ...] | list[str], kind: str, description: str = "",
             params: dict[str, str] | None = None,
             provenance: Callable[[], list[dict[str, Any]]] | None = None):
    if kind not in KINDS:
        raise ValueError(f"solver kind must be one of {KINDS}, got {kind!r}")

    def deco(fn: SolveFn) -> SolveFn:
        if name in _REGISTRY and _REGISTRY[name].fn is not fn:
            raise ValueError(f"solver {name!r} registered twice")
        _REGISTRY[name] = SolverInfo(name, tuple(families), kind,
                                     description or (fn.__doc__ or "").strip().split("\n")[0], fn,
                                     dict(params or {}), provenance)
        return fn

    return deco


def _load() -> None:
    global _loaded
    if _loaded:
        return
    for pkg_name in SOLVER_PACKAGES:
        pkg = importlib.import_module(pkg_name)
        for mod in pkgutil.iter_modules(pkg.__path__):
            if not mod.name.startswith("_"):
                name = f"{pkg_name}.{mod.name}"
                try:
                    importlib.import_module(name)
                except Exception as exc:  # one broken module must not hide every other solver
                    LOAD_ERRORS[name] = f"{type(exc).__name__}: {exc}"
                    warnings.warn(f"edgebench: solver module {name} failed to import: {exc}", stacklevel=2)
    _loaded = True


def solvers(family: str | None = None) -> list[SolverInfo]:
    _load()
    out = [s for s in _REGISTRY.values() if family is None or family in s.families]
    return sorted(out, key=lambda s: s.name)


def get(name: str) -> SolverInfo:
    _load()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown solver {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def solve(instance: Instance, solver: str, *, time_limit: float | None = None, seed: int = 0,
          **params: Any) -> Result:
    info = get(solver)
    if instance.family not in info.families:
        raise ValueError(f"solver {solver!r} does not support family {instance.family!r} "
                         f"(supports {', '.join(info.families)})")
    return info.fn(instance, time_limit=time_limit, seed=seed, **params)


def make_result(instance: Instance, solver: str, *, status: str, decisions: Any = None,
                seed: int | None = None, params: dict[str, Any] | None = None,
                objective: float | None = None, bound: float | None = None,
                started: float | None = None, stats: dict[str, Any] | None = None) -> Result:
    """Build the common Result from a solver's decoded decisions (a decisions model of the
    instance's family, or None when there is no solution)."""
    wall = time.perf_counter() - started if started is not None else 0.0
    payload = {instance.family: decisions} if decisions is not None else {}
    sol = Solution(family=instance.family, instance_id=instance.id, instance_hash=content_hash(instance),
                   solver=solver, params=dict(params or {}), seed=seed, status=status,
                   objective=objective, bound=bound, wall_time=wall, stats=dict(stats or {}), **payload)
    return Result(solution=sol, runtime=wall)
