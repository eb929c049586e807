"""Event-driven simulator of the offloading family (patent): workflows arrive, an online
policy offloads their tasks onto edge servers or the cloud, tasks run when their data has
arrived and their server has the CPU and memory free.

The simulator is the one execution model of every offloading policy in the suite (the
patent's greedy rule, the value-iteration MDP, HEFT / CPOP / PEFT plans, all-cloud,
nearest-edge). It is deterministic: the only randomness is a policy's own seeded
``numpy.random.Generator``.

Model (every derived quantity from :mod:`edgebench.instances.semantics`):

* **Arrivals.** Workflow ``w`` arrives at ``workflow.arrival`` at its ``workflow.source``
  server (a Poisson stream in preset ``edge-poisson``).
* **Candidates.** A task becomes a *candidate* (the patent's set ``cand``) when all its
  predecessors are *offloaded* (dispatched to a server) — candidate rule ``"dispatched"``,
  the patent's; or when all its predecessors have *finished* — rule ``"finished"``, for
  policies that want to see the resource state when the task can actually run. Entry tasks
  are candidates at the workflow's arrival.
* **Dispatch.** The policy, asked at every event time, returns :class:`Dispatch` decisions
  (workflow, task, server, optional queue priority, optional not-before time) or ``None``
  to wait for the next event. The server must be able to host the task at all
  (``semantics.can_host``).
* **Ready.** A dispatched task is ready at ``max(arrival + input_time, max over incoming
  edges of (finish of the predecessor + transfer_time), not_before)``.
* **Start.** Ready tasks of an edge server start in queue order — ``(priority, dispatch
  sequence)``, priority defaulting to the dispatch sequence (FIFO) — each as soon as the
  server's free CPU and memory hold its ``semantics.task_demand``; a task that does not fit
  does not block the ones behind it (first fit in queue order). The cloud is unbounded: a
  ready task starts there at once. A zero-duration task occupies nothing (as in the
  referee) and starts when ready.
* **Run.** A task occupies its server for ``semantics.task_duration`` (image pulls, then
  execution) and releases its resources at the end.
* **Events** (a ``heapq`` of ``(time, kind, sequence)``): at one time, finishes are handled
  first (resources are released before anything starts), then arrivals, then ready events;
  then the policy dispatches and the servers start what fits.

``simulate(payload_or_instance, policy)`` runs a whole instance and returns a
:class:`SimResult` whose ``decisions`` (server and start of every task) the referee
accepts. The lower-level ``OffloadingSim`` API (``reset`` / ``advance`` / ``candidates`` /
``dispatch`` / ``start_ready``) lets environments step it one decision at a time.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from edgebench.instances import semantics
from edgebench.instances.model import Instance, OffloadingPayload
from edgebench.solution import OffloadingDecisions, TaskSchedule, WorkflowDecision

#: resources are compared with this slack (the referee allows 1e-6 absolute + relative)
EPS = 1e-9

# event kinds, in the order they are handled at equal times
FINISH, ARRIVAL, READY = 0, 1, 2
KIND_NAMES = {FINISH: "finish", ARRIVAL: "arrival", READY: "ready"}

# task states
UNRELEASED, CANDIDATE, DISPATCHED, QUEUED, RUNNING, DONE = range(6)

CANDIDATE_RULES = ("dispatched", "finished")


class SimTimeout(Exception):
    """Raised inside a simulation when the caller's deadline has passed."""


# ======================================================================================
# Static structure of the workflows (shared with the baselines and the MDP)
# ======================================================================================


@dataclass(frozen=True)
class WorkflowGraph:
    """The DAG of one workflow with everything the policies look up often."""

    n: int
    #: per task: its incoming (edge index, source task)
    preds: tuple[tuple[tuple[int, int], ...], ...]
    #: per task: its successor tasks
    succs: tuple[tuple[int, ...], ...]
    #: per task: the servers that can host it (semantics.can_host)
    hosts: tuple[tuple[int, ...], ...]
    #: per task: the servers holding every image of the task (the cloud holds all)
    holders: tuple[frozenset[int], ...]
    #: Kahn's order, smallest ready index first
    topo: tuple[int, ...]
    entries: tuple[int, ...]


def holds_images(payload: OffloadingPayload, w: int, t: int, s: int) -> bool:
    """Whether server s holds every function image of task t (the cloud holds every image)."""
    srv = payload.servers[s]
    if srv.is_cloud:
        return True
    return all(img in srv.images for img in semantics.task_images(payload, w, t))


