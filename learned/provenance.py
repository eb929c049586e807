"""Provenance of the shipped checkpoints of the learned solvers (``edgebench solvers --json``
lists it under ``checkpoints``).

Every shipped checkpoint ``learned/checkpoints/NAME.pt`` has a JSON sidecar ``NAME.json``
with how it was trained: ``preset``, ``variant``, ``algorithm`` (``bc``, ``bc+dagger``,
``bc+mappo``, ``mappo``, ``ppo``, ``bc+ppo``, ...), ``env_steps`` (environment steps of
reinforcement learning; 0 for imitation only), and free-form details (``expert_instances``,
``command``, ``eval``, ``note``). The ``sha256`` is computed from the checkpoint file when
asked, so it can never be stale. A registered learned solver passes
``provenance=checkpoints_of("PREFIX")`` to :func:`edgebench.registry.register`.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any, Callable

__all__ = ["CHECKPOINT_DIR", "REQUIRED", "sha256_file", "sidecar", "checkpoint_records", "checkpoints_of",
           "training_summary"]

CHECKPOINT_DIR = Path(__file__).resolve().parent / "checkpoints"
#: keys every sidecar must have
REQUIRED = ("preset", "variant", "algorithm", "env_steps")
_SHA: dict[tuple[str, int, int], str] = {}


def sha256_file(path: Path) -> str:
    """sha256 of a file (cached per path, size and mtime)."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _SHA:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        _SHA[key] = h.hexdigest()
    return _SHA[key]


def sidecar(path: Path) -> dict[str, Any]:
    """The training metadata of a checkpoint (its ``.json`` sidecar; {} when there is none)."""
    side = Path(path).with_suffix(".json")
    if not side.is_file():
        return {}
    return json.loads(side.read_text())


def checkpoint_records(prefix: str, directory: Path = CHECKPOINT_DIR, *, sha: bool = True) -> list[dict[str, Any]]:
    """One record per checkpoint ``PREFIX-<preset>-<variant>.pt`` (or ``PREFIX-<preset>.pt``,
    e.g. ``ces-ppo-thesis.pt``) in ``directory`` whose sidecar names that preset and variant,
    or whose sidecar says ``"prefix": PREFIX`` (the CES checkpoints ``ces-ppo-mix.pt`` ...): {"file", "preset", "variant", "algorithm", "env_steps",
    "sha256" (``sha=False``: left out), ...the sidecar's other keys}; sorted by file name."""
    out = []
    for side in sorted(directory.glob(f"{prefix}-*.json")):
        meta = json.loads(side.read_text())
        ckpt = side.with_suffix(".pt")
        own = {f"{prefix}-{meta.get('preset')}-{meta.get('variant')}", f"{prefix}-{meta.get('preset')}"}
        if not ckpt.is_file() or (side.stem not in own and meta.get("prefix") != prefix):
            continue  # another solver's file with a longer prefix (e.g. tapfinger-bc- vs tapfinger-)
        rec = {"file": ckpt.name, **{k: meta.get(k) for k in REQUIRED}}
        if sha:
            rec["sha256"] = sha256_file(ckpt)
        rec.update({k: v for k, v in meta.items() if k not in rec})
        out.append(rec)
    return out


def checkpoints_of(prefix: str) -> Callable[[], list[dict[str, Any]]]:
    """The registry's provenance hook for a solver whose checkpoints are ``PREFIX-*.pt``."""
    return functools.partial(checkpoint_records, prefix)


def training_summary(prefix: str) -> str:
    """One phrase for a solver's description: how its shipped checkpoints were trained."""
    recs = checkpoint_records(prefix, sha=False)
    if not recs:
        return "no shipped checkpoint"
    parts = [f"{r['preset']} {r['variant']}: {r['algorithm']}"
             + (f", {r['env_steps']} env steps" if r["env_steps"] else "") for r in recs]
    return "trained by " + "; ".join(parts)
