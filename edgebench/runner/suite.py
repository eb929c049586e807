"""Benchmark suites: which instances, which solvers (with parameters), time limits, seeds.

A suite is a TOML file (read with :mod:`tomllib`, validated with pydantic: unknown keys are
refused) or the same structure built from the command line. :func:`plan` resolves a suite
against the instance sets and the solver registry into a list of :class:`RunSpec` — one per
(instance, solver configuration, seed) — each with its run key::

    key = sha256(canonical JSON of {instance hash, solver, params hash, seed, time limit})

Every problem (unknown key, set, solver, kind or parameter, a solver that supports none of
the suite's families, a bad instance file) is an :class:`~edgebench.errors.InputError`
naming the suite file and the field, raised before anything runs.

The format is documented in ``docs/runner.md``; ``suites/default.toml`` is the default suite.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from edgebench.argtypes import MAX_SECONDS, MAX_WORKERS  # noqa: F401  (public here too: one cap for CLI and suites)
from edgebench.errors import InputError
from edgebench.instances.io import read_toml
from edgebench.runner.bestknown import verify_entry

SUITES_DIR = Path(__file__).resolve().parent / "suites"
DEFAULT_SUITE = SUITES_DIR / "default.toml"
KINDS = ("exact", "heuristic", "metaheuristic", "mdp", "learned")
FAMILIES = ("placement", "mapping", "offloading")
#: the "file" of suites built from command-line options
CMDLINE = "<command line>"
#: parameters a suite may not pass to a solver: the runner sets them
RESERVED_PARAMS = ("time_limit", "seed")
#: the documented limits of a suite's numbers (docs/runner.md; seconds and workers: argtypes)
MAX_SEED = 2 ** 63 - 1
#: default start-up allowance of a run (seconds from its task's hand-over to its solver's start)
DEFAULT_STARTUP_ALLOWANCE = 10.0
MAX_MEMORY_MB = 16 * 1024 * 1024
#: address-space limit of each run (MiB) unless the suite or --memory-limit says otherwise (0: none)
DEFAULT_MEMORY_LIMIT_MB = 4096


# ======================================================================================
# time limits
# ======================================================================================

_TL_HELP = ("a time limit is a positive number of seconds (at most 1e7) or a table "
            "{by_size = [[size, seconds], ...]}")


@dataclass(frozen=True)
class TimeLimit:
    """Seconds for an instance of a given size: a fixed value, or a step table
    ``[(min_size, seconds), ...]`` sorted by size (the entry with the largest ``min_size <=
    size`` applies; sizes below the first entry use the first)."""

    steps: tuple[tuple[int, float], ...]

    def seconds(self, size: int) -> float:
        out = self.steps[0][1]
        for threshold, secs in self.steps:
            if size >= threshold:
                out = secs
        return out

    def to_toml_value(self) -> Any:
        if len(self.steps) == 1 and self.steps[0][0] == 0:
            return self.steps[0][1]
        return {"by_size": [[s, t] for s, t in self.steps]}

    @classmethod
    def fixed(cls, seconds: float) -> "TimeLimit":
        return cls(((0, float(seconds)),))


def _positive_seconds(x: Any, where: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not (0 < x <= MAX_SECONDS):
        raise ValueError(f"@{where}@ {_TL_HELP}, got {x!r}" if where else f"{_TL_HELP}, got {x!r}")
    return float(x)


def parse_time_limit(value: Any, where: str = "") -> TimeLimit:
    """A number of seconds, or ``{"by_size": [[size, seconds], ...]}``."""
    if isinstance(value, TimeLimit):
        return value
    if isinstance(value, dict):
        if set(value) != {"by_size"}:
            raise ValueError(f"@{where}@ {_TL_HELP}" if where else _TL_HELP)
        rows = value["by_size"]
        if not isinstance(rows, list) or not rows:
            raise ValueError(f"@{where}.by_size@ expected a non-empty list of [size, seconds] pairs")
        steps = []
        for i, row in enumerate(rows):
            sub = f"{where}.by_size[{i}]" if where else f"by_size[{i}]"
            if (not isinstance(row, list) or len(row) != 2 or isinstance(row[0], bool)
                    or not isinstance(row[0], int) or row[0] < 0):
                raise ValueError(f"@{sub}@ expected [size, seconds] with an integer size >= 0")
            steps.append((row[0], _positive_seconds(row[1], sub)))
        sizes = [s for s, _ in steps]
        if sizes != sorted(set(sizes)):
            raise ValueError(f"@{where}.by_size@ sizes must be strictly increasing")
        return TimeLimit(tuple(steps))
    return TimeLimit.fixed(_positive_seconds(value, where))


# ======================================================================================
# the suite model
# ======================================================================================


Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)


class InstanceSource(_Strict):
    """One entry of ``[[instances]]``: exactly one of ``set`` (an embedded instance set, see
    ``edgebench sets``), ``dir`` (every instance file in a folder; a folder with a
    ``manifest.json`` is read as an instance set) or ``files`` (a list of instance files).
    Relative paths are relative to the suite file."""

    set: str | None = None
    dir: str | None = None
    files: list[str] | None = None

    @model_validator(mode="after")
    def _one(self) -> "InstanceSource":
        given = [k for k in ("set", "dir", "files") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of 'set', 'dir' or 'files'")
        if self.files is not None and not self.files:
            raise ValueError("@files@ must not be empty")
        return self


class SolverEntry(_Strict):
    """One entry of ``[[solvers]]``: a solver by ``name``, or every registered solver of a
    ``kind`` that supports the instance's family (new solvers join automatically)."""

    name: str | None = None
    kind: Literal["exact", "heuristic", "metaheuristic", "mdp", "learned"] | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    #: the configuration's name in reports (default: the solver name, with its parameters)
    label: str | None = None
    #: restrict to these families
    families: list[Literal["placement", "mapping", "offloading"]] | None = None
    #: with ``kind``: solver names left out
    exclude: list[str] = Field(default_factory=list)
    seeds: list[Seed] | None = None
    time_limit: Any = None
    #: an external program (docs/cli.md, "External solvers"); ``name`` is then its label
    command: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _shape(self) -> "SolverEntry":
        if (self.name is None) == (self.kind is None):
            raise ValueError("give exactly one of 'name' or 'kind'")
        if self.command is not None and (self.params or self.label is not None or self.kind is not None):
            raise ValueError("@command@ an external program's entry takes 'name' (its label), not 'params', "
                             "'label' or 'kind'")
        if self.kind is not None and self.label is not None:
            raise ValueError("@label@ a label names one solver configuration; it needs 'name', not 'kind'")
        if self.name is not None and self.exclude:
            raise ValueError("@exclude@ only with 'kind'")
        if self.seeds is not None and not self.seeds:
            raise ValueError("@seeds@ must not be empty")
        if self.seeds is not None and len(set(self.seeds)) != len(self.seeds):
            raise ValueError("@seeds@ repeats a seed")
        for p in RESERVED_PARAMS:
            if p in self.params:
                raise ValueError(f"@params.{p}@ is set by the runner; use the suite's '{p}' / 'seeds' keys")
        return self

    @field_validator("time_limit", mode="before")
    @classmethod
    def _tl(cls, v: Any) -> Any:
        return None if v is None else parse_time_limit(v)


