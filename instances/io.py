"""Loading, saving and hashing of instance and solution files: the validation boundary.

* ``load_instance(path)`` / ``load_solution(path, instance)`` read ``.json`` or ``.json.gz``
  and raise :class:`edgebench.errors.InputError` (file, field path, reason) on any problem.
* ``write_json(path, model)`` writes atomically (temp file in the same folder, then rename),
  so that a failed run never leaves a half-written file.
* ``content_hash`` is the sha256 of the canonical JSON (sorted keys, no whitespace).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import stat
import tempfile
import tomllib
import zlib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from edgebench.errors import InputError
from edgebench.instances.model import Instance

M = TypeVar("M", bound=BaseModel)


def canonical_json(data: Any) -> str:
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def content_hash(model: BaseModel | dict) -> str:
    return hashlib.sha256(canonical_json(model).encode("utf-8")).hexdigest()


def _loc_to_path(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("synthetic", "table") and out.endswith("performance"):
            continue  # discriminated-union tag: not a field the user wrote
        else:
            out += ("." if out else "") + str(part)
    return out


def _first_error(exc: ValidationError) -> tuple[str, str]:
    err = exc.errors(include_url=False)[0]
    field = _loc_to_path(tuple(err.get("loc", ())))
    msg = str(err.get("msg", "invalid"))
    # validators in model.py embed a sub-path as "@sub.path@ reason"
    if "@" in msg:
        head, _, rest = msg.partition("@")
        sub, _, reason = rest.partition("@")
        field = f"{field}.{sub}" if field and not sub.startswith("[") else f"{field}{sub}"
        msg = reason.strip()
    else:
        msg = msg.removeprefix("Value error, ")
        if err.get("type") == "extra_forbidden":
            msg = "unknown field"
        elif err.get("type") == "missing":
            msg = "required field is missing"
    return field or "<root>", msg


def validate_model(cls: type[M], data: Any, *, file: str | None = None) -> M:
    """Validate plain JSON data (dict from json.loads) into ``cls`` or raise InputError."""
    try:
        # Through JSON text: strict mode then accepts arrays for tuples, exactly as from a file.
        text = data if isinstance(data, (str, bytes)) else json.dumps(data, allow_nan=False)
        return cls.model_validate_json(text, strict=True)
    except ValidationError as exc:
        field, reason = _first_error(exc)
        raise InputError(reason, file=file, field=field) from None
    except (TypeError, ValueError) as exc:  # json.dumps of non-JSON data, NaN
        raise InputError(f"not JSON data: {exc}", file=file) from None


#: the largest JSON text a reader accepts, compressed or not (issue 28: an 8 MB gzip bomb
#: decompressed to gigabytes); the largest shipped instance is below 1 MB
MAX_JSON_BYTES = 64 * 2**20


def read_regular_bytes(p: Path, limit: int = MAX_JSON_BYTES) -> bytes:
    """The bytes of the regular file ``p``, at most ``limit`` (a FIFO, device or directory
    is refused before it is opened, so reading never blocks or runs without end)."""
    try:
        st = os.stat(p)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(p)) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError("not a regular file (a directory, FIFO or device is refused)", file=str(p))
    if st.st_size > limit:
        raise InputError(f"file of {st.st_size:,} bytes, more than the limit of {limit:,}", file=str(p))
    try:
        with open(p, "rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(p)) from None
    if len(raw) > limit:
        raise InputError(f"file of more than {limit:,} bytes", file=str(p))
    return raw


def read_toml(path: str | os.PathLike, what: str) -> dict[str, Any]:
    """Parse the TOML file ``path`` (a suite or a recipe; ``what`` names it in errors):
    a regular file of at most :data:`MAX_JSON_BYTES`, UTF-8, nested no deeper than the
    parser's recursion allows (issue 28: deep nesting was a RecursionError traceback)."""
    p = Path(path)
    try:
        raw = read_regular_bytes(p)
    except InputError as err:
        reason = err.reason.replace("file", what, 1) if err.reason.startswith("cannot read file") else err.reason
        raise InputError(reason, file=str(p)) from None
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc.reason}", file=str(p)) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"malformed TOML: {exc}", file=str(p)) from None
    except RecursionError:
        raise InputError("malformed TOML: nested too deeply", file=str(p)) from None


def read_json(path: str | os.PathLike) -> Any:
    """Read ``.json`` or ``.json.gz`` (detected by the gzip magic, not only the suffix); the
    file and its decompressed text are capped at :data:`MAX_JSON_BYTES`."""
    return parse_json(read_json_text(path), file=str(path))


def read_json_text(path: str | os.PathLike) -> str:
    """The text of a ``.json`` / ``.json.gz`` file, decompressed and decoded, unparsed (limits as
    :func:`read_json`)."""
    p = Path(path)
    raw = read_regular_bytes(p)
    if raw[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as gz:
                raw = gz.read(MAX_JSON_BYTES + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"malformed gzip: {exc}", file=str(p)) from None
        if len(raw) > MAX_JSON_BYTES:
            raise InputError(f"decompresses to more than {MAX_JSON_BYTES:,} bytes (the limit)", file=str(p))
    elif p.suffix == ".gz":
        raise InputError("malformed gzip: not a gzip stream", file=str(p))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc.reason} at byte {exc.start}", file=str(p)) from None
    return text


