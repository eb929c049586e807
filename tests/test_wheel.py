"""The built wheel works outside the repository (README: "Install from a wheel").

``python -m build --wheel`` makes the wheel (the release command ``python -m build`` also makes
the sdist); it goes into a fresh virtual
environment created outside the repository. Installing every dependency (torch, OR-Tools, ...)
would take minutes, so the fresh environment reuses this environment's installed packages
through a ``.pth`` line and the wheel is installed with ``--no-deps``: what is tested is what the
wheel must carry — package data (instance sets, recipes, suites, checkpoints), the ``edgebench``
entry point, no import from the source tree. From an unrelated folder, with no PYTHONPATH, it runs
``edgebench sets``, a solve with a shipped checkpoint (``tapfinger``), a small suite with its
report and ``validate`` of a shipped set (recipes and shipped solutions are in the wheel).
About 30 CPU seconds; minutes of wall time only on a loaded machine.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("build", reason="the wheel test needs the 'build' package (test extras)")
#: a wheel build, a fresh environment and a suite from it: about 40 s
pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} -> {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["OMP_NUM_THREADS"] = "1"
    # the wheel only (`python -m build` also makes the sdist first; that costs half a minute more
    # and is what the release does, docs/howto/install-wheel.md)
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp / "dist"), str(ROOT)],
         tmp, env, timeout=300)
    wheels = list((tmp / "dist").glob("edgebench-*.whl"))
    assert len(wheels) == 1
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp, env)
    py = venv / "bin" / "python"
    purelib = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp, env).strip())
    # the dependencies: this environment's site-packages, after the fresh one (the editable
    # install's finder there is a .pth of that folder and is not processed through this line)
    (purelib / "zz_edgebench_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index",
          str(wheels[0])], tmp, env, timeout=300)
    work = tmp / "elsewhere"
    work.mkdir()
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return {"venv": venv, "py": py, "purelib": purelib, "work": work, "env": env, "wheel": wheels[0]}


def test_wheel_imports_from_the_fresh_environment(fresh):
    code = ("import edgebench, edgebench.instances.sets as s, sys; print(edgebench.__file__); print(s.__file__); "
            "print('\\n'.join(sys.path))")
    out = _run([str(fresh["py"]), "-c", code], fresh["work"], fresh["env"]).splitlines()
    for line in out[:2]:
        assert fresh["purelib"].resolve() in Path(line).resolve().parents, line
    source = [p for p in out[2:] if p and Path(p).resolve() in (ROOT, ROOT / "instances", ROOT / "edgebench")]
    assert not source, f"the source tree is on sys.path: {source}"
    assert fresh["wheel"].stat().st_size > 1_000_000  # instance sets and checkpoints are in it


def test_wheel_cli_sets_solve_suite_report(fresh):
    exe, work, env = str(fresh["venv"] / "bin" / "edgebench"), fresh["work"], fresh["env"]
    sets = _run([exe, "sets"], work, env)
    assert "placement-synthetic-3-v1" in sets and "offloading-heft-random-v1" in sets
    data = Path(_run([str(fresh["py"]), "-c", "from edgebench.instances import sets; print(sets.DATA_DIR)"],
                     work, env).strip())
    assert fresh["purelib"].resolve() in data.resolve().parents
    inst = sorted((data / "placement-synthetic-3-v1").glob("*.json"))
    inst = [p for p in inst if p.name != "manifest.json"][0]
    out = _run([exe, "solve", str(inst), "--solver", "tapfinger", "-o", "sol.json"], work, env)
    assert "feasible" in out or "optimal" in out, out
    assert (work / "sol.json").is_file()
    out = _run([exe, "run", "--instances", "offloading-heft-random-v1", "--solvers", "heft,random",
                "--db", "runs/small.sqlite", "--no-progress", "--workers", "1"], work, env, timeout=300)
    assert "8 runs done" in out, out
    assert (work / "runs" / "report" / "report.html").is_file()
    out = _run([exe, "validate", str(data / "offloading-heft-random-v1")], work, env)
    assert out.startswith("OK ")
    assert not (ROOT / "runs" / "small.sqlite").exists()
