"""Standard Task Graph Set (STG) files -> offloading instances of P|prec|Cmax.

The STG (Tobita and Kasahara, J. Scheduling 5(5), 2002) gives random task graphs in a text
format: the first line is the number n of real tasks; then n + 2 lines, one per task
``id  processing_time  n_predecessors  pred_1 ... pred_k`` (tasks 0 and n + 1 are the
zero-time dummy entry and exit); ``#`` lines are comments. The published optimal schedule
lengths on 2, 4, 8 and 16 identical processors are CSV tables ``file,processors,optimum`` (or
``file,processors,lower,upper`` where the instance was still open).

P|prec|Cmax maps exactly onto the offloading family: ``servers`` identical edge servers with
cpu = mem = 1 and speed 1, one image held everywhere, no cloud, zero transfer sizes and
distances, one workflow arriving at 0 (mean makespan = makespan). The dummy tasks are dropped
(edges from the entry dummy and into the exit dummy go with them). Nothing is random (the
seed is accepted for the readers' common signature, recorded, and not used). Choices:
docs/traces.md, section 5.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path
from typing import Any

from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.model import Instance
from edgebench.instances.traces import find_cycle, source_files

REFERENCE = ("T. Tobita and H. Kasahara: A standard task graph set for fair evaluation of multiprocessor "
             "scheduling algorithms, Journal of Scheduling 5(5):379-394, 2002")
TERMS = f"research use (the STG authors' terms; public CC0 mirror of the STG archive); cite {REFERENCE}"
SOURCE_NAME = "Standard Task Graph Set (Kasahara Lab., Waseda University), random graphs and optimum tables"
IMAGE = "stg"

__all__ = ["read_stg", "read_optima", "default_optima_file", "convert", "REFERENCE", "TERMS", "MAX_SERVERS"]

#: most identical servers of one converted instance. The offloading format stores a dense
#: servers x servers ``distance`` matrix, so an instance grows with the square of the server
#: count: 1,000 servers are 10^6 entries (a 9 MB file, 0.2 GB and 6 s to convert); the format's
#: own list limit (10,000) would be 10^8 entries (a 0.9 GB file, > 9 GB in memory). The STG
#: tables stop at 16 processors, and no schedule of n tasks uses more than n servers.
MAX_SERVERS = 1000
#: most decimal digits of one number of an STG file or table (int() of a longer string is slow
#: and Python refuses over 4,300 digits; no valid count or time has more than 10)
MAX_DIGITS = 18


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc.reason}", file=str(path)) from None


def _int(tok: str, file: str, field: str, what: str) -> int:
    """A non-negative decimal integer of at most MAX_DIGITS digits."""
    if not re.fullmatch(r"[0-9]+", tok):
        raise InputError(f"{what}, got {tok[:40]!r}", file=file, field=field)
    if len(tok) > MAX_DIGITS:
        raise InputError(f"a number of {len(tok)} digits (at most {MAX_DIGITS})", file=file, field=field)
    return int(tok)


def _ints(line: str, file: str, lineno: int) -> list[int]:
    out = []
    for tok in line.split():
        out.append(_int(tok, file, f"line {lineno}", "expected non-negative integers"))
    return out


def read_stg(path: str | os.PathLike) -> tuple[list[int], list[tuple[int, int]]]:
    """The real tasks' processing times (task ``k`` of the file is index ``k - 1``) and the
    precedence edges between real tasks, as ``(pred, succ)`` indices (sorted, no duplicates).
    Any deviation from the format is an InputError naming the line."""
    p = Path(path)
    file = str(p)
    rows = [(i, ln) for i, ln in enumerate(_read_text(p).splitlines(), start=1)
            if ln.strip() and not ln.lstrip().startswith("#")]
    if not rows:
        raise InputError("empty file: expected the task count on the first line", file=file)
    head = _ints(rows[0][1], file, rows[0][0])
    if len(head) != 1 or head[0] < 1:
        raise InputError("the first line must be the number of tasks (one positive integer)", file=file,
                         field=f"line {rows[0][0]}")
    n = head[0]
    body = rows[1:]
    if len(body) != n + 2:
        raise InputError(f"expected {n + 2} task lines ({n} tasks plus the dummy entry and exit), got {len(body)}",
                         file=file)
    times: list[int] = []
    edges: set[tuple[int, int]] = set()
    for k, (lineno, line) in enumerate(body):
        where = f"line {lineno}"
        vals = _ints(line, file, lineno)
        if len(vals) < 3:
            raise InputError("a task line needs id, processing time and number of predecessors", file=file,
                             field=where)
        tid, ptime, npred, preds = vals[0], vals[1], vals[2], vals[3:]
        if tid != k:
            raise InputError(f"task ids must run 0..{n + 1} in order; expected {k}, got {tid}", file=file,
                             field=where)
        if len(preds) != npred:
            raise InputError(f"says {npred} predecessors but lists {len(preds)}", file=file, field=where)
        for q in preds:
            if q >= k:
                raise InputError(f"predecessor {q} does not come before task {k} (STG lists tasks in a "
                                 f"topological order)", file=file, field=where)
        if k in (0, n + 1):
            if ptime != 0:
                raise InputError(f"the dummy {'entry' if k == 0 else 'exit'} task must take 0 time, got {ptime}",
                                 file=file, field=where)
            continue
        if ptime <= 0:
            raise InputError(f"a real task's processing time must be positive, got {ptime}", file=file, field=where)
        times.append(ptime)
        edges.update((q - 1, k - 1) for q in preds if q != 0)
    out = sorted(edges)
    if find_cycle(n, [(a, b, 0.0) for a, b in out]) is not None:  # unreachable given the order check
        raise InputError("the graph is cyclic", file=file)
    return times, out


def read_optima(path: str | os.PathLike) -> dict[tuple[str, int], dict[str, int]]:
    """An STG optimum table: ``{(file, processors): {"optimum": x} or {"lower": a, "upper": b}}``
    with ``file`` as written in the table (e.g. ``50/rand0000.stg``)."""
    p = Path(path)
    file = str(p)
    out: dict[tuple[str, int], dict[str, int]] = {}
    for lineno, row in enumerate(csv.reader(_read_text(p).splitlines()), start=1):
        if not row or not "".join(row).strip():
            continue
        where = f"line {lineno}"
        if len(row) not in (3, 4):
            raise InputError(f"expected file,processors,optimum or file,processors,lower,upper; got {len(row)} "
                             f"columns", file=file, field=where)
        vals = []
        for name, tok in zip(("processors", "optimum" if len(row) == 3 else "lower", "upper"), row[1:]):
            vals.append(_int(tok.strip(), file, f"{where}, {name}", "not a non-negative integer"))
        key = (row[0].strip(), vals[0])
        if key in out:
            raise InputError(f"{key[0]} on {key[1]} processors appears twice", file=file, field=where)
        if len(row) == 3:
            out[key] = {"optimum": vals[1]}
        else:
            if vals[1] > vals[2]:
                raise InputError(f"lower {vals[1]} above upper {vals[2]}", file=file, field=where)
            out[key] = {"lower": vals[1], "upper": vals[2]}
    return out


def default_optima_file(stg_file: str | os.PathLike, servers: int) -> Path:
    """Where the STG archive keeps the table for ``stg_file``: ``<dir>/../optimal/Case<n>_<M>_OPT.csv``
    with ``<dir>`` the graph size folder (``50``, ``100``, ...)."""
    p = Path(stg_file)
    return p.parent.parent / "optimal" / f"Case{p.parent.name}_{servers}_OPT.csv"


def table_key(stg_file: str | os.PathLike) -> str:
    p = Path(stg_file)
    return f"{p.parent.name}/{p.name}"


def convert(path: str | os.PathLike, *, servers: int, optima: str | os.PathLike | None = None,
            seed: int = 0) -> Instance:
    """The P|prec|Cmax instance of STG file ``path`` on ``servers`` identical servers, as an
    offloading instance. ``optima``: the optimum table to take the published value from (its
    row for this file and processor count is kept in ``meta.stg.published``); None looks for
    :func:`default_optima_file` and records none when that does not exist. ``seed`` is accepted
    for the common converter signature; nothing is random."""
    if isinstance(servers, bool) or not isinstance(servers, int) or not 1 <= servers <= MAX_SERVERS:
        raise InputError(f"must be an integer from 1 to {MAX_SERVERS} (the distance matrix grows with its square), "
                         f"got {servers!r}", field="servers")
    p = Path(path)
    times, edges = read_stg(p)
    files = [p]
    published = None
    table = Path(optima) if optima is not None else default_optima_file(p, servers)
    if optima is not None and not table.is_file():
        raise InputError("optimum table not found", file=str(table), field="--optima")
    if table.is_file():
        row = read_optima(table).get((table_key(p), servers))
        if row is None and optima is not None:
            raise InputError(f"no row for {table_key(p)} on {servers} processors", file=str(table))
        if row is not None:
            published = {"source": f"STG {table.name}", **row}
            files.append(table)
    server_rows = [{"name": f"p{i}", "cpu": 1.0, "mem": 1.0, "images": [IMAGE], "speed": 1.0, "is_cloud": False}
                   for i in range(servers)]
    tasks = [{"name": f"t{k + 1}", "functions": [{"image": IMAGE, "cpu": 1.0, "mem": 1.0, "exec_time": float(t)}]}
             for k, t in enumerate(times)]
    workflow = {"name": p.name, "arrival": 0.0, "source": 0, "tasks": tasks,
                "edges": [{"src": a, "dst": b, "data": 0.0} for a, b in edges]}
    payload = {"servers": server_rows, "distance": [[0.0] * servers for _ in range(servers)], "bandwidth": 1.0,
               "image_pull_delay": 0.0, "workflows": [workflow]}
    size = p.parent.name if p.parent.name.isdigit() else str(len(times))
    meta: dict[str, Any] = {
        "generator": "edgebench.instances.traces.stg:convert",
        "converter": "stg",
        "params": {"servers": servers},
        "seed": seed,
        "source": {"trace": SOURCE_NAME, "files": source_files(files)},
        "stg": {"file": table_key(p), "tasks": len(times), "edges": len(edges), "processors": servers,
                "total_work": sum(times), "published": published},
        "reference": REFERENCE,
        "terms": TERMS,
    }
    data = {
        "format_version": 1,
        "family": "offloading",
        "id": f"offloading-stg-{size}-{p.stem}-m{servers}",
        "name": f"STG {table_key(p)} on {servers} identical processors (P|prec|Cmax)",
        "meta": meta,
        "offloading": payload,
    }
    return io.instance_from_dict(data, file=str(p))
