"""bench/tapfinger_sampling_curve.py: the sampling decode's best-of-first-k curve per set against
the shipped best knowns (docs/learned-baselines.md, "Sampling decode")."""

from __future__ import annotations

import json
import sqlite3
import zlib

import pytest

from edgebench.instances import sets

NAME = "placement-synthetic-3-v1"


@pytest.fixture(scope="module")
def sc(bench_script):
    return bench_script("tapfinger_sampling_curve")


def _runs(factors: list[list[float | None]]) -> list[dict]:
    """One run per instance of NAME, episode values = factor x the instance's best known."""
    entries = sets.read_manifest(NAME)["instances"]
    return [{"set": NAME, "instance": e["id"], "label": "plan-bc-sample128", "status": "feasible",
             "checkpoint_sha256": None,
             "sample_values": [None if f is None else f * e["best_known"]["objective"] for f in fs]}
            for e, fs in zip(entries, factors)]


def test_best_of_first_k(sc):
    assert sc.best_of_first([5.0, None, 7.0, 3.0, 4.0]).tolist() == [5.0, 5.0, 5.0, 3.0, 3.0]


def test_table_reads_the_best_of_the_first_k_and_the_first_k_within_target(sc, tmp_path, capsys):
    n = len(sets.read_manifest(NAME)["instances"])
    # every instance: greedy 1.3 x its best known, episode 3 (k = 3) at 1.1, the rest worse
    runs = _runs([[1.3, 1.5, 1.1] + [1.4] * 30 for _ in range(n)])
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"runs": runs}))
    assert sc.main(["--runs", str(path), "--figure", str(tmp_path / "c.png")]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "c.png").is_file() and (tmp_path / "c.svg").is_file()
    row = next(line for line in out.splitlines() if line.startswith(f"| synthetic-3-v1 ({n})"))
    cells = [c.strip() for c in row.split("|")[1:-1]]
    assert "+30.0 %" in cells[2] and "+10.0 %" in cells[3] and "+10.0 %" in cells[4]
    assert "best of 129" not in out and "best of 33 (greedy + 32)" in out  # 33 episodes: no column past them
    assert cells[-1] == "3"


def test_a_set_with_a_missing_instance_or_a_stale_checkpoint(sc, tmp_path, capsys):
    n = len(sets.read_manifest(NAME)["instances"])
    runs = _runs([[1.2, 1.0] for _ in range(n)])
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"runs": runs[1:]}))  # one instance without a run: no row
    assert sc.main(["--runs", str(path), "--figure", str(tmp_path / "c.png")]) == 0
    assert "synthetic-3-v1" not in capsys.readouterr().out
    runs[0]["checkpoint_sha256"] = "0" * 64
    path.write_text(json.dumps({"runs": runs}))
    assert sc.main(["--runs", str(path), "--figure", str(tmp_path / "c.png")]) == 1
    assert f"stale: plan-bc-sample128 on {runs[0]['instance']}" in capsys.readouterr().err


def test_from_a_store_and_bad_sources(sc, tmp_path, capsys):
    n = len(sets.read_manifest(NAME)["instances"])
    db = tmp_path / "s.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE runs (instance_set, instance_id, label, status, checkpoint, solution, seed)")
    for r in _runs([[1.2, 1.05] for _ in range(n)]):
        blob = zlib.compress(json.dumps({"stats": {"sample_values": r["sample_values"]}}).encode())
        con.execute("INSERT INTO runs VALUES (?, ?, ?, 'feasible', NULL, ?, 0)",
                    (NAME, r["instance"], r["label"], blob))
    con.commit()
    con.close()
    exp = tmp_path / "exp.json"
    assert sc.main(["--db", str(db), "--export", str(exp), "--figure", str(tmp_path / "c.png")]) == 0
    out = capsys.readouterr().out
    assert "best of 2 (greedy + 1)" in out and "+5.0 %" in out
    assert len(json.loads(exp.read_text())["runs"]) == n
    assert sc.main(["--db", str(tmp_path / "none.sqlite")]) == 2
    (tmp_path / "bad.json").write_text("{")
    assert sc.main(["--runs", str(tmp_path / "bad.json")]) == 2
    assert capsys.readouterr().err.count("error:") == 2


def test_the_label_selects_one_rows_runs(sc, tmp_path, capsys):
    """A store holds both rows (the variant's and the MAPPO policy's): each label reads its own runs,
    and --export writes that row's runs only."""
    n = len(sets.read_manifest(NAME)["instances"])
    variant = _runs([[1.3, 1.2] for _ in range(n)])
    mappo = [dict(r, label="mappo-sample128") for r in _runs([[1.5, 1.05] for _ in range(n)])]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"runs": variant + mappo}))
    for label, best in (("plan-bc-sample128", "+20.0 %"), ("mappo-sample128", "+5.0 %")):
        out_path = tmp_path / f"{label}.json"
        assert sc.main(["--runs", str(path), "--label", label, "--figure", str(tmp_path / "c.png"),
                        "--export", str(out_path)]) == 0
        row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| synthetic-3-v1"))
        assert best in row.split("|")[-3]
        assert {r["label"] for r in json.loads(out_path.read_text())["runs"]} == {label}
    with pytest.raises(SystemExit):
        sc.main(["--runs", str(path), "--label", "nope"])
