"""Published reference values (the STG optimum tables) against our certificates."""

from __future__ import annotations

import json

import pytest

from edgebench.cli import main
from edgebench.instances import bks, references, sets
from edgebench.instances.traces import default_traces_dir
from edgebench.instances.traces.stg import read_optima

STG = "offloading-stg-v2"
STG_SETS = {"offloading-stg-v2": 720, "offloading-stg-100-v2": 180}


def _bk(obj, bound):
    return {"objective": obj, "bound": bound, "solver": "x", "bound_kind": "k"}


@pytest.mark.parametrize("ref, obj, bound, status", [
    ({"optimum": 66}, 66.0, 66.0, "reproduced"),
    ({"optimum": 66}, 66.0 + 1e-9, 66.0, "reproduced"),       # inside the referee's tolerance
    ({"optimum": 66}, 67.0, 64.0, "consistent"),               # 66 inside [bound, objective]
    ({"optimum": 66}, 65.0, 64.0, "disagree"),                 # a schedule below the published optimum
    ({"optimum": 66}, 70.0, 67.0, "disagree"),                 # a bound above the published optimum
    ({"optimum": 66}, 65.9999, 60.0, "disagree"),              # beyond 1e-6 abs + 1e-6 rel
    ({"lower": 132, "upper": 134}, 134.0, 134.0, "closes"),
    ({"lower": 132, "upper": 134}, 133.0, 133.0, "closes"),
    ({"lower": 132, "upper": 134}, 136.0, 130.0, "consistent"),
    ({"lower": 132, "upper": 134}, 131.0, 130.0, "disagree"),  # below the published lower bound
    ({"lower": 132, "upper": 134}, 140.0, 135.0, "disagree"),  # our bound above the published upper bound
    ({"lower": 132, "upper": 134}, None, None, "consistent"),
])
def test_check(ref, obj, bound, status):
    assert references.check(ref, _bk(obj, bound))[0] == status


def _tiny_data(tmp_path, obj, bound):
    folder = tmp_path / "x-v1"
    folder.mkdir()
    m = {"name": "x-v1", "family": "offloading", "description": "d",
         "instances": [{"id": "i0", "file": "i0.json", "hash": "0" * 64, "reference": {"source": "t", "optimum": 10},
                        "best_known": {**_bk(obj, bound), "solution": None}}]}
    (folder / "manifest.json").write_text(json.dumps(m))
    return tmp_path


def test_disagreement_is_listed_and_rendered(tmp_path):
    data = _tiny_data(tmp_path, 9.0, 9.0)
    assert references.disagreements(data) == ["x-v1/i0: our objective 9 is below the published optimum 10"]
    assert "### Disagreements (errors)" in references.render(data)
    (tmp_path / "ok").mkdir()
    assert references.disagreements(_tiny_data(tmp_path / "ok", 10.0, 10.0)) == []


def test_shipped_stg_sets_have_references_and_no_disagreement():
    for name, n in STG_SETS.items():
        entries = sets.read_manifest(name)["instances"]
        assert len(entries) == n and all(e.get("reference") for e in entries)
    assert references.disagreements() == []
    # every published optimum is reproduced by our certificate or lies inside [bound, best known]
    stats = {r["id"]: r["status"] for r in references.rows() if r["set"] in STG_SETS}
    assert len(stats) == sum(STG_SETS.values())
    assert set(stats.values()) <= {"reproduced", "closes", "consistent"}
    assert "## Published reference values" in bks.render()


@pytest.mark.skipif(default_traces_dir() is None or not (default_traces_dir() / "stg").is_dir(),
                    reason="STG traces not found (../shared/traces/stg)")
def test_shipped_references_are_the_published_tables():
    base = default_traces_dir()
    for e in (e for name in STG_SETS for e in sets.read_manifest(name)["instances"]):
        graph, table = e["files"]
        row = read_optima(base / table)[(graph.removeprefix("stg/"), e["params"]["servers"])]
        assert {k: v for k, v in e["reference"].items() if k != "source"} == row


def test_sets_bks_command_exits_0_without_disagreement(tmp_path, capsys):
    out = tmp_path / "bks.md"
    assert main(["sets", "bks", "-o", str(out)]) == 0
    text = out.read_text()
    assert "Published-open instances closed by our certificates" in text
    assert "](img/bks-gaps.png)" in text
    # the figure beside the page: every set a row, the totals of the table's 'all' row in its title
    svg = (tmp_path / "img" / "bks-gaps.svg").read_text()
    assert (tmp_path / "img" / "bks-gaps.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    gaps = bks.instance_gaps()
    assert [name for name, _, _ in gaps] == [r["set"] for r in bks.rows()]
    for (name, _, g), r in zip(gaps, bks.rows()):
        assert f"{name} ({len(g)})" in svg
        assert sum(x is None for x in g) == r["closed"] and len(g) <= r["certified"]
    all_row = next(line for line in text.splitlines() if line.startswith("| **all** |")).split("|")
    assert f"{all_row[5].strip()} of {sum(len(g) for _, _, g in gaps)} certified instances closed" in svg


def test_gap_figure_draws_closed_open_and_empty_sets(tmp_path):
    """The figure's drawing on made-up rows: a closed, an open and a set without certified instances."""
    from edgebench.runner.plots import gap_strips

    paths = gap_strips([("a-v1", "placement", [None, None]), ("b-v2", "mapping", [0.05, 0.0012, None]),
                        ("c-v1", "offloading", [])], tmp_path / "g.png")
    assert [p.name for p in paths] == ["g.png", "g.svg"]
    svg = paths[1].read_text()
    assert "a-v1 (2)" in svg and "b-v2 (3)" in svg and "c-v1 (0)" in svg
    assert "3 of 5 certified instances closed" in svg
    again = gap_strips([("a-v1", "placement", [None, None]), ("b-v2", "mapping", [0.05, 0.0012, None]),
                        ("c-v1", "offloading", [])], tmp_path / "h.png")
    assert again[1].read_text() == svg  # same rows, same file (no date, fixed element ids)


def test_still_open_rows_say_which_published_end_ours_tightens(tmp_path):
    folder = tmp_path / "x-v1"
    folder.mkdir()
    m = {"name": "x-v1", "family": "offloading", "description": "d",
         "instances": [{"id": "i0", "file": "i0.json", "hash": "0" * 64, "reference": {"source": "t", "lower": 10, "upper": 14},
                        "best_known": {**_bk(13.0, 11.0), "solution": None}},
                       {"id": "i1", "file": "i1.json", "hash": "1" * 64, "reference": {"source": "t", "lower": 10, "upper": 14},
                        "best_known": {**_bk(14.0, 10.0), "solution": None}}]}
    (folder / "manifest.json").write_text(json.dumps(m))
    text = references.render(tmp_path)
    assert "| x-v1 | i0 | [10, 14] | [11, 13] | upper, lower |" in text
    assert "| x-v1 | i1 | [10, 14] | [10, 14] | - |" in text
