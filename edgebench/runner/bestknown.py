"""Best known solutions and bounds, and the gaps measured against them.

Per instance (by content hash) the store keeps the best **referee-verified** objective (the
primary objective of a feasible solution, as the referee recomputed it) and the best
**proven** bound, each with its provenance (solver, run key, date):

* A run's objective counts when the referee found its solution feasible.
* A run's bound counts only when the solver's reported objective equals the referee's
  primary value (relative/absolute tolerance 1e-6, the referee's): then the solver optimised
  the referee's primary objective and its bound is in the same units. A run with status
  ``optimal`` that passes this check ("proven") contributes its objective as a bound.
* An instance is *optimal* when its best objective and best bound agree within the
  tolerance. A referee-verified objective better than the best bound beyond the tolerance
  is recorded as a *conflict* (a solver claimed a bound it did not have).
* Improvement is strict: ties keep the older provenance.

Instances from an instance set start from the ``best_known`` fields of the set's manifest;
``edgebench bestknown --write-manifests`` writes improvements back (atomically; values only
ever improve).

Gaps (documented in ``docs/runner.md``), for a feasible run with referee value ``v``:

* ``gap = (v - best) / |best|`` for minimisation and ``(best - v) / |best|`` for
  maximisation (>= 0; when ``|best| < 1e-9`` the denominator is 1: an absolute gap);
* ``bound_gap`` — the same with the best bound in place of the best objective, shown where
  optimality is not proven.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import sqlite3
from pathlib import Path
from typing import Any

from edgebench.errors import InputError
from edgebench.referee.common import ATOL, RTOL, SENSE

TINY = 1e-9

_COLS = ("instance_hash", "instance_id", "instance_set", "family", "size", "primary_name", "sense",
         "objective", "obj_solver", "obj_run", "obj_date", "bound", "bound_solver", "bound_run", "bound_date",
         "optimal", "conflict")


def close(a: float, b: float) -> bool:
    return abs(a - b) <= ATOL + RTOL * max(abs(a), abs(b))


def _finite(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def obj_better(a: float, b: float | None, sense: str) -> bool:
    return b is None or (a < b if sense == "min" else a > b)


def bound_better(a: float, b: float | None, sense: str) -> bool:
    # a lower bound for minimisation, an upper bound for maximisation
    return b is None or (a > b if sense == "min" else a < b)


def gap(value: float | None, best: float | None, sense: str) -> float | None:
    """Relative gap of ``value`` to ``best`` in the improving direction (None when either is
    missing; +inf for a missing / infinite value against a known best)."""
    if best is None:
        return None
    if value is None or not math.isfinite(value):
        return math.inf
    den = abs(best) if abs(best) >= TINY else 1.0
    g = (value - best) / den if sense == "min" else (best - value) / den
    return 0.0 if abs(g) < 1e-9 else g


def candidates(row: dict[str, Any]) -> tuple[float | None, float | None]:
    """(objective, bound) that a finished run contributes to the best-known table."""
    value = _finite(row.get("primary_value")) if row.get("feasible") else None
    bound = None
    reported = _finite(row.get("bound")) if row.get("units_ok") else None
    if row.get("proven") and value is not None and (reported is None or close(reported, value)):
        bound = value  # proven optimal for the referee's objective: the optimum is the tightest bound
    elif reported is not None:
        # an "optimal" status whose own bound stays below the value (e.g. CP-SAT optimal for durations
        # rounded up to ticks) proves only that bound
        bound = reported
    return value, bound


def _current(conn: sqlite3.Connection, h: str) -> dict[str, Any] | None:
    cur = conn.execute(f"SELECT {', '.join(_COLS)} FROM bestknown WHERE instance_hash=?", (h,))
    r = cur.fetchone()
    return dict(zip(_COLS, tuple(r))) if r is not None else None


def _write(conn: sqlite3.Connection, rec: dict[str, Any]) -> None:
    conn.execute(f"INSERT OR REPLACE INTO bestknown ({', '.join(_COLS)}) VALUES ({', '.join('?' * len(_COLS))})",
                 [rec.get(c) for c in _COLS])


def _merge(rec: dict[str, Any], obj: float | None, bound: float | None, prov_obj: tuple, prov_bound: tuple) -> bool:
    sense = rec["sense"]
    changed = False
    if obj is not None and obj_better(obj, rec.get("objective"), sense):
        rec["objective"], (rec["obj_solver"], rec["obj_run"], rec["obj_date"]) = obj, prov_obj
        changed = True
    if bound is not None and bound_better(bound, rec.get("bound"), sense):
        rec["bound"], (rec["bound_solver"], rec["bound_run"], rec["bound_date"]) = bound, prov_bound
        changed = True
    o, b = rec.get("objective"), rec.get("bound")
    conflict = None
    optimal = False
    if o is not None and b is not None:
        if close(o, b):
            optimal = True
        elif obj_better(o, b, sense):  # the objective is beyond the bound: the bound is wrong
            conflict = (f"objective {o:.10g} ({rec.get('obj_solver')}, run {str(rec.get('obj_run'))[:12]}) is better "
                        f"than the bound {b:.10g} ({rec.get('bound_solver')}, run {str(rec.get('bound_run'))[:12]})")
    if bool(rec.get("optimal")) != optimal or rec.get("conflict") != conflict:
        changed = True
    rec["optimal"], rec["conflict"] = int(optimal), conflict
    return changed


def _fresh(row: dict[str, Any]) -> dict[str, Any]:
    return {"instance_hash": row["instance_hash"], "instance_id": row.get("instance_id"),
            "instance_set": row.get("instance_set"), "family": row.get("family"), "size": row.get("size"),
            "primary_name": row.get("primary_name"), "sense": row.get("sense"), "optimal": 0}


def update(conn: sqlite3.Connection, row: dict[str, Any]) -> bool:
    """Fold a finished run (a store row) into the best-known table; inside the caller's
    transaction. Returns True when something improved."""
    rec = _current(conn, row["instance_hash"])
    new = rec is None
    if new:
        rec = _fresh(row)
    obj, bound = candidates(row)
    date = (row.get("finished") or "")[:10] or None
    prov = (row.get("label") or row.get("solver"), row.get("key"), date)
    changed = _merge(rec, obj, bound, prov, prov)
    if changed or new:
        _write(conn, rec)
    return changed


#: the store columns :func:`candidates` and the provenance read
_RUN_COLS = ("key", "label", "solver", "finished", "primary_value", "feasible", "bound", "units_ok", "proven")


def refold(conn: sqlite3.Connection, instance_hash: str, key: str) -> bool:
    """After run ``key`` was replaced (``edgebench run --rerun``): when the instance's best
    known objective or bound came from that run, forget it and fold the instance's stored runs
    again (oldest first, the new row of ``key`` included). Inside the caller's transaction.
    Returns False (nothing done) when neither came from ``key``. A manifest's value that came
    from ``key`` comes back when the next sweep seeds the manifests."""
    rec = _current(conn, instance_hash)
    if rec is None or key not in (rec.get("obj_run"), rec.get("bound_run")):
        return False
    for side, cols in (("obj_run", ("objective", "obj_solver", "obj_run", "obj_date")),
                       ("bound_run", ("bound", "bound_solver", "bound_run", "bound_date"))):
        if rec.get(side) == key:
            rec.update(dict.fromkeys(cols))
    cur = conn.execute(f"SELECT {', '.join(_RUN_COLS)} FROM runs WHERE instance_hash=? ORDER BY finished, key",
                       (instance_hash,))
    for r in cur.fetchall():
        row = dict(zip(_RUN_COLS, tuple(r)))
        obj, bound = candidates(row)
        prov = (row.get("label") or row.get("solver"), row["key"], (row.get("finished") or "")[:10] or None)
        _merge(rec, obj, bound, prov, prov)
    _merge(rec, None, None, (), ())  # optimal / conflict of the record as it now is
    _write(conn, rec)
    return True


def solver_proves(solver: str) -> bool:
    """Whether the registered solver named ``solver`` may prove optimality: its ``proves``
    (kinds exact / mdp, or ``register(proves=True)``), read from the registry's list without
    importing anything (a name from a store is never resolved as ``MODULE:FUNCTION``); False for
    a name the registry does not list: nothing it says is then a proof."""
    return bool(_proving().get(solver, False))


@functools.lru_cache(maxsize=1)
def _proving() -> dict[str, bool]:
    from edgebench import registry  # the registry's list: only when a proof is weighed

    return {s.name: bool(getattr(s, "proves", False)) for s in registry.solvers()}


def proving_solver(solver: Any) -> bool:
    """:func:`solver_proves` of a registry name or a run label (``name[params]``)."""
    return isinstance(solver, str) and solver_proves(solver.split("[", 1)[0])


def proving_source(bk: dict[str, Any]) -> bool:
    """Whether a manifest's ``bound`` has a proving source (issue 44: a bound equal to a
    heuristic's value showed the instance "closed" without any proof): a bound computed from
    the instance alone (``bound_kind`` "combinatorial: ...", :mod:`.bounds`) or one of a solver
    that proves (``bound_solver``, else ``solver``)."""
    kind = bk.get("bound_kind")
    if isinstance(kind, str) and kind.startswith("combinatorial"):
        return True
    if proving_solver(bk.get("bound_solver", bk.get("solver"))):
        return True
    named = re.fullmatch(r"(?:proven optimum|solver bound) \((.+)\)", kind) if isinstance(kind, str) else None
    if named and proving_solver(named.group(1)):  # what write_manifests records: the run's solver
        return True
    # a label ("offloading-cpsat-fine"): the bound's run is the objective's, whose configuration names the solver
    config = bk.get("solver_config")
    return (isinstance(config, dict) and bk.get("bound_run", bk.get("run")) == bk.get("run")
            and proving_solver(config.get("solver")))


def seed(conn: sqlite3.Connection, entry: dict[str, Any]) -> None:
    """Start an instance's record from its manifest ``best_known`` fields (``entry`` has the
    instance fields of a store row plus ``best_known``). The objective comes with its solution
    (checked by :func:`verify_entry` for a folder's set); a bound, or ``optimal`` without one,
    counts only from a proving source (:func:`proving_source`), else it is left out."""
    rec = _current(conn, entry["instance_hash"])
    new = rec is None
    if new:
        rec = _fresh(entry)
    bk = entry.get("best_known") or {}
    obj = _finite(bk.get("objective"))
    bound = _finite(bk.get("bound")) if proving_source(bk) else None
    if bk.get("optimal") and obj is not None and bound is None and proving_solver(bk.get("solver")):
        bound = obj
    prov_obj = (bk.get("solver"), bk.get("run"), bk.get("date"))
    prov_bound = (bk.get("bound_solver", bk.get("solver")), bk.get("bound_run", bk.get("run")),
                  bk.get("bound_date", bk.get("date")))
    if _merge(rec, obj, bound, prov_obj, prov_bound) or new:
        _write(conn, rec)


def table(store) -> dict[str, dict[str, Any]]:
    """instance hash -> best-known record."""
    return {r["instance_hash"]: r for r in store.bestknown()}


def table_from_runs(store) -> dict[str, dict[str, Any]]:
    """instance hash -> best-known record, folded afresh from the store's runs with the current
    :func:`candidates` rules (not the store's cached table, which an older rule may have filled)."""
    out: dict[str, dict[str, Any]] = {}
    for row in sorted(store.runs(), key=lambda r: (r.get("finished") or "", r.get("key") or "")):
        rec = out.setdefault(row["instance_hash"], _fresh(row))
        obj, bound = candidates(row)
        date = (row.get("finished") or "")[:10] or None
        prov = (row.get("label") or row.get("solver"), row.get("key"), date)
        _merge(rec, obj, bound, prov, prov)
    return out


# ======================================================================================
# manifests
# ======================================================================================


BK_KEYS = ("objective", "bound", "optimal", "status", "gap", "solution", "solver", "solver_config", "run", "date",
           "wall", "edgebench_version", "bound_kind", "bound_solver", "bound_run", "bound_date")


def verify_entry(folder: Path, entry: dict[str, Any], instance=None) -> None:
    """Check a manifest entry's shipped best-known solution: it exists, was made for the entry's
    instance (content hash) and the referee gives it exactly the recorded objective (within the
    referee's tolerance). InputError naming the file and field otherwise."""
    from edgebench.instances.io import load_instance, load_solution
    from edgebench.referee import evaluate

    bk = entry.get("best_known") or {}
    rel = bk.get("solution")
    manifest = str(folder / "manifest.json")
    if rel is None:
        if _finite(bk.get("objective")) is not None:
            raise InputError(f"{entry.get('file')}: a best-known objective needs its solution file",
                             file=manifest, field="best_known.solution")
        return
    path = (folder / rel).resolve()
    if folder.resolve() not in path.parents or not path.is_file():
        raise InputError(f"{entry.get('file')}: solution file {rel!r} not found in the set folder", file=manifest,
                         field="best_known.solution")
    inst = instance if instance is not None else load_instance(folder / entry["file"])
    _check_bound_side(entry, bk, manifest, inst)
    sol = load_solution(path)
    if sol.instance_hash != entry.get("hash"):
        raise InputError(f"solution was made for another instance (hash {sol.instance_hash[:12]}..., the "
                         f"manifest's {str(entry.get('hash'))[:12]}...)", file=str(path), field="instance_hash")
    ev = evaluate(inst, sol)
    obj = _finite(bk.get("objective"))
    if not ev.feasible or obj is None or not close(ev.primary_value, obj):
        raise InputError(f"the referee gives {'an infeasible solution' if not ev.feasible else ev.primary_value} "
                         f"but the manifest says objective {bk.get('objective')}", file=str(path),
                         field="best_known.objective")


def _check_bound_side(entry: dict[str, Any], bk: dict[str, Any], manifest: str, instance) -> None:
    """A bound on the wrong side of the (referee-checked) objective is impossible (issue 28:
    a tampered manifest showed "closed" at impossible values)."""
    obj, bnd = _finite(bk.get("objective")), _finite(bk.get("bound"))
    if obj is None or bnd is None:
        return
    sense = SENSE[instance.family]
    if (bnd > obj if sense == "min" else bnd < obj) and not close(bnd, obj):
        raise InputError(f"{entry.get('file')}: bound {bnd} is beyond the best-known objective {obj} "
                         f"({'a lower' if sense == 'min' else 'an upper'} bound cannot be)", file=manifest,
                         field="best_known.bound")


def _store_solution(store, key: str, inst):
    """The run's solution and the referee's primary value of it after a JSON round trip."""
    from edgebench.instances.io import dump_json_text, solution_from_dict
    from edgebench.referee import evaluate

    sol = store.solution(key)
    if sol is None:
        return None, None
    text = dump_json_text(sol)
    again = solution_from_dict(json.loads(text), instance=inst)
    ev = evaluate(inst, again)
    return (text, ev.primary_value) if ev.feasible else (None, None)


def run_info(store, key: str | None) -> dict[str, Any]:
    """The manifest fields of run ``key``: its solver config, wall and the edgebench version of the
    process that made it (for an imported run, the one that scored it)."""
    if not key:
        return {}
    row = store.run(key) or {}
    env = store.envs().get(row.get("env") or "", {})
    version = (env.get("versions") or {}).get("edgebench") if isinstance(env, dict) else None
    params = row.get("params")
    return {"solver_config": {"solver": row.get("solver"), "label": row.get("label"),
                              "params": json.loads(params) if params else {}, "seed": row.get("seed"),
                              "time_limit": row.get("time_limit")},
            "wall": row.get("wall"), "edgebench_version": version}


def _bound_kind(store, key: str | None, optimal_run: bool) -> str | None:
    row = (store.run(key) or {}) if key else {}
    if not row:
        return None
    return f"proven optimum ({row.get('solver')})" if optimal_run else f"solver bound ({row.get('solver')})"


def certificate(objective: float | None, bound: float | None, sense: str) -> tuple[bool, float | None, str]:
    """(optimal, gap, status) of a best-known objective and bound: gap = |objective - bound| /
    |objective| (absolute when |objective| < 1e-9); status *closed* (within the referee's
    tolerance), *open*, or *conflict* (the objective is beyond the bound: one of them is wrong)."""
    if objective is None or bound is None:
        return False, None, "open"
    if close(objective, bound):
        return True, 0.0, "closed"
    if obj_better(objective, bound, sense):
        return False, None, "conflict"
    den = abs(objective) if abs(objective) >= TINY else 1.0
    return False, abs(objective - bound) / den, "open"


def certification_tally(cert: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """A set's certification tally (manifest key ``certification``) after folding ``runs`` (the
    store's runs on the set's instances: ``suite``, ``wall``, ``key``). Per suite, each round is
    keyed by a fingerprint of its run keys, so folding the same store again changes nothing, while
    another store of the same suite (a later round) adds a round; ``runs`` and ``wall_s`` are the
    sums over the rounds. A suite's tally written before rounds were kept counts as one round,
    ``"earlier"``."""
    out = dict(cert)
    for suite in sorted({r["suite"] or "" for r in runs}):
        mine = [r for r in runs if (r["suite"] or "") == suite]
        fp = hashlib.sha256("\n".join(sorted(str(r["key"]) for r in mine)).encode()).hexdigest()[:16]
        prev = dict(out.get(suite) or {})
        rounds = dict(prev.get("rounds") or ({"earlier": {"runs": prev["runs"], "wall_s": prev["wall_s"]}}
                                             if "runs" in prev else {}))
        rounds[fp] = {"runs": len(mine), "wall_s": round(sum(r["wall"] or 0.0 for r in mine), 1)}
        out[suite] = {"runs": sum(v["runs"] for v in rounds.values()),
                      "wall_s": round(sum(v["wall_s"] for v in rounds.values()), 1), "rounds": rounds}
    return out


def write_manifests(store, data_dir: str | Path | None = None, *, refresh_bounds: bool = False,
                    keep_bounds: bool = False) -> list[str]:
    """Write the store's best-known values into the ``best_known`` fields of every instance
    set manifest under ``data_dir`` (default: the embedded sets) whose instances are in the
    store, with the best-known solution as ``solutions/<instance id>.json`` in the set folder
    (``.json.gz`` for a set of gzipped instances);
    the instance-only combinatorial bound (:mod:`edgebench.runner.bounds`) joins the store's.
    With ``refresh_bounds`` an instance with a best-known entry but no run in the store gets the
    current combinatorial bound too (after a stronger bound was added; no solver runs needed).
    With ``keep_bounds`` the combinatorial bound is not recomputed (it takes minutes per large
    placement instance): only the store's objectives and proven bounds join the shipped entries.
    Only improvements. Every shipped solution is checked first (:func:`verify_entry`): a
    manifest whose solution does not reproduce its objective, or is for another instance,
    is an InputError and nothing is written. Files are written atomically, solutions before
    manifests. Returns one line per changed instance."""
    from edgebench.instances import sets
    from edgebench.instances.io import load_instance, write_text_atomic
    from edgebench.instances.manifest import read_manifest_file
    from edgebench.runner.bounds import combinatorial_bound, solver_bound_applies

    d = Path(data_dir) if data_dir is not None else sets.DATA_DIR
    best = table_from_runs(store)
    walls: dict[str, list] = {}
    for r in store.runs(("instance_hash", "wall", "suite", "key")):
        walls.setdefault(r["instance_hash"], []).append(r)
    changes: list[str] = []
    writes: list[tuple[Path, str]] = []
    manifests: list[tuple[Path, str]] = []
    for name in sets.list_sets(d):
        folder = d / name
        path = folder / "manifest.json"
        manifest = read_manifest_file(path)
        touched = False
        for entry in manifest.get("instances", []):
            rec = best.get(entry.get("hash"))
            if rec is None and refresh_bounds and entry.get("best_known"):
                rec = {}  # no run in the store: only a (newer) combinatorial bound may join
            elif rec is None or rec.get("sense") not in ("min", "max"):
                continue
            inst = load_instance(folder / entry["file"])
            verify_entry(folder, entry, inst)
            bk = dict(entry.get("best_known") or {})
            old = dict(bk)
            if _finite(bk.get("bound")) is not None and not proving_source(bk):
                # a bound without a proving source (a heuristic's value) closes nothing (issue 44)
                bk.update(bound=None, bound_solver=None, bound_run=None, bound_date=None, bound_kind=None)
            sense = rec.get("sense") or SENSE[inst.family]
            o = _finite(rec.get("objective"))
            if o is not None and obj_better(o, _finite(bk.get("objective")), sense):
                text, value = _store_solution(store, rec.get("obj_run"), inst)
                if text is not None and obj_better(value, _finite(bk.get("objective")), sense):
                    rel = f"solutions/{entry['id']}.json" + (".gz" if str(entry["file"]).endswith(".gz") else "")
                    writes.append((folder / rel, text))
                    bk.update(objective=value, solution=rel, solver=rec.get("obj_solver"), run=rec.get("obj_run"),
                              date=rec.get("obj_date"), **run_info(store, rec.get("obj_run")))
            # whether the bound counts is a property of the solver that made it, not of the run's label
            # (a suite's label, e.g. "bnp-root-work" for placement-bnp, names no registered solver)
            run = store.run(rec.get("bound_run")) if rec.get("bound_run") else None
            maker = (run or {}).get("solver") or rec.get("bound_solver")
            b = _finite(rec.get("bound")) if solver_bound_applies(inst, maker) else None
            if b is not None and bound_better(b, _finite(bk.get("bound")), sense):
                bk.update(bound=b, bound_solver=rec.get("bound_solver"), bound_run=rec.get("bound_run"),
                          bound_date=rec.get("bound_date"),
                          bound_kind=_bound_kind(store, rec.get("bound_run"),
                                                 bool(run and run.get("proven") and close(b, run["primary_value"]))))
            comb = None if keep_bounds else combinatorial_bound(inst)
            cb, ob = (comb[0] if comb else None), _finite(bk.get("objective"))
            if cb is not None and ob is not None and close(cb, ob) and bound_better(cb, ob, sense):
                cb = ob  # beyond a referee-checked objective by float noise only
            old_b = _finite(bk.get("bound"))
            if cb is not None and bound_better(cb, old_b, sense) and (old_b is None or not close(cb, old_b)):
                bk.update(bound=cb, bound_solver=None, bound_run=None, bound_date=rec.get("obj_date"),
                          bound_kind=comb[1])
            bo, bb = _finite(bk.get("objective")), _finite(bk.get("bound"))
            if bo is None and bb is None:
                continue
            bk["optimal"], bk["gap"], bk["status"] = certificate(bo, bb, sense)
            for k in BK_KEYS:
                bk.setdefault(k, None)
            if any(bk.get(k) != old.get(k) for k in ("objective", "bound", "solution", "status", "bound_kind")):
                entry["best_known"] = bk
                touched = True
                changes.append(f"{name}/{entry.get('file')}: objective {old.get('objective')} -> {bk['objective']}, "
                               f"bound {old.get('bound')} -> {bk['bound']}, {bk['status']}")
        runs = [r for e in manifest.get("instances", []) for r in walls.get(e.get("hash"), [])]
        if runs:
            cert = certification_tally(manifest.get("certification") or {}, runs)
            if cert != manifest.get("certification"):
                manifest["certification"] = cert
                touched = True
        if touched:
            manifests.append((path, json.dumps(manifest, indent=1) + "\n"))
    for p, text in writes + manifests:
        write_text_atomic(p, text)
    return changes
