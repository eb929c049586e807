"""Which of a suite's planned runs a sweep runs: ``edgebench run --only`` and ``--rerun``.

* ``--only FIELD=VALUE[,VALUE...]`` (repeatable) keeps the planned runs whose ``FIELD`` is one of
  the values; several ``--only`` must all hold. Fields: :data:`FIELDS`. The runs kept are the
  suite's own (same time limits, seeds, parameters, hence the same run keys), unlike
  ``--solvers``, which replaces the suite's solver entries.
* ``--rerun stale`` runs again the stored runs of a learned solver whose recorded checkpoint
  (the store's ``checkpoint`` column: sha256 of the file the run loaded) is not one of the
  solver's checkpoint files now (shipped files by the registry's provenance, or the file a
  ``checkpoint=`` parameter names), and those recorded without one. A re-run records the
  current file, so an interrupted ``--rerun stale`` resumes. ``--rerun all`` runs again every
  selected stored run (a second ``--rerun all`` starts again from the first run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from edgebench.errors import InputError

CMDLINE = "<command line>"
#: fields of a planned run that --only selects on (the RunSpec attribute of each)
FIELDS = {"kind": "kind", "solver": "solver", "label": "label", "family": "family", "set": "set",
          "instance": "instance", "seed": "seed"}
RERUN_MODES = ("stale", "all")
#: values of a field an --only error lists at most
MAX_SHOWN = 12


def parse_only(text: str) -> tuple[str, frozenset[str]]:
    """``FIELD=V1,V2`` -> (field, values); InputError naming ``--only`` for anything else."""
    name, eq, values = text.partition("=")
    name = name.strip()
    vals = frozenset(v.strip() for v in values.split(",") if v.strip())
    if not eq or name not in FIELDS or not vals:
        raise InputError(f"expected FIELD=VALUE[,VALUE...] with FIELD one of {', '.join(FIELDS)}, got {text!r}",
                         file=CMDLINE, field="--only")
    return name, vals


def value(spec: Any, name: str) -> str:
    """A planned run's value of an --only field, as text."""
    if name == "set":
        return str(spec.inst.set or "")
    if name == "instance":
        return str(spec.inst.id)
    return str(getattr(spec, FIELDS[name]))


def select_plan(plan: Any, only: Iterable[tuple[str, frozenset[str]]]) -> None:
    """Keep the planned runs (and the instances of those runs) that every --only condition keeps."""
    plan.runs = select(plan.runs, only)
    used = {r.inst.hash for r in plan.runs}
    plan.instances = [i for i in plan.instances if i.hash in used]


def select(runs: list, only: Iterable[tuple[str, frozenset[str]]]) -> list:
    """The planned runs that every --only condition keeps. A value that no planned run has is
    an InputError (a misspelt kind would silently select nothing), naming the values there are."""
    out = list(runs)
    for name, vals in only:
        have = {value(r, name) for r in runs}
        missing = sorted(vals - have)
        if missing:
            shown = sorted(have)[:MAX_SHOWN]
            more = f", ... ({len(have)} in all)" if len(have) > MAX_SHOWN else ""
            raise InputError(f"no planned run has {name} {missing[0]!r} (the plan's: {', '.join(shown)}{more})",
                             file=CMDLINE, field="--only")
        out = [r for r in out if value(r, name) in vals]
    return out


def current_checkpoints(solver: str, params: dict[str, Any]) -> set[str] | None:
    """sha256 of every checkpoint file a run of ``solver`` with ``params`` may load now; None
    for a solver without checkpoints (its runs are never stale)."""
    from edgebench import registry
    from edgebench.learned.provenance import sha256_file

    given = params.get("checkpoint")
    if isinstance(given, str) and given:
        p = Path(given)
        return {sha256_file(p)} if p.is_file() else set()
    try:
        recs = registry.get(solver).as_dict().get("checkpoints")
    except KeyError:
        return None
    if not recs:
        return None
    return {r["sha256"] for r in recs if isinstance(r, dict) and r.get("sha256")}


def again(store: Any, runs: list, mode: str | None) -> set[str]:
    """Keys of the stored runs among ``runs`` that ``--rerun mode`` runs again."""
    if mode is None:
        return set()
    if mode not in RERUN_MODES:
        raise InputError(f"must be one of {', '.join(RERUN_MODES)}, got {mode!r}", file=CMDLINE, field="--rerun")
    stored = {r["key"]: r.get("checkpoint") for r in store.runs(("key", "checkpoint"))}
    if mode == "all":
        return {r.key for r in runs if r.key in stored}
    out: set[str] = set()
    shas: dict[tuple[str, str], set[str] | None] = {}
    for r in runs:
        if r.key not in stored or r.kind != "learned":
            continue
        k = (r.solver, r.params_hash)
        if k not in shas:
            shas[k] = current_checkpoints(r.solver, r.params)
        if shas[k] is not None and stored[r.key] not in shas[k]:
            out.add(r.key)
    return out