def workflow_graph(payload: OffloadingPayload, w: int) -> WorkflowGraph:
    wf = payload.workflows[w]
    n = len(wf.tasks)
    preds: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    for e, edge in enumerate(wf.edges):
        preds[edge.dst].append((e, edge.src))
        succs[edge.src].append(edge.dst)
    S = len(payload.servers)
    hosts = tuple(tuple(s for s in range(S) if semantics.can_host(payload, w, t, s)) for t in range(n))
    holders = tuple(frozenset(s for s in range(S) if holds_images(payload, w, t, s)) for t in range(n))
    indeg = [len(p) for p in preds]
    ready = [t for t in range(n) if indeg[t] == 0]
    entries = tuple(ready)
    heapq.heapify(ready)
    topo = []
    while ready:
        t = heapq.heappop(ready)
        topo.append(t)
        for v in succs[t]:
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(ready, v)
    return WorkflowGraph(n, tuple(tuple(p) for p in preds), tuple(tuple(s) for s in succs), hosts, holders,
                         tuple(topo), entries)


_GRAPH_CACHE: dict[int, tuple[OffloadingPayload, tuple[WorkflowGraph, ...]]] = {}


def workflow_graphs(payload: OffloadingPayload) -> tuple[WorkflowGraph, ...]:
    """The graphs of every workflow (cached by payload identity)."""
    hit = _GRAPH_CACHE.get(id(payload))
    if hit is not None and hit[0] is payload:
        return hit[1]
    graphs = tuple(workflow_graph(payload, w) for w in range(len(payload.workflows)))
    if len(_GRAPH_CACHE) > 32:
        _GRAPH_CACHE.pop(next(iter(_GRAPH_CACHE)))
    _GRAPH_CACHE[id(payload)] = (payload, graphs)
    return graphs


def cloud_index(payload: OffloadingPayload) -> int | None:
    """The first cloud server, or None."""
    for s, srv in enumerate(payload.servers):
        if srv.is_cloud:
            return s
    return None


def arrival_order(payload: OffloadingPayload) -> list[int]:
    wfs = payload.workflows
    return sorted(range(len(wfs)), key=lambda w: (wfs[w].arrival, w))


# ======================================================================================
# The simulator
# ======================================================================================


@dataclass(frozen=True)
class Dispatch:
    """Offload task ``task`` of workflow ``workflow`` to ``server``. ``priority`` orders the
    server's queue (smaller first; default: dispatch order); the task does not start before
    ``not_before`` (a planned start)."""

    workflow: int
    task: int
    server: int
    priority: float | None = None
    not_before: float | None = None


@dataclass
class SimResult:
    decisions: OffloadingDecisions
    #: per workflow: max finish - arrival
    makespans: list[float]
    #: server / start / finish per workflow and task
    servers: list[list[int]]
    starts: list[list[float]]
    finishes: list[list[float]]
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def mean_makespan(self) -> float:
        return float(np.mean(self.makespans)) if self.makespans else 0.0


