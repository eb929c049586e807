"""placement-lns-window (solvers/placement_lns_window.py): the online LNS played in the
simulator by the agents' rules.

* where the pending window never binds (a window as long as the instance) it is
  ``placement-lns-online``, start for start;
* where it binds (a window of 2), the schedule is complete, referee-feasible and seeded, and the
  TapFinger agents can play it action for action: its replay through the PettingZoo env is exact
  (every action allowed, the same starts, the same objective), while the online LNS's own
  schedule on that instance cannot be played so (the test's instance does bind);
* ``played``: a plan the LNS improved is kept only when its play by the agents' rules beats the
  list plan's; where the window never binds that is every improved plan (the same schedule);
* the time limit: past it the rest is one list-scheduling completion, status ``timeout``, still a
  complete feasible schedule; a negative neighbourhood count is refused.
"""

from __future__ import annotations

import pytest

from edgebench import registry
from edgebench.errors import InputError
from edgebench.formulations.placement.search import online
from edgebench.instances.generators import generate
from edgebench.learned import tapfinger as tf
from edgebench.learned.train_tapfinger import replay_expert
from edgebench.referee import evaluate
from edgebench.solvers import placement_lns_window as win

SMALL = {"num_tasks": 24, "switching_overhead": 0, "noise": 0}


def _starts(res) -> list[tuple[int, int, int, int]]:
    return [(d.cluster, d.start, d.cpu, d.gpu) for d in res.solution.decisions.tasks]


def _replay(inst, tasks):
    env = tf.make_env(inst, inputs="generic")
    rep = replay_expert(env, tf.EnvLayout.of_env(env), inst, tasks)
    return rep["ok"], None if rep["objectives"] is None else float(rep["objectives"]["total_completion_time"])


@pytest.mark.parametrize("variant", ["single", "multi"])
def test_without_a_binding_window_it_is_the_online_lns(variant):
    inst = generate("placement", "hetero-6", seed=3, variant=variant, pending_size=100, **SMALL)
    a = registry.solve(inst, win.SOLVER_NAME, seed=0, iterations=2)
    b = registry.solve(inst, online.SOLVER_NAME, seed=0, iterations=2)
    played = registry.solve(inst, win.SOLVER_NAME, seed=0, iterations=2, played=True)
    assert a.status == b.status == played.status == "feasible"
    assert _starts(a) == _starts(b) == _starts(played)
    assert a.solution.stats["late_starts"] == 0
    assert played.solution.stats["list_played"] == 0  # a plan the LNS improved also plays better


@pytest.mark.parametrize("played", [False, True])
@pytest.mark.parametrize("variant", ["single", "multi"])
def test_the_agents_can_play_it_action_for_action(variant, played):
    inst = generate("placement", "hetero-6", seed=3, variant=variant, pending_size=2, **SMALL)
    a = registry.solve(inst, win.SOLVER_NAME, seed=0, iterations=2, played=played)
    b = registry.solve(inst, win.SOLVER_NAME, seed=0, iterations=2, played=played)
    ev = evaluate(inst, a.solution)
    assert a.status == "feasible" and ev.feasible
    assert len(a.solution.decisions.tasks) == len(inst.placement.tasks)
    assert a.solution.objective == pytest.approx(ev.objectives["total_completion_time"], abs=1e-9)
    assert _starts(a) == _starts(b)
    ok, value = _replay(inst, _starts(a))
    assert ok and value == pytest.approx(ev.objectives["total_completion_time"], abs=1e-9)
    # the window binds here: the online LNS's own schedule cannot be played start for start
    ok_online, _ = _replay(inst, _starts(registry.solve(inst, online.SOLVER_NAME, seed=0, iterations=2)))
    assert not ok_online


def test_past_the_time_limit_the_rest_is_list_scheduled():
    inst = generate("placement", "hetero-6", seed=3, variant="single", pending_size=2, **SMALL)
    res = registry.solve(inst, win.SOLVER_NAME, time_limit=0.0)
    assert res.status == "timeout"
    assert res.solution.stats["list_only"] == 1 and res.solution.stats["plans"] == 0
    assert evaluate(inst, res.solution).feasible
    ok, _ = _replay(inst, _starts(res))
    assert ok


def test_bad_parameters_refused():
    inst = generate("placement", "synthetic-3", seed=5, variant="multi", **SMALL)
    with pytest.raises(InputError):
        registry.solve(inst, win.SOLVER_NAME, iterations=-1)
    with pytest.raises(InputError):
        registry.solve(inst, win.SOLVER_NAME, played="yes")
