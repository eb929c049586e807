"""bench/tapfinger_temperature.py: the sampling decode's temperature chosen on instances generated
with other seeds than the sets' (docs/learned-baselines.md, "Sampling decode")."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def tt(bench_script):
    return bench_script("tapfinger_temperature")


def test_validation_instances_are_the_recipe_with_other_seeds(tt):
    inst = tt.validation_instance("placement-synthetic-3-v1", 100)
    assert inst.meta["preset"] == "synthetic-3" and inst.meta["seed"] == 100
    with pytest.raises(ValueError, match="own seeds"):
        tt.validation_instance("placement-synthetic-3-v1", 0)


def test_table_chooses_the_least_mean_ratio(tt):
    runs = {}
    for name, ratios in (("a", {0.1: 0.8, 1.0: 0.9}), ("b", {0.1: 1.0, 1.0: 0.8})):
        for t, r in ratios.items():
            runs[tt.key("s", name, 100, 8, t)] = {"status": "feasible", "values": [100.0] + [None] * 3 + [100 * r] * 5}
    text, best = tt.table(runs, "s", ["a", "b"], [100], 8, [0.1, 1.0])
    assert best == 1.0  # means 0.9 (T = 0.1) against 0.85 (T = 1)
    assert "| a | -20.0 % | -10.0 % |" in text and "| mean over the sets | -10.0 % | -15.0 % |" in text
    assert text.count("best of 9") == 2  # one column per temperature (9 = K + 1)
    _, missing = tt.table(runs, "s", ["a", "b"], [100, 101], 8, [0.1, 1.0])
    assert missing is None


def test_runs_resume_and_report(tt, tmp_path, capsys, monkeypatch):
    out = tmp_path / "t.json"
    argv = ["--solver", "tapfinger-plan-bc", "--sets", "placement-synthetic-3-v1", "--seeds", "100",
            "--temperatures", "0.5,1", "--samples", "2", "--out", str(out)]
    assert tt.main(argv) == 0
    runs = json.loads(out.read_text())["runs"]
    assert len(runs) == 2 and all(len(r["values"]) == 3 for r in runs.values())
    assert "chosen temperature:" in capsys.readouterr().out
    monkeypatch.setattr(tt, "play", lambda *a: pytest.fail("a stored run was played again"))
    assert tt.main(argv) == 0 and tt.main(argv + ["--report"]) == 0
    out.write_text("[1]")
    assert tt.main(argv) == 2
