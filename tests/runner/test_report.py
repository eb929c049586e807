"""The report's numbers and pages from a hand-made store: gaps to the best known and to the
bound in separate columns, tables kept apart per variant, the per-set leaderboard (and its
command), instance links, learned-solver labels, and names escaped in every format."""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from edgebench.cli import main
from edgebench.instances import sets
from edgebench.runner import report as R
from edgebench.runner.report_folder import build_report
from edgebench.runner.store import Store

SINGLE = ("placement-synthetic-3-v1", "d397ba6ab370efa14ee9c0da75df91eda1a4d9395bf600637d413996f562a59c")
MULTI = ("placement-hetero-6-v1", "5ee39724c3d1b1c81b7ce24d07725fb3173370e456417b8cce0b5ec8939d4e75")
EVIL = "<script>alert(1)</script>"
PIPE = "a|b`c`*d*"
FORMULA = '=HYPERLINK("http://x")'


def row(key, value, where, *, label="h", kind="heuristic", seed=0, status="feasible", proven=0, bound=None,
        feasible=1, iid=None):
    iset, h = where
    return {"key": key, "instance_id": iid or f"{iset}-0", "instance_hash": h, "instance_set": iset,
            "family": "placement", "size": 12, "solver": label, "label": label, "kind": kind, "seed": seed,
            "status": status, "feasible": feasible, "proven": proven, "units_ok": 1,
            "primary_name": "total_completion_time", "sense": "min", "primary_value": value,
            "reported_objective": value, "bound": bound, "runtime": 0.5 + seed, "time_limit": 10.0,
            "finished": "2026-01-02T00:00:00+00:00"}


@pytest.fixture()
def store(tmp_path):
    db = tmp_path / "s.sqlite"
    with Store.open(db) as st:
        # single-task set: an exact solver proves 10; "h" is 10 %, 20 %, 30 % away over three seeds
        st.add_run(row("e1", 10.0, SINGLE, label="exact", kind="exact", status="optimal", proven=1))
        for seed, v in enumerate((11.0, 12.0, 13.0)):
            st.add_run(row(f"h{seed}", v, SINGLE, seed=seed))
        st.add_run(row("bad", None, SINGLE, label="bad", status="infeasible", feasible=0))
        # multi-task set: best known 25 with a bound of 20 (open); "h" is 20 % from it, 50 % from the bound
        st.add_run(row("e2", 25.0, MULTI, label="exact", kind="exact", bound=20.0))
        st.add_run(row("h9", 30.0, MULTI))
    return db


def _load(db):
    with Store.open(db, create=False) as st:
        return R.load(st)


def test_gap_columns_and_variants_kept_apart(store, capsys):
    data = _load(store)
    rows = {(r["variant"], r["label"]): r for r in R.summarize(data)}
    single, multi = "total_completion_time, single-task", "total_completion_time, multi-task"
    assert set(rows) == {(single, "exact"), (single, "h"), (single, "bad"), (multi, "exact"), (multi, "h")}
    assert rows[(single, "h")]["mean_gap"] == pytest.approx(0.2)
    assert rows[(single, "h")]["mean_bound_gap"] == pytest.approx(0.2)  # closed: the bound is the optimum
    assert rows[(multi, "h")]["mean_gap"] == pytest.approx(0.2)
    assert rows[(multi, "h")]["mean_bound_gap"] == pytest.approx(0.5)
    head, body = R.summary_table(list(rows.values()))
    assert {"gap to best known (mean)", "gap to bound (mean)"} <= set(head)
    line = next(b for b in body if b[1] == multi and b[2] == "h")
    assert line[head.index("gap to best known (mean)")] == "20.00%"
    assert line[head.index("gap to bound (mean)")] == "50.00%"


