"""The mapping (CES) stream simulator: jobs arrive, wait in a queue, start when a queue
policy admits them and a single-job placement succeeds, run for their duration and release
their resources.

The pieces, usable on their own (the in-process API the queue policies and the single-job
baselines share):

* :class:`NetworkState` — the physical network as the scheduler sees it: capacities,
  background load, the load of the running jobs, an optional resource *reservation*, and
  the observation history some schedulers use (node-utilisation samples and the recent
  node selections, for FlexiTask's load thresholds and "heat").
* :class:`Placement` — one job's node mapping, routes and bandwidths, with the per-node and
  per-link load they add.
* :class:`Scheduler` — "place job k on this network": an in-process placer registered with
  :func:`register_placer` (the baselines of ``mapping_baselines``) or, for any other
  registered mapping solver, a call of that solver on a temporary single-job instance that
  holds the current residual network (:func:`residual_instance`).
* :class:`StreamSim` — the event loop (arrivals, completions, policy wake-ups); a
  :class:`QueuePolicy` decides, at every event, which waiting jobs to try and in which order.
  :func:`simulate` runs one and returns the decisions (with ``start`` per job) and the
  referee's verdict on them.

The queue policies themselves (``fifo``, ``strict-priority``, ``ces-multi``) live in
``mapping_queue``. Every choice is documented in ``docs/mapping-baselines.md``.
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from edgebench.errors import InputError
from edgebench.instances import io, semantics
from edgebench.instances.model import Instance, MappingPayload
from edgebench.solution import JobDecision, LinkDecision, MappingDecisions

#: slack of every capacity comparison inside the simulator (the referee allows 1e-6 absolute
#: plus 1e-6 relative; staying far below it keeps sums over many jobs inside the tolerance)
EPS = 1e-9
#: observation history kept by a NetworkState (samples / selections); schedulers read the tail
HISTORY_LEN = 256


class SimTimeout(Exception):
    """Raised inside a simulation or a placer when the time limit has passed."""


def check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise SimTimeout


# ======================================================================================
# Parameters
# ======================================================================================


def parse_params(solver: str, spec: dict[str, tuple[Any, Callable[[Any], Any]]],
                 params: dict[str, Any]) -> dict[str, Any]:
    """Defaults of ``spec`` (name -> (default, checker)) overridden by ``params``; an unknown
    name or a value the checker rejects raises InputError(field="params.<name>")."""
    out = {k: d for k, (d, _) in spec.items()}
    for key, value in params.items():
        if key not in spec:
            raise InputError(f"unknown parameter of solver {solver!r} (known: {', '.join(sorted(spec)) or 'none'})",
                             field=f"params.{key}")
        try:
            out[key] = spec[key][1](value)
        except (TypeError, ValueError) as exc:
            raise InputError(f"{exc} (got {value!r})", field=f"params.{key}") from None
    return out


def check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"the seed must be a non-negative integer, got {seed!r}", field="seed")
    return int(seed)


# ======================================================================================
# Network state and placements
# ======================================================================================


@dataclass(frozen=True)
class Placement:
    """One job mapped: a physical node per task node, (route, bandwidth) per task link, and
    the load it adds (CPU / RAM per node, bandwidth per physical link)."""

    job: int
    nodes: tuple[int, ...]
    links: tuple[tuple[tuple[int, ...], float], ...]
    cpu: np.ndarray
    ram: np.ndarray
    bw: np.ndarray

    def decision(self, start: float | None = None) -> JobDecision:
        return JobDecision(nodes=self.nodes,
                           links=tuple(LinkDecision(route=r, bandwidth=b) for r, b in self.links),
                           start=start)


def make_placement(payload: MappingPayload, k: int, nodes, links) -> Placement:
    """A Placement of job k from its node list and (route, bandwidth) list; the load arrays
    are computed here (co-located task links load nothing)."""
    job = payload.jobs[k]
    P, R = len(payload.nodes), len(payload.links)
    cpu = np.zeros(P)
    ram = np.zeros(P)
    bw = np.zeros(R)
    for t, p in zip(job.tasks, nodes):
        cpu[p] += t.cpu
        ram[p] += t.ram
    for route, b in links:
        for r in route:
            bw[r] += b
    return Placement(k, tuple(int(p) for p in nodes), tuple((tuple(int(r) for r in rt), float(b)) for rt, b in links),
                     cpu, ram, bw)


def minimum_footprint(payload: MappingPayload, pl: Placement) -> Placement:
    """The same mapping and routes with every non-co-located task link at its bw_min: the
    least a job holds (the CES-Multi reservation)."""
    job = payload.jobs[pl.job]
    links = [(route, float(v.bw_min) if route else float(v.bw_max)) for (route, _), v in zip(pl.links, job.links)]
    return make_placement(payload, pl.job, pl.nodes, links)


class NetworkState:
    """Residual physical network: capacity - background - running jobs - reservation.

    ``history`` holds node-utilisation samples (one per simulator event and per committed
    job; utilisation of a node = max of its CPU and RAM shares held by background, jobs and
    reservation) and ``selections`` the physical nodes chosen by committed placements, in
    order (one entry per task node). Both feed FlexiTask; other schedulers ignore them."""

    def __init__(self, payload: MappingPayload):
        self.payload = payload
        self.cap_cpu = np.array([n.cpu for n in payload.nodes], dtype=float)
        self.cap_ram = np.array([n.ram for n in payload.nodes], dtype=float)
        self.bg_cpu = np.array([n.bg_cpu for n in payload.nodes], dtype=float)
        self.bg_ram = np.array([n.bg_ram for n in payload.nodes], dtype=float)
        self.cap_bw = np.array([lk.bandwidth for lk in payload.links], dtype=float)
        P, R = len(payload.nodes), len(payload.links)
        self.used_cpu = np.zeros(P)
        self.used_ram = np.zeros(P)
        self.used_bw = np.zeros(R)
        self.res_cpu = np.zeros(P)
        self.res_ram = np.zeros(P)
        self.res_bw = np.zeros(R)
        self.history: deque[np.ndarray] = deque(maxlen=HISTORY_LEN)
        self.selections: deque[int] = deque(maxlen=HISTORY_LEN)

    # ---- views ------------------------------------------------------------------------
    @property
    def P(self) -> int:
        return len(self.cap_cpu)

    @property
    def R(self) -> int:
        return len(self.cap_bw)

    def free_cpu(self) -> np.ndarray:
        return np.maximum(self.cap_cpu - self.bg_cpu - self.used_cpu - self.res_cpu, 0.0)

    def free_ram(self) -> np.ndarray:
        return np.maximum(self.cap_ram - self.bg_ram - self.used_ram - self.res_ram, 0.0)

    def free_bw(self) -> np.ndarray:
        return np.maximum(self.cap_bw - self.used_bw - self.res_bw, 0.0)

    def utilisation(self) -> np.ndarray:
        """Per node max(CPU share, RAM share) not free (background + jobs + reservation)."""
        return np.maximum(1.0 - self.free_cpu() / self.cap_cpu, 1.0 - self.free_ram() / self.cap_ram)

    def fits(self, pl: Placement) -> bool:
        """Whether ``pl``'s load fits the free resources (EPS slack)."""
        return bool((pl.cpu <= self.free_cpu() + EPS).all() and (pl.ram <= self.free_ram() + EPS).all()
                    and (pl.bw <= self.free_bw() + EPS).all())

    # ---- changes ----------------------------------------------------------------------
    def record(self) -> None:
        """Append a utilisation sample to the history."""
        self.history.append(self.utilisation())

    def commit(self, pl: Placement) -> None:
        """A job starts: its load is added, its node choices join ``selections``, one sample."""
        self.used_cpu += pl.cpu
        self.used_ram += pl.ram
        self.used_bw += pl.bw
        self.selections.extend(pl.nodes)
        self.record()

    def set_running(self, placements) -> None:
        """Recompute the jobs' load from the running placements (exact zero when none run, so
        additions and subtractions never drift)."""
        self.used_cpu = np.zeros(self.P)
        self.used_ram = np.zeros(self.P)
        self.used_bw = np.zeros(self.R)
        for pl in placements:
            self.used_cpu += pl.cpu
            self.used_ram += pl.ram
            self.used_bw += pl.bw

    def reserve(self, pl: Placement | None) -> None:
        """Hold ``pl``'s load aside (None clears the reservation)."""
        if pl is None:
            self.res_cpu = np.zeros(self.P)
            self.res_ram = np.zeros(self.P)
            self.res_bw = np.zeros(self.R)
        else:
            self.res_cpu, self.res_ram, self.res_bw = pl.cpu.copy(), pl.ram.copy(), pl.bw.copy()

    def without_reservation(self) -> "NetworkState":
        """A copy with the reservation released (history and selections shared read-only)."""
        s = self.copy()
        s.reserve(None)
        return s

    def copy(self) -> "NetworkState":
        s = NetworkState.__new__(NetworkState)
        s.payload = self.payload
        for name in ("cap_cpu", "cap_ram", "bg_cpu", "bg_ram", "cap_bw"):
            setattr(s, name, getattr(self, name))
        for name in ("used_cpu", "used_ram", "used_bw", "res_cpu", "res_ram", "res_bw"):
            setattr(s, name, getattr(self, name).copy())
        s.history = deque(self.history, maxlen=HISTORY_LEN)
        s.selections = deque(self.selections, maxlen=HISTORY_LEN)
        return s


