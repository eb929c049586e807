"""The paper suite on a real batch system (issue 46): scripts/slurm_localhost.sh installs
Debian's SLURM (slurm-wlm, munge) where it is missing, starts a one-node cluster on localhost,
runs a slice of the paper suite through ``python -m edgebench.runner.jobqueue slurm`` and
checks that the store equals a local run of the same slice (same run keys, statuses and
referee values). Runs where SLURM can be installed and run as root; skipped with the reason
elsewhere (the script exits 77 then). About a minute on 2 cores once the packages are in."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "slurm_localhost.sh"


def _why_not() -> str | None:
    if sys.platform != "linux":
        return "SLURM on localhost needs Linux"
    if os.geteuid() != 0:
        return "needs root (apt-get install slurm-wlm munge, munged, slurmctld, slurmd)"
    if not Path("/etc/debian_version").is_file() or shutil.which("apt-get") is None:
        return "needs Debian or Ubuntu (apt-get) for the slurm-wlm and munge packages"
    if shutil.which("bash") is None:
        return "needs bash"
    return None


@pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")
def test_paper_slice_through_slurm_equals_local_run(tmp_path):
    pytest.importorskip("dask_jobqueue", reason="the cluster extra (dask-jobqueue) is not installed")
    env = dict(os.environ, PYTHON=sys.executable, OMP_NUM_THREADS="1")
    proc = subprocess.run(["bash", str(SCRIPT), "--work", str(tmp_path / "slurm")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    if proc.returncode == 77:
        pytest.skip(next((ln for ln in out.splitlines() if ln.startswith("SKIP:")), "SLURM cannot be set up here"))
    assert proc.returncode == 0, out[-4000:]
    assert "batch jobs seen by slurmctld: 1" in out  # the runs went through a SLURM batch job
    summary = next(ln for ln in out.splitlines() if ln.startswith("slurm store "))
    assert summary == "slurm store 36 runs, local store 36 runs, 36 common keys, 0 differing", out[-4000:]
    assert "OK: the SLURM store equals the local run" in out
