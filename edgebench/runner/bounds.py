"""Combinatorial bounds computed from an instance alone (no solver), for the certified library.

Each function returns a bound on the referee's primary objective that holds for EVERY feasible
solution; the proofs are in ``docs/bks.md`` ("Bounds"). They give every instance a bound even
when no exact model finished in the certification's time limit.

* placement (``total_completion_time``, min): ``formulations.placement.relaxation_bound`` — every
  task needs at least its fewest steps at any allocation of any eligible cluster;
* offloading (``mean_makespan``, min): the largest of the mean over workflows of a critical-path
  bound, for one workflow without a cloud a CPU-load bound, and the exact model's heads / tails /
  windowed-load bound (:func:`heads_tails_bound`);
* mapping (``composite``, max): 1 — ``composite = 0.5 (1 - L) + 0.5 D_BW`` with ``L`` a mean of
  non-negatively weighted standard deviations (>= 0) and ``D_BW`` a mean of per-link
  satisfactions clipped to [0, 1].
"""

from __future__ import annotations

from edgebench.instances import semantics
from edgebench.instances.model import Instance


def critical_path_bounds(instance: Instance) -> list[float]:
    """Per workflow, a lower bound on its makespan: ``f[t] = min over servers s that can host t
    of max(input_time(t, s), max over predecessors p of f[p]) + task_duration(t, s)`` (times
    after the workflow's arrival; transfers between servers are >= 0), the makespan being at
    least ``max f``."""
    o = instance.offloading
    assert o is not None
    S = len(o.servers)
    out = []
    for w, wf in enumerate(o.workflows):
        n = len(wf.tasks)
        preds: list[list[int]] = [[] for _ in range(n)]
        for e in wf.edges:
            preds[e.dst].append(e.src)
        f = [0.0] * n
        for t in semantics.topological_order(n, ((e.src, e.dst) for e in wf.edges)):
            ready = max((f[p] for p in preds[t]), default=0.0)
            f[t] = min(max(semantics.input_time(o, w, t, s), ready) + semantics.task_duration(o, w, t, s)
                       for s in range(S) if semantics.can_host(o, w, t, s))
        out.append(max(f, default=0.0))
    return out


def load_bound(instance: Instance) -> float | None:
    """One workflow, no cloud: on every server the running tasks' CPU (memory) demand never
    exceeds its capacity, so ``sum_t demand_t x duration(t, s_t) <= makespan x sum_s capacity_s``;
    hence ``makespan >= sum_t min_s demand_t x duration(t, s) / sum_s capacity_s`` (the larger of
    the CPU and memory versions). None where it does not apply."""
    o = instance.offloading
    assert o is not None
    if len(o.workflows) != 1 or any(s.is_cloud for s in o.servers):
        return None
    wf = o.workflows[0]
    S = len(o.servers)
    best = 0.0
    for k, cap in ((0, sum(s.cpu for s in o.servers)), (1, sum(s.mem for s in o.servers))):
        if cap <= 0:
            continue
        work = sum(min(semantics.task_demand(o, 0, t)[k] * semantics.task_duration(o, 0, t, s)
                       for s in range(S) if semantics.can_host(o, 0, t, s)) for t in range(len(wf.tasks)))
        best = max(best, work / cap)
    return best


def heads_tails_bound(instance: Instance) -> float:
    """The exact offloading model's data-only bound (``formulations.offloading_bounds``: heads
    and tails per task and host with transfer delays and serialisation on one-task servers, a
    windowed per-resource load bound, the cloud fixed point; proof in
    docs/formulations/offloading.md §4a). It dominates the two bounds above on the instances
    tested; the maximum of all three is kept."""
    from edgebench.formulations.offloading import combinatorial_bound, prepare

    return float(combinatorial_bound(prepare(instance)))


def combinatorial_bound(instance: Instance) -> tuple[float, str] | None:
    """(bound on the primary objective, kind) or None when the family has none."""
    if instance.family == "placement":
        from edgebench.formulations.placement import relaxation_bound

        perf = instance.placement.performance
        if perf.kind == "synthetic" and any(t.curvature <= 1 for t in perf.types.values()):
            return None  # the proof needs curvature > 1 (docs/formulations/placement.md)
        return float(relaxation_bound(instance.placement)), "combinatorial: shortest durations"
    if instance.family == "offloading":
        cps = critical_path_bounds(instance)
        best, kind = sum(cps) / len(cps), "combinatorial: critical path"
        load = load_bound(instance)
        if load is not None and load > best:
            best, kind = load, "combinatorial: load"
        ht = heads_tails_bound(instance)
        if ht > best * (1 + 1e-9):
            best, kind = ht, "combinatorial: heads, tails and windowed load"
        return best, kind
    if instance.family == "mapping":
        return 1.0, "combinatorial: composite <= 1"
    return None


def solver_bound_applies(instance: Instance, solver: str | None = None) -> bool:
    """Whether an exact model's bound is a bound of the referee's problem (every feasible
    solution), not only of the model's restriction of it:

    * placement: only for ``placement-exact`` (the exact model of the referee's own problem);
      the fixed-allocation MILP ``placement-milp`` optimises fixed-allocation schedules only,
      and re-allocating / pausing policies (Optimus, Tiresias) are referee-feasible and may beat
      its optimum (docs/formulations/placement.md, "What bounds apply");
    * mapping with several jobs: no — the model places every job at its arrival, all
      simultaneously active, a restriction of the stream where jobs may wait;
    * otherwise yes."""
    if instance.family == "placement":
        return solver == "placement-exact"
    return not (instance.family == "mapping" and len(instance.mapping.jobs) > 1)