# ======================================================================================
# Schedulers: in-process placers and any registered mapping solver
# ======================================================================================

#: placer(state, k, rng, deadline, **params) -> Placement | None
PlacerFn = Callable[..., "Placement | None"]


@dataclass(frozen=True)
class PlacerInfo:
    name: str
    fn: PlacerFn
    #: parameter spec: name -> (default, checker)
    spec: dict[str, tuple[Any, Callable[[Any], Any]]] = field(default_factory=dict)


PLACERS: dict[str, PlacerInfo] = {}


def register_placer(name: str, spec: dict[str, tuple[Any, Callable[[Any], Any]]] | None = None):
    """Register an in-process single-job placer under the name of its registered solver."""

    def deco(fn: PlacerFn) -> PlacerFn:
        PLACERS[name] = PlacerInfo(name, fn, dict(spec or {}))
        return fn

    return deco


def residual_instance(instance: Instance, state: NetworkState, k: int) -> Instance:
    """A single-job instance holding job k (arrival 0) on the residual network of ``state``:
    every node's background raised by the running jobs' load and the reservation, every
    link's bandwidth cut to what is free. Capacities the format requires to stay positive
    keep a 1e-9 sliver (which no task demand fits)."""
    m = instance.mapping
    assert m is not None
    fc, fr, fb = state.free_cpu(), state.free_ram(), state.free_bw()
    nodes = []
    for p, nd in enumerate(m.nodes):
        c, r = float(nd.cpu), float(nd.ram)
        nodes.append({"name": nd.name, "cpu": c, "ram": r,
                      "bg_cpu": c - max(float(fc[p]), 1e-9 * c), "bg_ram": r - max(float(fr[p]), 1e-9 * r)})
    links = [{"src": lk.src, "dst": lk.dst, "bandwidth": max(float(fb[i]), 1e-9)} for i, lk in enumerate(m.links)]
    job = m.jobs[k].model_dump(mode="json")
    job["arrival"] = 0.0
    data = {"format_version": 1, "family": "mapping", "id": f"{instance.id}-residual-job{k}",
            "name": f"residual network of {instance.id} for job {k}",
            "meta": {"residual_of": instance.id, "job": k},
            "mapping": {"nodes": nodes, "links": links, "jobs": [job],
                        "objective": m.objective.model_dump(mode="json")}}
    return io.instance_from_dict(data)