class OffloadingSim:
    """One simulation run (see the module docstring). Typical use::

        sim = OffloadingSim(payload, candidate_rule="dispatched")
        sim.reset()
        while sim.advance() is not None:      # next event time: arrivals, ready, finishes
            ...                               # sim.candidates(), sim.dispatch(...)
            sim.start_ready()

    or simply ``simulate(payload, policy)``.
    """

    def __init__(self, payload: OffloadingPayload, *, candidate_rule: str = "dispatched",
                 deadline: float | None = None) -> None:
        if candidate_rule not in CANDIDATE_RULES:
            raise ValueError(f"candidate_rule must be one of {CANDIDATE_RULES}, got {candidate_rule!r}")
        self.payload = payload
        self.rule = candidate_rule
        self.deadline = deadline
        self.graphs = workflow_graphs(payload)
        self.S = len(payload.servers)
        self.W = len(payload.workflows)
        self.is_cloud = [srv.is_cloud for srv in payload.servers]
        self.cap_cpu = [srv.cpu for srv in payload.servers]
        self.cap_mem = [srv.mem for srv in payload.servers]
        self.demand = [[semantics.task_demand(payload, w, t) for t in range(g.n)] for w, g in enumerate(self.graphs)]
        #: workflows by (arrival, index)
        self.order = arrival_order(payload)
        self._dur_cache: dict[tuple[int, int, int], float] = {}
        self.reset()

    # ---- state -----------------------------------------------------------------------

    def reset(self) -> None:
        p = self.payload
        self.now = 0.0
        self.events = 0
        self.n_dispatches = 0
        self.arrived = [False] * self.W
        self.state = [[UNRELEASED] * g.n for g in self.graphs]
        self.server = [[-1] * g.n for g in self.graphs]
        self.start = [[math.nan] * g.n for g in self.graphs]
        self.finish = [[math.nan] * g.n for g in self.graphs]
        self.priority = [[0.0] * g.n for g in self.graphs]
        self.not_before = [[0.0] * g.n for g in self.graphs]
        self.dseq = [[0] * g.n for g in self.graphs]
        self._n_pred_dispatched = [[0] * g.n for g in self.graphs]
        self._n_pred_finished = [[0] * g.n for g in self.graphs]
        #: per workflow: candidate tasks (sorted lists are built on demand)
        self.cands: list[set[int]] = [set() for _ in range(self.W)]
        #: per server: ready tasks waiting for resources (w, t)
        self.ready: list[list[tuple[int, int]]] = [[] for _ in range(self.S)]
        self.free_cpu = list(self.cap_cpu)
        self.free_mem = list(self.cap_mem)
        self.remaining = sum(g.n for g in self.graphs)
        self._heap: list[tuple[float, int, int, int, int]] = []
        self._seq = 0
        for w, wf in enumerate(p.workflows):
            self._push(float(wf.arrival), ARRIVAL, w, -1)

    def _push(self, t: float, kind: int, w: int, task: int) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, kind, self._seq, w, task))

    @property
    def done(self) -> bool:
        return self.remaining == 0

    def duration(self, w: int, t: int, s: int) -> float:
        key = (w, t, s)
        d = self._dur_cache.get(key)
        if d is None:
            d = semantics.task_duration(self.payload, w, t, s)
            self._dur_cache[key] = d
        return d

    def candidates(self, w: int | None = None) -> list[tuple[int, int]]:
        """Candidate (workflow, task) pairs, by workflow arrival order then task index."""
        if w is not None:
            return [(w, t) for t in sorted(self.cands[w])]
        out = []
        for w2 in self.order:
            if self.cands[w2]:
                out.extend((w2, t) for t in sorted(self.cands[w2]))
        return out

    def first_candidate(self) -> tuple[int, int] | None:
        """The lowest-index candidate of the earliest-arrived workflow that has one."""
        for w in self.order:
            c = self.cands[w]
            if c:
                return w, min(c)
        return None

    def has_candidates(self) -> bool:
        return any(self.cands)

    def offloaded(self, w: int) -> frozenset[int]:
        """The patent's ``comp``: tasks of workflow w already dispatched to a server."""
        return frozenset(t for t, s in enumerate(self.server[w]) if s >= 0)

    # ---- transitions -----------------------------------------------------------------

    def dispatch(self, d: Dispatch) -> None:
        w, t, s = d.workflow, d.task, d.server
        if not (0 <= w < self.W) or t not in self.cands[w]:
            raise ValueError(f"workflow {w} task {t} is not a candidate at time {self.now:g}")
        if not (0 <= s < self.S) or s not in self.graphs[w].hosts[t]:
            raise ValueError(f"server {s} cannot host workflow {w} task {t}")
        self.cands[w].discard(t)
        self.state[w][t] = DISPATCHED
        self.server[w][t] = s
        self.n_dispatches += 1
        self.dseq[w][t] = self.n_dispatches
        self.priority[w][t] = float(d.priority) if d.priority is not None else float(self.n_dispatches)
        self.not_before[w][t] = float(d.not_before) if d.not_before is not None else -math.inf
        g = self.graphs[w]
        if self.rule == "dispatched":
            for c in g.succs[t]:
                self._n_pred_dispatched[w][c] += 1
                if self._n_pred_dispatched[w][c] == len(g.preds[c]):
                    self.state[w][c] = CANDIDATE
                    self.cands[w].add(c)
        if self._n_pred_finished[w][t] == len(g.preds[t]):
            self._schedule_ready(w, t)

    def ready_time(self, w: int, t: int) -> float:
        """When the data of a dispatched task whose predecessors have finished is there."""
        p = self.payload
        s = self.server[w][t]
        r = float(p.workflows[w].arrival) + semantics.input_time(p, w, t, s)
        for e, u in self.graphs[w].preds[t]:
            r = max(r, self.finish[w][u] + semantics.transfer_time(p, w, e, self.server[w][u], s))
        return max(r, self.not_before[w][t])

    def _schedule_ready(self, w: int, t: int) -> None:
        r = self.ready_time(w, t)
        if r <= self.now:
            self._enqueue(w, t)
        else:
            self._push(r, READY, w, t)

    def _enqueue(self, w: int, t: int) -> None:
        self.state[w][t] = QUEUED
        self.ready[self.server[w][t]].append((w, t))

    def advance(self) -> list[int] | None:
        """Handle every event of the next event time; returns the workflows that arrived
        then (possibly none), or None when no event is left."""
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise SimTimeout
        if not self._heap:
            return None
        t0 = self._heap[0][0]
        self.now = max(self.now, t0)
        arrived: list[int] = []
        heap = self._heap
        while heap and heap[0][0] == t0:
            _, kind, _, w, t = heapq.heappop(heap)
            self.events += 1
            if kind == FINISH:
                self._on_finish(w, t)
            elif kind == ARRIVAL:
                self.arrived[w] = True
                for e in self.graphs[w].entries:
                    self.state[w][e] = CANDIDATE
                    self.cands[w].add(e)
                arrived.append(w)
            else:
                self._enqueue(w, t)
        return arrived

    def _on_finish(self, w: int, t: int) -> None:
        self.state[w][t] = DONE
        self.remaining -= 1
        s = self.server[w][t]
        if not self.is_cloud[s] and self.finish[w][t] > self.start[w][t]:
            cpu, mem = self.demand[w][t]
            self.free_cpu[s] += cpu
            self.free_mem[s] += mem
        g = self.graphs[w]
        for c in g.succs[t]:
            self._n_pred_finished[w][c] += 1
            if self._n_pred_finished[w][c] == len(g.preds[c]):
                if self.rule == "finished":
                    self.state[w][c] = CANDIDATE
                    self.cands[w].add(c)
                elif self.server[w][c] >= 0:
                    self._schedule_ready(w, c)

    def start_ready(self) -> int:
        """Start every queued ready task that fits its server now; returns how many started."""
        started = 0
        for s in range(self.S):
            q = self.ready[s]
            if not q:
                continue
            if len(q) > 1:
                q.sort(key=lambda wt: (self.priority[wt[0]][wt[1]], self.dseq[wt[0]][wt[1]]))
            keep = []
            for w, t in q:
                dur = self.duration(w, t, s)
                if self.is_cloud[s] or dur <= 0:
                    self._start(w, t, dur)
                    started += 1
                    continue
                cpu, mem = self.demand[w][t]
                if cpu <= self.free_cpu[s] + EPS and mem <= self.free_mem[s] + EPS:
                    self.free_cpu[s] -= cpu
                    self.free_mem[s] -= mem
                    self._start(w, t, dur)
                    started += 1
                else:
                    keep.append((w, t))
            self.ready[s] = keep
        return started

    def _start(self, w: int, t: int, dur: float) -> None:
        self.state[w][t] = RUNNING
        self.start[w][t] = self.now
        self.finish[w][t] = self.now + dur
        self._push(self.now + dur, FINISH, w, t)

    # ---- output ----------------------------------------------------------------------

    def result(self, stats: dict[str, Any] | None = None) -> SimResult:
        if not self.done:
            raise RuntimeError("the simulation has not finished")
        wfs = []
        spans = []
        for w, wf in enumerate(self.payload.workflows):
            wfs.append(WorkflowDecision(tasks=tuple(TaskSchedule(server=self.server[w][t], start=self.start[w][t])
                                                    for t in range(self.graphs[w].n))))
            spans.append(max(self.finish[w]) - float(wf.arrival))
        st = {"events": self.events, "dispatches": self.n_dispatches, "end_time": self.now}
        st.update(stats or {})
        return SimResult(OffloadingDecisions(workflows=tuple(wfs)), spans,
                         [list(x) for x in self.server], [list(x) for x in self.start],
                         [list(x) for x in self.finish], st)


