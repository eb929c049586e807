"""Two-piece allocation shapes for the serial decoder (``placement-lahc`` with ``pieces = 2``).

A fixed option holds one allocation from a task's start to its finish. The best knowns of the
sets the authors built (testbed-v2, the v3 sets) start a task large and then shrink it as others
arrive, or start it small and grow it as others finish: histories of one change
(docs/formulations/placement-search.md, "Late-acceptance search", "Two-piece shapes"). A
:class:`Shape` is a history relative to its start: on ``cluster``, a list of pieces (from a step
offset on, an allocation; (0, 0) a pause), ``steps`` steps from its start to its finish. A fixed
option is a shape of one piece; the search draws shapes of two (:func:`two_piece`), and a warm
start's histories of any length are shapes too (:func:`of_decision`), so the search starts from
the warm start's own schedule.

``steps`` comes from THE step rule (:func:`.problem.step_progress`: the progress model, the noise
of the task's k-th executed step and the switching loss of the change step), so it does not depend
on the start: the noise is indexed by executed steps. The referee's own
simulation agrees (a test), so a decoded schedule's value is the referee's.
"""

from __future__ import annotations

from dataclasses import dataclass

from edgebench.formulations.placement.problem import Option, PlacementData, is_done, step_progress
from edgebench.instances import semantics
from edgebench.referee.placement import task_finish
from edgebench.solution import AllocationChange, PlacementDecision

#: a second piece longer than this many steps is treated as never finishing (no shape)
MAX_STEPS = semantics.MAX_RUN_STEPS


@dataclass(frozen=True)
class Shape:
    """A task's allocation history relative to its start (module docstring): on ``cluster``,
    ``pieces`` = ((step offset, cpu, gpu), ...) from offset 0, strictly increasing, (0, 0) a pause
    (never the first); ``memory`` held while it runs (not while paused); it finishes ``steps``
    steps after its start."""

    cluster: int
    pieces: tuple[tuple[int, int, int], ...]
    memory: int
    steps: int

    @classmethod
    def of(cls, o: Option) -> "Shape":
        """A fixed option as a one-piece shape."""
        return cls(o.cluster, ((0, o.cpu, o.gpu),), o.memory, o.steps)

    def decision(self, start: int) -> PlacementDecision:
        """The referee decision of this shape started at ``start``."""
        if len(self.pieces) == 1:
            _, cpu, gpu = self.pieces[0]
            return PlacementDecision(cluster=self.cluster, start=start, cpu=cpu, gpu=gpu)
        return PlacementDecision(cluster=self.cluster, start=start, history=tuple(
            AllocationChange(step=start + r, cpu=c, gpu=g) for r, c, g in self.pieces))


def _run(payload, j: int, first: tuple[int, int], split: int | None, second: tuple[int, int]) -> int | None:
    """Steps task j needs holding ``first`` for ``split`` steps (None: to its finish) then
    ``second``; None if it never finishes, or finishes before the change."""
    p, prev, k = 0.0, first, 0
    while split is None or k < split:
        if k > MAX_STEPS:
            return None
        p = step_progress(payload, j, first, p, k, prev, k == 0)
        k += 1
        if is_done(p):
            return k if split is None else None
    while not is_done(p):
        if k - split > MAX_STEPS:
            return None
        p = step_progress(payload, j, second, p, k, prev, k == 0)
        prev = second
        k += 1
    return k


def two_piece(payload, data: PlacementData, j: int) -> list[Shape]:
    """Every two-piece shape of task j over its dominant options: a first option A of a cluster,
    a change after ``split`` = 1 .. A.steps - 1 steps to another dominant allocation B of the
    same cluster, run to the finish. Ordered by (A, B, split) in the options' order."""
    out: list[Shape] = []
    opts = data.options[j]
    for a in opts:
        for b in opts:
            if b.cluster != a.cluster or (b.cpu, b.gpu) == (a.cpu, a.gpu):
                continue
            for split in range(1, a.steps):
                steps = _run(payload, j, (a.cpu, a.gpu), split, (b.cpu, b.gpu))
                if steps is not None:
                    out.append(Shape(a.cluster, ((0, a.cpu, a.gpu), (split, b.cpu, b.gpu)), a.memory, steps))
    return out


def of_decision(payload, data: PlacementData, j: int, d: PlacementDecision, *,
                max_pieces: int = 8) -> Shape | None:
    """Task j's referee decision as a shape (any history of at most ``max_pieces`` pieces that
    starts at ``d.start`` with an allocation); None otherwise, or if it never finishes. Its
    steps are the referee's own simulation (``task_finish``)."""
    if d.cluster is None or d.start is None:
        return None
    changes = [(d.start, d.cpu, d.gpu)] if not d.history else [(h.step, h.cpu, h.gpu) for h in d.history]
    if changes[0][0] != d.start or len(changes) > max_pieces or (changes[0][1] <= 0 and changes[0][2] <= 0):
        return None
    mem = next((o.memory for o in data.options[j] if o.cluster == d.cluster), None)
    fin = task_finish(payload, j, d.start, changes)
    if mem is None or fin is None:
        return None
    pieces = tuple((a - d.start, c, g) for a, c, g in changes if a < fin)
    return Shape(d.cluster, pieces, mem, fin - d.start)


__all__ = ["Shape", "two_piece", "of_decision", "MAX_STEPS"]
