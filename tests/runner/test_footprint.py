"""Footprints in the report: features stored with the runs, one PNG + SVG per family with a
panel per solver, the footprint (instances within 1 % of the best known) counted per panel."""

from __future__ import annotations

import numpy as np

from edgebench.features import features
from edgebench.instances import sets
from edgebench.runner import footprint
from edgebench.runner import report as R
from edgebench.runner.report_folder import build_report
from edgebench.runner.store import Store

SET = "placement-synthetic-3-v1"


def _row(key, inst, entry, label, value):
    return {"key": key, "instance_id": inst.id, "instance_hash": entry["hash"], "instance_set": SET,
            "family": "placement", "size": 12, "solver": label, "label": label, "kind": "heuristic", "seed": 0,
            "status": "feasible", "feasible": 1, "proven": 0, "units_ok": 1, "primary_name": "total_completion_time",
            "sense": "min", "primary_value": value, "runtime": 0.1, "time_limit": 10.0,
            "finished": "2026-01-02T00:00:00+00:00"}


def test_report_shows_footprints(tmp_path):
    insts = sets.load_set(SET)
    entries = sets.read_manifest(SET)["instances"]
    db = tmp_path / "s.sqlite"
    with Store.open(db) as st:
        st.add_features((e["hash"], "placement", features(i)) for i, e in zip(insts, entries))
        for k, (inst, e) in enumerate(zip(insts, entries)):
            st.add_run(_row(f"a{k}", inst, e, "good", 100.0))           # the best everywhere
            st.add_run(_row(f"b{k}", inst, e, "bad", 100.0 + 50 * k))   # within 1 % on the first only
        assert len(st.features()) == len(insts)
    with Store.open(db, create=False) as st:
        data = R.load(st)
    pi = R.per_instance(data.runs)
    hashes = sorted(e["hash"] for e in entries)
    coords, share, hs, gaps = footprint.footprints("placement", hashes, ["good", "bad"], pi, data.features)
    assert coords.shape == (4, 2) and 0 < share.sum() <= 1 + 1e-9
    assert int((gaps["good"] <= footprint.FOOTPRINT_GAP).sum()) == 4
    assert int((gaps["bad"] <= footprint.FOOTPRINT_GAP).sum()) == 1 and np.nanmax(gaps["bad"]) > 0.5
    files = build_report(db, tmp_path / "rep")
    png = tmp_path / "rep" / "plots" / "placement_footprints.png"
    assert png in files.plots and png.with_suffix(".svg") in files.svg
    html = files.html.read_text()
    assert "plots/placement_footprints.png" in html and "instance space and footprints" in html
    assert "bad: 1/4 within 1%" in png.with_suffix(".svg").read_text()