def fit_bandwidth(payload: MappingPayload, state: NetworkState, pl: Placement) -> Placement | None:
    """``pl`` if it fits the free resources; else, when only bandwidth is over (by rounding
    of an external solver), the extra above bw_min is scaled down on the overloaded links;
    None when it cannot fit (CPU / RAM over, or bw_min itself over)."""
    if state.fits(pl):
        return pl
    if not ((pl.cpu <= state.free_cpu() + EPS).all() and (pl.ram <= state.free_ram() + EPS).all()):
        return None
    job = payload.jobs[pl.job]
    free = state.free_bw()
    links = list(pl.links)
    base = np.zeros(len(free))
    extra = np.zeros(len(free))
    for (route, b), v in zip(links, job.links):
        for r in route:
            base[r] += v.bw_min
            extra[r] += max(b - v.bw_min, 0.0)
    if (base > free + EPS).any():
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(extra > 0, np.clip((free - base - EPS) / extra, 0.0, 1.0), 1.0)
    new = []
    for (route, b), v in zip(links, job.links):
        if route:
            f = min((float(scale[r]) for r in route), default=1.0)
            b = float(v.bw_min) + max(b - v.bw_min, 0.0) * f
        new.append((route, b))
    out = make_placement(payload, pl.job, pl.nodes, new)
    return out if state.fits(out) else None


