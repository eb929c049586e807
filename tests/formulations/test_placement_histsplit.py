"""Bound (7) split by its knapsack row (formulations/placement/bounds/histsplit.py): the same value
as the unsplit (7) for every share (the cases cover every master solution and each is a
restriction of it), so never above the referee's own optimum of tiny instances and equal to it
wherever U is above it; fewer columns at a time on a shipped instance; packed cases (several tasks'
large columns in one case) give the same value in fewer cases; bad shares refused."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings

from edgebench import registry
from edgebench.formulations.placement.bounds import histip as HI
from edgebench.formulations.placement.bounds import histsplit as HS
from edgebench.formulations.placement.bounds import ladder as PB
from edgebench.formulations.placement.bounds import lagrange as PL
from edgebench.formulations.placement.bounds import trajectory as PT
from edgebench.instances.io import load_instance
from edgebench.referee.placement import evaluate
from test_placement_bound import tiny_instances, tiny_optimum

S1 = Path(__file__).parents[2] / "instances/data/placement-synthetic-3-v1/placement-synthetic-3-s1-7c493faf.json"


def _multipliers(p):
    d = PB.cluster_durations(p)
    _, Lam, Mu, H = PT.trajectory_multipliers(p, d, PL.lagrangian_multipliers(p, d))
    return Lam, Mu, H


@pytest.mark.slow
@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances())
def test_split_equals_the_unsplit_bound_and_never_passes_the_optimum(inst):
    """For U = opt, opt + 1, opt + 3 (opt: the referee's own optimum by brute force, instances
    where it finishes within 2,000 states) and shares 0.5, 0.7, 1, packed and (at 0.5 and 1) one
    task per case: the split bound equals (7)'s, is never above opt, and for U > opt is opt with a
    referee-feasible schedule of that value."""
    opt = tiny_optimum(inst)
    mult = _multipliers(inst.placement)
    for upper in (opt, opt + 1, opt + 3):
        plain = HI.histip_bound(inst, upper, multipliers=mult)
        assert plain.bound is not None, plain.reason
        for share, pack in ((0.5, True), (0.5, False), (0.7, True), (1.0, True), (1.0, False)):
            r = HS.split_bound(inst, upper, share=share, multipliers=mult, pack=pack)
            assert r.bound == plain.bound, (upper, share, pack, r.bound, plain.bound, r.reason)
            kind = "by cases" if r.stats.get("cases", 0) > 1 else "one master or none"
            event(f"share {share}, pack {pack}: {kind}")
            assert r.bound <= opt
            if upper > opt:
                assert r.schedule is not None and r.schedule[0] == opt, (r.reason, r.stats)
                ev = evaluate(inst, r.schedule[1])
                assert ev.feasible and ev.primary_value == opt


def test_a_shipped_instance_by_cases():
    """synthetic-3-v1 s1 (12 tasks, optimum 38): for U = 38 and 39 the split proves (7)'s 38 at
    every share; at share 0.5 the largest case holds fewer columns than the unsplit master, and (one
    task per case) the cases solved plus those skipped without a model are one per task and A."""
    inst = load_instance(S1)
    mult = _multipliers(inst.placement)
    for upper in (38, 39):
        plain = HI.histip_bound(inst, upper, multipliers=mult)
        assert plain.bound == 38
        by_share = {share: HS.split_bound(inst, upper, share=share, multipliers=mult, pack=False)
                    for share in (0.5, 0.75, 1.0)}
        for share, r in by_share.items():
            assert r.bound == 38, (upper, share, r.reason)
            assert r.stats["cases"] + r.stats["cases_skipped"] == len(inst.placement.tasks) + 1
        half = by_share[0.5]
        assert half.stats["largest_case"] < plain.stats["columns"], (half.stats, plain.stats)
        assert math.isclose(half.stats["theta"], 0.5 * half.stats["delta"], abs_tol=1e-3)


def test_negative_delta_and_bad_shares():
    inst = load_instance(S1)
    mult = _multipliers(inst.placement)
    r = HS.split_bound(inst, 36, multipliers=mult)  # (6) is 36
    assert r.bound == 36 and r.stats["delta"] < 0 and "cases" not in r.stats
    for share in (0.49, 1.01, -1.0):
        with pytest.raises(ValueError, match="share must lie in"):
            HS.split_bound(inst, 38, share=share, multipliers=mult)


def test_the_exact_model_passes_the_split():
    """placement-exact with ``histip_split``: (7) by cases proves U = 38 on synthetic-3-v1 s1 and the
    share is recorded; a share outside [0.5, 1] is refused before any work."""
    inst = load_instance(S1)
    kw = {"time_limit": 60, "upper": 38, "max_nodes": 10, "timip": False}
    res = registry.solve(inst, "placement-exact", histip_split=0.5, **kw)
    h = res.solution.stats["histip"]
    assert h["bound"] == 38 and h["cases"] >= 1 and res.solution.bound == 38
    assert res.solution.params["histip_split"] == 0.5
    assert "histip_split" not in registry.solve(inst, "placement-exact", **kw).solution.params
    with pytest.raises(Exception, match="histip_split"):
        registry.solve(inst, "placement-exact", histip_split=0.3, **kw)


def test_bands_keep_the_bound_under_a_small_cap():
    """With a cap of 3,000 columns a case (synthetic-3-v1 s1, U = 39, (6)'s multipliers without
    cuts: the unsplit master has 16,336 columns, the largest case at share 0.5 4,052) the large
    tasks' columns come in price bands, one case each: more cases, none above the cap, the same
    bound 38; at 1,500 a band of one price unit is still too large and the bound declines."""
    inst = load_instance(S1)
    mult = _multipliers(inst.placement)
    r = HS.split_bound(inst, 39, share=0.5, multipliers=mult, max_columns=3000, pack=False)
    assert r.bound == 38, r.reason
    small = HS.split_bound(inst, 39, share=0.5, multipliers=mult, max_columns=1500, pack=False)
    assert small.bound is None and "within one unit of price" in small.reason
    assert r.stats["largest_case"] <= 3000 and r.stats["cases"] + r.stats["cases_skipped"] > 13, r.stats
    # packed: the bands of several tasks share a case up to the cap; the same bound in fewer cases
    packed = HS.split_bound(inst, 39, share=0.5, multipliers=mult, max_columns=3000, pack=True)
    assert packed.bound == 38 and packed.stats["pack"], packed.reason
    assert 1 < packed.stats["cases"] < r.stats["cases"] and packed.stats["largest_case"] <= 3000, packed.stats
