"""Make ``pytest bench/ --benchmark-only`` collect and run the benchmarks.

The project's pytest configuration (pyproject.toml) collects ``tests/`` only and passes
``--benchmark-disable`` so that the test suite stays fast. This conftest — loaded only when
``bench/`` (or a file in it) is given on the command line, so that a plain ``pytest`` is
untouched — collects the ``bench_*.py`` files of this folder and lets ``--benchmark-only``
(or ``--benchmark-enable``) switch benchmarking back on. Baseline and comparison: see
docs/regression.md.
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # --benchmark-only asks for benchmarks: it overrides the configuration's --benchmark-disable
    # (pytest-benchmark refuses the pair otherwise)
    if config.getoption("benchmark_only", default=False):
        config.option.benchmark_enable = True


def pytest_collect_file(file_path, parent):
    if (file_path.suffix == ".py" and file_path.name.startswith("bench_")
            and not parent.session.isinitpath(file_path)):
        return pytest.Module.from_parent(parent, path=file_path)
    return None
