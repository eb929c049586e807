"""Instance format v1: one immutable, validated model for all three families.

Elements (clusters, tasks, nodes, links, servers) are identified by their 0-based position
in their list; every reference is such an index. ``name`` fields are optional labels.
Instances are built only through :func:`edgebench.instances.io.instance_from_dict` /
``load_instance`` so that every instance in the suite went through the same validation.

The semantics of each field (units, defaults, what the sources leave open) are documented
in ``docs/instance-format.md``; derived quantities (durations, routes, transfer times) live
in :mod:`edgebench.instances.semantics`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

FORMAT_VERSION = 1
FAMILIES = ("placement", "mapping", "offloading")

PosInt = Annotated[int, Field(gt=0)]
NonNegInt = Annotated[int, Field(ge=0)]
PosFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Prob = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


class Frozen(BaseModel):
    """Base of every format model: immutable, unknown fields rejected (files are validated
    in strict mode by io.validate_model; Python constructors coerce lists to tuples)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def _check(cond: bool, field: str, reason: str) -> None:
    # Raised as ValueError inside validators; io.py maps it to InputError with the field path.
    if not cond:
        raise ValueError(f"@{field}@ {reason}")


# --------------------------------------------------------------------------------------
# Placement (TapFinger)
# --------------------------------------------------------------------------------------


class Capacity(Frozen):
    cpu: PosInt
    gpu: PosInt
    memory: PosInt | None = None


class Demand(Frozen):
    cpu: NonNegInt
    gpu: NonNegInt
    memory: NonNegInt | None = None


class Cluster(Frozen):
    name: str | None = None
    capacity: Capacity


class PlacementTask(Frozen):
    name: str | None = None
    arrival: NonNegInt
    type: str
    minimum: Demand
    eligible: tuple[NonNegInt, ...] = Field(min_length=1)


class SyntheticType(Frozen):
    """Progress per step = w(cpu, gpu) * sqrt(max(curvature - progress, 0)) + base.

    w = tanh(g / gpu_scale) with g = min(gpu, cpu / cpu_per_gpu) (the CPU bottleneck) or
    g = gpu when ``cpu_per_gpu`` is None; w = 0 when ``gpu_scale`` is None.
    """

    base: NonNegFloat = 0.0
    gpu_scale: PosFloat | None = None
    cpu_per_gpu: PosFloat | None = None
    curvature: PosFloat = 1.2


class SyntheticPerformance(Frozen):
    kind: Literal["synthetic"] = "synthetic"
    types: dict[str, SyntheticType] = Field(min_length=1)


class TableEntry(Frozen):
    cpu: PosInt
    gpu: PosInt
    seconds: PosFloat


class TableType(Frozen):
    entries: tuple[TableEntry, ...] = Field(min_length=1)


class TablePerformance(Frozen):
    """Measured completion time (seconds) per type x cpu x gpu; see semantics.table_seconds."""

    kind: Literal["table"] = "table"
    types: dict[str, TableType] = Field(min_length=1)

    @model_validator(mode="after")
    def _full_grid(self) -> "TablePerformance":
        for name, t in self.types.items():
            cpus = sorted({e.cpu for e in t.entries})
            gpus = sorted({e.gpu for e in t.entries})
            seen = {(e.cpu, e.gpu) for e in t.entries}
            _check(len(seen) == len(t.entries), f"types.{name}.entries", "duplicate (cpu, gpu) entry")
            _check(len(seen) == len(cpus) * len(gpus), f"types.{name}.entries",
                   f"table is not a full grid over cpu {cpus} x gpu {gpus}")
        return self


Performance = Annotated[Union[SyntheticPerformance, TablePerformance], Field(discriminator="kind")]


