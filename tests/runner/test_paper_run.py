"""Running a long suite across sessions (issue 46 item 1, results/paper-run/): the store's
``checkpoint`` column (sha256 of a learned run's checkpoint file) and the export's; ``edgebench run
--only`` (a subset of the suite's own runs) and ``--rerun stale`` / ``all``; the best known value of
a replaced run folded again; ``edgebench results snapshot`` and continuing from a snapshot (copied
or merged), through results/paper-run/continue.sh and checkpoint.sh. A 6-run toy suite (the Random
baseline and a test-only learned solver on three small embedded instances)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from edgebench import registry
from edgebench.cli import main
from edgebench.runner.results_page import render
from edgebench.runner.store import Store

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = Path(__file__).resolve().parent / "learned_plugin.py"
PAPER_RUN = ROOT / "results" / "paper-run"

TOY = f"""
name = "toy"
seeds = [0]
time_limit = 5
workers = 1
plugins = ["{PLUGIN}"]

[[instances]]
set = "offloading-patent-example-v1"   # 1 instance (embedded sets: edgebench merge re-scores against them)

[[instances]]
set = "placement-hetero-6-v1"          # 2 instances

[[solvers]]
name = "random"

[[solvers]]
name = "test-learned"
"""


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def rows(db) -> dict[str, dict]:
    """key -> (rowid, solver, checkpoint, status, primary value, started) of a store's runs."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {k: {"rowid": i, "solver": s, "checkpoint": c, "status": st, "value": v, "started": t}
                for k, i, s, c, st, v, t in conn.execute(
                    "SELECT key, rowid, solver, checkpoint, status, primary_value, started FROM runs")}
    finally:
        conn.close()


@pytest.fixture(scope="module", autouse=True)
def _forget_the_plugin_solver():
    """The suite's plugin registers ``test-learned`` in this process (imported once, kept for this
    module's tests); removed afterwards, so that later tests on this worker that list every
    registered solver never run it."""
    yield
    registry._REGISTRY.pop("test-learned", None)


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    ckpt = tmp_path / "ckpt.pt"
    ckpt.write_bytes(b"A")
    monkeypatch.setenv("EDGEBENCH_TEST_CHECKPOINT", str(ckpt))
    suite = tmp_path / "toy.toml"
    suite.write_text(TOY)
    return suite, ckpt, tmp_path / "results.sqlite"


def run(suite, db, *extra) -> int:
    return main(["run", str(suite), "--db", str(db), "--no-report", "--no-progress", *extra])