def test_leaderboard_numbers_and_command(store, capsys):
    data = _load(store)
    lb = R.leaderboard(data.runs, SINGLE[0])
    assert [r["label"] for r in lb] == ["exact", "h", "bad"] and [r["rank"] for r in lb] == [1, 2, 3]
    ex, h, bad = lb
    assert ex["closed_share"] == 1.0 and ex["mean_gap"] == 0.0 and h["closed_share"] == 0.0
    assert bad["feasible_share"] == 0.0 and bad["mean_gap"] is None
    gaps = [0.1, 0.2, 0.3]
    assert h["mean_gap"] == pytest.approx(0.2)
    assert h["geo_gap"] == pytest.approx(math.exp(np.mean(np.log1p(gaps))) - 1)
    lo, hi = stats.t.interval(0.95, 2, loc=0.2, scale=stats.sem(gaps))
    assert h["seeds"] == 3 and (h["ci_low"], h["ci_high"]) == (pytest.approx(lo), pytest.approx(hi))
    assert h["sgm_runtime"] == pytest.approx(R.shifted_geomean([0.5, 1.5, 2.5]))
    # the command: one table per set, and an unknown set is one error line, exit 2
    assert main(["leaderboard", "--db", str(store), "--set", SINGLE[0]]) == 0
    out = capsys.readouterr().out
    assert f"== {SINGLE[0]}" in out and MULTI[0] not in out and "per-seed mean gap [95% CI]" in out
    assert "20.00% [" in out
    assert main(["leaderboard", "--db", str(store), "--set", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("edgebench: error: <command line>: --set:")


def test_names_escaped_in_every_format(tmp_path):
    db = tmp_path / "evil.sqlite"
    with Store.open(db) as st:
        st.add_run(row("a", 10.0, SINGLE, label=EVIL, iid=PIPE))
        st.add_run(row("b", 12.0, SINGLE, label=FORMULA, iid=PIPE, seed=1))
    files = build_report(db, tmp_path / "rep")
    md = files.markdown.read_text()
    page = files.html.read_text()
    for text in (md, page):
        assert "<script>alert" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    # every Markdown table row has as many cells as its header (no name splits a row)
    cells = re.compile(r"(?<!\\)\|")
    table = []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            table.append(len(cells.findall(line)))
        elif table:
            assert len(set(table)) == 1, table
            table = []
    assert "a\\|b\\`c\\`\\*d\\*" in md
    # CSV: a name that a spreadsheet would run as a formula is quoted
    with open(tmp_path / "rep" / "runs.csv", newline="") as fh:
        labels = {r["label"] for r in csv.DictReader(fh)}
    assert "'" + FORMULA in labels and FORMULA not in labels
    with open(tmp_path / "rep" / "leaderboard.csv", newline="") as fh:
        assert "'" + FORMULA in {r["label"] for r in csv.DictReader(fh)}


def test_instance_rows_link_instance_and_solution_files(tmp_path, monkeypatch):
    data_dir = tmp_path / "data"
    shutil.copytree(sets.DATA_DIR / SINGLE[0], data_dir / SINGLE[0])
    mpath = data_dir / SINGLE[0] / "manifest.json"
    manifest = json.loads(mpath.read_text())
    entry = next(e for e in manifest["instances"] if e["hash"] == SINGLE[1])
    entry["best_known"] = dict(entry["best_known"], objective=10.0, solution="solutions/s0.json")
    mpath.write_text(json.dumps(manifest))
    (data_dir / SINGLE[0] / "solutions").mkdir(exist_ok=True)
    (data_dir / SINGLE[0] / "solutions" / "s0.json").write_text("{}")
    monkeypatch.setattr(sets, "DATA_DIR", data_dir)
    db = tmp_path / "s.sqlite"
    with Store.open(db) as st:
        st.add_run(row("e1", 10.0, SINGLE, label="exact", kind="exact", status="optimal", proven=1))
    out = tmp_path / "rep"
    files = build_report(db, out)
    inst = R.instance_rows(_load(db))
    assert [(r["status"], r["variant"]) for r in inst] == [("closed", "total_completion_time, single-task")]
    page = files.html.read_text()
    hrefs = re.findall(r'href="([^"#]+\.json)"', page)
    assert {(out / h).resolve() for h in hrefs} == {(data_dir / SINGLE[0] / entry["file"]).resolve(),
                                                    (data_dir / SINGLE[0] / "solutions" / "s0.json").resolve()}
    assert 'class="status-closed">closed' in page


def test_learned_rows_say_how_they_were_trained(monkeypatch):
    from edgebench import registry

    class Info:
        def __init__(self, d):
            self.d = d

        def as_dict(self):
            return self.d

    table = {"pol": Info({"checkpoints": [{"preset": "p", "variant": "single", "algorithm": "bc"},
                                          {"preset": "p", "variant": "multi", "algorithm": "mappo"}]}),
             "old": Info({})}

    def get(name):
        if name not in table:
            raise KeyError(name)
        return table[name]

    monkeypatch.setattr(registry, "get", get)
    rows = [{"label": "pol[x=1]", "solver": "pol", "kind": "learned"}, {"label": "old", "solver": "old",
                                                                         "kind": "learned"},
            {"label": "gone", "solver": "gone", "kind": "learned"}, {"label": "h", "solver": "h", "kind": "heuristic"}]
    assert R.kind_labels(rows) == {"pol[x=1]": "learned (bc, mappo)", "old": "learned", "gone": "learned",
                                   "h": "heuristic"}
