"""The metaheuristics' shared framework: random-key problems, budgets, anytime traces.

Every family is exposed to the metaheuristics (``ga``, ``pso``) as a :class:`Problem` over
*random keys*: a genome is a float vector in [0, 1)^dim that the family's decoder turns into
a feasible decisions model (PlacementDecisions / MappingDecisions / OffloadingDecisions), so
GA and PSO share the encodings and the decoders, and every operator works on plain float
vectors.  ``Problem.evaluate`` scores a whole population [P, dim] -> [P] with the referee's
primary objective (vectorised where the family allows it; the objective code is the
referee's, never a copy).

The rest of this module is the machinery both algorithms share:

* :class:`Budget` (time and evaluation limits) and :class:`Evaluator`, which wraps
  ``Problem.evaluate``, counts evaluations, never exceeds the evaluation budget, keeps the
  best genome and records the :class:`AnytimeTrace`;
* :func:`make_problem` (dispatch by family, imported lazily);
* :func:`warm_start_keys` (run a registered heuristic and encode its decisions);
* :func:`finish` (decode the best genome, re-score it with the referee, build the Result);
* small validation helpers for the parameter dataclasses (bad values -> InputError naming
  the parameter).
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import time
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from edgebench.errors import InputError
from edgebench.instances.model import Instance

#: the largest key strictly below 1 (keys live in [0, 1))
KEY_MAX = float(np.nextafter(1.0, 0.0))

PROBLEM_FACTORIES = {
    "placement": "edgebench.solvers.meta_placement:PlacementProblem",
    "mapping": "edgebench.solvers.meta_mapping:MappingProblem",
    "offloading": "edgebench.solvers.meta_offloading:OffloadingProblem",
}

#: names the warm_start parameter accepts in addition to a registered solver name
NO_WARM_START = (None, "", "none")

#: the evaluation budget of a run with neither a time limit nor ``max_evaluations``
DEFAULT_EVALUATIONS = 20_000


# --------------------------------------------------------------------------------------
# The problem protocol
# --------------------------------------------------------------------------------------


@runtime_checkable
class Problem(Protocol):
    """A family's random-key view of one instance (constructed as ``Cls(instance)``)."""

    family: str
    #: the referee's primary sense: "min" (placement, offloading) or "max" (mapping)
    sense: Literal["min", "max"]
    #: genome length
    dim: int

    def decode(self, keys: np.ndarray) -> Any:
        """One genome [dim] -> the family's decisions model (feasible by construction
        wherever the instance allows it)."""
        ...

    def evaluate(self, pop: np.ndarray) -> np.ndarray:
        """Population [P, dim] -> [P] referee primary objective of the decoded genomes
        (a genome whose decoding cannot be made feasible gets a value worse than any
        feasible one)."""
        ...

    def encode(self, decisions: Any) -> np.ndarray | None:
        """A genome that decodes to (nearly) ``decisions``; None when unsupported."""
        ...


def make_problem(instance: Instance) -> Problem:
    """The :class:`Problem` of ``instance``'s family (``PROBLEM_FACTORIES``, imported lazily)."""
    spec = PROBLEM_FACTORIES.get(instance.family)
    if spec is None:  # pragma: no cover - the instance model admits only the three families
        raise InputError(f"no metaheuristic problem for family {instance.family!r}", field="family")
    mod_name, cls_name = spec.split(":")
    cls = getattr(importlib.import_module(mod_name), cls_name)
    return cls(instance)


def clip_keys(keys: np.ndarray) -> np.ndarray:
    """Keys clipped into [0, 1) (operators may step outside; NaN -> 0)."""
    out = np.asarray(keys, dtype=float)
    if not np.isfinite(out).all():
        out = np.nan_to_num(out, nan=0.0, posinf=KEY_MAX, neginf=0.0)
    return np.minimum(np.maximum(out, 0.0), KEY_MAX)


def key_to_index(keys: np.ndarray, n: np.ndarray | int) -> np.ndarray:
    """Map keys in [0, 1) to integers 0..n-1 (floor(key * n)), elementwise; ``n`` >= 1."""
    n_arr = np.asarray(n)
    idx = np.floor(np.asarray(keys, dtype=float) * n_arr).astype(np.int64)
    return np.clip(idx, 0, np.maximum(n_arr - 1, 0))


