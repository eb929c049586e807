"""One deadline object for every phase of the exact models, bounds and searches of every family
(issues 43 item 4, 44 case 2: ``--time-limit`` must hold in model building, each LP/MIP solve,
the pricing loops and the LNS iterations, not only between them).  Used by the placement
sub-package (``formulations/placement/deadline.py`` re-exports it) and the offloading models
(``offloading_cpsat``, ``offloading_milp``).

A :class:`Deadline` is a point on ``time.perf_counter()``'s clock (or none: unlimited).  Phases
ask :meth:`Deadline.remaining` for the limit they give a backend (HiGHS, CP-SAT), and call
:meth:`Deadline.check` between units of work (a task priced, a column-generation round, a model
row block); ``check`` raises :class:`Expired` once the deadline has passed.

The rule that keeps certified numbers unchanged (docs/formulations/placement.md, "Time limits";
docs/formulations/offloading.md, §6):
a deadline only ever *stops* work.  A bound interrupted by :class:`Expired` is not reported (the
caller reports the bound it had before, or none); a computation that completes returns exactly
what it returns without a deadline.  Anytime solvers catch :class:`Expired` at their top level and
return their incumbent with status ``timeout``.

Functions written before this module take ``deadline`` as a ``time.perf_counter()`` value;
:meth:`Deadline.of` accepts that, None or a Deadline, so both spellings work.
"""

from __future__ import annotations

import time


class Expired(Exception):
    """The deadline passed during ``what`` (the phase that was stopped)."""

    def __init__(self, what: str = "work"):
        super().__init__(f"out of time while {what}")
        self.what = what


class Deadline:
    """A deadline on ``time.perf_counter()`` (``at``; None: no limit)."""

    __slots__ = ("at",)

    def __init__(self, at: float | None = None):
        self.at = None if at is None else float(at)

    @classmethod
    def after(cls, seconds: float | None, start: float | None = None) -> "Deadline":
        """``seconds`` from ``start`` (default: now); None: no limit."""
        if seconds is None:
            return cls(None)
        return cls((time.perf_counter() if start is None else start) + float(seconds))

    @classmethod
    def of(cls, value: "Deadline | float | None") -> "Deadline":
        """A Deadline from a Deadline, a ``time.perf_counter()`` value or None."""
        return value if isinstance(value, Deadline) else cls(value)

    def remaining(self) -> float | None:
        """Seconds left (>= 0), None without a limit."""
        return None if self.at is None else max(0.0, self.at - time.perf_counter())

    def expired(self) -> bool:
        return self.at is not None and time.perf_counter() > self.at

    def check(self, what: str = "work") -> None:
        """Raise :class:`Expired` once the deadline has passed."""
        if self.at is not None and time.perf_counter() > self.at:
            raise Expired(what)

    def share(self, fraction: float) -> "Deadline":
        """A deadline ``fraction`` of the time left from now (the same without a limit)."""
        if self.at is None:
            return Deadline(None)
        now = time.perf_counter()
        return Deadline(now + max(0.0, self.at - now) * float(fraction))

    def earlier(self, other: "Deadline | float | None") -> "Deadline":
        """The earlier of this deadline and ``other``."""
        o = Deadline.of(other)
        if o.at is None:
            return self
        if self.at is None:
            return o
        return Deadline(min(self.at, o.at))

    def limit(self, floor: float = 0.0) -> float | None:
        """The time limit to give a backend's own solve: the seconds left, at least ``floor``
        (some backends refuse 0); None without a limit."""
        rem = self.remaining()
        return None if rem is None else max(float(floor), rem)

    def __repr__(self) -> str:
        return "Deadline(none)" if self.at is None else f"Deadline({self.remaining():.3f} s left)"


#: no limit
NEVER = Deadline(None)

__all__ = ["Deadline", "Expired", "NEVER"]
