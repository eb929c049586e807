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
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from edgebench import registry
from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.manifest import confined
from edgebench.instances.model import Instance
from edgebench.referee import PRIMARY, SENSE, evaluate
from edgebench.runner.bounds import combinatorial_bound, solver_bound_applies

CERTIFICATE_VERSION = 1
FILES = {"instance": "instance.json", "target": "target.json", "reference": "reference.json",
         "certificate": "certificate.json"}
#: relative tolerance of a re-checked ratio (the referee is deterministic; this absorbs the
#: JSON round trip of the recorded values)
RTOL = 1e-9
#: relative gap within which a proven bound meets the reference's value, proving it optimal
#: (an exact solver's own tolerance: mapping-exact's bound exceeds its value by ~1e-9)
GAP_RTOL = 1e-6
#: seconds ``check`` gives a re-run of the reference solver (``adversary check
#: --reference-time-limit``)
RERUN_TIME_LIMIT = 60.0


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


class Side(BaseModel):
    """One solver's entry of a certificate."""

    model_config = ConfigDict(extra="forbid")
    value: Annotated[float, Field(allow_inf_nan=False)]
    solver: str
    params: dict[str, Any]
    status: str
    solution: str


class Certificate(BaseModel):
    """The shape of ``certificate.json`` (every number finite): checked before any field is
    used, so a damaged file is one InputError naming the field."""

    model_config = ConfigDict(extra="forbid")
    certificate_version: Literal[1]
    family: Literal["placement", "mapping", "offloading"]
    instance_id: str
    instance_hash: str
    primary: str
    sense: Literal["min", "max"]
    target: Side
    reference: Side
    ratio: Annotated[float, Field(allow_inf_nan=False)]
    bound: Annotated[float, Field(allow_inf_nan=False)] | None
    bound_kind: str | None
    ratio_limit: Annotated[float, Field(allow_inf_nan=False)] | None
    claim: str
    search: dict[str, Any] | None = None


def _close(got: float, want: float) -> bool:
    return math.isclose(got, want, rel_tol=RTOL, abs_tol=1e-12)


def _meets(bound: float, value: float) -> bool:
    """Does a proven bound meet the reference's value (within :data:`GAP_RTOL`): optimality."""
    return abs(bound - value) <= GAP_RTOL * max(1.0, abs(value))


def _stronger(a: float, b: float, sense: str) -> bool:
    """Is bound ``a`` strictly tighter than ``b`` beyond the tolerance (min: larger)?"""
    slack = RTOL * max(1.0, abs(b)) + 1e-12
    return a > b + slack if sense == "min" else a < b - slack


def _solution(inst: Instance, folder: Path, side: Side, name: str, cpath: str) -> tuple[Any, float]:
    path = confined(folder, side.solution, file=cpath, field=f"{name}.solution")
    sol = io.load_solution(path, inst)
    ev = evaluate(inst, sol)
    if not ev.feasible:
        raise InputError("the referee finds the solution infeasible", file=str(path), field="decisions")
    return sol, float(ev.objectives[ev.primary])


@dataclass
class Rerun:
    """The reference solver run again on the instance: its proven bound (None: none that
    applies to the referee's problem), its referee-scored value, or why it cannot run."""

    bound: float | None = None
    value: float | None = None
    why_not: str | None = None