class Scheduler:
    """The single-job scheduler of a simulation: ``place(state, k)`` returns a Placement of
    job k that fits ``state`` or None.

    In-process placers (registered with :func:`register_placer`) read the state directly;
    any other registered mapping solver is called on :func:`residual_instance` with a seed
    derived from (seed, job, call number) and the remaining time as its limit; its
    decisions are accepted only if they fit the residual network (:func:`fit_bandwidth`)."""

    def __init__(self, instance: Instance, name: str, *, seed: int = 0, params: dict[str, Any] | None = None,
                 deadline: float | None = None):
        from edgebench import registry  # local: the registry imports every solver module

        try:
            info = registry.get(name)  # loads every solver module: their placers register too
        except KeyError as exc:
            raise InputError(str(exc.args[0]), field="params.scheduler") from None
        if "mapping" not in info.families:
            raise InputError(f"solver {name!r} does not support the mapping family", field="params.scheduler")
        self.instance = instance
        self.payload = instance.mapping
        self.name = name
        self.seed = seed
        self.deadline = deadline
        self.calls = 0
        self.failures = 0
        self.placer = PLACERS.get(name)
        params = dict(params or {})
        if self.placer is not None:
            self.params = parse_params(name, self.placer.spec, params)
        else:
            self.params = params
        self.rng = np.random.default_rng([seed, 0x5C4ED])

    def place(self, state: NetworkState, k: int) -> Placement | None:
        check_deadline(self.deadline)
        self.calls += 1
        if self.placer is not None:
            pl = self.placer.fn(state, k, rng=self.rng, deadline=self.deadline, **self.params)
        else:
            pl = self._external(state, k)
        if pl is None:
            self.failures += 1
        return pl

    def _external(self, state: NetworkState, k: int) -> Placement | None:
        from edgebench import registry

        temp = residual_instance(self.instance, state, k)
        sub_seed = int(np.random.SeedSequence([self.seed, k, self.calls]).generate_state(1)[0])
        limit = None if self.deadline is None else max(self.deadline - time.perf_counter(), 0.0)
        res = registry.solve(temp, self.name, time_limit=limit, seed=sub_seed, **self.params)
        sol = res.solution
        if sol.status not in ("optimal", "feasible") or sol.mapping is None:
            if sol.status == "timeout":
                check_deadline(self.deadline)
            return None
        d = sol.mapping.jobs[0]
        pl = make_placement(self.payload, k, d.nodes, [(lk.route, lk.bandwidth) for lk in d.links])
        return fit_bandwidth(self.payload, state, pl)


# ======================================================================================
# The event loop
# ======================================================================================


class QueuePolicy:
    """A queue policy: at every event ``schedule(sim, t)`` tries waiting jobs with
    ``sim.try_start``; ``wakeup(sim, t)`` may ask for an extra event strictly after t."""

    name = "policy"

    def schedule(self, sim: "StreamSim", t: float) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def wakeup(self, sim: "StreamSim", t: float) -> float | None:
        return None

    def stats(self) -> dict[str, Any]:
        return {}


