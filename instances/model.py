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

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_serializer, model_validator

FORMAT_VERSION = 1
FAMILIES = ("placement", "mapping", "offloading")

# ---- limits ------------------------------------------------------------------------------
# Every number that sizes memory or time has an upper bound, so that a file that validates
# never makes a solver or the referee fail for its size (docs/instance-format.md, "Limits").

#: elements of one list (clusters, tasks, nodes, jobs, task nodes of a job, servers, workflows,
#: tasks of a workflow, functions of a task, images of a server)
MAX_ITEMS = 10_000
#: links of one list (physical links, task links of a job, edges of a workflow)
MAX_LINKS = 100_000
#: placement: arrival step of a task (10 s steps: 116 days)
MAX_ARRIVAL_STEP = 1_000_000
#: placement: step of a solution (start, allocation change): arrivals plus room for long runs
MAX_STEP = 1_000_000_000
#: placement: CPU / GPU units of a capacity, a minimum or an allocation (solvers enumerate the grid)
MAX_UNITS = 1024
#: placement: pending window of a cluster
MAX_PENDING = 1000
#: mapping / offloading: any time (arrival, duration, execution, pull delay, transfer cost), seconds
MAX_TIME = 1e7
#: mapping / offloading: a solution's start time (instance times plus room for queueing)
MAX_SOLUTION_TIME = 1e9
#: capacities, demands, bandwidths, data sizes, distances, speeds, memory units
MAX_AMOUNT = 1e12
#: a positive time or amount is at least this (no denormal durations that vanish in sums)
MIN_POSITIVE = 1e-9
#: mapping / offloading: a duration (given or derived) is 0 or at least this; with every
#: simulated time <= MAX_HORIZON (float spacing 1.2e-7 there, 8x smaller) no duration vanishes in a sum
TIME_RESOLUTION = 1e-6
#: mapping / offloading: latest arrival plus all the work of the instance, run one after another
MAX_HORIZON = 1e9
#: mapping: bandwidth levels of the learned policies' action space
MAX_LEVELS = 1000
#: seeds and priorities
MAX_SEED = 2**64 - 1
MAX_PRIORITY = 10**9

PosInt = Annotated[int, Field(gt=0)]
NonNegInt = Annotated[int, Field(ge=0)]
Units = Annotated[int, Field(gt=0, le=MAX_UNITS)]
NonNegUnits = Annotated[int, Field(ge=0, le=MAX_UNITS)]
MemUnits = Annotated[int, Field(gt=0, le=int(MAX_AMOUNT))]
NonNegMemUnits = Annotated[int, Field(ge=0, le=int(MAX_AMOUNT))]
Step = Annotated[int, Field(ge=0, le=MAX_ARRIVAL_STEP)]
Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]


def _not_tiny(x: float) -> float:
    if x < MIN_POSITIVE:
        raise ValueError(f"must be at least {MIN_POSITIVE:g} (smaller positive values vanish in sums)")
    return x


PosFloat = Annotated[float, Field(gt=0, le=MAX_AMOUNT, allow_inf_nan=False), AfterValidator(_not_tiny)]
NonNegFloat = Annotated[float, Field(ge=0, le=MAX_AMOUNT, allow_inf_nan=False)]
Time = Annotated[float, Field(ge=0, le=MAX_TIME, allow_inf_nan=False)]
PosTime = Annotated[float, Field(gt=0, le=MAX_TIME, allow_inf_nan=False), AfterValidator(_not_tiny)]


def _resolved(x: float) -> float:
    if 0 < x < TIME_RESOLUTION:
        raise ValueError(f"must be 0 or at least {TIME_RESOLUTION:g} (the time resolution)")
    return x


#: a duration of the mapping / offloading families: 0 or in [TIME_RESOLUTION, MAX_TIME]
Duration = Annotated[float, Field(ge=0, le=MAX_TIME, allow_inf_nan=False), AfterValidator(_resolved)]
PosDuration = Annotated[float, Field(gt=0, le=MAX_TIME, allow_inf_nan=False), AfterValidator(_resolved)]
Prob = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


def Items(item, *, min_length: int = 0, max_length: int = MAX_ITEMS):  # noqa: N802 - a type factory
    """A tuple of at most ``max_length`` ``item`` s."""
    return Annotated[tuple[item, ...], Field(min_length=min_length, max_length=max_length)]


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
    cpu: Units
    gpu: Units
    memory: MemUnits | None = None


class Demand(Frozen):
    cpu: NonNegUnits
    gpu: NonNegUnits
    memory: NonNegMemUnits | None = None


class Cluster(Frozen):
    name: str | None = None
    capacity: Capacity


class PlacementTask(Frozen):
    name: str | None = None
    arrival: Step
    type: str
    minimum: Demand
    eligible: Items(NonNegInt, min_length=1)


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
    types: dict[str, SyntheticType] = Field(min_length=1, max_length=MAX_ITEMS)


