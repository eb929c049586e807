"""The shipped placement certificates of the large instances recompute to the recorded values
(issue 45's "no behaviour change", the part too heavy for the test suite: the column generation
of a 192/384-task instance takes minutes, up to ten on testbed-v2; about two CPU hours in all).
The small instances are checked in tests/formulations/test_placement_certificates.py.

    OMP_NUM_THREADS=1 .venv/bin/python -m pytest -q bench/bench_certificates.py [-k SET]
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from edgebench.instances import sets

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "formulations"))
from test_placement_certificates import check_entry, is_small, placement_entries  # noqa: E402

LARGE = [(n, e["file"]) for n, e in placement_entries() if not is_small(n, e)]


@pytest.mark.parametrize("name,file", LARGE)
def test_large_placement_certificates_recompute(name, file):
    entry = next(e for e in sets.read_manifest(name)["instances"] if e["file"] == file)
    check_entry(name, entry)
