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


# ---- case 14: unbounded numbers; cases 8 / 14: the jobqueue launcher ----------------------


def _usage_error(capsys, argv: list[str], *pieces: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("edgebench"), err
    for p in pieces:
        assert p in err, err


@pytest.mark.parametrize("argv, pieces", [
    (["run", "--time-limit", "1e308", "--dry-run"], ("--time-limit", "at most 1e+07")),
    (["run", "--workers", "100000", "--dry-run"], ("--workers", "from 1 to 1024")),
    (["run", "--estimate-workers", "100000000", "--dry-run"], ("--estimate-workers", "from 1 to 1024")),
    (["run", "--estimate-workers", ",".join(map(str, range(1, 40))), "--dry-run"], ("at most 16 worker counts",)),
    (["solve", str(GOOD / "placement_tiny.json"), "--solver", "random", "--time-limit", "1e308"],
     ("--time-limit", "at most 1e+07")),
])
def test_command_line_numbers_have_the_suites_caps(capsys, argv, pieces):
    _usage_error(capsys, argv, *pieces)


def test_one_place_for_the_caps():
    from edgebench import argtypes
    from edgebench.runner import suite

    assert suite.MAX_SECONDS is argtypes.MAX_SECONDS and suite.MAX_WORKERS is argtypes.MAX_WORKERS
    assert argtypes.seconds("1e7") == 1e7 and argtypes.workers("1024") == 1024


def test_makespan_allocates_per_run_not_per_worker():
    import tracemalloc

    from edgebench.runner.estimate import makespan

    tracemalloc.start()
    try:
        assert makespan([3.0, 2.0, 1.0], 10 ** 8) == pytest.approx(3.0, abs=1e-12)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak  # was 0.8 GB of idle loads
    assert makespan([3.0, 2.0, 2.0, 1.0], 2) == pytest.approx(4.0, abs=1e-12)


def _jobqueue(capsys, *argv: str) -> str:
    from edgebench.runner import jobqueue

    with pytest.raises(SystemExit) as exc:
        jobqueue.main(list(argv))
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("edgebench: error: <command line>: "), err
    return err


@pytest.mark.parametrize("argv, piece", [
    (("slurm", "--memory", "abc"), "--memory"),
    (("pbs", "--memory", "1e999GB"), "--memory"),
    (("pbs", "--memory", "100PB"), "--memory"),
    (("slurm", "--queue", "normal\n#SBATCH --account=someone-else", "--print-job-script"), "--queue"),
    (("slurm", "--account", "a\rb"), "--account"),
    (("slurm", "--walltime", "01:00:00\n#SBATCH -x"), "--walltime"),
    (("local", "--cores", "100000", "--print-job-script"), "--cores"),
    (("slurm", "--jobs", "0"), "--jobs"),
])
def test_jobqueue_options_are_one_line(capsys, argv, piece):
    assert piece in _jobqueue(capsys, *argv)


def test_jobqueue_local_prints_before_starting_anything(capsys, monkeypatch):
    from edgebench.runner import jobqueue

    def no_cluster(*a, **k):
        raise AssertionError("a cluster was started for --print-job-script")

    monkeypatch.setattr(jobqueue, "make_cluster", no_cluster)
    assert jobqueue.main(["local", "--cores", "64", "--print-job-script"]) == 0
    assert "no batch script" in capsys.readouterr().out


def test_watchdog_imports_nothing_from_the_working_folder(tmp_path):
    from edgebench.external import run_program

    marker = tmp_path / "imported"
    for name in ("psutil.py", "select.py"):
        (tmp_path / name).write_text(f"open({str(marker)!r}, 'w').close()\n")
    (tmp_path / "edgebench").mkdir()
    (tmp_path / "edgebench" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    code, _ = run_program("exit 0", cwd=str(tmp_path), log=tmp_path / "out.log", timeout=60)
    assert code == 0 and not marker.exists()
