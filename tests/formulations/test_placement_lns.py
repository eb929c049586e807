"""placement-lns: seeded, referee-feasible, never worse than its best start, and every
neighbourhood's result is a feasible fixed-allocation schedule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgebench import registry
from edgebench.errors import InputError
from edgebench.formulations import placement as P
from edgebench.formulations.placement.search import lns as L
from edgebench.instances.io import load_instance
from edgebench.referee.placement import evaluate

DATA = Path(__file__).resolve().parents[2] / "instances" / "data"
#: objective values are integers in steps
TOL = 1e-9


@pytest.fixture(scope="module")
def inst():
    return load_instance(DATA / "placement-synthetic-3-v1" / "placement-synthetic-3-s1-7c493faf.json")


def _lns(inst, **params):
    return registry.solve(inst, "placement-lns", time_limit=None, **{"iterations": 4, "block": 4, **params})


def test_registered_as_heuristic():
    info = registry.get("placement-lns")
    assert info.kind == "heuristic" and info.families == ("placement",)


def test_same_seed_same_result_and_never_worse_than_its_start(inst):
    a, b = _lns(inst, seed=5), _lns(inst, seed=5)
    assert a.solution.status == b.solution.status == "feasible"
    assert a.solution.placement == b.solution.placement
    assert a.solution.objective == b.solution.objective
    ev = evaluate(inst, a.solution.placement)
    assert ev.feasible, ev.violations[:3]
    assert ev.primary_value == pytest.approx(a.solution.objective, abs=TOL)  # the referee's value
    starts = a.solution.stats["starts"]
    assert set(starts) == set(L.STARTS)
    assert a.solution.objective <= min(starts.values()) + TOL


def test_improve_keeps_feasibility_and_never_worsens():
    """From a greedy start on a 192-task instance: every accepted schedule is feasible and the
    result is no worse than the start."""
    inst = load_instance(DATA / "placement-synthetic-3-v2" / "placement-synthetic-3-s4.json.gz")
    data = P.prepare(inst.placement)
    start = P.repair_schedule(data, [None] * data.num_tasks)  # arrival order, earliest completion each
    v0 = P.schedule_objective(data, start)
    sched, info = L.improve(data, start, seed=1, deadline=None, iterations=3, block=10)
    assert not P.schedule_violations(data, sched)
    assert info["lns_start"] == v0 and info["lns_end"] == P.schedule_objective(data, sched) <= v0
    ev = evaluate(inst, P.to_decisions(sched))
    assert ev.feasible and ev.primary_value == pytest.approx(info["lns_end"], abs=TOL)


def test_to_schedule_round_trip(inst):
    data = P.prepare(inst.placement)
    sched = P.best_greedy(data)
    back = L.to_schedule(inst.placement, data, P.to_decisions(sched))
    assert back is not None
    assert P.schedule_objective(data, back) <= P.schedule_objective(data, sched)


def test_neighbourhood_is_seeded(inst):
    data = P.prepare(inst.placement)
    sched = P.best_greedy(data)
    a = [L.neighbourhood(np.random.default_rng(3), data, sched, 5) for _ in range(2)]
    assert a[0] == a[1] and len(a[0]) == 5


def test_bad_parameters_name_the_field(inst):
    for bad in ({"block": 0}, {"start_share": 2.0}, {"nonsense": 1}):
        with pytest.raises(InputError, match=next(iter(bad))):
            registry.solve(inst, "placement-lns", time_limit=5, **bad)
