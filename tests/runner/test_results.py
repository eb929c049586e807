"""``edgebench results export`` / ``results diff`` (issue 46): the export's files and metadata,
its atomic replacement, the diff's numbers (paired change with a t-interval, new best knowns,
new failures, runs added / removed) and one error line (exit 2) for anything that is not an
export. Stores are hand-made (no solver runs): seconds."""

from __future__ import annotations

import csv
import json
import math
import zlib

import pyarrow.parquet as pq
import pytest
from scipy import stats

from edgebench.cli import main
from edgebench.runner.results import export, mean_ci, read_export
from edgebench.runner.results_diff import diff
from edgebench.runner.store import Store

SET, HASH = "placement-synthetic-3-v1", "d397ba6ab370efa14ee9c0da75df91eda1a4d9395bf600637d413996f562a59c"
SET2, HASH2 = "placement-hetero-6-v1", "5ee39724c3d1b1c81b7ce24d07725fb3173370e456417b8cce0b5ec8939d4e75"
TOL = 1e-12


def row(key, value, *, where=(SET, HASH), label="h", kind="heuristic", seed=0, status="feasible", proven=0,
        feasible=1, message=None, solution=None, runtime=0.5):
    iset, h = where
    return {"key": key, "instance_id": f"{iset}-0", "instance_hash": h, "instance_set": iset, "family": "placement",
            "size": 12, "solver": label, "label": label, "kind": kind, "seed": seed, "status": status,
            "feasible": feasible, "proven": proven, "units_ok": 1, "primary_name": "total_completion_time",
            "sense": "min", "primary_value": value, "reported_objective": value, "runtime": runtime,
            "time_limit": 10.0, "message": message, "env": "e0", "finished": "2026-01-02T00:00:00+00:00",
            "solution": None if solution is None else zlib.compress(json.dumps(solution).encode())}


def make_store(path, rows):
    with Store.open(path) as st:
        for r in rows:
            st.add_run(r, env={"python": "3.x"})
        st.begin_sweep(suite="paper", suite_toml="name = 'paper'\n", argv=["edgebench", "run"], host={},
                       planned=len(rows) + 1, skipped=0)
    return path


OLD_ROWS = [row("e1", 10.0, label="exact", kind="exact", status="optimal", proven=1, solution={"x": 1}),
            *(row(f"h{s}", v, seed=s, runtime=1.0 + s) for s, v in enumerate((12.0, 13.0, 14.0))),
            row("k1", None, label="slow", status="killed", feasible=0, message="hard kill after 12 s\ntrace"),
            row("g1", 30.0, where=(SET2, HASH2), label="g")]


@pytest.fixture()
def old_export(tmp_path):
    db = make_store(tmp_path / "old.sqlite", OLD_ROWS)
    export(db, tmp_path / "old")
    return tmp_path / "old"


def test_export_files_and_metadata(old_export):
    meta = json.loads((old_export / "metadata.json").read_text())
    assert meta["export_version"] == 1 and meta["runs"] == 6 and meta["planned"] == 7
    assert meta["statuses"] == {"feasible": 4, "killed": 1, "optimal": 1}
    assert math.isclose(meta["run_seconds"], 0.5 * 3 + 1.0 + 2.0 + 3.0, rel_tol=TOL)
    assert meta["failures"] == {"killed": {"runs": 1, "reasons": [["hard kill after 12 s", 1]]}}
    assert meta["sets"][SET]["version"] == "1" and len(meta["sets"][SET]["manifest_sha256"]) == 64
    assert meta["families"] == ["placement"] and meta["environments"] == 1
    # only the run that holds its instance's best known value has its solution kept
    assert meta["solutions"] == [f"solutions/{SET}/{SET}-0.exact.json"]
    assert json.loads((old_export / meta["solutions"][0]).read_text()) == {"x": 1}
    table = pq.read_table(old_export / "runs.parquet")
    assert table.num_rows == 6 and {"gap", "bound_gap", "best_known", "best_bound", "env", "variant"} <= set(
        table.column_names)
    gaps = {r["key"]: r["gap"] for r in table.to_pylist()}
    assert math.isclose(gaps["h2"], 0.4, rel_tol=1e-9) and gaps["k1"] is None
    with open(old_export / "runs.csv", newline="") as fh:
        assert len(list(csv.reader(fh))) == 7  # header + 6 runs (a message with a newline is quoted)
    assert json.loads((old_export / "envs.json").read_text()) == {"e0": {"python": "3.x"}}


