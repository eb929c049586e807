"""The exact placement model (placement-milp): every backend agrees, a brute force agrees,
infeasibility and time limits are statuses, and the referee accepts every solution with
the solver's objective."""

from __future__ import annotations

import math

import pytest

from edgebench import registry
from edgebench.formulations import placement as P
from edgebench.formulations.placement import milp as M
from edgebench.instances import semantics
from edgebench.instances.generators import generate
from edgebench.instances.io import instance_from_dict
from edgebench.referee import evaluate

LINEAR_BACKENDS = ("ortools-highs", "ortools-scip", "ortools-cbc", "pulp-cbc", "pulp-highs", "pyomo-highs",
                   "ortools-cpsat")
ALL_BACKENDS = LINEAR_BACKENDS + (P.HIGHSPY, P.CPSAT_INTERVALS)
TL = 60


def tiny(tasks, clusters=((4, 4),), variant="single", noise=0.0, types=None):
    """A hand-built instance: tasks = (arrival, type, (min cpu, min gpu), eligible)."""
    types = types or {
        "fix": {"base": 0.25},  # 4 steps whenever the minimum is met
        "lm": {"gpu_scale": 4.0, "cpu_per_gpu": 0.5},  # faster with more GPUs (CPU-bounded)
    }
    return instance_from_dict({
        "format_version": 1, "family": "placement", "id": "tiny",
        "placement": {
            "clusters": [{"capacity": {"cpu": c, "gpu": g}} for c, g in clusters],
            "tasks": [{"arrival": a, "type": t, "minimum": {"cpu": m[0], "gpu": m[1]}, "eligible": list(e)}
                      for a, t, m, e in tasks],
            "performance": {"kind": "synthetic", "types": types},
            "noise": noise, "noise_seed": 7, "variant": variant,
        },
    })


def check_solution(inst, res):
    """The referee accepts the decisions and its objective equals the solver's."""
    ev = evaluate(inst, res.solution)
    assert ev.feasible, ev.violations[:3]
    assert ev.primary_value == pytest.approx(res.solution.objective, rel=1e-6)
    return ev.primary_value


# ---- brute force ----------------------------------------------------------------------


def brute_force(inst, max_delay: int) -> float | None:
    """Minimum total completion over every (cluster, start, allocation) of every task, with
    ALL allocations (not only the dominant ones) and starts up to ``max_delay`` after arrival;
    feasibility checked here, independently of the model. None if nothing is feasible."""
    p = inst.placement
    choices = []
    for j, task in enumerate(p.tasks):
        opts = []
        for n in task.eligible:
            for c, g in semantics.allocation_options(p, j, n):
                d = semantics.fixed_run_steps(p, j, c, g)
                if d is None:
                    continue
                for s in range(task.arrival, task.arrival + max_delay + 1):
                    opts.append((s + d - task.arrival, n, s, d, c, g))
        opts.sort()
        choices.append(opts)
    best = [math.inf]
    caps = [(cl.capacity.cpu, cl.capacity.gpu) for cl in p.clusters]
    mins = [opts[0][0] for opts in choices]

    def ok(placed, n, s, d, c, g):
        for (_, n2, s2, d2, c2, g2) in placed:
            if n2 != n:
                continue
            if p.variant == "single" and s2 == s:
                return False
        for u in range(s, s + d):
            uc, ug = c, g
            for (_, n2, s2, d2, c2, g2) in placed:
                if n2 == n and s2 <= u < s2 + d2:
                    uc += c2
                    ug += g2
            if uc > caps[n][0] or ug > caps[n][1]:
                return False
        return True

    def rec(j, placed, cost):
        if cost + sum(mins[j:]) >= best[0]:
            return
        if j == len(choices):
            best[0] = cost
            return
        for item in choices[j]:
            if cost + item[0] + sum(mins[j + 1:]) >= best[0]:
                break  # sorted by completion
            if ok(placed, *item[1:]):
                rec(j + 1, placed + [item], cost + item[0])

    rec(0, [], 0)
    return None if best[0] == math.inf else best[0]


