"""No behaviour change (issue 45): the shipped placement certificates recompute to the recorded
values after the move into ``edgebench.formulations.placement``.

* every placement instance of at most :data:`FAST_TASKS` tasks (the v1 and adversarial sets: a
  few seconds in all): the combinatorial bound from the instance alone equals the manifest's
  bound where its kind is combinatorial (same kind too), and is at most the bound where the
  manifest records a proven optimum;
* the larger instances (192 tasks and more: the column generation takes minutes each, up to
  ten on testbed-v2, about two CPU hours in all) are the same check in
  ``bench/bench_certificates.py``, run by ``pytest bench/bench_certificates.py`` (the test suite
  stays within its 15-minute budget);
* the shipped best-known solutions' referee values are checked against ``objective`` by
  tests/instances/test_sets.py::test_every_best_known_solution_reproduces_its_objective.
"""

from __future__ import annotations

import pytest

from edgebench.formulations.certify import combinatorial_bound
from edgebench.instances import sets
from edgebench.instances.io import load_instance

#: instances up to this many tasks are recomputed in the quick suite
FAST_TASKS = 24


def placement_entries():
    for name in sets.list_sets():
        if name.startswith("placement-"):
            for entry in sets.read_manifest(name)["instances"]:
                yield name, entry


def check_entry(name, entry):
    inst = load_instance(sets.DATA_DIR / name / entry["file"])
    bk = entry["best_known"]
    got = combinatorial_bound(inst)
    assert got is not None, f"{name}/{entry['file']}: no combinatorial bound"
    value, kind = got
    if bk["bound_kind"].startswith("combinatorial"):
        assert (value, kind) == (pytest.approx(bk["bound"], abs=1e-9), bk["bound_kind"]), (name, entry["file"])
    else:  # a proven optimum: the instance-only bound stays below it
        assert value <= bk["bound"] + 1e-9, (name, entry["file"])


def is_small(name, entry) -> bool:
    return len(load_instance(sets.DATA_DIR / name / entry["file"]).placement.tasks) <= FAST_TASKS


def test_small_placement_certificates_recompute():
    n = 0
    for name, entry in placement_entries():
        if is_small(name, entry):
            check_entry(name, entry)
            n += 1
    assert n >= 9  # synthetic-3-v1 (4), hetero-6-v1 (2), adversarial-v1 (3)