def index_to_key(idx: np.ndarray | int, n: np.ndarray | int) -> np.ndarray:
    """The centre key of choice ``idx`` among ``n`` (the inverse of :func:`key_to_index`)."""
    return (np.asarray(idx, dtype=float) + 0.5) / np.asarray(n, dtype=float)


def to_cost(values: np.ndarray, sense: str) -> np.ndarray:
    """Values of the primary objective -> costs to minimise (NaN -> +inf)."""
    v = np.asarray(values, dtype=float)
    c = v if sense == "min" else -v
    return np.where(np.isnan(c), np.inf, c)


def better(a: float, b: float, sense: str) -> bool:
    """True when value ``a`` is strictly better than ``b`` for ``sense``."""
    return a < b if sense == "min" else a > b


def worst_value(sense: str) -> float:
    return math.inf if sense == "min" else -math.inf


# --------------------------------------------------------------------------------------
# Budget, trace, evaluator
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Budget:
    """Stop when ``time_limit`` seconds have passed or ``max_evaluations`` genomes have been
    evaluated, whichever comes first (None = no such limit; at least one must be set)."""

    time_limit: float | None = None
    max_evaluations: int | None = None

    def __post_init__(self) -> None:
        if self.time_limit is not None:
            if isinstance(self.time_limit, bool) or not isinstance(self.time_limit, (int, float)) \
                    or not math.isfinite(self.time_limit) or self.time_limit <= 0:
                raise InputError(f"must be a positive number of seconds, got {self.time_limit!r}",
                                 field="time_limit")
        if self.max_evaluations is not None:
            if isinstance(self.max_evaluations, bool) or not isinstance(self.max_evaluations, (int, np.integer)) \
                    or self.max_evaluations < 1:
                raise InputError(f"must be an integer >= 1, got {self.max_evaluations!r}",
                                 field="params.max_evaluations")
        if self.time_limit is None and self.max_evaluations is None:
            raise InputError("a metaheuristic needs a time limit or an evaluation budget",
                             field="params.max_evaluations")


def make_budget(time_limit: float | None, max_evaluations: int | None) -> Budget:
    """The budget of a solver call: ``max_evaluations`` when given; else
    :data:`DEFAULT_EVALUATIONS` without a time limit and no evaluation limit with one."""
    if max_evaluations is None and time_limit is None:
        max_evaluations = DEFAULT_EVALUATIONS
    return Budget(time_limit=None if time_limit is None else time_limit, max_evaluations=max_evaluations)


class AnytimeTrace:
    """Best objective against wall time and evaluations: one point ``[seconds, evaluations,
    best]`` each time the best value improves (seconds since the search started)."""

    __slots__ = ("points",)

    def __init__(self) -> None:
        self.points: list[tuple[float, int, float]] = []

    def record(self, seconds: float, evaluations: int, best: float) -> None:
        self.points.append((float(seconds), int(evaluations), float(best)))

    def as_list(self) -> list[list[float]]:
        return [[s, e, b] for s, e, b in self.points]

    def best_at(self, seconds: float | None = None, evaluations: int | None = None) -> float | None:
        """The best value reached by ``seconds`` / ``evaluations`` (None before the first point)."""
        out = None
        for s, e, b in self.points:
            if (seconds is not None and s > seconds) or (evaluations is not None and e > evaluations):
                break
            out = b
        return out

    def __len__(self) -> int:
        return len(self.points)