@dataclass
class SimOutcome:
    """What a simulation produced: per job its start and placement (None if never started),
    the reason when some job could not be started, and counters."""

    starts: list[float | None]
    placements: list[Placement | None]
    reason: str | None
    stats: dict[str, Any]

    def decisions(self) -> MappingDecisions | None:
        if self.reason is not None or any(p is None for p in self.placements):
            return None
        return MappingDecisions(jobs=tuple(pl.decision(start=s) for pl, s in zip(self.placements, self.starts)))


class StreamSim:
    """Event-driven stream of the instance's jobs over its physical network.

    At each event time t (an arrival, a completion or a policy wake-up): jobs ending at or
    before t release their resources, jobs arriving at or before t join the queue (arrival
    order, ties by index), a utilisation sample is recorded, then the policy runs. A job
    admitted at t starts at t and runs in [t, t + duration). When nothing runs, no arrival
    and no wake-up is left and jobs still wait, they can never start: the outcome carries the
    reason."""

    def __init__(self, instance: Instance, scheduler: Scheduler, *, deadline: float | None = None):
        if instance.family != "mapping":
            raise InputError(f"the mapping simulator needs a mapping instance, got {instance.family!r}",
                             field="family")
        self.instance = instance
        self.payload: MappingPayload = instance.mapping  # type: ignore[assignment]
        self.scheduler = scheduler
        self.deadline = deadline
        jobs = self.payload.jobs
        self.J = len(jobs)
        self.arrival = [float(j.arrival) for j in jobs]
        self.duration = [float(j.duration) for j in jobs]
        self.priority = [int(j.priority) for j in jobs]
        self.order = sorted(range(self.J), key=lambda k: (self.arrival[k], k))
        self.state = NetworkState(self.payload)
        self.waiting: list[int] = []
        self.running: list[tuple[float, int]] = []  # heap of (end, job)
        self.starts: list[float | None] = [None] * self.J
        self.placements: list[Placement | None] = [None] * self.J
        self.t = 0.0
        self.events = 0
        self.max_queue = 0
        self.fallback_starts = 0
        self._footprints: dict[int, Placement | None] = {}

    # ---- API for policies -------------------------------------------------------------
    def wait(self, k: int) -> float:
        return self.t - self.arrival[k]

    def try_start(self, k: int, *, state: NetworkState | None = None) -> bool:
        """Ask the scheduler to place waiting job k on ``state`` (default: the current state,
        reservation included); on success the job starts now."""
        pl = self.scheduler.place(state if state is not None else self.state, k)
        if pl is None:
            return False
        self.start(k, pl)
        return True

    def start(self, k: int, pl: Placement) -> None:
        check = self.state.without_reservation()
        if not check.fits(pl):  # pragma: no cover - every placer checks against the state
            raise RuntimeError(f"placement of job {k} does not fit the residual network")
        self.waiting.remove(k)
        self.starts[k] = self.t
        self.placements[k] = pl
        self.state.commit(pl)
        heapq.heappush(self.running, (self.t + self.duration[k], k))

    def footprint(self, k: int) -> Placement | None:
        """Job k's minimum footprint: the scheduler's placement of k on the network without
        any job (background only, fresh history), links at bw_min; None if the scheduler
        cannot place k even there. Cached per job."""
        if k not in self._footprints:
            pl = self.scheduler.place(NetworkState(self.payload), k)
            self._footprints[k] = None if pl is None else minimum_footprint(self.payload, pl)
        return self._footprints[k]

    def start_on_footprint(self, k: int) -> bool:
        """Start k on its footprint's nodes and routes when they fit the state without the
        reservation; each task link gets the highest bandwidth level that fits (at least
        bw_min). Used when the scheduler fails although the reserved footprint is free."""
        fp = self.footprint(k)
        state = self.state.without_reservation()
        if fp is None or not state.fits(fp):
            return False
        job = self.payload.jobs[k]
        free = state.free_bw() - fp.bw
        levels = self.payload.objective.bandwidth_levels
        links = []
        for (route, b), v in zip(fp.links, job.links):
            if route:
                room = min(float(free[r]) for r in route)
                a = levels - 1
                while a > 0 and semantics.bandwidth_level(v.bw_min, v.bw_max, a, levels) - v.bw_min > room + EPS:
                    a -= 1
                b = semantics.bandwidth_level(v.bw_min, v.bw_max, a, levels)
                for r in route:
                    free[r] -= b - v.bw_min
            links.append((route, b))
        pl = make_placement(self.payload, k, fp.nodes, links)
        self.fallback_starts += 1
        self.start(k, pl)
        return True

    # ---- loop -------------------------------------------------------------------------
    def run(self, policy: QueuePolicy) -> SimOutcome:
        arrivals = deque(self.order)
        if arrivals:
            self.t = self.arrival[arrivals[0]]
        reason = None
        while arrivals or self.waiting:
            check_deadline(self.deadline)
            t = self.t
            self.events += 1
            ended = False
            while self.running and self.running[0][0] <= t:
                heapq.heappop(self.running)
                ended = True
            if ended:
                self.state.set_running(self.placements[k] for _, k in self.running)
            while arrivals and self.arrival[arrivals[0]] <= t:
                self.waiting.append(arrivals.popleft())
            self.max_queue = max(self.max_queue, len(self.waiting))
            self.state.record()
            if self.waiting:
                policy.schedule(self, t)
            nxt = []
            if arrivals:
                nxt.append(self.arrival[arrivals[0]])
            if self.running:
                nxt.append(self.running[0][0])
            w = policy.wakeup(self, t) if self.waiting else None
            if w is not None and w > t:
                nxt.append(w)
            if not nxt:
                if self.waiting:
                    reason = (f"jobs {sorted(self.waiting)[:10]} can never start: the network is empty of jobs and "
                              f"scheduler {self.scheduler.name!r} cannot place them under policy {policy.name!r}")
                break
            self.t = min(nxt)
        stats = {"events": self.events, "scheduler_calls": self.scheduler.calls,
                 "scheduler_failures": self.scheduler.failures, "max_queue_length": self.max_queue,
                 "fallback_starts": self.fallback_starts}
        stats.update(policy.stats())
        return SimOutcome(list(self.starts), list(self.placements), reason, stats)


