"""Bound (7) split by its knapsack row (issue 45).  Proof: docs/formulations/placement.md,
"(7) split by the knapsack".

(7)'s master (:mod:`placement.bounds.histip`) holds, per task j, every history whose reduced price
r = price - pi_j is at most delta, and its knapsack row keeps ``sum_j r_j <= delta``.  Each step of
delta multiplies the columns by 12-14 on the 192-task sets, so the master stops fitting one or two
U's above (6).  For a share s in [1/2, 1] and ``theta = ceil(s delta)``, two tasks cannot both take
a column with r > theta (their prices alone would exceed 2 theta >= delta).  So every solution of
the master lies in one of the cases

* A: every task's column has r <= theta (the *small pool*);
* j (one per task): task j's column has r in (theta, delta], every other task's r <= theta;

and each case, with the knapsack row and every other row of (7), is the master restricted to a
subset of its columns.  The least optimum over the cases is therefore the master's optimum, and
the bound is (7)'s, exactly: ``min(U, ceil(least optimum - TOL))``, U where every case is
infeasible.  In memory at a time: the small pool and one task's columns above theta.

Each case's columns are cut by the knapsack row with the other tasks' least r (``lo``): task k's
column needs ``r_k <= delta - sum_{i != k} lo_i``, and a case whose ``lo`` already sum above delta
is infeasible without a model.  A task's large columns that pass the cap beside the small pool come
in price bands, halved until they fit; a band of one price unit (equal reduced prices) that still
does not fit is cut into chunks of at most the cap less the small pool, one case each.  Any
partition of task j's large columns keeps the cases a cover, since task j takes exactly one column.

*Packed cases* (``pack``; off by default): the large columns of several tasks share one case, the
small pool plus as many tasks' bands as fit under the column cap.  A packed case is still the master
restricted to a subset of its columns, and every single case (A included) lies inside one, so the
least optimum is the same.  Measured slower (synthetic-3-multi-v2 s2 at U = 643: 8 packed cases of
up to 59,883 columns, 1,318 s and 6.2 GB, against 574-890 s and 0.7-2.4 GB one task per case).
*Checkpoint* (:class:`Checkpoint`): the cases solved so far, kept in a file so that a run spans
sessions; a later run replays them in their places (by their columns' sha256, or by their bands
alone where the code that makes the columns is the same) and solves the rest.
*Cutoff*: the master's objective is integral, so once a case has optimum v, the later cases are
asked only for a schedule of value <= ceil(v) - 1 (their objective row's right-hand side); a case
infeasible under it cannot lower the least optimum.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import math
import time
from pathlib import Path

import edgebench
from edgebench.errors import InputError
from edgebench.formulations.placement.bounds.histip import (MAX_COLUMNS, MAX_LABELS, HistipResult, Pool, build,
                                                            least_prices, master_schedule, setting, solve,
                                                            task_columns)
from edgebench.formulations.placement.bounds.lagrange import SCALE
from edgebench.formulations.placement.bounds.timip import TOL, OutOfTime, TooManyColumns
from edgebench.instances.io import write_text_atomic

#: the checkpoint file's format; files of every version in ``READABLE`` are read (a version-1 file's
#: cases carry no band, so each is checked by its columns' digest)
CHECKPOINT_VERSION = 2
READABLE = (1, 2)
#: the status of a band with no columns (infeasible without a model), kept so a replay can follow the bands
SKIPPED = "skipped"
#: in place of a case's columns: the case is replayed from the file by its band, without its columns
STORED = "stored"


def _cut(groups: dict, lo: dict, delta: int) -> list | None:
    """The case's columns: each task's (``groups[j]``) with r <= delta - the other tasks' least r;
    None where a task has none or the least r already exceed delta."""
    total = sum(lo.values())
    if any(not cols for cols in groups.values()) or total > delta:
        return None
    out = []
    for j, cols in groups.items():
        room = delta - (total - lo[j])
        out.extend(c for c in cols if c.reduced <= room)
    return out


def _merge(small: list, groups: dict) -> dict:
    """Every task's small columns, with the large ones of the tasks in ``groups``."""
    return {i: (cols + groups[i] if i in groups else cols) for i, cols in enumerate(small)}


