"""A pytest plugin for quality regression tests of your own solver (registered under the
``pytest11`` entry point, so it is active wherever edgebench is installed; without the
installed entry point: ``pytest -p edgebench.pytest_plugin``).

The fixture ``edgebench_regression`` runs a small sweep and checks, per (family, instance
set, solver configuration), that the mean gap to the best known did not grow by more than a
tolerance and that the share of feasible runs did not fall, against a baseline JSON file
committed in your repository::

    def test_my_solver_quality(edgebench_regression):
        store = edgebench_regression.run(["offloading-heft-random-v1"], ["heft", "mysolver:solve"],
                                         time_limit=2)
        edgebench_regression.check(store, "tests/quality-baseline.json", max_gap_increase=0.01)

``pytest --edgebench-update-baseline`` writes (or overwrites) the baseline files instead of
comparing; without a baseline file the check fails and says so. Gaps are the report's
(docs/runner.md): measured against the best known value of the store, which includes the
instance sets' manifests, so a gap is comparable between runs of the same instances.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable

import pytest

UPDATE_OPTION = "--edgebench-update-baseline"


def quality(store_path: str | Path) -> dict[str, dict[str, Any]]:
    """Per ``family/set/label`` (set ``-`` for instances outside a set): runs, feasible share,
    mean gap of the feasible runs (None when no gap is known)."""
    import numpy as np

    from edgebench.runner import report
    from edgebench.runner.store import Store

    with Store.open(store_path, create=False, readonly=True) as store:
        runs = report.load(store).runs
    out: dict[str, dict[str, Any]] = {}
    if len(runs) == 0:
        return out
    sets = np.array([s if s is not None else "-" for s in runs["instance_set"]], dtype=object)
    ok, gap = runs["ok"], runs["gap"]
    for fam, set_name, label in sorted({(f, s, lb) for f, s, lb in zip(runs["family"], sets, runs["label"])}):
        sel = (runs["family"] == fam) & (sets == set_name) & (runs["label"] == label)
        gaps = gap[sel & ok & np.isfinite(gap)]
        out[f"{fam}/{set_name}/{label}"] = {
            "runs": int(sel.sum()), "feasible_share": round(float(ok[sel].mean()), 6),
            "mean_gap": round(float(gaps.mean()), 6) if gaps.size else None}
    return out


def regressions(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]], *,
                max_gap_increase: float = 0.01, max_feasible_drop: float = 0.0) -> list[str]:
    """What got worse from ``old`` to ``new`` (records as :func:`quality` makes them): a mean
    gap up by more than ``max_gap_increase`` (absolute: 0.01 = one percentage point), a
    feasible share down by more than ``max_feasible_drop``, a record that disappeared."""
    out = []
    for name in sorted(old):
        o, n = old[name], new.get(name)
        if n is None:
            out.append(f"{name}: missing now")
            continue
        og, ng = o.get("mean_gap"), n.get("mean_gap")
        if og is not None and (ng is None or not math.isfinite(ng) or ng - og > max_gap_increase):
            shown = "none" if ng is None else f"{ng:.4f}"
            out.append(f"{name}: mean gap {og:.4f} -> {shown} (tolerance +{max_gap_increase:g})")
        if n["feasible_share"] < o["feasible_share"] - max_feasible_drop:
            out.append(f"{name}: feasible share {o['feasible_share']:.3f} -> {n['feasible_share']:.3f}")
    return out


class Regression:
    """What the ``edgebench_regression`` fixture gives a test."""

    def __init__(self, tmp_path: Path, update: bool) -> None:
        self.tmp_path = tmp_path
        self.update = update

    def run(self, instances: Iterable[str], solvers: Iterable[str], *, time_limit: float = 1.0,
            seeds: Iterable[int] = (0,), plugins: Iterable[str] = (), db: str | Path | None = None) -> Path:
        """Run ``solvers`` (names, ``MODULE:FUNCTION`` or ``kind:K``) on ``instances`` (set
        names, folders, files) into a store (a fresh one in the test's tmp_path by default)."""
        from edgebench.runner import suite as S
        from edgebench.runner.execute import run_sweep

        data = S.adhoc_suite(base=None, instances=list(instances), solvers=list(solvers), name="regression")
        data.update(time_limit=float(time_limit), seeds=list(seeds))
        plan = S.plan(S.suite_from_dict(data), base_dir=Path.cwd(), extra_plugins=list(plugins))
        store = Path(db) if db is not None else self.tmp_path / "regression.sqlite"
        run_sweep(plan, store, workers=1, progress=False, argv=["pytest"], log=lambda s: None)
        return store

    def check(self, store: str | Path, baseline: str | Path, *, max_gap_increase: float = 0.01,
              max_feasible_drop: float = 0.0) -> dict[str, dict[str, Any]]:
        """Compare the store's quality with the baseline file (or write it with
        ``--edgebench-update-baseline``); fails the test on any regression. Returns the
        store's quality records."""
        from edgebench.instances.io import write_text_atomic

        now = quality(store)
        path = Path(baseline)
        if self.update:
            write_text_atomic(path, json.dumps(now, indent=1, sort_keys=True) + "\n")
            return now
        if not path.exists():
            pytest.fail(f"no quality baseline {path}: write it with 'pytest {UPDATE_OPTION}'", pytrace=False)
        old = json.loads(path.read_text())
        bad = regressions(old, now, max_gap_increase=max_gap_increase, max_feasible_drop=max_feasible_drop)
        if bad:
            pytest.fail(f"quality regressions against {path}:\n  " + "\n  ".join(bad), pytrace=False)
        return now


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("edgebench").addoption(
        UPDATE_OPTION, action="store_true", default=False,
        help="edgebench_regression: write the quality baselines instead of comparing with them")


@pytest.fixture
def edgebench_regression(request: pytest.FixtureRequest, tmp_path: Path) -> Regression:
    """Run a small sweep and compare its quality per instance set with a committed baseline."""
    return Regression(tmp_path, bool(request.config.getoption(UPDATE_OPTION)))
