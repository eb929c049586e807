"""The ``random`` baseline: one seeded random policy per family.

It is the floor every other solver is compared against, and the solver the CLI's ``demo``
runs. Each family is solved in three steps — build a model of the instance (precomputed
data), solve it (a seeded simulation that draws random choices), decode the raw result into
the family's decisions model — and every derived quantity (durations, routes, transfer
times, bandwidth levels) comes from :mod:`edgebench.instances.semantics`.

* placement: the online simulator :mod:`edgebench.solvers.placement_sim` driven by
  :class:`~edgebench.solvers.placement_baselines.RandomPolicy`. Arriving tasks join the
  queues of their eligible clusters; at each step the clusters, in random order, start a
  random task of their pending set (the ``pending_size`` earliest waiting tasks of their
  queue, taken at the beginning of the step) with a random allocation among
  ``semantics.allocation_options`` that fits the free capacity and lets the task finish —
  one start per cluster per step in variant "single", rounds of one start per cluster until
  nobody can start more in variant "multi" (``rounds="authors"``: the TapFinger authors' step
  loop, see :class:`~edgebench.solvers.placement_baselines.RandomPolicy`). The allocation
  is fixed for the task's life and its duration is ``semantics.fixed_run_steps`` (noise
  included). Steps in which nothing can
  start are skipped up to the next arrival or completion.
* mapping: jobs in arrival order, each at the time the previous one started or later: a
  random node per task node among the nodes with enough free CPU/RAM, canonical routes, a
  random bandwidth level clipped to the free bandwidth along the route (never below
  ``bw_min``); up to ``attempts`` tries, else the job waits until running jobs release
  resources. A job that even the empty network cannot host makes the result "infeasible".
* offloading: workflows by arrival; a random topological order per workflow; a random
  server among those that can host the task; the earliest start that respects precedence,
  transfer and input times and the servers' CPU/memory over time.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgebench.errors import InputError
from edgebench.instances import semantics
from edgebench.instances.model import Instance, MappingPayload, OffloadingPayload, PlacementPayload
from edgebench.instances.timeline import Timeline
from edgebench.registry import Result, make_result, register
from edgebench.solution import (
    JobDecision,
    LinkDecision,
    MappingDecisions,
    OffloadingDecisions,
    PlacementDecisions,
    TaskSchedule,
    WorkflowDecision,
)
from edgebench.solvers.placement_baselines import RandomPolicy, runnable_clusters
from edgebench.solvers.placement_sim import PlacementSim, SimTimeout, run_policy

NAME = "random"
#: mapping: random tries per job and resource state before the job waits
DEFAULT_ATTEMPTS = 200
#: resources are compared with this slack (the referee allows 1e-6 absolute + relative)
EPS = 1e-9

#: placement: how the clusters start tasks within a step (RandomPolicy)
ROUNDS = ("pack", "authors")
PARAMS = {
    "attempts": f"int >= 1, default {DEFAULT_ATTEMPTS}: mapping only, random tries per job before it waits",
    "rounds": "placement only: 'pack' (default: clusters in random order start random tasks until nothing fits) "
              "or 'authors' (the TapFinger authors' step loop: clusters in index order draw one pending task "
              "each per pass, conflicts and a drawn void allocation start nothing, a step ends after a pass "
              "that starts nothing; docs/calibration.md)",
}


class _Timeout(Exception):
    """Raised inside a simulation when the time limit has passed."""


def _check_time(deadline: float | None) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise _Timeout


def _parse_params(params: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"attempts": DEFAULT_ATTEMPTS, "rounds": ROUNDS[0]}
    for key, value in params.items():
        if key not in PARAMS:
            raise InputError(f"unknown parameter of solver {NAME!r} (known: {', '.join(PARAMS)})",
                             field=f"params.{key}")
        if key == "rounds":
            if value not in ROUNDS:
                raise InputError(f"must be 'pack' or 'authors', got {value!r}", field=f"params.{key}")
        elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"must be an integer >= 1, got {value!r}", field=f"params.{key}")
        out[key] = value
    return out


@register(NAME, families=("placement", "mapping", "offloading"), kind="heuristic",
          description="Seeded random policy: random task/node/server and random valid allocation or bandwidth",
          params=PARAMS, check=_parse_params)
def solve(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    """Seeded random baseline for every family (see the module docstring)."""
    started = time.perf_counter()
    opts = _parse_params(params)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"the seed must be a non-negative integer, got {seed!r}", field="seed")
    rng = np.random.default_rng(seed)
    deadline = None if time_limit is None else started + float(time_limit)
    family = instance.family
    try:
        if family == "placement":
            pm = build_placement(instance.placement)
            raw = solve_placement(pm, rng, deadline, rounds=opts["rounds"])
            if raw is None:
                return make_result(instance, NAME, status="infeasible", seed=seed, params=params,
                                   started=started, stats={"reason": pm.unrunnable_reason()})
            decisions, objective = decode_placement(pm, raw)
        elif family == "mapping":
            mm = build_mapping(instance.mapping)
            raw = solve_mapping(mm, rng, deadline, attempts=opts["attempts"])
            if isinstance(raw, str):
                return make_result(instance, NAME, status="infeasible", seed=seed, params=params,
                                   started=started, stats={"reason": raw})
            decisions, mean_wait = decode_mapping(mm, raw)
            # the composite objective is the referee's to compute; the simulation knows the waits
            return make_result(instance, NAME, status="feasible", decisions=decisions, seed=seed,
                               params=params, started=started, stats={"mean_wait": mean_wait})
        elif family == "offloading":
            om = build_offloading(instance.offloading)
            raw = solve_offloading(om, rng, deadline)
            decisions, objective = decode_offloading(om, raw)
        else:  # pragma: no cover - the instance model admits only the three families
            raise InputError(f"unsupported family {family!r}", field="family")
    except _Timeout:
        return make_result(instance, NAME, status="timeout", seed=seed, params=params, started=started,
                           stats={"time_limit": time_limit})
    return make_result(instance, NAME, status="feasible", decisions=decisions, seed=seed, params=params,
                       objective=objective, started=started)


# ======================================================================================
# Placement
# ======================================================================================


@dataclass
class PlacementModel:
    """The simulator of the episode and, per task, the eligible clusters on which it can
    finish (the performance models are monotone in the allocation: the whole cluster decides)."""

    sim: PlacementSim
    runnable: list[set[int]]

    def unrunnable_reason(self) -> str:
        bad = [j for j, r in enumerate(self.runnable) if not r]
        return f"tasks {bad[:10]} can finish on none of their eligible clusters"


def build_placement(payload: PlacementPayload) -> PlacementModel:
    sim = PlacementSim(payload, record_metrics=False)
    return PlacementModel(sim, runnable_clusters(sim))


def solve_placement(pm: PlacementModel, rng: np.random.Generator, deadline: float | None, *,
                    rounds: str = "pack") -> PlacementSim | None:
    """Run the Random policy on the simulator; None when a task can finish nowhere."""
    if any(not r for r in pm.runnable):
        return None
    try:
        return run_policy(pm.sim, RandomPolicy(rng, pm.runnable, rounds=rounds), deadline=deadline)
    except SimTimeout:
        raise _Timeout from None


def decode_placement(pm: PlacementModel, sim: PlacementSim) -> tuple[PlacementDecisions, float]:
    return sim.decisions(), float(sim.total_completion_time())


# ======================================================================================
# Mapping
# ======================================================================================


@dataclass
class MappingModel:
    payload: MappingPayload
    #: job indices by (arrival, index)
    order: list[int]
    #: free capacities of the empty network (background load taken off)
    cpu0: np.ndarray
    ram0: np.ndarray
    bw0: np.ndarray
    levels: int


def build_mapping(payload: MappingPayload) -> MappingModel:
    jobs = payload.jobs
    order = sorted(range(len(jobs)), key=lambda k: (jobs[k].arrival, k))
    cpu0 = np.array([p.cpu - p.bg_cpu for p in payload.nodes], dtype=float)
    ram0 = np.array([p.ram - p.bg_ram for p in payload.nodes], dtype=float)
    bw0 = np.array([r.bandwidth for r in payload.links], dtype=float)
    return MappingModel(payload, order, cpu0, ram0, bw0, payload.objective.bandwidth_levels)


@dataclass
class _Placed:
    nodes: list[int]
    links: list[tuple[tuple[int, ...], float]]
    cpu: np.ndarray  # usage added by the job
    ram: np.ndarray
    bw: np.ndarray


def _try_map(mm: MappingModel, k: int, cpu: np.ndarray, ram: np.ndarray, bw: np.ndarray,
             rng: np.random.Generator, attempts: int, deadline: float | None) -> _Placed | None:
    payload = mm.payload
    job = payload.jobs[k]
    for _ in range(attempts):
        _check_time(deadline)
        c, r, b = cpu.copy(), ram.copy(), bw.copy()
        nodes: list[int] = []
        for tn in job.tasks:
            cand = np.flatnonzero((c >= tn.cpu - EPS) & (r >= tn.ram - EPS))
            if cand.size == 0:
                break
            p = int(cand[int(rng.integers(cand.size))])
            nodes.append(p)
            c[p] -= tn.cpu
            r[p] -= tn.ram
        if len(nodes) < len(job.tasks):
            continue
        links: list[tuple[tuple[int, ...], float]] = []
        for v in job.links:
            route = semantics.canonical_route(payload, nodes[v.src], nodes[v.dst])
            if route is None:
                break
            if not route:  # co-located: no physical bandwidth, demand fully met
                links.append(((), float(v.bw_max)))
                continue
            level = int(rng.integers(mm.levels))
            want = semantics.bandwidth_level(v.bw_min, v.bw_max, level, mm.levels)
            avail = float(min(b[i] for i in route))
            got = min(want, avail)
            if got < v.bw_min - EPS:
                break
            got = max(got, float(v.bw_min))
            for i in route:
                b[i] -= got
            links.append((tuple(route), got))
        if len(links) < len(job.links):
            continue
        return _Placed(nodes, links, cpu - c, ram - r, bw - b)
    return None


def solve_mapping(mm: MappingModel, rng: np.random.Generator, deadline: float | None, *,
                  attempts: int = DEFAULT_ATTEMPTS) -> dict[int, tuple[float, _Placed]] | str:
    """Returns job -> (start, placement), or a reason string when a job fits not even the
    empty network."""
    jobs = mm.payload.jobs
    active: list[tuple[float, _Placed]] = []  # (end, placement)
    out: dict[int, tuple[float, _Placed]] = {}
    t = 0.0
    for k in mm.order:
        job = jobs[k]
        t = max(t, float(job.arrival))
        empty: _Placed | None | bool = False  # False: not tried yet
        while True:
            active = [(end, pl) for end, pl in active if end > t]
            cpu, ram, bw = mm.cpu0.copy(), mm.ram0.copy(), mm.bw0.copy()
            for _, pl in active:
                cpu -= pl.cpu
                ram -= pl.ram
                bw -= pl.bw
            placed = _try_map(mm, k, cpu, ram, bw, rng, attempts, deadline)
            if placed is None and not active and empty:
                placed = empty  # the network is empty now: reuse the mapping found for it
            if placed is not None:
                break
            if empty is False:
                empty = _try_map(mm, k, mm.cpu0, mm.ram0, mm.bw0, rng, attempts, deadline)
                if empty is None:
                    return (f"job {k} could not be mapped onto the empty network in {attempts} random tries "
                            "(not enough CPU/RAM, unreachable nodes or too little bandwidth)")
            if not active:
                continue  # empty network: the next pass reuses `empty`
            t = min(end for end, _ in active)
        out[k] = (t, placed)
        active.append((t + float(job.duration), placed))
    return out


def decode_mapping(mm: MappingModel, raw: dict[int, tuple[float, _Placed]]) -> tuple[MappingDecisions, float]:
    decisions = []
    waits = []
    for k, job in enumerate(mm.payload.jobs):
        start, pl = raw[k]
        decisions.append(JobDecision(nodes=tuple(pl.nodes),
                                     links=tuple(LinkDecision(route=r, bandwidth=b) for r, b in pl.links),
                                     start=start))
        waits.append(start - job.arrival)
    return MappingDecisions(jobs=tuple(decisions)), float(np.mean(waits)) if waits else 0.0


# ======================================================================================
# Offloading
# ======================================================================================


@dataclass
class OffloadingModel:
    payload: OffloadingPayload
    #: workflow indices by (arrival, index)
    order: list[int]
    #: per workflow, per task: its incoming (edge index, source task)
    preds: list[list[list[tuple[int, int]]]]
    succs: list[list[list[int]]]
    #: per workflow, per task: servers that can host it
    hosts: list[list[list[int]]]


def build_offloading(payload: OffloadingPayload) -> OffloadingModel:
    wfs = payload.workflows
    order = sorted(range(len(wfs)), key=lambda w: (wfs[w].arrival, w))
    preds, succs, hosts = [], [], []
    for w, wf in enumerate(wfs):
        p: list[list[tuple[int, int]]] = [[] for _ in wf.tasks]
        s: list[list[int]] = [[] for _ in wf.tasks]
        for e, edge in enumerate(wf.edges):
            p[edge.dst].append((e, edge.src))
            s[edge.src].append(edge.dst)
        preds.append(p)
        succs.append(s)
        hosts.append([[srv for srv in range(len(payload.servers)) if semantics.can_host(payload, w, t, srv)]
                      for t in range(len(wf.tasks))])
    return OffloadingModel(payload, order, preds, succs, hosts)


def solve_offloading(om: OffloadingModel, rng: np.random.Generator,
                     deadline: float | None) -> dict[tuple[int, int], tuple[int, float, float]]:
    """Returns (workflow, task) -> (server, start, finish)."""
    payload = om.payload
    timeline = Timeline.of(payload)
    out: dict[tuple[int, int], tuple[int, float, float]] = {}
    for w in om.order:
        wf = payload.workflows[w]
        indeg = [len(p) for p in om.preds[w]]
        ready = [t for t in range(len(wf.tasks)) if indeg[t] == 0]
        while ready:
            _check_time(deadline)
            t = ready.pop(int(rng.integers(len(ready))))
            hosts = om.hosts[w][t]
            s = hosts[int(rng.integers(len(hosts)))]
            earliest = float(wf.arrival) + semantics.input_time(payload, w, t, s)
            for e, src in om.preds[w][t]:
                ps, _, pf = out[(w, src)]
                earliest = max(earliest, pf + semantics.transfer_time(payload, w, e, ps, s))
            dur = semantics.task_duration(payload, w, t, s)
            start = timeline.place(s, earliest, dur, *semantics.task_demand(payload, w, t))
            out[(w, t)] = (s, start, start + dur)
            for nxt in om.succs[w][t]:
                indeg[nxt] -= 1
                if indeg[nxt] == 0:
                    ready.append(nxt)
    return out


def decode_offloading(om: OffloadingModel, raw: dict[tuple[int, int], tuple[int, float, float]]
                      ) -> tuple[OffloadingDecisions, float]:
    wfs = []
    spans = []
    for w, wf in enumerate(om.payload.workflows):
        sched = [raw[(w, t)] for t in range(len(wf.tasks))]
        wfs.append(WorkflowDecision(tasks=tuple(TaskSchedule(server=s, start=st) for s, st, _ in sched)))
        spans.append(max(f for _, _, f in sched) - float(wf.arrival))
    objective = float(np.mean(spans)) if spans else 0.0
    return OffloadingDecisions(workflows=tuple(wfs)), objective if math.isfinite(objective) else 0.0
