"""Greedy decisions that are the same on any machine (both learned families), and the one torch
thread a learned solver plays on (:func:`one_torch_thread`).

A trained network's greedy action is the argmax of its scores. Scores that are equal in exact
arithmetic (two identical pending tasks, two interchangeable nodes) come out of float32 kernels
differing in the last bits, and which one wins then depends on the machine's SIMD kernels, thread
count and BLAS: the same checkpoint made different decisions on two x86-64 machines (issue 24).
The acting paths therefore run the network in float64 (the weights are the checkpoint's float32
values, exactly) and break ties explicitly with :func:`pick_max`: among the allowed entries whose
score lies within :data:`TIE_TOL` of the best, the lowest index wins. float64 rounding of these
small networks moves a score by ~1e-14, so a decision can differ between machines only if a gap
between two scores lies within ~1e-14 of ``TIE_TOL``; the shipped evaluation records give the
smallest margin observed (docs/learned-baselines.md, "Same decisions on any machine").
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

#: scores within this of the best count as tied (the lowest index wins)
TIE_TOL = 1e-9
#: the smallest decision margin a shipped evaluation record may show (far above float64 rounding)
MIN_MARGIN = 1e-6


def pick_max(scores, ok=None, tol: float = TIE_TOL) -> tuple[int, float]:
    """The greedy choice with deterministic tie-breaking: (the lowest index among the allowed
    entries whose score is within ``tol`` of the best allowed score, the margin: the best score
    minus the best allowed score outside that tie set, inf when there is none). The decision is the
    same on any machine whose rounding moves every score by less than min(tol, margin - tol) / 2."""
    s = np.asarray(scores, dtype=np.float64)
    if ok is not None:
        s = np.where(ok, s, -np.inf)
    best = s.max()
    tied = s >= best - tol
    rest = s[~tied]
    margin = float(best - rest.max()) if rest.size and np.isfinite(rest.max()) else math.inf
    return int(np.flatnonzero(tied)[0]), margin


@contextlib.contextmanager
def one_torch_thread():
    """Torch on one thread while a learned solver plays (the caller's count restored after). An
    episode multiplies a few agents' small matrices: a second thread saves nothing there, and on a
    loaded machine its spin-waiting made each decision about 100x slower (3.5 ms against 424 ms a
    decision of ``tapfinger`` on a 30-task hetero-6 instance, the other core busy). The runner's
    workers already run one thread."""
    import torch

    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(prev)


__all__ = ["TIE_TOL", "MIN_MARGIN", "pick_max", "one_torch_thread"]
