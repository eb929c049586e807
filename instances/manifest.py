"""Reading a set folder's ``manifest.json`` safely (issue 28).

A manifest comes with downloaded data, so nothing in it is trusted: its shape is checked
before any field is used (one :class:`~edgebench.errors.InputError` naming the file and
the field, never a ``KeyError`` traceback), and every path it names — an instance ``file``,
a best-known ``solution``, the solution file derived from an ``id`` — must stay inside the
set folder. Best-known *values* are checked against their shipped solutions separately
(:func:`edgebench.runner.bestknown.verify_entry`)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from edgebench.errors import InputError
from edgebench.instances.io import read_json

#: an instance id usable as a file name: letters, digits, ``.``, ``_``, ``-``, not starting
#: with a dot (so no ``..``, no separator, no control or terminal escape character)
SAFE_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}")
_HASH = re.compile(r"[0-9a-f]{64}")


def safe_id(value: Any) -> bool:
    return isinstance(value, str) and SAFE_ID.fullmatch(value) is not None


def confined(base: Path, rel: Any, *, file: str, field: str) -> Path:
    """``base / rel`` when ``rel`` is a relative path that stays inside ``base`` (symbolic
    links resolved); InputError naming ``field`` otherwise."""
    if not isinstance(rel, str) or not rel or "\x00" in rel:
        raise InputError(f"must be a non-empty relative path, got {_show(rel)}", file=file, field=field)
    path = base / rel
    root = base.resolve()
    if Path(rel).is_absolute() or (path.resolve() != root and root not in path.resolve().parents):
        raise InputError(f"path {_show(rel)} leads outside the folder {base}", file=file, field=field)
    return path


def _show(value: Any) -> str:
    return ascii(value)[:80]


def _number(entry: dict, key: str, file: str, field: str) -> None:
    v = entry.get(key)
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)):
        raise InputError(f"must be a finite number or null, got {_show(v)}", file=file, field=f"{field}.{key}")


def check_manifest(data: Any, path: Path) -> dict[str, Any]:
    """``data`` (the parsed ``manifest.json`` at ``path``) when its shape is sound."""
    file = str(path)
    folder = path.parent
    if not isinstance(data, dict):
        raise InputError("a manifest must be a JSON object", file=file, field="<root>")
    entries = data.get("instances")
    if not isinstance(entries, list):
        raise InputError(f"must be a list of instance entries, got {_show(entries)}", file=file, field="instances")
    for i, e in enumerate(entries):
        f = f"instances[{i}]"
        if not isinstance(e, dict):
            raise InputError(f"must be an object, got {_show(e)}", file=file, field=f)
        confined(folder, e.get("file"), file=file, field=f"{f}.file")
        if not safe_id(e.get("id")):
            raise InputError(f"must be an id of letters, digits, '.', '_', '-' (no path), got {_show(e.get('id'))}",
                             file=file, field=f"{f}.id")
        if not isinstance(e.get("hash"), str) or _HASH.fullmatch(e["hash"]) is None:
            raise InputError(f"must be a sha256 hex digest, got {_show(e.get('hash'))}", file=file, field=f"{f}.hash")
        bk = e.get("best_known")
        if bk is None:
            continue
        if not isinstance(bk, dict):
            raise InputError(f"must be an object or null, got {_show(bk)}", file=file, field=f"{f}.best_known")
        for key in ("objective", "bound"):
            _number(bk, key, file, f"{f}.best_known")
        if bk.get("solution") is not None:
            confined(folder, bk["solution"], file=file, field=f"{f}.best_known.solution")
    return data


def read_manifest_file(path: Path) -> dict[str, Any]:
    """Read and check the manifest at ``path``."""
    return check_manifest(read_json(path), path)
