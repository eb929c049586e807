"""The quality regression fixture `edgebench_regression` (edgebench.pytest_plugin), run the
way a user runs it in their own repository (pytester: a fresh pytest in a temp folder)."""

from __future__ import annotations

import json

import pytest
import tomllib
from pathlib import Path

import edgebench.runner.execute  # noqa: F401  (imported here: pytester's in-process runs
import edgebench.runner.report  # noqa: F401   drop the modules they import, and numpy cannot load twice)
from edgebench import registry
from edgebench.pytest_plugin import Regression, regressions

pytest_plugins = "pytester"

ROOT = Path(__file__).resolve().parents[2]
USER_TEST = """
def test_quality(edgebench_regression):
    store = edgebench_regression.run(["offloading-heft-random-v1"], ["heft", "random"], time_limit=5,
                                     db="store.sqlite")
    edgebench_regression.check(store, "baseline.json", max_gap_increase=0.01)
"""


def _plugin_args() -> list[str]:
    # the entry point's name is the module's: "-p" is a no-op where the entry point is installed
    return ["-p", "edgebench.pytest_plugin"]


def test_pyproject_registers_the_plugin():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert data["project"]["entry-points"]["pytest11"]["edgebench.pytest_plugin"] == "edgebench.pytest_plugin"


def test_regression_fixture_update_pass_and_fail(pytester):
    registry.solvers()
    pytester.makepyfile(test_user=USER_TEST)
    args = _plugin_args()
    pytester.runpytest_inprocess(*args, "--edgebench-update-baseline").assert_outcomes(passed=1)
    base = json.loads((pytester.path / "baseline.json").read_text())
    assert set(base) == {"offloading/offloading-heft-random-v1/heft", "offloading/offloading-heft-random-v1/random"}
    assert base["offloading/offloading-heft-random-v1/random"]["feasible_share"] == 1.0
    pytester.runpytest_inprocess(*args).assert_outcomes(passed=1)
    # a baseline better than what the solver does now: a regression beyond the tolerance
    rnd = base["offloading/offloading-heft-random-v1/random"]
    rnd["mean_gap"] -= 0.05
    (pytester.path / "baseline.json").write_text(json.dumps(base))
    res = pytester.runpytest_inprocess(*args)
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["*offloading/offloading-heft-random-v1/random: mean gap*(tolerance +0.01)*"])


def test_regressions_rules():
    old = {"a": {"mean_gap": 0.10, "feasible_share": 1.0}, "b": {"mean_gap": None, "feasible_share": 0.5},
           "c": {"mean_gap": 0.0, "feasible_share": 1.0}}
    new = {"a": {"mean_gap": 0.105, "feasible_share": 1.0}, "b": {"mean_gap": 0.3, "feasible_share": 0.25}}
    assert regressions(old, new, max_gap_increase=0.01) == ["b: feasible share 0.500 -> 0.250", "c: missing now"]
    assert regressions(old, new, max_gap_increase=0.001)[0].startswith("a: mean gap 0.1000 -> 0.1050")


def test_missing_baseline_fails_and_says_how_to_write_it(tmp_path):
    with pytest.raises(pytest.fail.Exception, match="no quality baseline .*--edgebench-update-baseline"):
        Regression(tmp_path, update=False).check(_tiny_store(tmp_path), tmp_path / "none.json")


def _tiny_store(tmp_path: Path) -> Path:
    from edgebench.runner.store import Store

    with Store.open(tmp_path / "s.sqlite"):
        pass
    return tmp_path / "s.sqlite"