class PlacementPayload(Frozen):
    clusters: tuple[Cluster, ...] = Field(min_length=1)
    tasks: tuple[PlacementTask, ...] = Field(min_length=1)
    performance: Performance
    step_seconds: PosFloat = 10.0
    #: fraction of a step's progress lost in a step in which a running task's allocation changes
    switching_overhead: Prob = 0.5
    #: progress gains are multiplied by (1 + eps), eps ~ U[-noise, +noise], realised from
    #: noise_seed per task and executed step (semantics.noise_factor)
    noise: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = 0.0
    noise_seed: NonNegInt = 0
    pending_size: PosInt = 10
    variant: Literal["single", "multi"] = "single"

    @model_validator(mode="after")
    def _refs(self) -> "PlacementPayload":
        from edgebench.instances import semantics  # local: semantics imports this module

        n = len(self.clusters)
        for j, task in enumerate(self.tasks):
            base = f"tasks[{j}]"
            _check(task.type in self.performance.types, f"{base}.type",
                   f"unknown task type {task.type!r} (performance model has {sorted(self.performance.types)})")
            _check(len(set(task.eligible)) == len(task.eligible), f"{base}.eligible", "duplicate cluster")
            for k, c in enumerate(task.eligible):
                _check(c < n, f"{base}.eligible[{k}]", f"cluster {c} does not exist ({n} clusters)")
            fits = [c for c in task.eligible if semantics.fits(task.minimum, self.clusters[c].capacity)]
            _check(bool(fits), f"{base}.minimum",
                   f"minimum {task.minimum.cpu} cpu / {task.minimum.gpu} gpu fits no eligible cluster")
            _check(semantics.best_increment(self, j) > 0, f"{base}.type",
                   "the task makes no progress at any allocation its eligible clusters offer")
        return self


# --------------------------------------------------------------------------------------
# Mapping (CES)
# --------------------------------------------------------------------------------------


class PhysicalNode(Frozen):
    name: str | None = None
    cpu: PosFloat
    ram: PosFloat
    #: background usage in the same units as the capacity (occupied before any job)
    bg_cpu: NonNegFloat = 0.0
    bg_ram: NonNegFloat = 0.0

    @model_validator(mode="after")
    def _bg(self) -> "PhysicalNode":
        _check(self.bg_cpu < self.cpu, "bg_cpu", "background usage must be below the capacity")
        _check(self.bg_ram < self.ram, "bg_ram", "background usage must be below the capacity")
        return self


class PhysicalLink(Frozen):
    src: NonNegInt
    dst: NonNegInt
    bandwidth: PosFloat


class TaskNode(Frozen):
    name: str | None = None
    cpu: PosFloat
    ram: PosFloat


class TaskLink(Frozen):
    src: NonNegInt
    dst: NonNegInt
    bw_min: NonNegFloat
    bw_max: NonNegFloat

    @model_validator(mode="after")
    def _range(self) -> "TaskLink":
        _check(self.bw_min <= self.bw_max, "bw_max", "bw_max is below bw_min")
        return self


class Job(Frozen):
    name: str | None = None
    arrival: NonNegFloat = 0.0
    duration: PosFloat = 1.0
    priority: int = 0
    tasks: tuple[TaskNode, ...] = Field(min_length=1)
    links: tuple[TaskLink, ...] = ()

    @model_validator(mode="after")
    def _refs(self) -> "Job":
        n = len(self.tasks)
        seen = set()
        for k, link in enumerate(self.links):
            for end in ("src", "dst"):
                v = getattr(link, end)
                _check(v < n, f"links[{k}].{end}", f"task node {v} does not exist ({n} task nodes)")
            _check(link.src != link.dst, f"links[{k}]", "a task link must join two different task nodes")
            _check((link.src, link.dst) not in seen, f"links[{k}]", "duplicate task link")
            seen.add((link.src, link.dst))
        return self


