"""The registry lists every solver with a valid kind, and dispatches by family."""

import pytest

from edgebench import registry


def test_every_solver_module_imports():
    registry.solvers()
    assert registry.LOAD_ERRORS == {}


def test_every_registered_solver_is_well_formed():
    infos = registry.solvers()
    assert infos, "no solver registered"
    for info in infos:
        assert info.kind in registry.KINDS
        assert info.families and set(info.families) <= {"placement", "mapping", "offloading"}
        assert callable(info.fn)
        d = info.as_dict()
        assert {"name", "families", "kind"} <= set(d)


def test_family_filter():
    for fam in ("placement", "mapping", "offloading"):
        assert all(fam in s.families for s in registry.solvers(fam))


def test_unknown_solver_names_the_known_ones():
    with pytest.raises(KeyError, match="unknown solver"):
        registry.get("no-such-solver")


def test_bad_kind_is_refused():
    with pytest.raises(ValueError):
        registry.register("x", families=("mapping",), kind="magic")