def _digest(cols: list) -> str:
    """A case's columns, as one sha256 (their task, cluster, start, completion, history, price)."""
    h = hashlib.sha256()
    for c in cols:
        h.update(repr((c.j, c.n, c.s, c.F, c.hist, c.reduced)).encode())
    return h.hexdigest()


def code_digest() -> str:
    """sha256 of the source that makes a case's columns (:func:`code_modules`), by module name."""
    h = hashlib.sha256()
    for name, source in sorted(code_modules().items()):
        h.update(name.encode() + b"\0" + source + b"\0")
    return h.hexdigest()


def code_modules() -> dict:
    """This module and every edgebench module it imports, transitively (read from their import
    statements), as {name: source}.  A package's ``__init__`` counts only where imported by name."""
    seen, todo = {}, [__name__]
    while todo:
        name = todo.pop()
        spec = _spec(name)
        if name in seen or spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue
        seen[name] = source = Path(spec.origin).read_bytes()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                todo.extend(a.name for a in node.names if a.name.startswith("edgebench."))
            elif isinstance(node, ast.ImportFrom):
                module = importlib.util.resolve_name("." * node.level + (node.module or ""), spec.parent)
                if module.startswith("edgebench."):
                    todo.extend([module, *(f"{module}.{a.name}" for a in node.names)])
    return seen


def _spec(name: str):
    """The module's spec, None where ``name`` is not a module (a function imported from one)."""
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


def _well_formed(row) -> bool:
    """A case on file: [label, digest, status, value] and, from version 2, its band [floor, top, chunk,
    chunks] (None for A); 'infeasible' or 'skipped' with no value, 'optimal' with a finite number."""
    if not isinstance(row, list) or len(row) not in (4, 5) or not all(isinstance(x, str) for x in row[:2]):
        return False
    status, value = row[2:4]
    number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ((status in ("infeasible", SKIPPED) and value is None) or (status == "optimal" and number)):
        return False
    band = row[4] if len(row) == 5 else None
    return band is None or (isinstance(band, list) and len(band) == 4
                            and all(isinstance(x, int) and not isinstance(x, bool) for x in band)
                            and band[0] < band[1] and 0 <= band[2] < band[3])


class Checkpoint:
    """The cases solved so far, kept in a JSON file after each case (written to a temporary file,
    then renamed) so that a run stopped by its time limit goes on where it stopped.

    ``key`` names everything the cases depend on (edgebench's version, the instance, U, the share,
    the caps, delta, theta, the small pool, and ``code``: :func:`code_digest`); a file with another
    key (``code`` aside), or one that is not a checkpoint (:func:`read_checkpoint`), is refused
    (InputError) and left as it is.  A case is replayed only in its own place, either

    * by its columns: the same label and the same columns (sha256); or
    * by its band alone (``fast``), without enumerating its columns: only where the file's ``code``
      is this code's, so that the band makes the same columns.

    Either way the cutoffs and the least optimum are those of one uninterrupted run.  A file written
    by other code is replayed by columns and rewritten with this code's key, each case with its band
    once checked (a case not yet checked keeps no band, so it is never replayed by band).  A case's
    status is taken from the file: the bound is as trustworthy as the file (the run's statistics
    count the cases replayed)."""

    def __init__(self, path, key: dict):
        self.path, self.key = Path(path), key
        self.cases, self.old, self.pos, self.fast, self.note = [], [], 0, False, "none"
        data = read_checkpoint(self.path)
        if data is None:
            return
        differ = sorted(k for k in (set(data["key"]) | set(key)) - {"code"} if data["key"].get(k) != key.get(k))
        if differ:
            raise InputError(f"the cases of another run (its {', '.join(differ)} differ from this run's): not "
                             "overwritten; remove the file or name another", file=str(path))
        self.old = data["cases"]
        self.fast = data["version"] == CHECKPOINT_VERSION and data["key"].get("code") == key.get("code")
        self.note = f"resumed ({len(self.old)} cases on file, {'by band' if self.fast else 'by columns'})"

    def peek(self, label: str, band: list):
        """Whether the next case on file is this one and may be replayed by its band alone."""
        row = self.old[self.pos] if self.pos < len(self.old) else None
        return self.fast and _well_formed(row) and len(row) == 5 and row[0] == label and row[4] == band

    def trace(self, label: str):
        """The band of the next case on file where it is task ``label``'s (its bands are followed by
        either replay; any bands that cover a task's range keep the cases a cover)."""
        row = self.old[self.pos] if self.pos < len(self.old) else None
        ok = _well_formed(row) and len(row) == 5 and row[0] == label and row[4] is not None
        return row[4] if ok else None

    def replay(self, label: str, digest, band=None):
        """The stored (status, value) of the next case where it matches (``digest`` STORED: by its band),
        else None (and nothing after it is replayed)."""
        row = self.old[self.pos] if self.pos < len(self.old) else None
        if digest == STORED:
            match = self.peek(label, band)
        else:
            match = _well_formed(row) and row[:2] == [label, digest] and row[2] != SKIPPED
        if not match:
            del self.old[self.pos:]
            return None
        self.pos += 1
        self.cases.append(row[:4] + [band])
        if not self.fast:
            self._save()  # the file takes this code's key, and the case its band, as each case is checked
        return tuple(row[2:4])

    def skip(self, label: str, band) -> None:
        """A band with no columns; a band on file with none in this place is passed over."""
        row = self.old[self.pos] if self.pos < len(self.old) else None
        if _well_formed(row) and row[0] == label and row[2] == SKIPPED:
            self.pos += 1
        self.cases.append([label, "", SKIPPED, None, band])
        self._save()

    def record(self, label: str, digest: str, status: str, value, band=None) -> None:
        self.cases.append([label, digest, status, value, band])
        self._save()

    def _save(self) -> None:
        rest = self.old[self.pos:] if self.fast else [row[:4] for row in self.old[self.pos:]]
        head = json.dumps({"version": CHECKPOINT_VERSION, "key": self.key}, indent=1)[:-2]
        rows = ",\n".join(json.dumps(c) for c in self.cases + rest)
        write_text_atomic(self.path, f'{head},\n "cases": [\n{rows}\n]}}\n')  # one case per line


