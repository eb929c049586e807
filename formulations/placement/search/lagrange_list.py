"""A Lagrangian-guided list schedule for the placement problem (``placement-lagrange``, kind
heuristic; issue 23).  Docs: docs/formulations/placement-construction.md.

The bound (4) of :mod:`placement.bounds.lagrange` ends with multipliers (Lam, Mu) under which every
task has a cheapest priced trajectory: a cluster n, a first start s and a completion F (the
classic Lagrangian heuristic / LP-order list schedule of the alpha-point literature for the sum
of completion times).  This module turns them into a referee-feasible fixed-allocation schedule:

* :func:`lagrangian_targets` — per task its :class:`Target` (cluster, first start, completion)
  under the final multipliers (variant multi: no start multipliers, the start is the arrival);
* :func:`list_schedule` — serial list scheduling in the order of the targets' alpha-points
  ``s + alpha (F - s)`` (alpha 0: LP start, 1/2: midpoint, 1: completion; controls: arrival
  order, arrival then shortest first), each task at its earliest feasible start (delayed while
  capacity or, variant single, the one-first-start rule blocks) at the allocation of least
  ``completion + wp * priced cost + wa * area`` among the choices of ``rule`` (:data:`RULES`):
  ``window`` — on the target cluster, the allocation of least resource area whose duration
  fits the priced window ``F - s``, or one using less of every resource; ``cluster`` — the
  target cluster's allocations; ``any`` — every cluster's;
* :func:`construct` — every (order, rule) of :data:`ORDERS` x :data:`RULES`, then ``samples``
  seeded random alpha-point orders (one alpha per task, uniform in [0, 1], Goemans' randomised
  alpha-points) under the best rule so far, while time is left; the best by the referee.

Where the bound's preconditions fail (:func:`placement.bounds.ladder.proof_applies`: additive noise,
a gain of 0 at a task's minimum) there are no multipliers: the construction is then the
control orders (arrival; arrival then shortest) under the rules, with no prices.

Deterministic: the multipliers come from a fixed number of column-generation rounds (no
clock), the fixed orders and rules use no randomness and the random alpha-points are drawn from
``numpy.random.default_rng(seed)``; the time limit only cuts the number of random samples.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgebench.formulations.placement.problem import (
    FIXED_KEY,
    ModelTooLarge,
    Option,
    PlacementData,
    Schedule,
    Profile,
    fixed_rows,
    prepare,
    schedule_objective,
    schedule_violations,
    to_decisions,
)
from edgebench.formulations.placement.bounds.ladder import cluster_durations, proof_applies
from edgebench.formulations.placement.deadline import NEVER, Deadline, Expired
from edgebench.formulations.placement.bounds.lagrange import ROUNDS, SCALE, BoundTooLarge, task_pairs, lagrangian_multipliers, price
from edgebench.referee.placement import evaluate
from edgebench.registry import make_result, register

SOLVER_NAME = "placement-lagrange"
#: the fixed alpha-points: LP start, midpoint, completion
ORDERS = {"start": 0.0, "mid": 0.5, "finish": 1.0, "arrival": -1.0, "short": -2.0}
#: allocation rules (module docstring): name -> (choices, weight of the priced cost, weight of
#: the normalised resource area) added to the completion time of a choice
RULES = {"window": ("window", 0.0, 0.0), "fastest": ("cluster", 0.0, 0.0), "eft": ("any", 0.0, 0.0),
         "priced2": ("any", 2.0, 0.0), "area1": ("any", 0.0, 1.0), "area4": ("any", 0.0, 4.0),
         "area8": ("any", 0.0, 8.0), "area16": ("any", 0.0, 16.0), "p2a4": ("any", 2.0, 4.0),
         "p2a8": ("any", 2.0, 8.0), "w-a4": ("window", 0.0, 4.0), "c-a4": ("cluster", 0.0, 4.0)}
#: seeded random alpha-point orders after the fixed ones (default)
SAMPLES = 8


@dataclass(frozen=True)
class Target:
    """A task's cheapest priced trajectory: cluster, first start, completion (absolute steps)."""

    cluster: int
    start: int
    finish: int


@dataclass(frozen=True)
class Prices:
    """The final multipliers of (4) as floats: Lam (N, 2, H) per cluster, resource (cpu, gpu)
    and step, Mu (N, H) per cluster and first start (None in variant multi); 0 from H on."""

    Lam: np.ndarray
    Mu: np.ndarray | None
    H: int

    def cost(self, o: Option, s: int) -> float:
        """What option o started at s pays: its resources times Lam over [s, s + steps), plus Mu."""
        if s >= self.H:
            return 0.0
        e = min(s + o.steps, self.H)
        c = o.cpu * self.Lam[o.cluster, 0, s:e].sum() + o.gpu * self.Lam[o.cluster, 1, s:e].sum()
        return float(c + (self.Mu[o.cluster, s] if self.Mu is not None else 0.0))


