"""Certificates of the adversarial search: what a found instance proves, and its re-check.

A certificate folder holds ``instance.json``, ``target.json`` and ``reference.json`` (the two
solvers' solutions) and ``certificate.json``. Both solutions are re-scored by the referee:
with ``T`` the target's and ``R`` the reference's primary objective,

* minimisation (placement, offloading): ``OPT <= R`` for the feasible reference, so the
  target's true ratio ``T / OPT >= T / R`` — the certified ratio is a **lower** bound;
* maximisation (mapping composite): ``OPT >= R``, so ``T / OPT <= T / R`` — the certified
  ratio is an **upper** bound.

Where a bound ``B`` valid for every feasible solution is known (``OPT >= B`` for min,
``OPT <= B`` for max), ``T / B`` bounds the true ratio from the other side. Proofs and how to
read them: ``docs/adversary.md``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.model import Instance
from edgebench.referee import PRIMARY, SENSE, evaluate
from edgebench.runner.bounds import combinatorial_bound, solver_bound_applies

CERTIFICATE_VERSION = 1
FILES = {"instance": "instance.json", "target": "target.json", "reference": "reference.json",
         "certificate": "certificate.json"}
#: relative tolerance of a re-checked ratio (the referee is deterministic; this absorbs the
#: JSON round trip of the recorded values)
RTOL = 1e-9


def badness(ratio: float, sense: str) -> float:
    """The search's score, larger = worse for the target: ``T/R`` for min, ``R/T`` for max
    (``inf`` when a maximised target is at or below 0 while the reference is above)."""
    if sense == "min":
        return ratio
    return math.inf if ratio <= 0 else 1.0 / ratio


def ratio_of(target: float, reference: float) -> float | None:
    """``target / reference``, or None when the reference is not positive (no ratio)."""
    if not (math.isfinite(target) and math.isfinite(reference)) or reference <= 0:
        return None
    return target / reference


def best_bound(instance: Instance, reference_solution, reference_proves: bool) -> tuple[float | None, str | None]:
    """A bound on the optimum valid for every feasible solution: the family's combinatorial
    bound, or the exact reference's own bound where its model is the referee's problem
    (:func:`edgebench.runner.bounds.solver_bound_applies`), whichever is tighter."""
    sense = SENSE[instance.family]
    cb = combinatorial_bound(instance)
    best, kind = (cb if cb is not None else (None, None))
    b = reference_solution.bound
    if (reference_proves and b is not None and math.isfinite(b)
            and solver_bound_applies(instance, reference_solution.solver)):
        if best is None or (b > best if sense == "min" else b < best):
            best, kind = float(b), f"solver: {reference_solution.solver}"
    return best, kind


def statement(family: str, ratio: float, limit: float | None) -> str:
    """The certified claim in words, with its direction."""
    if SENSE[family] == "min":
        s = f"target / optimum >= {ratio:.4f}"
        return s + (f" and <= {limit:.4f}" if limit is not None else "")
    s = f"target / optimum <= {ratio:.4f}"
    return s + (f" and >= {limit:.4f}" if limit is not None else "")


def make(instance: Instance, target: dict[str, Any], reference: dict[str, Any], bound: float | None,
         bound_kind: str | None, extra: dict[str, Any]) -> dict[str, Any]:
    """The certificate record (``target`` / ``reference``: solver label, params, value, status)."""
    fam = instance.family
    ratio = target["value"] / reference["value"]
    limit = None
    if bound is not None and bound > 0:
        limit = target["value"] / bound
    return {"certificate_version": CERTIFICATE_VERSION, "family": fam, "instance_id": instance.id,
            "instance_hash": instance.content_hash(), "primary": PRIMARY[fam], "sense": SENSE[fam],
            "target": {**target, "solution": FILES["target"]},
            "reference": {**reference, "solution": FILES["reference"]},
            "ratio": ratio, "bound": bound, "bound_kind": bound_kind, "ratio_limit": limit,
            "claim": statement(fam, ratio, limit), **extra}


def write(folder: Path, instance: Instance, target_solution, reference_solution, cert: dict[str, Any]) -> None:
    """Write the four files, each atomically (temp file then rename); the certificate last,
    so that a folder with a certificate is complete."""
    folder.mkdir(parents=True, exist_ok=True)
    io.write_json(folder / FILES["instance"], instance)
    io.write_json(folder / FILES["target"], target_solution)
    io.write_json(folder / FILES["reference"], reference_solution)
    io.write_text_atomic(folder / FILES["certificate"], json.dumps(cert, indent=1) + "\n")


def _value(instance: Instance, path: Path) -> float:
    sol = io.load_solution(path, instance)
    ev = evaluate(instance, sol)
    if not ev.feasible:
        raise InputError("the referee finds the solution infeasible", file=str(path), field="decisions")
    return float(ev.objectives[ev.primary])


def check(folder: str | Path, *, instance: Instance | None = None) -> dict[str, Any]:
    """Re-check a certificate folder with the referee: both solutions feasible, their values
    and the ratio as recorded. Returns the certificate with the re-computed values
    (``checked_ratio``); InputError naming the file and field otherwise."""
    folder = Path(folder)
    cpath = folder / FILES["certificate"]
    cert = io.read_json(cpath)
    if not isinstance(cert, dict) or cert.get("certificate_version") != CERTIFICATE_VERSION:
        raise InputError(f"not a version-{CERTIFICATE_VERSION} certificate", file=str(cpath),
                         field="certificate_version")
    inst = instance if instance is not None else io.load_instance(folder / FILES["instance"])
    if inst.content_hash() != cert.get("instance_hash"):
        raise InputError("the instance's content hash differs from the certificate's", file=str(cpath),
                         field="instance_hash")
    t = _value(inst, folder / cert["target"]["solution"])
    r = _value(inst, folder / cert["reference"]["solution"])
    ratio = ratio_of(t, r)
    if ratio is None:
        raise InputError(f"the reference's value {r:g} is not positive: no ratio", file=str(cpath),
                         field="reference.value")
    for name, got, want in (("target.value", t, cert["target"]["value"]),
                            ("reference.value", r, cert["reference"]["value"]), ("ratio", ratio, cert["ratio"])):
        if not math.isclose(got, want, rel_tol=RTOL, abs_tol=1e-12):
            raise InputError(f"the referee gives {got!r}, the certificate says {want!r}", file=str(cpath), field=name)
    b = cert.get("bound")
    if b is not None and (cert.get("bound_kind") or "").startswith("combinatorial"):
        cb = combinatorial_bound(inst)
        if cb is None or not math.isclose(cb[0], b, rel_tol=RTOL, abs_tol=1e-12):
            raise InputError(f"the combinatorial bound is {cb and cb[0]!r}, the certificate says {b!r}",
                             file=str(cpath), field="bound")
    sense = SENSE[inst.family]
    if b is not None and (r < b * (1 - 1e-9) if sense == "min" else r > b * (1 + 1e-9)):
        raise InputError(f"the reference's value {r:g} is beyond the bound {b:g}: the bound is wrong",
                         file=str(cpath), field="bound")
    return {**cert, "checked_ratio": ratio}
