"""Shared test helpers.

``spread``: the suite checks sets of over 100 instances (the two generated STG sets, 720 and 180) on an evenly
spread sample; ``EDGEBENCH_FULL_SETS=1`` checks every instance (minutes more; the release
check, docs/regression.md).
"""

from __future__ import annotations

import os

import pytest

#: instances checked per large set in the suite, and what counts as large
SAMPLE, LARGE = 40, 100


def spread_sample(items: list, k: int = SAMPLE) -> list:
    """``k`` items evenly spread over ``items`` (first and last included; all of them when
    there are at most ``LARGE`` or ``EDGEBENCH_FULL_SETS=1``).  The spacing is not a multiple of the
    STG sets' 4 server counts, so every server count is sampled."""
    n = len(items)
    if n <= max(k, LARGE) or os.environ.get("EDGEBENCH_FULL_SETS") == "1":
        return list(items)
    return [items[round(i * (n - 1) / (k - 1))] for i in range(k)]


@pytest.fixture
def spread():
    return spread_sample