BRUTE_CASES = {
    # two tasks competing for one small cluster (allocation trade-off)
    "two-lm-one-cluster": dict(tasks=[(0, "lm", (1, 1), (0,)), (0, "lm", (1, 1), (0,))], clusters=((4, 4),)),
    # three tasks, two clusters, mixed types and eligibility
    "three-mixed": dict(tasks=[(0, "lm", (1, 1), (0, 1)), (0, "fix", (2, 2), (0,)), (1, "lm", (1, 2), (1,))],
                        clusters=((3, 3), (2, 3))),
    # three tasks that all want the same cluster at once
    "three-crowded": dict(tasks=[(0, "fix", (2, 2), (0,)), (0, "lm", (1, 1), (0,)), (0, "fix", (2, 1), (0,))],
                          clusters=((3, 3),)),
}


@pytest.mark.parametrize("variant", ["single", "multi"])
@pytest.mark.parametrize("case", sorted(BRUTE_CASES))
def test_brute_force_agrees(case, variant):
    inst = tiny(variant=variant, **BRUTE_CASES[case])
    expected = brute_force(inst, max_delay=14)
    assert expected is not None
    for backend in ("pulp-highs", "ortools-scip"):
        res = P.solve(inst, backend=backend, time_limit=TL)
        assert res.status == "optimal", res.stats["message"]
        assert res.solution.objective == pytest.approx(expected)
        assert res.solution.bound is None  # the restriction's bound is never the instance's
        assert res.stats["restriction_bound"] == pytest.approx(expected)
        assert check_solution(inst, res) == pytest.approx(expected)


def test_single_task_rule_changes_the_optimum():
    """Two 4-step tasks arriving together on one cluster with room for both: in the multi
    variant both start at 0 (total 8); in the single variant one starts at 1 (total 9)."""
    tasks = [(0, "fix", (2, 2), (0,)), (0, "fix", (2, 2), (0,))]
    single = P.solve(tiny(tasks, variant="single"), backend="pulp-highs", time_limit=TL)
    multi = P.solve(tiny(tasks, variant="multi"), backend="pulp-highs", time_limit=TL)
    assert single.solution.objective == 9 and multi.solution.objective == 8
    assert brute_force(tiny(tasks, variant="single"), 6) == 9


# ---- every backend agrees --------------------------------------------------------------


@pytest.fixture(scope="module", params=["single", "multi"])
def small(request):
    inst = generate("placement", "synthetic-3", seed=3, num_tasks=7, variant=request.param)
    ref = P.solve(inst, backend="pulp-highs", time_limit=TL, window="full")
    assert ref.status == "optimal"
    return inst, ref.solution.objective


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_every_backend_agrees(small, backend):
    inst, expected = small
    res = P.solve(inst, backend=backend, time_limit=TL)
    assert res.status == "optimal", res.stats["message"]
    assert res.solution.objective == pytest.approx(expected)
    assert res.solution.bound is None and res.stats["restriction_bound"] == pytest.approx(expected)
    assert res.stats["mip_gap"] == 0
    assert check_solution(inst, res) == pytest.approx(expected)
    size = res.stats["model_size"]
    assert size["variables"] > 0 and size["constraints"] > 0 and size["nonzeros"] > 0
    assert res.solution.solver == "placement-milp" and res.solution.params["backend"] == backend


def test_windows_refine_to_the_full_model_optimum():
    """Start windows of 0 steps force the late variables into play: the refinement loop must
    still reach the optimum of the full model, and every relaxation bound is below it."""
    inst = generate("placement", "synthetic-3", seed=1, num_tasks=14, variant="single")
    full = P.solve(inst, backend="pulp-highs", time_limit=TL, window="full")
    narrow = P.solve(inst, backend="pulp-highs", time_limit=TL, window=0)
    assert full.status == narrow.status == "optimal"
    assert narrow.solution.objective == full.solution.objective
    assert full.stats["model_size"]["variables"] > narrow.stats["iterations"][0]["size"]["variables"]
    for it in narrow.stats["iterations"]:
        if it["bound"] is not None:
            assert it["bound"] <= full.solution.objective + 1e-6
    check_solution(inst, narrow)


@pytest.mark.parametrize("variant", ["single", "multi"])
def test_ring_variables_and_local_search_keep_the_optimum(variant):
    """Ring variables (coarse late starts) and the local search change the path, not the answer."""
    inst = generate("placement", "synthetic-3", seed=4, num_tasks=12, variant=variant)
    base = P.solve(inst, backend="pulp-highs", time_limit=TL, window="full")
    rings = P.solve(inst, backend="highspy", time_limit=TL, window=1, rings=2)
    assert base.status == rings.status == "optimal"
    assert rings.solution.objective == base.solution.objective
    check_solution(inst, rings)
    data = P.prepare(inst.placement)
    greedy = P.best_greedy(data)
    fb = P.finish_bounds(data, P.schedule_objective(data, greedy))
    better, info = P.improve_schedule(data, greedy, fb, backend="highspy", block=6)
    assert not P.schedule_violations(data, better)
    assert base.solution.objective <= info["end"] <= info["start"] == P.schedule_objective(data, greedy)