def test_rerun_stale_reruns_only_learned_rows_whose_checkpoint_changed(toy, capsys, tmp_path):
    suite, ckpt, db = toy
    assert run(suite, db) == 0
    first = rows(db)
    assert len(first) == 6
    learned = {k for k, r in first.items() if r["solver"] == "test-learned"}
    assert len(learned) == 3
    assert {first[k]["checkpoint"] for k in learned} == {sha(b"A")}
    assert {r["checkpoint"] for k, r in first.items() if k not in learned} == {None}
    # nothing changed: --rerun stale runs nothing
    capsys.readouterr()
    assert run(suite, db, "--rerun", "stale") == 0
    assert "6 already in" in capsys.readouterr().out
    assert rows(db) == first
    # the checkpoint file changes: exactly the learned rows run again, the others are untouched
    ckpt.write_bytes(b"BB")
    assert run(suite, db, "--only", "kind=learned", "--rerun", "stale") == 0
    out = capsys.readouterr().out
    assert "suite toy: 3 runs" in out and "3 to run (3 of them again: --rerun stale)" in out
    second = rows(db)
    assert set(second) == set(first)
    for k in first:
        if k in learned:
            assert second[k]["rowid"] != first[k]["rowid"] and second[k]["checkpoint"] == sha(b"BB")
        else:
            assert second[k] == first[k]
    # resumable: a second --rerun stale finds nothing stale
    assert run(suite, db, "--rerun", "stale") == 0
    assert rows(db) == second
    # the export records which checkpoint produced each learned row
    assert main(["results", "export", "--db", str(db), "-o", str(tmp_path / "export")]) == 0
    table = pq.read_table(tmp_path / "export" / "runs.parquet").to_pylist()
    assert {r["key"]: r["checkpoint"] for r in table if r["kind"] == "learned"} == dict.fromkeys(learned, sha(b"BB"))
    assert {r["checkpoint"] or None for r in table if r["kind"] != "learned"} == {None}
    meta = json.loads((tmp_path / "export" / "metadata.json").read_text())
    assert meta["learned_runs"] == {"test-learned": {"runs": 3, "checkpoints": {sha(b"BB"): 3}, "stale": 0}}
    assert meta["checkpoints"]["test-learned"][0]["sha256"] == sha(b"BB")
    # exported after the file changed again: the rows are counted stale, and the results page says so
    ckpt.write_bytes(b"CCC")
    assert main(["results", "export", "--db", str(db), "-o", str(tmp_path / "export")]) == 0
    meta = json.loads((tmp_path / "export" / "metadata.json").read_text())
    assert meta["learned_runs"]["test-learned"]["stale"] == 3
    page = render(tmp_path / "export")[0]
    assert "**Stale learned rows**" in page and "test-learned 3." in page
    ckpt.write_bytes(b"BB")
    # --rerun all with --only: exactly the selected stored runs again
    assert run(suite, db, "--only", "solver=random", "--rerun", "all") == 0
    third = rows(db)
    assert {k for k in first if third[k]["rowid"] != second[k]["rowid"]} == set(first) - learned


