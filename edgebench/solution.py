"""Solution format v1: what every solver returns and what the referee scores.

A solution names its instance (id and content hash), the solver, its parameters and seed,
a status, the decisions of its family, and what the solver itself reported (objective,
bound, wall time) — reported values are kept for the record and never trusted: the
referee recomputes every objective from (instance, decisions).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from edgebench.instances.model import (MAX_ITEMS, MAX_LINKS, MAX_SEED, MAX_SOLUTION_TIME, MAX_STEP, PRINTABLE, Frozen,
                                       Items, NonNegFloat, NonNegUnits)

#: bounds of every number of a solution (docs/instance-format.md, "Limits")
Index = Annotated[int, Field(ge=0, lt=MAX_ITEMS)]
LinkIndex = Annotated[int, Field(ge=0, lt=MAX_LINKS)]
SolStep = Annotated[int, Field(ge=0, le=MAX_STEP)]
SolTime = Annotated[float, Field(ge=0, le=MAX_SOLUTION_TIME, allow_inf_nan=False)]

STATUSES = ("optimal", "feasible", "infeasible", "timeout", "error")
Status = Literal["optimal", "feasible", "infeasible", "timeout", "error"]


# ---- placement ------------------------------------------------------------------------


class AllocationChange(Frozen):
    """From ``step`` on (until the next change) the task holds (cpu, gpu); (0, 0) = paused."""

    step: SolStep
    cpu: NonNegUnits
    gpu: NonNegUnits


class PlacementDecision(Frozen):
    """One task: its cluster, start step and allocation (fixed for its life), or — for
    policies that re-allocate or preempt — the allocation history on that cluster. A task
    left unplaced has ``cluster`` None."""

    cluster: Index | None = None
    start: SolStep | None = None
    cpu: NonNegUnits = 0
    gpu: NonNegUnits = 0
    history: Items(AllocationChange, max_length=MAX_LINKS) | None = None

    @model_validator(mode="after")
    def _shape(self) -> "PlacementDecision":
        if self.history is not None and len(self.history) > 1:
            steps = [h.step for h in self.history]
            if any(b <= a for a, b in zip(steps, steps[1:])):
                raise ValueError("@history@ allocation changes must have strictly increasing steps")
        return self


class PlacementDecisions(Frozen):
    tasks: Items(PlacementDecision)


# ---- mapping --------------------------------------------------------------------------


class LinkDecision(Frozen):
    #: physical link indices from the source task's node to the destination's; () co-located
    route: Items(LinkIndex) = ()
    bandwidth: NonNegFloat = 0.0


class JobDecision(Frozen):
    #: physical node of each task node
    nodes: Items(Index)
    #: one entry per task link of the job, in the job's order
    links: Items(LinkDecision, max_length=MAX_LINKS) = ()
    #: start time (queue); None = the job's arrival
    start: SolTime | None = None


class MappingDecisions(Frozen):
    jobs: Items(JobDecision)


# ---- offloading -----------------------------------------------------------------------


class TaskSchedule(Frozen):
    server: Index
    start: SolTime


class WorkflowDecision(Frozen):
    tasks: Items(TaskSchedule)


class OffloadingDecisions(Frozen):
    workflows: Items(WorkflowDecision)


# ---- envelope -------------------------------------------------------------------------


class Solution(Frozen):
    format_version: Literal[1] = 1
    family: Literal["placement", "mapping", "offloading"]
    instance_id: str = Field(pattern=PRINTABLE)
    instance_hash: str
    solver: str
    params: dict[str, Any] = Field(default_factory=dict)
    seed: Annotated[int, Field(ge=-MAX_SEED, le=MAX_SEED)] | None = None
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
