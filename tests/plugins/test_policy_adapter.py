"""Online policies through the environments' interface (edgebench.policy) and the worked
example examples/greedy_policy.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgebench import registry
from edgebench.instances import sets
from edgebench.policy import policy_solver, run_episode
from edgebench.referee import evaluate
from edgebench.runner.suite import load_plugin

ROOT = Path(__file__).resolve().parents[2]
SETS = {"mapping": "mapping-thesis-v1", "offloading": "offloading-heft-random-v1",
        "placement": "placement-synthetic-3-v1"}


def first_allowed(obs) -> int:
    return int(np.flatnonzero(obs["action_mask"])[0])


@pytest.mark.parametrize("family", sorted(SETS))
def test_a_policy_function_plays_every_family_feasibly_and_deterministically(family):
    inst = sets.load_set(SETS[family])[0]
    seen = []

    def policy(obs, info):
        seen.append((sorted(obs), obs["action_mask"].dtype, info.get("agent")))
        return first_allowed(obs)

    decisions, status, stats = run_episode(inst, policy, seed=3)
    assert status == "feasible" and stats["steps"] > 0
    keys, dtype, agent = seen[0]
    assert dtype == np.int8 and "action_mask" in keys
    assert (agent is not None) == (family == "placement")
    again, _, _ = run_episode(inst, first_allowed, seed=3)
    assert again == decisions


def test_policy_solver_registers_and_the_referee_scores_it(monkeypatch):
    registry.solvers()  # load the built-ins first: the copy below must hold them
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    solve = policy_solver("test-first-allowed", families=("offloading",))(first_allowed)
    info = registry.get("test-first-allowed")
    assert info.fn is solve and solve.policy is first_allowed and info.families == ("offloading",)
    inst = sets.load_set(SETS["offloading"])[0]
    res = registry.solve(inst, "test-first-allowed", seed=0)
    assert res.status == "feasible" and evaluate(inst, res.solution).feasible


def test_time_limit_gives_timeout():
    inst = sets.load_set(SETS["offloading"])[0]
    decisions, status, _ = run_episode(inst, first_allowed, time_limit=0.0)
    assert (decisions, status) == (None, "timeout")


def test_worked_example_beats_random_on_mapping_and_offloading():
    load_plugin(str(ROOT / "examples" / "greedy_policy.py"))
    info = registry.get("greedy-policy")
    assert info.origin == f"plugin {ROOT / 'examples' / 'greedy_policy.py'}"
    for family in ("mapping", "offloading", "placement"):
        inst = sets.load_set(SETS[family])[0]
        ev = evaluate(inst, info.fn(inst, seed=0).solution)
        rnd = evaluate(inst, registry.solve(inst, "random", seed=0).solution)
        assert ev.feasible
        if family != "placement":
            better = ev.objectives[ev.primary] >= rnd.objectives[rnd.primary] if ev.sense == "max" else \
                ev.objectives[ev.primary] <= rnd.objectives[rnd.primary]
            assert better, family
