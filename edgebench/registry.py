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
FAMILIES = ("placement", "mapping", "offloading")

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
    #: where the solver comes from: "built-in", "plugin FILE", "entry point DIST VERSION" or
    #: "module MODULE" (see :func:`origin_of`)
    origin: str = field(default="built-in", compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "families": list(self.families), "kind": self.kind,
                "description": self.description, "params": dict(self.params)}


_REGISTRY: dict[str, SolverInfo] = {}
#: solver modules that failed to import (module -> error); a test asserts it stays empty
LOAD_ERRORS: dict[str, str] = {}
_loaded = False
#: the entry point group that installed packages use to register solvers
ENTRY_POINT_GROUP = "edgebench.solvers"
#: origin given to solvers registered while an entry point loads (set by _load_entry_points)
_entry_origin: str | None = None
#: MODULE:FUNCTION solvers resolved so far (not listed by solvers(): they are named on demand)
_RESOLVED: dict[str, SolverInfo] = {}


def register(name: str, *, families: tuple[str, ...] | list[str], kind: str, description: str = "",
             params: dict[str, str] | None = None):
    if kind not in KINDS:
        raise ValueError(f"solver kind must be one of {KINDS}, got {kind!r}")

    def deco(fn: SolveFn) -> SolveFn:
        if name in _REGISTRY and _REGISTRY[name].fn is not fn:
            raise ValueError(f"solver {name!r} registered twice")
        _REGISTRY[name] = SolverInfo(name, tuple(families), kind,
                                     description or (fn.__doc__ or "").strip().split("\n")[0], fn,
                                     dict(params or {}), origin_of(fn))
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
    _load_entry_points()


def origin_of(fn: Callable) -> str:
    """Where a solver function comes from: "built-in" (edgebench's own packages), "plugin FILE"
    (a file given to --plugin / a suite's plugins), "entry point DIST VERSION" (a package
    installed with an ``edgebench.solvers`` entry point) or "module MODULE"."""
    import sys

    module = getattr(fn, "__module__", None) or "?"
    if _entry_origin is not None:
        return _entry_origin
    if module.startswith("edgebench_plugin_"):
        return f"plugin {getattr(sys.modules.get(module), '__file__', module)}"
    if any(module == p or module.startswith(p + ".") for p in SOLVER_PACKAGES):
        return "built-in"
    return f"module {module}"


def declare(*, families: tuple[str, ...] | list[str] = FAMILIES, kind: str = "heuristic",
            description: str = "", params: dict[str, str] | None = None):
    """Declare, without registering, what a plain solve function supports, for
    ``--solver MODULE:FUNCTION`` and ``edgebench.solvers`` entry points: sets the attributes
    ``families``, ``kind``, ``description`` and ``params`` on the function (set them by hand
    to avoid importing edgebench). Undeclared: every family, kind "heuristic"."""
    if kind not in KINDS:
        raise ValueError(f"solver kind must be one of {KINDS}, got {kind!r}")

    def deco(fn: SolveFn) -> SolveFn:
        fn.families = tuple(families)  # type: ignore[attr-defined]
        fn.kind = kind  # type: ignore[attr-defined]
        fn.description = description or (fn.__doc__ or "").strip().split("\n")[0]  # type: ignore[attr-defined]
        fn.params = dict(params or {})  # type: ignore[attr-defined]
        return fn

    return deco


def _declared_info(name: str, fn: Any, origin: str) -> SolverInfo:
    """A SolverInfo from a function's declared attributes (see :func:`declare`)."""
    if not callable(fn):
        raise ValueError(f"{name} is not a function ({type(fn).__name__})")
    for info in _REGISTRY.values():  # the function registered itself: keep its declaration
        if info.fn is fn:
            return SolverInfo(name, info.families, info.kind, info.description, fn, dict(info.params), origin)
    families = getattr(fn, "families", FAMILIES)
    if isinstance(families, str):
        families = (families,)
    families = tuple(families)
    if not families or any(f not in FAMILIES for f in families):
        raise ValueError(f"{name}: 'families' must name some of {', '.join(FAMILIES)}, got {families!r}")
    kind = getattr(fn, "kind", "heuristic")
    if kind not in KINDS:
        raise ValueError(f"{name}: 'kind' must be one of {', '.join(KINDS)}, got {kind!r}")
    description = getattr(fn, "description", None) or (fn.__doc__ or "").strip().split("\n")[0]
    return SolverInfo(name, families, kind, str(description), fn, dict(getattr(fn, "params", None) or {}), origin)


def _load_entry_points() -> None:
    """Register the solvers of installed packages: each entry point of the group
    ``edgebench.solvers`` is ``NAME = "MODULE:FUNCTION"`` (the function follows the solver
    protocol; families / kind as in :func:`declare`). A module that registers its own solvers
    with :func:`register` on import keeps those. A broken entry point is recorded in
    LOAD_ERRORS (and warned about) instead of hiding every other solver."""
    global _entry_origin
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        where = f"entry point {dist.name} {dist.version}" if dist is not None else f"entry point {ep.value}"
        _entry_origin = where
        try:
            fn = ep.load()
            if ep.name not in _REGISTRY and not any(i.fn is fn for i in _REGISTRY.values()):
                _REGISTRY[ep.name] = _declared_info(ep.name, fn, where)
        except Exception as exc:
            LOAD_ERRORS[f"{where} ({ep.name} = {ep.value})"] = f"{type(exc).__name__}: {exc}"
            warnings.warn(f"edgebench: solver entry point {ep.name} = {ep.value} failed to load: {exc}",
                          stacklevel=3)
        finally:
            _entry_origin = None


def is_function_spec(name: str) -> bool:
    """``MODULE:FUNCTION`` (a dotted module path, a colon, a dotted attribute path)."""
    import re

    return re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*", name) is not None


def resolve(spec: str) -> SolverInfo:
    """The solver of ``--solver MODULE:FUNCTION``: imports MODULE (from sys.path, e.g. the
    current folder) and takes FUNCTION. Raises ValueError with the reason (no such module,
    no such function, a bad declaration); an import error inside the module is reported."""
    if spec in _RESOLVED:
        return _RESOLVED[spec]
    if not is_function_spec(spec):
        raise ValueError(f"{spec!r} is not MODULE:FUNCTION")
    _load()
    import os
    import sys

    if os.getcwd() not in sys.path:  # the console script's sys.path lacks the current folder
        sys.path.append(os.getcwd())
    module_name, attr = spec.split(":", 1)
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise ValueError(f"no module named {exc.name!r} (the module must be importable: on sys.path, "
                             f"e.g. in the current folder, or installed)") from None
        raise ValueError(f"module {module_name} failed to import: {type(exc).__name__}: {exc}") from None
    except Exception as exc:
        raise ValueError(f"module {module_name} failed to import: {type(exc).__name__}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"module {module_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    info = _declared_info(spec, obj, f"module {module_name}")
    _RESOLVED[spec] = info
    return info


def solvers(family: str | None = None) -> list[SolverInfo]:
    _load()
    out = [s for s in _REGISTRY.values() if family is None or family in s.families]
    return sorted(out, key=lambda s: s.name)


def get(name: str) -> SolverInfo:
    """A registered solver by name, or a ``MODULE:FUNCTION`` (:func:`resolve`)."""
    _load()
    if name not in _REGISTRY and is_function_spec(name):
        try:
            return resolve(name)
        except ValueError as exc:
            raise KeyError(f"cannot use solver {name!r}: {exc}") from None
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
