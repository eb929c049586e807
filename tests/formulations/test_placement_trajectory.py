"""The trajectory bound (6) (formulations/placement_trajectory.py): the relaxed labelling price is
never above the referee's own cost of any allocation history, the bound is never above the
brute-force optimum of the referee's problem (and, with the switching loss dropped, of the
switching-relaxed problem), never below (4), and strictly above it on a hand-made instance."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from edgebench.formulations.placement.bounds import ladder as PB
from edgebench.formulations.placement import enum as E
from edgebench.formulations.placement.bounds import labelling as LB
from edgebench.formulations.placement.bounds import lagrange as PL
from edgebench.formulations.placement.bounds import trajectory as PT
from edgebench.instances import semantics
from edgebench.referee.placement import task_finish
from test_placement_bound import TYPES, brute_force, tiny_instances
from test_placement_exact import tiny

S = 1 << PL.SCALE


@pytest.mark.slow
@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances())
def test_bound_never_above_the_brute_force_optimum(inst):
    """(6) <= the referee's own optimum (placement_enum, where it finishes within 2,000 states:
    160 of the 200) and >= (4); (6) without the switching loss <= the optimum of the
    switching-relaxed problem (brute force, all 200); the certified values at fixed multipliers
    that no optimiser chose <= the same optima."""
    p = inst.placement
    durations = PB.cluster_durations(p)
    assume(all(durations) and PB.proof_applies(p))
    relaxed = brute_force(p)
    assert relaxed < math.inf
    start = PL.lagrangian_multipliers(p, durations)
    v6 = PT.trajectory_multipliers(p, durations, start)[0]
    v6_relaxed = PT.trajectory_multipliers(p, durations, start, switching=False)[0]
    assert start[0] <= v6_relaxed <= relaxed + 1e-9, (start[0], v6_relaxed, relaxed)
    assert start[0] <= v6
    N, H = len(p.clusters), start[3]
    lam = (np.arange(N * 2 * H, dtype=np.int64).reshape(N, 2, H) % 3) << (PL.SCALE - 1)
    mu = np.full((N, H), S, dtype=np.int64) if p.variant == "single" else None
    tasks = PT.tasks_of(p, durations)
    assert PT.certified_value(p, tasks, lam, mu, H, switching=False) <= relaxed + 1e-9
    try:
        opt = E.optimum(inst, max_states=2_000)[0]
    except E.StateLimitError:
        return
    assert relaxed <= opt
    assert v6 <= opt + 1e-9, (v6, opt)
    assert PT.certified_value(p, tasks, lam, mu, H) <= opt + 1e-9


def _histories(opts, steps):
    """Every allocation history of `steps` steps: per step a pause or one allocation."""
    return itertools.product([(0, 0)] + opts, repeat=steps)


def one_task(kind, cpu, gpu, noise, variant, seed):
    """(payload, rng, H, Lam, Mu): one task of ``kind`` arriving at 1 on one (cpu, gpu) cluster,
    random multipliers on 7 steps (Mu only in the single variant)."""
    p = tiny([(1, kind, (1, 1), (0,))], [(cpu, gpu)], variant, noise, TYPES).placement
    rng = np.random.default_rng(seed)
    H = 7
    Lam = rng.integers(0, 3, size=(1, 2, H)).astype(np.int64) << (PL.SCALE - 2)
    Mu = (rng.integers(0, 3, size=(1, H)).astype(np.int64) << (PL.SCALE - 1)) if variant == "single" else None
    return p, rng, H, Lam, Mu


def least_history_cost(p, Lam, Mu, step_cost=None):
    """Task 0 (arriving at 1) on cluster 0: the least of (F - a) 2**SCALE + sum Lam x + Mu[first
    start] (+ ``step_cost(t, cpu, gpu)`` per executed step) over every history of up to 4 steps
    that the referee's own simulation (`task_finish`) completes by step 5 (inf: none)."""
    least = math.inf
    for hist in _histories(semantics.allocation_options(p, 0, 0), 4):
        runs = [i for i, x in enumerate(hist) if x != (0, 0)]
        if not runs:
            continue
        s = 1 + runs[0]
        changes = [(1 + i, c, g) for i, (c, g) in enumerate(hist) if i >= runs[0]]
        F = task_finish(p, 0, s, changes)
        if F is None or F > 5:
            continue
        cost = (F - 1) * S + (int(Mu[0, s]) if Mu is not None else 0)
        for i, (c, g) in enumerate(hist):
            if 1 + i < F:
                cost += int(Lam[0, 0, 1 + i]) * c + int(Lam[0, 1, 1 + i]) * g
                cost += step_cost(1 + i, c, g) if step_cost is not None else 0
        least = min(least, cost)
    return least


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.sampled_from(sorted(TYPES)), st.integers(1, 3), st.integers(1, 3), st.sampled_from([0.0, 0.2]),
       st.sampled_from(["single", "multi"]), st.integers(0, 2 ** 31))
