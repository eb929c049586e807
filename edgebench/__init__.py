"""edgebench: a benchmark suite for joint placement and resource allocation in edge computing.

One instance format (:mod:`edgebench.instances`), one referee (:mod:`edgebench.referee`),
a solver registry (:mod:`edgebench.registry`) and the ``edgebench`` command line
(:mod:`edgebench.cli`).

Importing edgebench is light: no solver module, scipy, numba or torch loads until a command
needs it (docs/cli.md, "Start-up"); ``__version__`` is read from the package metadata when
first asked for.
"""

from __future__ import annotations

from typing import Any

from edgebench import kernels as _kernels

# numba reads its cache folder once, when it is imported: set it first, for every process that
# imports edgebench (a writable per-user folder; see edgebench.kernels and docs/cli.md, "Start-up")
_kernels.configure()

__all__ = ["__version__"]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("edgebench")
        except PackageNotFoundError:  # pragma: no cover - a source tree that is not installed
            value = "0.1.0"
        globals()["__version__"] = value
        return value
    raise AttributeError(f"module 'edgebench' has no attribute {name!r}")
