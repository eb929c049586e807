"""The solver protocol and the registry.

A solver is a function ``solve(instance, *, time_limit=None, seed=0, **params) -> Result``
registered with :func:`register`, which records its name, the families it supports, its
kind and a one-line description.

Lazy loading: the built-in solvers are listed from the solver catalogue
(:mod:`edgebench.solver_catalogue`, generated from the ``register`` calls by ``python -m
edgebench.catalogue``; a test checks that it equals what the modules register), so listing
the registry imports no solver module. A solver's module (and with it scipy, numba, OR-Tools,
torch ...) is imported the first time something needs the solver's function: :func:`get`,
running it, checking its parameters. A module that fails to import makes its solvers raise
:class:`SolverLoadError` ("NAME: could not load: REASON"), never "unknown solver".

Model building, solving and decoding are separate steps inside each solver; every solver
returns the same :class:`Result`, whose ``solution`` is a :class:`edgebench.solution.Solution`.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import json
import math
import numbers
import pkgutil
import re
import typing
import warnings
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Callable, Protocol

from edgebench import solver_catalogue
from edgebench.errors import InputError

if TYPE_CHECKING:  # listing solvers needs neither the instance models nor pydantic: both load when used
    from pydantic import ValidationError

    from edgebench.instances.model import Instance
    from edgebench.solution import Solution

KINDS = ("exact", "heuristic", "metaheuristic", "mdp", "learned")
FAMILIES = ("placement", "mapping", "offloading")
#: the time limit (seconds) :func:`solve` and ``edgebench solve`` use when the caller gives none,
#: by solver kind (a solver may declare its own with ``register(..., time_limit=...)``); heuristics
#: and learned policies run once to completion and get none
DEFAULT_TIME_LIMITS: dict[str, float] = {"exact": 300.0, "mdp": 300.0}
#: kinds whose ``optimal`` status may be a proof (others declare ``proves=True`` at register time)
PROVING_KINDS = ("exact", "mdp")
#: what a solver's reported bound is a bound of (``register(..., bound=...)``): "instance" (the
#: referee's problem on the instance: every feasible solution), "restriction" (only of the
#: model's restriction of it, e.g. fixed-allocation schedules: never counted as the instance's),
#: or None (the solver reports no bound). Default: "instance" for the proving kinds, else None.
#: Certification reads it (edgebench.formulations.certify.solver_bound_applies).
BOUND_SCOPES = ("instance", "restriction", None)
#: parameters the caller passes separately (never in ``params``)
RESERVED_PARAMS = ("time_limit", "seed")
_UNSET: Any = object()

#: packages whose modules register solvers on import (the catalogue names, per solver, the one
#: module to import; :func:`load_all` imports every public module, as the catalogue's writer does)
SOLVER_PACKAGES = ["edgebench.solvers", "edgebench.formulations", "edgebench.learned",
                   "edgebench.formulations.placement", "edgebench.formulations.placement.search"]


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
    #: declared parameter types (name -> annotation) beyond the solve function's signature;
    #: ``choices`` and ``bounds`` narrow them (see :func:`check_params`)
    types: dict[str, Any] = field(default_factory=dict, compare=False)
    choices: dict[str, tuple] = field(default_factory=dict, compare=False)
    bounds: dict[str, tuple] = field(default_factory=dict, compare=False)
    #: seconds used when the caller gives no time limit (None: runs to completion)
    default_time_limit: float | None = None
    #: may its ``optimal`` status count as a proof (kind exact / mdp unless declared)
    proves: bool = False
    #: a ``**params`` solver registered without documented parameters accepts any name
    open_params: bool = False
    #: the solver's own parameter check (``check(params)`` raises InputError / ValueError /
    #: TypeError), run by :func:`check_params` after the declared types
    check: Callable[[dict[str, Any]], Any] | None = field(default=None, repr=False, compare=False)
    #: learned solvers: () -> one dict per shipped checkpoint (preset, variant, algorithm,
    #: env_steps, sha256, ...); as_dict() lists them under "checkpoints"
    provenance: Callable[[], list[dict[str, Any]]] | None = field(default=None, repr=False, compare=False)
    #: ``applies(instance, params)`` -> None when the solver can run on the instance, else the
    #: reason it declines (e.g. a learned policy with no checkpoint for the instance's preset);
    #: the runner plans no run where it declines and says so in the plan's notes
    applies: Callable[[Any, dict[str, Any]], str | None] | None = field(default=None, repr=False, compare=False)
    #: what its reported bound bounds (:data:`BOUND_SCOPES`): "instance", "restriction" or None
    bound: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return _as_dict(self)


def _as_dict(info: Any) -> dict[str, Any]:
    out = {"name": info.name, "families": list(info.families), "kind": info.kind,
           "description": info.description, "params": dict(info.params)}
    if info.provenance is not None:
        out["checkpoints"] = info.provenance()
    return out


class SolverLoadError(KeyError):
    """A catalogued solver whose module failed to import (or no longer registers it): the
    message is "NAME: could not load: REASON". A KeyError, as an unknown name is, so callers
    that handle one handle both; ``str()`` is the message itself."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class CatalogueEntry:
    """A built-in solver as the catalogue lists it: name, kind, families, parameters (documented,
    choices, bounds), default time limit, proves, description and the module to import. Reading
    ``fn``, ``types``, ``check`` or ``applies`` (where the solver has one) imports the module and
    answers from the registered :class:`SolverInfo` (:meth:`loaded`); ``provenance`` reads the
    checkpoints' JSON sidecars without importing the solver (no torch)."""

    origin = "built-in"

    def __init__(self, record: dict[str, Any]):
        self.record = record
        self.name: str = record["name"]
        self.module: str = record["module"]
        self.families: tuple[str, ...] = tuple(record["families"])
        self.kind: str = record["kind"]
        self.description: str = record["description"]
        self.params: dict[str, str] = dict(record["params"])
        self.choices: dict[str, tuple] = {k: tuple(v) for k, v in record["choices"].items()}
        self.bounds: dict[str, tuple] = {k: tuple(v) for k, v in record["bounds"].items()}
        self.default_time_limit: float | None = record["default_time_limit"]
        self.proves: bool = record["proves"]
        self.open_params: bool = record["open_params"]
        self.bound: str | None = record.get("bound")
        self._info: SolverInfo | None = None
        self._error: str | None = None

    def __repr__(self) -> str:
        return f"CatalogueEntry({self.name!r}, module={self.module!r})"

    def loaded(self) -> SolverInfo:
        """The registered SolverInfo (imports the solver's module once). Raises SolverLoadError
        with the reason when the module fails to import or does not register the solver."""
        if self._info is None:
            if self._error is None:
                try:
                    importlib.import_module(self.module)
                except Exception as exc:  # noqa: BLE001 - any import failure is the solver's reason
                    LOAD_ERRORS[self.module] = self._error = f"{type(exc).__name__}: {exc}"
                else:
                    self._info = _BUILTIN.get(self.name)
                    if self._info is None:
                        self._error = (f"module {self.module} does not register it (the solver catalogue is "
                                       "stale: run python -m edgebench.catalogue)")
            if self._info is None:
                raise SolverLoadError(f"{self.name}: could not load: {self._error}")
        return self._info

    @property
    def fn(self) -> SolveFn:
        return self.loaded().fn

    @property
    def types(self) -> dict[str, Any]:
        return self.loaded().types

    @property
    def check(self) -> Callable[[dict[str, Any]], Any] | None:
        return self.loaded().check if self.record["check"] else None

    @property
    def applies(self) -> Callable[[Any, dict[str, Any]], str | None] | None:
        return self.loaded().applies if self.record["applies"] else None

    @property
    def provenance(self) -> Callable[[], list[dict[str, Any]]] | None:
        spec = self.record["provenance"]
        if spec is None:
            return None
        if spec == "module":  # not a light hook: the solver's own
            return self.loaded().provenance
        target, args = spec
        module, func = target.split(":")
        return functools.partial(getattr(importlib.import_module(module), func), *args)

    def as_dict(self) -> dict[str, Any]:
        return _as_dict(self)