# ======================================================================================
# Policies
# ======================================================================================


class Policy:
    """An online offloading policy. ``decide`` is called repeatedly at every event time
    while candidates exist; it returns one :class:`Dispatch` or None (wait for the next
    event). ``on_arrival`` is called when a workflow arrives (before ``decide``)."""

    name = "policy"
    candidate_rule = "dispatched"

    def reset(self, sim: OffloadingSim) -> None:  # noqa: B027 - optional hook
        pass

    def on_arrival(self, sim: OffloadingSim, w: int) -> None:  # noqa: B027 - optional hook
        pass

    def decide(self, sim: OffloadingSim) -> Dispatch | None:
        raise NotImplementedError

    def stats(self) -> dict[str, Any]:
        return {}


def simulate(source: OffloadingPayload | Instance, policy: Policy, *, deadline: float | None = None) -> SimResult:
    """Run ``policy`` on every workflow of the instance; raises SimTimeout past ``deadline``
    (a ``time.perf_counter()`` value) and RuntimeError when the policy stalls."""
    payload = source.offloading if isinstance(source, Instance) else source
    if payload is None:
        raise ValueError("not an offloading instance")
    sim = OffloadingSim(payload, candidate_rule=policy.candidate_rule, deadline=deadline)
    policy.reset(sim)
    while True:
        arrived = sim.advance()
        if arrived is None:
            break
        for w in arrived:
            policy.on_arrival(sim, w)
        while sim.has_candidates():
            d = policy.decide(sim)
            if d is None:
                break
            sim.dispatch(d)
        sim.start_ready()
    if not sim.done:
        left = [(w, t) for w in range(sim.W) for t in range(sim.graphs[w].n) if sim.state[w][t] != DONE]
        raise RuntimeError(f"policy {policy.name!r} stalled with {len(left)} tasks unfinished "
                           f"(first: workflow {left[0][0]} task {left[0][1]})")
    return sim.result(policy.stats())


