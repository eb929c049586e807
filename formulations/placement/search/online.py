"""Online (non-clairvoyant) placement by the LNS: plans on what is known at a step t only
(``placement-lns-online``; issue 42, session 22). Docs: docs/formulations/placement-search.md,
"Online rolling-horizon LNS".

:func:`known_instance` is the instance of the tasks that arrived by t (those started before t and
those pending at t; no task with arrival > t), built with the instance model's validated
constructors; :func:`myopic_from_state` solves it with the frozen LNS (the tasks started before t
kept, nothing else before t) and scores it with the referee on that instance. Its plan is only
meaningful until new information arrives, at :func:`next_arrival`.

* :func:`rolling_horizon` (the solver ``placement-lns-online``): from the first arrival, plan at
  every arrival step t, commit the plan's starts before the next arrival, move to it; at the
  last arrival the whole plan is committed. No decision uses a task before its arrival, so the
  schedule is one an online scheduler could have made (the run times are the performance
  model's, as Optimus and TapFinger use them). What the clairvoyant ``placement-lns`` is to
  the best knowns, this is to online scheduling: a level an online policy can reach.
* DAgger's myopic expert (``--dagger-expert placement-lns-myopic``, ``learned/train_tapfinger.py``)
  is :func:`myopic_from_state` on a student's state.

Also the helpers the LNS continuations share: :func:`started_option` (the option of a task as
started), :func:`continuation_start` (the better of a given schedule and the list-scheduling
completion of the prefix) and :func:`referee_value`.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from edgebench.formulations.placement import problem as pm
from edgebench.formulations.placement.search import lns
from edgebench.instances import semantics
from edgebench.instances.model import Instance, PlacementPayload
from edgebench.referee import evaluate_decisions
from edgebench.registry import make_result, register

SOLVER_NAME = "placement-lns-online"
#: LNS neighbourhoods per plan (a count, not seconds: the same schedule on any machine)
PLAN_ITERATIONS = 4

def started_option(payload, data, j: int, n: int, c: int, g: int):
    """The placement option of task j started on cluster n at (c, g) (its memory demand there and
    its run time at that allocation; need not be a dominant option); ValueError when it never
    finishes."""
    task = payload.tasks[j]
    mem = task.minimum.memory if (task.minimum.memory is not None and data.capacity[n][2] is not None) else 0
    d = semantics.fixed_run_steps(payload, j, c, g)
    if d is None:
        raise ValueError(f"task {j} never finishes at ({c}, {g})")
    return pm.Option(int(n), int(c), int(g), int(mem or 0), int(d))


def continuation_start(data, fixed: list, t: int, student: list | None = None) -> tuple[list, str]:
    """The LNS continuation's start: ``fixed`` holds (option, start) for the prefix tasks (started
    before ``t``) and None for the others; the list-scheduling completion of the prefix
    (:func:`placement.repair_schedule`, arrivals shifted to max(arrival, t)) against the
    student's complete schedule ``student`` (None: none is feasible), by ``schedule_objective``
    on ``data``; the student's on a tie. Returns (schedule, "student" or "list")."""
    shifted = dataclasses.replace(data, arrivals=[a if fixed[j] is not None else max(a, t)
                                                  for j, a in enumerate(data.arrivals)])
    listed = pm.repair_schedule(shifted, fixed)
    if student is None or pm.schedule_objective(data, listed) < pm.schedule_objective(data, student):
        return listed, "list"
    return student, "student"


def referee_value(instance, schedule) -> float | None:
    """The referee's total completion time of a fixed-allocation schedule on ``instance`` (None
    when the referee rejects it)."""
    ev = evaluate_decisions(instance, pm.to_decisions(schedule))
    return float(ev.objectives["total_completion_time"]) if ev.feasible else None


def known_tasks(instance, t: int) -> list[int]:
    """The tasks known at step t: arrival <= t (every task started before t and every task
    pending at t; a task arriving at t is in the state of step t)."""
    return [j for j, task in enumerate(instance.placement.tasks) if task.arrival <= t]


def next_arrival(instance, t: int) -> int | None:
    """The first arrival step after t (None: no task arrives after t)."""
    later = [task.arrival for task in instance.placement.tasks if task.arrival > t]
    return min(later) if later else None


