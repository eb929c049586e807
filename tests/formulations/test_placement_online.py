"""placement-lns-online (formulations/placement/search/online.py): the rolling-horizon LNS.

* non-clairvoyant: the starts it commits before an arrival step do not depend on any task that
  arrives at or after that step (the run on the instance cut at step t commits the same starts
  before the next arrival as the run on the whole instance);
* a complete referee-feasible schedule whose reported objective is the referee's; the same seed
  gives the same schedule;
* bad input: a negative neighbourhood count is refused before any work; tasks not listed by
  arrival are an ``error`` result with its reason, not an exception.
"""

from __future__ import annotations

import pytest

from edgebench import registry
from edgebench.errors import InputError
from edgebench.formulations.placement.search import online
from edgebench.instances.generators import generate
from edgebench.instances.model import Instance, PlacementPayload
from edgebench.referee import evaluate

SMALL = {"num_tasks": 24, "switching_overhead": 0, "noise": 0}


@pytest.fixture(scope="module")
def inst():
    return generate("placement", "synthetic-3", seed=5, variant="multi", **SMALL)


def test_commitments_ignore_later_tasks(inst):
    arrivals = sorted({t.arrival for t in inst.placement.tasks})
    assert len(arrivals) >= 4
    full, _ = online.rolling_horizon(inst, iterations=2, seed=0)
    for t in arrivals[1:-1:2]:
        nxt = online.next_arrival(inst, t)
        cut, _ = online.rolling_horizon(online.known_instance(inst, t), iterations=2, seed=0)
        before = {j: v for j, v in full.items() if v[1] < nxt}
        assert before, f"nothing started before step {nxt}"
        assert {j: v for j, v in cut.items() if v[1] < nxt} == before
        assert all(inst.placement.tasks[j].arrival <= v[1] for j, v in full.items())


@pytest.mark.parametrize("variant", ["multi", "single"])
def test_feasible_complete_and_seeded(variant):
    inst = generate("placement", "hetero-6", seed=3, variant=variant, **SMALL)
    a = registry.solve(inst, online.SOLVER_NAME, seed=0)
    b = registry.solve(inst, online.SOLVER_NAME, seed=0)
    ev = evaluate(inst, a.solution)
    assert a.status == "feasible" and ev.feasible
    assert a.solution.objective == pytest.approx(ev.objectives["total_completion_time"], abs=1e-9)
    assert a.solution.stats["plans"] == len({t.arrival for t in inst.placement.tasks})
    assert [d.model_dump() for d in a.solution.decisions.tasks] == [d.model_dump() for d in b.solution.decisions.tasks]


def test_negative_iterations_refused(inst):
    with pytest.raises(InputError):
        registry.solve(inst, online.SOLVER_NAME, iterations=-1)


def test_tasks_not_by_arrival_is_an_error_result(inst):
    payload = inst.placement
    fields = {name: getattr(payload, name) for name in type(payload).model_fields}
    fields["tasks"] = tuple(reversed(payload.tasks))
    rev = Instance(family="placement", id="reversed", name=inst.name, meta={},
                   placement=PlacementPayload.model_validate(fields))
    res = registry.solve(rev, online.SOLVER_NAME)
    assert res.status == "error" and "task order" in res.solution.stats["message"]


def test_time_limit_list_schedules_the_rest(inst):
    """Past the deadline the tasks not yet started are list-scheduled in one pass: still complete,
    feasible and online (no start before its task's arrival)."""
    started, info = online.rolling_horizon(inst, iterations=2, seed=0, deadline=0.0)
    assert info["list_only"] == 1 and info["plans"] == 0 and len(started) == len(inst.placement.tasks)
    assert all(inst.placement.tasks[j].arrival <= v[1] for j, v in started.items())
    res = registry.solve(inst, online.SOLVER_NAME, time_limit=0)
    assert res.status == "timeout" and evaluate(inst, res.solution).feasible