#: solvers registered so far (plugins, entry points, and built-ins whose module was imported)
_REGISTRY: dict[str, SolverInfo] = {}
#: every built-in registration, kept apart from _REGISTRY (which tests may swap for a copy)
_BUILTIN: dict[str, SolverInfo] = {}
#: the built-in solvers, by name, from the catalogue (their modules are imported on demand)
_CATALOGUE: dict[str, CatalogueEntry] = {r["name"]: CatalogueEntry(r) for r in solver_catalogue.SOLVERS}
#: solver modules that failed to import (module -> error); a test asserts it stays empty
LOAD_ERRORS: dict[str, str] = {}
_entry_points_loaded = False
#: the entry point group that installed packages use to register solvers
ENTRY_POINT_GROUP = "edgebench.solvers"
#: origin given to solvers registered while an entry point loads (set by _load_entry_points)
_entry_origin: str | None = None
#: MODULE:FUNCTION solvers resolved so far (not listed by solvers(): they are named on demand)
_RESOLVED: dict[str, SolverInfo] = {}


def register(name: str, *, families: tuple[str, ...] | list[str], kind: str, description: str = "",
             params: dict[str, str] | None = None, types: dict[str, Any] | None = None,
             choices: dict[str, Any] | None = None, bounds: dict[str, tuple] | None = None,
             time_limit: float | None = _UNSET, proves: bool | None = None,
             check: Callable[[dict[str, Any]], Any] | None = None,
             provenance: Callable[[], list[dict[str, Any]]] | None = None,
             applies: Callable[[Any, dict[str, Any]], str | None] | None = None,
             bound: str | None = _UNSET):
    """Register ``solve``. ``params`` documents the parameters (name -> one line); their types
    come from the solve function's signature (annotations and defaults), or from ``types`` for
    parameters passed through ``**params``; ``choices`` (name -> allowed values) and ``bounds``
    (name -> (min, max), inclusive, None for open) narrow them. ``time_limit``: the default
    seconds (default: :data:`DEFAULT_TIME_LIMITS` of the kind). ``proves``: whether an
    ``optimal`` status can be a proof (default: the kind is exact or mdp). ``check``: the
    solver's own parameter check, run before any work (see :func:`check_params`).
    ``provenance`` (learned solvers): () -> one dict per shipped checkpoint, listed by
    ``as_dict()`` under ``checkpoints``. ``applies(instance, params)``: None when the solver can
    run on the instance, else why it declines (the runner then plans no such run). ``bound``:
    what the solver's reported bound is a bound of (:data:`BOUND_SCOPES`; default "instance"
    for the proving kinds, else None); certification counts only an "instance" bound."""
    if kind not in KINDS:
        raise ValueError(f"solver kind must be one of {KINDS}, got {kind!r}")
    scope = ("instance" if kind in PROVING_KINDS else None) if bound is _UNSET else bound
    if scope not in BOUND_SCOPES:
        raise ValueError(f"solver bound must be one of {BOUND_SCOPES}, got {bound!r}")

    def deco(fn: SolveFn) -> SolveFn:
        if name in _REGISTRY and _REGISTRY[name].fn is not fn:
            raise ValueError(f"solver {name!r} registered twice")
        if name in _CATALOGUE and getattr(fn, "__module__", None) != _CATALOGUE[name].module:
            raise ValueError(f"solver {name!r} registered twice (a built-in solver of {_CATALOGUE[name].module})")
        tl = DEFAULT_TIME_LIMITS.get(kind) if time_limit is _UNSET else time_limit
        _REGISTRY[name] = info = SolverInfo(name, tuple(families), kind,
                                     description or (fn.__doc__ or "").strip().split("\n")[0], fn,
                                     dict(params or {}), origin=origin_of(fn), types=dict(types or {}),
                                     choices={k: tuple(v) for k, v in (choices or {}).items()},
                                     bounds=dict(bounds or {}), default_time_limit=tl,
                                     proves=kind in PROVING_KINDS if proves is None else bool(proves),
                                     open_params=params is None, check=check,
                                     provenance=provenance, applies=applies, bound=scope)
        if info.origin == "built-in":
            _BUILTIN[name] = info
        _PARAM_MODELS.pop(name, None)
        return fn

    return deco


