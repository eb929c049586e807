"""The generators' joint limit (issue 28): the per-parameter bounds multiply to about 1 TB,
so every generator bounds the numbers of the instance its parameters make
(``MAX_CELLS``) before the draws that grow with them. One corner per family at the joint
limit is generated under the runner's memory limit (RLIMIT_AS = 1.5 GiB, as
tests/test_hostile.py); one step past it is refused in one line, exit 2."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from edgebench.cli import main
from edgebench.instances.generators import MAX_CELLS

MEMORY_LIMIT = 1536 * 2**20
#: (family, preset, parameters at the joint limit, one parameter one step past it); the
#: measured peak RSS of each corner is in docs/generators.md, "Limits"
CORNERS = [
    ("placement", "synthetic-3", {"num_tasks": 10000, "clusters": 1000, "max_eligible": 45}, ("max_eligible", 46)),
    ("mapping", "thesis", {"nodes": 316, "link_prob": 1.0}, ("nodes", 409)),
    ("mapping", "thesis-queue", {"jobs": 1000, "task_nodes": 11}, ("task_nodes", 12)),
    ("offloading", "heft-random", {"tasks": 10000, "servers": 35}, ("servers", 36)),
    ("offloading", "edge-poisson", {"workflows": 80, "tasks": 100}, ("workflows", 81)),
]


def _args(family, preset, params, out) -> list[str]:
    sets = [a for k, v in params.items() for a in ("--set", f"{k}={v}")]
    return ["generate", family, "--preset", preset, *sets, "-o", str(out)]


@pytest.mark.slow
def test_corners_at_the_joint_limit_fit_the_memory_limit(tmp_path):
    """The corners run at once (two cores), each in a subprocess under RLIMIT_AS."""
    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    corners = [c for c in CORNERS if c[1] != "heft-random"]  # one per family and mapping's two shapes (heft:
    # 18 CPU s, measured in docs/generators.md; its bound is checked by the refusal below)
    procs = [subprocess.Popen([sys.executable, "-m", "edgebench", *_args(f, p, params, tmp_path / f"{f}-{p}")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=preexec)
             for f, p, params, _ in corners]
    for (f, p, _, _), proc in zip(corners, procs):
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, (f, p, err[-2000:])
        assert len(list((tmp_path / f"{f}-{p}").glob(f"{f}-*.json"))) == 1


@pytest.mark.parametrize("family, preset, params, past", CORNERS, ids=[f"{c[0]}-{c[1]}" for c in CORNERS])
def test_one_step_past_the_joint_limit_is_one_line(tmp_path, capsys, family, preset, params, past):
    rc = main(_args(family, preset, {**params, past[0]: past[1]}, tmp_path / "out"))
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "--set" in err and "joint limit" in err and f"{MAX_CELLS:,}" in err, err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
