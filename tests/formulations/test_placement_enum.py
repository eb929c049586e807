"""The brute-force enumerator of the placement referee's own problem (re-allocating schedules,
pauses, switching loss, noise): the referee scores its solution at exactly the enumerated
value, it is never worse than the fixed-allocation MILP's optimum (a restriction of the same
problem), and past its state cap it says so."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from edgebench import registry
from edgebench.formulations.memory import MemoryBudget
from edgebench.formulations.placement import enum as E
from edgebench.formulations.placement import exact as X
from edgebench.instances.io import instance_from_dict
from edgebench.referee.placement import evaluate
from edgebench.runner.bounds import solver_bound_applies

#: float tolerance of every comparison of objective values (they are integers in steps)
TOL = 1e-9


def make_instance(tasks, clusters, *, variant="single", noise=0.0, overhead=0.5, types=None):
    """tasks = (arrival, type, (min cpu, min gpu), eligible); clusters = (cpu, gpu)."""
    types = types or {
        "fix": {"base": 0.4},  # 3 steps whenever the minimum is met
        "lm": {"gpu_scale": 1.0, "cpu_per_gpu": 1.0, "base": 0.3},  # faster with more GPUs (CPU-bounded)
    }
    return instance_from_dict({
        "format_version": 1, "family": "placement", "id": "tiny-enum",
        "placement": {
            "clusters": [{"capacity": {"cpu": c, "gpu": g}} for c, g in clusters],
            "tasks": [{"arrival": a, "type": t, "minimum": {"cpu": m[0], "gpu": m[1]}, "eligible": list(e)}
                      for a, t, m, e in tasks],
            "performance": {"kind": "synthetic", "types": types},
            "noise": noise, "noise_seed": 11, "variant": variant, "switching_overhead": overhead,
        },
    })


@st.composite
def tiny_instances(draw, max_tasks: int = 3):
    """2..max_tasks tasks, 1-2 clusters of 1-2 cpu / 1-2 gpu, both variants, switching loss
    on/off, noise on/off, a constant-gain type and a GPU-sensitive one."""
    N = draw(st.integers(1, 2))
    clusters = [(draw(st.integers(1, 2)), draw(st.integers(1, 2))) for _ in range(N)]
    J = draw(st.integers(2, max_tasks))
    tasks = []
    for _ in range(J):
        elig = draw(st.lists(st.integers(0, N - 1), min_size=1, max_size=N, unique=True))
        tasks.append((draw(st.integers(0, 2)), draw(st.sampled_from(["fix", "lm"])),
                      (1, draw(st.integers(0, 1))), sorted(elig)))
    types = {
        "fix": {"base": draw(st.sampled_from([0.34, 0.4, 0.5]))},
        "lm": {"gpu_scale": draw(st.sampled_from([1.0, 2.0])), "cpu_per_gpu": draw(st.sampled_from([None, 1.0])),
               "base": draw(st.sampled_from([0.2, 0.3]))},
    }
    return make_instance(tasks, clusters, variant=draw(st.sampled_from(["single", "multi"])),
                         noise=draw(st.sampled_from([0.0, 0.1])), overhead=draw(st.sampled_from([0.0, 0.5])),
                         types=types)


def assert_between_optimum_and_fixed_optimum(inst, solve, tol: float = 1e-6):
    """A fixed-allocation search on a tiny instance (``solve()`` runs it): referee-feasible, its
    objective the referee's, never below the brute-force optimum and at most placement-milp's
    optimal fixed-allocation schedule (where placement-milp proves it). An instance the brute force
    cannot finish within its state limit is discarded (hypothesis ``assume``)."""
    try:
        opt, _ = E.optimum(inst, max_states=200_000)
    except E.StateLimitError:
        assume(False)
    result = solve()
    milp = registry.solve(inst, "placement-milp", time_limit=60)
    assert result.status == "feasible", result.stats.get("message")
    ev = evaluate(inst, result.solution.placement)
    assert ev.feasible, ev.violations[:3]
    assert result.solution.objective == pytest.approx(ev.primary_value, abs=tol)
    assert ev.primary_value >= opt - tol
    if milp.status == "optimal":
        assert ev.primary_value <= evaluate(inst, milp.solution.placement).primary_value + tol


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances(max_tasks=2))
def test_referee_scores_the_enumerated_optimum(inst):
    value, decisions = E.optimum(inst, max_states=100_000)
    ev = evaluate(inst, decisions)
    assert ev.feasible, ev.violations[:3]
    assert ev.primary_value == pytest.approx(value, abs=TOL)
    # never worse than the best fixed-allocation schedule (a subset of the same schedules)
    milp = registry.solve(inst, "placement-milp", time_limit=30)
    assert milp.status == "optimal"
    assert value <= milp.solution.objective + TOL


def test_reallocation_is_never_worse_than_fixed_allocation():
    """One 2-GPU cluster, two GPU-bound tasks arriving together, no switching loss: the
    enumerator's optimum is at most the fixed-allocation optimum and the referee agrees."""
    inst = make_instance([(0, "lm", (1, 1), [0]), (0, "lm", (1, 1), [0])], [(2, 2)], overhead=0.0)
    value, decisions = E.optimum(inst)
    milp = registry.solve(inst, "placement-milp", time_limit=30)
    assert value <= milp.solution.objective + TOL
    assert evaluate(inst, decisions).primary_value == pytest.approx(value, abs=TOL)


