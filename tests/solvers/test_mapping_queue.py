"""Queue policies of the mapping family (fifo, strict-priority, ces-multi) in the stream
simulator: referee-feasible, deterministic, the referee's own statistics, and CES-Multi's
starvation bound (docs/mapping-baselines.md)."""

from __future__ import annotations

import pytest

from edgebench import registry
from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.generators import generate
from edgebench.referee import evaluate, evaluate_decisions
from edgebench.solvers.mapping_queue import POLICIES, run_policy

SCHEDULERS = ("flexitask", "smart", "greedy-bw")


@pytest.fixture(scope="module")
def stream():
    return generate("mapping", "thesis-queue", seed=0, jobs=12)


def _job(arrival, duration, priority, tasks, links=()):
    return {"arrival": arrival, "duration": duration, "priority": priority,
            "tasks": [{"cpu": c, "ram": 10.0} for c in tasks],
            "links": [{"src": a, "dst": b, "bw_min": 1.0, "bw_max": 2.0} for a, b in links]}


def _two_node_instance(jobs):
    data = {"format_version": 1, "family": "mapping", "id": "starvation",
            "mapping": {"nodes": [{"cpu": 100.0, "ram": 100.0}, {"cpu": 100.0, "ram": 100.0}],
                        "links": [{"src": 0, "dst": 1, "bandwidth": 1000.0},
                                  {"src": 1, "dst": 0, "bandwidth": 1000.0}],
                        "jobs": jobs}}
    return io.instance_from_dict(data)


def starvation_instance(pairs: int = 15):
    """Two nodes of 100 CPU. High-priority jobs (priority 2, one 60-CPU task, duration 2)
    arrive one per time unit from t = 0, so the two nodes are always busy and never free at
    the same time. Job 0 is the low-priority job (priority 0, arrival 0.5, duration 2) with
    two 60-CPU task nodes: it needs both nodes at once."""
    jobs = [_job(0.5, 2.0, 0, [60.0, 60.0], [(0, 1)])]
    jobs += [_job(float(t), 2.0, 2, [60.0]) for t in range(2 * pairs)]
    return _two_node_instance(jobs)


def _wait(sol, inst, k):
    return sol.mapping.jobs[k].start - inst.mapping.jobs[k].arrival


def test_registered():
    for name in POLICIES:
        info = registry.get(name)
        assert info.kind == "heuristic" and info.families == ("mapping",)
        assert "scheduler" in info.params


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_stream_feasible_seeded_and_reports_referee_values(stream, policy, scheduler):
    a = registry.solve(stream, policy, seed=5, scheduler=scheduler)
    b = registry.solve(stream, policy, seed=5, scheduler=scheduler)
    assert a.status == "feasible", a.stats
    assert a.solution.decisions == b.solution.decisions, "same seed, same output"
    ev = evaluate(stream, a.solution)
    assert ev.feasible, ev.violations[:3]
    for key in ("L", "D_BW", "mean_wait", "p95_wait", "composite"):
        assert a.stats[key] == pytest.approx(ev.objectives[key]), key
    assert a.solution.objective == pytest.approx(ev.objectives["composite"])
    for jd, job in zip(a.solution.mapping.jobs, stream.mapping.jobs):
        assert jd.start is not None and jd.start >= job.arrival


def test_fifo_starts_jobs_in_arrival_order(stream):
    sol = registry.solve(stream, "fifo").solution
    order = sorted(range(len(stream.mapping.jobs)), key=lambda k: (stream.mapping.jobs[k].arrival, k))
    starts = [sol.mapping.jobs[k].start for k in order]
    assert starts == sorted(starts)


def test_strict_priority_serves_higher_priority_first():
    # one node-sized slot: a low (arrival 0.1) and a high (arrival 0.2) job wait behind job 0
    jobs = [_job(0.0, 1.0, 1, [60.0, 60.0]), _job(0.1, 1.0, 0, [60.0, 60.0]), _job(0.2, 1.0, 5, [60.0, 60.0])]
    inst = _two_node_instance(jobs)
    sp = registry.solve(inst, "strict-priority").solution
    assert sp.mapping.jobs[2].start == 1.0 and sp.mapping.jobs[1].start == 2.0
    ff = registry.solve(inst, "fifo").solution
    assert ff.mapping.jobs[1].start == 1.0 and ff.mapping.jobs[2].start == 2.0


# ---- starvation ----------------------------------------------------------------------


def test_starvation_ces_multi_within_ageing_bound_strict_priority_not():
    inst = starvation_instance()
    tau, d_max = 2.0, 2.0
    bound = (2 - 0 + 1) * tau + d_max  # A_low + D_max, the low job alone in the starving queue
    ces = registry.solve(inst, "ces-multi", ageing_time=tau)
    assert ces.status == "feasible"
    assert evaluate(inst, ces.solution).feasible
    assert ces.stats["ageing_bound"][0] == pytest.approx(6.0)
    w_ces = _wait(ces.solution, inst, 0)
    assert w_ces <= bound + 1e-9
    assert ces.stats["reservations"] >= 1
    # strict priority: the low job needs both nodes, which are never free together while
    # high-priority jobs keep coming; it starts only after the stream ends
    sp = registry.solve(inst, "strict-priority")
    assert evaluate(inst, sp.solution).feasible
    w_sp = _wait(sp.solution, inst, 0)
    assert w_sp > bound
    assert sp.solution.mapping.jobs[0].start >= max(j.arrival for j in inst.mapping.jobs)
    # ageing alone cannot help a job that never fits: the reservation is what serves it
    nores = registry.solve(inst, "ces-multi", ageing_time=tau, reservation=False)
    assert _wait(nores.solution, inst, 0) > bound
    # the default ageing time is the mean job duration (2 here): same result
    dflt = registry.solve(inst, "ces-multi")
    assert dflt.stats["ageing_time"] == pytest.approx(2.0)
    assert dflt.solution.decisions == ces.solution.decisions


