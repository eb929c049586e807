"""Isolation: a solver that hangs, crashes, exhausts memory or raises is recorded with that
status and the sweep goes on; a runner killed mid-sweep and rerun loses and duplicates
nothing, and leaves no worker behind. These run ``edgebench run`` in a subprocess with the
test-only solver of ``runner_plugin.py`` (never loaded into the test process)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
GOOD = HERE.parent / "data" / "good"
PLUGIN = HERE / "runner_plugin.py"


def edgebench(*args: str, env: dict[str, str] | None = None, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "edgebench", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kw)


def count_rows(db: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return 0


def processes_with(tag: str) -> list[int]:
    """PIDs whose environment holds ``tag`` (the workers of one test's runner)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if tag.encode() in (d / "environ").read_bytes():
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def test_hang_crash_memory_error_are_recorded_and_the_sweep_goes_on(tmp_path):
    suite = tmp_path / "bad.toml"
    suite.write_text(f"""
name = "failures"
time_limit = 1
kill_grace = 0.5
memory_limit_mb = 1024
workers = 2
plugins = ["{PLUGIN}"]

[[instances]]
files = ["{GOOD / 'offloading_tiny.json'}"]

[[solvers]]
name = "test-sleep"
label = "hang"
params = {{ mode = "hang" }}

[[solvers]]
name = "test-sleep"
label = "crash"
params = {{ mode = "crash" }}

[[solvers]]
name = "test-sleep"
label = "memory"
params = {{ mode = "memory", alloc_mb = 3000 }}

[[solvers]]
name = "test-sleep"
label = "raise"
params = {{ mode = "raise" }}

[[solvers]]
name = "test-sleep"
label = "ok"
""")
    db = tmp_path / "r.sqlite"
    p = edgebench("run", str(suite), "--db", str(db), "--no-progress", "--no-report")
    out, err = p.communicate(timeout=240)
    assert p.returncode == 0, err
    conn = sqlite3.connect(db)
    got = dict(conn.execute("SELECT label, status FROM runs"))
    msgs = dict(conn.execute("SELECT label, message FROM runs"))
    conn.close()
    assert got == {"hang": "killed", "crash": "crash", "memory": "memory", "raise": "error", "ok": "feasible"}, msgs
    assert "SIGABRT" in msgs["crash"]
    assert "hard wall-clock kill" in msgs["hang"]
    assert "RuntimeError: test-sleep was told to raise" in msgs["raise"]


@pytest.mark.slow
def test_kill_and_resume_loses_and_duplicates_nothing(tmp_path):
    suite = tmp_path / "slow.toml"
    suite.write_text(f"""
name = "resume"
seeds = [0, 1, 2, 3, 4, 5]
time_limit = 10
workers = 2
plugins = ["{PLUGIN}"]

[[instances]]
dir = "{GOOD}"

[[solvers]]
name = "test-sleep"
params = {{ sleep = 0.25 }}
""")
    db = tmp_path / "r.sqlite"
    planned = 3 * 6
    tag = f"EDGEBENCH_TEST_TAG_{uuid.uuid4().hex}"
    env = {**os.environ, tag: "1"}
    p = edgebench("run", str(suite), "--db", str(db), "--no-progress", "--no-report", env=env)
    try:
        deadline = time.monotonic() + 120
        while count_rows(db) < 4 and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        assert p.poll() is None, "the sweep finished before it could be killed"
        os.kill(p.pid, signal.SIGKILL)
        p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    first = count_rows(db)
    assert 4 <= first < planned
    # the orphaned workers notice their driver is gone and end themselves
    deadline = time.monotonic() + 15
    while processes_with(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(tag) == []
    assert count_rows(db) == first  # nothing was written after the kill

    p = edgebench("run", str(suite), "--db", str(db), "--no-progress", "--no-report")
    out, err = p.communicate(timeout=240)
    assert p.returncode == 0, err
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT key, instance_hash, seed, sweep FROM runs").fetchall()
    sweeps = conn.execute("SELECT planned, skipped, done, finished FROM sweeps ORDER BY id").fetchall()
    conn.close()
    assert len(rows) == planned
    assert len({r[0] for r in rows}) == planned and len({(r[1], r[2]) for r in rows}) == planned
    assert sum(1 for r in rows if r[3] == 1) == first  # the first sweep's runs were kept
    assert sweeps[0][3] is None  # the killed sweep never finished
    assert sweeps[1][:3] == (planned, first, planned - first)