def test_same_instance_same_result():
    inst = make_instance([(0, "fix", (1, 1), [0, 1]), (0, "lm", (1, 1), [0]), (1, "lm", (1, 1), [1])],
                         [(1, 2), (2, 1)], variant="multi", noise=0.1)
    a = E.optimum(inst)
    b = E.optimum(inst)
    assert a[0] == b[0] and a[1] == b[1]


def test_state_cap_is_a_clear_error():
    inst = make_instance([(0, "fix", (1, 1), [0, 1]), (0, "lm", (1, 0), [0]), (1, "lm", (1, 1), [1])],
                         [(2, 2), (2, 2)], noise=0.1)
    with pytest.raises(E.StateLimitError, match="more than 50 joint states"):
        E.optimum(inst, max_states=50)


# ---- the exact model of the referee's problem (placement-exact) against the brute force ----


def _exact(inst, **params):
    return registry.solve(inst, "placement-exact", time_limit=60, **params)


@pytest.mark.slow
@settings(max_examples=190, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances(max_tasks=2))
def test_exact_model_equals_brute_force_two_tasks(inst):
    value, _ = E.optimum(inst, max_states=100_000)
    for reduce in (None, False):  # with the proven reductions (default) and without
        res = _exact(inst, reduce=reduce, milp_share=0.0)
        assert res.status == "optimal"
        assert res.solution.objective == pytest.approx(value, abs=TOL)
        assert res.solution.bound == pytest.approx(value, abs=TOL)
        ev = evaluate(inst, res.solution.placement)
        assert ev.feasible, ev.violations[:3]
        assert ev.primary_value == pytest.approx(value, abs=TOL)


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances(max_tasks=3).filter(lambda i: len(i.placement.tasks) == 3))
def test_exact_model_equals_brute_force_three_tasks(inst):
    try:
        value, _ = E.optimum(inst, max_states=8_000)
    except E.StateLimitError:
        return  # too large for the brute force: nothing to compare (counted below)
    res = _exact(inst)
    assert res.status == "optimal"
    assert res.solution.objective == pytest.approx(value, abs=TOL)
    assert evaluate(inst, res.solution.placement).primary_value == pytest.approx(value, abs=TOL)


def test_exact_model_same_seed_same_result():
    inst = make_instance([(0, "fix", (1, 1), [0, 1]), (0, "lm", (1, 1), [0]), (1, "lm", (1, 1), [1])],
                         [(1, 2), (2, 1)], variant="multi", noise=0.1)
    a, b = _exact(inst, seed=3), _exact(inst, seed=3)
    assert a.status == b.status == "optimal"
    assert a.solution.objective == b.solution.objective
    assert a.solution.placement == b.solution.placement


def test_exact_model_time_limit_keeps_a_valid_bound():
    """Stopped after a few nodes: an incumbent (the greedy) and a bound below the optimum."""
    inst = make_instance([(0, "fix", (1, 1), [0, 1]), (0, "lm", (1, 0), [0]), (1, "lm", (1, 1), [1]),
                          (1, "fix", (1, 1), [1])], [(2, 1), (1, 1)], noise=0.1)
    full = _exact(inst)
    assert full.status == "optimal"
    cut = _exact(inst, max_nodes=3)
    assert cut.status in ("feasible", "optimal")
    assert cut.solution.bound <= full.solution.objective + TOL
    assert cut.solution.objective >= full.solution.objective - TOL


def _four_tasks():
    return make_instance([(0, "fix", (1, 1), [0, 1]), (0, "lm", (1, 0), [0]), (1, "lm", (1, 1), [1]),
                          (1, "fix", (1, 1), [1])], [(2, 1), (1, 1)], noise=0.1)


def _budget_after(checks: int) -> MemoryBudget:
    """A budget whose measure passes its limit from the (checks + 1)-th check on."""
    calls = [0]

    def measure():
        calls[0] += 1
        return 0.0 if calls[0] <= checks else 10.0

    return MemoryBudget([(1.0, "test limit", measure, "address space")])


