"""Solution format v1: what every solver returns and what the referee scores.

A solution names its instance (id and content hash), the solver, its parameters and seed,
a status, the decisions of its family, and what the solver itself reported (objective,
bound, wall time) — reported values are kept for the record and never trusted: the
referee recomputes every objective from (instance, decisions).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from edgebench.instances.model import Frozen, NonNegFloat, NonNegInt

STATUSES = ("optimal", "feasible", "infeasible", "timeout", "error")
Status = Literal["optimal", "feasible", "infeasible", "timeout", "error"]


# ---- placement ------------------------------------------------------------------------


class AllocationChange(Frozen):
    """From ``step`` on (until the next change) the task holds (cpu, gpu); (0, 0) = paused."""

    step: NonNegInt
    cpu: NonNegInt
    gpu: NonNegInt


class PlacementDecision(Frozen):
    """One task: its cluster, start step and allocation (fixed for its life), or — for
    policies that re-allocate or preempt — the allocation history on that cluster. A task
    left unplaced has ``cluster`` None."""

    cluster: NonNegInt | None = None
    start: NonNegInt | None = None
    cpu: NonNegInt = 0
    gpu: NonNegInt = 0
    history: tuple[AllocationChange, ...] | None = None

    @model_validator(mode="after")
    def _shape(self) -> "PlacementDecision":
        if self.history is not None and len(self.history) > 1:
            steps = [h.step for h in self.history]
            if any(b <= a for a, b in zip(steps, steps[1:])):
                raise ValueError("@history@ allocation changes must have strictly increasing steps")
        return self


class PlacementDecisions(Frozen):
    tasks: tuple[PlacementDecision, ...]


# ---- mapping --------------------------------------------------------------------------


class LinkDecision(Frozen):
    #: physical link indices from the source task's node to the destination's; () co-located
    route: tuple[NonNegInt, ...] = ()
    bandwidth: NonNegFloat = 0.0


class JobDecision(Frozen):
    #: physical node of each task node
    nodes: tuple[NonNegInt, ...]
    #: one entry per task link of the job, in the job's order
    links: tuple[LinkDecision, ...] = ()
    #: start time (queue); None = the job's arrival
    start: NonNegFloat | None = None


class MappingDecisions(Frozen):
    jobs: tuple[JobDecision, ...]


# ---- offloading -----------------------------------------------------------------------


class TaskSchedule(Frozen):
    server: NonNegInt
    start: NonNegFloat


class WorkflowDecision(Frozen):
    tasks: tuple[TaskSchedule, ...]


class OffloadingDecisions(Frozen):
    workflows: tuple[WorkflowDecision, ...]


# ---- envelope -------------------------------------------------------------------------


class Solution(Frozen):
    format_version: Literal[1] = 1
    family: Literal["placement", "mapping", "offloading"]
    instance_id: str
    instance_hash: str
    solver: str
    params: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = None
    status: Status
    placement: PlacementDecisions | None = None
    mapping: MappingDecisions | None = None
    offloading: OffloadingDecisions | None = None
    #: what the solver reported — recorded, never trusted
    objective: float | None = None
    bound: float | None = None
    wall_time: Annotated[float, Field(ge=0)] | None = None
    #: free-form solver statistics (anytime traces, node counts, model size)
    stats: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _payload(self) -> "Solution":
        for fam in ("placement", "mapping", "offloading"):
            has = getattr(self, fam) is not None
            if fam != self.family and has:
                raise ValueError(f"@{fam}@ a {self.family} solution must not carry '{fam}' decisions")
        if self.status in ("optimal", "feasible") and getattr(self, self.family) is None:
            raise ValueError(f"@{self.family}@ a solution with status {self.status!r} needs its decisions")
        return self

    @property
    def decisions(self):
        return getattr(self, self.family)