class TableEntry(Frozen):
    cpu: Units
    gpu: Units
    seconds: PosTime


class TableType(Frozen):
    entries: Items(TableEntry, min_length=1)


class TablePerformance(Frozen):
    """Measured completion time (seconds) per type x cpu x gpu; see semantics.table_seconds."""

    kind: Literal["table"] = "table"
    types: dict[str, TableType] = Field(min_length=1, max_length=MAX_ITEMS)

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
    clusters: Items(Cluster, min_length=1)
    tasks: Items(PlacementTask, min_length=1)
    performance: Performance
    step_seconds: PosTime = 10.0
    #: fraction of a step's progress lost in a step in which a running task's allocation changes
    switching_overhead: Prob = 0.5
    #: eps ~ U[-noise, +noise], realised from noise_seed per task and executed step, acts on each
    #: step's gain g (semantics.noisy_gain): "multiplicative" g * (1 + eps); "additive" (the
    #: TapFinger authors' model) max(g + eps, 0)
    noise: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = 0.0
    noise_seed: Seed = 0
    noise_model: Literal["multiplicative", "additive"] = "multiplicative"
    pending_size: Annotated[int, Field(gt=0, le=MAX_PENDING)] = 10
    variant: Literal["single", "multi"] = "single"

    @model_serializer(mode="wrap")
    def _drop_default_noise_model(self, handler):
        # the default model is left out of the file, so that every instance written before the
        # field existed keeps its bytes and its content hash (docs/instance-format.md)
        data = handler(self)
        if self.noise_model == "multiplicative":
            data.pop("noise_model", None)
        return data

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
            steps = self._run_steps_bound(j)
            _check(steps <= semantics.MAX_RUN_STEPS, f"{base}.type",
                   f"the task may need {'forever' if steps == float('inf') else f'{steps:.3g} steps'} at the "
                   f"largest allocation of its eligible clusters, more than a run may take "
                   f"({semantics.MAX_RUN_STEPS} steps)")
        return self

    def _run_steps_bound(self, j: int) -> float:
        """An upper bound (O(1), no simulation) of the steps task j needs at the largest
        allocation of its best eligible cluster, noise at its worst; inf if it may never finish.
        The per-step gain is smallest at the end of the run (progress 1); when that is 0
        (synthetic type, base 0, curvature 1) the remaining work d shrinks by w * sqrt(d) per
        step, which takes at most 2 / w + 1 steps. Additive noise: each step gains at least
        g(1) - noise; where that is not positive, the realised run at the largest allocation
        (one simulation) decides."""
        from edgebench.instances import semantics

        additive = self.noise_model == "additive"
        slow = 1.0 - self.noise
        best = float("inf")
        for n in self.tasks[j].eligible:
            cap = self.clusters[n].capacity
            end = semantics.increment(self, j, cap.cpu, cap.gpu, 1.0)
            first = semantics.increment(self, j, cap.cpu, cap.gpu, 0.0)
            kind = self.performance.types[self.tasks[j].type]
            if additive:  # the worst draw takes noise off each step's gain
                if end - self.noise > 0:
                    best = min(best, 1.0 / (end - self.noise))
                elif first > 0 and semantics.fits(self.tasks[j].minimum, cap):
                    # no worst-case bound: the realised noise decides (one simulation)
                    steps = semantics.fixed_run_steps(self, j, cap.cpu, cap.gpu)
                    best = min(best, float("inf") if steps is None else float(steps))
            elif end * slow > 0:
                best = min(best, 1.0 / (end * slow))
            elif first * slow > 0 and getattr(kind, "curvature", 0.0) >= 1.0:
                best = min(best, 2.0 / (first * slow) + 1.0)
        return best


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
    arrival: Time = 0.0
    duration: PosDuration = 1.0
    priority: Annotated[int, Field(ge=-MAX_PRIORITY, le=MAX_PRIORITY)] = 0
    tasks: Items(TaskNode, min_length=1)
    links: Items(TaskLink, max_length=MAX_LINKS) = ()

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
    bandwidth_levels: Annotated[int, Field(ge=2, le=MAX_LEVELS)] = 5
    #: "shortest_path": the canonical fewest-hop path (the thesis); "free": any simple path
    routing: Literal["shortest_path", "free"] = "shortest_path"

    @model_validator(mode="after")
    def _w(self) -> "MappingObjective":
        _check(abs(sum(self.weights) - 1.0) <= 1e-6, "weights", f"weights must sum to 1, got {sum(self.weights)}")
        return self


