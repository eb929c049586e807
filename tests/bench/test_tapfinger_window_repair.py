"""bench/tapfinger_window_repair.py on two small held-out hetero-6 single instances: a window as
long as the instance never delays the expert (its repaired replay is the expert's value), the
window of 2 does delay it on these seeds, the output is complete and bad parameters exit 2."""

from __future__ import annotations

import json

import pytest

TOL = 1e-9  # the same integer totals over the same task count


@pytest.fixture(scope="module")
def wr(bench_script):
    return bench_script("tapfinger_window_repair")


def test_window_repair_measure(wr, tmp_path):
    out = tmp_path / "w.json"
    assert wr.main(["--tasks", "24", "--seeds", "2", "--windows", "2,100", "--time-limit", "20",
                    "--set", "switching_overhead=0", "--set", "max_eligible=6", "--set", "noise=0",
                    "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    per = res["per_seed"]
    assert set(per) == {"optimus", "placement-lns-online", "repaired-2", "repaired-100"}
    assert all(len(v) == 2 for v in per.values())
    assert per["repaired-100"] == pytest.approx(per["placement-lns-online"], abs=TOL)
    assert any(r > e + TOL for r, e in zip(per["repaired-2"], per["placement-lns-online"]))
    assert res["means"]["optimus"]["ratio_to_optimus"] == pytest.approx(1.0, abs=TOL)


@pytest.mark.parametrize("argv", [["--windows", "0"], ["--seeds", "0"], ["--set", "noequals"]])
def test_bad_parameters_exit_2(wr, tmp_path, argv):
    assert wr.main(argv + ["--out", str(tmp_path / "x.json")]) == 2
    assert not (tmp_path / "x.json").exists()
