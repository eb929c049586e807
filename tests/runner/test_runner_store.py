"""The results store (one transaction per run, no duplicates, failed runs replaced only on
request) and best known values: provenance, proven bounds, conflicts, gaps, manifests."""

from __future__ import annotations

import json
import math
import shutil

import pytest

from edgebench.instances import sets
from edgebench.runner import bestknown as B
from edgebench.runner.store import Store


def row(key, value, *, h="h1", sense="min", status="feasible", feasible=1, proven=0, units_ok=1, bound=None,
        label="s", finished="2026-01-02T00:00:00+00:00"):
    return {"key": key, "instance_id": "i", "instance_hash": h, "family": "placement" if sense == "min" else "mapping",
            "size": 3, "solver": label, "label": label, "kind": "heuristic", "seed": 0, "status": status,
            "feasible": feasible, "proven": proven, "units_ok": units_ok, "primary_name": "p", "sense": sense,
            "primary_value": value, "reported_objective": value, "bound": bound, "runtime": 0.1,
            "finished": finished}


def test_store_insert_once_and_replace_failed(tmp_path):
    db = tmp_path / "r.sqlite"
    with Store.open(db) as st:
        assert st.add_run(row("a", 10.0))
        assert not st.add_run(row("a", 5.0))  # stored: never duplicated or overwritten
        assert not st.add_run(row("a", 5.0), replace=True)  # a finished success is not replaced
        assert st.add_run(row("b", None, status="killed", feasible=0))
        assert st.add_run(row("b", 9.0), replace=True)  # --retry-failed
        assert st.count() == 2
        assert st.keys() == {"a", "b"}
        assert st.run("b")["status"] == "feasible"
    with Store.open(db) as st:  # reopened: WAL, same content
        assert st.meta()["format_version"] == "1"
        assert st.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert st.count() == 2


def test_bestknown_min_objective_bound_optimal_and_conflict(tmp_path):
    with Store.open(tmp_path / "r.sqlite") as st:
        st.add_run(row("r1", 12.0, label="h1"))
        st.add_run(row("r2", 10.0, label="h2", bound=7.0))  # units ok: its bound counts
        st.add_run(row("r3", 11.0, label="h3", bound=9.0, units_ok=0))  # units unchecked: bound ignored
        st.add_run(row("r4", 10.0, label="h4"))  # a tie keeps the older provenance
        bk = B.table(st)["h1"]
        assert (bk["objective"], bk["obj_solver"], bk["obj_run"]) == (10.0, "h2", "r2")
        assert (bk["bound"], bk["bound_solver"], bk["optimal"]) == (7.0, "h2", 0)
        assert bk["obj_date"] == "2026-01-02"
        st.add_run(row("r5", 10.0, label="exact", status="optimal", proven=1))
        bk = B.table(st)["h1"]
        assert (bk["bound"], bk["bound_solver"], bk["optimal"], bk["conflict"]) == (10.0, "exact", 1, None)
        # an infeasible or failed run contributes nothing
        st.add_run(row("r6", 1.0, feasible=0, status="infeasible"))
        assert B.table(st)["h1"]["objective"] == 10.0
        # a referee-verified objective beyond the proven bound: a conflict, never optimal
        st.add_run(row("r7", 9.5, label="lucky"))
        bk = B.table(st)["h1"]
        assert bk["objective"] == 9.5 and bk["optimal"] == 0 and "better than the bound" in bk["conflict"]


def test_bestknown_max_direction(tmp_path):
    with Store.open(tmp_path / "r.sqlite") as st:
        st.add_run(row("a", 0.5, h="m", sense="max", bound=0.9))
        st.add_run(row("b", 0.8, h="m", sense="max", bound=0.95))  # a weaker upper bound: ignored
        bk = B.table(st)["m"]
        assert (bk["objective"], bk["bound"], bk["bound_run"]) == (0.8, 0.9, "a")


def test_gap_conventions():
    assert B.gap(11.0, 10.0, "min") == pytest.approx(0.1)
    assert B.gap(0.9, 1.0, "max") == pytest.approx(0.1)
    assert B.gap(10.0, 10.0, "min") == 0.0
    assert B.gap(None, 10.0, "min") == math.inf
    assert B.gap(5.0, None, "min") is None
    assert B.gap(0.5, 0.0, "min") == 0.5  # |best| < 1e-9: absolute gap
    assert B.gap(10.0 + 1e-12, 10.0, "min") == 0.0