class Suite(_Strict):
    """A benchmark suite (the TOML file's top level)."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    description: str = ""
    #: seeds of every solver entry that gives none
    seeds: list[Seed] = Field(default_factory=lambda: [0])
    #: seconds: one value, a by-size table, or a table by solver kind ({default = .., exact = ..})
    time_limit: Any = Field(default=60.0, validate_default=True)
    #: the hard kill comes at ``time_limit * 1.2 + kill_grace`` seconds after a run's solver starts
    kill_grace: float = Field(default=5.0, ge=0, le=MAX_SECONDS, allow_inf_nan=False)
    #: seconds a run may spend between the hand-over of its task (to its own, forked-ahead process)
    #: and its solver's start (memory limit, instance load and validation); over it: ``killed``
    startup_allowance: float = Field(default=DEFAULT_STARTUP_ALLOWANCE, gt=0, le=MAX_SECONDS, allow_inf_nan=False)
    #: address-space limit (RLIMIT_AS, MiB) of each run's process and everything it starts; 0: none
    memory_limit_mb: int = Field(default=DEFAULT_MEMORY_LIMIT_MB, ge=0, le=MAX_MEMORY_MB)
    #: BLAS / OpenMP threads of each worker (OMP_NUM_THREADS, MKL_NUM_THREADS, ...)
    threads: int = Field(default=1, gt=0, le=MAX_WORKERS)
    #: default number of local worker processes (the command line's --workers wins)
    workers: int | None = Field(default=None, gt=0, le=MAX_WORKERS)
    #: Python files imported by the driver and every worker (extra solvers register there)
    plugins: list[str] = Field(default_factory=list)
    instances: list[InstanceSource] = Field(min_length=1)
    solvers: list[SolverEntry] = Field(min_length=1)

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v: list[int]) -> list[int]:
        if not v:
            raise ValueError("must not be empty")
        if len(set(v)) != len(v):
            raise ValueError("repeats a seed")
        return v

    @field_validator("time_limit", mode="before")
    @classmethod
    def _time_limit(cls, v: Any) -> Any:
        if isinstance(v, dict) and "by_size" not in v:
            out = {}
            for k, x in v.items():
                if k != "default" and k not in KINDS:
                    raise ValueError(f"@{k}@ unknown key (expected 'default' or a solver kind: {', '.join(KINDS)})")
                out[k] = parse_time_limit(x, k)
            if "default" not in out:
                out["default"] = TimeLimit.fixed(60.0)
            return out
        return parse_time_limit(v)

    def time_limit_for(self, kind: str, entry: SolverEntry | None = None) -> TimeLimit:
        if entry is not None and entry.time_limit is not None:
            return entry.time_limit
        tl = self.time_limit
        if isinstance(tl, dict):
            return tl.get(kind, tl["default"])
        return tl


# ======================================================================================
# loading
# ======================================================================================


def _validate(data: Any, file: str) -> Suite:
    from edgebench.instances.io import validate_model

    if not isinstance(data, dict):
        raise InputError("a suite must be a table", file=file)
    bad = _unsupported_value(data)
    if bad is not None:
        raise InputError(bad[1], file=file, field=bad[0] or None)
    return validate_model(Suite, json.dumps(data, allow_nan=False), file=file)


def _unsupported_value(data: Any, path: str = "") -> tuple[str, str] | None:
    """(field, reason) of the first value a suite cannot hold: nan / inf, a TOML date or time."""
    if isinstance(data, dict):
        items = ((f"{path}.{k}" if path else str(k), v) for k, v in data.items())
    elif isinstance(data, list):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(data))
    elif isinstance(data, float) and not math.isfinite(data):
        return path, f"must be a finite number, got {data!r}"
    elif data is None or isinstance(data, (str, int, float)):
        return None
    else:
        return path, f"unsupported value {data!s} ({type(data).__name__}: dates and times are not suite values)"
    for sub, v in items:
        bad = _unsupported_value(v, sub)
        if bad is not None:
            return bad
    return None


def load_suite(path: str | Path) -> Suite:
    """Read and validate a suite TOML file (InputError on any problem)."""
    p = Path(path)
    return _validate(read_toml(p, "suite file"), str(p))


def suite_from_dict(data: dict[str, Any], file: str = CMDLINE) -> Suite:
    return _validate(data, file)


def default_suite() -> Suite:
    return load_suite(DEFAULT_SUITE)


# ---- TOML output (the suites recorded in a store are written back as files) ------------------


def _toml_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def _toml_value(v: Any) -> str:
    if isinstance(v, TimeLimit):
        v = v.to_toml_value()
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        if isinstance(v, float) and v != v or v in (float("inf"), float("-inf")):
            raise ValueError("TOML suites hold finite numbers only")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        items = [f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items() if x is not None]
        return "{" + ", ".join(items) + "}"
    raise ValueError(f"cannot write {type(v).__name__} to TOML")


def suite_to_toml(suite: Suite) -> str:
    """A TOML text that :func:`load_suite` reads back into an equal suite."""
    d = suite.model_dump()
    lines = []
    for k in ("name", "description", "seeds", "kill_grace", "startup_allowance", "memory_limit_mb", "threads",
              "workers", "plugins"):
        if d.get(k) is not None:
            lines.append(f"{k} = {_toml_value(d[k])}")
    tl = suite.time_limit
    if isinstance(tl, dict):
        lines.append("\n[time_limit]")
        for k, v in tl.items():
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
    else:
        lines.append(f"time_limit = {_toml_value(tl)}")
    for src in suite.instances:
        lines.append("\n[[instances]]")
        for k, v in src.model_dump().items():
            if v is not None:
                lines.append(f"{k} = {_toml_value(v)}")
    for e in suite.solvers:
        lines.append("\n[[solvers]]")
        for k in ("name", "kind", "label", "command", "families", "exclude", "seeds", "time_limit", "params"):
            v = getattr(e, k)
            if v is None or (k in ("exclude", "params") and not v):
                continue
            lines.append(f"{k} = {_toml_value(v)}")
    return "\n".join(lines) + "\n"


# ======================================================================================
# plugins
# ======================================================================================


def import_plugins(paths: list[str], *, file: str = CMDLINE, field: str = "plugins") -> list[str]:
    """Import each Python file once (a module named after its path); returns absolute paths."""
    out = []
    for i, path in enumerate(paths):
        p = Path(path).resolve()
        if not p.is_file():
            raise InputError(f"no such plugin file: {path}", file=file, field=f"{field}[{i}]")
        load_plugin(str(p))
        out.append(str(p))
    return out


def load_plugin(path: str) -> None:
    name = "edgebench_plugin_" + hashlib.sha256(path.encode()).hexdigest()[:12]
    if name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise InputError("cannot import plugin", file=path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise InputError(f"plugin failed to import: {type(exc).__name__}: {exc}", file=path) from None


# ======================================================================================
# planning
# ======================================================================================


@dataclass(frozen=True)
class InstanceRef:
    instance: Any  # edgebench.instances.model.Instance
    hash: str
    set: str | None
    path: str | None
    size: int
    #: the manifest's best_known entry, when the instance comes from a set
    best_known: dict[str, Any] | None = None

    @property
    def family(self) -> str:
        return self.instance.family

    @property
    def id(self) -> str:
        return self.instance.id


@dataclass(frozen=True)
class RunSpec:
    key: str
    inst: InstanceRef
    solver: str
    label: str
    kind: str
    params: dict[str, Any]
    params_hash: str
    seed: int
    time_limit: float
    kill_after: float
    memory_limit_mb: int | None
    #: may an ``optimal`` status of this solver count as a proof (registry ``proves``)
    proves: bool = False
    #: seconds allowed from the run's task hand-over to its solver's start (then it is killed)
    startup_allowance: float = DEFAULT_STARTUP_ALLOWANCE

    @property
    def family(self) -> str:
        return self.inst.family


@dataclass
class Plan:
    suite: Suite
    file: str
    runs: list[RunSpec]
    instances: list[InstanceRef]
    plugins: list[str]
    #: notes for the user (kinds with no registered solver yet, modules that failed to import)
    notes: list[str] = field(default_factory=list)


def instance_size(instance) -> int:
    """The size used for time limits by size and the gap-vs-size plot: placement, the number
    of tasks; mapping, the number of task nodes over all jobs; offloading, the number of
    tasks over all workflows."""
    p = instance.payload
    if instance.family == "placement":
        return len(p.tasks)
    if instance.family == "mapping":
        return sum(len(j.tasks) for j in p.jobs)
    return sum(len(w.tasks) for w in p.workflows)


def params_hash(params: dict[str, Any]) -> str:
    from edgebench.instances.io import canonical_json

    return hashlib.sha256(canonical_json(params).encode()).hexdigest()[:16]


def run_key(instance_hash: str, solver: str, phash: str, seed: int, time_limit: float) -> str:
    text = json.dumps({"instance": instance_hash, "solver": solver, "params": phash, "seed": seed,
                       "time_limit": round(float(time_limit), 6)}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def default_label(solver: str, params: dict[str, Any]) -> str:
    if not params:
        return solver
    inner = ",".join(f"{k}={json.dumps(v, sort_keys=True, separators=(',', ':'))}" for k, v in sorted(params.items()))
    inner = inner.replace('"', "")
    if len(inner) > 40:
        inner = params_hash(params)[:8]
    return f"{solver}[{inner}]"


def _resolve_path(path: str, base: Path | None) -> Path:
    p = Path(path)
    return p if p.is_absolute() or base is None else base / p


def _load_instances(suite: Suite, file: str, base: Path | None) -> list[InstanceRef]:
    from edgebench.instances import io, sets

    out: dict[str, InstanceRef] = {}

    def add(inst, set_name, path, entry=None):
        h = io.content_hash(inst)
        if h not in out:
            out[h] = InstanceRef(inst, h, set_name, path, instance_size(inst), entry)

    def add_set(name: str, data_dir: Path | None, field: str) -> None:
        try:
            manifest = sets.read_manifest(name, data_dir)
            instances = sets.load_set(name, data_dir)
        except InputError as err:
            if err.file is None:
                raise InputError(err.reason, file=file, field=field) from None
            raise
        folder = (data_dir or sets.DATA_DIR) / name
        for entry, inst in zip(manifest["instances"], instances):
            if data_dir is not None and entry.get("best_known"):
                verify_entry(folder, entry, inst)  # a downloaded folder's claims are re-checked (issue 28)
            add(inst, name, str(folder / entry["file"]), entry.get("best_known"))

    for i, src in enumerate(suite.instances):
        if src.set is not None:
            add_set(src.set, None, f"instances[{i}].set")
        elif src.dir is not None:
            d = _resolve_path(src.dir, base)
            if not d.is_dir():
                raise InputError(f"no such folder: {d}", file=file, field=f"instances[{i}].dir")
            if (d / "manifest.json").is_file():
                add_set(d.name, d.parent, f"instances[{i}].dir")
                continue
            paths = sorted(p for p in d.iterdir() if p.is_file() and (p.name.endswith(".json")
                                                                      or p.name.endswith(".json.gz")))
            n = 0
            for p in paths:
                data = io.read_json(p)
                if isinstance(data, dict) and "instance_hash" in data:
                    continue  # a solution file next to its instance
                add(io.instance_from_dict(data, file=str(p)), None, str(p))
                n += 1
            if n == 0:
                raise InputError(f"no instance files (.json, .json.gz) in {d}", file=file, field=f"instances[{i}].dir")
        else:
            for j, f in enumerate(src.files or []):
                p = _resolve_path(f, base)
                if not p.is_file():
                    raise InputError(f"no such file: {p}", file=file, field=f"instances[{i}].files[{j}]")
                add(io.load_instance(p), None, str(p))
    return list(out.values())


def _check_params(info, params: dict[str, Any], file: str, field: str) -> None:
    """The registry's parameter check (:func:`edgebench.registry.check_params`), naming the
    suite file and the entry's field."""
    from edgebench import registry

    registry.check_params(info, params, file=file, field=f"{field}.params")


