"""bench/tapfinger_eval.py's ``--bound`` row on two small held-out instances (the row is each
instance's certified lower bound per task (``combinatorial_bound`` over the number of tasks),
never above any solver's referee value on the same seed, and it joins the paired comparisons),
and its ``--ratios`` plot."""

from __future__ import annotations

import json

import pytest

from edgebench.formulations.placement.bounds.certify import combinatorial_bound
from edgebench.instances.generators import generate

TOL = 1e-9  # the row and the recomputed bound are the same float division


@pytest.fixture(scope="module")
def te(bench_script):
    return bench_script("tapfinger_eval")


def test_bound_row(te, tmp_path):
    out = tmp_path / "e.json"
    assert te.main(["--preset", "synthetic-3", "--variant", "multi", "--tasks", "24", "--seeds", "2",
                    "--set", "switching_overhead=0", "--set", "noise=0", "--bound",
                    "--solvers", "optimus,tapfinger", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    per = res["per_seed"]
    assert set(per) == {te.BOUND, "optimus", "tapfinger"}
    for k, seed in enumerate(res["seeds"]):
        inst = generate("placement", "synthetic-3", seed=seed, variant="multi", num_tasks=24,
                        switching_overhead=0, noise=0)
        b, _ = combinatorial_bound(inst.payload)
        assert per[te.BOUND][k] == pytest.approx(b / 24, abs=TOL)
        for s in ("optimus", "tapfinger"):
            assert per[te.BOUND][k] <= per[s][k] + TOL
    pair = res["pairs"][f"{te.BOUND} vs optimus"]
    assert pair["mean_pct"] <= 0.0 and pair["worse"] == 0


def test_ratio_plot(te, tmp_path):
    """``--ratios``: the paired ratios to Optimus plotted from earlier ``--out`` files (a PNG is
    written; a solver absent from a file is left out there); a file without Optimus is refused."""
    out, png = tmp_path / "e.json", tmp_path / "r.png"
    assert te.main(["--preset", "hetero-6", "--variant", "single", "--tasks", "24", "--seeds", "2",
                    "--set", "switching_overhead=0", "--set", "noise=0", "--set", "max_eligible=6",
                    "--solvers", "optimus,placement-list-window", "--out", str(out)]) == 0
    assert te.main(["--ratios", str(out), "--solvers", "placement-list-window,tapfinger", "--png", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    res = json.loads(out.read_text())
    del res["per_seed"]["optimus"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(res))
    with pytest.raises(SystemExit, match="no optimus"):
        te.main(["--ratios", str(bad), "--solvers", "placement-list-window", "--png", str(png)])
