"""Hostile input, round three (issue 44), the results store and ``merge``: a merge into a
running sweep's store or next to another merge (case 1), forged rows and best-known rows
(case 4), damaged cells and tables (cases 8 and 9), a manifest bound without a proof (case 11),
SIGTERM and a full disk during a merge (case 13)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edgebench.cli import main
from edgebench.instances import sets
from edgebench.runner import merge as M
from edgebench.runner.store import Store

SET = "offloading-patent-example-v1"  # one instance; heft and random solve it in milliseconds


def call(capsys, *args: str) -> subprocess.CompletedProcess:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, rc, out, err)


def one_line(proc: subprocess.CompletedProcess, *pieces: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    for p in pieces:
        assert p in proc.stderr, proc.stderr


def cli(*args: str) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "edgebench", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def sql(db: Path, *statements: str, params: tuple = ()) -> list:
    conn = sqlite3.connect(db)
    try:
        with conn:
            out = []
            for s in statements:
                out = conn.execute(s, params).fetchall()
        return out
    finally:
        conn.close()


def keys(db: Path) -> set[str]:
    return {r[0] for r in sql(db, "SELECT key FROM runs")}


def integrity(db: Path) -> str:
    return sql(db, "PRAGMA integrity_check")[0][0]


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A real store: heft and random on the patent example, seeds 100..103 (8 runs)."""
    db = tmp_path_factory.mktemp("src") / "b.sqlite"
    assert main(["run", "--instances", SET, "--solvers", "heft,random", "--seeds", "100,101,102,103",
                 "--time-limit", "5", "--db", str(db), "--no-report", "--no-progress", "--workers", "1"]) == 0
    return db


def copy(src: Path, dst: Path) -> Path:
    shutil.copyfile(src, dst)
    return dst


# ---- case 1: a merge into a store in use; two merges at once ----------------------------


def _stored(db: Path) -> int:
    """Runs in the store so far; 0 while the sweep has not yet created it or its table (the file
    can exist a moment before the schema: seen once under load, 'no such table: runs')."""
    if not db.exists():
        return 0
    try:
        return sql(db, "SELECT COUNT(*) FROM runs")[0][0]
    except sqlite3.OperationalError:
        return 0


def test_merge_into_a_running_sweep_keeps_every_run_of_both(tmp_path, source):
    db = tmp_path / "r.sqlite"
    # the GA runs for its whole time limit: the sweep is still writing when the merge comes
    sweep = cli("run", "--instances", SET, "--solvers", "ga", "--seeds", ",".join(map(str, range(10))),
                "--time-limit", "1", "--db", str(db), "--no-report", "--no-progress", "--workers", "1")
    t0 = time.monotonic()
    while _stored(db) < 1:  # the sweep is writing
        assert sweep.poll() is None and time.monotonic() - t0 < 120, sweep.communicate()
        time.sleep(0.1)
    merged = cli("merge", "-o", str(db), str(source))
    m_out, m_err = merged.communicate(timeout=300)
    assert sweep.poll() is None  # the merge ran while the sweep was writing (else this test tests nothing)
    s_out, s_err = sweep.communicate(timeout=300)
    assert sweep.returncode == 0, s_err[-2000:]
    assert merged.returncode == 0, (m_out, m_err)
    assert integrity(db) == "ok"
    # every run of the sweep (10) and every run of the merged store (8) is there (main lost the 8)
    assert keys(source) <= keys(db) and len(keys(db)) == 10 + 8


def test_two_merges_at_once_lose_nothing(tmp_path, source):
    a, b = copy(source, tmp_path / "a.sqlite"), copy(source, tmp_path / "b.sqlite")
    sql(a, "DELETE FROM runs WHERE seed IN (102, 103)")
    sql(b, "DELETE FROM runs WHERE seed IN (100, 101)")
    for s in (a, b):  # 16 MB of messages per store: each merge writes long enough for the two to overlap
        sql(s, "UPDATE runs SET message = hex(randomblob(2000000))")
    out = tmp_path / "out.sqlite"
    procs = [cli("merge", "-o", str(out), str(s)) for s in (a, b)]
    results = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    for stdout, stderr, rc in results:
        # each merge either merged (0) or, finding the output locked for a minute, changed nothing (2)
        assert rc == 0, (stdout, stderr)
    assert integrity(out) == "ok"
    assert keys(out) == keys(a) | keys(b) == keys(source)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")]  # no temp files


