"""Certification's one home (issue 45 item 2): whether a solver's bound counts is the bound the
solver DECLARES (``register(..., bound=...)``, listed in the catalogue), never its name; the
runner's old entry point re-exports the same functions."""

from __future__ import annotations

import pytest

from edgebench import registry
from edgebench.formulations import certify
from edgebench.instances.generators import generate
from edgebench.runner import bounds as runner_bounds


@pytest.fixture(scope="module")
def placement_instance():
    return generate("placement", "synthetic-3", seed=0, num_tasks=4)


def test_the_catalogue_declares_each_solvers_bound():
    every = {s.name: s.bound for s in registry.solvers()}
    assert every["placement-exact"] == "instance"
    assert every["placement-milp"] == "restriction"
    assert every["placement-lns"] is None and every["sjf"] is None
    assert every["offloading-cpsat"] == "instance" and every["mapping-exact"] == "instance"
    assert set(every.values()) <= set(registry.BOUND_SCOPES)


def test_a_bound_counts_by_declaration_not_by_name(placement_instance, monkeypatch):
    """The old rule was ``solver.split("[", 1)[0] == "placement-exact"``: a solver of another
    name that declares an instance bound now counts, a restriction's never."""
    inst = placement_instance
    assert certify.solver_bound_applies(inst, "placement-exact")
    assert certify.solver_bound_applies(inst, "placement-exact[upper=1092]")
    assert not certify.solver_bound_applies(inst, "placement-milp")
    assert not certify.solver_bound_applies(inst, None)
    assert not certify.solver_bound_applies(inst, "no-such-solver")
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    @registry.register("t-placement-proof", families=("placement",), kind="exact")
    def _proof(instance, *, time_limit=None, seed=0):  # pragma: no cover - never run
        raise AssertionError

    @registry.register("t-placement-fixed", families=("placement",), kind="exact", bound="restriction")
    def _fixed(instance, *, time_limit=None, seed=0):  # pragma: no cover - never run
        raise AssertionError

    assert certify.declared_bound("t-placement-proof[x=1]") == "instance"
    assert certify.solver_bound_applies(inst, "t-placement-proof")
    assert not certify.solver_bound_applies(inst, "t-placement-fixed")


def test_register_refuses_an_unknown_bound_scope():
    with pytest.raises(ValueError, match="bound"):
        registry.register("t-bad-scope", families=("placement",), kind="exact", bound="everything")


def test_offloading_and_mapping_keep_their_rules():
    off = generate("offloading", "heft-random", seed=0, tasks=5)
    assert certify.solver_bound_applies(off, "offloading-cpsat")
    assert certify.solver_bound_applies(off, "some-plugin")  # unlisted: as before the declaration
    kind = certify.combinatorial_bound(off)[1]
    assert kind.startswith("combinatorial: ")


def test_the_runner_reexports_the_one_home():
    assert runner_bounds.combinatorial_bound is certify.combinatorial_bound
    assert runner_bounds.solver_bound_applies is certify.solver_bound_applies


def test_the_fixed_allocation_milp_reports_no_instance_bound():
    """Issue 45: placement-milp reported its restriction's bound as the Result's bound (11 on a
    tiny instance whose re-allocating optimum is lower); now the Result's bound is None and the
    restriction's is in stats."""
    inst = generate("placement", "synthetic-3", seed=3, num_tasks=5)
    res = registry.solve(inst, "placement-milp", time_limit=30)
    assert res.solution.bound is None
    assert res.stats["restriction_bound"] is not None
    assert res.stats["restriction_bound"] <= res.solution.objective + 1e-6