#: deepest nesting of arrays and objects a JSON file may have (instances and solutions are
#: at most 8 deep; free-form ``meta`` / ``params`` / ``stats`` share this limit)
MAX_JSON_DEPTH = 64


class _Pairs(dict):
    """A JSON object that had a duplicate key (the first one, kept to name it)."""

    duplicate: str


def _object(pairs: list[tuple[str, Any]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        out = _Pairs(out)
        out.duplicate = dup
    return out


def parse_json(text: str, *, file: str | None = None) -> Any:
    """The one JSON reader: standard JSON only (no NaN / Infinity), every object key once,
    at most MAX_JSON_DEPTH levels of nesting; anything else is an InputError naming the place."""
    try:
        data = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_object)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", file=file) from None
    except RecursionError:
        raise InputError(f"malformed JSON: nested deeper than {MAX_JSON_DEPTH} levels", file=file) from None
    except ValueError as exc:
        raise InputError(f"malformed JSON: {exc}", file=file) from None
    _check_tree(data, file)
    return data


def _check_tree(data: Any, file: str | None) -> None:
    """Depth and duplicate keys, walked without recursion (any depth is safe to inspect)."""
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]
    while stack:
        node, path, depth = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        if depth > MAX_JSON_DEPTH:
            raise InputError(f"nested deeper than {MAX_JSON_DEPTH} levels of arrays and objects", file=file,
                             field=(path if len(path) <= 60 else path[:60] + "...") or None)
        if isinstance(node, _Pairs):
            raise InputError(f"duplicate key {node.duplicate!r} in one object", file=file,
                             field=f"{path}.{node.duplicate}" if path else node.duplicate)
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in items:
            if isinstance(v, (dict, list)):
                sub = f"{path}[{k}]" if isinstance(node, list) else (f"{path}.{k}" if path else str(k))
                stack.append((v, sub, depth + 1))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def instance_from_dict(data: Any, *, file: str | None = None) -> Instance:
    if not isinstance(data, dict):
        raise InputError("an instance must be a JSON object", file=file)
    version = data.get("format_version")
    if version != 1:
        raise InputError(f"unsupported format_version {version!r} (this edgebench reads 1)", file=file,
                         field="format_version")
    family = data.get("family")
    if family not in ("placement", "mapping", "offloading"):
        raise InputError(f"unknown family {family!r} (expected placement, mapping or offloading)", file=file,
                         field="family")
    return validate_model(Instance, data, file=file)


def load_instance(path: str | os.PathLike) -> Instance:
    return instance_from_dict(read_json(path), file=str(path))


def dump_json_text(model: BaseModel | dict) -> str:
    """The on-disk form: fields in model order, indented, newline-terminated (byte-stable)."""
    data = model.model_dump(mode="json") if isinstance(model, BaseModel) else model
    return json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def output_target(path: str | os.PathLike) -> Path:
    """The file an output path names: a symbolic link is followed (the file it points to is
    replaced, the link stays) and the target must be a regular file or not exist yet — a
    device, FIFO, socket or directory is refused before anything is written (issue 28: as
    root, ``-o /dev/stdout`` replaced the device link)."""
    p = Path(path)
    if p.is_symlink():
        p = Path(os.path.realpath(p))
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return p
    except OSError as exc:
        raise InputError(f"cannot write file: {exc.strerror or exc}", file=str(path)) from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise InputError(f"output is {kind} (only regular files are written)", file=str(path))
    return p


@contextlib.contextmanager
def atomic_target(path: str | os.PathLike):
    """Yields a fresh temporary path beside ``path`` for a writer that takes a file name (a
    plot, a table); on success it replaces ``path``, on failure it is removed. The name is
    unique (``mkstemp``), so two processes writing the same report do not share a temp file."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, p)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_text_atomic(path: str | os.PathLike, text: str | bytes) -> Path:
    p = output_target(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8") if isinstance(text, str) else text
    if p.name.endswith(".gz"):
        # mtime=0 and no file name in the header: the same content gives the same bytes
        data = gzip.compress(data, compresslevel=9, mtime=0)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        # mkstemp makes 0600 files; give the result the permissions a plain open() would
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return p


def write_json(path: str | os.PathLike, model: BaseModel | dict) -> Path:
    return write_text_atomic(path, dump_json_text(model))


def solution_from_dict(data: Any, *, file: str | None = None, instance: Instance | None = None):
    """Validate a solution; with ``instance``, also check it was made for that instance."""
    from edgebench.solution import Solution

    if not isinstance(data, dict):
        raise InputError("a solution must be a JSON object", file=file)
    sol = validate_model(Solution, data, file=file)
    if instance is not None:
        if sol.family != instance.family:
            raise InputError(f"solution is for family {sol.family!r}, instance is {instance.family!r}",
                             file=file, field="family")
        h = content_hash(instance)
        if sol.instance_hash != h:
            raise InputError(f"solution was made for another instance (hash {sol.instance_hash[:12]}..., "
                             f"instance {instance.id!r} has {h[:12]}...)", file=file, field="instance_hash")
    return sol


def load_solution(path: str | os.PathLike, instance: Instance | None = None):
    return solution_from_dict(read_json(path), file=str(path), instance=instance)