def load_all() -> dict[str, str]:
    """Import every public module of :data:`SOLVER_PACKAGES` (what the catalogue's writer and
    its test do; listing and running solvers never need it) and the entry points; returns
    :data:`LOAD_ERRORS`."""
    for pkg_name in SOLVER_PACKAGES:
        pkg = importlib.import_module(pkg_name)
        for mod in pkgutil.iter_modules(pkg.__path__):
            if not mod.name.startswith("_"):
                name = f"{pkg_name}.{mod.name}"
                try:
                    with warnings.catch_warnings():  # the deprecated placement_* paths (issue 45) re-export
                        warnings.filterwarnings("ignore", r"edgebench\.formulations\.placement_\w+ is deprecated",
                                                DeprecationWarning)
                        importlib.import_module(name)
                except Exception as exc:  # one broken module must not hide every other solver
                    LOAD_ERRORS[name] = f"{type(exc).__name__}: {exc}"
                    warnings.warn(f"edgebench: solver module {name} failed to import: {exc}", stacklevel=2)
    _ensure_entry_points()
    return LOAD_ERRORS


def _ensure_entry_points() -> None:
    global _entry_points_loaded
    if not _entry_points_loaded:
        _entry_points_loaded = True
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
    for info in [*_REGISTRY.values(), *_BUILTIN.values()]:  # the function registered itself: keep its declaration
        if info.fn is fn:
            return dataclasses.replace(info, name=name, origin=origin)
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
    declared = getattr(fn, "params", None)
    return SolverInfo(name, families, kind, str(description), fn, dict(declared or {}), origin=origin,
                      default_time_limit=DEFAULT_TIME_LIMITS.get(kind), proves=kind in PROVING_KINDS,
                      open_params=declared is None,
                      bound=getattr(fn, "bound", "instance" if kind in PROVING_KINDS else None))


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
            if (ep.name not in _REGISTRY and ep.name not in _CATALOGUE
                    and not any(i.fn is fn for i in [*_REGISTRY.values(), *_BUILTIN.values()])):
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