def read_checkpoint(path):
    """The checkpoint file at ``path`` as {version, key, cases}, None where there is none; InputError
    (naming the file) where something else is there: no run overwrites a file it cannot read as a
    checkpoint.  The cases are checked one by one as they are replayed."""
    path = Path(path)
    if not path.parent.is_dir():
        raise InputError("its folder does not exist", file=str(path))
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise InputError(f"not a checkpoint file ({type(exc).__name__}): not overwritten", file=str(path)) from None
    if not (isinstance(data, dict) and data.get("version") in READABLE and isinstance(data.get("key"), dict)
            and isinstance(data.get("cases"), list) and all(isinstance(c, list) for c in data["cases"])):
        raise InputError(f"not a checkpoint file of version {' or '.join(map(str, READABLE))}: not overwritten",
                         file=str(path))
    return data


def split_bound(instance, upper: int, *, share: float = 0.5, time_limit: float | None = None, seed: int = 0,
                max_columns: int = MAX_COLUMNS, max_labels: int = MAX_LABELS, multipliers=None,
                pack: bool = False, checkpoint=None) -> HistipResult:
    """Bound (7) for U = ``upper`` by cases (module docstring): the same value as
    :func:`placement.bounds.histip.histip_bound` wherever both finish, with at most
    ``max_columns`` columns in one case.  ``share``: theta / delta, in [0.5, 1].  Declines (bound
    None, reason) past a cap, past the time limit, or where HiGHS proves neither the optimum nor
    the infeasibility of some case.  ``pack``: several tasks' large columns per case (module
    docstring; the same value, measured slower).  ``checkpoint``: a JSON file of the cases solved
    so far (:class:`Checkpoint`); a later call with the same arguments replays them and goes on.
    Statistics: the small pool's size, the cases solved, replayed and skipped (infeasible without a
    model), the largest case, HiGHS's CPU time."""
    if not 0.5 <= float(share) <= 1.0:
        raise ValueError(f"share must lie in [0.5, 1], not {share}")
    st = setting(instance, upper, time_limit, multipliers)
    if isinstance(st, HistipResult):
        return st
    payload, tasks, upper, stats = instance.placement, st.tasks, st.upper, st.stats
    pis, delta = least_prices(payload, tasks, upper, st.Lam, st.Mu, st.H, st.cuts, st.nu)
    theta = math.ceil(float(share) * delta)
    stats.update(delta=delta / (1 << SCALE), theta=theta / (1 << SCALE), share=float(share), pack=bool(pack))
    if delta < 0:
        return HistipResult(upper, "reduced-cost fixing leaves no schedule of value <= U - 1", None, stats)
    counter = [0]

    def columns(i: int, top: int, floor: int | None = None) -> list:
        return task_columns(tasks[i], pis[i] + top, pis[i], st.Lam, st.Mu, st.H, st.single, counter, max_labels,
                            4 * max_columns, st.deadline, st.cuts, st.nu,
                            floor=None if floor is None else pis[i] + floor)

    try:
        small = [columns(i, theta) for i in range(len(tasks))]
    except (TooManyColumns, OutOfTime) as exc:
        return HistipResult(None, f"the small pool: {exc}", None, stats)
    size = sum(map(len, small))
    stats.update(small_columns=size, small_cpu_s=time.process_time() - st.cpu - stats["multipliers_cpu_s"])
    if size > max_columns:
        return HistipResult(None, f"more than {max_columns} columns in the small pool (theta "
                                  f"{theta / (1 << SCALE):.2f})", None, stats)
    book = None
    if checkpoint is not None:
        try:
            key = {"edgebench": edgebench.__version__, "instance": instance.content_hash(), "upper": upper,
                   "share": float(share), "max_columns": max_columns, "max_labels": max_labels, "pack": bool(pack),
                   "delta": delta, "theta": theta, "small": _digest(c for t in small for c in t), "code": code_digest()}
            book = Checkpoint(checkpoint, key)
        except InputError as exc:
            return HistipResult(None, f"the checkpoint: {exc}", None, stats)
        stats["checkpoint"] = book.note
    lo = {i: min((c.reduced for c in cols), default=None) for i, cols in enumerate(small)}
    missing = {i for i, v in lo.items() if v is None}

    def bands(j: int, floor: int, top: int):
        """Task j's columns with r in (floor, top], as (band, columns), in bands small enough for a
        case: a band whose enumeration or case passes the caps is halved; a band of one price unit
        still too large is cut into chunks of at most the cap less the small pool (the cases stay a
        cover: task j takes one column, in one band and one chunk).  band: [floor, top, chunk,
        chunks].  The bands on file are followed (any bands that cover (floor, top] keep the cases a
        cover) and, where the checkpoint replays by band, yielded without their columns (STORED)."""
        trace = book.trace(str(j)) if book is not None and not pack else None
        if trace is not None and trace[0] == floor and floor < trace[1] < top:  # the run on file cut here:
            cut = max(trace[1], (floor + top) // 2)  # at the midpoint, as halving does, where the band on
            yield from bands(j, floor, cut)  # file ends at or below it
            yield from bands(j, cut, top)
            return
        done = 0  # chunks of this band replayed by band
        if trace is not None and trace[:3] == [floor, top, 0]:
            while done < trace[3] and book.peek(str(j), [floor, top, done, trace[3]]):
                yield [floor, top, done, trace[3]], STORED
                done += 1
            if done and done == trace[3]:  # every chunk of the band on file
                return
        try:
            big = columns(j, top, floor)
        except TooManyColumns:
            big = None
        if big is not None and len(big) + size <= max_columns:
            yield [floor, top, 0, 1], big  # whole (chunks replayed, if any, were not this band's)
            return
        if top - floor >= 2:
            mid = (floor + top) // 2
            yield from bands(j, floor, mid)
            yield from bands(j, mid, top)
            return
        if big is None:
            raise TooManyColumns(f"more than {4 * max_columns} columns of task {j} within one unit of price")
        room = max_columns - size
        if room <= 0:
            raise TooManyColumns(f"no room beside the small pool for task {j}'s columns")
        big.sort(key=lambda c: c.reduced)
        chunks = [big[k:k + room] for k in range(0, len(big), room)]
        start = done if done and len(chunks) == trace[3] else 0  # else every chunk is solved: still a cover
        for k in range(start, len(chunks)):
            yield [floor, top, k, len(chunks)], chunks[k]

    def packed():
        """The packed cases: the small pool and the bands of as many tasks as fit under the cap
        (each band fits beside the small pool on its own); case A where no task has a band."""
        groups, count, any_case = {}, 0, False
        for j in range(len(tasks)):
            room = delta - sum(v for i, v in lo.items() if i != j)
            if room <= theta:
                continue
            for _, big in bands(j, theta, room):
                if groups and size + count + len(big) > max_columns:
                    yield "+".join(map(str, groups)), _cut(_merge(small, groups), dict(lo), delta)
                    groups, count, any_case = {}, 0, True
                groups.setdefault(j, []).extend(big)
                count += len(big)
        if groups or not any_case:
            yield "+".join(map(str, groups)) or "A", _cut(_merge(small, groups), dict(lo), delta)

    def cases():
        """(label, band, the case's columns: None where infeasible without a model, STORED where
        replayed by band), lazily; band None for A, packed cases and tasks without a band."""
        if pack and not missing:
            yield from ((label, None, cols) for label, cols in packed())
            return
        if not missing:
            yield "A", None, _cut(dict(enumerate(small)), dict(lo), delta)
        for j in range(len(tasks)):
            if missing - {j}:
                continue  # another task has no column within theta: it would have to be the large one
            room = delta - sum(v for i, v in lo.items() if i != j)
            if room <= theta:
                yield str(j), None, None
                continue
            for band, big in bands(j, theta, room):
                if big is STORED:
                    yield str(j), band, STORED
                    continue
                groups = {i: (big if i == j else cols) for i, cols in enumerate(small)}
                yield str(j), band, _cut(groups, {**lo, j: min((c.reduced for c in big), default=0)}, delta)

    best_case, solved, skipped, largest, highs_cpu, replayed, fast = None, 0, 0, 0, 0.0, 0, 0
    best_value = math.inf  # the least optimum, a replayed case's included

    def record():
        stats.update(cases=solved, cases_skipped=skipped, cases_replayed=replayed, cases_by_band=fast,
                     largest_case=largest,
                     labels=counter[0], highs_cpu_s=highs_cpu, total_s=time.perf_counter() - st.started)

    it = cases()
    while True:
        try:
            case = next(it, None)
            if case is None:
                break
            label, band, cols = case
            if cols is None:
                skipped += 1
                if book is not None and band is not None:
                    book.skip(label, band)
                continue
            if cols is STORED:
                again = book.replay(label, STORED, band)  # checked by Checkpoint.peek as it was yielded
                if again is None:
                    raise RuntimeError(f"case {label} {band}: not on file, though bands() replayed it")
                fast += again[0] != SKIPPED
            else:
                largest = max(largest, len(cols))
                digest = _digest(cols) if book is not None else ""
                again = book.replay(label, digest, band) if book is not None else None
            if again is not None:
                replayed += again[0] != SKIPPED
                skipped += again[0] == SKIPPED
                if again[0] == "optimal" and again[1] < best_value:
                    best_value, best_case = float(again[1]), None
                continue
            cutoff = upper if best_value == math.inf else min(upper, math.ceil(best_value - TOL))
            master = build(payload, tasks, Pool(cols, delta, pis), cutoff, st.deadline)
        except (TooManyColumns, OutOfTime) as exc:
            return HistipResult(None, f"a case: {exc}", None, stats)
        left = st.left()
        if left is not None and left <= 0:
            return HistipResult(None, f"out of time before case {label} ({solved} solved)", None, stats)
        c1 = time.process_time()
        sol = solve(master, time_limit=left, seed=seed)
        highs_cpu += time.process_time() - c1
        solved += 1
        record()
        if sol.status == "infeasible":
            if book is not None:
                book.record(label, digest, "infeasible", None, band)
            continue
        if sol.status != "optimal" or sol.bound is None or not math.isfinite(sol.bound):
            return HistipResult(None, f"HiGHS did not prove case {label}'s optimum ({sol.status}: {sol.message})",
                                None, stats)
        if book is not None:
            book.record(label, digest, "optimal", float(sol.bound), band)
        if sol.bound < best_value:
            best_value, best_case = float(sol.bound), (master, sol)
    record()
    if best_value == math.inf:
        return HistipResult(upper, "every case is infeasible: no schedule of value <= U - 1", None, stats)
    schedule = master_schedule(st, *best_case) if best_case is not None else None
    return HistipResult(min(upper, math.ceil(best_value - TOL)), "the least optimum over the cases", schedule, stats)


__all__ = ["Checkpoint", "code_digest", "code_modules", "read_checkpoint", "split_bound"]