class Evaluator:
    """Wraps ``problem.evaluate``: counts evaluations, keeps the best genome, records the
    anytime trace and enforces the budget (a batch is cut to the evaluations left; the rows
    beyond get the worst value and are not counted)."""

    def __init__(self, problem: Problem, budget: Budget, started: float | None = None) -> None:
        self.problem = problem
        self.sense = problem.sense
        self.budget = budget
        self.started = time.perf_counter() if started is None else started
        self.deadline = None if budget.time_limit is None else self.started + budget.time_limit
        self.evaluations = 0
        self.best_value = worst_value(self.sense)
        self.best_keys: np.ndarray | None = None
        self.trace = AnytimeTrace()

    def remaining(self) -> int | None:
        if self.budget.max_evaluations is None:
            return None
        return max(self.budget.max_evaluations - self.evaluations, 0)

    def exhausted(self) -> bool:
        left = self.remaining()
        if left is not None and left <= 0:
            return True
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    #: with a time limit, a batch is evaluated in chunks of about this many seconds, the clock
    #: read between chunks (a population of slow decodes never runs far past the limit)
    CHUNK_SECONDS = 0.05

    def __call__(self, pop: np.ndarray) -> np.ndarray:
        """Values [P] of the genomes ``pop`` [P, dim] (already clipped into [0, 1)). With a time
        limit the batch is evaluated in chunks and stops at the deadline: the genomes not
        evaluated get the worst value and are not counted (at least one genome is evaluated
        while there is no incumbent, so a run always has a schedule to return)."""
        P = pop.shape[0]
        left = self.remaining()
        n = P if left is None else min(P, left)
        values = np.full(P, worst_value(self.sense))
        done, chunk = 0, (n if self.deadline is None else 1)
        while done < n:
            if (self.deadline is not None and time.perf_counter() >= self.deadline
                    and (done or self.best_keys is not None)):
                break
            t0 = time.perf_counter()
            k = min(chunk, n - done)
            v = np.asarray(self.problem.evaluate(pop[done:done + k]), dtype=float)
            v = np.where(np.isnan(v), worst_value(self.sense), v)
            values[done:done + k] = v
            self.evaluations += k
            i = int(np.argmin(to_cost(v, self.sense)))
            if self.best_keys is None or better(float(v[i]), self.best_value, self.sense):
                self.best_value = float(v[i])
                self.best_keys = pop[done + i].copy()
                if math.isfinite(self.best_value):
                    self.trace.record(self.elapsed(), self.evaluations, self.best_value)
            done += k
            if self.deadline is not None:  # the next chunk: about CHUNK_SECONDS of decoding
                per = max(time.perf_counter() - t0, 1e-6) / k
                chunk = max(1, int(self.CHUNK_SECONDS / per))
        return values


# --------------------------------------------------------------------------------------
# Parameter validation
# --------------------------------------------------------------------------------------


def check_int(name: str, value: Any, lo: int | None = None, hi: int | None = None,
              optional: bool = False) -> None:
    if optional and value is None:
        return
    bad = isinstance(value, bool) or not isinstance(value, (int, np.integer))
    if not bad and ((lo is not None and value < lo) or (hi is not None and value > hi)):
        bad = True
    if bad:
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise InputError(f"must be an integer {rng}{' or null' if optional else ''}, got {value!r}",
                         field=f"params.{name}")


def check_float(name: str, value: Any, lo: float, hi: float, *, lo_open: bool = False,
                hi_open: bool = False, optional: bool = False) -> None:
    if optional and value is None:
        return
    ok = not isinstance(value, bool) and isinstance(value, (int, float, np.floating, np.integer)) \
        and math.isfinite(float(value))
    if ok:
        v = float(value)
        ok = (v > lo if lo_open else v >= lo) and (v < hi if hi_open else v <= hi)
    if not ok:
        lb = "(" if lo_open else "["
        rb = ")" if hi_open else "]"
        raise InputError(f"must be a number in {lb}{lo:g}, {hi:g}{rb}{' or null' if optional else ''}, "
                         f"got {value!r}", field=f"params.{name}")


def check_choice(name: str, value: Any, choices: tuple) -> None:
    if value not in choices:
        raise InputError(f"must be one of {', '.join(map(repr, choices))}, got {value!r}", field=f"params.{name}")