def _named_solver(e: SolverEntry, by_name: dict[str, Any], file: str, field: str):
    """(SolverInfo or None when unknown, params, label) of a ``name`` entry: a registered
    solver, a ``MODULE:FUNCTION``, or — with ``command`` — an external program (the solver
    ``edgebench.external:solve_command``, labelled by ``name``)."""
    from edgebench import registry

    spec = e.name
    if e.command is not None:
        from edgebench.external import SOLVER as spec
    elif spec in by_name or not registry.is_function_spec(spec):
        info = by_name.get(spec)
        return info, dict(e.params), e.label or (default_label(info.name, e.params) if info else spec)
    try:
        info = registry.resolve(spec)
    except ValueError as exc:
        raise InputError(f"cannot use solver {spec!r}: {exc}", file=file, field=f"{field}.name") from None
    if e.command is not None:
        return info, {"command": e.command}, e.name
    return info, dict(e.params), e.label or default_label(info.name, e.params)


def plan(suite: Suite, *, file: str = CMDLINE, base_dir: str | Path | None = None,
         time_limit: float | None = None, seeds: list[int] | None = None,
         extra_plugins: list[str] | None = None, memory_limit_mb: int | None = None) -> Plan:
    """Resolve ``suite`` into runs. ``time_limit`` / ``seeds`` / ``memory_limit_mb`` override the
    suite's (the command line's ``--time-limit`` / ``--seeds`` / ``--memory-limit``; a memory
    limit of 0 is none). Raises InputError before anything runs."""
    from edgebench import registry

    base = Path(base_dir) if base_dir is not None else None
    plugin_paths = import_plugins([str(_resolve_path(p, base)) for p in suite.plugins], file=file)
    plugin_paths += import_plugins(list(extra_plugins or []), file=CMDLINE, field="--plugin")
    infos = registry.solvers()
    by_name = {s.name: s for s in infos}
    notes = [f"warning: solver module {m} failed to import ({e}); its solvers are missing from this sweep"
             for m, e in sorted(registry.LOAD_ERRORS.items())]

    instances = _load_instances(suite, file, base)
    families = sorted({r.family for r in instances}, key=FAMILIES.index)

    configs: list[tuple[int, Any, dict[str, Any], str, list[str], Any, list[int]]] = []
    for i, e in enumerate(suite.solvers):
        field = f"solvers[{i}]"
        fams = list(e.families) if e.families is not None else families
        seeds_ = list(seeds if seeds is not None else (e.seeds or suite.seeds))
        if e.name is not None:
            info, e_params, e_label = _named_solver(e, by_name, file, field)
            if info is None:
                hint = ""
                if registry.LOAD_ERRORS:
                    hint = f"; modules that failed to import: {', '.join(sorted(registry.LOAD_ERRORS))}"
                raise InputError(f"unknown solver {e.name!r} (known: {', '.join(sorted(by_name))}){hint}",
                                 file=file, field=f"{field}.name")
            bad = [f for f in (e.families or []) if f not in info.families]
            if bad:
                raise InputError(f"solver {e.name!r} does not support family {bad[0]!r} "
                                 f"(supports {', '.join(info.families)})", file=file, field=f"{field}.families")
            usable = [f for f in fams if f in info.families]
            if not usable:
                raise InputError(f"solver {e.name!r} does not support family {', '.join(fams) or '-'} "
                                 f"of the suite's instances (supports {', '.join(info.families)})",
                                 file=file, field=f"{field}.name")
            _check_params(info, e_params, file, field)
            configs.append((i, info, e_params, e_label, usable, e, seeds_))
        else:
            for j, name in enumerate(e.exclude):
                if name not in by_name:
                    raise InputError(f"unknown solver {name!r}", file=file, field=f"{field}.exclude[{j}]")
            chosen = [s for s in infos if s.kind == e.kind and s.name not in e.exclude
                      and any(f in s.families for f in fams)]
            if not chosen:
                notes.append(f"note: no registered {e.kind} solver supports {', '.join(fams)}: entry solvers[{i}] "
                             f"adds no runs")
            for info in chosen:
                _check_params(info, e.params, file, field)
                configs.append((i, info, dict(e.params), default_label(info.name, e.params),
                                [f for f in fams if f in info.families], e, seeds_))

    # one label per configuration
    labels: dict[str, tuple[str, str]] = {}
    for i, info, params, label, _, _, _ in configs:
        ident = (info.name, params_hash(params))
        if labels.setdefault(label, ident) != ident:
            raise InputError(f"label {label!r} names two different solver configurations", file=file,
                             field=f"solvers[{i}].label")

    runs: dict[str, RunSpec] = {}
    mem_mb = (suite.memory_limit_mb if memory_limit_mb is None else memory_limit_mb) or None
    for i, info, params, label, fams, e, seeds_ in configs:
        ph = params_hash(params)
        declined: list[str] = []
        for inst in instances:
            if inst.family not in fams:
                continue
            why = info.applies(inst.instance, params) if info.applies is not None else None
            if why:
                declined.append(why)
                continue
            if time_limit is not None:
                tl = float(time_limit)
            else:
                tl = suite.time_limit_for(info.kind, e).seconds(inst.size)
            for seed in seeds_:
                key = run_key(inst.hash, info.name, ph, seed, tl)
                if key in runs:
                    continue
                runs[key] = RunSpec(key=key, inst=inst, solver=info.name, label=label, kind=info.kind,
                                    params=params, params_hash=ph, seed=int(seed), time_limit=tl,
                                    kill_after=tl * 1.2 + suite.kill_grace, memory_limit_mb=mem_mb,
                                    proves=info.proves, startup_allowance=suite.startup_allowance)
        if declined:
            notes.append(f"note: {label} declines {len(declined)} instance(s), no run planned for them "
                         f"(first reason: {declined[0]})")
    return Plan(suite=suite, file=file, runs=list(runs.values()), instances=instances, plugins=plugin_paths,
                notes=notes)


