"""bench/tapfinger_rows_vs_bks.py: the "every TapFinger row against the best knowns" table of
docs/learned-baselines.md, recomputed from the committed runs and the shipped manifests."""

from __future__ import annotations

import json

import pytest

from edgebench.instances import sets

TOL = 0.05  # the table prints one decimal


@pytest.fixture(scope="module")
def rv(bench_script):
    return bench_script("tapfinger_rows_vs_bks")


def _cells(text: str) -> dict[str, list[str]]:
    return {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in text.splitlines() if line.startswith("| ") and "(" in line.split("|")[1]}


def test_table_is_the_runs_against_the_shipped_best_knowns(rv, tmp_path, capsys):
    assert rv.main(["--figure", str(tmp_path / "f.png")]) == 0  # every run's checkpoint still ships
    out, err = capsys.readouterr()
    assert (tmp_path / "f.png").is_file() and (tmp_path / "f.svg").is_file()
    cells = _cells(out)
    runs = json.loads(rv.RUNS.read_text())["runs"]
    for name in rv.TARGET_SETS:
        entries = sets.read_manifest(name)["instances"]
        row = cells[f"{name.removeprefix('placement-')} ({len(entries)})"]
        bk = sum(e["best_known"]["objective"] for e in entries) / len(entries)
        assert float(row[0]) == pytest.approx(bk, abs=TOL)
        # optimus's cell: its mean over the set's instances, and its excess over the best known
        opt = [r["total_completion_time"] for r in runs if r["set"] == name and r["solver"] == "optimus"]
        mean = sum(opt) / len(opt)
        assert row[1] == f"{mean:.1f} ({100 * (mean / bk - 1):+.1f} %)"
        assert row[-1].startswith(("met", "missed by"))
    assert cells["testbed-v2 (3)"][-1] == "(no target)"


def test_verdict_reads_the_best_tapfinger_row_and_a_stale_checkpoint_fails(rv, tmp_path, capsys):
    name = "placement-synthetic-3-v1"
    entries = sets.read_manifest(name)["instances"]
    runs = []
    for e in entries:
        bk = e["best_known"]["objective"]
        runs += [{"set": name, "instance": e["id"], "solver": "optimus", "total_completion_time": 2 * bk,
                  "status": "feasible", "checkpoint_sha256": None},
                 {"set": name, "instance": e["id"], "solver": "tapfinger", "total_completion_time": 1.2 * bk,
                  "status": "feasible", "checkpoint_sha256": None},
                 {"set": name, "instance": e["id"], "solver": "tapfinger-plan-bc", "total_completion_time": 1.1 * bk,
                  "status": "feasible", "checkpoint_sha256": None}]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"runs": runs}))
    assert rv.main(["--runs", str(path), "--figure", str(tmp_path / "f.png")]) == 0
    row = _cells(capsys.readouterr().out)[f"synthetic-3-v1 ({len(entries)})"]
    assert row[-1] == "met (by the variant): `tapfinger-plan-bc`"
    runs = [r for r in runs if r["solver"] != "tapfinger-plan-bc"]
    runs[1]["checkpoint_sha256"] = "0" * 64  # a checkpoint that does not ship
    path.write_text(json.dumps({"runs": runs}))
    assert rv.main(["--runs", str(path), "--figure", str(tmp_path / "f.png")]) == 1
    out, err = capsys.readouterr()
    assert _cells(out)[f"synthetic-3-v1 ({len(entries)})"][-1] == "missed by 5.0 points: `tapfinger`"
    assert f"stale: tapfinger on {entries[0]['id']}" in err
    # an unreadable source: one line, exit 2
    assert rv.main(["--runs", str(tmp_path / "none.json")]) == 2
    assert rv.main(["--db", str(tmp_path / "none.sqlite")]) == 2


def test_add_db_replaces_the_same_row_and_adds_a_new_one(rv, tmp_path, capsys):
    """``--add-db``: a store's runs replace the export's runs of the same set, instance and row
    (a row run again) and add the rest (a new row, by its export name from the suite label)."""
    import sqlite3

    name = "placement-synthetic-3-v1"
    entries = sets.read_manifest(name)["instances"]
    runs = [{"set": name, "instance": e["id"], "solver": s, "total_completion_time": f * e["best_known"]["objective"],
             "status": "feasible", "checkpoint_sha256": None} for e in entries for s, f in (("optimus", 2.0),
                                                                                            ("tapfinger", 1.3))]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"runs": runs}))
    db = tmp_path / "new.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE runs (instance_set, instance_id, label, primary_value, status, checkpoint, seed)")
    for e in entries:
        bk = e["best_known"]["objective"]
        con.execute("INSERT INTO runs VALUES (?, ?, ?, ?, 'feasible', NULL, 0)", (name, e["id"], "tapfinger", 1.2 * bk))
        con.execute("INSERT INTO runs VALUES (?, ?, ?, ?, 'feasible', NULL, 0)",
                    (name, e["id"], "plan-bc-sample32", 1.1 * bk))
    con.commit()
    con.close()
    out_json = tmp_path / "out.json"
    assert rv.main(["--runs", str(path), "--add-db", str(db), "--export", str(out_json),
                    "--figure", str(tmp_path / "f.png")]) == 0
    row = _cells(capsys.readouterr().out)[f"synthetic-3-v1 ({len(entries)})"]
    assert row[-1] == "met (by the variant): `tapfinger-plan-bc{samples=32}`"
    got = json.loads(out_json.read_text())["runs"]
    assert len(got) == 3 * len(entries)
    tap = {r["instance"]: r["total_completion_time"] for r in got if r["solver"] == "tapfinger"}
    assert tap == {e["id"]: pytest.approx(1.2 * e["best_known"]["objective"]) for e in entries}
    assert rv.main(["--runs", str(path), "--add-db", str(tmp_path / "none.sqlite")]) == 2