# ---- case 4: forged rows and best-known rows ----------------------------------------------


def test_forged_optimal_row_is_refused_and_a_runless_best_known_is_not_seeded(tmp_path, capsys, source):
    forged = copy(source, tmp_path / "f.sqlite")
    real = sql(forged, "SELECT key, primary_value FROM runs WHERE solver = 'random' AND seed = 100")[0]
    sql(forged, "UPDATE runs SET primary_value = 1.0, reported_objective = 1.0, status = 'optimal', proven = 1, "
                "bound = 1.0, units_ok = 1 WHERE key = ?", params=(real[0],))
    sql(forged, "INSERT INTO bestknown (instance_hash, instance_id, family, sense, objective, obj_solver, obj_run, "
                "bound, optimal) VALUES ('ab' || hex(randomblob(31)), 'ghost', 'offloading', 'min', 0.5, 'x', "
                "'no-such-run', 0.5, 1)")
    out = tmp_path / "out.sqlite"
    proc = call(capsys, "merge", "-o", str(out), str(forged))
    assert proc.returncode == 1, proc  # runs refused, the others merged
    assert "REFUSED" in proc.stdout and real[0][:12] in proc.stdout and "1 runs refused" in proc.stdout
    assert real[0] not in keys(out) and len(keys(out)) == 7
    best = sql(out, "SELECT instance_id, objective, bound, optimal FROM bestknown")
    assert [b[0] for b in best] == ["offloading-patent-example-s0"]  # no 'ghost'
    assert best[0][1] > 1.0 + 1e-6  # the forged 1.0 never became the best known (the real best is 2.8)
    assert abs(best[0][1] - 2.8) <= 1e-9 and abs(best[0][2] - 2.8) <= 1e-9  # heft's value, the manifest's proof


@pytest.mark.parametrize("change, reason", [
    # a heuristic may not claim a proof or a bound, even with its true value
    ("UPDATE runs SET status = 'optimal', proven = 1 WHERE solver = 'heft' AND seed = 100", "stored status"),
    ("UPDATE runs SET bound = primary_value WHERE solver = 'random' AND seed = 100", "stored bound"),
    ("UPDATE runs SET solution = NULL WHERE solver = 'heft' AND seed = 100", "holds no solution"),
    ("UPDATE runs SET seed = 7 WHERE solver = 'heft' AND seed = 100", "key"),
])
def test_rows_the_referee_does_not_reproduce_are_refused(tmp_path, capsys, source, change, reason):
    bad = copy(source, tmp_path / "bad.sqlite")
    sql(bad, change)
    rep = M.merge_stores(tmp_path / "out.sqlite", [bad])
    assert len(rep.refused) == 1 and reason in rep.refused[0]["reason"], rep.refused
    assert rep.runs == 7


# ---- case 8: damaged cells of a source ------------------------------------------------------


@pytest.mark.parametrize("change, reason", [
    ("UPDATE runs SET primary_value = 'abc' WHERE solver = 'heft' AND seed = 100", "primary_value"),
    ("UPDATE runs SET key = NULL WHERE solver = 'heft' AND seed = 100", "'key' is NULL"),
    ("UPDATE runs SET objectives = '{not json' WHERE solver = 'heft' AND seed = 100", "objectives"),
    ("UPDATE runs SET runtime = X'00ff' WHERE solver = 'heft' AND seed = 100", "runtime"),
    ("UPDATE runs SET solution = X'00ff' WHERE solver = 'heft' AND seed = 100", "does not load"),
    ("UPDATE runs SET status = 'ok' || char(27) || '[2J' WHERE solver = 'heft' AND seed = 100", "status"),
    ("UPDATE runs SET feasible = 2 WHERE solver = 'heft' AND seed = 100", "feasible"),
])
def test_damaged_cells_are_refused_and_counted_and_report_reads_the_output(tmp_path, capsys, source, change, reason):
    bad = copy(source, tmp_path / "bad.sqlite")
    sql(bad, change)
    out = tmp_path / "out.sqlite"
    proc = call(capsys, "merge", "-o", str(out), str(bad))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc
    assert proc.stdout.count("REFUSED") == 1 and reason in proc.stdout, proc.stdout
    assert "\x1b" not in proc.stdout  # a status from the store is data: escaped on the terminal
    assert "1 runs refused" in proc.stdout and f"{out}: 7 runs" in proc.stdout
    assert len(keys(out)) == 7 and None not in keys(out)  # a NULL key never became a run
    assert call(capsys, "report", "--db", str(out), "-o", str(tmp_path / "rep")).returncode == 0