def adhoc_suite(*, base: Suite | None, instances: list[str] | None, solvers: list[str] | None,
                name: str | None = None) -> dict[str, Any]:
    """The suite dict of ``edgebench run --instances ... --solvers ...``: each ``--instances``
    value is an embedded set name, a folder or an instance file; each solver is a name or
    ``kind:K``. Parts not given come from ``base`` (the default suite)."""
    from edgebench.instances import sets

    data: dict[str, Any] = base.model_dump(exclude_none=True) if base is not None else {}
    data.pop("workers", None)
    if base is not None:
        tl = base.time_limit
        data["time_limit"] = ({k: v.to_toml_value() for k, v in tl.items()} if isinstance(tl, dict)
                              else tl.to_toml_value())
        data["solvers"] = [_entry_dict(e) for e in base.solvers]
        data["instances"] = [src.model_dump(exclude_none=True) for src in base.instances]
    if name:
        data["name"] = name
    if instances:
        known = set(sets.list_sets())
        srcs = []
        for item in instances:
            p = Path(item)
            if item in known and not p.exists():
                srcs.append({"set": item})
            elif p.is_dir():
                srcs.append({"dir": str(p.resolve())})
            elif p.is_file():
                srcs.append({"files": [str(p.resolve())]})
            else:
                raise InputError(f"{item!r} is neither an instance set ({', '.join(sorted(known))}), a folder nor a file",
                                 file=CMDLINE, field="--instances")
        data["instances"] = srcs
    if solvers:
        entries = []
        for item in solvers:
            if item.startswith("kind:"):
                entries.append({"kind": item[5:]})
            else:
                entries.append({"name": item})
        data["solvers"] = entries
    return data


def _entry_dict(e: SolverEntry) -> dict[str, Any]:
    d = e.model_dump(exclude_none=True)
    if e.time_limit is not None:
        d["time_limit"] = e.time_limit.to_toml_value()
    if not d.get("exclude"):
        d.pop("exclude", None)
    if not d.get("params"):
        d.pop("params", None)
    return d