def test_local_search_passes_improve_on_one_pass():
    """Further passes (shifted, then larger blocks) find what one pass over the blocks misses,
    and stay feasible and above the optimum."""
    inst = generate("placement", "synthetic-3", seed=0, num_tasks=24, variant="multi")
    data = P.prepare(inst.placement)
    greedy = P.best_greedy(data)
    fb = P.finish_bounds(data, P.schedule_objective(data, greedy))
    _, one = P.improve_schedule(data, greedy, fb, backend="highspy", block=6, passes=1)
    more, info = P.improve_schedule(data, greedy, fb, backend="highspy", block=6)
    assert not P.schedule_violations(data, more)
    assert P.schedule_objective(data, more) == info["end"] < one["end"]
    assert info["passes"] > 1 and one["passes"] == 1
    opt = P.solve(inst, backend="highspy", time_limit=TL)
    assert opt.status == "optimal" and opt.solution.objective <= info["end"]


@pytest.mark.parametrize("variant", ["single", "multi"])
def test_lp_widening_and_clique_rows_keep_the_optimum(variant):
    """The LP pre-widening of the windows and the clique rows change the path, not the answer;
    the clique rows only tighten the LP, and every bound is integral and below the optimum."""
    inst = generate("placement", "synthetic-3", seed=5, num_tasks=16, variant=variant)
    full = P.solve(inst, backend="pulp-highs", time_limit=TL, window="full")
    off = P.solve(inst, backend="highspy", time_limit=TL, window=0, lp_widen=False)
    on = P.solve(inst, backend="highspy", time_limit=TL, window=0)
    assert full.status == off.status == on.status == "optimal"
    opt = full.solution.objective
    assert off.solution.objective == on.solution.objective == opt
    assert on.stats["lp_widen"]["rounds"] >= 1 and on.stats["lp_widen"]["lp"] <= opt + 1e-6
    assert "lp_widen" not in off.stats
    check_solution(inst, on)
    data = P.prepare(inst.placement)
    fb = P.finish_bounds(data, P.schedule_objective(data, P.best_greedy(data)))
    plain = P.build_model(data, fb, cliques=False)
    clq = P.build_model(data, fb)
    assert any(n.startswith("clique_") for n in clq.model.row_names)
    assert not any(n.startswith("clique_") for n in plain.model.row_names)
    a, b = P.solve_model(plain, "highspy", time_limit=TL), P.solve_model(clq, "highspy", time_limit=TL)
    assert a.status == b.status == "optimal" and a.objective == pytest.approx(opt) == b.objective
    lp_a, lp_b = P.lp_relaxation_bound(plain), P.lp_relaxation_bound(clq)
    assert lp_a - 1e-6 <= lp_b <= opt + 1e-6
    # a time-limited solve reports an integral bound (the objective is integral)
    res = P.solve(generate("placement", "synthetic-3", seed=0, num_tasks=48, variant=variant), time_limit=2.0)
    if res.stats["restriction_bound"] is not None:
        assert res.stats["restriction_bound"] == math.floor(res.stats["restriction_bound"])


def test_bounds_are_ordered():
    inst = generate("placement", "synthetic-3", seed=2, num_tasks=10, variant="multi")
    res = P.solve(inst, backend="ortools-scip", time_limit=TL)
    opt = res.solution.objective
    data = P.prepare(inst.placement)
    assert P.relaxation_bound(inst.placement) <= data.trivial_bound <= opt <= res.stats["greedy_objective"]
    greedy = P.best_greedy(data)
    assert not P.schedule_violations(data, greedy)
    # the proven horizon: every task of the optimum finishes by its bound
    fb = P.finish_bounds(data, res.stats["greedy_objective"])
    for j, d in enumerate(res.solution.placement.tasks):
        steps = semantics.fixed_run_steps(inst.placement, j, d.cpu, d.gpu)
        assert d.start + steps <= fb[j]


