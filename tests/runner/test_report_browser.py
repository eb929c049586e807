"""report.html in a real browser (headless Chromium through the DevTools protocol): no
console error, no exception, no script from a name (a solver called ``<script>alert(1)
</script>``), every image renders, nothing is fetched from the network, the leaderboard
sorts on a click; a screenshot lands in ``runs/report-screenshot.png``. Skipped, with the
reason, when no Chromium is installed (``apt-get install chromium``; README)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgebench.runner import report as R
from edgebench.runner.report_folder import build_report
from edgebench.runner.store import Store

from report_browser import find_browser, open_page
from test_report import EVIL, MULTI, PIPE, SINGLE, row

ROOT = Path(__file__).resolve().parents[2]
BROWSER = find_browser()
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no Chromium installed: `apt-get install chromium` "
                                                        "(or set EDGEBENCH_BROWSER to a Chrome / Chromium binary)")


def test_report_page_in_chromium(tmp_path):
    db = tmp_path / "s.sqlite"
    with Store.open(db) as st:
        st.add_run(row("e1", 10.0, SINGLE, label="exact", kind="exact", status="optimal", proven=1))
        for seed, v in enumerate((11.0, 12.0, 13.0)):
            st.add_run(row(f"h{seed}", v, SINGLE, seed=seed))
            st.add_run(row(f"x{seed}", v + 1, SINGLE, seed=seed, label=EVIL))
            st.add_run(row(f"p{seed}", v + 2, SINGLE, seed=seed, label="pipe", iid=PIPE))
        st.add_run(row("e2", 25.0, MULTI, label="exact", kind="exact", bound=20.0))
        st.add_run(row("h9", 30.0, MULTI))
    files = build_report(db, tmp_path / "rep")
    shot = ROOT / "runs" / "report-screenshot.png"
    rep = open_page(BROWSER, files.html, shot)
    assert rep.problems() == []
    assert rep.images == len(files.plots) > 0
    assert rep.sorted_ok is True
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_browser_check_sees_broken_pages(tmp_path):
    """The checks are not vacuous: a missing image, a console error and an alert are caught."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><img src='missing.png'>"
                   "<script>console.error('boom'); alert(1)</script></body></html>")
    rep = open_page(BROWSER, bad)
    assert rep.broken_images == ["missing.png"]
    assert any("boom" in m for m in rep.console_errors)
    assert any("dialog" in m for m in rep.exceptions)