class MappingObjective(Frozen):
    #: weights of std(U_cpu), std(U_ram), std(U_bw) in L; they must sum to 1
    weights: tuple[NonNegFloat, NonNegFloat, NonNegFloat] = (1 / 3, 1 / 3, 1 / 3)
    #: whether node utilisation counts the background load (the thesis writes U with the job only)
    include_background: bool = True
    #: bandwidth levels L of the learned policy's action space (B = min + a/(L-1) (max - min))
    bandwidth_levels: Annotated[int, Field(ge=2)] = 5
    #: "shortest_path": the canonical fewest-hop path (the thesis); "free": any simple path
    routing: Literal["shortest_path", "free"] = "shortest_path"

    @model_validator(mode="after")
    def _w(self) -> "MappingObjective":
        _check(abs(sum(self.weights) - 1.0) <= 1e-6, "weights", f"weights must sum to 1, got {sum(self.weights)}")
        return self


class MappingPayload(Frozen):
    nodes: tuple[PhysicalNode, ...] = Field(min_length=1)
    links: tuple[PhysicalLink, ...] = ()
    jobs: tuple[Job, ...] = Field(min_length=1)
    objective: MappingObjective = MappingObjective()

    @model_validator(mode="after")
    def _refs(self) -> "MappingPayload":
        n = len(self.nodes)
        seen = set()
        for k, link in enumerate(self.links):
            for end in ("src", "dst"):
                v = getattr(link, end)
                _check(v < n, f"links[{k}].{end}", f"physical node {v} does not exist ({n} nodes)")
            _check(link.src != link.dst, f"links[{k}]", "a physical link must join two different nodes")
            _check((link.src, link.dst) not in seen, f"links[{k}]", "duplicate physical link")
            seen.add((link.src, link.dst))
        return self


# --------------------------------------------------------------------------------------
# Offloading (patent)
# --------------------------------------------------------------------------------------


class Server(Frozen):
    name: str | None = None
    #: free CPU cores / memory; ignored (unbounded) for the cloud
    cpu: NonNegFloat = 0.0
    mem: NonNegFloat = 0.0
    images: tuple[str, ...] = ()
    #: execution time on this server = sum of the functions' times / speed
    speed: PosFloat = 1.0
    is_cloud: bool = False

    @model_validator(mode="after")
    def _cap(self) -> "Server":
        if not self.is_cloud:
            _check(self.cpu > 0, "cpu", "an edge server needs a positive CPU capacity")
            _check(self.mem > 0, "mem", "an edge server needs a positive memory capacity")
        return self


class FunctionInstance(Frozen):
    image: str
    cpu: NonNegFloat
    mem: NonNegFloat
    exec_time: NonNegFloat


class WorkflowTask(Frozen):
    name: str | None = None
    functions: tuple[FunctionInstance, ...] = Field(min_length=1)
    #: data (bytes or any unit consistent with the bandwidth) fetched from the workflow's
    #: source server before the task can start; only meaningful for entry tasks
    input_data: NonNegFloat = 0.0


class WorkflowEdge(Frozen):
    src: NonNegInt
    dst: NonNegInt
    data: NonNegFloat = 0.0
    #: classic DAG-scheduling instances: transfer time when the two ends are on different
    #: servers (overrides data x distance / bandwidth); 0 on the same server
    cost: NonNegFloat | None = None


class Workflow(Frozen):
    name: str | None = None
    arrival: NonNegFloat = 0.0
    source: NonNegInt = 0
    tasks: tuple[WorkflowTask, ...] = Field(min_length=1)
    edges: tuple[WorkflowEdge, ...] = ()
    #: optional exec_times[task][server] (seconds), overriding functions / speed
    exec_times: tuple[tuple[NonNegFloat, ...], ...] | None = None

    @model_validator(mode="after")
    def _dag(self) -> "Workflow":
        n = len(self.tasks)
        seen = set()
        for k, e in enumerate(self.edges):
            for end in ("src", "dst"):
                v = getattr(e, end)
                _check(v < n, f"edges[{k}].{end}", f"task {v} does not exist ({n} tasks)")
            _check(e.src != e.dst, f"edges[{k}]", "self-loop: the workflow is cyclic")
            _check((e.src, e.dst) not in seen, f"edges[{k}]", "duplicate edge")
            seen.add((e.src, e.dst))
        cycle = find_cycle(n, self.edges)
        _check(cycle is None, "edges", f"the workflow is cyclic: {' -> '.join(map(str, cycle or []))}")
        if self.exec_times is not None:
            _check(len(self.exec_times) == n, "exec_times", f"needs one row per task ({n})")
        return self


