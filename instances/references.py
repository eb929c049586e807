"""Published reference values beside our certificates (e.g. the STG optimum tables).

A manifest entry may carry ``reference``: ``{"source": ..., "optimum": x}`` or ``{"source": ...,
"lower": a, "upper": b}`` (a minimisation objective; the STG sets). :func:`check` compares it
with the entry's certificate (``best_known``: objective = a referee-checked schedule, bound = a
proven lower bound) within the referee's tolerance (``close``: 1e-6 absolute + 1e-6 relative)
and returns one of

* ``disagree``: our objective below the published optimum or lower bound, or our bound above the
  published optimum or upper bound: one of the two is wrong (an error of ``edgebench sets bks``
  and of the shipped-set tests);
* ``reproduced``: a published optimum that our certificate proves too (objective = bound = it);
* ``closes``: a published-open instance that our certificate closes (objective = bound, inside
  [lower, upper]);
* ``consistent``: no contradiction, not closed by us (or no certificate yet).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgebench.instances import sets
from edgebench.referee.common import ATOL, RTOL

__all__ = ["check", "rows", "disagreements", "render"]


def close(a: float, b: float) -> bool:
    """Equal within the referee's tolerance (as ``edgebench bestknown``)."""
    return abs(a - b) <= ATOL + RTOL * max(abs(a), abs(b))


def check(reference: dict[str, Any], best_known: dict[str, Any] | None) -> tuple[str, str]:
    """(status, one-line reason) of a reference against a certificate (see the module doc)."""
    b = best_known or {}
    obj, bound = b.get("objective"), b.get("bound")
    if "optimum" in reference:
        lo = up = float(reference["optimum"])
    else:
        lo, up = float(reference["lower"]), float(reference["upper"])
    if obj is not None and obj < lo and not close(obj, lo):
        return "disagree", f"our objective {obj:.10g} is below the published {'optimum' if lo == up else 'lower bound'} {lo:g}"
    if bound is not None and bound > up and not close(bound, up):
        return "disagree", f"our bound {bound:.10g} is above the published {'optimum' if lo == up else 'upper bound'} {up:g}"
    closed = obj is not None and bound is not None and close(obj, bound)
    if closed and lo == up:
        return "reproduced", f"optimum {lo:g} reproduced"
    if closed:
        return "closes", f"published [{lo:g}, {up:g}] closed at {obj:.10g}"
    return "consistent", "no contradiction" if obj is not None else "no certificate yet"


def rows(data_dir: Path | None = None) -> list[dict[str, Any]]:
    """One row per manifest entry with a reference, over every shipped set."""
    out = []
    for name in sets.list_sets(data_dir):
        for e in sets.read_manifest(name, data_dir)["instances"]:
            ref = e.get("reference")
            if not ref:
                continue
            status, why = check(ref, e.get("best_known"))
            out.append({"set": name, "id": e["id"], "reference": ref, "best_known": e.get("best_known") or {},
                        "status": status, "why": why})
    return out


def disagreements(data_dir: Path | None = None) -> list[str]:
    """``"<set>/<id>: <reason>"`` for every reference that contradicts our certificate."""
    return [f"{r['set']}/{r['id']}: {r['why']}" for r in rows(data_dir) if r["status"] == "disagree"]


def _ref_text(ref: dict[str, Any]) -> str:
    return f"{ref['optimum']:g}" if "optimum" in ref else f"[{ref['lower']:g}, {ref['upper']:g}]"


def render(data_dir: Path | None = None) -> str:
    """The docs/bks.md section: per set the counts, then the disagreements (an error) and the
    published-open instances our certificates close."""
    rs = rows(data_dir)
    if not rs:
        return ""
    lines = ["", "## Published reference values", "",
             "Sets whose instances carry a published value (`reference` in the manifest: an optimum, or "
             "[lower, upper] where it was open) beside our certificate. **disagree** (our objective below a "
             "published optimum / lower bound, or our bound above a published optimum / upper bound; tolerance "
             "1e-6 absolute + 1e-6 relative) is an error; **reproduced**: a published optimum proven by our "
             "certificate too; **closes**: a published-open instance that our certificate closes. Why the "
             "comparison is sound (the converted instance has exactly the published problem's schedules): "
             "[generators.md](generators.md#the-stg-sets-published-optima).", "",
             "| set | with reference | published optimum | published open | reproduced | inside [bound, best known] "
             "| open closed by us | disagree |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name in sorted({r["set"] for r in rs}):
        sub = [r for r in rs if r["set"] == name]
        opt = [r for r in sub if "optimum" in r["reference"]]
        cnt = {k: sum(1 for r in sub if r["status"] == k) for k in ("reproduced", "closes", "disagree")}
        inside = sum(1 for r in opt if r["status"] == "consistent" and r["best_known"].get("objective") is not None)
        lines.append(f"| {name} | {len(sub)} | {len(opt)} | {len(sub) - len(opt)} | {cnt['reproduced']} | {inside} | "
                     f"{cnt['closes']} | {cnt['disagree']} |")
    bad = [r for r in rs if r["status"] == "disagree"]
    if bad:
        lines += ["", "### Disagreements (errors)", ""] + [f"* {r['set']}/{r['id']}: {r['why']}" for r in bad]
    closes = [r for r in rs if r["status"] == "closes"]
    lines += ["", "### Published-open instances closed by our certificates", ""]
    if not closes:
        lines.append("None yet.")
    else:
        lines += ["| set | instance | published [lower, upper] | our optimum | by | bound kind |",
                  "| --- | --- | --- | ---: | --- | --- |"]
        for r in closes:
            b = r["best_known"]
            lines.append(f"| {r['set']} | {r['id']} | {_ref_text(r['reference'])} | {b['objective']:.10g} | "
                         f"{b.get('solver')} | {b.get('bound_kind')} |")
    still = [r for r in rs if r["status"] == "consistent" and "lower" in r["reference"]
             and r["best_known"].get("objective") is not None]
    if still:
        lines += ["", "### Published-open instances still open", "",
                  "Our certificate beside the published interval; *tightens* says which published end ours improves "
                  "(a schedule below the published upper bound, a proven bound above the published lower bound).", "",
                  "| set | instance | published [lower, upper] | ours [bound, best known] | tightens |",
                  "| --- | --- | --- | --- | --- |"]
        for r in still:
            b, ref = r["best_known"], r["reference"]
            better = [w for w, ok in (("upper", b["objective"] < ref["upper"] and not close(b["objective"], ref["upper"])),
                                      ("lower", b.get("bound") is not None and b["bound"] > ref["lower"]
                                       and not close(b["bound"], ref["lower"]))) if ok]
            bound = "-" if b.get("bound") is None else f"{b['bound']:.10g}"
            lines.append(f"| {r['set']} | {r['id']} | {_ref_text(ref)} | [{bound}, {b['objective']:.10g}] | "
                         f"{', '.join(better) or '-'} |")
    return "\n".join(lines) + "\n"
