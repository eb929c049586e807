"""The compiled kernels (numba) and where their compiled code is cached.

numba compiles a kernel the first time it is called (about 20 s for the placement labelling
programme, :mod:`edgebench.formulations.placement.bounds.labelling`) and, with ``cache=True``, keeps the
machine code for later processes. Two things make that safe for a benchmark:

* **One writable cache, chosen before numba is imported** (:func:`configure`, called by
  ``import edgebench``): ``$NUMBA_CACHE_DIR`` when the user set it to a writable folder, else
  ``$XDG_CACHE_HOME/edgebench/numba`` (``~/.cache/edgebench/numba`` without XDG_CACHE_HOME), else
  a private folder ``edgebench-numba-<uid>`` in the temporary folder (only if it is ours and
  nobody else may write it), else a fresh private temporary folder (compiled once per process). numba's own default, the
  ``__pycache__`` beside the source, is not used: a read-only install (a system site-packages, a
  container image) would otherwise fail to import the kernels where the user-wide fallback is
  not writable either.
* **Compiled before it is timed** (:func:`warm_kernels`): ``edgebench warm`` (run by
  ``scripts/dev.sh setup``) compiles every kernel into that cache; the runner calls
  :func:`warm_kernels` before a solver's clock starts, so a cold cache costs set-up time, never a
  solver's time limit (docs/cli.md, "Start-up").
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

#: the environment variable numba reads (once, when it is imported) for its cache folder
ENV = "NUMBA_CACHE_DIR"
#: modules whose numba kernels :func:`warm_kernels` compiles
KERNEL_MODULES = ("edgebench.formulations.placement.bounds.labelling",
                  "edgebench.formulations.placement.search.sgs")


def _writable(path: Path) -> bool:
    """``path`` is a folder we may write, or can be created (its nearest existing parent is)."""
    for p in (path, *path.parents):
        try:
            if p.exists():
                return p.is_dir() and os.access(p, os.W_OK | os.X_OK)
        except OSError:  # e.g. a HOME of another user's (EACCES on stat): not ours to write
            return False
    return False


def _private(path: Path) -> bool:
    """A folder in a shared place (the temporary folder) that only we own and may write: numba's
    cache index is a pickle, so a folder another user could plant files in is never used."""
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        st = path.lstat()
    except OSError:
        return False
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
            and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and os.access(path, os.W_OK | os.X_OK))


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/edgebench/numba``, or ``~/.cache/edgebench/numba``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "edgebench" / "numba"


def cache_dir() -> Path | None:
    """The folder numba's cache goes to (see the module's docstring); None when no folder is
    writable (numba then compiles in every process, or fails with its reason)."""
    user = os.environ.get(ENV)
    if user and _writable(Path(user)):
        return Path(user)
    home = default_cache_dir()
    if _writable(home):
        return home
    import tempfile  # only when no per-user folder is writable

    tmp = Path(tempfile.gettempdir()) / f"edgebench-numba-{os.getuid()}"
    if _private(tmp):
        return tmp
    try:
        return Path(tempfile.mkdtemp(prefix="edgebench-numba-"))
    except OSError:
        return None


def configure() -> Path | None:
    """Set ``NUMBA_CACHE_DIR`` to :func:`cache_dir` (before numba is imported; if it already is,
    its configuration is updated too). Idempotent; returns the folder."""
    path = cache_dir()
    if path is None:
        return None
    os.environ[ENV] = str(path)
    config = sys.modules.get("numba.core.config")
    if config is not None:
        config.CACHE_DIR = str(path)
    return path


def _tiny_instance():
    """A small placement instance (synthetic gain, multiplicative noise, switching loss on)."""
    from edgebench.instances.generators import generate

    return generate("placement", "synthetic-3", seed=0, num_tasks=6, noise=0.1)


def loaded() -> bool:
    """Some module with numba kernels is imported (a solver that will call them was loaded)."""
    return any(m in sys.modules for m in KERNEL_MODULES)


def fingerprint() -> dict[str, str]:
    """What compiled code depends on: the kernels' source (sha256), numba's and Python's versions,
    the machine. :func:`warm_kernels` records it beside the cache once every kernel is there."""
    import hashlib
    import importlib.util
    import platform
    from importlib.metadata import version

    out = {"numba": version("numba"), "python": sys.version, "machine": platform.machine()}
    for module in KERNEL_MODULES:
        origin = importlib.util.find_spec(module).origin
        out[module] = hashlib.sha256(Path(origin).read_bytes()).hexdigest()
    return out


def _stamp(cache: Path | None) -> Path | None:
    return cache / "edgebench-warm.json" if cache is not None else None


def is_warm() -> bool:
    """Every kernel was compiled into the current cache for the current sources and versions
    (the stamp :func:`warm_kernels` writes matches, and the cache holds the kernels' index files)."""
    stamp = _stamp(Path(os.environ[ENV]) if os.environ.get(ENV) else None)
    try:
        if stamp is None or json.loads(stamp.read_text()) != fingerprint():
            return False
    except (OSError, ValueError):
        return False
    return all(any(stamp.parent.rglob(f"{m.rsplit('.', 1)[-1]}.*.nbi")) for m in KERNEL_MODULES)


def warm_kernels(force: bool = False) -> dict[str, float]:
    """Compile (or load from the cache) every numba kernel, outside any timed section: runs the
    placement trajectory bound, whose labelling programme calls the kernels, on a tiny instance,
    then the entry points it does not reach (bound (7)'s enumeration among them), then the serial
    schedule decoder of placement-lahc. Returns {kernel: number of compiled signatures}
    plus ``"seconds"``: the time it took (about 20 s on a cold cache, about 1 s on a warm one).
    Without ``force``, returns ``{"seconds": 0.0}`` at once when :func:`is_warm` (the runner's
    workers and ``edgebench solve`` call it so, before a solver's clock starts); ``edgebench
    warm`` forces it."""
    configure()
    if not force and is_warm():
        return {"seconds": 0.0}
    import importlib

    import numpy as np

    from edgebench.formulations.placement.bounds.ladder import cluster_durations
    from edgebench.formulations.placement.bounds.histip import pair_histories
    from edgebench.formulations.placement.bounds.labelling import undominated
    from edgebench.formulations.placement.bounds.lagrange import SCALE
    from edgebench.formulations.placement.bounds.trajectory import (Options, Task, additive_envelope,
                                                                    trajectory_bound)
    from edgebench.formulations.placement.problem import prepare
    from edgebench.formulations.placement.search.sgs import Tables

    started = time.perf_counter()
    payload = _tiny_instance().payload
    trajectory_bound(payload, cluster_durations(payload), rounds=1)  # label, walk_back
    opt = Options(payload, 0, payload.tasks[0].eligible[0])
    opt.step(np.array([0.0, 0.5]), opt.param, 0, True)  # step_grid
    for synthetic in (True, False):  # the envelope of additive noise (its own entry point)
        additive_envelope(np.array([0.0, 0.5]), np.array([0.2, 0.4]), 0.1, 0.5, 1.0, 0.0, synthetic)
    # bound (7)'s enumeration (placement-history-lns): step_rows, needed_steps, undominated(_groups)
    pair_histories(Task(payload, 0, payload.tasks[0].eligible[:1]), payload.tasks[0].eligible[0],
                   np.zeros((len(payload.clusters), 2, 64), dtype=np.int64), None, 64, 6 << SCALE,
                   payload.variant == "single", [0], 10_000, 10_000, None)
    undominated(np.zeros(1, dtype=np.int64), np.zeros((1, 1), dtype=np.int64), np.zeros(1, dtype=np.int64))
    tables = Tables(prepare(payload))  # the serial decoder (placement-lahc)
    tables.decode(np.arange(len(payload.tasks), dtype=np.int64), np.zeros(len(payload.tasks), dtype=np.int64))
    out: dict[str, float] = {}
    for module in KERNEL_MODULES:
        mod = importlib.import_module(module)
        for name, obj in sorted(vars(mod).items()):
            if hasattr(obj, "signatures") and hasattr(obj, "py_func"):
                out[f"{module.rsplit('.', 1)[-1]}.{name}"] = len(obj.signatures)
    out["seconds"] = round(time.perf_counter() - started, 3)
    stamp = _stamp(Path(os.environ[ENV]) if os.environ.get(ENV) else None)
    if stamp is not None:
        try:  # temp file + rename: a reader never sees half a stamp
            tmp = stamp.with_name(f"{stamp.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(fingerprint(), sort_keys=True))
            tmp.replace(stamp)
        except OSError:  # a cache we cannot write: numba compiles in memory; no stamp, no harm
            pass
    return out
