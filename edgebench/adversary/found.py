"""The ``adversary`` converter of instance-set recipes: an adversarial set's instance is the
instance of a certificate folder found by ``edgebench adversary search`` (shipped under
``instances/adversarial/<set>/``), checked against the recipe's record of the search."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgebench.adversary import certificate
from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.model import Instance

#: what a recipe entry records of its search (the command that found the instance)
SEARCH_KEYS = ("target", "reference", "size", "evals")


def convert(files: list[Path], *, seed: int, **search: Any) -> Instance:
    """The instance of the certificate folder of ``files[0]`` (its ``instance.json``), after
    checking that the folder's certificate was made by the recorded search (target,
    reference, size, evaluation budget, search seed)."""
    if len(files) != 1 or files[0].name != certificate.FILES["instance"]:
        raise InputError("an adversarial instance needs exactly one file, a certificate folder's instance.json",
                         field="files")
    missing = [k for k in SEARCH_KEYS if k not in search]
    if missing:
        raise InputError(f"the search's {', '.join(missing)} must be recorded", field=f"params.{missing[0]}")
    inst = io.load_instance(files[0])
    cpath = files[0].parent / certificate.FILES["certificate"]
    cert = io.validate_model(certificate.Certificate, io.read_json(cpath), file=str(cpath))
    got = {"target": cert.target.solver, "reference": cert.reference.solver,
           "seed": (cert.search or {}).get("seed")}
    want = {"target": search["target"], "reference": search["reference"], "seed": seed}
    for k in got:
        if got[k] != want[k]:
            raise InputError(f"the certificate's {k} is {got[k]!r}, the recipe records {want[k]!r}", field=f"params.{k}")
    if inst.content_hash() != cert.instance_hash:
        raise InputError("the instance's content hash differs from its certificate's", file=str(files[0]))
    return inst
