"""Seeded instance generators with the sources' presets.

``generate(family, preset, *, seed=0, **overrides)`` builds one instance; ``presets()``
lists what exists. Every generator

* resolves its parameters: the preset's defaults, then the caller's overrides (an unknown
  key, a wrong type or an out-of-range value raises :class:`edgebench.errors.InputError`
  naming the key);
* draws every random quantity from ONE ``numpy.random.default_rng(seed)``;
* builds a plain dict and returns ``io.instance_from_dict(d)`` (the one validation path),
  with ``meta = {"generator", "preset", "params" (every resolved parameter), "seed",
  "source", "reference"}``, ``id = f"{family}-{preset}-s{seed}"`` (plus ``-<8 hex digits of the overrides>`` when
  parameters are overridden, so that ids stay unique across instance sets) and generated floats
  rounded to 4 decimals, so that the same seed gives a byte-identical file.

The presets, their defaults and every choice the sources leave open are documented in
``docs/generators.md``.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import numbers
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from edgebench.errors import InputError

__all__ = ["generate", "presets", "needs_traces", "Param", "resolve_params", "make_meta", "r4", "PRESET_TABLE", "MAX_CELLS",
           "check_cells"]

# --------------------------------------------------------------------------------------
# Parameter machinery shared by the generator modules
# --------------------------------------------------------------------------------------


def r4(x: float) -> float:
    """Round a generated float to 4 decimals (readable, stable files); -0.0 becomes 0.0."""
    v = round(float(x), 4)
    return v + 0.0


@dataclass(frozen=True)
class Param:
    """One generator parameter: its default and a checker that returns the normalised value
    (plain JSON-able Python: int, float, bool, str, lists, dicts) or raises ValueError with
    the reason (turned into an InputError naming the key)."""

    default: Any
    check: Callable[[Any], Any]
    help: str = ""


def resolve_params(preset: str, spec: Mapping[str, Param], overrides: Mapping[str, Any],
                   aliases: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Preset defaults + overrides, each checked; unknown keys raise InputError."""
    aliases = dict(aliases or {})
    given: dict[str, Any] = {}
    for key, value in overrides.items():
        name = aliases.get(key, key)
        if name not in spec:
            known = ", ".join(sorted(spec)) or "none"
            raise InputError(f"unknown parameter {key!r} for preset {preset!r} (known: {known})", field=key)
        if name in given:
            raise InputError(f"parameter {name!r} given twice (as {key!r} and an alias)", field=key)
        given[name] = (key, value)
    out: dict[str, Any] = {}
    for name, p in spec.items():
        if name in given:
            key, value = given[name]
        else:
            key, value = name, p.default
        if value is None and p.default is None:
            out[name] = None
            continue
        try:
            out[name] = p.check(value)
        except InputError:
            raise
        except (ValueError, TypeError) as exc:
            raise InputError(f"bad value {value!r} for parameter {key!r} of preset {preset!r}: {exc}",
                             field=key) from None
    return out


def check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or int(seed) < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}", field="seed")
    return int(seed)


# --- checkers (each returns a checker function) ----------------------------------------


#: upper bound of a generator parameter that names none (docs/generators.md, "Limits")
MAX_INT_PARAM = 1_000_000
MAX_FLOAT_PARAM = 1e12
#: joint limit (issue 28): the numbers a generated instance may hold, bounded from its
#: parameters before the draws that grow with them (docs/generators.md, "Limits": every
#: combination within it is generated in under 1 GiB peak RSS, and its file stays under
#: the 64 MiB read limit)
MAX_CELLS = 500_000


def check_cells(cells: int, how: str) -> None:
    """InputError (field ``--set``) when an upper bound on the numbers of the instance the
    parameters make exceeds :data:`MAX_CELLS`; ``how`` names the terms of the bound."""
    if cells > MAX_CELLS:
        raise InputError(f"the parameters make an instance of up to {cells:,} numbers ({how}), beyond the joint "
                         f"limit of {MAX_CELLS:,} (docs/generators.md, Limits)", field="--set")


def as_int(lo: int | None = None, hi: int | None = MAX_INT_PARAM) -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError("expected an integer")
        v = int(v)
        if lo is not None and v < lo:
            raise ValueError(f"must be >= {lo}")
        if hi is not None and v > hi:
            raise ValueError(f"must be <= {hi}")
        return v

    return check


