"""The benchmark runner: suites of (instance set x solver configuration x seed) runs,
executed in isolated worker processes (locally or on a Dask cluster) into a resumable SQLite
results store, with best-known solutions and bounds, and Markdown / HTML reports.

    from edgebench.runner import load_suite, plan, run_sweep, build_report

    p = plan(load_suite("my.toml"), file="my.toml", base_dir=".")
    run_sweep(p, "runs/my/results.sqlite", workers=2)
    build_report("runs/my/results.sqlite", "runs/my/report")

Modules: :mod:`.suite` (suite format, planning), :mod:`.store` (SQLite store),
:mod:`.execute` (workers, hard kill, Dask, sweeps), :mod:`.worker` (the worker process),
:mod:`.bestknown` (best known values, gaps, manifests), :mod:`.report` (the report's tables),
:mod:`.report_folder` (the report's folder: tables, plots, pages, exports), :mod:`.cli`
(``edgebench run / report / bestknown``). The protocol is in ``docs/runner.md``. Attributes load
lazily, so that a worker process imports only what it needs.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Suite": "suite", "load_suite": "suite", "default_suite": "suite", "suite_from_dict": "suite", "plan": "suite",
    "Plan": "suite", "RunSpec": "suite", "suite_to_toml": "suite", "DEFAULT_SUITE": "suite",
    "Store": "store", "FORMAT_VERSION": "store",
    "run_sweep": "execute", "SweepResult": "execute",
    "build_report": "report_folder", "summarize": "report",
    "write_manifests": "bestknown", "gap": "bestknown",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'edgebench.runner' has no attribute {name!r}")
    return getattr(importlib.import_module(f"edgebench.runner.{mod}"), name)
