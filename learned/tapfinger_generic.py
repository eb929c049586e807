"""Size- and type-generic reading of an instance by a TapFinger checkpoint (issue 24, item 5).

A checkpoint's input fixes two things the instance may not share: the task-type one-hot (the
types of its training preset) and the allocation grid (its clusters' largest capacities). When
no shipped checkpoint fits an instance exactly or as the nearest preset, the solver may still
play it with a checkpoint of the same cluster count and pending window, read through:

* **types by features** (:func:`type_features`, :func:`type_view`): each task type is described
  by the performance model itself, as log speed-ups over its minimum allocation at a few
  reference allocations (twice the CPU; twice the GPU; four times both) and the log of its
  speed at the minimum (progress per step), measured on the type's first task at progress 0,
  noise-free. Each instance type is shown to the network as the checkpoint type whose
  features are nearest (Euclidean; ties: the first in the checkpoint's type order). A
  resource-insensitive trace type (speed-ups 0) reads as the checkpoint's least sensitive
  type.
* **allocations on the cluster's own grid** (:func:`grid_maps`): the network scores the
  cells (c', g') of its own grid 0..max_cpu x 0..max_gpu; where the cluster is larger than
  that grid along an axis, cell k stands for the allocation round(k * capacity / max) of the
  cluster (a 96-CPU cluster on a 16-cell axis: 0, 6, ..., 96); along an axis the grid covers,
  cell k is allocation k (cells above the capacity are masked). The action mask of a cell is
  the env's mask of the allocation it stands for, so every decoded action is valid; the
  observation features are already relative to each cluster's capacity.

Along covered axes the maps are the identity, so a checkpoint that fits an instance reads it
exactly as before (its decisions do not change). The choice of checkpoint and of these maps
is deterministic. What is lost: allocations between the scaled cells (a 4-CPU minimum on a
96-CPU cluster is started at 6 CPUs) and distinctions between instance types that map to the
same checkpoint type. Measured in docs/learned-baselines.md ("Holes").
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from edgebench.instances import semantics

__all__ = ["type_features", "type_view", "grid_maps", "REFERENCE_SCALES"]

#: reference allocations as multiples (cpu, gpu) of the type's minimum (the minimum is (1, 1) where 0)
REFERENCE_SCALES = ((2, 1), (1, 2), (4, 4))


def type_features(payload) -> dict[str, np.ndarray]:
    """Per task type of ``payload`` (a PlacementPayload) with at least one task: the feature
    vector (log speed-up at each of :data:`REFERENCE_SCALES`, log speed at the minimum)."""
    first: dict[str, int] = {}
    for j, t in enumerate(payload.tasks):
        first.setdefault(t.type, j)
    out = {}
    for name, j in first.items():
        mn = payload.tasks[j].minimum
        c0, g0 = max(mn.cpu, 1), max(mn.gpu, 1)
        base = semantics.increment(payload, j, mn.cpu if (mn.cpu or mn.gpu) else 1, mn.gpu, 0.0)
        base = base if base > 0 else semantics.increment(payload, j, c0, g0, 0.0)
        feats = []
        for kc, kg in REFERENCE_SCALES:
            s = semantics.increment(payload, j, kc * c0, kg * g0, 0.0)
            feats.append(math.log(s / base) if s > 0 and base > 0 else 0.0)
        feats.append(math.log(base) if base > 0 else -30.0)
        out[name] = np.array(feats)
    return out


def type_view(payload, names: list[str], reference) -> tuple[list[str], dict[str, str]]:
    """(names, mapping) for :class:`PlacementParallelEnv`'s ``type_view``: every type of
    ``payload`` mapped to the nearest of the checkpoint's types ``names``, whose features are
    read from ``reference`` (a payload of the checkpoint's training preset). Types the
    reference lacks are never chosen; a type known by name maps to itself."""
    ours, theirs = type_features(payload), type_features(reference)
    cand = [n for n in names if n in theirs]
    mapping = {}
    for t in sorted(payload.performance.types):
        if t in names:
            mapping[t] = t
        elif t in ours and cand:
            d = [float(np.linalg.norm(ours[t] - theirs[n])) for n in cand]
            mapping[t] = cand[int(np.argmin(d))]
        else:  # a type with no task (never shown) or a reference without tasks
            mapping[t] = names[0]
    return list(names), mapping


def _axis(cap: int, top: int) -> np.ndarray:
    if cap <= top:
        return np.array([k if k <= cap else -1 for k in range(top + 1)], dtype=np.int64)
    return np.array([int(math.floor(k * cap / top + 0.5)) for k in range(top + 1)], dtype=np.int64)


@lru_cache(maxsize=256)
def grid_maps(caps: tuple[tuple[int, int], ...], max_cpu: int, max_gpu: int):
    """Per cluster, (cpu map, gpu map): int arrays of length max_cpu+1 / max_gpu+1 giving the
    cluster's own allocation each network grid cell stands for (-1: above the capacity)."""
    return tuple((_axis(int(c), int(max_cpu)), _axis(int(g), int(max_gpu))) for c, g in caps)