def check_warm_start(value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise InputError(f"must be the name of a registered heuristic solver or null, got {value!r}",
                         field="params.warm_start")


def params_from_dict(cls: type, params: dict[str, Any], solver: str):
    """Build the validated parameter dataclass ``cls`` from the solver's ``**params``
    (unknown names -> InputError listing the known ones; values checked by ``cls``)."""
    known = [f.name for f in dataclasses.fields(cls)]
    for key in params:
        if key not in known:
            raise InputError(f"unknown parameter of solver {solver!r} (known: {', '.join(known)})",
                             field=f"params.{key}")
    return cls(**params)


def param_docs(cls: type, docs: dict[str, str]) -> dict[str, str]:
    """The registry's one-line parameter docs, with each field's default appended."""
    out = {}
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else None
        out[f.name] = f"{docs.get(f.name, '')}; default {default!r}".lstrip("; ")
    return out


def check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"the seed must be a non-negative integer, got {seed!r}", field="seed")
    return int(seed)


# --------------------------------------------------------------------------------------
# Warm start and the final result
# --------------------------------------------------------------------------------------


def warm_start_keys(instance: Instance, problem: Problem, solver: str | None, *, seed: int,
                    time_limit: float | None) -> tuple[np.ndarray | None, dict[str, Any]]:
    """Run the registered solver ``solver`` (a heuristic) on ``instance`` and encode its
    decisions into a genome. Returns (genome or None, stats for the record)."""
    if solver in NO_WARM_START:
        return None, {}
    from edgebench import registry

    if not isinstance(solver, str):
        raise InputError(f"must be the name of a registered solver, got {solver!r}", field="params.warm_start")
    try:
        info = registry.get(solver)
    except KeyError as exc:
        raise InputError(str(exc.args[0]), field="params.warm_start") from None
    if instance.family not in info.families:
        raise InputError(f"solver {solver!r} does not support family {instance.family!r}",
                         field="params.warm_start")
    if info.kind in ("metaheuristic",):
        raise InputError(f"warm start needs a non-metaheuristic solver, {solver!r} is a {info.kind}",
                         field="params.warm_start")
    res = info.fn(instance, time_limit=time_limit, seed=seed)
    stats: dict[str, Any] = {"warm_start": solver, "warm_start_status": res.status}
    decisions = res.solution.decisions
    if decisions is None or res.status not in ("optimal", "feasible"):
        return None, stats
    keys = problem.encode(decisions)
    if keys is None:
        stats["warm_start_encoded"] = False
        return None, stats
    keys = clip_keys(np.asarray(keys, dtype=float).reshape(problem.dim))
    stats["warm_start_encoded"] = True
    return keys, stats


def finish(instance: Instance, problem: Problem, solver: str, ev: Evaluator, *, seed: int,
           params: dict[str, Any], started: float, stats: dict[str, Any]):
    """Decode the best genome, re-score it with the referee and build the Result: status
    "feasible" with the referee's primary value as objective, or "infeasible" (no
    decisions) when even the best genome decodes to an infeasible solution."""
    from edgebench.referee import evaluate_decisions
    from edgebench.registry import make_result

    stats = dict(stats)
    stats["trace"] = ev.trace.as_list()
    stats["evaluations"] = ev.evaluations
    stats["search_value"] = None if not math.isfinite(ev.best_value) else ev.best_value
    if ev.best_keys is None:
        stats["reason"] = "no genome was evaluated within the budget"
        return make_result(instance, solver, status="timeout", seed=seed, params=params, started=started,
                           stats=stats)
    decisions = problem.decode(ev.best_keys)
    verdict = evaluate_decisions(instance, decisions)
    if not verdict.feasible:
        stats["reason"] = "the best genome decodes to an infeasible solution: " + "; ".join(
            v.message for v in verdict.violations[:3])
        return make_result(instance, solver, status="infeasible", seed=seed, params=params, started=started,
                           stats=stats)
    return make_result(instance, solver, status="feasible", decisions=decisions, seed=seed, params=params,
                       objective=verdict.primary_value, started=started, stats=stats)


__all__ = [
    "AnytimeTrace", "Budget", "DEFAULT_EVALUATIONS", "Evaluator", "InputError", "KEY_MAX", "check_warm_start",
    "make_budget", "PROBLEM_FACTORIES", "Problem", "better", "check_choice",
    "check_float", "check_int", "check_seed", "clip_keys", "finish", "index_to_key", "key_to_index",
    "make_problem", "param_docs", "params_from_dict", "to_cost", "warm_start_keys", "worst_value",
]