def known_instance(instance, t: int) -> Instance:
    """The instance of what is known at step t: the tasks of :func:`known_tasks`, everything else
    (clusters, performance, noise, pending window, variant) unchanged, validated by the instance
    model (``PlacementPayload``, ``Instance``). The known tasks must be the first K of the task
    order (the generators list tasks by arrival): a task's noise is drawn from its index, so
    renumbering would change its run times; ValueError otherwise, or when no task is known."""
    known = known_tasks(instance, t)
    if not known:
        raise ValueError(f"no task has arrived by step {t}")
    if known != list(range(len(known))):
        raise ValueError(f"the tasks known at step {t} are not the first {len(known)} of the task order "
                         f"(task {next(j for j in range(len(known)) if j not in known)} arrives later)")
    payload = instance.placement
    fields = {name: getattr(payload, name) for name in type(payload).model_fields}
    fields["tasks"] = tuple(payload.tasks[:len(known)])
    part = PlacementPayload.model_validate(fields)
    return Instance(family="placement", id=f"{instance.id[:180]}@known-{t}", name=instance.name,
                    meta={"known_at": int(t), "of": instance.id, "tasks": len(known)}, placement=part)


def myopic_from_state(instance, started: dict[int, tuple[int, int, int, int]], t: int, *,
                      time_limit: float | None = 1.0, seed: int = 0,
                      iterations: int | None = None) -> dict[str, Any]:
    """The myopic expert's plan at step ``t`` of a student's episode on ``instance``.
    ``started``: the student's starts {task: (cluster, start, cpu, gpu)} (:func:`student_states`
    at the episode's end, or any superset of its tasks started before t). On
    :func:`known_instance` (K tasks): the tasks started before t (the prefix) keep cluster, start
    and allocation, every other known task starts at t or later; the frozen LNS
    (:func:`placement.search.lns.improve` with ``frozen`` = the prefix, ``not_before`` = t; the
    classic moves, one thread, seeded, ``time_limit`` seconds or ``iterations`` neighbourhoods)
    starts from :func:`continuation_start`: the student's own choices for the known tasks when it
    started all of them (always a feasible schedule of the known instance, checked), else the
    list-scheduling completion of the prefix. The better, by the referee on the known instance, of
    the search's result and its start is returned: {"status" ("improved" or "start"), "objective",
    "tasks" (K entries, task j of the known instance is task j of ``instance``), "student_objective"
    (the referee's value of the student's choices on the known instance; None when they are not a
    complete feasible start), "start" ("student" or "list"), "start_objective", "neighbourhoods",
    "known" (K), "prefix" (tasks started before t), "t", "next_arrival"}."""
    known = known_instance(instance, t)
    payload = known.placement
    data = pm.prepare(payload)
    K = data.num_tasks
    prefix = {j for j, v in started.items() if v[1] < t}
    if any(j >= K for j in prefix):
        raise ValueError(f"task {max(prefix)} started before {t} but has not arrived by then")
    own = {j: (started_option(payload, data, j, n, c, g), int(s)) for j, (n, s, c, g) in started.items() if j < K}
    # the student's allocations need not be dominant options: listed for the checks and the hint
    data = dataclasses.replace(data, options=[o if j not in own or own[j][0] in o else o + [own[j][0]]
                                              for j, o in enumerate(data.options)])
    student = [own[j] for j in range(K)] if len(own) == K else None
    if student is not None and pm.schedule_violations(data, student):
        student = None
    fixed = [own[j] if j in prefix else None for j in range(K)]
    start, source = continuation_start(data, fixed, t, student)
    deadline = None if time_limit is None else time.perf_counter() + float(time_limit)
    sched, info = lns.improve(data, start, seed=seed, deadline=deadline, iterations=iterations,
                              types=[x.type for x in payload.tasks], frozen=prefix, not_before=t)
    first = referee_value(known, start)
    if first is None:
        raise ValueError(f"the referee rejects the continuation's start ({source}) on the known instance")
    val = referee_value(known, sched)
    best, status, value = start, "start", first
    if val is not None and val < first:
        best, status, value = sched, "improved", val
    return {"status": status, "objective": value, "tasks": [(o.cluster, s, o.cpu, o.gpu) for o, s in best],
            "student_objective": None if student is None else referee_value(known, student), "start": source,
            "start_objective": first, "neighbourhoods": info["neighbourhoods"], "known": K,
            "prefix": len(prefix), "t": int(t), "next_arrival": next_arrival(instance, t)}