# ---- infeasible, horizon, time limit, errors ---------------------------------------------


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_infeasible_horizon_is_reported_by_every_backend(backend):
    """Two 4-step tasks that each fill the cluster cannot both finish by step 6 (each alone can)."""
    inst = tiny([(0, "fix", (4, 4), (0,)), (0, "fix", (4, 4), (0,))], variant="multi")
    res = P.solve(inst, backend=backend, time_limit=TL, horizon=6)
    assert res.status == "infeasible", res.stats["message"]
    assert res.solution.decisions is None
    assert res.stats["horizon_binds"] is True


@pytest.mark.parametrize("backend", ["pulp-cbc", "ortools-highs", P.HIGHSPY, P.CPSAT_INTERVALS])
def test_single_start_rule_makes_a_horizon_infeasible(backend):
    """Room for both at once, but one start per step: the second task ends at 5 > 4."""
    tasks = [(0, "fix", (2, 2), (0,)), (0, "fix", (2, 2), (0,))]
    assert P.solve(tiny(tasks, variant="multi"), backend=backend, time_limit=TL, horizon=4).status == "optimal"
    assert P.solve(tiny(tasks, variant="single"), backend=backend, time_limit=TL, horizon=4).status == "infeasible"


def test_a_task_that_cannot_fit_the_horizon_is_infeasible():
    inst = tiny([(0, "fix", (2, 2), (0,))])
    res = P.solve(inst, backend="pulp-highs", time_limit=TL, horizon=3)
    assert res.status == "infeasible" and "cannot finish" in res.stats["message"]


def test_user_horizon_that_does_not_bind():
    inst = tiny([(0, "fix", (2, 2), (0,)), (0, "lm", (1, 1), (0,))])
    free = P.solve(inst, backend="pulp-highs", time_limit=TL)
    long = P.solve(inst, backend="pulp-highs", time_limit=TL, horizon=free.stats["proven_horizon"] + 5)
    assert long.stats["horizon_binds"] is False
    assert long.solution.objective == free.solution.objective
    short = P.solve(inst, backend="pulp-highs", time_limit=TL, horizon=free.stats["proven_horizon"] - 1)
    assert short.stats["horizon_binds"] is True and "horizon_note" in short.stats


@pytest.mark.parametrize("backend", ["pulp-highs", "ortools-cbc", "ortools-highs", P.HIGHSPY])
def test_time_limit_returns_a_status(backend):
    inst = generate("placement", "synthetic-3", seed=0, num_tasks=48, variant="single")
    res = P.solve(inst, backend=backend, time_limit=0.5, lp_bound=False)
    assert res.status in ("optimal", "feasible", "timeout")
    if res.solution.decisions is not None:
        check_solution(inst, res)
        assert res.stats["restriction_bound"] <= res.solution.objective + 1e-6


def test_bad_parameters_are_error_statuses():
    inst = tiny([(0, "fix", (2, 2), (0,))])
    assert P.solve(inst, backend="gurobi").status == "error"
    assert "unknown backend" in P.solve(inst, backend="gurobi").stats["message"]
    assert P.solve(inst, horizon=-1).status == "error"
    assert P.solve(inst, window="wide").status == "error"
    assert P.solve(inst, colour="blue").status == "error"


def test_registered_as_a_restriction():
    """placement-milp optimises fixed-allocation schedules only: kind heuristic, its bound
    declared the restriction's (issue 45), 300 s by default as before."""
    info = registry.get("placement-milp")
    assert info.kind == "heuristic" and info.families == ("placement",) and not info.proves
    assert info.bound == "restriction" and info.default_time_limit == 300.0
    assert registry.get("placement-exact").bound == "instance"
    assert {"backend", "threads", "horizon", "lp_bound"} <= set(info.params)
    res = registry.solve(tiny([(0, "fix", (2, 2), (0,))]), "placement-milp", time_limit=TL)
    assert res.status == "optimal" and res.solution.objective == 4


def test_relaxation_bound_holds_for_reallocating_schedules():
    """The bound stated for re-allocating baselines: a task given its eligible clusters' whole
    capacity from its arrival (no contention) is at least as fast as under any allocation
    history, so the sum is below every policy's total; check it against a hand-made history."""
    inst = tiny([(0, "lm", (1, 1), (0,)), (0, "lm", (1, 1), (0,))], variant="multi")
    lb = P.relaxation_bound(inst.placement)
    from edgebench.referee import evaluate_decisions
    from edgebench.solution import AllocationChange, PlacementDecision, PlacementDecisions

    hist = PlacementDecisions(tasks=(
        PlacementDecision(cluster=0, start=0, history=(AllocationChange(step=0, cpu=2, gpu=2),
                                                        AllocationChange(step=2, cpu=4, gpu=4))),
        PlacementDecision(cluster=0, start=0, history=(AllocationChange(step=0, cpu=2, gpu=2),
                                                        AllocationChange(step=2, cpu=0, gpu=0),
                                                        AllocationChange(step=6, cpu=4, gpu=4))),
    ))
    ev = evaluate_decisions(inst, hist)
    assert ev.feasible, ev.violations
    assert lb <= ev.primary_value