def simulate(instance: Instance, policy: QueuePolicy, *, scheduler: str = "flexitask",
             scheduler_params: dict[str, Any] | None = None, seed: int = 0,
             time_limit: float | None = None) -> SimOutcome:
    """Run the stream of ``instance``'s jobs under ``policy`` with the named single-job
    scheduler (any registered mapping solver). Raises SimTimeout past ``time_limit``."""
    seed = check_seed(seed)
    deadline = None if time_limit is None else time.perf_counter() + float(time_limit)
    sched = Scheduler(instance, scheduler, seed=seed, params=scheduler_params, deadline=deadline)
    return StreamSim(instance, sched, deadline=deadline).run(policy)


def referee_stats(instance: Instance, decisions: MappingDecisions) -> tuple[bool, dict[str, Any]]:
    """The referee's verdict and the objectives every mapping solver of this suite reports
    in its stats (the referee's own values: L, D_BW, composite, U_avg, mean and p95 wait)."""
    from edgebench.referee import evaluate_decisions

    ev = evaluate_decisions(instance, decisions)
    keys = ("composite", "L", "D_BW", "U_avg", "mean_wait", "p95_wait")
    out: dict[str, Any] = {k: ev.objectives[k] for k in keys if k in ev.objectives}
    out["referee_feasible"] = ev.feasible
    if not ev.feasible:
        out["violations"] = sorted(ev.constraints())
    return ev.feasible, out


__all__ = ["EPS", "NetworkState", "Placement", "PLACERS", "PlacerInfo", "QueuePolicy", "Scheduler", "SimOutcome",
           "SimTimeout", "StreamSim", "check_deadline", "check_seed", "fit_bandwidth", "make_placement",
           "minimum_footprint", "parse_params", "referee_stats", "register_placer", "residual_instance", "simulate"]