def test_price_is_at_most_the_cost_of_every_history(kind, cpu, gpu, noise, variant, seed):
    """One task on one cluster, random multipliers: the labelling price (switching loss on and
    off) is at most (F - a) + sum Lam x + Mu[first start] of every history of up to 4 steps
    that the referee's own simulation (`task_finish`) completes, and equal to the least of them
    when the cheapest completes within 4 steps (the relaxations cost nothing here)."""
    p, rng, H, Lam, Mu = one_task(kind, cpu, gpu, noise, variant, seed)
    least = least_history_cost(p, Lam, Mu)
    task = PT.tasks_of(p, PB.cluster_durations(p))[0]
    for switching in (True, False):
        price = PT.price_task(task, Lam, Mu, H, switching=switching)[0][0]
        assert price <= least
    if least < 4 * S:  # a longer history costs at least 4 2**SCALE: the cheapest is enumerated
        assert PT.price_task(task, Lam, Mu, H)[0][0] == least


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.sampled_from(sorted(TYPES)), st.integers(1, 3), st.integers(1, 3), st.sampled_from([0.0, 0.2]),
       st.sampled_from(["single", "multi"]), st.integers(0, 2 ** 31), st.integers(-3 * S, 3 * S))
def test_a_cap_keeps_the_least_price(kind, cpu, gpu, noise, variant, seed, shift):
    """Priced with a cap, a task reports a history only below it, and least_price(.., cap) is
    min(least price, cap): the least price itself whenever the cap is at or above it (the capped
    pricing of column generation), never above it otherwise."""
    inst = tiny([(1, kind, (1, 1), (0,)), (0, "lm", (1, 1), (0,))], [(cpu, gpu), (2, 2)], variant, noise, TYPES)
    p = inst.placement
    rng = np.random.default_rng(seed)
    H = 7
    Lam = rng.integers(0, 3, size=(2, 2, H)).astype(np.int64) << (PL.SCALE - 2)
    Mu = (rng.integers(0, 3, size=(2, H)).astype(np.int64) << (PL.SCALE - 1)) if variant == "single" else None
    for task in PT.tasks_of(p, PB.cluster_durations(p)):
        least = PT.price_task(task, Lam, Mu, H)[0][0]
        cap = max(least + shift, 0)
        capped = PT.price_task(task, Lam, Mu, H, cap=cap)
        assert all(c[0] < cap for c in capped)
        assert PT.least_price(capped, cap) == min(least, cap)