def rolling_horizon(instance, *, iterations: int = PLAN_ITERATIONS, seed: int = 0,
                    deadline: float | None = None) -> tuple[dict[int, tuple[int, int, int, int]], dict[str, Any]]:
    """The online schedule of ``instance``: {task: (cluster, start, cpu, gpu)} for every task,
    and counters. At each arrival step t (from the first), :func:`myopic_from_state` plans the
    tasks known at t with ``iterations`` LNS neighbourhoods (seed ``seed``), keeping every start
    committed before t; the plan's starts before the next arrival are committed. Once
    ``deadline`` (``time.perf_counter()`` value) has passed, the rest is one list-scheduling
    completion of every task not yet started, in arrival order around the committed starts (each
    task placed given the earlier ones only: still an online schedule; ``"list_only"`` = 1); a plan
    under way when it passes stops its search there."""
    started: dict[int, tuple[int, int, int, int]] = {}
    info = {"plans": 0, "improved": 0, "list_only": 0, "neighbourhoods": 0}
    t = min(task.arrival for task in instance.placement.tasks)
    while True:
        if deadline is not None and time.perf_counter() >= deadline:
            info["list_only"] = 1
            return list_completion(instance, started, t), info
        left = None if deadline is None else max(0.0, deadline - time.perf_counter())
        plan = myopic_from_state(instance, started, t, time_limit=left, seed=seed, iterations=iterations)
        info["plans"] += 1
        info["improved"] += plan["status"] == "improved"
        info["neighbourhoods"] += int(plan["neighbourhoods"])
        nxt = plan["next_arrival"]
        for j, (n, s, c, g) in enumerate(plan["tasks"]):
            if nxt is None or s < nxt:
                started[j] = (int(n), int(s), int(c), int(g))
        if nxt is None:
            return started, info
        t = nxt


def as_schedule(payload, data, started: dict[int, tuple[int, int, int, int]]) -> list:
    """{task: (cluster, start, cpu, gpu)} as a schedule of (option, start) in task order, None for
    a task not in ``started``."""
    out = []
    for j in range(len(payload.tasks)):
        if j in started:
            n, start, cpu, gpu = started[j]
            out.append((started_option(payload, data, j, n, cpu, gpu), start))
        else:
            out.append(None)
    return out


def list_completion(instance, started: dict[int, tuple[int, int, int, int]], t: int) -> dict[int, tuple[int, int, int, int]]:
    """Every task: the committed starts as they are, the others list-scheduled from step t on
    (:func:`continuation_start` on the whole instance, no schedule to compare; in arrival order,
    each task placed given the earlier ones only). The rolling horizon's and
    ``placement-lns-window``'s rest past their time limit."""
    payload = instance.placement
    data = pm.prepare(payload)
    sched, _ = continuation_start(data, as_schedule(payload, data, started), t)
    return {j: (o.cluster, s, o.cpu, o.gpu) for j, (o, s) in enumerate(sched)}


@register(SOLVER_NAME, families=("placement",), kind="heuristic",
          description="Online rolling-horizon LNS (non-clairvoyant): at every arrival step the LNS plans the tasks "
                      "known by then (the starts made before kept), and the plan's starts before the next arrival "
                      "are committed; scored by the referee",
          params={"iterations": f"int: LNS neighbourhoods per plan (default {PLAN_ITERATIONS}; 0: the list-"
                                "scheduling completion alone)"},
          bounds={"iterations": (0, None)})
def solve(instance, *, time_limit: float | None = None, seed: int = 0, iterations: int = PLAN_ITERATIONS):
    """The rolling horizon as a solver. Past the time limit the tasks not yet started are
    list-scheduled in one pass (status ``timeout``, still a complete schedule); an instance whose tasks are not listed by
    arrival (:func:`known_instance`) is an ``error`` with its reason."""
    t0 = time.perf_counter()
    params = {"iterations": iterations}
    try:
        started, info = rolling_horizon(instance, iterations=int(iterations), seed=seed,
                                        deadline=None if time_limit is None else t0 + float(time_limit))
        payload = instance.placement
        sched = as_schedule(payload, pm.prepare(payload), started)  # every task is started
    except ValueError as exc:  # ModelTooLarge included
        return make_result(instance, SOLVER_NAME, status="error", seed=seed, params=params, started=t0,
                           stats={"message": str(exc)})
    decisions = pm.to_decisions(sched)
    ev = evaluate_decisions(instance, decisions)  # the referee's value, decided once
    value = float(ev.objectives["total_completion_time"]) if ev.feasible else None
    status = "timeout" if info["list_only"] else "feasible"
    return make_result(instance, SOLVER_NAME, status=status if value is not None else "error", decisions=decisions,
                       seed=seed, params=params, objective=value, started=t0, stats=info)


__all__ = ["started_option", "continuation_start", "referee_value", "known_tasks", "next_arrival",
           "known_instance", "myopic_from_state", "rolling_horizon", "as_schedule", "list_completion", "solve", "SOLVER_NAME", "PLAN_ITERATIONS"]
