"""docs/tutorial.md works as written: every ``sh`` block's commands run (in order, in a fresh
folder holding only a link to examples/) and exit 0; ``file=NAME`` blocks are written first,
where they appear."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.md"
BLOCK = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```", re.M | re.S)


def steps(text: str) -> list[tuple[str, str]]:
    """("file", "NAME\\nTEXT") and ("sh", COMMAND) in document order."""
    out = []
    for lang, attrs, body in BLOCK.findall(text):
        m = re.search(r"\bfile=(\S+)", attrs)
        if m:
            out.append(("file", f"{m.group(1)}\n{body}"))
        elif lang == "sh":
            out += [("sh", line) for line in body.splitlines() if line.strip() and not line.startswith("#")]
    return out


def test_tutorial_blocks_are_marked():
    kinds = [k for k, _ in steps(TUTORIAL.read_text())]
    assert kinds.count("file") == 3 and kinds.count("sh") >= 10


@pytest.mark.slow  # 15 commands of the real console script, two of them pytest runs: 1-1.5 min
def test_every_tutorial_command_runs(tmp_path):
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               OMP_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    ran = []
    for kind, body in steps(TUTORIAL.read_text()):
        if kind == "file":
            name, text = body.split("\n", 1)
            (tmp_path / name).write_text(text)
            continue
        proc = subprocess.run(body, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{body}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        ran.append((body, proc.stdout))
    solve = next(out for cmd, out in ran if "--solver mysolver:solve" in cmd)
    assert "feasible: true" in solve
    run = next(out for cmd, out in ran if cmd.startswith("edgebench run"))
    for label in ("heft", "one-server", "greedy-external"):
        assert label in run
    imported = next(out for cmd, out in ran if cmd.startswith("edgebench import"))
    assert "3 solutions stored as solver 'outside-greedy'" in imported
    assert "outside-greedy" in (tmp_path / "runs" / "report" / "report.md").read_text()
    assert "offloading/offloading-heft-random-v1/mysolver:solve" in (tmp_path / "quality-baseline.json").read_text()
