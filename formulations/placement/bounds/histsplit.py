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
*Cutoff*: the master's objective is integral, so once a case has optimum v, the later cases are
asked only for a schedule of value <= ceil(v) - 1 (their objective row's right-hand side); a case
infeasible under it cannot lower the least optimum.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from pathlib import Path

import edgebench
from edgebench.formulations.placement.bounds.histip import (MAX_COLUMNS, MAX_LABELS, HistipResult, Pool, build,
                                                            least_prices, master_schedule, setting, solve,
                                                            task_columns)
from edgebench.formulations.placement.bounds.lagrange import SCALE
from edgebench.formulations.placement.bounds.timip import TOL, OutOfTime, TooManyColumns
from edgebench.instances.io import write_text_atomic

#: the checkpoint file's format (a file of another version is not read)
CHECKPOINT_VERSION = 1


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


class Checkpoint:
    """The cases solved so far, kept in a JSON file after each case (written to a temporary file,
    then renamed) so that a run stopped by its time limit goes on where it stopped.  ``key`` names
    everything the cases depend on (edgebench's version, the instance, U, the share, the caps,
    delta, theta, the small pool); a file with another key or version, or one that cannot be read,
    is not used (the cases are solved again and the file replaced).  A case is replayed only where
    it comes in the same place with the same columns (sha256), so the cutoffs and the least optimum
    are those of one uninterrupted run."""

    def __init__(self, path, key: dict):
        self.path, self.key, self.cases, self.note = Path(path), key, [], "none"
        try:
            data = json.loads(self.path.read_text())
            ok = isinstance(data, dict) and data.get("version") == CHECKPOINT_VERSION and data.get("key") == key
            cases = data.get("cases") if ok else None
            if isinstance(cases, list) and all(isinstance(c, list) and len(c) == 4 for c in cases):
                self.old, self.note = cases, f"resumed ({len(cases)} cases on file)"
            else:
                self.old, self.note = [], "another run's file: started over"
        except FileNotFoundError:
            self.old = []
        except (OSError, ValueError) as exc:
            self.old, self.note = [], f"unreadable ({type(exc).__name__}): started over"

    def replay(self, label: str, digest: str):
        """The stored (status, value) of the next case where it matches, else None (and nothing
        after it is replayed)."""
        k = len(self.cases)
        if k < len(self.old) and self.old[k][:2] == [label, digest]:
            status, value = self.old[k][2:]
            number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            if (status, value) == ("infeasible", None) or (status == "optimal" and number):
                self.cases.append(self.old[k])
                return status, value
        del self.old[k:]
        return None

    def record(self, label: str, digest: str, status: str, value) -> None:
        self.cases.append([label, digest, status, value])
        head = json.dumps({"version": CHECKPOINT_VERSION, "key": self.key}, indent=1)[:-2]
        rows = ",\n".join(json.dumps(c) for c in self.cases)
        write_text_atomic(self.path, f'{head},\n "cases": [\n{rows}\n]}}\n')  # one case per line


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
        book = Checkpoint(checkpoint, {"edgebench": edgebench.__version__, "instance": instance.content_hash(),
                                       "upper": upper, "share": float(share),
                                       "max_columns": max_columns, "max_labels": max_labels, "pack": bool(pack),
                                       "delta": delta, "theta": theta, "small": _digest(c for t in small for c in t)})
        stats["checkpoint"] = book.note
    lo = {i: min((c.reduced for c in cols), default=None) for i, cols in enumerate(small)}
    missing = {i for i, v in lo.items() if v is None}

    def bands(j: int, floor: int, top: int):
        """Task j's columns with r in (floor, top], in bands small enough for a case: a band whose
        enumeration or case passes the caps is halved; a band of one price unit still too large
        is cut into chunks of at most the cap less the small pool (the cases stay a cover: task j
        takes one column, in one band and one chunk)."""
        try:
            big = columns(j, top, floor)
        except TooManyColumns:
            big = None
        if big is not None and len(big) + size <= max_columns:
            yield big
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
        for k in range(0, len(big), room):
            yield big[k:k + room]

    def packed():
        """The packed cases: the small pool and the bands of as many tasks as fit under the cap
        (each band fits beside the small pool on its own); case A where no task has a band."""
        groups, count, any_case = {}, 0, False
        for j in range(len(tasks)):
            room = delta - sum(v for i, v in lo.items() if i != j)
            if room <= theta:
                continue
            for big in bands(j, theta, room):
                if groups and size + count + len(big) > max_columns:
                    yield "+".join(map(str, groups)), _cut(_merge(small, groups), dict(lo), delta)
                    groups, count, any_case = {}, 0, True
                groups.setdefault(j, []).extend(big)
                count += len(big)
        if groups or not any_case:
            yield "+".join(map(str, groups)) or "A", _cut(_merge(small, groups), dict(lo), delta)

    def cases():
        """(label, the case's columns or None where infeasible without a model), lazily."""
        if pack and not missing:
            yield from packed()
            return
        if not missing:
            yield "A", _cut(dict(enumerate(small)), dict(lo), delta)
        for j in range(len(tasks)):
            if missing - {j}:
                continue  # another task has no column within theta: it would have to be the large one
            room = delta - sum(v for i, v in lo.items() if i != j)
            if room <= theta:
                yield j, None
                continue
            for big in bands(j, theta, room):
                groups = {i: (big if i == j else cols) for i, cols in enumerate(small)}
                yield j, _cut(groups, {**lo, j: min((c.reduced for c in big), default=0)}, delta)

    best_case, solved, skipped, largest, highs_cpu, replayed = None, 0, 0, 0, 0.0, 0
    best_value = math.inf  # the least optimum, a replayed case's included

    def record():
        stats.update(cases=solved, cases_skipped=skipped, cases_replayed=replayed, largest_case=largest,
                     labels=counter[0], highs_cpu_s=highs_cpu, total_s=time.perf_counter() - st.started)

    it = cases()
    while True:
        try:
            case = next(it, None)
            if case is None:
                break
            j, cols = case
            if cols is None:
                skipped += 1
                continue
            largest = max(largest, len(cols))
            label = str(j)
            digest = _digest(cols) if book is not None else ""
            again = book.replay(label, digest) if book is not None else None
            if again is not None:
                replayed += 1
                if again[0] == "optimal" and again[1] < best_value:
                    best_value, best_case = float(again[1]), None
                continue
            cutoff = upper if best_value == math.inf else min(upper, math.ceil(best_value - TOL))
            master = build(payload, tasks, Pool(cols, delta, pis), cutoff, st.deadline)
        except (TooManyColumns, OutOfTime) as exc:
            return HistipResult(None, f"a case: {exc}", None, stats)
        left = st.left()
        if left is not None and left <= 0:
            return HistipResult(None, f"out of time before case {j} ({solved} solved)", None, stats)
        c1 = time.process_time()
        sol = solve(master, time_limit=left, seed=seed)
        highs_cpu += time.process_time() - c1
        solved += 1
        record()
        if sol.status == "infeasible":
            if book is not None:
                book.record(label, digest, "infeasible", None)
            continue
        if sol.status != "optimal" or sol.bound is None or not math.isfinite(sol.bound):
            return HistipResult(None, f"HiGHS did not prove case {j}'s optimum ({sol.status}: {sol.message})",
                                None, stats)
        if book is not None:
            book.record(label, digest, "optimal", float(sol.bound))
        if sol.bound < best_value:
            best_value, best_case = float(sol.bound), (master, sol)
    record()
    if best_value == math.inf:
        return HistipResult(upper, "every case is infeasible: no schedule of value <= U - 1", None, stats)
    schedule = master_schedule(st, *best_case) if best_case is not None else None
    return HistipResult(min(upper, math.ceil(best_value - TOL)), "the least optimum over the cases", schedule, stats)


__all__ = ["split_bound"]
