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
from edgebench.errors import InputError
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


def test_the_exact_model_passes_the_split(tmp_path):
    """placement-exact with ``histip_split``: (7) by cases proves U = 38 on synthetic-3-v1 s1 and the
    share is recorded; a share outside [0.5, 1], or a checkpoint without the split, not a .json path,
    in a folder that does not exist or where another file is, is refused before any work."""
    inst = load_instance(S1)
    kw = {"time_limit": 60, "upper": 38, "max_nodes": 10, "timip": False}
    res = registry.solve(inst, "placement-exact", histip_split=0.5, **kw)
    h = res.solution.stats["histip"]
    assert h["bound"] == 38 and h["cases"] >= 1 and res.solution.bound == 38
    assert res.solution.params["histip_split"] == 0.5
    assert "histip_split" not in registry.solve(inst, "placement-exact", **kw).solution.params
    with pytest.raises(Exception, match="histip_split"):
        registry.solve(inst, "placement-exact", histip_split=0.3, **kw)
    # a checkpoint needs the split, a .json path in a folder that exists, and no other file there
    other = tmp_path / "other.json"
    other.write_text('{"results": [1, 2]}')
    for bad in ({"histip_checkpoint": "cases.json"}, {"histip_checkpoint": "cases.txt", "histip_split": 0.5},
                {"histip_checkpoint": str(tmp_path / "no" / "cases.json"), "histip_split": 0.5},
                {"histip_checkpoint": str(other), "histip_split": 0.5}):
        res = registry.solve(inst, "placement-exact", **bad, **kw)
        assert res.status == "error" and "histip_checkpoint" in res.solution.stats["message"], res
        assert "histip" not in res.solution.stats  # before any work
    assert other.read_text() == '{"results": [1, 2]}'
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
    there with its band; a second run replays them all by band (no case solved, only the small pool
    enumerated); a run stopped after 7 cases replays 7, solves the rest and writes the same file; a
    file of other code (another ``code`` in its key) is replayed by columns, so a forged digest at
    place 4 replays 4, and the file is rewritten with this code's key; a forged band costs only the
    enumeration (the case replays by its columns); a version-1 file (no bands) replays by columns and
    is upgraded; the bound is 38 every time.  A damaged file, or one of another run (another U), is
    refused (no bound) and left as it is."""
    inst = load_instance(S1)
    mult = _multipliers(inst.placement)
    cp = tmp_path / "cases.json"

    def run():
        return HS.split_bound(inst, 39, share=0.5, multipliers=mult, max_columns=3000, pack=False, checkpoint=cp)

    def write(data):
        cp.write_text(json.dumps(data))

    first = run()
    assert first.bound == 38 and first.stats["checkpoint"] == "none" and first.schedule is not None
    full = json.loads(cp.read_text())
    n = first.stats["cases"]
    assert full["version"] == HS.CHECKPOINT_VERSION == 2 and full["key"]["code"] == HS.code_digest()
    assert len(full["cases"]) == n and first.stats["cases_replayed"] == 0
    assert {c[2] for c in full["cases"]} <= {"optimal", "infeasible"}
    assert full["cases"][0][4] is None and all(len(c[4]) == 4 for c in full["cases"][1:])
    again = run()
    assert again.bound == 38 and again.stats["cases"] == 0 and again.stats["cases_replayed"] == n
    assert again.stats["cases_by_band"] == n - 1  # all but A, whose columns are the small pool's
    assert again.stats["checkpoint"] == f"resumed ({n} cases on file, by band)"
    assert again.stats["labels"] < first.stats["labels"] / 2, (again.stats["labels"], first.stats["labels"])
    write(dict(full, cases=full["cases"][:7]))
    resumed = run()
    assert resumed.bound == 38 and (resumed.stats["cases_replayed"], resumed.stats["cases"]) == (7, n - 7)
    assert json.loads(cp.read_text()) == full
    other = dict(full, key=dict(full["key"], code="0" * 64))
    forged = json.loads(json.dumps(other))
    forged["cases"][4][1] = "0" * 64
    write(forged)
    r = run()
    assert r.bound == 38 and (r.stats["cases_replayed"], r.stats["cases"]) == (4, n - 4)
    assert r.stats["cases_by_band"] == 0 and "by columns" in r.stats["checkpoint"]
    assert json.loads(cp.read_text()) == full
    write(other)
    r = run()
    assert (r.stats["cases_replayed"], r.stats["cases"], r.stats["cases_by_band"]) == (n, 0, 0)
    assert json.loads(cp.read_text()) == full  # rewritten with this code's key as the cases are checked
    band = json.loads(json.dumps(full))
    band["cases"][4][4] = [0, 1, 0, 1]
    write(band)
    r = run()
    assert r.bound == 38 and (r.stats["cases_replayed"], r.stats["cases"]) == (n, 0), r.stats
    assert r.stats["cases_by_band"] < n - 1
    write({"version": 1, "key": {k: v for k, v in full["key"].items() if k != "code"},
           "cases": [c[:4] for c in full["cases"]]})
    r = run()
    assert (r.stats["cases_replayed"], r.stats["cases"], r.stats["cases_by_band"]) == (n, 0, 0)
    assert json.loads(cp.read_text()) == full
    for bad, why in (("{not json", "not a checkpoint file (JSONDecodeError)"), ("[1]", "not a checkpoint file of"),
                     (json.dumps(dict(full, key=dict(full["key"], upper=38))), "its upper differ")):
        cp.write_text(bad)
        r = run()
        assert r.bound is None and why in r.reason and str(cp) in r.reason, r.reason
        assert cp.read_text() == bad  # refused, not overwritten


def test_the_code_a_band_replay_needs():
    """The checkpoint's ``code``: the source of the modules that make a case's columns (the split,
    (7)'s master and labelling, the multipliers, the step rule), not the rest of placement."""
    names = set(HS.code_modules())
    base = "edgebench.formulations.placement."
    assert {HS.__name__, HI.__name__, PT.__name__, PL.__name__, base + "bounds.labelling",
            "edgebench.instances.semantics"} <= names
    assert not {base + "exact", base + "bnp", base + "milp", "edgebench.runner"} & names
    assert HS.code_digest() == HS.code_digest() and len(HS.code_digest()) == 64


def test_a_checkpoint_replays_chunks_by_band(tmp_path):
    """Cap 1,500 (a band of one price unit in chunks): a run stopped after the first chunk of a
    chunked band replays up to it by band, solves the band's other chunks and the rest, and writes the
    same file; the bound is 38."""
    inst = load_instance(S1)
    mult = _multipliers(inst.placement)
    cp = tmp_path / "cases.json"

    def run():
        return HS.split_bound(inst, 39, share=0.5, multipliers=mult, max_columns=1500, pack=False, checkpoint=cp)

    first = run()
    full = json.loads(cp.read_text())
    cut = next(k for k, c in enumerate(full["cases"]) if c[4] is not None and c[4][3] > 1) + 1
    assert first.bound == 38 and full["cases"][cut - 1][4][2] == 0
    cp.write_text(json.dumps(dict(full, cases=full["cases"][:cut])))
    r = run()
    kept = sum(c[2] != HS.SKIPPED for c in full["cases"][:cut])  # cases on file; the others: bands with no columns
    assert r.bound == 38 and (r.stats["cases_replayed"], r.stats["cases_by_band"]) == (kept, kept - 1), r.stats
    assert r.stats["cases"] == first.stats["cases"] - kept and kept < cut
    assert json.loads(cp.read_text()) == full


def test_a_checkpoint_replays_only_well_formed_cases(tmp_path):
    """A case on file is replayed only with its label and columns' digest in its place (or, by band,
    its label and band), and a status of 'infeasible' with no value or 'optimal' with a finite
    number; nothing after the first case that is not replayed is.  A band with no columns on file is
    passed over by a run without one in its place.  Another run's file, or a file that is not a
    checkpoint, is refused and left as it is."""
    cp = tmp_path / "cases.json"
    key = {"upper": 10, "code": "c"}
    rows = [["A", "a", "infeasible", None], ["0", "b", "optimal", 9.0], ["1", "c", "optimal", float("nan")],
            ["2", "d", "infeasible", 3], ["3", "e", "optimal", True], ["4", "f", "infeasible", None]]
    cp.write_text(json.dumps({"version": HS.CHECKPOINT_VERSION, "key": key, "cases": rows}))
    book = HS.Checkpoint(cp, key)
    assert book.note == "resumed (6 cases on file, by band)"
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
                                          "cases": [["A", "x", "infeasible", None, None]]}
    # by band: only rows with a band, of this code, in their place
    banded = [["0", "b", "optimal", 9.0, [1, 5, 0, 1]], ["1", "", HS.SKIPPED, None, [1, 5, 0, 1]],
              ["1", "c", "infeasible", None, [5, 8, 0, 1]]]
    cp.write_text(json.dumps({"version": HS.CHECKPOINT_VERSION, "key": key, "cases": banded}))
    book = HS.Checkpoint(cp, key)
    assert book.trace("1") is None and book.trace("0") == [1, 5, 0, 1] and not book.peek("0", [1, 5, 0, 2])
    assert book.replay("0", HS.STORED, [1, 5, 0, 1]) == ("optimal", 9.0)
    assert book.replay("1", HS.STORED, [1, 5, 0, 1]) == (HS.SKIPPED, None)
    assert book.replay("1", HS.STORED, [5, 9, 0, 1]) is None and book.old == banded[:2]
    for band in ([1, 5, 0, 0], [1, 5, 2, 2], [5, 5, 0, 1], [1, 5, -1, 1], [1, 5, 0, True], [1, 5, 0]):
        cp.write_text(json.dumps({"version": HS.CHECKPOINT_VERSION, "key": key, "cases": [["0", "b", "optimal", 9.0,
                                                                                          band]]}))
        book = HS.Checkpoint(cp, key)
        assert book.trace("0") is None and not book.peek("0", band), band  # a band that is not one: not followed
    for other in ({"version": 1, "key": key}, {"version": 2, "key": dict(key, code="d")}):
        cp.write_text(json.dumps(dict(other, cases=banded)))
        book = HS.Checkpoint(cp, key)
        assert book.note.endswith("by columns)") and book.trace("0") == [1, 5, 0, 1]  # followed, and
        assert not book.peek("0", [1, 5, 0, 1])  # replayed only by its columns
        book.skip("0", [1, 2, 0, 1])  # no band with no columns on file here: passed over
        assert book.replay("0", "b") == ("optimal", 9.0) and book.pos == 1
        book.skip("1", [1, 5, 0, 1])  # on file: consumed
        assert book.pos == 2 and json.loads(cp.read_text())["cases"] == [
            ["0", "", HS.SKIPPED, None, [1, 2, 0, 1]], ["0", "b", "optimal", 9.0, None],
            ["1", "", HS.SKIPPED, None, [1, 5, 0, 1]], ["1", "c", "infeasible", None]]
    # refused, and left as they are: another run's file, a file that is not a checkpoint, no folder
    cp.write_text(json.dumps({"version": 2, "key": dict(key, upper=11), "cases": banded}))
    with pytest.raises(InputError, match=r"another run \(its upper differ from this run's\): not overwritten"):
        HS.Checkpoint(cp, key)
    for text in ("", "{}", '{"version": 3, "key": {}, "cases": []}', '{"version": 2, "key": {}, "cases": [1]}'):
        cp.write_text(text)
        with pytest.raises(InputError, match="not a checkpoint file"):
            HS.read_checkpoint(cp)
        assert cp.read_text() == text
    with pytest.raises(InputError, match="its folder does not exist"):
        HS.read_checkpoint(tmp_path / "no" / "cases.json")
    assert HS.read_checkpoint(tmp_path / "none.json") is None
