"""Shared test helpers.

``spread``: the suite checks sets of over 100 instances (the two generated STG sets, 720 and 180) on an evenly
spread sample; ``EDGEBENCH_FULL_SETS=1`` checks every instance (minutes more; the release
check, docs/regression.md). ``spread_set``: the sampled instances of a shipped set, loaded
without loading the rest (loading is most of the cost: about 50 ms an instance). Every shipped
instance is still loaded and checked against its manifest hash once per suite run, by
``sets.load_set`` in the demo test (tests/test_cli.py). ``bench_script``: a script of ``bench/``
(not a package) loaded as a module by its file name.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parents[1] / "bench"

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


def spread_set(name: str, k: int = SAMPLE) -> list:
    """``spread_sample(sets.load_set(name), k)`` (the same instances, in the same order) loading only
    the sampled files, each checked against its manifest hash as ``sets.load_set`` does; a set that
    is sampled whole goes through ``sets.load_set`` itself."""
    from edgebench.instances import sets
    from edgebench.instances.io import content_hash, load_instance

    entries = sets.read_manifest(name)["instances"]
    picked = spread_sample(entries, k)
    if len(picked) == len(entries):
        return sets.load_set(name)
    out = []
    for entry in picked:
        inst = load_instance(sets.DATA_DIR / name / entry["file"])
        assert content_hash(inst) == entry["hash"], (name, entry["file"])
        out.append(inst)
    return out


@pytest.fixture
def spread_loaded():
    return spread_set


def load_bench_script(name: str):
    """``bench/NAME.py`` as the module ``NAME`` (registered in ``sys.modules``, so dataclasses and
    pickling inside it work)."""
    spec = importlib.util.spec_from_file_location(name, BENCH_DIR / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def bench_script():
    return load_bench_script