def lagrangian_targets(payload, *, rounds: int = ROUNDS,
                       deadline: Deadline = NEVER) -> tuple[list[Target | None], Prices, int]:
    """(per task its :class:`Target` under the final multipliers of (4), None where the task
    can finish nowhere; the multipliers; their certified value).  Past ``deadline``:
    :class:`.Expired`."""
    durations = cluster_durations(payload)
    value, Lam, Mu, H = lagrangian_multipliers(payload, durations, rounds=rounds, deadline=deadline)
    prices = Prices(Lam / float(1 << SCALE), None if Mu is None else Mu / float(1 << SCALE), H)
    if H == 0:
        return [None] * len(durations), prices, value
    out: list[Target | None] = []
    for row in price(task_pairs(payload, durations, H, deadline), Lam, Mu, H, deadline):
        if not row:
            out.append(None)
            continue
        _, m, s, pr = row[0]
        # variant multi prices no first start: the energy is spread from the arrival on
        out.append(Target(pr.n, pr.a + (s if Mu is not None else 0), pr.a + m))
    return out, prices, value


def _area(data: PlacementData, o: Option) -> float:
    cc, cg, _ = data.capacity[o.cluster]
    return o.steps * (o.cpu / max(cc, 1) + o.gpu / max(cg, 1))


def _choices(data: PlacementData, j: int, t: Target | None, rule: str) -> list[Option]:
    """The options task j may take under ``rule`` (never empty)."""
    opts = data.options[j]
    if t is None or rule == "any":
        return opts
    mine = [o for o in opts if o.cluster == t.cluster] or opts
    if rule == "cluster":
        return mine
    fit = [o for o in mine if o.steps <= t.finish - t.start]
    if not fit:  # the window is at least the cluster's fewest steps; kept for safety
        return mine
    top = min(fit, key=lambda o: (_area(data, o), o.steps, o.cpu, o.gpu))
    return [o for o in mine if o.cpu <= top.cpu and o.gpu <= top.gpu and o.memory <= top.memory]


def list_schedule(data: PlacementData, targets: list[Target | None], prices: Prices, alpha, rule: str,
                  deadline: Deadline = NEVER) -> Schedule:
    """Serial list schedule in the order of the alpha-points (``alpha`` one number or one per
    task); each task at the earliest feasible start of its best choice under ``rule`` (least
    completion, then least area). Feasible by construction (checked by the caller).
    ``deadline``: :class:`.Expired` once it has passed (checked per task)."""
    al = np.broadcast_to(np.asarray(alpha, dtype=float), (data.num_tasks,))

    def key(j):
        t = targets[j]
        if t is None or al[j] < 0:  # alpha -1: arrival order, -2: then shortest first (controls)
            return (float(data.arrivals[j]) + (1e9 if t is None else 0.0),
                    data.min_steps[j] if al[j] < -1 else 0, j)
        return (t.start + al[j] * (t.finish - t.start), t.finish, j)

    choices, wp, wa = RULES[rule]
    prof = Profile(data)
    out: list[tuple[Option, int] | None] = [None] * data.num_tasks
    for j in sorted(range(data.num_tasks), key=key):
        deadline.check("list scheduling")
        best = None
        for o in _choices(data, j, targets[j], choices):
            s = prof.earliest(o, data.arrivals[j])
            area = _area(data, o)
            score = s + o.steps + (wp * prices.cost(o, s) if wp else 0.0) + wa * area
            k = (score, s + o.steps, area, o.cluster, o.cpu, o.gpu)
            if best is None or k < best[0]:
                best = (k, o, s)
        assert best is not None, "every task has an option (validated by the instance model)"
        prof.place(best[1], best[2])
        out[j] = (best[1], best[2])
    return out  # type: ignore[return-value]


