"""Embedded instance sets: load, match their manifests, and regenerate byte for byte."""

import pytest

from edgebench.instances import sets
from edgebench.instances.io import content_hash


def test_every_recipe_is_shipped_and_every_shipped_set_has_a_recipe():
    assert set(sets.list_sets()) == set(sets.RECIPES)


@pytest.mark.parametrize("name", sorted(sets.RECIPES))
def test_set_loads_and_matches_manifest(name):
    manifest = sets.read_manifest(name)
    assert manifest["name"] == name and name.endswith("-v1")
    insts = sets.load_set(name)
    assert len(insts) == len(manifest["instances"]) > 0
    for inst, entry in zip(insts, manifest["instances"]):
        assert inst.family == manifest["family"]
        assert inst.id == entry["id"] and content_hash(inst) == entry["hash"]
        assert set(entry["best_known"]) >= {"objective", "bound", "solver", "date"}


@pytest.mark.parametrize("name", sorted(sets.RECIPES))
def test_set_regenerates_byte_identically(tmp_path, name):
    sets.build_set(name, out_dir=tmp_path)
    shipped = sets.DATA_DIR / name
    for entry in sets.read_manifest(name)["instances"]:
        assert (tmp_path / name / entry["file"]).read_bytes() == (shipped / entry["file"]).read_bytes()


def test_ids_are_unique_across_sets():
    ids = [e["id"] for name in sets.list_sets() for e in sets.read_manifest(name)["instances"]]
    assert len(ids) == len(set(ids))


def test_unknown_set_is_an_input_error():
    from edgebench.errors import InputError

    with pytest.raises(InputError, match="unknown instance set"):
        sets.read_manifest("placement-nothing-v9")
