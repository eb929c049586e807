"""Bound (7) split by its knapsack row (formulations/placement/bounds/histsplit.py): the same value
as the unsplit (7) for every share (the cases cover every master solution and each is a
restriction of it), so never above the referee's own optimum of tiny instances and equal to it
wherever U is above it; fewer columns at a time on a shipped instance; packed cases (several tasks'
large columns in one case) give the same value in fewer cases; bad shares refused; a checkpoint
file replays the cases of a stopped run and the bound stays the same, whatever is on file."""

from __future__ import annotations

import json
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
    share is recorded; a share outside [0.5, 1], or a checkpoint without the split or not a .json
    path, is refused before any work."""
    inst = load_instance(S1)
    kw = {"time_limit": 60, "upper": 38, "max_nodes": 10, "timip": False}
    res = registry.solve(inst, "placement-exact", histip_split=0.5, **kw)
    h = res.solution.stats["histip"]
    assert h["bound"] == 38 and h["cases"] >= 1 and res.solution.bound == 38
    assert res.solution.params["histip_split"] == 0.5
    assert "histip_split" not in registry.solve(inst, "placement-exact", **kw).solution.params
    with pytest.raises(Exception, match="histip_split"):
        registry.solve(inst, "placement-exact", histip_split=0.3, **kw)
    # a checkpoint needs the split and a .json path; refused before any work
    for bad in ({"histip_checkpoint": "cases.json"}, {"histip_checkpoint": "cases.txt", "histip_split": 0.5}):
        res = registry.solve(inst, "placement-exact", **bad, **kw)
        assert res.status == "error" and "histip_checkpoint" in res.solution.stats["message"], res
    with pytest.raises(Exception, match="histip_checkpoint: Input should be a valid string"):
        registry.solve(inst, "placement-exact", histip_checkpoint=7, histip_split=0.5, **kw)


def test_bands_keep_the_bound_under_a_small_cap():
    """With a cap of 3,000 columns a case (synthetic-3-v1 s1, U = 39, (6)'s multipliers without
    cuts: the unsplit master has 16,336 columns, the largest case at share 0.5 4,052) the large
    tasks' columns come in price bands, one case each: more cases, none above the cap, the same
    bound 38; at 1,500 a band of one price unit is still too large and comes in chunks (the same
    bound); at 800 the small pool alone (808 columns) passes the cap and the bound declines."""
    inst = load_instance(S1)
    mult = _multipliers(inst.placement)
    r = HS.split_bound(inst, 39, share=0.5, multipliers=mult, max_columns=3000, pack=False)
    assert r.bound == 38, r.reason
    chunks = HS.split_bound(inst, 39, share=0.5, multipliers=mult, max_columns=1500, pack=False)
    assert chunks.bound == 38 and chunks.stats["largest_case"] <= 1500, (chunks.reason, chunks.stats)
    assert chunks.stats["cases"] > r.stats["cases"], (chunks.stats, r.stats)
    small = HS.split_bound(inst, 39, share=0.5, multipliers=mult, max_columns=800, pack=False)
    assert small.bound is None and "more than 800 columns in the small pool" in small.reason
    assert r.stats["largest_case"] <= 3000 and r.stats["cases"] + r.stats["cases_skipped"] > 13, r.stats
    # packed: the bands of several tasks share a case up to the cap; the same bound in fewer cases
    packed = HS.split_bound(inst, 39, share=0.5, multipliers=mult, max_columns=3000, pack=True)
    assert packed.bound == 38 and packed.stats["pack"], packed.reason
    assert 1 < packed.stats["cases"] < r.stats["cases"] and packed.stats["largest_case"] <= 3000, packed.stats


def test_a_checkpoint_replays_the_cases_and_keeps_the_bound(tmp_path):
    """synthetic-3-v1 s1, U = 39, cap 3,000 (19 cases): a run with a checkpoint file keeps every case
    there; a second run replays them all and solves none; a run stopped after 7 cases (the file cut
    to 7) replays 7, solves the rest and writes the same file; a file with another case's columns at
    place 4 replays 4; a damaged file or one of another run (another U) is not used and is replaced.
    The bound is 38 every time."""
    inst = load_instance(S1)
    mult = _multipliers(inst.placement)
    cp = tmp_path / "cases.json"

    def run():
        return HS.split_bound(inst, 39, share=0.5, multipliers=mult, max_columns=3000, pack=False, checkpoint=cp)

    first = run()
    assert first.bound == 38 and first.stats["checkpoint"] == "none" and first.schedule is not None
    full = json.loads(cp.read_text())
    n = first.stats["cases"]
    assert len(full["cases"]) == n and first.stats["cases_replayed"] == 0
    assert {c[2] for c in full["cases"]} <= {"optimal", "infeasible"}
    again = run()
    assert again.bound == 38 and again.stats["cases"] == 0 and again.stats["cases_replayed"] == n
    assert again.stats["checkpoint"] == f"resumed ({n} cases on file)"
    cp.write_text(json.dumps(dict(full, cases=full["cases"][:7])))
    resumed = run()
    assert resumed.bound == 38 and (resumed.stats["cases_replayed"], resumed.stats["cases"]) == (7, n - 7)
    assert json.loads(cp.read_text()) == full
    forged = json.loads(json.dumps(full))
    forged["cases"][4][1] = "0" * 64
    cp.write_text(json.dumps(forged))
    r = run()
    assert r.bound == 38 and (r.stats["cases_replayed"], r.stats["cases"]) == (4, n - 4)
    assert json.loads(cp.read_text()) == full
    for bad in ("{not json", json.dumps(dict(full, key=dict(full["key"], upper=38)))):
        cp.write_text(bad)
        r = run()
        assert r.bound == 38 and r.stats["cases_replayed"] == 0, r.stats
        assert "started over" in r.stats["checkpoint"]
        assert json.loads(cp.read_text()) == full


def test_a_checkpoint_replays_only_well_formed_cases(tmp_path):
    """A case on file is replayed only with its label and columns' digest in its place, and a status
    of 'infeasible' with no value or 'optimal' with a finite number; nothing after the first case
    that is not replayed is."""
    cp = tmp_path / "cases.json"
    key = {"upper": 10}
    rows = [["A", "a", "infeasible", None], ["0", "b", "optimal", 9.0], ["1", "c", "optimal", float("nan")],
            ["2", "d", "infeasible", 3], ["3", "e", "optimal", True], ["4", "f", "infeasible", None]]
    cp.write_text(json.dumps({"version": HS.CHECKPOINT_VERSION, "key": key, "cases": rows}))
    book = HS.Checkpoint(cp, key)
    assert book.note == "resumed (6 cases on file)"
    assert book.replay("A", "a") == ("infeasible", None) and book.replay("0", "b") == ("optimal", 9.0)
    assert book.replay("1", "c") is None and book.replay("4", "f") is None
    for k in (3, 4):  # 'infeasible' with a value, 'optimal' with a bool, in place 2
        cp.write_text(json.dumps({"version": HS.CHECKPOINT_VERSION, "key": key, "cases": rows[:2] + [rows[k]]}))
        book = HS.Checkpoint(cp, key)
        assert book.replay("A", "a") and book.replay("0", "b")
        assert book.replay(*rows[k][:2]) is None, rows[k]
    book = HS.Checkpoint(cp, key)
    assert book.replay("A", "x") is None and book.replay("0", "b") is None
    book.record("A", "x", "infeasible", None)
    assert json.loads(cp.read_text()) == {"version": HS.CHECKPOINT_VERSION, "key": key,
                                          "cases": [["A", "x", "infeasible", None]]}