# ---- helpers shared by the patent-style policies ----------------------------------------


def arrival_transfer(sim: OffloadingSim, w: int, t: int, s: int) -> float:
    """The patent's t_trans of task t on server s: the time its inputs need to reach s —
    the largest of the input fetch from the workflow's source (semantics.input_time) and,
    over its incoming edges, semantics.transfer_time from the predecessor's server (every
    predecessor is dispatched, so its server is known)."""
    p = sim.payload
    r = semantics.input_time(p, w, t, s)
    for e, u in sim.graphs[w].preds[t]:
        r = max(r, semantics.transfer_time(p, w, e, sim.server[w][u], s))
    return r


def patent_pool(graph: WorkflowGraph, cands: Iterable[int], current: int) -> list[int]:
    """Step b8.1 of the patent: the candidates whose images the current server holds, or
    all candidates when none does (sorted; the policy draws one uniformly)."""
    cands = sorted(cands)
    pref = [t for t in cands if current in graph.holders[t]]
    return pref or cands


class PatentOrderPolicy(Policy):
    """Base of the policies that follow the patent's procedure: per workflow, the next task
    is drawn uniformly from :func:`patent_pool` of its candidates and the server of the
    previous decision (initially the workflow's source server); subclasses choose the
    server. Workflows are served in arrival order."""

    candidate_rule = "dispatched"

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def reset(self, sim: OffloadingSim) -> None:
        self.current = [wf.source for wf in sim.payload.workflows]
        self.next_task: list[int | None] = [None] * sim.W
        self.n_decisions = 0
        #: (workflow, task, server) in decision order (the patent's result list ``res``)
        self.log: list[tuple[int, int, int]] = []

    def draw_next(self, sim: OffloadingSim, w: int) -> int:
        t = self.next_task[w]
        if t is None or t not in sim.cands[w]:
            pool = patent_pool(sim.graphs[w], sim.cands[w], self.current[w])
            t = pool[int(self.rng.integers(len(pool)))] if len(pool) > 1 else pool[0]
            self.next_task[w] = t
        return t

    def decide(self, sim: OffloadingSim) -> Dispatch | None:
        for w in sim.order:
            if sim.cands[w]:
                t = self.draw_next(sim, w)
                s = self.choose_server(sim, w, t)
                self.current[w] = s
                self.next_task[w] = None
                self.n_decisions += 1
                self.log.append((w, t, s))
                return Dispatch(w, t, s)
        return None

    def choose_server(self, sim: OffloadingSim, w: int, t: int) -> int:
        raise NotImplementedError


