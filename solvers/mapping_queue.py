"""Multi-job queue policies of the mapping family (CES), run by the stream simulator
``mapping_sim`` on instances with a stream of jobs (e.g. preset ``thesis-queue``):

* ``fifo`` — jobs start in arrival order; the head of the queue blocks everyone behind it.
* ``strict-priority`` — at every event the waiting jobs are tried by decreasing priority
  (ties: arrival, index); a job that does not fit is skipped (work-conserving); no ageing.
* ``ces-multi`` — the thesis's multi-job algorithm (its chapter is empty in the source; only
  the abstract survives, so every rule below is this suite's reading of it):

  - rolling window: the candidates are the first ``window`` waiting jobs in arrival order;
    when a job starts the window rolls on along the queue; a job that failed at this event
    keeps its slot until the next event;
  - resource-aware greedy sorting: the candidate with the best score
    ``w_fit * fit + w_prio * pi + w_wait * omega`` is handed to the single-job scheduler
    (parameter ``scheduler``), then the next best, and so on — with
    ``fit = clip(1 - max(cpu demand / free cpu, ram demand / free ram), 0, 1)`` (totals over
    the network), ``pi = (priority + wait / ageing_time - p_min) / (p_max - p_min + 1)`` (the
    business priority with dynamic ageing: one level per ``ageing_time`` waited) and
    ``omega = wait / (wait + ageing_time)``;
  - starvation protection: a job is *starving* once it has waited its ageing bound
    ``A_j = (p_max - p_j + 1) * ageing_time`` — the wait after which its aged priority is
    above every job's base priority. The starving job flagged first (ties: index) holds a
    minimum resource reservation: its placement on the network without jobs, with every
    task link at bw_min, is held aside; it is tried first at every event, other jobs are
    placed only around the reservation, and it starts at the latest when its reserved
    footprint is free (on the footprint itself if the scheduler fails). Then the next
    starving job takes the reservation.

  Bound (derived in ``docs/mapping-baselines.md``): with ``D_max`` the longest job duration,
  a job j that is starving behind m-1 earlier-flagged waiting jobs starts by
  ``arrival_j + A_j + m * D_max``; alone in the starving queue, within ``A_j + D_max``.

Every policy's solution carries ``start`` per job, is judged by the referee, and reports
the referee's L, D_BW, composite, mean and p95 wait in its stats.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from edgebench.errors import InputError
from edgebench.instances.generators import as_bool, as_float, as_int
from edgebench.instances.model import Instance
from edgebench.registry import Result, make_result, register
from edgebench.solvers.mapping_sim import (
    QueuePolicy,
    SimTimeout,
    StreamSim,
    check_seed,
    parse_params,
    referee_stats,
    simulate,
)

POLICIES = ("fifo", "strict-priority", "ces-multi")
DEFAULT_SCHEDULER = "flexitask"
#: CES-Multi: rolling-window size (jobs)
CES_WINDOW = 8
#: CES-Multi: score weights of resource fit, (aged) business priority, waiting time
CES_WEIGHTS = (0.3, 0.5, 0.2)
#: time tolerance of the starvation flag (a job flagged "at" an event time counts)
TTOL = 1e-9


def _scheduler_name(v: Any) -> str:
    if not isinstance(v, str) or not v:
        raise TypeError("expected the name of a registered mapping solver")
    if v in POLICIES:
        raise ValueError(f"{v!r} is a queue policy; the scheduler must be a single-job mapping solver")
    return v


def _scheduler_params(v: Any) -> dict:
    if not isinstance(v, dict) or not all(isinstance(k, str) for k in v):
        raise TypeError("expected a mapping of parameter names to values")
    taken = sorted(set(v) & {"time_limit", "seed"})
    if taken:  # the queue simulation passes these to the scheduler itself
        raise ValueError(f"{', '.join(taken)} is set by the queue policy, not by scheduler_params")
    return dict(v)


def _weights3(v: Any) -> tuple[float, float, float]:
    if not isinstance(v, (list, tuple)) or len(v) != 3:
        raise TypeError("expected 3 non-negative weights [fit, priority, wait]")
    w = tuple(as_float(0.0, None)(x) for x in v)
    if sum(w) <= 0:
        raise ValueError("the weights must not all be zero")
    return w  # type: ignore[return-value]


def _optional_positive(v: Any) -> float | None:
    if v is None:
        return None
    return as_float(0.0, None, lo_open=True)(v)


COMMON_SPEC = {
    "scheduler": (DEFAULT_SCHEDULER, _scheduler_name),
    "scheduler_params": ({}, _scheduler_params),
}
def _optional_count(v: Any) -> int | None:
    return None if v is None else as_int(1, None)(v)


FIFO_SPEC = dict(COMMON_SPEC, max_running=(None, _optional_count))
CES_SPEC = dict(COMMON_SPEC, **{
    "window": (CES_WINDOW, as_int(1, None)),
    "weights": (CES_WEIGHTS, _weights3),
    "ageing_time": (None, _optional_positive),
    "reservation": (True, as_bool()),
    "backfill": (True, as_bool()),
})
COMMON_PARAMS = {
    "scheduler": f"str, default {DEFAULT_SCHEDULER!r}: the single-job mapping solver that places each job "
                 "(flexitask, smart, greedy-bw in process; any other registered mapping solver on a residual "
                 "instance)",
    "scheduler_params": "dict, default {}: parameters passed to the scheduler",
}
FIFO_PARAMS = dict(COMMON_PARAMS, max_running="int >= 1 or null, default null (no limit): at most this many jobs "
                                              "run at once (1: one job after another, each on the empty network)")
CES_PARAMS = dict(COMMON_PARAMS, **{
    "window": f"int >= 1, default {CES_WINDOW}: rolling-window size (waiting jobs considered per pick)",
    "weights": f"3 floats >= 0, default {list(CES_WEIGHTS)}: score weights of resource fit, aged priority, wait",
    "ageing_time": "float > 0, default: the instance's mean job duration: wait that raises a job's priority by one "
                   "level",
    "reservation": "bool, default true: minimum resource reservation for the first starving job",
    "backfill": "bool, default true: a job may use reserved resources if it ends before every job running at "
                "reservation time has ended (EASY backfilling; keeps the starvation bound)",
})


# ======================================================================================
# Policies
# ======================================================================================


class Fifo(QueuePolicy):
    """Arrival order with head-of-line blocking; at most ``max_running`` jobs at once (None: no
    limit)."""

    name = "fifo"

    def __init__(self, max_running: int | None = None):
        self.max_running = max_running

    def schedule(self, sim: StreamSim, t: float) -> None:
        while sim.waiting and (self.max_running is None or len(sim.running) < self.max_running) \
                and sim.try_start(sim.waiting[0]):
            pass


class StrictPriority(QueuePolicy):
    """Highest priority first (ties: arrival, index), skipping jobs that do not fit; no ageing."""

    name = "strict-priority"

    def schedule(self, sim: StreamSim, t: float) -> None:
        for k in sorted(sim.waiting, key=lambda j: (-sim.priority[j], sim.arrival[j], j)):
            sim.try_start(k)


class CESMulti(QueuePolicy):
    """CES-Multi (see the module docstring)."""

    name = "ces-multi"

    def __init__(self, sim: StreamSim, *, window: int = CES_WINDOW, weights=CES_WEIGHTS,
                 ageing_time: float | None = None, reservation: bool = True, backfill: bool = True):
        jobs = sim.payload.jobs
        self.window = window
        self.w_fit, self.w_prio, self.w_wait = weights
        self.tau = float(ageing_time) if ageing_time is not None else float(np.mean(sim.duration))
        self.p_min = min(sim.priority)
        self.p_max = max(sim.priority)
        self.span = self.p_max - self.p_min + 1
        #: ageing bound A_j and the time j becomes starving
        self.bound = [(self.p_max - p + 1) * self.tau for p in sim.priority]
        self.flag = [a + b for a, b in zip(sim.arrival, self.bound)]
        self.reservation = reservation
        self.holder: int | None = None
        #: every job running when the holder got the reservation has ended by this time
        self.shadow = -np.inf
        self.backfill = backfill
        self.hopeless: set[int] = set()
        self.dem_cpu = [sum(t.cpu for t in j.tasks) for j in jobs]
        self.dem_ram = [sum(t.ram for t in j.tasks) for j in jobs]
        self.reservations = 0
        self.reserved_starts = 0
        self.window_starts = 0
        self.backfill_starts = 0

    def score(self, sim: StreamSim, k: int, free_cpu: float, free_ram: float) -> float:
        wait = sim.wait(k)
        share = max(self.dem_cpu[k] / free_cpu if free_cpu > 0 else np.inf,
                    self.dem_ram[k] / free_ram if free_ram > 0 else np.inf)
        fit = min(max(1.0 - share, 0.0), 1.0)
        pi = (sim.priority[k] + wait / self.tau - self.p_min) / self.span
        omega = wait / (wait + self.tau)
        return self.w_fit * fit + self.w_prio * pi + self.w_wait * omega

    def _protect(self, sim: StreamSim, t: float) -> None:
        """Give the reservation to the first starving job and start holders while they fit."""
        while True:
            if self.holder is None:
                starving = [k for k in sim.waiting if t >= self.flag[k] - TTOL and k not in self.hopeless]
                if not starving:
                    return
                k = min(starving, key=lambda j: (self.flag[j], j))
                fp = sim.footprint(k)
                if fp is None:  # the scheduler cannot place k even on the network without jobs
                    self.hopeless.add(k)
                    continue
                self.holder = k
                self.reservations += 1
                self.shadow = max((end for end, _ in sim.running), default=t)
                sim.state.reserve(fp)
            h = self.holder
            if sim.try_start(h, state=sim.state.without_reservation()) or sim.start_on_footprint(h):
                self.reserved_starts += 1
                self.holder = None
                sim.state.reserve(None)
                continue
            return

    def schedule(self, sim: StreamSim, t: float) -> None:
        if self.reservation:
            self._protect(sim, t)
        failed: set[int] = set()
        while True:
            window = [k for k in sim.waiting if k != self.holder][:self.window]
            cands = [k for k in window if k not in failed]
            if not cands:
                return
            fc = float(sim.state.free_cpu().sum())
            fr = float(sim.state.free_ram().sum())
            best = max(cands, key=lambda k: (self.score(sim, k, fc, fr), -sim.arrival[k], -k))
            if sim.try_start(best):
                self.window_starts += 1
            elif (self.holder is not None and self.backfill and t + sim.duration[best] <= self.shadow
                  and sim.try_start(best, state=sim.state.without_reservation())):
                # EASY backfilling: it ends before the reserved footprint is due to be free
                self.window_starts += 1
                self.backfill_starts += 1
            else:
                failed.add(best)

    def wakeup(self, sim: StreamSim, t: float) -> float | None:
        if not self.reservation:
            return None
        future = [self.flag[k] for k in sim.waiting if self.flag[k] > t + TTOL and k not in self.hopeless]
        return min(future) if future else None

    def stats(self) -> dict[str, Any]:
        return {"ageing_time": self.tau, "ageing_bound": list(self.bound), "reservations": self.reservations,
                "reserved_starts": self.reserved_starts, "window_starts": self.window_starts,
                "backfill_starts": self.backfill_starts}


# ======================================================================================
# Registered solvers
# ======================================================================================


def run_policy(instance: Instance, policy: str, *, seed: int = 0, time_limit: float | None = None,
               **params: Any):
    """Simulate ``instance``'s job stream under the named policy; returns the SimOutcome
    (raises SimTimeout past the limit, InputError on bad parameters)."""
    if policy not in POLICIES:
        raise InputError(f"unknown queue policy {policy!r} (known: {', '.join(POLICIES)})", field="policy")
    if instance.family != "mapping":
        raise InputError(f"queue policies need a mapping instance, got {instance.family!r}", field="family")
    spec = {"ces-multi": CES_SPEC, "fifo": FIFO_SPEC}.get(policy, COMMON_SPEC)
    opts = parse_params(policy, spec, params)
    scheduler, sched_params = opts.pop("scheduler"), opts.pop("scheduler_params")

    def make(sim: StreamSim) -> QueuePolicy:
        if policy == "fifo":
            return Fifo(opts.get("max_running"))
        if policy == "strict-priority":
            return StrictPriority()
        return CESMulti(sim, **opts)

    return simulate(instance, _Deferred(policy, make), scheduler=scheduler, scheduler_params=sched_params, seed=seed,
                    time_limit=time_limit)


class _Deferred(QueuePolicy):
    """A policy built from the simulator on its first call (CES-Multi reads the job list)."""

    def __init__(self, name: str, make):
        self.name = name
        self._make = make
        self._policy: QueuePolicy | None = None

    def _get(self, sim: StreamSim) -> QueuePolicy:
        if self._policy is None:
            self._policy = self._make(sim)
        return self._policy

    def schedule(self, sim: StreamSim, t: float) -> None:
        self._get(sim).schedule(sim, t)

    def wakeup(self, sim: StreamSim, t: float) -> float | None:
        return self._get(sim).wakeup(sim, t)

    def stats(self) -> dict[str, Any]:
        return self._policy.stats() if self._policy is not None else {}


def _solve(policy: str, instance: Instance, time_limit: float | None, seed: int, params: dict[str, Any]) -> Result:
    started = time.perf_counter()
    seed = check_seed(seed)
    try:
        out = run_policy(instance, policy, seed=seed, time_limit=time_limit, **params)
    except SimTimeout:
        return make_result(instance, policy, status="timeout", seed=seed, params=params, started=started,
                           stats={"time_limit": time_limit})
    decisions = out.decisions()
    if decisions is None:
        return make_result(instance, policy, status="infeasible", seed=seed, params=params, started=started,
                           stats=dict(out.stats, reason=out.reason))
    feasible, ref = referee_stats(instance, decisions)
    stats = dict(out.stats, **ref)
    return make_result(instance, policy, status="feasible" if feasible else "error", decisions=decisions, seed=seed,
                       params=params, objective=ref.get("composite"), started=started, stats=stats)


@register("fifo", families=("mapping",), kind="heuristic",
          description="Job queue in arrival order with head-of-line blocking; each job placed by a single-job "
                      "scheduler in the stream simulator",
          params=FIFO_PARAMS, check=lambda p: parse_params("fifo", FIFO_SPEC, p))
def solve_fifo(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    """FIFO queue policy (see the module docstring)."""
    return _solve("fifo", instance, time_limit, seed, params)


@register("strict-priority", families=("mapping",), kind="heuristic",
          description="Job queue by strict priority (skip what does not fit, no ageing) in the stream simulator",
          params=COMMON_PARAMS, check=lambda p: parse_params("strict-priority", COMMON_SPEC, p))
def solve_strict_priority(instance: Instance, *, time_limit: float | None = None, seed: int = 0,
                          **params: Any) -> Result:
    """Strict-priority queue policy (see the module docstring)."""
    return _solve("strict-priority", instance, time_limit, seed, params)


@register("ces-multi", families=("mapping",), kind="heuristic",
          description="CES-Multi: rolling window, resource-fit / priority / wait score, priority ageing and a "
                      "minimum reservation for the first starving job, in the stream simulator",
          params=CES_PARAMS, check=lambda p: parse_params("ces-multi", CES_SPEC, p))
def solve_ces_multi(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    """CES-Multi queue policy (see the module docstring)."""
    return _solve("ces-multi", instance, time_limit, seed, params)


__all__ = ["CESMulti", "Fifo", "POLICIES", "StrictPriority", "run_policy"]
