"""What every family's referee returns: :class:`Evaluation` and :class:`Violation`, plus the
small helpers the three checkers share (tolerances, a capped violation collector, caches
keyed by instance identity).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

#: absolute and relative float tolerance of every check: ``value <= limit`` holds when
#: ``value <= limit + ATOL + RTOL * |limit|``
ATOL = 1e-6
RTOL = 1e-6
#: at most this many violations are listed (the total is in ``details["violations_total"]``)
MAX_VIOLATIONS = 1000

PRIMARY = {"placement": "total_completion_time", "mapping": "composite", "offloading": "mean_makespan"}
SENSE = {"placement": "min", "mapping": "max", "offloading": "min"}


def tol(limit: float) -> float:
    """Slack allowed above ``limit`` (absolute + relative)."""
    return ATOL + RTOL * abs(limit)


def exceeds(value: float, limit: float) -> bool:
    """True when ``value`` is above ``limit`` by more than the tolerance."""
    return value > limit + ATOL + RTOL * abs(limit)


def fmt(x: float) -> str:
    """Short, stable rendering of a number in element names and messages."""
    if math.isfinite(x) and x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.6g}"


@dataclass(frozen=True)
class Violation:
    """One broken constraint: its snake_case id, the element it concerns (``"cluster 1 step
    7"``, ``"task 3"``, ``"link 2 segment [0, 4)"``), how much it is over / under (>= 0) and a
    human-readable message."""

    constraint: str
    element: str
    amount: float
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"constraint": self.constraint, "element": self.element, "amount": self.amount,
                "message": self.message}


@dataclass(frozen=True)
class Evaluation:
    """The referee's verdict on one solution.

    ``objectives`` holds only finite values that could be computed (an infeasible solution may
    lack some, e.g. placement completion times when a task never finishes); ``primary_value``
    is then the worst value for the sense (+inf for min, -inf for max).  ``details`` holds the
    per-element values (completion per task, makespan per workflow, ...)."""

    feasible: bool
    violations: tuple[Violation, ...]
    objectives: dict[str, float]
    primary: str
    sense: Literal["min", "max"]
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def primary_value(self) -> float:
        v = self.objectives.get(self.primary)
        if v is None:
            return math.inf if self.sense == "min" else -math.inf
        return v

    def constraints(self) -> set[str]:
        """The ids of the constraints that are violated (a convenience for tests and reports)."""
        return {v.constraint for v in self.violations}

    def as_dict(self) -> dict[str, Any]:
        return {
            "feasible": self.feasible,
            "violations": [v.as_dict() for v in self.violations],
            "objectives": dict(self.objectives),
            "primary": self.primary,
            "sense": self.sense,
        }


class Collector:
    """Accumulates violations, keeping the first :data:`MAX_VIOLATIONS` and counting all."""

    __slots__ = ("items", "total")

    def __init__(self) -> None:
        self.items: list[Violation] = []
        self.total = 0

    def add(self, constraint: str, element: str, amount: float, message: str) -> None:
        self.total += 1
        if len(self.items) < MAX_VIOLATIONS:
            self.items.append(Violation(constraint, element, max(float(amount), 0.0), message))

    def room(self) -> int:
        """How many more violations will be listed (callers skip formatting beyond it)."""
        return MAX_VIOLATIONS - len(self.items)

    def skip(self, n: int) -> None:
        """Count ``n`` violations that are not listed (the list is full)."""
        self.total += n

    def __bool__(self) -> bool:
        return self.total > 0

    def constraints(self) -> set[str]:
        return {v.constraint for v in self.items}


def finish(family: str, col: Collector, objectives: dict[str, float], details: dict[str, Any]) -> Evaluation:
    """Build the Evaluation: feasible iff no violation; non-finite objectives dropped."""
    objs = {k: float(v) for k, v in objectives.items() if v is not None and math.isfinite(v)}
    details = dict(details)
    details["violations_total"] = col.total
    details["violations_truncated"] = col.total > len(col.items)
    return Evaluation(feasible=col.total == 0, violations=tuple(col.items), objectives=objs,
                      primary=PRIMARY[family], sense=SENSE[family], details=details)  # type: ignore[arg-type]


def no_solution(family: str, status: str) -> Evaluation:
    return Evaluation(
        feasible=False,
        violations=(Violation("no_solution", "solution", 1.0,
                              f"the solution (status {status!r}) carries no decisions"),),
        objectives={}, primary=PRIMARY[family], sense=SENSE[family],  # type: ignore[arg-type]
        details={"violations_total": 1, "violations_truncated": False},
    )


class IdentityCache:
    """A small cache keyed by object identity (the cached object is kept alive and checked
    with ``is``, so a recycled id never returns a stale entry)."""

    def __init__(self, build: Callable[[Any], Any], size: int = 32) -> None:
        self._build = build
        self._size = size
        self._data: dict[int, tuple[Any, Any]] = {}

    def __call__(self, obj: Any) -> Any:
        hit = self._data.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = self._build(obj)
        if len(self._data) >= self._size:
            self._data.pop(next(iter(self._data)))
        self._data[id(obj)] = (obj, value)
        return value
