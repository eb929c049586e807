"""Under the authors' additive clipped noise: the brute-force enumerator is exact (the referee
scores its schedule at the enumerated value, never worse than the fixed-allocation MILP), and
the optimistic-draws bound (formulations/placement_bound_additive.py), with its start slots in
variant single and its trajectory column generation, never exceeds the enumerated optimum, on
200 tiny Hypothesis instances; the envelope step is above every step from a smaller progress
(a dense grid), and the labelling price under additive noise is at most the referee's own cost
of every short history."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from edgebench import registry
from edgebench.formulations.placement import enum as E
from edgebench.formulations.placement.bounds.ladder import start_slot_bound
from edgebench.formulations.placement.bounds import trajectory as PT
from edgebench.formulations.placement.bounds.ladder import cluster_durations
from edgebench.formulations.placement.bounds.additive import KIND, KIND_SLOTS, KIND_TRAJECTORY, additive_bound, least_steps, slot_steps, trajectory_additive
from edgebench.formulations.placement.bounds.lagrange import SCALE
from edgebench.instances import semantics
from edgebench.instances.generators.placement import generate_placement
from edgebench.instances.io import instance_from_dict
from edgebench.referee.placement import evaluate
from edgebench.runner.bounds import combinatorial_bound
from test_placement_trajectory import least_history_cost

#: objective values are integers in steps
TOL = 1e-9


def _tiny(tasks, clusters, variant, overhead, noise, types, seed):
    return instance_from_dict({
        "format_version": 1, "family": "placement", "id": "tiny-additive-bound",
        "placement": {
            "clusters": [{"capacity": {"cpu": c, "gpu": g}} for c, g in clusters],
            "tasks": [{"arrival": a, "type": t, "minimum": {"cpu": 1, "gpu": m}, "eligible": list(e)}
                      for a, t, m, e in tasks],
            "performance": {"kind": "synthetic", "types": types},
            "noise": noise, "noise_seed": seed, "noise_model": "additive", "variant": variant,
            "switching_overhead": overhead,
        },
    })


@st.composite
def tiny_additive(draw):
    """1-2 tasks on 1-2 clusters of 1-2 cpu / 1-2 gpu, gains from 0.15 and noise 0.1-0.3 (steps
    clipped at 0), both variants, switching loss on / off, the noise seed drawn."""
    N = draw(st.integers(1, 2))
    clusters = [(draw(st.integers(1, 2)), draw(st.integers(1, 2))) for _ in range(N)]
    tasks = [(draw(st.integers(0, 2)), draw(st.sampled_from(["fix", "lm"])), draw(st.integers(0, 1)),
              sorted(draw(st.lists(st.integers(0, N - 1), min_size=1, max_size=N, unique=True))))
             for _ in range(draw(st.integers(1, 2)))]
    types = {"fix": {"base": draw(st.sampled_from([0.15, 0.25, 0.4]))},
             "lm": {"gpu_scale": draw(st.sampled_from([1.0, 2.0])), "cpu_per_gpu": draw(st.sampled_from([None, 1.0])),
                    "base": draw(st.sampled_from([0.15, 0.2]))}}
    return _tiny(tasks, clusters, draw(st.sampled_from(["single", "multi"])), draw(st.sampled_from([0.0, 0.5])),
                 draw(st.sampled_from([0.1, 0.2, 0.3])), types, draw(st.integers(0, 10**6)))


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_additive())
def test_enumerator_is_exact_and_the_bound_never_exceeds_its_optimum(inst):
    try:
        value, decisions = E.optimum(inst, max_states=5_000)
    except E.StateLimitError:
        assume(False)  # too large to enumerate here: drawn again
    ev = evaluate(inst, decisions)
    assert ev.feasible, ev.violations[:3]
    assert ev.primary_value == pytest.approx(value, abs=TOL)
    p = inst.placement
    bound, kind = additive_bound(p)
    total = sum(least_steps(p, j) for j in range(len(p.tasks)))
    assert kind in (KIND, KIND_SLOTS, KIND_TRAJECTORY) and bound >= total
    assert bound <= value + TOL
    floor = total
    if p.variant == "single":  # the start-slot assignment on its own, and never below the sum
        slots = start_slot_bound(p, slot_steps(p))
        assert total <= slots <= value + TOL
        floor = slots
    # the trajectory column generation on its own (its plain value and with the cuts)
    traj = trajectory_additive(p, 0)
    if traj is not None:
        assert traj.plain <= traj.value <= value + TOL
        assert bound == max(floor, traj.value)
    else:
        assert bound == floor


def test_bound_is_the_runner_bound_and_only_for_additive_noise():
    add = generate_placement("synthetic-3", seed=1, num_tasks=20, noise_model="additive")
    mul = generate_placement("synthetic-3", seed=1, num_tasks=20)
    assert additive_bound(mul.placement) is None
    b, kind = combinatorial_bound(add)
    assert kind in (KIND, KIND_SLOTS, KIND_TRAJECTORY) and (b, kind) == additive_bound(add.placement)
    # every task needs at least one executed step
    assert b >= len(add.placement.tasks)
    assert all(least_steps(add.placement, j) >= 1 for j in range(20))


def test_enumerator_never_worse_than_fixed_allocations():
    inst = _tiny([(0, "lm", 1, [0]), (1, "fix", 0, [0])], [(1, 2)], "single", 0.5, 0.2,
                 {"fix": {"base": 0.15}, "lm": {"gpu_scale": 1.0, "cpu_per_gpu": None, "base": 0.15}}, 3)
    value, _ = E.optimum(inst, max_states=100_000)
    milp = registry.solve(inst, "placement-milp", time_limit=30)
    assert milp.status == "optimal"
    assert value <= milp.solution.objective + TOL  # fixed allocations are a subset


def test_clipping_happens_in_the_tiny_instances():
    inst = _tiny([(0, "fix", 0, [0])], [(1, 1)], "single", 0.5, 0.3, {"fix": {"base": 0.15}}, 7)
    gains = [semantics.noisy_gain(inst.placement, 0, k, 0.15) for k in range(40)]
    assert min(gains) == 0.0 and max(gains) > 0.3


def test_start_slots_delay_one_of_two_tasks_arriving_together():
    """Two tasks whose gain does not depend on the allocation arrive together on one cluster
    with room for both; variant single starts one a step later: the bound is K_0 + K_1 + 1, the
    enumerated optimum; variant multi has no such rule (K_0 + K_1)."""
    tasks = [(0, "fix", 0, [0]), (0, "fix", 0, [0])]
    types = {"fix": {"base": 0.25}}
    for variant, extra, kind in (("single", 1, KIND_SLOTS), ("multi", 0, KIND)):
        inst = _tiny(tasks, [(2, 2)], variant, 0.0, 0.2, types, 11)
        p = inst.placement
        k = least_steps(p, 0) + least_steps(p, 1)
        assert additive_bound(p) == (k + extra, kind)
        assert E.optimum(inst, max_states=100_000)[0] == pytest.approx(k + extra, abs=TOL)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.floats(0.0, 1.0), st.floats(0.0, 0.5), st.floats(0.3, 2.0), st.floats(-0.4, 0.4),
       st.sampled_from([1.0, 0.5, 0.8]), st.floats(0.0, 1.0), st.booleans())
def test_envelope_is_above_every_step_from_less_progress(w, base, kappa, eps, sig, p, synthetic):
    """The envelope at progress p is at least q + sig max(h(q) + eps, 0) (the referee's step,
    h(q) = w sqrt(max(kappa - q, 0)) + base, or w for a table gain) for every q <= p on a grid of
    2,001 points (p itself included), and it does not fall when p, the parameter or sig grows."""
    qs = np.append(np.linspace(0.0, p, 2001), p)
    h = w * np.sqrt(np.maximum(kappa - qs, 0.0)) + base if synthetic else np.full(qs.size, w)
    real = qs + sig * np.maximum(h + eps, 0.0)
    env = PT.additive_envelope(np.array([p]), np.array([w]), eps, sig, kappa, base, synthetic)[0, 0]
    assert env >= real.max()
    more = PT.additive_envelope(np.array([p, min(p + 0.05, 1.0)]), np.array([w, min(w + 0.1, 1.0)]), eps,
                                np.array([[sig, sig], [sig, sig]]), kappa, base, synthetic)
    assert more[0, 0] <= more[1, 0] and more[0, 0] <= more[0, 1] <= more[1, 1]
    assert env <= PT.additive_envelope(np.array([p]), np.array([w]), eps, 1.0, kappa, base, synthetic)[0, 0]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.sampled_from(["fix", "lm"]), st.integers(1, 3), st.integers(1, 3), st.sampled_from([0.1, 0.2, 0.3]),
       st.sampled_from([0.0, 0.5]), st.sampled_from(["single", "multi"]), st.integers(0, 2 ** 31))
def test_price_is_at_most_the_cost_of_every_history(kind, cpu, gpu, noise, overhead, variant, seed):
    """One task arriving at 1 on one (cpu, gpu) cluster under additive noise, random multipliers
    on 7 steps: the labelling price (switching loss on and off) is at most (F - a) + sum Lam x +
    Mu[first start] of every history of up to 4 steps that the referee's own simulation
    (`task_finish`) completes by step 5."""
    types = {"fix": {"base": 0.25}, "lm": {"gpu_scale": 2.0, "cpu_per_gpu": None, "base": 0.1}}
    p = _tiny([(1, kind, 1, [0])], [(cpu, gpu)], variant, overhead, noise, types, seed % 1000).placement
    rng = np.random.default_rng(seed)
    H = 7
    Lam = rng.integers(0, 3, size=(1, 2, H)).astype(np.int64) << (SCALE - 2)
    Mu = (rng.integers(0, 3, size=(1, H)).astype(np.int64) << (SCALE - 1)) if variant == "single" else None
    least = least_history_cost(p, Lam, Mu)
    task = PT.tasks_of(p, cluster_durations(p))[0]
    for switching in (True, False):
        assert PT.price_task(task, Lam, Mu, H, switching=switching)[0][0] <= least
