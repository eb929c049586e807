"""The shipped adversarial sets: every instance's certificate re-checked with the referee, the
set's instance identical to the certificate's, the ratios the issue asks for, and the
manifest's best known no worse than the certificate's reference."""

from __future__ import annotations

import math

import pytest

from edgebench.adversary import certificate
from edgebench.instances import sets
from edgebench.instances.io import content_hash

ADVERSARIAL = sorted(n for n in sets.RECIPES if "-adversarial-" in n)
#: the issue's targets: (family, target) -> a certified ratio at least (min) / at most (max) this
TARGETS = {("offloading", "heft"): 2.0, ("placement", "optimus"): 1.5, ("mapping", "greedy-bw"): 0.7}


def _entries():
    for name in ADVERSARIAL:
        recipe = sets.RECIPES[name]
        insts = sets.load_set(name)
        for item, inst, entry in zip(recipe.items(), insts, sets.read_manifest(name)["instances"]):
            yield pytest.param(name, item, inst, entry, id=f"{name}:{item.params['target']}")


def test_one_set_per_family_with_the_issues_targets():
    fams = {sets.RECIPES[n].family: {i.params["target"] for i in sets.RECIPES[n].items()} for n in ADVERSARIAL}
    assert fams == {"offloading": {"heft", "cpop", "peft"}, "placement": {"optimus", "tiresias", "placement-fifo"},
                    "mapping": {"greedy-bw", "flexitask"}}


@pytest.mark.parametrize("name,item,inst,entry", list(_entries()))
def test_shipped_ratio_rechecked_by_the_referee(name, item, inst, entry):
    folder = sets.ADVERSARIAL_DIR / item.files[0].rsplit("/", 1)[0]
    c = certificate.check(folder, instance=inst)
    assert content_hash(inst) == c["instance_hash"] == entry["hash"]
    assert c["target"]["solver"] == item.params["target"] and c["reference"]["solver"] == item.params["reference"]
    worse = c["ratio"] > 1 if c["sense"] == "min" else c["ratio"] < 1
    assert worse, "an adversarial instance makes its target worse than the reference"
    want = TARGETS.get((c["family"], c["target"]["solver"]))
    if want is not None:
        assert c["ratio"] >= want if c["sense"] == "min" else c["ratio"] <= want
    bk = entry["best_known"]
    if bk.get("objective") is not None:  # certification can only match or beat the reference
        r = c["reference"]["value"]
        assert bk["objective"] <= r * (1 + 1e-9) if c["sense"] == "min" else bk["objective"] >= r * (1 - 1e-9)
        if bk.get("bound") is not None and c["sense"] == "min":
            assert bk["bound"] <= c["target"]["value"] and math.isfinite(bk["bound"])


@pytest.mark.parametrize("name,item,inst,entry", list(_entries()))
def test_no_schedule_found_contradicts_the_bracket(name, item, inst, entry):
    """Brute force against each shipped claim: 30 seeded random solutions and the family's
    heuristics, all referee-scored, never beat the reference where it claims optimality and
    never cross the bound B (so T/R and T/B bracket every ratio T/v we can produce)."""
    from edgebench.referee import evaluate
    from edgebench.registry import solve

    folder = sets.ADVERSARIAL_DIR / item.files[0].rsplit("/", 1)[0]
    c = certificate.check(folder, instance=inst)
    others = {"placement": ["sjf", "optimus-np"], "mapping": ["smart", "greedy-bw"], "offloading": ["heft", "peft"]}
    values = []
    for seed in range(30):
        ev = evaluate(inst, solve(inst, "random", seed=seed).solution)
        if ev.feasible:
            values.append(ev.objectives[ev.primary])
    for other in others[c["family"]]:
        ev = evaluate(inst, solve(inst, other).solution)
        if ev.feasible:
            values.append(ev.objectives[ev.primary])
    assert len(values) >= 10
    r, b = c["reference"]["value"], c["bound"]
    tol = 1e-9 * max(abs(v) for v in values + [r])
    if c["sense"] == "min":
        assert all(v >= b - tol for v in values)
        if c["reference"]["status"] == "optimal":
            assert all(v >= r - tol for v in values)
    else:
        assert all(v <= b + tol for v in values)
        if c["reference"]["status"] == "optimal":
            assert all(v <= r + tol for v in values)