def solvers(family: str | None = None) -> list[SolverInfo | CatalogueEntry]:
    """Every solver (built-ins from the catalogue, without importing their modules; plugins;
    entry points), sorted by name, of ``family`` if given."""
    _ensure_entry_points()
    every: dict[str, Any] = {**_CATALOGUE, **_REGISTRY}
    out = [s for s in every.values() if family is None or family in s.families]
    return sorted(out, key=lambda s: s.name)


def get(name: str) -> SolverInfo:
    """A solver by name (a built-in's module is imported now), or a ``MODULE:FUNCTION``
    (:func:`resolve`). KeyError for an unknown name; :class:`SolverLoadError` (a KeyError)
    naming the reason when the solver's module fails to import."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name in _CATALOGUE:
        return _CATALOGUE[name].loaded()
    if is_function_spec(name):
        try:
            return resolve(name)
        except ValueError as exc:
            raise KeyError(f"cannot use solver {name!r}: {exc}") from None
    _ensure_entry_points()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = sorted({*_CATALOGUE, *_REGISTRY})
        raise KeyError(f"unknown solver {name!r}; known: {', '.join(known)}") from None


def solve(instance: Instance, solver: str, *, time_limit: float | None = None, seed: int = 0,
          **params: Any) -> Result:
    """Run ``solver`` on ``instance``. The time limit, seed and parameters are checked first
    (:func:`check_params`; InputError naming the field); without ``time_limit`` the solver's
    default applies (:attr:`SolverInfo.default_time_limit`)."""
    info = get(solver)
    if instance.family not in info.families:
        raise InputError(f"solver {solver!r} does not support family {instance.family!r} "
                         f"(supports {', '.join(info.families)})", field="solver")
    time_limit = check_time_limit(time_limit, info)
    seed = check_seed(seed)
    check_params(info, params)
    return info.fn(instance, time_limit=time_limit, seed=seed, **params)


# ======================================================================================
# parameter validation: one mechanism for the CLI, suites and the Python API
# ======================================================================================

_PARAM_MODELS: dict[str, Any] = {}


def check_time_limit(value: Any, info: SolverInfo | None = None, *, file: str | None = None,
                     field: str = "time_limit") -> float | None:
    """A finite number of seconds >= 0 (0: no time left, the solver returns at once), or None
    (then ``info``'s default)."""
    if value is None:
        return info.default_time_limit if info is not None else None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (0 <= value < math.inf):
        raise InputError(f"a time limit must be a finite number of seconds >= 0, got {value!r}",
                         file=file, field=field)
    return float(value)


def check_seed(value: Any, *, file: str | None = None, field: str = "seed") -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= value < 2 ** 63:
        raise InputError(f"a seed must be an integer in [0, 2^63), got {value!r}", file=file, field=field)
    return int(value)


def _choice_check(allowed: tuple) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if v not in allowed:
            raise ValueError(f"must be one of {', '.join(map(str, allowed))}, got {v!r}")
        return v
    return check


def _bound_check(lo: float | None, hi: float | None) -> Callable[[Any], Any]:
    """Numbers only (a parameter may also take a word, e.g. ``window = "auto"``)."""
    def check(v: Any) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if (lo is not None and v < lo) or (hi is not None and v > hi) or v != v:
                rng = f">= {lo}" if hi is None else f"<= {hi}" if lo is None else f"in [{lo}, {hi}]"
                raise ValueError(f"must be {rng}, got {v!r}")
        return v
    return check


def _param_fields(info: SolverInfo) -> dict[str, tuple[Any, Any]]:
    """name -> (annotation, default) of every parameter a solver accepts."""
    from pydantic import AfterValidator

    sig = inspect.signature(info.fn)
    try:
        hints = typing.get_type_hints(info.fn, include_extras=True)
    except Exception:  # an annotation that does not resolve: accept any value for it
        hints = {}
    out: dict[str, tuple[Any, Any]] = {}
    for n, p in sig.parameters.items():
        if (p.kind not in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                or n in RESERVED_PARAMS or n == "instance"):
            continue
        ann = hints.get(n, Any)
        default = None if p.default is inspect.Parameter.empty else p.default
        if default is None and ann is not Any:
            ann = ann | None
        out[n] = (ann, default)
    for n in info.params:
        out.setdefault(n, (Any, None))
    for n, ann in info.types.items():
        out[n] = (ann, out.get(n, (Any, None))[1])
    for n, allowed in info.choices.items():
        ann, default = out.get(n, (Any, None))
        out[n] = (Annotated[ann, AfterValidator(_choice_check(allowed))], default)
    for n, (lo, hi) in info.bounds.items():
        ann, default = out.get(n, (Any, None))
        out[n] = (Annotated[ann, AfterValidator(_bound_check(lo, hi))], default)
    return out


def _param_model(info: SolverInfo):
    model = _PARAM_MODELS.get(info.name)
    if model is None:
        from pydantic import ConfigDict, create_model

        var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(info.fn).parameters.values())
        extra = "allow" if var_kw and info.open_params else "forbid"
        fields = {n: (ann, default) for n, (ann, default) in _param_fields(info).items()}
        model = _PARAM_MODELS[info.name] = create_model(
            f"Params_{info.name}", __config__=ConfigDict(extra=extra, strict=True, arbitrary_types_allowed=True),
            **fields)
    return model