def _solved(inst, solver, key, **kw):
    """A store row carrying a real solution (the manifests ship solution files)."""
    import zlib

    from edgebench.instances.io import content_hash, dump_json_text
    from edgebench.referee import evaluate
    from edgebench.registry import solve

    sol = solve(inst, solver, time_limit=10).solution
    ev = evaluate(inst, sol)
    r = row(key, ev.primary_value, h=content_hash(inst), label=solver, bound=sol.bound, **kw)
    r["solution"] = zlib.compress(dump_json_text(sol).encode())
    return r


def _uncertified_example(tmp_path):
    """(data folder, manifest path, instance) of a copy of the patent example set with every
    best-known entry emptied and no solutions (the shipped set is certified)."""
    data = tmp_path / "data"
    shutil.copytree(sets.DATA_DIR / "offloading-patent-example-v1", data / "offloading-patent-example-v1")
    path = data / "offloading-patent-example-v1" / "manifest.json"
    manifest = json.loads(path.read_text())
    for e in manifest["instances"]:
        e["best_known"] = dict(sets.EMPTY_BEST_KNOWN)
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    shutil.rmtree(data / "offloading-patent-example-v1" / "solutions")
    return data, path, sets.load_set("offloading-patent-example-v1", data)[0]


def test_write_manifests_only_improves(tmp_path):
    data, path, inst = _uncertified_example(tmp_path)
    with Store.open(tmp_path / "r.sqlite") as st:
        st.add_run(_solved(inst, "random", "x"))
        assert len(B.write_manifests(st, data)) == 1
        bk = json.loads(path.read_text())["instances"][0]["best_known"]
        assert (bk["objective"], bk["solver"], bk["run"], bk["optimal"]) == (6.8, "random", "x", False)
        # the heads/tails bound of the exact model already meets the optimum 2.8 of this example
        assert bk["bound_kind"] == "combinatorial: heads, tails and windowed load" and bk["status"] == "open"
        assert bk["bound"] == pytest.approx(2.8)
        assert bk["solution"] == f"solutions/{inst.id}.json"
        assert B.write_manifests(st, data) == []  # nothing new: file untouched
        st.add_run(_solved(inst, "offloading-cpsat", "y", status="optimal", proven=1))
        B.write_manifests(st, data)
    bk = json.loads(path.read_text())["instances"][0]["best_known"]
    # an equal solver bound does not replace the combinatorial one (only improvements)
    assert (bk["objective"], bk["optimal"], bk["bound_solver"]) == (2.8, True, None)
    assert bk["bound"] == pytest.approx(2.8)
    assert bk["status"] == "closed" and bk["bound_kind"] == "combinatorial: heads, tails and windowed load"
    # a worse store never degrades the manifest
    with Store.open(tmp_path / "worse.sqlite") as st:
        st.add_run(_solved(inst, "random", "z"))
    from edgebench.cli import main

    assert main(["bestknown", "--db", str(tmp_path / "worse.sqlite"), "--write-manifests", "--data-dir", str(data)]) == 0
    assert json.loads(path.read_text())["instances"][0]["best_known"]["objective"] == 2.8
    # the set still loads (hashes unchanged) and a new store starts from the manifest's values
    assert sets.load_set("offloading-patent-example-v1", data)


def test_write_manifests_keep_bounds_takes_the_objective_and_leaves_the_bound(tmp_path):
    """--keep-bounds: the store's better objective is written, the combinatorial bound is not
    recomputed (an entry without one keeps none), and it contradicts --refresh-bounds (exit 2)."""
    data, path, inst = _uncertified_example(tmp_path)
    with Store.open(tmp_path / "r.sqlite") as st:
        st.add_run(_solved(inst, "random", "x"))
        assert len(B.write_manifests(st, data, keep_bounds=True)) == 1
    bk = json.loads(path.read_text())["instances"][0]["best_known"]
    assert bk["objective"] == pytest.approx(6.8) and bk["bound"] is None and bk["status"] == "open"
    from edgebench.cli import main

    assert main(["bestknown", "--db", str(tmp_path / "r.sqlite"), "--keep-bounds", "--refresh-bounds",
                 "--data-dir", str(data)]) == 2


