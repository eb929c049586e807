"""The registry lists every solver with a valid kind, and dispatches by family."""

import pytest

from edgebench import registry


def test_every_solver_module_imports():
    assert registry.load_all() == {}


def test_listing_imports_no_solver_module_and_get_imports_one(monkeypatch):
    """The catalogue lists every built-in solver; get() imports that solver's module only."""
    fresh = {n: registry.CatalogueEntry(e.record) for n, e in registry._CATALOGUE.items()}
    monkeypatch.setattr(registry, "_CATALOGUE", fresh)
    monkeypatch.setattr(registry, "_REGISTRY", {})
    names = {s.name for s in registry.solvers()}
    assert {"random", "placement-exact", "tapfinger", "ces-ppo", "mapping-exact"} <= names
    assert all(e._info is None for e in fresh.values())  # nothing loaded by listing
    info = registry.get("random")
    assert info.name == "random" and callable(info.fn)
    assert fresh["random"]._info is info and fresh["placement-exact"]._info is None


def test_a_solver_whose_module_fails_to_import_says_why(monkeypatch):
    """Issue 44 case 6: never "unknown solver" for a solver that exists but cannot load."""
    record = {**registry._CATALOGUE["placement-exact"].record, "module": "edgebench_no_such_module_xyz"}
    monkeypatch.setitem(registry._CATALOGUE, "placement-exact", registry.CatalogueEntry(record))
    monkeypatch.delitem(registry._REGISTRY, "placement-exact", raising=False)
    monkeypatch.setattr(registry, "LOAD_ERRORS", {})
    with pytest.raises(registry.SolverLoadError) as err:
        registry.get("placement-exact")
    assert str(err.value).startswith("placement-exact: could not load: ModuleNotFoundError")
    assert "unknown solver" not in str(err.value)
    assert "edgebench_no_such_module_xyz" in registry.LOAD_ERRORS
    assert "placement-exact" in {s.name for s in registry.solvers()}  # still listed


def test_a_plugin_cannot_take_a_built_in_name():
    with pytest.raises(ValueError, match="registered twice"):
        registry.register("random", families=("mapping",), kind="heuristic")(lambda instance, **kw: None)


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