def _param_error(exc: ValidationError, info: SolverInfo, model: Any) -> tuple[str, str]:
    """(sub-path, reason) of a parameter's validation error; the alternatives of a union type
    (``int | Literal["auto", "full"]``) are joined into one reason."""
    errs = exc.errors(include_url=False)

    def path(err: dict) -> str:
        # drop pydantic's union-member tags ("int", "literal['auto','full']", "function-after[...]")
        parts = [str(x) for x in err.get("loc", ()) if isinstance(x, int) or not re.search(r"[\[\]'(]|^(int|float|str|bool|none|list|dict|tuple)$", str(x))]
        return ".".join(parts)

    first = errs[0]
    sub = path(first)
    if first.get("type") == "extra_forbidden":
        known = ", ".join(sorted(model.model_fields)) or "none"
        return sub, f"unknown parameter of solver {info.name!r} (known: {known})"
    msgs = []
    for e in errs:
        if path(e) == sub:
            m = str(e.get("msg", "invalid")).removeprefix("Value error, ")
            if m not in msgs:
                msgs.append(m)
    reason = "; or ".join(msgs)
    if "got" not in reason:
        reason = f"{reason}, got {first.get('input')!r}"
    return sub, reason


def check_params(solver: str | SolverInfo, params: dict[str, Any], *, file: str | None = None,
                 field: str = "params") -> dict[str, Any]:
    """Check a solver's parameters against its declaration, before anything runs: unknown
    names, wrong types, values out of range or not among the choices are an InputError naming
    ``<field>.<name>``. Types come from the solve function's signature (annotations and
    defaults) and ``register(types=...)``; ``choices`` / ``bounds`` from ``register``. Values
    are checked as JSON data in pydantic's strict mode (no coercion: ``"4"`` is not an int).
    Returns ``params`` unchanged."""
    try:
        info = get(solver) if isinstance(solver, str) else solver
        if isinstance(info, CatalogueEntry):
            info = info.loaded()
    except SolverLoadError as exc:  # the solver's module failed to import: its reason, one line
        raise InputError(str(exc), file=file, field=field) from None
    if not isinstance(params, dict):
        raise InputError("parameters must be a table of name = value", file=file, field=field)
    for k in RESERVED_PARAMS:
        if k in params:
            raise InputError(f"is set by the runner / the caller, not a solver parameter", file=file,
                             field=f"{field}.{k}")
    from pydantic import ValidationError

    model = _param_model(info)
    try:
        try:
            text = json.dumps(params, allow_nan=False)
        except (TypeError, ValueError):  # Python objects through the API: validate them as they are
            model.model_validate(params)
        else:
            model.model_validate_json(text)
    except ValidationError as exc:
        sub, reason = _param_error(exc, info, model)
        raise InputError(reason, file=file, field=f"{field}.{sub}") from None
    if info.check is not None:
        try:
            info.check(dict(params))
        except InputError as err:
            sub = err.field or ""
            sub = sub.removeprefix("params.").removeprefix("params")
            raise InputError(err.reason, file=file, field=f"{field}.{sub}" if sub else field) from None
        except (TypeError, ValueError) as exc:
            raise InputError(str(exc), file=file, field=field) from None
    return params


def make_result(instance: Instance, solver: str, *, status: str, decisions: Any = None,
                seed: int | None = None, params: dict[str, Any] | None = None,
                objective: float | None = None, bound: float | None = None,
                started: float | None = None, stats: dict[str, Any] | None = None) -> Result:
    """Build the common Result from a solver's decoded decisions (a decisions model of the
    instance's family, or None when there is no solution)."""
    from edgebench.instances.io import content_hash
    from edgebench.solution import Solution

    wall = time.perf_counter() - started if started is not None else 0.0
    payload = {instance.family: decisions} if decisions is not None else {}
    sol = Solution(family=instance.family, instance_id=instance.id, instance_hash=content_hash(instance),
                   solver=solver, params=dict(params or {}), seed=seed, status=status,
                   objective=objective, bound=bound, wall_time=wall, stats=dict(stats or {}), **payload)
    return Result(solution=sol, runtime=wall)