@pytest.mark.parametrize("maker, counts", [("placement-bnp", True), ("placement-milp", False)])
def test_write_manifests_judges_a_bound_by_the_solver_that_made_it_not_by_the_label(tmp_path, maker, counts):
    """A suite's label (``bnp-root-work``) names no registered solver: the run's bound counts by
    its solver's declared scope ("instance" for placement-bnp; placement-milp's is its
    restriction's), never by the label (session 33: a label once dropped a valid bound)."""
    name = "placement-synthetic-3-v1"
    data = tmp_path / "data"
    shutil.copytree(sets.DATA_DIR / name, data / name)
    path = data / name / "manifest.json"
    manifest = json.loads(path.read_text())
    entry = manifest["instances"][0]
    shipped_bound = entry["best_known"]["bound"]  # closed: the optimum, a valid bound
    (data / name / entry["best_known"]["solution"]).unlink()
    entry["best_known"] = dict(sets.EMPTY_BEST_KNOWN)
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    inst = sets.load_set(name, data)[0]
    r = _solved(inst, "sjf", "k1")
    r.update(solver=maker, label="bnp-root-work", bound=shipped_bound)
    with Store.open(tmp_path / "r.sqlite") as st:
        st.add_run(r)
        B.write_manifests(st, data, keep_bounds=True)
    bk = json.loads(path.read_text())["instances"][0]["best_known"]
    assert bk["objective"] == r["primary_value"] and bk["solver"] == "bnp-root-work"
    if counts:
        assert bk["bound"] == pytest.approx(shipped_bound)
        assert (bk["bound_solver"], bk["bound_kind"]) == ("bnp-root-work", f"solver bound ({maker})")
        assert B.proving_source(bk)  # and it stays: the next write keeps it
    else:
        assert bk["bound"] is None and bk["status"] == "open"


def test_certification_tally_adds_rounds_and_is_idempotent():
    """Folding the same store twice changes nothing; another store of the same suite adds a round;
    a tally written before rounds were kept counts as one round ("earlier")."""
    one = [{"suite": "certify", "wall": 10.0, "key": "a"}, {"suite": "certify", "wall": 5.0, "key": "b"}]
    two = [{"suite": "certify", "wall": 100.0, "key": "c"}, {"suite": "other", "wall": 1.0, "key": "d"}]
    t1 = B.certification_tally({}, one)
    assert (t1["certify"]["runs"], t1["certify"]["wall_s"]) == (2, 15.0)
    assert B.certification_tally(t1, one) == t1
    t2 = B.certification_tally(t1, two)
    assert (t2["certify"]["runs"], t2["certify"]["wall_s"], len(t2["certify"]["rounds"])) == (3, 115.0, 2)
    assert (t2["other"]["runs"], t2["other"]["wall_s"]) == (1, 1.0)
    assert B.certification_tally(t2, two) == t2
    legacy = B.certification_tally({"certify": {"runs": 4, "wall_s": 40.0}}, one)
    assert legacy["certify"]["rounds"]["earlier"] == {"runs": 4, "wall_s": 40.0}
    assert (legacy["certify"]["runs"], legacy["certify"]["wall_s"]) == (6, 55.0)


def test_write_manifests_adds_a_second_round_to_the_tally(tmp_path):
    data, path, inst = _uncertified_example(tmp_path)
    for db, key in (("r1.sqlite", "x"), ("r2.sqlite", "y")):
        with Store.open(tmp_path / db) as st:
            r = _solved(inst, "random", key)
            r.update(suite="certify-x", wall=2.5)
            st.add_run(r)
            B.write_manifests(st, data)
            B.write_manifests(st, data)  # the same store again: the tally is unchanged
    cert = json.loads(path.read_text())["certification"]["certify-x"]
    assert (cert["runs"], cert["wall_s"], len(cert["rounds"])) == (2, 5.0, 2)


def test_an_optimal_status_whose_own_bound_is_below_its_value_proves_only_the_bound():
    # CP-SAT optimal for durations rounded up to ticks: the reported bound is the proven one
    assert B.candidates(row("t", 1.05, status="optimal", proven=1, bound=1.04)) == (1.05, 1.04)
    assert B.candidates(row("t", 1.05, status="optimal", proven=1, bound=1.05)) == (1.05, 1.05)
    assert B.candidates(row("t", 1.05, status="optimal", proven=1)) == (1.05, 1.05)


def _open_store(path, q):
    try:
        with Store.open(path):
            pass
        q.put("ok")
    except Exception as exc:  # noqa: BLE001 - the test reports what went wrong
        q.put(repr(exc))


def test_concurrent_opens_of_a_new_store_all_succeed(tmp_path):
    """Two runners started together on one new store: neither may see the other's half-made
    schema (a meta table without its format_version) and refuse the store as unreadable."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    for i in range(15):
        path = str(tmp_path / f"r{i}.sqlite")
        q = ctx.Queue()
        procs = [ctx.Process(target=_open_store, args=(path, q)) for _ in range(3)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert [q.get(timeout=5) for _ in procs] == ["ok"] * 3
