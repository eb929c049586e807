"""The Lagrangian placement bound (4) (formulations/placement_lagrange.py): its warm start from the
start-slot assignment (2), so that (4) >= (2) in variant single; the multipliers it returns
re-certify to its value; it is deterministic.  Its validity (never above a brute-force optimum)
is tested in test_placement_bound.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings

from edgebench.formulations.placement.bounds import ladder as PB
from edgebench.formulations.placement.bounds import lagrange as PL
from edgebench.instances import sets
from test_placement_bound import tiny_instances


def _recertify(p, durations, out):
    """The value of the returned multipliers, recomputed from scratch (exact integers)."""
    value, Lam, Mu, H = out
    N = len(p.clusters)
    assert Lam.dtype == np.int64 and Lam.shape == (N, 2, H) and (Lam >= 0).all()
    if p.variant == "single":
        assert Mu.dtype == np.int64 and Mu.shape == (N, H) and (Mu >= 0).all()
    else:
        assert Mu is None
    return PL.certified_value(p, PL.task_pairs(p, durations, H), Lam, Mu, H)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances())
def test_warm_start_is_the_start_slot_assignment(inst):
    """Variant single: before any column-generation round the certified value is (2) exactly (the
    assignment's duals as first-start multipliers, Lam = 0, a horizon at which the assignment
    needs no merged tail slots); the rounds only raise it.  Both variants: the returned
    multipliers re-certify to the returned value."""
    p = inst.placement
    durations = PB.cluster_durations(p)
    assume(all(durations) and PB.proof_applies(p))
    out = PL.lagrangian_multipliers(p, durations)
    assert _recertify(p, durations, out) == out[0] == PL.lagrangian_bound(p, durations)
    if p.variant == "single":
        slots = PB.start_slot_bound(p, durations)
        start = PL.lagrangian_multipliers(p, durations, rounds=0)
        assert start[0] == slots
        assert _recertify(p, durations, start) == slots
        assert out[0] >= slots
    else:
        assert out[0] >= PB.shortest_bound(durations)


def test_assignment_horizon_is_widened():
    """Three 3-step tasks arriving together on one cluster (variant single) whose greedy horizon
    were too short (one step): the assignment LP's value is (2) = 3 + 4 + 5 and so is the
    certified value at the warm start."""
    from test_placement_exact import tiny

    p = tiny([(0, "fix", (1, 1), (0,))] * 3, [(3, 3)], "single", 0.0, {"fix": {"base": 0.34}}).placement
    d = PB.cluster_durations(p)
    value, mu, chosen = PL.assignment_duals(p, d, 1)  # too short: two tasks share the tail slot 1
    assert value == 3 + 4 + 4 and sum(t >= 1 for _, t in chosen) == 2
    assert PL.lagrangian_multipliers(p, d, rounds=0)[0] == PB.start_slot_bound(p, d) == 12


@pytest.mark.slow
@pytest.mark.parametrize("name,index", [("placement-alibaba-v2", 2)])
def test_shipped_single_instance_reaches_the_assignment(name, index):
    """On a shipped 192-task single-variant instance (4) is at least (2), its multipliers
    re-certify to its value, and two runs give the same value and multipliers."""
    p = sets.load_set(name)[index].placement
    d = PB.cluster_durations(p)
    out = PL.lagrangian_multipliers(p, d)
    assert out[0] >= PB.start_slot_bound(p, d)
    assert _recertify(p, d, out) == out[0]
    again = PL.lagrangian_multipliers(p, d)
    assert again[0] == out[0] and again[3] == out[3]
    assert np.array_equal(again[1], out[1]) and np.array_equal(again[2], out[2])