def construct(instance, *, seed: int = 0, samples: int = SAMPLES, rounds: int = ROUNDS,
              deadline: Deadline | float | None = None,
              sample_deadline: Deadline | float | None = None) -> tuple[float, Schedule, dict[str, Any]]:
    """(referee value, fixed-allocation schedule, info) of the best list schedule.
    ``deadline`` (:class:`.Deadline` or a ``time.perf_counter()`` value) stops the random samples
    and, once it has passed, every other phase too: the multipliers (then the control orders
    alone, unpriced), the fixed candidates (after the first); ``info["expired"]`` then says what
    was cut.  Without one, or when it is not reached, the result is the same.  Before anything
    else a deadline buys one cheap unpriced candidate (arrival order, earliest finish), returned
    when the time runs out before any other; if even that cannot finish, :class:`.Expired`.
    ``sample_deadline``: an earlier deadline for the random samples alone.
    An instance too large for :func:`.placement.prepare` raises ModelTooLarge."""
    deadline = Deadline.of(deadline)
    payload = instance.placement
    data = prepare(payload, deadline.at)
    if data is None:
        raise Expired("listing the tasks' options")
    no_prices = Prices(np.zeros((data.num_clusters, 2, 0)), None, 0)
    fallback = None
    if deadline.at is not None:  # the cheap candidate: a schedule to return if the time runs out
        sched = list_schedule(data, [None] * data.num_tasks, no_prices, -1.0, "eft", deadline)
        fallback = (float(evaluate(instance, to_decisions(sched)).primary_value), sched, "fallback/eft", "eft")
    t0 = time.process_time()
    orders, rng = dict(ORDERS), np.random.default_rng(seed)
    expired, too_large = None, None
    targets, prices, value = None, no_prices, None
    if proof_applies(payload):
        try:
            targets, prices, value = lagrangian_targets(payload, rounds=rounds, deadline=deadline)
        except Expired as exc:
            expired = str(exc)
        except BoundTooLarge as exc:  # beyond the multipliers' memory budget: as without them
            too_large = str(exc)
    if targets is None:  # additive noise, a gain of 0 at a minimum (no multipliers (4) is defined for), or no time
        targets = [None] * data.num_tasks
        orders, samples = {k: a for k, a in ORDERS.items() if a < 0}, 0  # the control orders alone
    info: dict[str, Any] = {"lagrangian_value": value, "lagrangian_cpu_s": round(time.process_time() - t0, 3),
                            "candidates": {}}
    best = None

    def consider(name, alpha, rule):
        nonlocal best
        sched = list_schedule(data, targets, prices, alpha, rule, deadline)  # no deadline: NEVER
        assert not schedule_violations(data, sched), "list scheduling keeps every rule"
        ev = evaluate(instance, to_decisions(sched))
        assert ev.feasible, ev.violations[:3]
        v = float(ev.primary_value)
        info["candidates"][name] = v
        if best is None or v < best[0]:
            best = (v, sched, name, rule)

    try:
        for rule in RULES:
            for oname, alpha in orders.items():
                if best is not None or fallback is not None:
                    deadline.check("trying the fixed candidates")
                consider(f"{oname}/{rule}", alpha, rule)
    except Expired as exc:
        expired = expired or str(exc)
    if best is None or (expired and fallback is not None and fallback[0] < best[0]):
        best = fallback  # cut short: the cheap candidate when it is better than those that finished
    samples_end = deadline.earlier(sample_deadline)
    try:
        for i in range(int(samples)):
            if samples_end.expired():
                break
            consider(f"random{i}/{best[3]}", rng.random(data.num_tasks), best[3])
    except Expired:  # a sample cut by the time limit (as one not started)
        pass
    if expired:
        info["expired"] = expired
    if too_large:
        info["no_multipliers"] = too_large
    info["chosen"] = best[2]
    info["fixed_objective"] = schedule_objective(data, best[1])
    return best[0], best[1], info


@register(SOLVER_NAME, families=("placement",), kind="heuristic", time_limit=300.0,
          description="Lagrangian-guided list schedule: the cheapest priced trajectories under the final "
                      "multipliers of the Lagrangian bound (4) give each task an order (alpha-points), a cluster "
                      "and an allocation; the best of several list schedules by the referee",
          params={"samples": f"int: seeded random alpha-point orders after the fixed ones (default {SAMPLES}; "
                             "cut by the time limit)",
                  "rounds": f"int: column-generation rounds of the multipliers (default {ROUNDS})"},
          bounds={"samples": (0, None), "rounds": (1, None)})
def solve(instance, *, time_limit: float | None = None, seed: int = 0, samples: int = SAMPLES,
          rounds: int = ROUNDS):
    """The construction as a solver.  The time limit cuts the random samples (status
    ``feasible``) and, once passed, the multipliers' computation and the fixed candidates
    (status ``timeout`` with the best schedule so far, ``stats["expired"]`` says where; no
    schedule when not even the cheap first candidate finished)."""
    t0 = time.perf_counter()
    params = {"samples": samples, "rounds": rounds}
    deadline = Deadline.after(time_limit, t0)
    try:
        value, sched, info = construct(instance, seed=seed, samples=samples, rounds=rounds, deadline=deadline)
    except ModelTooLarge as exc:
        return make_result(instance, SOLVER_NAME, status="error", seed=seed, params=params, started=t0,
                           stats={"message": str(exc)})
    except Expired as exc:
        return make_result(instance, SOLVER_NAME, status="timeout", seed=seed, params=params, started=t0,
                           stats={"message": f"no schedule: {exc}", "expired": str(exc)})
    info[FIXED_KEY] = fixed_rows(sched)
    return make_result(instance, SOLVER_NAME, status="timeout" if info.get("expired") else "feasible",
                       decisions=to_decisions(sched), seed=seed, params=params, objective=value, started=t0,
                       stats=info)


__all__ = ["Target", "lagrangian_targets", "list_schedule", "construct", "solve", "SOLVER_NAME", "ORDERS",
           "RULES", "SAMPLES"]
