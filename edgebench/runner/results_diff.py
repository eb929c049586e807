"""``edgebench results diff OLD NEW``: what changed between two results exports (:mod:`.results`).

* **Per set x solver configuration** (family, instance set, label): the mean gap of each export
  and the change, measured against ONE reference per instance — the better of the two exports'
  best known values — so that a new best known does not look like a solver getting worse. The
  change is the mean of the PAIRED differences (same instance, label and seed in both exports,
  both referee-feasible) with a 95 % Student-t interval over those pairs (none with fewer than
  two pairs); each export's own mean has its t-interval over its feasible runs.
* **New best knowns**: instances whose best known value in NEW is strictly better (relative
  1e-9) than in OLD, or that OLD does not have.
* **New failures**: runs (same instance, label, seed) without a referee-feasible result in NEW
  (a failed status, infeasible, or no value) that were feasible in OLD or absent from it.
* **Runs added / removed**: run keys in one export and not the other (a changed time limit or
  parameter gives a new key).

Markdown on stdout, or ``--json``. A folder that is not an export is one error line, exit 2.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any

from edgebench.runner.results import mean_ci, read_export

REL = 1e-9


def _better(a: float, b: float, sense: str) -> bool:
    """a strictly better than b (relative REL)."""
    tol = REL * max(1.0, abs(a), abs(b))
    return a > b + tol if sense == "max" else a < b - tol


def _ok(r: dict[str, Any]) -> bool:
    return r["feasible"] == 1 and r["primary_value"] is not None and math.isfinite(r["primary_value"])


def _gap(value: float, ref: float, sense: str) -> float:
    den = abs(ref) if abs(ref) >= 1e-9 else 1.0
    g = (ref - value if sense == "max" else value - ref) / den
    return max(g, 0.0) if abs(g) >= 1e-9 else 0.0


def _references(old: list[dict], new: list[dict]) -> dict[str, tuple[float, str]]:
    """instance hash -> (the better of the two exports' best known values, sense)."""
    ref: dict[str, tuple[float, str]] = {}
    for r in (*old, *new):
        v = r["best_known"]
        if v is None or not math.isfinite(v):
            continue
        h, sense = r["instance_hash"], r["sense"] or "min"
        if h not in ref or _better(v, ref[h][0], sense):
            ref[h] = (v, sense)
    return ref


def _best_by_instance(rows: list[dict]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["best_known"] is not None and math.isfinite(r["best_known"]):
            out.setdefault(r["instance_hash"], {"value": r["best_known"], "sense": r["sense"] or "min",
                                                "instance": r["instance_id"], "set": r["instance_set"],
                                                "family": r["family"]})
    return out


def diff(old_dir: str, new_dir: str) -> dict[str, Any]:
    meta_o, old = read_export(old_dir)
    meta_n, new = read_export(new_dir)
    ref = _references(old, new)

    def gap_of(r: dict) -> float | None:
        if not _ok(r) or r["instance_hash"] not in ref:
            return None
        v, sense = ref[r["instance_hash"]]
        return _gap(r["primary_value"], v, sense)

    groups: dict[tuple, dict[str, Any]] = defaultdict(lambda: {"old": {}, "new": {}})
    for side, rows in (("old", old), ("new", new)):
        for r in rows:
            g = groups[(r["family"], r["instance_set"], r["label"])]
            g[side][(r["instance_hash"], r["seed"])] = gap_of(r)
    per_group = []
    for (fam, iset, label), g in sorted(groups.items()):
        o, n = g["old"], g["new"]
        pairs = [n[k] - o[k] for k in o.keys() & n.keys() if o[k] is not None and n[k] is not None]
        om, olo, ohi = mean_ci(list(o.values()))
        nm, nlo, nhi = mean_ci(list(n.values()))
        dm, dlo, dhi = mean_ci(pairs)
        per_group.append({"family": fam, "instance_set": iset, "label": label, "old_runs": len(o), "new_runs": len(n),
                          "old_mean_gap": om, "old_ci": [olo, ohi], "new_mean_gap": nm, "new_ci": [nlo, nhi],
                          "pairs": len(pairs), "delta": dm, "delta_ci": [dlo, dhi]})
    bo, bn = _best_by_instance(old), _best_by_instance(new)
    new_best = [{**b, "instance_hash": h, "old_value": bo[h]["value"] if h in bo else None}
                for h, b in sorted(bn.items(), key=lambda x: (x[1]["set"], x[1]["instance"]))
                if h not in bo or _better(b["value"], bo[h]["value"], b["sense"])]
    old_by = {(r["instance_hash"], r["label"], r["seed"]): r for r in old}
    new_fail = []
    for r in new:
        if _ok(r):
            continue
        before = old_by.get((r["instance_hash"], r["label"], r["seed"]))
        if before is None or _ok(before):
            new_fail.append({"family": r["family"], "instance_set": r["instance_set"], "instance": r["instance_id"],
                             "label": r["label"], "seed": r["seed"], "status": r["status"],
                             "message": (r["message"] or "").splitlines()[0][:200] if r["message"] else "",
                             "was": before["status"] if before else None})
    ko, kn = {r["key"] for r in old}, {r["key"] for r in new}
    return {"old": {"folder": str(old_dir), "runs": len(old), "git": meta_o.get("git"),
                    "created": meta_o.get("created")},
            "new": {"folder": str(new_dir), "runs": len(new), "git": meta_n.get("git"),
                    "created": meta_n.get("created")},
            "interval": "95% Student-t over the paired per-run differences (same instance, label, seed)",
            "groups": per_group, "new_best_knowns": new_best, "new_failures": new_fail,
            "runs_added": len(kn - ko), "runs_removed": len(ko - kn)}


def _pct(x: float | None, sign: str = "") -> str:
    return "–" if x is None else f"{100 * x:{sign}.2f}%"


def _ci(pair: list) -> str:
    return "" if pair[0] is None else f" [{100 * pair[0]:.2f}, {100 * pair[1]:.2f}]"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(d: dict[str, Any]) -> str:
    out = [f"# Results diff: {_cell(d['old']['folder'])} -> {_cell(d['new']['folder'])}", "",
           f"- runs: {d['old']['runs']} -> {d['new']['runs']} ({d['runs_added']} added, {d['runs_removed']} removed)",
           f"- commits: `{d['old']['git']}` -> `{d['new']['git']}`",
           f"- gaps against one reference per instance (the better best known of the two exports); "
           f"change = mean of paired differences, interval: {d['interval']}", "",
           "## Mean gap per set and solver", "",
           "| family | set | solver | runs old/new | old mean gap [95% CI] | new mean gap [95% CI] | change "
           "[95% CI] (pairs) |", "| --- | --- | --- | ---: | ---: | ---: | ---: |"]
    for g in d["groups"]:
        out.append(f"| {_cell(g['family'])} | {_cell(g['instance_set'])} | {_cell(g['label'])} | "
                   f"{g['old_runs']}/{g['new_runs']} | {_pct(g['old_mean_gap'])}{_ci(g['old_ci'])} | "
                   f"{_pct(g['new_mean_gap'])}{_ci(g['new_ci'])} | "
                   f"{_pct(g['delta'], '+')}{_ci(g['delta_ci'])} ({g['pairs']}) |")
    out += ["", f"## New best knowns ({len(d['new_best_knowns'])})", ""]
    for b in d["new_best_knowns"]:
        was = "none" if b["old_value"] is None else f"{b['old_value']:.10g}"
        out.append(f"- {_cell(b['set'])} / {_cell(b['instance'])}: {was} -> {b['value']:.10g}")
    out += ["", f"## New failures ({len(d['new_failures'])})", ""]
    for f in d["new_failures"]:
        out.append(f"- {_cell(f['instance_set'])} / {_cell(f['instance'])} {_cell(f['label'])} seed {f['seed']}: "
                   f"{f['status']} (was {f['was'] or 'absent'}){': ' + _cell(f['message']) if f['message'] else ''}")
    return "\n".join(out) + "\n"


def main(old_dir: str, new_dir: str, as_json: bool) -> int:
    d = diff(old_dir, new_dir)
    print(json.dumps(d, indent=1) if as_json else markdown(d), end="\n" if as_json else "")
    return 0
