"""The Lagrangian-guided list schedule (placement-lagrange, issue 23): referee-feasible for every
order and rule, seeded, a placement-lns warm start from it never returns worse, and bad
parameters are one line with exit code 2 through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgebench import registry
from edgebench.cli import main
from edgebench.errors import InputError
from edgebench.formulations import placement as P
from edgebench.formulations.placement.search import lagrange_list as C
from edgebench.formulations.placement.search import lns as L
from edgebench.instances.generators.placement import generate_placement
from edgebench.instances.io import load_instance
from edgebench.referee.placement import evaluate

DATA = Path(__file__).resolve().parents[2] / "instances" / "data"
#: 24 tasks, 6 clusters, variant multi
SMALL = DATA / "placement-hetero-6-v1" / "placement-hetero-6-s0-c5bf8a3d.json"
#: 12 tasks, 3 clusters, variant single
SINGLE = DATA / "placement-synthetic-3-v1" / "placement-synthetic-3-s0-7c493faf.json"
#: column-generation rounds in these tests (any number gives valid multipliers; fewer are faster)
ROUNDS = 8
#: objective values are integers in steps
TOL = 1e-9


@pytest.fixture(scope="module", params=[SMALL, SINGLE], ids=["multi", "single"])
def case(request):
    inst = load_instance(request.param)
    data = P.prepare(inst.placement)
    targets, prices, value = C.lagrangian_targets(inst.placement, rounds=ROUNDS)
    return inst, data, targets, prices, value


def test_targets_are_priced_trajectories_of_eligible_clusters(case):
    inst, data, targets, prices, value = case
    assert value > 0 and len(targets) == data.num_tasks
    for j, t in enumerate(targets):
        assert t is not None and t.cluster in inst.placement.tasks[j].eligible
        assert data.arrivals[j] <= t.start < t.finish
        # the window holds at least the cluster's fewest steps
        assert t.finish - t.start >= min(o.steps for o in data.options[j] if o.cluster == t.cluster)
    assert (prices.Lam >= 0).all() and (prices.Mu is None) == (inst.placement.variant == "multi")


@pytest.mark.parametrize("rule", list(C.RULES))
def test_every_order_and_rule_is_referee_feasible(case, rule):
    inst, data, targets, prices, _ = case
    for alpha in list(C.ORDERS.values()) + [[0.3] * data.num_tasks]:
        sched = C.list_schedule(data, targets, prices, alpha, rule)
        assert not P.schedule_violations(data, sched)
        ev = evaluate(inst, P.to_decisions(sched))
        assert ev.feasible, ev.violations[:3]
        assert ev.primary_value == pytest.approx(P.schedule_objective(data, sched), abs=TOL)


def test_solver_is_seeded_and_scored_by_the_referee(case):
    inst = case[0]
    a = registry.solve(inst, C.SOLVER_NAME, time_limit=None, seed=3, samples=3, rounds=ROUNDS)
    b = registry.solve(inst, C.SOLVER_NAME, time_limit=None, seed=3, samples=3, rounds=ROUNDS)
    assert a.solution.status == "feasible"
    assert a.solution.placement == b.solution.placement and a.solution.objective == b.solution.objective
    ev = evaluate(inst, a.solution.placement)
    assert ev.feasible and ev.primary_value == pytest.approx(a.solution.objective, abs=TOL)
    st = a.solution.stats
    assert st["candidates"][st["chosen"]] == pytest.approx(a.solution.objective, abs=TOL)
    assert min(st["candidates"].values()) == pytest.approx(a.solution.objective, abs=TOL)
    assert len(st["candidates"]) == len(C.RULES) * len(C.ORDERS) + 3
    # the objective is never below the certified Lagrangian value
    assert a.solution.objective >= st["lagrangian_value"] - TOL


def test_lns_warm_started_from_the_construction_never_worse():
    inst = load_instance(SMALL)
    built = registry.solve(inst, C.SOLVER_NAME, time_limit=None, seed=1).solution.objective
    r = registry.solve(inst, "placement-lns", time_limit=None, seed=1, warm_start=L.LAGRANGIAN,
                       iterations=4, block=6)
    st = r.solution.stats
    assert st["warm_start"] == "lagrangian construction" and st["lns_from"] == st["warm_start"]
    assert st["lns_start"] == pytest.approx(built, abs=TOL)
    assert evaluate(inst, r.solution.placement).feasible
    assert r.solution.objective <= built + TOL


@pytest.mark.parametrize("param, piece", [("samples=-1", "samples"), ("rounds=0", "rounds"),
                                          ("samples=many", "samples"), ("alpha=1", "alpha")])
def test_bad_params_are_one_line_and_exit_2(tmp_path, capsys, param, piece):
    target = tmp_path / "out.json"
    rc = main(["solve", str(SMALL), "--solver", C.SOLVER_NAME, "--param", param, "-o", str(target)])
    out, err = capsys.readouterr()
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("edgebench: error: ") and piece in lines[0], err
    assert "Traceback" not in err and not target.exists()


def test_bad_params_through_the_api_are_input_errors():
    inst = load_instance(SMALL)
    with pytest.raises(InputError, match="samples"):
        registry.solve(inst, C.SOLVER_NAME, samples=-2)
    with pytest.raises(InputError, match="warm_start"):
        registry.solve(inst, "placement-lns", warm_start="lagrange")


@pytest.mark.parametrize("cutoff", ["bound", "first"])
def test_lns_cutoff_rules_are_seeded_feasible_and_never_worse(cutoff):
    inst = load_instance(SMALL)
    runs = [registry.solve(inst, "placement-lns", time_limit=None, seed=2, warm_start="best-known", iterations=4,
                           block=8, cutoff=cutoff) for _ in range(2)]
    a, b = (r.solution for r in runs)
    assert a.placement == b.placement and a.objective == b.objective
    assert evaluate(inst, a.placement).feasible
    assert a.objective <= a.stats["lns_start"] + TOL and a.params["cutoff"] == cutoff


def test_bad_cutoff_is_an_input_error():
    with pytest.raises(InputError, match="cutoff"):
        registry.solve(load_instance(SMALL), "placement-lns", cutoff="early")


def test_without_the_bounds_preconditions_only_the_control_orders_run():
    inst = generate_placement("synthetic-3", seed=3, num_tasks=9, noise_model="additive")
    res = registry.solve(inst, C.SOLVER_NAME, time_limit=None, seed=0)
    st = res.solution.stats
    assert res.solution.status == "feasible" and evaluate(inst, res.solution.placement).feasible
    assert st["lagrangian_value"] is None
    assert {c.split("/")[0] for c in st["candidates"]} == {k for k, a in C.ORDERS.items() if a < 0}
