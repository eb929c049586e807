"""Every placement solver on instances with the authors' additive clipped noise: what each
returns is checked by the referee, the simulator's and the learned environment's finish steps
are the referee's, and the bounds of placement_bound.py are not claimed (the additive model
has its own; the brute-force enumerator under additive noise and that bound:
tests/formulations/test_placement_bound_additive.py)."""

from __future__ import annotations

import numpy as np
import pytest

from edgebench import registry
from edgebench.formulations.placement.bounds.ladder import proof_applies, reallocating_bound
from edgebench.instances.generators.placement import generate_placement
from edgebench.referee import evaluate as evaluate_solution
from edgebench.referee.placement import evaluate
from edgebench.solvers.placement_sim import PlacementSim

#: objective values are integers in steps: any float difference beyond this is a disagreement
TOL = 1e-9
#: time limit (s) of the search solvers in the whole-registry test (the learned policies and
#: the heuristics run to the end of the episode: a wall-clock limit would make them
#: machine-dependent)
LIMIT = 1.0


@pytest.fixture(scope="module")
def additive():
    # 9 tasks at the minimum allocation clip often (an lm task at 1 GPU gains ~0.07 < 0.1)
    return generate_placement("synthetic-3", seed=3, num_tasks=9, noise_model="additive")


@pytest.mark.slow
def test_every_placement_solver_is_checked_by_the_referee(additive):
    played = {}
    for info in registry.solvers("placement"):
        if info.applies is not None and info.applies(additive, {}) is not None:
            continue  # declined with a reason (e.g. no checkpoint for this cluster size)
        if info.kind == "learned" and info.name not in ("tapfinger", "tapfinger-bc"):
            continue  # the ablations act through the same environment; loading each costs 2-7 s
        limit = LIMIT if info.kind in ("metaheuristic", "exact") else None
        res = registry.solve(additive, info.name, time_limit=limit, seed=0)
        if info.name == "placement-exact":
            assert res.status == "error" and "additive" in res.stats["message"]
            continue
        assert res.status in ("optimal", "feasible"), (info.name, res.status, res.stats.get("message"))
        ev = evaluate_solution(additive, res.solution)
        assert ev.feasible, (info.name, ev.violations[:3])
        if res.solution.objective is not None:
            # a solver's own number is never trusted: it must be the referee's
            assert res.solution.objective == pytest.approx(ev.objectives[ev.primary], abs=TOL), info.name
        played[info.name] = ev.primary_value
    assert {"random", "optimus", "tiresias", "min", "placement-milp", "ga", "pso", "tapfinger"} <= set(played)


def test_no_bound_is_claimed_for_additive_noise(additive):
    assert not proof_applies(additive.placement)
    assert reallocating_bound(additive.placement) is None
    noiseless = generate_placement("synthetic-3", seed=3, num_tasks=9, noise_model="additive", noise=0.0)
    assert proof_applies(noiseless.placement)  # no noise: both models are the same


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_simulator_finish_steps_are_the_referees(seed):
    """Random starts at random allocations, random re-allocations and pauses: the simulator's
    finish steps equal the referee's on additive instances."""
    inst = generate_placement("synthetic-3", seed=seed, num_tasks=30, noise_model="additive", variant="multi")
    sim = PlacementSim(inst)
    rng = np.random.default_rng(seed)
    while not sim.done:
        for n in range(sim.num_clusters):
            for j in sim.running(n):
                if sim.start_step(j) < sim.t and rng.random() < 0.2:
                    c0, g0 = sim.allocation(j)
                    fc, fg, _ = sim.free(n)
                    if rng.random() < 0.3 and (c0, g0) != (0, 0):
                        sim.reallocate(j, 0, 0)
                    elif c0 + fc >= sim.min_cpu[j] and g0 + fg >= sim.min_gpu[j]:
                        sim.reallocate(j, int(rng.integers(sim.min_cpu[j], c0 + fc + 1)),
                                       int(rng.integers(sim.min_gpu[j], g0 + fg + 1)))
            for j in sim.pending(n):
                fc, fg, _ = sim.free(n)
                if fc >= sim.min_cpu[j] and fg >= sim.min_gpu[j]:
                    c = int(rng.integers(sim.min_cpu[j], fc + 1))
                    g = int(rng.integers(sim.min_gpu[j], fg + 1))
                    if sim.can_start(j, n, c, g):
                        sim.start(j, n, c, g)
        sim.step()
    ev = evaluate(inst, sim.decisions())
    assert ev.feasible, ev.violations[:3]
    assert ev.details["finish"] == [sim.finish_step(j) for j in range(sim.num_tasks)]
    assert ev.primary_value == pytest.approx(sim.total_completion_time(), abs=TOL)


@pytest.mark.parametrize("variant", ["single", "multi"])
def test_learned_env_episodes_are_scored_by_the_referee(variant):
    """The PettingZoo environment (learned/envs/placement.py) on an additive instance: its
    masks keep every episode feasible and its completion times are the referee's."""
    from edgebench.learned.envs.placement import PlacementParallelEnv

    inst = generate_placement("synthetic-3", seed=5, num_tasks=20, noise_model="additive", variant=variant)
    env = PlacementParallelEnv(inst)
    rng = np.random.default_rng(0)
    obs, infos = env.reset(seed=0)
    while env.agents:
        actions = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
        obs, _, term, trunc, infos = env.step(actions)
    assert all(term.values()) and not any(trunc.values())
    ev = evaluate(inst, next(iter(infos.values()))["decisions"])
    assert ev.feasible, ev.violations[:3]
    assert ev.primary_value == pytest.approx(env.sim.total_completion_time(), abs=TOL)