def find_cycle(n: int, edges) -> list[int] | None:
    """A directed cycle among tasks 0..n-1 as a list of task indices (first == last), or None.
    ``edges`` holds (src, dst, ...) tuples or objects with ``src`` / ``dst``."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    for e in edges:
        a, b = (e.src, e.dst) if hasattr(e, "src") else (e[0], e[1])
        g.add_edge(a, b)
    try:
        cyc = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return None
    return [a for a, _ in cyc] + [cyc[0][0]]


class OffloadingPayload(Frozen):
    servers: tuple[Server, ...] = Field(min_length=1)
    #: distance[i][j] between servers (symmetric not required; zero diagonal)
    distance: tuple[tuple[NonNegFloat, ...], ...]
    bandwidth: PosFloat = 1.0
    #: seconds a task waits for each of its images that its server does not hold
    image_pull_delay: NonNegFloat = 0.0
    workflows: tuple[Workflow, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _refs(self) -> "OffloadingPayload":
        s = len(self.servers)
        _check(len(self.distance) == s, "distance", f"needs {s} rows (one per server)")
        for i, row in enumerate(self.distance):
            _check(len(row) == s, f"distance[{i}]", f"needs {s} columns (one per server)")
            _check(row[i] == 0, f"distance[{i}][{i}]", "a server's distance to itself must be 0")
        for w, wf in enumerate(self.workflows):
            _check(wf.source < s, f"workflows[{w}].source", f"server {wf.source} does not exist ({s} servers)")
            if wf.exec_times is not None:
                for t, row in enumerate(wf.exec_times):
                    _check(len(row) == s, f"workflows[{w}].exec_times[{t}]", f"needs {s} columns (one per server)")
            for t, task in enumerate(wf.tasks):
                cpu = sum(f.cpu for f in task.functions)
                mem = sum(f.mem for f in task.functions)
                ok = any(srv.is_cloud or (cpu <= srv.cpu + 1e-9 and mem <= srv.mem + 1e-9) for srv in self.servers)
                _check(ok, f"workflows[{w}].tasks[{t}].functions",
                       f"the task needs {cpu:g} cpu / {mem:g} mem, more than any server has")
        return self


# --------------------------------------------------------------------------------------
# Envelope
# --------------------------------------------------------------------------------------


class Reference(Frozen):
    """Best known objective / bound with provenance (filled by later work, JobShopLib-style)."""

    objective: float | None = None
    bound: float | None = None
    solver: str | None = None
    date: str | None = None
    note: str | None = None


class Instance(Frozen):
    format_version: Literal[1] = FORMAT_VERSION
    family: Literal["placement", "mapping", "offloading"]
    id: str = Field(min_length=1)
    name: str = ""
    #: generator and all its parameters, seed, source and reference, terms for trace data
    meta: dict[str, Any] = Field(default_factory=dict)
    placement: PlacementPayload | None = None
    mapping: MappingPayload | None = None
    offloading: OffloadingPayload | None = None

    @model_validator(mode="after")
    def _one_payload(self) -> "Instance":
        for fam in FAMILIES:
            has = getattr(self, fam) is not None
            if fam == self.family:
                _check(has, fam, f"a {fam} instance needs a '{fam}' payload")
            else:
                _check(not has, fam, f"a {self.family} instance must not carry a '{fam}' payload")
        return self

    @property
    def payload(self) -> PlacementPayload | MappingPayload | OffloadingPayload:
        return getattr(self, self.family)

    def content_hash(self) -> str:
        from edgebench.instances.io import content_hash

        return content_hash(self)