class MappingPayload(Frozen):
    nodes: Items(PhysicalNode, min_length=1)
    links: Items(PhysicalLink, max_length=MAX_LINKS) = ()
    jobs: Items(Job, min_length=1)
    objective: MappingObjective = MappingObjective()

    @model_validator(mode="after")
    def _refs(self) -> "MappingPayload":
        total = max(j.arrival for j in self.jobs) + sum(j.duration for j in self.jobs)
        _check(total <= MAX_HORIZON, "jobs",
               f"arrivals plus all durations take up to {total:.3g}, above the limit of {MAX_HORIZON:g}")
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
    images: Items(str) = ()
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
    exec_time: Duration


class WorkflowTask(Frozen):
    name: str | None = None
    functions: Items(FunctionInstance, min_length=1)
    #: data (bytes or any unit consistent with the bandwidth) fetched from the workflow's
    #: source server before the task can start; only meaningful for entry tasks
    input_data: NonNegFloat = 0.0


class WorkflowEdge(Frozen):
    src: NonNegInt
    dst: NonNegInt
    data: NonNegFloat = 0.0
    #: classic DAG-scheduling instances: transfer time when the two ends are on different
    #: servers (overrides data x distance / bandwidth); 0 on the same server
    cost: Duration | None = None


class Workflow(Frozen):
    name: str | None = None
    arrival: Time = 0.0
    source: NonNegInt = 0
    tasks: Items(WorkflowTask, min_length=1)
    edges: Items(WorkflowEdge, max_length=MAX_LINKS) = ()
    #: optional exec_times[task][server] (seconds), overriding functions / speed
    exec_times: Items(Items(Duration)) | None = None

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
    if nx.is_directed_acyclic_graph(g):  # the common case: a topological sort, far cheaper than find_cycle
        return None
    cyc = nx.find_cycle(g)
    return [a for a, _ in cyc] + [cyc[0][0]]


class OffloadingPayload(Frozen):
    servers: Items(Server, min_length=1)
    #: distance[i][j] between servers (symmetric not required; zero diagonal)
    distance: Items(Items(NonNegFloat))
    bandwidth: PosFloat = 1.0
    #: seconds a task waits for each of its images that its server does not hold
    image_pull_delay: Duration = 0.0
    workflows: Items(Workflow, min_length=1)

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
        self._check_derived_times()
        return self

    def _check_derived_times(self) -> None:
        """Times computed from the data (execution / speed + image pulls, data x distance /
        bandwidth) lie, like the times given directly, in [TIME_RESOLUTION, MAX_TIME] or are 0
        on every server; and the whole instance's work fits in MAX_HORIZON."""
        slowest = min(srv.speed for srv in self.servers)
        fastest = max(srv.speed for srv in self.servers)
        far = max((max(row) for row in self.distance if row), default=0.0)
        near = min((d for row in self.distance for d in row if d > 0), default=0.0)

        def within(low: float, high: float, field: str, what: str) -> float:
            _check(high <= MAX_TIME, field, f"{what} takes up to {high:.3g} s, above the limit of {MAX_TIME:g} s")
            _check(low == 0 or low >= TIME_RESOLUTION, field,
                   f"{what} takes {low:.3g} s, below the time resolution {TIME_RESOLUTION:g} s (use 0)")
            return high

        total = max(wf.arrival for wf in self.workflows)
        for w, wf in enumerate(self.workflows):
            for t, task in enumerate(wf.tasks):
                if wf.exec_times is None:
                    work = sum(f.exec_time for f in task.functions)
                    pulls = len({f.image for f in task.functions}) * self.image_pull_delay
                    total += within(work / fastest, work / slowest + pulls, f"workflows[{w}].tasks[{t}].functions",
                                    "the task's execution")
                else:
                    total += max(wf.exec_times[t], default=0.0)
                total += within(task.input_data * near / self.bandwidth, task.input_data * far / self.bandwidth,
                                f"workflows[{w}].tasks[{t}].input_data", "fetching the input")
            for k, e in enumerate(wf.edges):
                if e.cost is None:
                    total += within(e.data * near / self.bandwidth, e.data * far / self.bandwidth,
                                    f"workflows[{w}].edges[{k}].data", "the transfer")
                else:
                    total += e.cost
        _check(total <= MAX_HORIZON, "workflows",
               f"arrivals plus all the work take up to {total:.3g} s, above the limit of {MAX_HORIZON:g} s")


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


#: text that is printed: no C0 / C1 control character (ESC, BEL, ...) and no DEL
PRINTABLE = r"^[^\x00-\x1f\x7f-\x9f]+$"
PRINTABLE_OR_EMPTY = r"^[^\x00-\x1f\x7f-\x9f]*$"


class Instance(Frozen):
    format_version: Literal[1] = FORMAT_VERSION
    family: Literal["placement", "mapping", "offloading"]
    #: no control characters (issue 28: ids printed raw sent terminal escapes)
    id: str = Field(min_length=1, max_length=200, pattern=PRINTABLE)
    name: str = Field("", pattern=PRINTABLE_OR_EMPTY)
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
