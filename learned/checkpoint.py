"""Checkpoints are data only: one place that writes and reads every ``.pt`` file of the suite.

A checkpoint is a ``dict`` of tensors and plain Python values (``dict``, ``OrderedDict``,
``list``, ``tuple``, ``str``, ``int``, ``float``, ``bool``, ``None``) with a ``"format"`` string naming its layout.
Nothing else is allowed in one: no numpy arrays, no dataclasses, no classes of any kind.

* :func:`save_checkpoint` refuses (``TypeError``) a blob holding anything else (numpy scalars
  are turned into Python numbers first) and writes it atomically (temp file in the same
  folder, then rename).
* :func:`load_checkpoint` checks the container (a zip archive as ``torch.save`` writes it,
  records stored uncompressed, at most :data:`MAX_BYTES` in all), then reads it with
  ``torch.load(weights_only=True)``: the unpickler then builds only tensors and plain
  containers, so a crafted file cannot run code (a pickle that names ``os.system`` or any
  other global is refused before anything is called). Every failure — a
  missing or oversized file, not a zip, a forbidden global, a truncated file, not a dict, another
  format — is an :class:`~edgebench.errors.InputError` naming the file, the field (``checkpoint``
  unless told) and the reason, so the CLI prints one line and exits 2.
* :func:`build_checked` builds a network for the checkpoint's weights: first on torch's ``meta``
  device (no memory, no random numbers), then compares the names, shapes and dtypes of the
  file's state dict with the network's; only when they are equal does it build the real
  network and call ``load_state_dict(strict=True)``. :func:`load_state` does the same
  comparison for a network built already.
* :func:`config_from_dict` turns a plain dict into a dataclass (model config, env layout) with
  every field type-checked, no unknown keys, and every integer within bounds.
* :func:`reading` turns the errors of code that walks the blob (``KeyError``, ``TypeError``,
  ...) into the same one-line InputError.

Used by ``learned/ces_ppo.py``, ``learned/tapfinger.py`` and the two training loops; see
``docs/ces-ppo.md`` and ``docs/tapfinger.md``.
"""

from __future__ import annotations

import dataclasses
import io
import os
import re
import typing
import zipfile
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from edgebench.errors import InputError

#: largest checkpoint file read (the shipped ones are 0.5-1.5 MB)
MAX_BYTES = 256 * 2**20
#: default bound of every integer of a checkpoint's config (sizes, hidden width, counts)
MAX_CONFIG_INT = 2**16
#: the only Python types a checkpoint may hold besides tensors
PLAIN = (str, int, float, bool, type(None))


def _reason(exc: BaseException) -> str:
    """One short line from an exception message (torch's weights_only errors span many lines)."""
    text = str(exc)
    m = re.search(r"GLOBAL ([\w.]+)", text)
    if m:
        return f"it names the Python object {m.group(1)}, which data-only loading refuses"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(("Weights only load failed", "Check the documentation"))]
    return (useful or lines or [type(exc).__name__])[0][:200]


def _fail(reason: str, file: str | os.PathLike, field: str) -> InputError:
    return InputError(reason, file=str(file), field=field)


@contextmanager
def reading(file: str | os.PathLike, field: str = "checkpoint") -> Iterator[None]:
    """Turn a malformed blob's errors (a missing key, a wrong type, a bad tensor) into InputError."""
    try:
        yield
    except InputError as err:
        if err.file is not None:
            raise
        raise _fail(err.reason, file, f"{field}.{err.field}" if err.field else field) from None
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, RuntimeError, ArithmeticError) as exc:
        what = f"missing entry {exc}" if isinstance(exc, KeyError) else _reason(exc)
        raise _fail(f"malformed checkpoint: {what}", file, field) from None


def _plain(value: Any, where: str) -> Any:
    """``value`` with numpy scalars made Python scalars; TypeError on anything not plain."""
    import numpy as np
    import torch

    if isinstance(value, torch.Tensor) or type(value) in PLAIN:
        return value
    if isinstance(value, np.generic) and type(value.item()) in PLAIN:
        return value.item()
    if type(value) in (dict, OrderedDict):  # a module's state_dict() is an OrderedDict
        out = type(value)()
        for k, v in value.items():
            if type(k) not in PLAIN:
                raise TypeError(f"checkpoint key {k!r} at {where} is a {type(k).__name__}")
            out[k] = _plain(v, f"{where}.{k}")
        return out
    if type(value) in (list, tuple):
        return type(value)(_plain(v, f"{where}[{i}]") for i, v in enumerate(value))
    raise TypeError(f"checkpoint entry {where} is a {type(value).__name__}: only tensors and plain "
                    "dict/list/tuple/str/int/float/bool/None are allowed")


def save_checkpoint(path: str | os.PathLike, blob: Mapping[str, Any]) -> Path:
    """Write ``blob`` (tensors and plain values only, with a ``"format"`` string) atomically."""
    import torch

    blob = _plain(dict(blob), "<root>")
    if not isinstance(blob.get("format"), str):
        raise TypeError("a checkpoint needs a 'format' string")
    from edgebench.instances.io import write_text_atomic

    buf = io.BytesIO()
    torch.save(blob, buf)
    return write_text_atomic(path, buf.getvalue())  # temp file + fsync + rename