def test_exact_model_memory_budget_stops_the_search_with_a_valid_bound(monkeypatch):
    """Issue 46 (placement-exact filled 4 GiB expanding one node at 192 tasks): past its memory
    budget, or at a MemoryError while expanding a node, the search stops as at its time limit:
    the incumbent, a bound <= the optimum, and why in ``memory``; solve says so with status
    timeout and a referee-feasible schedule."""
    inst = _four_tasks()
    opt = _exact(inst).solution.objective
    for k in (0, 1):  # the whole search takes 2 expansions
        r = X.search(inst.placement, memory=_budget_after(k))
        assert r["expired"] and not r["proven"] and r["expanded"] <= k, (k, r)
        assert r["bound"] <= opt + TOL and r["value"] >= opt - TOL, (k, r["bound"], r["value"])
        assert r["memory"].startswith("stopped on memory: address space 10 MiB reached 80% of the 1 MiB "
                                      "limit (test limit)"), r["memory"]
    children, calls = X.Model.children, [0]

    def failing(self, *args, **kw):
        calls[0] += 1
        if calls[0] == 2:
            raise MemoryError("std::bad_alloc")
        return children(self, *args, **kw)

    monkeypatch.setattr(X.Model, "children", failing)
    r = X.search(inst.placement, memory=MemoryBudget())
    assert r["expanded"] == 1 and r["bound"] <= opt + TOL and r["value"] >= opt - TOL, r
    assert r["memory"] == "stopped on memory: MemoryError while expanding a node (std::bad_alloc)"
    monkeypatch.undo()
    res = _exact(inst, memory_mb=1, root=False, milp_share=0.0)  # any process is past 0.8 MiB
    assert res.status == "timeout", res.stats
    assert res.stats["message"].startswith("stopped on memory: address space "), res.stats["message"]
    assert res.solution.bound is None or res.solution.bound <= opt + TOL
    assert evaluate(inst, res.solution.placement).feasible


def test_exact_model_joint_moves_check_the_memory_budget():
    """The joint-move enumeration of one node checks the budget as it checks the clock (every
    4096 partial moves): a node of many tasks cannot fill the memory before the next check."""
    inst = make_instance([(0, "lm", (1, 0), [0])] * 8, [(8, 8)], variant="multi")
    model = X.Model(inst.placement, reduce=True)
    init = tuple(None for _ in inst.placement.tasks)
    assert len(model.children(0, init)) > 4096
    with pytest.raises(X.OutOfMemory, match="stopped on memory"):
        model.children(0, init, memory=_budget_after(0))


def test_exact_model_reads_the_clock_at_every_child(monkeypatch):
    """Issue 46 (a 120 s run hard-killed at 149 s): a child's bound h may take long (a residual
    slot bound), so the search reads the clock before every child inserted, not every 256th:
    when the first child's h passes the deadline no other child is bounded, and the search
    stops with its incumbent and a valid bound."""
    inst = make_instance([(0, "lm", (1, 0), [0, 1]), (0, "fix", (1, 1), [0, 1])] * 3
                         + [(1, "lm", (1, 1), [1])] * 2, [(4, 3), (3, 4)], variant="multi", noise=0.1)
    full = X.search(inst.placement)
    assert full["proven"] and full["nodes"] > full["expanded"] + 1  # some node has several children
    h, calls = X.Model.h, [0]

    def slow(self, t, states):
        if t > 0:
            calls[0] += 1
            time.sleep(0.3)  # past the deadline below
        return h(self, t, states)

    monkeypatch.setattr(X.Model, "h", slow)
    r = X.search(inst.placement, deadline=time.perf_counter() + 0.2)  # a time.perf_counter() value
    assert r["expired"] and r["decisions"] is not None, r
    assert calls[0] == 1, calls  # every 256th child: each child of the root bounded
    assert full["value"] - TOL <= r["value"] and r["bound"] <= full["value"] + TOL


def test_reductions_need_the_lemma():
    """reduce=true on a synthetic type with curvature < 1 is refused (the proof needs >= 1)."""
    types = {"fix": {"base": 0.4, "curvature": 0.8}, "lm": {"gpu_scale": 1.0, "base": 0.3}}
    inst = make_instance([(0, "fix", (1, 1), [0]), (0, "lm", (1, 1), [0])], [(2, 2)], types=types)
    assert _exact(inst, reduce=True).status == "error"
    assert _exact(inst).status == "optimal"


def test_only_the_exact_model_bound_bounds_the_referee_problem():
    inst = make_instance([(0, "fix", (1, 1), [0]), (0, "lm", (1, 1), [0])], [(2, 2)])
    assert solver_bound_applies(inst, "placement-exact")
    assert not solver_bound_applies(inst, "placement-milp")
    assert not solver_bound_applies(inst)