def rerun(inst: Instance, solver: str, params: dict[str, Any], seed: int, time_limit: float, cpath: str) -> Rerun:
    """Re-run ``solver`` with the certificate's parameters and seed under ``time_limit``; only a
    built-in exact solver (``proves``) whose bound is a bound of the referee's problem
    (:func:`edgebench.runner.bounds.solver_bound_applies`) is re-run: a plugin, a
    ``MODULE:FUNCTION`` or an external command may not be the code that made the certificate."""
    if registry.is_function_spec(solver):  # resolving it would import a module named by the data
        return Rerun(why_not=f"{solver!r} is a MODULE:FUNCTION, not a built-in exact solver")
    try:
        info = registry.get(solver)
    except KeyError:
        return Rerun(why_not=f"{solver!r} is not a registered solver")
    except Exception as exc:  # registered, but its module does not load here
        return Rerun(why_not=f"{solver!r} cannot be loaded ({exc})")
    if info.origin != "built-in" or not info.proves:
        return Rerun(why_not=f"{solver!r} is not a built-in exact solver")
    if not solver_bound_applies(inst, solver):
        return Rerun(why_not=f"{solver!r}'s optimum is not the referee's problem's on this instance "
                              f"(edgebench.runner.bounds.solver_bound_applies)")
    clash = sorted(set(params) & {"time_limit", "seed"})
    if clash:
        raise InputError(f"{clash[0]!r} is not a solver parameter", file=cpath, field=f"reference.params.{clash[0]}")
    try:
        res = registry.solve(inst, solver, time_limit=time_limit, seed=seed, **params)
    except InputError as err:
        raise InputError(f"cannot re-run {solver!r}: {err.reason}", file=cpath,
                         field=f"reference.params{'.' + err.field if err.field else ''}") from None
    except Exception as exc:  # a crash of the re-run: nothing verified, nothing refuted
        return Rerun(why_not=f"its re-run failed ({type(exc).__name__}: {exc})")
    out = Rerun()
    ev = evaluate(inst, res.solution) if res.status in ("optimal", "feasible", "timeout") else None
    if ev is not None and ev.feasible:
        out.value = float(ev.objectives[ev.primary])
    b = res.solution.bound
    if b is not None and math.isfinite(b):
        out.bound = float(b)
    elif res.status == "optimal" and out.value is not None:
        out.bound = out.value
    if out.bound is None:
        out.why_not = f"{solver!r} proved no bound within {time_limit:g} s"
    return out