def load_checkpoint(path: str | os.PathLike, fmt: str, *, field: str = "checkpoint",
                    hint: str = "") -> dict[str, Any]:
    """The checkpoint dict at ``path``, read as data only; InputError unless its ``format`` is ``fmt``.
    ``hint`` is added to the message of a missing file (e.g. how to train one)."""
    import torch

    p = Path(path)
    if not p.is_file():
        raise _fail("checkpoint file not found" + (f" ({hint})" if hint else ""), p, field)
    _check_container(p, field)
    try:
        blob = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - whatever the unpickler or the zip reader refuses is bad input
        raise _fail(f"not a readable checkpoint: {_reason(exc)}", p, field) from None
    if not isinstance(blob, dict):
        raise _fail(f"not a checkpoint: holds a {type(blob).__name__}, not a dict", p, field)
    if blob.get("format") != fmt:
        raise _fail(f"not a {fmt} checkpoint (format {blob.get('format')!r})", p, field)
    return blob


def _check_container(p: Path, field: str) -> None:
    """A torch.save zip of uncompressed records adding up to at most MAX_BYTES (no zip bomb,
    no legacy pickle stream whose storages could claim any size)."""
    size = p.stat().st_size
    if size > MAX_BYTES:
        raise _fail(f"checkpoint file of {size} bytes exceeds the limit of {MAX_BYTES}", p, field)
    try:
        with zipfile.ZipFile(p) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise _fail(f"not a checkpoint written by torch.save (not a zip archive: {_reason(exc)})", p, field) from None
    if any(i.compress_type != zipfile.ZIP_STORED for i in infos):
        raise _fail("not a checkpoint written by torch.save (compressed zip records)", p, field)
    total = sum(i.file_size for i in infos)
    if total > MAX_BYTES:
        raise _fail(f"checkpoint records of {total} bytes exceed the limit of {MAX_BYTES}", p, field)


def _compare(expected: Mapping[str, Any], state: Any, file: str | os.PathLike, field: str) -> None:
    import torch

    if not isinstance(state, dict):
        raise _fail(f"malformed checkpoint: the weights are a {type(state).__name__}, not a dict", file, field)
    missing = sorted(set(expected) - set(state))
    extra = sorted(set(state) - set(expected), key=str)
    if missing:
        raise _fail(f"weights do not match the network: {len(missing)} missing, first {missing[0]!r}", file, field)
    if extra:
        raise _fail(f"weights do not match the network: {len(extra)} unexpected, first {extra[0]!r}", file, field)
    for k, ref in expected.items():
        t = state[k]
        if not isinstance(t, torch.Tensor):
            raise _fail(f"weight {k!r} is a {type(t).__name__}, not a tensor", file, field)
        if tuple(t.shape) != tuple(ref.shape) or t.dtype != ref.dtype:
            raise _fail(f"weight {k!r} is {t.dtype} {tuple(t.shape)}, the network needs {ref.dtype} "
                        f"{tuple(ref.shape)}", file, field)


def load_state(module, state: Any, *, file: str | os.PathLike, field: str = "checkpoint") -> None:
    """Check ``state`` against ``module.state_dict()`` (names, shapes, dtypes), then load it strictly."""
    _compare(module.state_dict(), state, file, field)
    with reading(file, field):
        module.load_state_dict(state, strict=True)


def build_checked(factory: Callable[[], Any], state: Any, *, file: str | os.PathLike,
                  field: str = "checkpoint"):
    """``factory()``'s network with ``state`` loaded, checked on the meta device first (so that
    sizes read from a checkpoint never allocate more than the file's own tensors)."""
    import torch

    with reading(file, field):
        with torch.device("meta"):
            shapes = factory().state_dict()
    _compare(shapes, state, file, field)
    with reading(file, field):
        module = factory()
    load_state(module, state, file=file, field=field)
    return module


def config_from_dict(cls, data: Any, *, file: str | os.PathLike, field: str,
                     bounds: Mapping[str, tuple[int, int]] | None = None, defaults: Mapping[str, Any] | None = None):
    """A ``cls`` dataclass from ``data`` (plus ``defaults`` for keys older files lack): unknown or
    missing keys, wrong types and integers outside ``bounds`` (default ``0..MAX_CONFIG_INT``)
    are an InputError naming ``field.key``."""
    from pydantic import ConfigDict, ValidationError, create_model

    if not isinstance(data, dict):
        raise _fail(f"must be a dict, got {type(data).__name__}", file, field)
    hints = typing.get_type_hints(cls)
    spec = {f.name: (hints[f.name], ... if f.default is dataclasses.MISSING and f.default_factory is
                     dataclasses.MISSING else f.default) for f in dataclasses.fields(cls)}
    model = create_model(f"{cls.__name__}Check", __config__=ConfigDict(extra="forbid"), **spec)
    try:
        checked = model.model_validate({**(defaults or {}), **data})
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        loc = ".".join(str(x) for x in err.get("loc", ()))
        raise _fail(str(err.get("msg", "invalid")), file, f"{field}.{loc}" if loc else field) from None
    values = checked.model_dump()
    for key, value in values.items():
        lo, hi = (bounds or {}).get(key, (0, MAX_CONFIG_INT))
        for v in _ints(value):
            if not lo <= v <= hi:
                raise _fail(f"{v} is outside {lo}..{hi}", file, f"{field}.{key}")
    with reading(file, field):
        return cls(**values)


def _ints(value: Any) -> Iterator[int]:
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _ints(v)