def test_export_replaces_atomically_and_refuses_other_folders(tmp_path, old_export, monkeypatch, capsys):
    from edgebench.runner import results

    before = (old_export / "metadata.json").read_text()

    def boom(*a, **k):
        raise RuntimeError("disk gone")

    monkeypatch.setattr(results, "metadata", boom)
    with pytest.raises(RuntimeError):
        export(tmp_path / "old.sqlite", old_export)
    assert (old_export / "metadata.json").read_text() == before  # the old export is untouched
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == ["old"]  # no temporary folder left
    monkeypatch.undo()
    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    assert main(["results", "export", "--db", str(tmp_path / "old.sqlite"), "-o", str(other)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "not an edgebench results export" in err
    assert [p.name for p in other.iterdir()] == ["keep.txt"]


def test_diff_paired_change_best_knowns_failures(tmp_path, old_export, capsys):
    new_rows = [row("e1", 10.0, label="exact", kind="exact", status="optimal", proven=1),
                *(row(f"h{s}", v, seed=s) for s, v in enumerate((11.0, 11.5, 13.0))),
                row("g1", None, where=(SET2, HASH2), label="g", status="error", feasible=0, message="boom"),
                row("g2", 24.0, where=(SET2, HASH2), label="g2")]  # new best known on SET2; k1 removed
    export(make_store(tmp_path / "new.sqlite", new_rows), tmp_path / "new")
    d = diff(str(old_export), str(tmp_path / "new"))
    h = next(g for g in d["groups"] if g["label"] == "h")
    pairs = [(11 - 12) / 10, (11.5 - 13) / 10, (13 - 14) / 10]
    m = sum(pairs) / 3
    half = stats.t.ppf(0.975, 2) * stats.tstd(pairs) / math.sqrt(3)
    assert h["pairs"] == 3 and math.isclose(h["delta"], m, rel_tol=1e-9)
    assert math.isclose(h["delta_ci"][0], m - half, rel_tol=1e-9) and math.isclose(h["delta_ci"][1], m + half,
                                                                                   rel_tol=1e-9)
    assert math.isclose(h["old_mean_gap"], 0.3, rel_tol=1e-9)
    # SET2's reference is the better (new) best known 24: the old g run is 25 % above it
    g = next(g for g in d["groups"] if g["label"] == "g")
    assert math.isclose(g["old_mean_gap"], 0.25, rel_tol=1e-9) and g["new_mean_gap"] is None and g["pairs"] == 0
    assert [(b["set"], b["old_value"], b["value"]) for b in d["new_best_knowns"]] == [(SET2, 30.0, 24.0)]
    assert [(f["label"], f["status"], f["was"], f["message"]) for f in d["new_failures"]] == [
        ("g", "error", "feasible", "boom")]
    assert (d["runs_added"], d["runs_removed"]) == (1, 1)  # g2 added, k1 removed
    assert main(["results", "diff", str(old_export), str(tmp_path / "new")]) == 0
    md = capsys.readouterr().out
    assert "| placement | placement-synthetic-3-v1 | h | 3/3 |" in md
    assert f"{100 * m:+.2f}% [{100 * (m - half):.2f}, {100 * (m + half):.2f}] (3)" in md
    assert "## New best knowns (1)" in md and "## New failures (1)" in md
    assert main(["results", "diff", str(old_export), str(tmp_path / "new"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs_added"] == 1


def test_mean_ci_matches_scipy():
    v = [0.1, 0.4, 0.35, 0.2]
    m, lo, hi = mean_ci(v)
    ref = stats.t.interval(0.95, 3, loc=sum(v) / 4, scale=stats.sem(v))
    assert math.isclose(lo, ref[0], rel_tol=1e-9) and math.isclose(hi, ref[1], rel_tol=1e-9)
    assert mean_ci([0.5]) == (0.5, None, None) and mean_ci([]) == (None, None, None)


@pytest.mark.parametrize("damage", ["missing", "no-metadata", "bad-json", "newer", "bad-parquet", "no-column",
                                    "text-in-number"])
def test_diff_bad_input_one_line_exit_2(tmp_path, old_export, capsys, damage):
    import pyarrow as pa

    bad = tmp_path / "bad"
    if damage != "missing":
        import shutil

        shutil.copytree(old_export, bad)
    meta = bad / "metadata.json"
    if damage == "no-metadata":
        meta.unlink()
    elif damage == "bad-json":
        meta.write_text("{")
    elif damage == "newer":
        meta.write_text(json.dumps({"export_version": 99}))
    elif damage == "bad-parquet":
        (bad / "runs.parquet").write_bytes(b"PAR1 not really")
    elif damage in ("no-column", "text-in-number"):
        t = pq.read_table(bad / "runs.parquet")
        if damage == "no-column":
            t = t.drop(["gap"])
        else:
            t = t.set_column(t.column_names.index("gap"), "gap", pa.array(["x"] * t.num_rows))
        pq.write_table(t, bad / "runs.parquet")
    assert main(["results", "diff", str(old_export), str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("edgebench: error: ") and "Traceback" not in err
    with pytest.raises(Exception):
        read_export(bad)


def test_planned_counts_a_retried_sweep_once(tmp_path):
    """A sweep resumed or retried (same command but --retry-failed / --workers / --db) plans the
    same runs: counted once; another --instances is another plan."""
    db = tmp_path / "s.sqlite"
    base = ["edgebench", "run", "paper", "--instances", SET, "--solvers", "h"]
    with Store.open(db) as st:
        st.add_run(row("h0", 12.0))
        for argv, n in ((base + ["--db", "a.sqlite"], 5), (base + ["--retry-failed", "--workers", "2"], 5),
                        (base[:4] + [SET2, "--solvers", "h"], 3)):
            st.begin_sweep(suite="paper", suite_toml=f"# {n}\n", argv=argv, host={}, planned=n, skipped=0)
    meta = export(db, tmp_path / "e")
    assert meta["planned"] == 8 and [s["sweeps"] for s in meta["suites"]] == [2, 1]


def test_results_page_headline_tables_and_slice_label(tmp_path):
    from edgebench.runner.results_page import newest_export, render

    rows = [*OLD_ROWS, row("h9", 33.0, where=(SET2, HASH2), label="h")]  # h: feasible on every run of both sets
    export(make_store(tmp_path / "s.sqlite", rows), tmp_path / "results" / "x-slice")
    assert newest_export(tmp_path / "results") == tmp_path / "results" / "x-slice"
    md, images = render(tmp_path / "results" / "x-slice")
    # h: gaps to the bound 20 %, 30 %, 40 % on SET (the exact run's proven 10); SET2 has no bound
    m, lo, hi = mean_ci([0.2, 0.3, 0.4])
    assert (f"closest to optimal (non-exact, feasible on every run) is <b>h</b>, {100 * m:.2f}% "
            f"[{100 * lo:.2f}, {100 * hi:.2f}] above the certified bound on average over 3 runs on 2 set(s); within 1 % of the best known on 0 of 4 "
            "runs") in md
    assert '!!! warning "A slice, not the full paper suite"' in md and "**7 runs**" in md
    assert md.count('<table class="sortable">') >= 2 and "<td>slow</td>" in md
    assert "hard kill after 12 s (1)" in md  # failures with their reasons
    assert list(images) == ["img/results/profile-placement.png"] and images[list(images)[0]][:4] == b"\x89PNG"


def test_site_hook_fills_the_results_page():
    import sys
    from pathlib import Path
    from types import SimpleNamespace

    ROOT = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import mkdocs_hooks
    finally:
        sys.path.pop(0)
    assert "table.sortable" in mkdocs_hooks.sort_script() and "<script>" not in mkdocs_hooks.sort_script()
    mkdocs_hooks._RESULTS["text"] = "GENERATED"
    page = SimpleNamespace(file=SimpleNamespace(src_uri="results.md"))
    out = mkdocs_hooks.on_page_markdown("# R\n\n<!-- results -->\n", page, {"docs_dir": str(ROOT / "docs")}, None)
    assert out == "# R\n\nGENERATED\n"