class AffinityPolicy(PatentOrderPolicy):
    """The patent's greedy rule (its procedure with a one-step look-ahead): evaluate the
    servers holding the task's images and those lacking them (which pay the image-pull
    delay, part of semantics.task_duration) separately, and take the least
    t_trans + t_exec; ties go to a holder, then to the lowest server index."""

    name = "affinity"

    def choose_server(self, sim: OffloadingSim, w: int, t: int) -> int:
        g = sim.graphs[w]
        best: dict[bool, tuple[float, int]] = {}
        for s in g.hosts[t]:
            cost = arrival_transfer(sim, w, t, s) + sim.duration(w, t, s)
            group = s in g.holders[t]
            if group not in best or cost < best[group][0]:
                best[group] = (cost, s)
        hold, lack = best.get(True), best.get(False)
        if hold is None:
            return lack[1]  # type: ignore[index]
        if lack is None or hold[0] <= lack[0] + 1e-12 * max(1.0, abs(lack[0])):
            return hold[1]
        return lack[1]


class AllCloudPolicy(Policy):
    """Every task on the cloud (the first ``is_cloud`` server)."""

    name = "all-cloud"

    def reset(self, sim: OffloadingSim) -> None:
        c = cloud_index(sim.payload)
        if c is None:
            raise ValueError("the instance has no cloud server")
        self.cloud = c

    def decide(self, sim: OffloadingSim) -> Dispatch | None:
        wt = sim.first_candidate()
        return None if wt is None else Dispatch(wt[0], wt[1], self.cloud)


class NearestEdgePolicy(Policy):
    """Each task on the edge server nearest to its workflow's source (``distance[source][s]``,
    ties to the lowest index; the source itself is at distance 0) among those that can
    host it (capacity); the cloud when no edge server can."""

    name = "nearest-edge"

    def reset(self, sim: OffloadingSim) -> None:
        self.cloud = cloud_index(sim.payload)

    def decide(self, sim: OffloadingSim) -> Dispatch | None:
        wt = sim.first_candidate()
        if wt is None:
            return None
        w, t = wt
        p = sim.payload
        src = p.workflows[w].source
        hosts = sim.graphs[w].hosts[t]
        edge = [s for s in hosts if not sim.is_cloud[s]]
        if edge:
            s = min(edge, key=lambda s: (p.distance[src][s], s))
        else:
            s = hosts[0] if self.cloud is None else self.cloud
        return Dispatch(w, t, s)


class RandomPolicy(Policy):
    """A random candidate on a random hosting server (a seeded floor for the simulator;
    the registered ``random`` solver is the list scheduler of solvers/random_baseline.py)."""

    name = "random-policy"

    def __init__(self, rng: np.random.Generator, candidate_rule: str = "dispatched") -> None:
        self.rng = rng
        self.candidate_rule = candidate_rule

    def decide(self, sim: OffloadingSim) -> Dispatch | None:
        cands = sim.candidates()
        if not cands:
            return None
        w, t = cands[int(self.rng.integers(len(cands)))]
        hosts = sim.graphs[w].hosts[t]
        return Dispatch(w, t, hosts[int(self.rng.integers(len(hosts)))])


class PlanPolicy(Policy):
    """Executes plans: ``planner(sim, w)`` is called when workflow w arrives and returns
    ``{task: (server, start)}``; each candidate is dispatched to its planned server with
    its planned start as priority and not-before time. A feasible, consistent plan is
    reproduced exactly (finishes are handled before starts at equal times)."""

    candidate_rule = "dispatched"

    def __init__(self, name: str, planner) -> None:
        self.name = name
        self.planner = planner

    def reset(self, sim: OffloadingSim) -> None:
        self.plans: dict[int, dict[int, tuple[int, float]]] = {}
        if hasattr(self.planner, "reset"):
            self.planner.reset(sim)

    def on_arrival(self, sim: OffloadingSim, w: int) -> None:
        self.plans[w] = self.planner(sim, w)

    def decide(self, sim: OffloadingSim) -> Dispatch | None:
        wt = sim.first_candidate()
        if wt is None:
            return None
        w, t = wt
        s, st = self.plans[w][t]
        return Dispatch(w, t, s, priority=st, not_before=st)

    def stats(self) -> dict[str, Any]:
        return self.planner.stats() if hasattr(self.planner, "stats") else {}


__all__ = [
    "OffloadingSim", "Dispatch", "SimResult", "SimTimeout", "simulate", "Policy", "PatentOrderPolicy",
    "AffinityPolicy", "AllCloudPolicy", "NearestEdgePolicy", "RandomPolicy", "PlanPolicy", "WorkflowGraph",
    "workflow_graph", "workflow_graphs", "holds_images", "cloud_index", "arrival_order", "arrival_transfer",
    "patent_pool", "CANDIDATE_RULES",
]