@pytest.mark.parametrize("change, field", [
    ("UPDATE envs SET data = '{not json'", "envs.data"),
    ("UPDATE envs SET data = '[1, 2]'", "envs.data"),
    ("UPDATE sweeps SET argv = '{bad'", "sweeps.argv"),
    ("UPDATE meta SET value = 'abc' WHERE key = 'format_version'", "meta.format_version"),
])
def test_damaged_source_tables_are_one_line_and_nothing_merged(tmp_path, capsys, source, change, field):
    bad = copy(source, tmp_path / "bad.sqlite")
    sql(bad, change)
    out = tmp_path / "out.sqlite"
    one_line(call(capsys, "merge", "-o", str(out), str(bad)), str(bad), field)
    assert not out.exists()
    existing = copy(source, tmp_path / "existing.sqlite")
    one_line(call(capsys, "merge", "-o", str(existing), str(bad)), field)
    assert keys(existing) == keys(source) and len(sql(existing, "SELECT * FROM sweeps")) == 1


# ---- case 9: damaged tables under report, leaderboard, bestknown ----------------------------


@pytest.mark.parametrize("change, field", [
    ("UPDATE meta SET value = 'abc' WHERE key = 'format_version'", "meta.format_version"),
    ("UPDATE sweeps SET argv = '{bad'", "sweeps.argv"),
    ("UPDATE envs SET data = '{bad'", "envs.data"),
])
@pytest.mark.parametrize("command", ["report", "leaderboard", "bestknown"])
def test_damaged_tables_are_one_line_in_every_reader(tmp_path, capsys, source, change, field, command):
    bad = copy(source, tmp_path / "bad.sqlite")
    sql(bad, change)
    args = [command, "--db", str(bad)]
    if command == "report":
        args += ["-o", str(tmp_path / "rep")]
    if command == "bestknown":
        # --write-manifests into an empty data folder: the embedded manifests are never touched
        (tmp_path / "data").mkdir()
        args += ["--write-manifests", "--data-dir", str(tmp_path / "data")]
    one_line(call(capsys, *args), str(bad), field)


def test_text_primary_value_under_bestknown_write_manifests_is_one_line(tmp_path, capsys, source):
    bad = copy(source, tmp_path / "bad.sqlite")
    sql(bad, "UPDATE runs SET primary_value = 'abc' WHERE solver = 'heft' AND seed = 100")
    data = tmp_path / "data"
    shutil.copytree(sets.DATA_DIR / SET, data / SET)
    before = (data / SET / "manifest.json").read_bytes()
    one_line(call(capsys, "bestknown", "--db", str(bad), "--write-manifests", "--data-dir", str(data)),
             str(bad), "runs.primary_value")
    assert (data / SET / "manifest.json").read_bytes() == before


# ---- case 11: "closed" only with a proof -----------------------------------------------------


@pytest.mark.parametrize("provenance, closed", [
    ({"solver": "random", "bound_solver": "random"}, False),       # a heuristic's value as a "bound"
    ({"solver": "random"}, False),                                 # optimal: true from a heuristic
    ({"solver": "heft", "bound_kind": "solver bound (heft)"}, False),
    ({"solver": "offloading-cpsat", "bound_solver": "offloading-cpsat"}, True),   # a proving solver
    ({"solver": "x", "bound_solver": None, "bound_kind": "combinatorial: load"}, True),  # instance-only bound
])
def test_a_manifest_bound_closes_an_instance_only_from_a_proving_source(tmp_path, provenance, closed):
    from edgebench.runner import report as R

    with Store.open(tmp_path / "s.sqlite") as st:
        st.seed_bestknown([{"instance_hash": "h", "instance_id": "i", "instance_set": "s", "family": "offloading",
                            "size": 3, "primary_name": "mean_makespan", "sense": "min",
                            "best_known": {"objective": 4.0, "bound": 4.0, "optimal": True, **provenance}}])
        rec = st.bestknown()[0]
    assert bool(rec["optimal"]) is closed and (rec["bound"] == 4.0) is closed
    data = R.Data(runs=R.Runs({"instance_hash": ["h"], "variant": [None]}), best={"h": rec})
    assert (R.instance_rows(data)[0]["status"] == "closed") is closed


