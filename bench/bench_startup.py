"""Start-up benchmark (issue 43 item 1): the console script end to end, old vs new side by side.

Three commands, each in a fresh process, as a user types them:

* ``edgebench --version``
* ``edgebench solvers``
* ``edgebench solve tests/data/good/placement_tiny.json --solver random -o SOL``

**old** is the commit before lazy loading (:data:`OLD_COMMIT`), **new** the working tree. Both run
with the same virtualenv's ``edgebench`` console script, so the interpreter and every library are
the same: the old tree is checked out with ``git worktree add --detach /tmp/eb-old OLD_COMMIT`` and
laid out as installed (``/tmp/eb-old-layout/edgebench/`` holding the old ``edgebench/`` files and
symlinks to its ``formulations/``, ``solvers/``, ``learned/`` and ``instances/``: pyproject's
package-dir), and ``PYTHONPATH`` points at that layout — ``sys.path`` is searched before the
editable install's finder, so ``import edgebench`` is the old tree's. The new side runs with no
``PYTHONPATH`` (the editable install of this working tree). Old and new rounds alternate, so a
change in the machine's load hits both alike.

Run::

    .venv/bin/python -m pytest bench/bench_startup.py --benchmark-enable -q -s

pytest-benchmark's table groups old and new per command; ``test_ratio`` prints the medians of the
wall time and of the CPU time (user + system: on a loaded machine, nearer to what a quiet one's
wall would be), the ratios old / new and the issue's targets (``--version`` <= 0.3 s, ``solve`` <= 0.8 s on a quiet
machine) and asserts that new is faster than old for every command. Environment:
EDGEBENCH_BENCH_ROUNDS (rounds per side, default 7); EDGEBENCH_BENCH_OLD (an existing old layout
folder to use instead of building one).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OLD_COMMIT = "21fcd44"
WORKTREE = Path("/tmp/eb-old")
LAYOUT = Path("/tmp/eb-old-layout")
SUBPACKAGES = ("formulations", "solvers", "learned", "instances")
ROUNDS = int(os.environ.get("EDGEBENCH_BENCH_ROUNDS", "7"))
SCRIPT = Path(sys.executable).with_name("edgebench")
SMALL = ROOT / "tests" / "data" / "good" / "placement_tiny.json"
COMMANDS = {
    "version": ["--version"],
    "solvers": ["solvers"],
    "solve-random": ["solve", str(SMALL), "--solver", "random", "-o", "{out}"],
}
#: the issue's targets (seconds, end to end, on a quiet machine)
TARGETS = {"version": 0.3, "solve-random": 0.8}
TIMES: dict[tuple[str, str], list[float]] = {}
#: CPU seconds (user + system) of the same runs: on a loaded machine, closer to a quiet one's wall
CPU: dict[tuple[str, str], list[float]] = {}


def _old_layout() -> Path:
    """The old commit laid out as installed (see the module's docstring); built once."""
    given = os.environ.get("EDGEBENCH_BENCH_OLD")
    if given:
        return Path(given)
    if not (WORKTREE / "edgebench" / "cli.py").is_file():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(WORKTREE), OLD_COMMIT],
                       check=True, capture_output=True)
    pkg = LAYOUT / "edgebench"
    if not pkg.is_dir():
        tmp = LAYOUT.with_name(LAYOUT.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(WORKTREE / "edgebench", tmp / "edgebench", ignore=shutil.ignore_patterns("__pycache__"))
        for sub in SUBPACKAGES:
            (tmp / "edgebench" / sub).symlink_to(WORKTREE / sub)
        tmp.rename(LAYOUT)
    return LAYOUT


def _env(side: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if side == "old":
        env["PYTHONPATH"] = str(_old_layout())
    return env


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _run(side: str, argv: list[str], out: Path, cpu: list[float] | None = None) -> float:
    """Wall seconds of one command; its CPU seconds (user + system) appended to ``cpu``."""
    cmd = [str(SCRIPT), *(a.format(out=out / f"{side}.json") for a in argv)]
    cpu0, started = _cpu(), time.perf_counter()
    done = subprocess.run(cmd, env=_env(side), capture_output=True, text=True, cwd=out, timeout=300)
    wall = time.perf_counter() - started
    if cpu is not None:
        cpu.append(_cpu() - cpu0)
    assert done.returncode == 0, done.stderr[-2000:]
    return wall


@pytest.fixture(scope="module", autouse=True)
def _both_sides(tmp_path_factory):
    """Alternate old and new rounds of every command (after one unmeasured warm-up each)."""
    out = tmp_path_factory.mktemp("startup")
    probe = subprocess.run([sys.executable, "-c", "import edgebench, os; print(os.path.dirname(edgebench.__file__))"],
                           env=_env("old"), capture_output=True, text=True, check=True, cwd=out)
    assert probe.stdout.strip().startswith(str(LAYOUT)), "the old side does not import the old tree"
    for name, argv in COMMANDS.items():
        for side in ("old", "new"):
            _run(side, argv, out)  # page cache, .pyc files
        for _ in range(ROUNDS):
            for side in ("old", "new"):
                TIMES.setdefault((name, side), []).append(_run(side, argv, out, CPU.setdefault((name, side), [])))
    return out


@pytest.mark.parametrize("side", ["old", "new"])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_startup(benchmark, name, side, _both_sides):
    """pytest-benchmark's view: a few more rounds of one side (the alternating rounds are in
    ``extra_info`` and in test_ratio)."""
    benchmark.group = f"startup {name}"
    benchmark.extra_info["alternating_median_s"] = statistics.median(TIMES[(name, side)])
    benchmark.pedantic(_run, args=(side, COMMANDS[name], _both_sides), rounds=3, iterations=1)


def test_ratio():
    rows = []
    for name in COMMANDS:
        old, new = (statistics.median(TIMES[(name, s)]) for s in ("old", "new"))
        cold, cnew = (statistics.median(CPU[(name, s)]) for s in ("old", "new"))
        target = TARGETS.get(name)
        rows.append(f"{name:<13} wall old {old:6.3f} s  new {new:6.3f} s  old/new {old / new:5.1f}x   "
                    f"cpu old {cold:6.3f} s  new {cnew:6.3f} s  old/new {cold / cnew:5.1f}x"
                    + (f"   target <= {target} s (wall): {'met' if new <= target else 'NOT met'}" if target else ""))
    load = os.getloadavg()[0]
    print(f"\nstart-up, end to end, median of {ROUNDS} alternating rounds per side (load average {load:.1f})\n"
          + "\n".join(rows))
    for name in COMMANDS:
        assert statistics.median(TIMES[(name, "new")]) < statistics.median(TIMES[(name, "old")]), name