def test_labelling_draws_more_noise_factors_when_it_needs_them():
    """The compiled labelling gets the noise factors drawn so far; a label past them sends it back
    for more (NEED_FACTORS) and the same programme runs again: the answer is the one priced with
    every factor drawn up front."""
    inst = tiny([(0, "lm", (1, 1), (0,)), (0, "fix", (1, 1), (0,))], [(2, 2)], "multi", 0.2, TYPES)
    p = inst.placement
    H = 6
    Lam = np.full((1, 2, H), 1 << (PL.SCALE - 3), dtype=np.int64)
    full = PT.Options(p, 0, 0)
    short = PT.Options(p, 0, 0)
    short.noise = short.noise[:1]
    assert short.factors().size == 1
    want = PT.price_pair(full, 0, 0, Lam, None, H)
    work = [0]
    assert PT.price_pair(short, 0, 0, Lam, None, H, work=work) == want and want is not None
    assert len(short.noise) > 1 and short.noise == full.noise[:len(short.noise)] and work[0] > 0


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 50)), min_size=1, max_size=40))
def test_segmented_pareto_filter(rows):
    """The labelling's Pareto filter on labels sorted by (key, ...): label i is kept iff cost[i] <
    every earlier cost of its key (also for costs near the int64 limit)."""
    rows = sorted(rows, key=lambda r: r[0])
    key = np.array([r[0] for r in rows], dtype=np.int64)
    cost = np.array([r[1] for r in rows], dtype=np.int64)
    want = [all(cost[i] < cost[j] for j in range(i) if key[j] == key[i]) for i in range(len(rows))]
    idx = np.arange(len(rows), dtype=np.int64)
    assert LB.pareto(key, cost, idx).tolist() == [i for i in range(len(rows)) if want[i]]
    assert LB.pareto(key, cost << 56, idx).tolist() == [i for i in range(len(rows)) if want[i]]


def test_strictly_above_the_lagrangian_bound():
    """One "fix" task (3 steps at (1, 1), arriving at 1) and one "lm" task (arriving at 2; 2 steps
    with 2 GPUs in one of them, 3 steps with 1 GPU) on a (3 cpu, 2 gpu) cluster: (4) lets the fix
    task put its 3 GPU-steps as 2 + 1 in steps 1-2, freeing step 3 for the lm task, and gives 5;
    every real history of the fix task holds 1 GPU in each of 3 executed steps, so (6) gives the
    optimum 6 (placement_enum)."""
    inst = tiny([(1, "fix", (1, 1), (0,)), (2, "lm", (1, 1), (0,))], [(3, 2)], "single", 0.0, TYPES)
    p = inst.placement
    d = PB.cluster_durations(p)
    assert PT.trajectory_bound(p, d) == (5, 6) == (PL.lagrangian_bound(p, d), E.optimum(inst)[0])
    assert PB.reallocating_bound(p) == (6, PB.KIND_TRAJECTORY)


def test_same_input_same_bound():
    inst = tiny([(0, "gpu", (1, 1), (0,)), (0, "fix", (1, 1), (0,)), (0, "lm", (1, 1), (0,))], [(4, 2)],
                "single", 0.2, TYPES)
    p = inst.placement
    d = PB.cluster_durations(p)
    first = PT.trajectory_multipliers(p, d, PL.lagrangian_multipliers(p, d))
    second = PT.trajectory_multipliers(p, d, PL.lagrangian_multipliers(p, d))
    assert first[0] == second[0] == 11
    assert np.array_equal(first[1], second[1]) and np.array_equal(first[2], second[2])


def test_master_columns_carry_task_cost_and_cluster():
    """The master's per-column (task, F - a, cluster) (``_Master.meta``, read by
    bench/probe_lp_clusters.py): its masses sum to 1 per live task, the LP value is the sum of mass
    times cost, and every column with mass sits on a cluster where its task can finish."""
    inst = tiny([(0, "gpu", (1, 1), (0, 1)), (0, "fix", (1, 1), (0,)), (1, "lm", (1, 1), (1,)), (1, "gpu", (1, 1), (0, 1))],
                [(4, 2), (2, 2)], "single", 0.2, TYPES)
    p = inst.placement
    d = PB.cluster_durations(p)
    r = PT.rounded_multipliers(p, d, PL.lagrangian_multipliers(p, d))
    value = r.master.solve()[0]
    x = r.master.primal()
    assert len(r.master.meta) == x.size
    live = PT.tasks_of(p, d)
    mass = np.zeros(len(live))
    total = 0.0
    for c, (i, m, n) in enumerate(r.master.meta):
        mass[i] += x[c]
        total += x[c] * m
        if x[c] > 1e-9:
            assert n in d[live[i].j]
    assert np.allclose(mass, 1.0, atol=1e-7)
    assert math.isclose(total, value, rel_tol=1e-9, abs_tol=1e-7)
