"""Under the authors' additive clipped noise: the brute-force enumerator is exact (the referee
scores its schedule at the enumerated value, never worse than the fixed-allocation MILP), and
the optimistic-draws bound (formulations/placement_bound_additive.py), with its start slots in
variant single, never exceeds the enumerated optimum, on 200 tiny Hypothesis instances."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from edgebench import registry
from edgebench.formulations import placement_enum as E
from edgebench.formulations.placement_bound import start_slot_bound
from edgebench.formulations.placement_bound_additive import KIND, KIND_SLOTS, additive_bound, least_steps, slot_steps
from edgebench.instances import semantics
from edgebench.instances.generators.placement import generate_placement
from edgebench.instances.io import instance_from_dict
from edgebench.referee.placement import evaluate
from edgebench.runner.bounds import combinatorial_bound

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
    assert kind in (KIND, KIND_SLOTS) and bound >= total
    assert bound <= value + TOL
    if p.variant == "single":  # the start-slot assignment on its own, and never below the sum
        slots = start_slot_bound(p, slot_steps(p))
        assert total <= slots <= value + TOL
        assert bound == slots
    else:
        assert (bound, kind) == (total, KIND)


def test_bound_is_the_runner_bound_and_only_for_additive_noise():
    add = generate_placement("synthetic-3", seed=1, num_tasks=20, noise_model="additive")
    mul = generate_placement("synthetic-3", seed=1, num_tasks=20)
    assert additive_bound(mul.placement) is None
    b, kind = combinatorial_bound(add)
    assert kind in (KIND, KIND_SLOTS) and (b, kind) == additive_bound(add.placement)
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