def as_float(lo: float | None = None, hi: float | None = MAX_FLOAT_PARAM, *, lo_open: bool = False,
             hi_open: bool = False) -> Callable[[Any], float]:
    def check(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError("expected a number")
        v = float(v)
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError("must be finite")
        if lo is not None and (v < lo or (lo_open and v == lo)):
            raise ValueError(f"must be {'>' if lo_open else '>='} {lo}")
        if hi is not None and (v > hi or (hi_open and v == hi)):
            raise ValueError(f"must be {'<' if hi_open else '<='} {hi}")
        return v

    return check


def as_bool() -> Callable[[Any], bool]:
    def check(v: Any) -> bool:
        if not isinstance(v, bool):
            raise TypeError("expected true or false")
        return v

    return check


def as_choice(*choices: str) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        if not isinstance(v, str) or v not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return v

    return check


def as_range(lo: float | None = None, hi: float | None = None, *, integer: bool = False,
             hi_open: bool = False) -> Callable[[Any], list]:
    """A [low, high] pair with low <= high, both within [lo, hi] (hi None: the default bound)."""
    elem = as_int(-MAX_INT_PARAM, MAX_INT_PARAM) if integer else as_float(-MAX_FLOAT_PARAM, MAX_FLOAT_PARAM)

    def check(v: Any) -> list:
        if not isinstance(v, (list, tuple)) or len(v) != 2:
            raise TypeError("expected a [low, high] pair")
        a, b = elem(v[0]), elem(v[1])
        if a > b:
            raise ValueError("low is above high")
        if lo is not None and a < lo:
            raise ValueError(f"low must be >= {lo}")
        if hi is not None and (b > hi or (hi_open and b == hi)):
            raise ValueError(f"high must be {'<' if hi_open else '<='} {hi}")
        return [a, b]

    return check


# --------------------------------------------------------------------------------------
# Meta
# --------------------------------------------------------------------------------------


def make_meta(generator: str, preset: str, params: Mapping[str, Any], seed: int, source: str,
              reference: str, **extra: Any) -> dict[str, Any]:
    meta = {"generator": generator, "preset": preset, "params": dict(params), "seed": seed,
            "source": source, "reference": reference}
    meta.update(extra)
    return meta


# --------------------------------------------------------------------------------------
# The preset table
# --------------------------------------------------------------------------------------

_PKG = "edgebench.instances.generators"


class _Lazy:
    """A callable that imports ``module:function`` on first use and passes ``preset``."""

    def __init__(self, target: str, preset: str | None):
        self.target = target
        self.preset = preset

    def __call__(self, *, seed: int = 0, **overrides: Any):
        module, _, fn = self.target.partition(":")
        try:
            func = getattr(importlib.import_module(module), fn)
        except (ImportError, AttributeError) as exc:
            raise InputError(f"the generator {self.target} is not available: {exc}", field="preset") from None
        if self.preset is None:
            return func(seed=seed, **overrides)
        return func(self.preset, seed=seed, **overrides)

    def __repr__(self) -> str:
        return f"<generator {self.target}" + (f" preset={self.preset!r}>" if self.preset else ">")


def _entry(target: str, preset: str | None, description: str) -> tuple[Callable[..., Any], str]:
    return _Lazy(target, preset), description


PRESET_TABLE: dict[tuple[str, str], tuple[Callable[..., Any], str]] = {
    ("placement", "synthetic-3"): _entry(
        f"{_PKG}.placement:generate_placement", "synthetic-3",
        "TapFinger synthetic workload: 3 clusters of 16 CPU / 16 GPU, Poisson arrivals 2 per step, 192 tasks "
        "(image classification / language modelling, 1/2 each)"),
    ("placement", "synthetic-6"): _entry(
        f"{_PKG}.placement:generate_placement", "synthetic-6",
        "TapFinger synthetic workload: 6 clusters of 16 CPU / 16 GPU, Poisson arrivals 4 per step, 384 tasks"),
    ("placement", "hetero-6"): _entry(
        f"{_PKG}.placement:generate_placement", "hetero-6",
        "TapFinger heterogeneous setting: 6 clusters (4,4) (8,8) (12,12) (16,16) (24,24) (32,32), "
        "Poisson arrivals 6 per step, 384 tasks"),
    ("placement", "sjf-ablation"): _entry(
        f"{_PKG}.placement:generate_placement", "sjf-ablation",
        "TapFinger task-selection ablation: 3 clusters 16/16, rate 2, 192 tasks of two types (1 step, 10 steps), "
        "both minimum 3 CPU + 3 GPU, no gain from more resources (shortest-job-first is optimal)"),
    ("placement", "testbed"): _entry(
        "edgebench.instances.traces.testbed:generate_testbed", None,
        "TapFinger test-bed: measured completion-time profiles (needs traces/tapfinger_testbed_profiles.csv)"),
    ("placement", "alibaba"): _entry(
        "edgebench.instances.traces.alibaba_preset:generate_alibaba", None,
        "Alibaba openb windows: num_tasks consecutive pods (default 192) on 3 sampled GPU nodes, 300 s steps, "
        "never a window of placement-alibaba-v2 (needs the openb pod and node lists in traces/)"),
    ("mapping", "thesis"): _entry(
        f"{_PKG}.mapping:generate_mapping", "thesis",
        "CES thesis simulation: 10 physical nodes (links p=0.3, made connected), one job of 3..8 task nodes; "
        "topology random|ring|star|tree|gossip"),
    ("mapping", "thesis-queue"): _entry(
        f"{_PKG}.mapping:generate_mapping", "thesis-queue",
        "CES multi-job stream: the thesis network, 20 jobs arriving as a Poisson process (rate 0.5), "
        "exponential durations (mean 10), priorities 0..2, topologies drawn per job"),
    ("offloading", "heft-random"): _entry(
        f"{_PKG}.offloading:generate_offloading", "heft-random",
        "Topcuoglu et al. 2002 (HEFT) random DAG: v=20 tasks, alpha=1, out_degree=3, ccr=1, beta=0.5, "
        "w_dag=20, 3 servers; classic exec_times matrix and edge costs"),
    ("offloading", "daggen"): _entry(
        f"{_PKG}.offloading:generate_offloading", "daggen",
        "daggen-style DAG (n=20, fat=0.6, density=0.7, regular=0.5, jump=1, ccr=0.4, data 5..50 MB) on "
        "4 edge servers with cached images plus a cloud"),
    ("offloading", "edge-poisson"): _entry(
        f"{_PKG}.offloading:generate_offloading", "edge-poisson",
        "5 small daggen-style workflows (10 tasks) arriving as a Poisson process (rate 0.2 /s) at random "
        "edge servers; same server model as daggen"),
    ("offloading", "patent-example"): _entry(
        f"{_PKG}.patent:generate_patent_example", "patent-example",
        "The patent's worked example: 3 edge servers, 6 tasks, published placement completing at 2.8 s "
        "(chosen times / data sizes make it optimal)"),
}

FAMILIES = ("placement", "mapping", "offloading")


def presets(family: str | None = None) -> dict[tuple[str, str], str]:
    """(family, preset) -> one-line description, for one family or all."""
    if family is not None and family not in FAMILIES:
        raise InputError(f"unknown family {family!r} (expected {', '.join(FAMILIES)})", field="family")
    return {key: desc for key, (_, desc) in PRESET_TABLE.items() if family is None or key[0] == family}


def needs_traces(family: str, preset: str) -> bool:
    """Whether a preset reads the shared traces folder (its generator lives in
    ``edgebench.instances.traces``), so that callers can skip it cleanly where the traces are absent."""
    entry = PRESET_TABLE.get((family, preset))
    return entry is not None and entry[0].target.startswith("edgebench.instances.traces.")


def generate(family: str, preset: str, *, seed: int = 0, **overrides: Any):
    """Generate one instance of ``family`` from ``preset`` with ``seed`` and parameter overrides."""
    if family not in FAMILIES:
        raise InputError(f"unknown family {family!r} (expected {', '.join(FAMILIES)})", field="family")
    entry = PRESET_TABLE.get((family, preset))
    if entry is None:
        known = ", ".join(p for f, p in PRESET_TABLE if f == family)
        raise InputError(f"unknown preset {preset!r} for family {family!r} (known: {known})", field="preset")
    seed = check_seed(seed)
    fn, _ = entry
    try:
        inst = fn(seed=seed, **overrides)
    except InputError as err:
        if err.file is None and err.field and err.field.split(".")[0].split("[")[0] in FAMILIES:
            # the parameters are each within bounds, the instance they make is not (e.g. arrivals
            # beyond MAX_ARRIVAL_STEP from a tiny rate): name the instance field in the reason
            raise InputError(f"the parameters make an instance outside the format's limits: {err.field}: "
                             f"{err.reason}") from None
        raise
    if overrides:
        # ids must be unique across sets: instances made with overrides get a short digest of them
        from edgebench.instances.io import instance_from_dict

        digest = hashlib.sha256(json.dumps(overrides, sort_keys=True, default=str).encode()).hexdigest()[:8]
        data = inst.model_dump(mode="json")
        data["id"] = f"{inst.id}-{digest}"
        inst = instance_from_dict(data)
    return inst