def test_phases_stop_at_their_deadline():
    """Issue 17 (time-limit discipline): with no time left, the greedy runs its first rule
    only and the LP window widening starts no round, so the run can return on time."""
    import time

    inst = generate("placement", "synthetic-3", seed=0, num_tasks=40)
    data = P.prepare(inst.placement)
    past = time.perf_counter() - 1.0
    assert P.best_greedy(data, deadline=past) == P.greedy_schedule(data)
    assert P.best_greedy(data) == P.best_greedy(data, deadline=time.perf_counter() + 3600)
    ub = P.schedule_objective(data, P.greedy_schedule(data))
    finish_by = P.finish_bounds(data, ub)
    last = [a + 4 for a in data.arrivals]
    info: dict = {}
    assert P.widen_by_lp(data, finish_by, last, deadline=past, info=info) == -math.inf
    assert info["rounds"] == 0 and info["stopped"] == "time"


def test_prepare_stops_at_its_deadline():
    """The options step checks the clock too: past its deadline it gives up (None), and a run
    whose limit is spent before the options exist returns at once with status timeout."""
    import time

    inst = generate("placement", "synthetic-3", seed=0, num_tasks=40)
    assert P.prepare(inst.placement, deadline=time.perf_counter() - 1.0) is None
    assert P.prepare(inst.placement, deadline=time.perf_counter() + 3600) == P.prepare(inst.placement)
    res = P.solve(inst, time_limit=1e-9)
    assert res.status == "timeout" and "options" in res.stats["message"]
    assert res.solution.decisions is None


def test_highspy_without_presolve_on_large_models(monkeypatch):
    """Above PRESOLVE_MAX_NONZEROS the highspy backend switches HiGHS's presolve off; the
    optimum is the same (every model counts as large here)."""
    inst = generate("placement", "synthetic-3", seed=3, num_tasks=7, variant="single")
    expected = P.solve(inst, time_limit=TL).solution.objective
    seen = []
    real = M.solve_highs

    def spy(model, **kw):
        seen.append(kw.get("presolve"))
        return real(model, **kw)

    monkeypatch.setattr(M, "PRESOLVE_MAX_NONZEROS", 0)
    monkeypatch.setattr(M, "solve_highs", spy)
    res = P.solve(inst, time_limit=TL)
    assert seen and set(seen) == {False}
    assert res.status == "optimal" and res.solution.objective == expected
    check_solution(inst, res)


def test_lp_row_duals_follow_highs_sign_convention():
    """The row duals of the LP relaxation (used by the Lagrangian probe in bench/) satisfy
    reduced cost = c - A^T duals, and strong duality gives the LP value: the sign convention
    the probe's multipliers rely on."""
    import numpy as np

    from edgebench.formulations.placement.highs import lp_row_duals, lp_with_reduced_costs

    inst = generate("placement", "hetero-6", seed=1, num_tasks=12, variant="single")
    data = P.prepare(inst.placement)
    fb = P.finish_bounds(data, P.schedule_objective(data, P.best_greedy(data)))
    m = P.build_model(data, fb, [a + 2 for a in data.arrivals]).model
    duals = lp_row_duals(m)
    value, reduced = lp_with_reduced_costs(m)
    cost = np.array([m.obj.get(i, 0.0) for i in range(m.num_vars)])
    at = np.zeros(m.num_vars)
    for (idx, vals), y in zip(m.rows, duals):
        at[idx] += np.asarray(vals) * y
    assert np.allclose(reduced, cost - at, atol=1e-6)
    # strong duality with 0 <= x <= 1: value = sum(active row bound * dual) + sum(min(0, reduced))
    rhs = sum(y * (hi if y < 0 else lo) for y, lo, hi in zip(duals, m.row_lo, m.row_hi) if abs(y) > 1e-12)
    assert value == pytest.approx(m.obj_const + rhs + float(np.minimum(reduced, 0.0).sum()), abs=1e-5)
