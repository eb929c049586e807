"""Hostile input, round three (issue 44): processes that outlive a kill (case 10), unbounded
numbers on the command line (case 14) and the jobqueue launcher's options (cases 8 and 14).

The process cases run the CLI in a subprocess, SIGKILL (or SIGTERM) it, and check that
within a few seconds nothing it started is left: no program process, no temporary folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from edgebench.cli import main

HERE = Path(__file__).resolve().parent
GOOD = HERE / "data" / "good"
EB = str(Path(sys.executable).parent / "edgebench")


def _marked(marker: str) -> list[psutil.Process]:
    """Live processes whose command line is ``marker`` (zombies do not count; not the CLI or
    the watchdog, whose command lines contain it)."""
    out = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and " ".join(p.info["cmdline"] or ()) == marker:
                out.append(p)
        except psutil.Error:
            pass
    return out


def _wait(cond, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def _sleeps(tmp_path: Path) -> tuple[str, str, str]:
    """Two sleep commands unique to this test (``sleep 311.<pid>``: GNU sleep takes fractions)
    and the shell command starting both, the first in the background."""
    tag = f"{os.getpid()}{len(tmp_path.name)}"
    a, b = f"sleep 311.{tag}", f"sleep 312.{tag}"
    return a, b, f"{a} & {b}"


def _kill_and_check(proc: subprocess.Popen, sig: int, markers: list[str], tmp: Path, seconds: float = 8,
                    folder: bool = True) -> None:
    try:
        assert _wait(lambda: all(_marked(m) for m in markers), 120), "the program did not start"
        proc.send_signal(sig)
        proc.wait(timeout=30)
        gone = _wait(lambda: not any(_marked(m) for m in markers), seconds)
        left = [p.info["cmdline"] for m in markers for p in _marked(m)]
        folders = sorted(x.name for x in tmp.glob("edgebench-external-*"))
        for m in markers:  # never leave the sleeps behind, even when the test fails
            for p in _marked(m):
                p.kill()
        assert gone, f"still running {seconds} s after the kill: {left}"
        if folder:  # (the runner's workers SIGKILL a run's whole tree, the watchdog included)
            assert _wait(lambda: not list(tmp.glob("edgebench-external-*")), 3), folders
    finally:
        proc.kill()
        proc.wait()


def _env(tmp: Path) -> dict[str, str]:
    """TMPDIR in the test's folder. (The CLI starts in a session of its own, as a job of an
    interactive shell does: nothing of the test's process group can reach its processes.)"""
    return {**os.environ, "TMPDIR": str(tmp)}


def test_sigkill_of_solve_command_ends_the_program_and_removes_its_folder(tmp_path):
    a, b, cmd = _sleeps(tmp_path)
    proc = subprocess.Popen([EB, "solve", str(GOOD / "placement_tiny.json"), "--command", cmd,
                             "-o", str(tmp_path / "s.json")], env=_env(tmp_path),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    _kill_and_check(proc, signal.SIGKILL, [a, b], tmp_path)
    assert not (tmp_path / "s.json").exists()


def test_sigkill_of_adversary_search_ends_the_target_program(tmp_path):
    a, b, cmd = _sleeps(tmp_path)
    proc = subprocess.Popen([EB, "adversary", "search", "--family", "placement", "--size", "3", "--target-command",
                             cmd, "--reference", "random", "--evals", "5", "-o", str(tmp_path / "adv")],
                            env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    _kill_and_check(proc, signal.SIGKILL, [a, b], tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killed_run_driver_leaves_no_setsid_child_of_a_suite_command(tmp_path, sig):
    a, _, _ = _sleeps(tmp_path)
    suite = tmp_path / "s.toml"
    suite.write_text(f'name = "s"\ntime_limit = 200\nseeds = [0]\n[[instances]]\nfiles = ["{GOOD / "placement_tiny.json"}"]\n'
                     f'[[solvers]]\nname = "bg"\ncommand = "setsid {a} & {a}"\n')
    proc = subprocess.Popen([EB, "run", str(suite), "--db", str(tmp_path / "r.sqlite"), "--no-report",
                             "--no-progress"], env=_env(tmp_path), cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    _kill_and_check(proc, sig, [a], tmp_path, folder=False)


def test_watchdog_reports_exit_status_and_kills_leftovers(tmp_path):
    from edgebench.external import run_program

    a, _, _ = _sleeps(tmp_path)
    log = tmp_path / "out.log"
    code, _ = run_program(f"setsid {a} & echo hi; exit 7", cwd=str(tmp_path), log=log, timeout=60)
    assert code == 7 and log.read_text().strip() == "hi"
    assert _wait(lambda: not _marked(a), 5)
    code, seconds = run_program(f"{a}", cwd=str(tmp_path), log=log, timeout=1)
    assert code is None and seconds < 10 and _wait(lambda: not _marked(a), 5)
    code, _ = run_program("kill -9 $$", cwd=str(tmp_path), log=log, timeout=60)
    assert code == -9