def test_ageing_lets_a_small_low_priority_job_overtake():
    """A low job that fits one node: strict priority keeps handing the freed nodes to the
    high-priority stream (two jobs arrive every two time units); CES-Multi's aged priority
    puts it first before it is even starving."""
    jobs = [_job(0.5, 2.0, 0, [60.0])]
    jobs += [_job(float(2 * (t // 2)), 2.0, 2, [60.0]) for t in range(30)]
    inst = _two_node_instance(jobs)
    ces = registry.solve(inst, "ces-multi", ageing_time=2.0)
    w = _wait(ces.solution, inst, 0)
    assert w < 6.0  # below A_low = 6: served by ageing, not by the reservation
    assert evaluate(inst, ces.solution).feasible
    sp = registry.solve(inst, "strict-priority")
    assert _wait(sp.solution, inst, 0) > 6.0 + 2.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_starvation_bound_holds_for_every_job(seed):
    """wait_j <= A_j + m_j D_max, m_j = 1 + the jobs flagged before j (flag = arrival + A)
    that still wait at j's flag time, on generated overloaded streams."""
    inst = generate("mapping", "thesis-queue", seed=seed)
    r = registry.solve(inst, "ces-multi")
    assert evaluate(inst, r.solution).feasible
    jobs = inst.mapping.jobs
    A = r.stats["ageing_bound"]
    d_max = max(j.duration for j in jobs)
    start = [jd.start for jd in r.solution.mapping.jobs]
    flag = [j.arrival + a for j, a in zip(jobs, A)]
    for k, job in enumerate(jobs):
        ahead = sum(1 for i in range(len(jobs))
                    if i != k and (flag[i], i) < (flag[k], k) and start[i] >= flag[k] - 1e-9)
        assert start[k] - job.arrival <= A[k] + (1 + ahead) * d_max + 1e-6, (k, start[k], job.arrival)


# ---- scheduler choice, errors ------------------------------------------------------


def test_external_scheduler_through_residual_instances():
    """'random' has no in-process placer: it is called on residual single-job instances."""
    inst = generate("mapping", "thesis-queue", seed=3, jobs=5)
    a = registry.solve(inst, "ces-multi", seed=7, scheduler="random")
    b = registry.solve(inst, "ces-multi", seed=7, scheduler="random")
    assert a.status == "feasible"
    assert a.solution.decisions == b.solution.decisions
    assert evaluate(inst, a.solution).feasible
    out = run_policy(inst, "fifo", seed=7, scheduler="random", scheduler_params={"attempts": 20})
    assert out.reason is None and evaluate_decisions(inst, out.decisions()).feasible


def test_single_job_instance():
    inst = generate("mapping", "thesis", seed=0)
    for policy in POLICIES:
        r = registry.solve(inst, policy)
        assert r.status == "feasible"
        assert r.solution.mapping.jobs[0].start == 0.0
        assert r.stats["mean_wait"] == 0.0


def test_a_job_that_never_fits_is_infeasible_with_a_reason():
    inst = _two_node_instance([_job(0.0, 1.0, 0, [60.0]), _job(0.5, 1.0, 0, [150.0])])
    for policy in POLICIES:
        r = registry.solve(inst, policy)
        assert r.status == "infeasible"
        assert "[1]" in r.stats["reason"]


def test_bad_parameters():
    inst = generate("mapping", "thesis", seed=0)
    with pytest.raises(InputError) as e:
        registry.solve(inst, "ces-multi", scheduler="ces-multi")
    assert e.value.field == "params.scheduler"
    with pytest.raises(InputError):
        registry.solve(inst, "fifo", scheduler="no-such-solver")
    with pytest.raises(InputError):
        registry.solve(inst, "fifo", scheduler="heft")  # not a mapping solver
    with pytest.raises(InputError):
        registry.solve(inst, "fifo", window=3)  # ces-multi only
    with pytest.raises(InputError):
        registry.solve(inst, "ces-multi", weights=[0, 0, 0])
    with pytest.raises(InputError):
        registry.solve(inst, "ces-multi", ageing_time=0)
    with pytest.raises(InputError):
        registry.solve(inst, "ces-multi", scheduler_params={"nope": 1})


def test_time_limit():
    inst = generate("mapping", "thesis-queue", seed=0)
    assert registry.solve(inst, "ces-multi", time_limit=0.0).status == "timeout"


@pytest.mark.parametrize("key", ["time_limit", "seed"])
def test_scheduler_params_cannot_set_what_the_queue_passes(stream, key):
    """time_limit and seed go to the scheduler from the queue simulation itself: giving them in
    scheduler_params is an input error naming the field (it was a TypeError traceback)."""
    with pytest.raises(InputError, match="scheduler_params"):
        registry.solve(stream, "fifo", scheduler_params={key: 1})
