"""Warm workers (issue 43 item 2; issue 44 case 15): each run has its own process, forked from a
worker that imported the solvers once; a crash, a memory error, a leak or a hard kill in one run
does not touch the next; the hard kill still ends the run's whole tree and counts from the
solver's start; start-up is stored separately, small, and bounded by ``startup_allowance``;
worker logs never outlive a killed driver. The sweeps run ``edgebench run`` in subprocesses
with the test-only solvers of ``warm_plugin.py`` and ``runner_plugin.py``."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
TINY = HERE.parent / "data" / "good" / "offloading_tiny.json"
PLUGINS = [str(HERE / "warm_plugin.py"), str(HERE / "runner_plugin.py")]
#: a tiny run's start-up (fork to solver: instance load, validation) is milliseconds; the bound
#: leaves room for a loaded 2-core machine
STARTUP_MAX = 0.5


def suite_text(name: str, entries: list[tuple[str, str, str]], *, head: str = "") -> str:
    text = (f'name = "{name}"\ntime_limit = 1\nkill_grace = 0.5\nmemory_limit_mb = 1024\nworkers = 1\n'
            f"plugins = {PLUGINS!r}\n{head}".replace("'", '"'))
    text += f'[[instances]]\nfiles = ["{TINY}"]\n'
    for label, solver, params in entries:
        text += f'[[solvers]]\nname = "{solver}"\nlabel = "{label}"\nparams = {{ {params} }}\n'
    return text


def run_cli(tmp_path: Path, text: str, **kw) -> subprocess.Popen:
    (tmp_path / "s.toml").write_text(text)
    return subprocess.Popen([sys.executable, "-m", "edgebench", "run", str(tmp_path / "s.toml"), "--db",
                             str(tmp_path / "r.sqlite"), "--no-report", "--no-progress"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def rows(db: Path) -> dict[str, dict]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return {r["label"]: dict(r) for r in conn.execute("SELECT * FROM runs")}
    finally:
        conn.close()


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_gone(pid: int, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while not gone(pid) and time.monotonic() < end:
        time.sleep(0.05)
    return gone(pid)


def test_each_run_has_its_own_process_and_faults_do_not_reach_the_next(tmp_path):
    log, pidfile = tmp_path / "pids.log", tmp_path / "grandchild.pid"
    entries = [("first", "test-pid", f'log = "{log}"'),
               ("abort", "test-pid", f'log = "{log}", mode = "abort"'),
               ("after-abort", "test-pid", f'log = "{log}", leak_mb = 1'),  # other params: another run
               ("leak", "test-pid", f'log = "{log}", mode = "leak", leak_mb = 64'),
               ("memory", "test-sleep", 'mode = "memory", alloc_mb = 3000'),
               ("hang", "test-pid", f'log = "{log}", mode = "spawn-hang", pidfile = "{pidfile}"'),
               ("last", "test-pid", f'log = "{log}", leak_mb = 2')]
    p = run_cli(tmp_path, suite_text("warm", entries))
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, err[-2000:]
    got = rows(tmp_path / "r.sqlite")
    assert {k: v["status"] for k, v in got.items()} == {
        "first": "feasible", "abort": "crash", "after-abort": "feasible", "leak": "feasible", "memory": "memory",
        "hang": "killed", "last": "feasible"}, {k: v["message"] for k, v in got.items()}
    assert "SIGABRT" in got["abort"]["message"]
    # one process per run, all forked by one warm worker that survived the crash, the memory
    # error and the kill; the leak and the chdir of one run are not seen by the next
    lines = [ln.split() for ln in log.read_text().splitlines()]
    assert len(lines) == 6
    pids, ppids = [ln[0] for ln in lines], {ln[1] for ln in lines}
    assert len(set(pids)) == 6 and len(ppids) == 1 and not ppids & set(pids)
    assert all(ln[2] == "0" for ln in lines), lines  # nothing leaked into a later run
    assert {ln[3] for ln in lines} == {str(tmp_path)}, lines  # every run starts in the driver's folder
    # the memory limit (RLIMIT_AS, set in the run's process) still applies
    assert got["memory"]["memory_limit_mb"] == 1024 and "MemoryError" in got["memory"]["message"]
    # the hard kill ends the tree (a grandchild in its own session) and counts from the solver's
    # start: kill_after = 1 s * 1.2 + 0.5 s of solver time, start-up stored apart
    hang = got["hang"]
    assert "hard wall-clock kill" in hang["message"]
    assert wait_gone(int(pidfile.read_text())), "the hung run's grandchild survived its kill"
    assert 1.7 - 0.05 <= hang["runtime"] <= 1.7 + 1.0, hang
    assert hang["startup"] is not None and hang["startup"] < STARTUP_MAX
    # start-up of every finished run: stored, separate from the runtime, small
    for label in ("first", "after-abort", "leak", "last"):
        r = got[label]
        assert r["startup"] is not None and 0 <= r["startup"] < STARTUP_MAX, r
        assert r["wall"] >= r["runtime"] + r["startup"] - 1e-3, r


def test_startup_allowance_kills_a_run_whose_start_up_is_too_long(tmp_path):
    log = tmp_path / "pids.log"
    text = suite_text("allowance", [("slow-start", "test-pid", f'log = "{log}"')], head="startup_allowance = 1e-6\n")
    p = run_cli(tmp_path, text)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err[-2000:]
    r = rows(tmp_path / "r.sqlite")["slow-start"]
    assert r["status"] == "killed" and "start-up" in r["message"] and "allowance of 1e-06 s" in r["message"], r
    assert not log.exists()  # the solver never started


def test_a_killed_driver_leaves_no_worker_log_and_no_process(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    pidfile = tmp_path / "grandchild.pid"
    text = suite_text("killed-driver", [("hang", "test-pid", f'log = "{tmp_path / "l"}", mode = "spawn-hang", '
                                                             f'pidfile = "{pidfile}"')]).replace("time_limit = 1\n",
                                                                                                  "time_limit = 60\n")
    p = run_cli(tmp_path, text, env={**os.environ, "TMPDIR": str(tmp)})
    try:
        end = time.monotonic() + 60
        while not pidfile.exists() and time.monotonic() < end and p.poll() is None:
            time.sleep(0.05)
        assert pidfile.exists(), p.stderr.read() if p.poll() is not None else "the run did not start"
        time.sleep(0.2)
        driver = psutil.Process(p.pid)
        tree = driver.children(recursive=True)
        os.kill(p.pid, signal.SIGKILL)
        p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert wait_gone(int(pidfile.read_text()))
    assert all(wait_gone(q.pid) for q in tree)
    assert [f.name for f in tmp.iterdir() if f.name.startswith("edgebench-worker-")] == []


def test_stale_logs_of_dead_drivers_are_removed_at_start(tmp_path):
    from edgebench.runner.execute import clean_stale_logs

    dead = subprocess.Popen(["true"])
    dead.wait()
    names = {"dead": f"edgebench-worker-{dead.pid}-abc123.log", "alive": f"edgebench-worker-{os.getpid()}-abc123.log",
             "legacy-empty": "edgebench-worker-k2j3h4g5.log", "legacy-kept": "edgebench-worker-q9w8e7r6.log",
             "other": "edgebench-worker-notes.txt"}
    for key, name in names.items():
        (tmp_path / name).write_text("solver output\n" if key == "legacy-kept" else "")
    assert clean_stale_logs(str(tmp_path)) == 2
    assert sorted(f.name for f in tmp_path.iterdir()) == sorted(names[k] for k in ("alive", "legacy-kept", "other"))


def test_a_store_without_the_startup_column_still_opens(tmp_path):
    from edgebench.runner.store import Store

    db = tmp_path / "old.sqlite"
    Store.open(db).close()
    conn = sqlite3.connect(db)
    conn.execute("ALTER TABLE runs DROP COLUMN startup")  # a store written before the column existed
    conn.execute("INSERT INTO runs (key, instance_id, instance_hash, family, solver, label, status, runtime) "
                 "VALUES ('k', 'i', 'h', 'placement', 's', 's', 'feasible', 1.5)")
    conn.commit()
    conn.close()
    with Store.open(db, create=False, readonly=True) as st:
        assert st.runs(["key", "runtime", "startup"]) == [{"key": "k", "runtime": 1.5, "startup": None}]
    with Store.open(db, create=False) as st:  # opened for writing: the column is added
        assert "startup" in {r[1] for r in st.conn.execute("PRAGMA table_info(runs)")}
        assert st.runs(["key", "startup"]) == [{"key": "k", "startup": None}]
