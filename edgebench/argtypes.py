"""Command-line value types shared by every ``edgebench`` sub-command (argparse ``type=``
callables raising ``ArgumentTypeError``, and ``key=value`` option parsing raising the
suite's one-line InputError)."""

from __future__ import annotations

import argparse
import json
from typing import Any, Sequence

from edgebench.errors import InputError

#: the "file" named in error lines about command-line options
CMDLINE = "<command line>"
#: the largest number of seconds (time limits, budgets) and of workers the CLI and suites
#: accept (issue 44 case 14: ``--time-limit 1e308`` and ``--workers 100000`` passed the command
#: line although a suite refused them; both read these)
MAX_SECONDS = 1e7
MAX_WORKERS = 1024


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def seed(text: str) -> int:
    x = _int(text)
    if x < 0:
        raise argparse.ArgumentTypeError(f"a seed must be a non-negative integer, got {x}")
    return x


def nonneg_int(text: str) -> int:
    x = _int(text)
    if x < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {x}")
    return x


def positive_int(text: str) -> int:
    x = _int(text)
    if x < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {x}")
    return x


def int_in(lo: int, hi: int):
    """An integer option limited to [lo, hi] (issue 28: sizes of the learned models and of
    training — widths, environments, rollout lengths — were unbounded: a MemoryError)."""

    def parse(text: str) -> int:
        x = _int(text)
        if not lo <= x <= hi:
            raise argparse.ArgumentTypeError(f"must be from {lo} to {hi:,}, got {x}")
        return x

    parse.__name__ = f"int_in_{lo}_{hi}"
    return parse


def _positive_number(text: str, what: str, hi: float = float("inf")) -> float:
    """A finite number > 0 and <= ``hi``; the messages name ``what`` ("a number", "a number
    of seconds")."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if not (0 < x < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive {what[2:]}, got {text!r}")
    if x > hi:
        raise argparse.ArgumentTypeError(f"must be at most {hi:g}, got {text!r}")
    return x


def positive_float(text: str) -> float:
    return _positive_number(text, "a number")


def positive_float_at_most(hi: float):
    """A parser of a finite number > 0 and <= ``hi`` (e.g. a sampling temperature)."""
    def parse(text: str) -> float:
        return _positive_number(text, "a number", hi)

    parse.__name__ = f"positive_float_at_most_{hi:g}"
    return parse


def _number_in(text: str, lo: float, hi: float, what: str) -> float:
    """A number in [lo, hi] (finite); ``what`` names the range in the message."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (lo <= x <= hi and x < float("inf")):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return x


def nonneg_float(text: str) -> float:
    """A finite number >= 0."""
    return _number_in(text, 0.0, float("inf"), "a non-negative number")


def fraction(text: str) -> float:
    """A number from 0 to 1 (a relative tolerance)."""
    return _number_in(text, 0.0, 1.0, "from 0 to 1")


def seconds(text: str) -> float:
    """A number of seconds in (0, :data:`MAX_SECONDS`]."""
    return _positive_number(text, "a number of seconds", MAX_SECONDS)


def workers(text: str) -> int:
    """A number of workers in [1, :data:`MAX_WORKERS`]."""
    x = _int(text)
    if not 1 <= x <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_WORKERS}, got {x}")
    return x


def no_control(text: str) -> str:
    """Text without control characters (a newline in an option that ends up in a generated
    script adds a line to it: issue 44 case 14, ``--queue 'q\n#SBATCH ...'``)."""
    bad = next((c for c in text if ord(c) < 32 or ord(c) == 127 or 0x80 <= ord(c) < 0xA0), None)
    if bad is not None:
        raise argparse.ArgumentTypeError(f"contains the control character {bad!r}")
    return text


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def parse_assignments(items: Sequence[str] | None, option: str = "--set", *, file: str | None = CMDLINE,
                      unique: bool = True) -> dict[str, Any]:
    """``key=value`` strings -> dict. A value is read as JSON when it parses (``24``, ``0.5``,
    ``true``, ``[1, 2]``, ``null``), otherwise kept as a string (``ring``)."""
    out: dict[str, Any] = {}
    for item in items or ():
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InputError(f"expected key=value, got {item!r}", file=file, field=option)
        if unique and key in out:
            raise InputError("given twice", file=file, field=f"{option} {key}")
        try:
            value = json.loads(raw, parse_constant=_no_constant)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than the interpreter allows
            value = raw
        out[key] = value
    return out
