"""edgebench: a benchmark suite for joint placement and resource allocation in edge computing.

One instance format (:mod:`edgebench.instances`), one referee (:mod:`edgebench.referee`),
a solver registry (:mod:`edgebench.registry`) and the ``edgebench`` command line
(:mod:`edgebench.cli`).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version as _version

from edgebench import kernels as _kernels

# numba reads its cache folder once, when it is imported: set it first, for every process that
# imports edgebench (a writable per-user folder; see edgebench.kernels and docs/runner.md)
_kernels.configure()

try:
    __version__ = _version("edgebench")
except PackageNotFoundError:  # pragma: no cover - running from a source tree that is not installed
    __version__ = "0.1.0"

__all__ = ["__version__"]
