"""A HiGHS model that is freed when done (issue 46).

highspy's :class:`highspy.Highs` object is in a reference cycle: ``Highs.callbacks`` holds one
callback slot per callback type, and each slot holds the ``Highs`` object back.  Dropping the
last reference to a ``Highs`` therefore frees nothing: its C++ model and solver data wait for
Python's cyclic garbage collector, which counts Python objects, not megabytes.  placement-bnp
built one master LP per node (about 13 MB each at 192 tasks) and passed the runner's 4 GiB
address-space limit so.

:func:`release` breaks the cycle (callbacks switched off, the slots dropped) and clears the
model, so the object is freed by reference counting as soon as the caller lets go of it;
:func:`highs_model` is a fresh ``Highs`` (no console output, one thread unless told) that is
released when its ``with`` block ends, however it ends.  None of the models built in edgebench
uses HiGHS callbacks.  Nothing read from the model before the release (``getSolution()``,
``getInfo()``: copies) changes.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import highspy


def release(h: highspy.Highs | None) -> None:
    """Free ``h``'s HiGHS model and solver data now, and break its reference cycle so that the
    Python object goes with its last reference (no garbage collection needed).  ``h`` is
    unusable afterwards; None is ignored."""
    if h is None:
        return
    h.disableCallbacks()
    h.callbacks = []
    h.clear()


@contextmanager
def highs_model(*, threads: int = 1, output: bool = False, **options: Any) -> Iterator[highspy.Highs]:
    """A new ``highspy.Highs`` with ``output_flag=output``, ``threads`` and further HiGHS
    ``options`` set, :func:`release`-d when the block ends (also on an exception)."""
    h = highspy.Highs()
    try:
        h.setOptionValue("output_flag", bool(output))
        h.setOptionValue("threads", max(1, int(threads)))
        for key, value in options.items():
            h.setOptionValue(key, value)
        yield h
    finally:
        release(h)