def test_only_keeps_the_suites_own_runs_and_refuses_a_value_no_run_has(toy, capsys):
    suite, _, db = toy
    assert main(["run", str(suite), "--db", str(db), "--dry-run", "--only", "family=placement",
                 "--only", "kind=learned,heuristic"]) == 0
    assert "suite toy: 4 runs (2 instances" in capsys.readouterr().out
    assert main(["run", str(suite), "--db", str(db), "--dry-run", "--only", "kind=learnd"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["edgebench: error: <command line>: --only: no planned run has kind 'learnd' (the plan's: "
                   "heuristic, learned)"]
    assert main(["run", str(suite), "--only", "colour=red"]) == 2
    assert "--only: expected FIELD=VALUE" in capsys.readouterr().err
    assert not db.exists()


def test_a_replaced_run_gives_up_its_best_known_value(tmp_path):
    def row(key, value, finished):
        return {"key": key, "instance_id": "i", "instance_hash": "h", "family": "placement", "solver": key,
                "label": key, "kind": "learned", "status": "feasible", "feasible": 1, "units_ok": 1,
                "primary_name": "total_completion_time", "sense": "min", "primary_value": value,
                "reported_objective": value, "finished": finished}

    with Store.open(tmp_path / "s.sqlite") as st:
        st.add_run(row("a", 10.0, "2026-01-01T00:00:00+00:00"))
        st.add_run(row("b", 12.0, "2026-01-02T00:00:00+00:00"))
        assert st.bestknown()[0]["objective"] == 10.0 and st.bestknown()[0]["obj_run"] == "a"
        assert not st.add_run(row("a", 15.0, "2026-01-03T00:00:00+00:00"))  # stored: kept
        assert st.add_run(row("a", 15.0, "2026-01-03T00:00:00+00:00"), force=True)
        bk = st.bestknown()[0]
        assert (bk["objective"], bk["obj_run"]) == (12.0, "b")  # not the 10.0 no stored run has any more
        assert st.add_run(row("b", 9.0, "2026-01-04T00:00:00+00:00"), force=True)
        assert (st.bestknown()[0]["objective"], st.bestknown()[0]["obj_run"]) == (9.0, "b")


def test_a_run_to_run_again_is_left_alone_once_another_runner_ran_it_again(tmp_path):
    row = {"key": "k", "instance_id": "i", "instance_hash": "h", "family": "placement", "solver": "s", "label": "s",
           "status": "feasible", "finished": "2026-01-02T00:00:00+00:00"}
    with Store.open(tmp_path / "s.sqlite") as st:
        st.add_run(row)
        assert not st.claim("k", "me")  # stored: not run again
        # stored before this sweep started: run again
        assert st.claim("k", "me", again=True, since="2026-01-03T00:00:00+00:00")
        st.release_claims("me")
        # finished after this sweep started (another runner's --rerun ran it again meanwhile): left alone
        assert not st.claim("k", "me", again=True, since="2026-01-01T00:00:00+00:00")


def scripts_env(db, snap, suite) -> dict[str, str]:
    return {**os.environ, "EDGEBENCH_PAPER_DB": str(db), "EDGEBENCH_PAPER_SNAPSHOT": str(snap),
            "EDGEBENCH_PAPER_SUITE": str(suite)}


def test_continue_from_a_snapshot_skips_exactly_its_runs(toy, tmp_path):
    suite, _, db_a = toy
    # machine A runs part of the suite, and a claim of a live runner on another host is in its store
    assert run(suite, db_a, "--only", "solver=random") == 0
    with Store.open(db_a) as st:
        st.conn.execute("INSERT INTO claims VALUES ('k', 'elsewhere:1:x', 'elsewhere', 1, 'now')")
    snap = tmp_path / "repo" / "results.sqlite"
    env_a = scripts_env(db_a, snap, suite)
    out = subprocess.run([str(PAPER_RUN / "checkpoint.sh")], env=env_a, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "3 runs" in out.stdout
    conn = sqlite3.connect(f"file:{snap}?mode=ro", uri=True)
    assert conn.execute("SELECT COUNT(*) FROM claims").fetchone()[0] == 0
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()
    prog = json.loads((snap.parent / "progress.json").read_text())
    assert prog["runs"] == 3 and prog["statuses"] == {"feasible": 3} and prog["bytes"] == snap.stat().st_size
    # machine B has no store: continue.sh starts it from the snapshot and runs exactly the rest
    db_b = tmp_path / "b" / "results.sqlite"
    env_b = scripts_env(db_b, snap, suite)
    out = subprocess.run([str(PAPER_RUN / "continue.sh"), "--no-progress"], env=env_b, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "started" in out.stdout and "3 already in" in out.stdout and "3 runs done, 3 skipped" in out.stdout
    a, b = rows(db_a), rows(db_b)
    assert len(b) == 6 and all(b[k] == a[k] for k in a)  # the snapshot's runs are the same rows, not run again
    # machine A continues with B's snapshot: merged in, nothing left to run
    shutil.copy(db_b, tmp_path / "b.sqlite")
    subprocess.run([str(PAPER_RUN / "checkpoint.sh")], env=scripts_env(tmp_path / "b.sqlite", snap, suite),
                   check=True, capture_output=True, timeout=120)
    out = subprocess.run([str(PAPER_RUN / "continue.sh"), "--no-progress"], env=env_a, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "holds 3 runs that" in out.stdout and "0 to run" in out.stdout
    assert {k: r["value"] for k, r in rows(db_a).items()} == {k: r["value"] for k, r in b.items()}


def test_snapshot_refuses_to_replace_what_is_not_a_store(tmp_path, capsys):
    (tmp_path / "x.sqlite").write_text("not a store")
    with Store.open(tmp_path / "s.sqlite"):
        pass
    assert main(["results", "snapshot", "--db", str(tmp_path / "s.sqlite"), "-o", str(tmp_path / "x.sqlite")]) == 2
    assert "not an SQLite file" in capsys.readouterr().err
    assert (tmp_path / "x.sqlite").read_text() == "not a store"