def check(folder: str | Path, *, instance: Instance | None = None,
          time_limit: float = RERUN_TIME_LIMIT) -> dict[str, Any]:
    """Re-check a certificate folder: every number it states is recomputed and compared, and
    what cannot be verified is refused (InputError naming the file and field; the CLI: one
    line, exit code 2). Checked, in order: the file's shape (:class:`Certificate`); the
    instance (content hash, id, family, objective and sense); both solutions re-scored by the
    referee (values as recorded); the ratio ``T/R``; the bound — a combinatorial bound is
    recomputed, a ``solver: NAME`` bound is re-derived by re-running the reference solver
    (:func:`rerun`, ``time_limit`` seconds) and may be no tighter than the bound that run
    proves, any other kind is refused — and the reference's value on its right side; the
    ratio limit ``T/B``; the claim, regenerated from the recomputed numbers
    (:func:`statement`) and compared word for word; the reference's status: ``optimal`` is
    proven when the verified bound meets its value (:data:`GAP_RTOL`) or a re-run proves it,
    fails when a re-run finds a better solution, and is otherwise reported as a heuristic
    reference (the claim's lower side — upper for max — rests on the referee alone).

    Returns the certificate with ``checked_ratio``, ``checked_limit`` and ``reference_proof``
    (how the reference's optimality was proven, or why it is read as a heuristic)."""
    folder = Path(folder)
    cpath = folder / FILES["certificate"]
    f = str(cpath)
    data = io.read_json(cpath)
    if not isinstance(data, dict) or data.get("certificate_version") != CERTIFICATE_VERSION:
        raise InputError(f"not a version-{CERTIFICATE_VERSION} certificate", file=f, field="certificate_version")
    cert = io.validate_model(Certificate, data, file=f)
    inst = instance if instance is not None else io.load_instance(folder / FILES["instance"])
    if inst.content_hash() != cert.instance_hash:
        raise InputError("the instance's content hash differs from the certificate's", file=f, field="instance_hash")
    fam = inst.family
    for name, got, want in (("instance_id", cert.instance_id, inst.id), ("family", cert.family, fam),
                            ("primary", cert.primary, PRIMARY[fam]), ("sense", cert.sense, SENSE[fam])):
        if got != want:
            raise InputError(f"{got!r}, but the instance gives {want!r}", file=f, field=name)
    sense = SENSE[fam]
    _, t = _solution(inst, folder, cert.target, "target", f)
    rsol, r = _solution(inst, folder, cert.reference, "reference", f)
    ratio = ratio_of(t, r)
    if ratio is None:
        raise InputError(f"the reference's value {r:g} is not positive: no ratio", file=f, field="reference.value")
    for name, got, want in (("target.value", t, cert.target.value), ("reference.value", r, cert.reference.value),
                            ("ratio", ratio, cert.ratio)):
        if not _close(got, want):
            raise InputError(f"the referee gives {got!r}, the certificate says {want!r}", file=f, field=name)
    ref = cert.reference
    again: Rerun | None = None
    b, kind = cert.bound, cert.bound_kind
    if (b is None) != (kind is None):
        raise InputError("bound and bound_kind go together (both null or both given)", file=f, field="bound_kind")
    if kind is not None and kind.startswith("combinatorial"):
        cb = combinatorial_bound(inst)
        if cb is None or not _close(cb[0], b):
            raise InputError(f"the combinatorial bound is {cb and cb[0]!r}, the certificate says {b!r}", file=f,
                             field="bound")
    elif kind is not None and kind.startswith("solver: "):
        name = kind.removeprefix("solver: ")
        if name != ref.solver:
            raise InputError(f"a solver bound must be the reference's ({ref.solver!r}), not {name!r}", file=f,
                             field="bound_kind")
        again = rerun(inst, name, ref.params, rsol.seed or 0, time_limit, f)
        if again.why_not is not None:
            raise InputError(f"cannot verify the bound {b!r}: {again.why_not}", file=f, field="bound")
        if _stronger(b, again.bound, sense):
            raise InputError(f"cannot verify the bound {b!r}: re-run within {time_limit:g} s, {name} proves "
                             f"{again.bound!r}", file=f, field="bound")
    elif kind is not None:
        raise InputError(f"cannot verify a bound of kind {kind!r} (known: 'combinatorial: ...', 'solver: NAME')",
                         file=f, field="bound_kind")
    if b is not None and _stronger(b, r, sense):
        raise InputError(f"the reference's value {r:g} is beyond the bound {b:g}: the bound is wrong", file=f,
                         field="bound")
    limit = t / b if b is not None and b > 0 else None
    if (limit is None) != (cert.ratio_limit is None) or (limit is not None and not _close(limit, cert.ratio_limit)):
        raise InputError(f"the ratio limit T/B is {limit!r}, the certificate says {cert.ratio_limit!r}", file=f,
                         field="ratio_limit")
    claim = statement(fam, ratio, limit)
    if cert.claim not in (claim, statement(fam, cert.ratio, cert.ratio_limit)):
        raise InputError(f"the claim is not what the numbers say ({claim!r})", file=f, field="claim")
    proof = _optimality(inst, cert, rsol, r, b, again, time_limit, f)
    return {**cert.model_dump(mode="json"), "checked_ratio": ratio, "checked_limit": limit, "reference_proof": proof}


def _optimality(inst: Instance, cert: Certificate, rsol, r: float, b: float | None, again: Rerun | None,
                time_limit: float, f: str) -> str:
    """How the reference's ``optimal`` status is proven, or why the reference is read as a
    heuristic; InputError where a re-run contradicts it."""
    ref = cert.reference
    if ref.status != "optimal":
        return f"heuristic reference (status {ref.status!r})"
    if b is not None and _meets(b, r):
        return f"optimal: the verified bound ({cert.bound_kind}) meets its value"
    if again is None:
        again = rerun(inst, ref.solver, ref.params, rsol.seed or 0, time_limit, f)
    sense = SENSE[inst.family]
    if again.value is not None and _stronger(again.value, r, "max" if sense == "min" else "min"):
        raise InputError(f"the reference is labelled optimal, but {ref.solver} re-run finds {again.value!r} "
                         f"(the certificate's {r!r})", file=f, field="reference.status")
    if again.bound is not None and _meets(again.bound, r):
        return f"optimal: {ref.solver} re-run within {time_limit:g} s proves it"
    why = again.why_not or f"{ref.solver} re-run within {time_limit:g} s proves only {again.bound!r}"
    return f"heuristic reference (its 'optimal' status is unverified: {why})"