# ---- case 13: SIGTERM and a full disk during a merge ----------------------------------------


def test_sigterm_during_a_merge_rolls_back_and_leaves_no_files(tmp_path, capsys, source, monkeypatch):
    out = copy(source, tmp_path / "out.sqlite")
    sql(out, "DELETE FROM runs WHERE seed IN (102, 103)")
    before = keys(out)
    real = M.bestknown.update

    def update_then_term(conn, row):  # the signal arrives in the middle of the transaction
        os.kill(os.getpid(), signal.SIGTERM)
        return real(conn, row)

    monkeypatch.setattr(M.bestknown, "update", update_then_term)
    handler = signal.getsignal(signal.SIGTERM)
    proc = call(capsys, "merge", "-o", str(out), str(source))
    assert proc.returncode == 128 + signal.SIGTERM and proc.stderr.count("\n") == 1, proc
    assert "nothing was merged" in proc.stderr and "Traceback" not in proc.stderr
    assert signal.getsignal(signal.SIGTERM) == handler  # merge's handler is removed again
    assert keys(out) == before and integrity(out) == "ok"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.sqlite"]  # no temp file, no -wal / -shm
    # a new output that a stopped merge created is removed again
    proc = call(capsys, "merge", "-o", str(tmp_path / "new.sqlite"), str(source))
    assert proc.returncode == 143 and sorted(p.name for p in tmp_path.iterdir()) == ["out.sqlite"]


def test_full_disk_during_a_merge_is_one_line_naming_it(tmp_path, capsys, source):
    """The output on a 200 KiB tmpfs (needs root to mount; skipped otherwise)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(disk)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs (not root)")
    try:
        big = copy(source, tmp_path / "big.sqlite")
        # a long message in every run: the merge needs more room than the disk has
        sql(big, "UPDATE runs SET message = hex(randomblob(40000))")
        out = copy(source, disk / "out.sqlite")
        sql(out, "DELETE FROM runs")
        proc = call(capsys, "merge", "-o", str(out), str(big))
        one_line(proc, str(out), "the disk is full", "nothing was merged")
        assert "no transaction is active" not in proc.stderr
        assert keys(out) == set() and integrity(out) == "ok"
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def test_bestknown_write_manifests_drops_a_bound_without_a_proving_source(tmp_path, capsys):
    """A folder set whose manifest says bound = objective from the ``random`` heuristic: the
    written status is not "closed" (the instance-only bound, composite <= 1, joins instead)."""
    shipped = sets.DATA_DIR / "mapping-thesis-v2"
    d = tmp_path / "sets" / "myset"
    (d / "solutions").mkdir(parents=True)
    m = json.loads((shipped / "manifest.json").read_text())
    e = m["instances"][0]
    m["instances"] = [e]
    shutil.copyfile(shipped / e["file"], d / e["file"])
    shutil.copyfile(shipped / e["best_known"]["solution"], d / e["best_known"]["solution"])
    e["best_known"].update(solver="random", bound_solver="random", bound_kind=None, optimal=True, status="closed",
                           solver_config=dict(e["best_known"]["solver_config"], solver="random", label="random"))
    (d / "manifest.json").write_text(json.dumps(m))
    assert call(capsys, "bestknown", "--refresh-bounds", "--data-dir", str(d.parent)).returncode == 0
    bk = json.loads((d / "manifest.json").read_text())["instances"][0]["best_known"]
    assert bk["status"] == "open" and bk["optimal"] is False
    assert bk["bound"] == 1.0 and bk["bound_kind"] == "combinatorial: composite <= 1"
