"""The validation boundary: round trips, gzip, atomic writes, and a fuzz test of the loader
(arbitrary JSON and mutated valid instances either load or raise InputError — nothing else)."""

from __future__ import annotations

import copy
import gzip
import json
import math
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.model import Instance
from edgebench.solution import Solution

GOOD = Path(__file__).resolve().parents[1] / "data" / "good"
TINY = ["placement_tiny", "mapping_tiny", "offloading_tiny"]


def _good(name: str) -> Path:
    return GOOD / f"{name}.json"


# --------------------------------------------------------------------------------------
# round trips
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TINY)
def test_round_trip_json(tmp_path, name):
    inst = io.load_instance(_good(name))
    out = io.write_json(tmp_path / "copy.json", inst)
    again = io.load_instance(out)
    assert again == inst
    assert io.content_hash(again) == io.content_hash(inst) == inst.content_hash()
    # the on-disk form is stable: writing the reloaded model gives the same bytes
    out2 = io.write_json(tmp_path / "copy2.json", again)
    assert out.read_bytes() == out2.read_bytes()
    assert out.read_bytes() == _good(name).read_bytes()


@pytest.mark.parametrize("name", TINY)
def test_round_trip_gzip(tmp_path, name):
    inst = io.load_instance(_good(name))
    out = io.write_json(tmp_path / "copy.json.gz", inst)
    raw = out.read_bytes()
    assert raw[:2] == b"\x1f\x8b", "a .json.gz target is written gzip-compressed"
    assert json.loads(gzip.decompress(raw)) == json.loads(_good(name).read_text())
    again = io.load_instance(out)
    assert again == inst and io.content_hash(again) == io.content_hash(inst)
    # byte-stable gzip (mtime 0, no file name in the header)
    assert io.write_json(tmp_path / "other.json.gz", inst).read_bytes() == raw


def test_gzip_detected_by_magic_not_suffix(tmp_path):
    data = gzip.compress(_good("mapping_tiny").read_bytes())
    p = tmp_path / "compressed-but-named.json"
    p.write_bytes(data)
    assert io.load_instance(p) == io.load_instance(_good("mapping_tiny"))


@pytest.mark.parametrize("name", TINY)
def test_solution_round_trip(tmp_path, name):
    inst = io.load_instance(_good(name))
    sol = io.load_solution(GOOD / f"{name}.random.json", inst)
    out = io.write_json(tmp_path / "sol.json.gz", sol)
    again = io.load_solution(out, inst)
    assert isinstance(again, Solution) and again == sol
    assert again.instance_hash == io.content_hash(inst)


def test_solution_for_another_instance_is_an_input_error():
    mapping = io.load_instance(_good("mapping_tiny"))
    with pytest.raises(InputError) as exc:
        io.load_solution(GOOD / "placement_tiny.random.json", mapping)
    assert exc.value.field == "family"
    other = GOOD.parent / "bad" / "other_instance_solution.json"
    with pytest.raises(InputError) as exc:
        io.load_solution(other, mapping)
    assert exc.value.field == "instance_hash" and exc.value.file == str(other)


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError) as exc:
        io.load_instance(tmp_path / "nope.json")
    assert "cannot read file" in exc.value.reason


# --------------------------------------------------------------------------------------
# atomic writes
# --------------------------------------------------------------------------------------


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_atomic_write_leaves_no_temp_file(tmp_path):
    inst = io.load_instance(_good("placement_tiny"))
    io.write_json(tmp_path / "a.json", inst)
    io.write_json(tmp_path / "a.json", inst)  # overwrite in place
    io.write_json(tmp_path / "sub" / "b.json.gz", inst)  # parent folders are created
    assert _listing(tmp_path) == ["a.json", "sub"]
    assert _listing(tmp_path / "sub") == ["b.json.gz"]


def test_atomic_write_failure_leaves_no_target_and_no_temp(tmp_path, monkeypatch):
    inst = io.load_instance(_good("placement_tiny"))

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError):
        io.write_json(tmp_path / "out.json", inst)
    assert _listing(tmp_path) == []


def test_atomic_write_failure_keeps_the_old_file(tmp_path, monkeypatch):
    inst = io.load_instance(_good("mapping_tiny"))
    target = tmp_path / "out.json"
    target.write_text("old content\n")

    def broken_replace(src, dst):
        raise OSError(5, "I/O error")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        io.write_json(target, inst)
    assert target.read_text() == "old content\n"
    assert _listing(tmp_path) == ["out.json"]


def test_unserialisable_data_writes_nothing(tmp_path):
    with pytest.raises(ValueError):
        io.write_json(tmp_path / "nan.json", {"x": math.nan})
    assert _listing(tmp_path) == []


# --------------------------------------------------------------------------------------
# fuzz: the loader never fails with anything but InputError
# --------------------------------------------------------------------------------------

FAMILIES = ("placement", "mapping", "offloading")

json_scalars = (st.none() | st.booleans() | st.integers(min_value=-(10 ** 6), max_value=10 ** 6)
                | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8))
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=16,
)

BASES = {name: json.loads(_good(name).read_text()) for name in TINY}


def _load_or_input_error(data):
    try:
        inst = io.instance_from_dict(data, file="fuzz.json")
    except InputError as err:
        assert err.file == "fuzz.json"
        assert isinstance(err.reason, str) and err.reason
        assert "\n" not in err.line()
        return None
    assert isinstance(inst, Instance)
    return inst


FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(json_values)
def test_fuzz_arbitrary_json(value):
    _load_or_input_error(value)


@FUZZ
@given(st.sampled_from(FAMILIES), st.dictionaries(st.sampled_from(
    ["id", "name", "meta", "placement", "mapping", "offloading", "extra"]), json_values, max_size=5))
def test_fuzz_envelope(family, rest):
    _load_or_input_error({"format_version": 1, "family": family, **rest})


def _paths(node, prefix=()):
    """Every path (tuple of keys / indices) into a JSON tree, the root excluded."""
    out = []
    if isinstance(node, dict):
        for k, v in node.items():
            out.append(prefix + (k,))
            out.extend(_paths(v, prefix + (k,)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.append(prefix + (i,))
            out.extend(_paths(v, prefix + (i,)))
    return out


def _retype(value):
    """The same information in another JSON type."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return str(value) if value % 2 else float(value) + 0.5
    if isinstance(value, float):
        return [value]
    if isinstance(value, str):
        return {"value": value}
    if isinstance(value, list):
        return {str(i): v for i, v in enumerate(value)}
    if isinstance(value, dict):
        return list(value.values())
    return 0


@st.composite
def mutated_instances(draw):
    data = copy.deepcopy(BASES[draw(st.sampled_from(TINY))])
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = _paths(data)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        last = path[-1]
        op = draw(st.sampled_from(["drop", "replace", "retype", "negate", "duplicate"]))
        if op == "drop":
            del parent[last]
        elif op == "replace":
            parent[last] = draw(json_values)
        elif op == "retype":
            parent[last] = _retype(parent[last])
        elif op == "negate":
            v = parent[last]
            parent[last] = -v if isinstance(v, (int, float)) and not isinstance(v, bool) else draw(json_scalars)
        elif op == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))
        else:
            parent[f"{last}_extra"] = copy.deepcopy(parent[last])
    return data


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_instances())
def test_fuzz_mutated_instances(data):
    inst = _load_or_input_error(data)
    if inst is not None:  # what loads also writes and reloads identically
        again = io.instance_from_dict(json.loads(io.dump_json_text(inst)))
        assert again == inst and io.content_hash(again) == io.content_hash(inst)


@settings(max_examples=80, deadline=None)
@given(st.binary(max_size=64) | st.text(max_size=64).map(lambda s: s.encode("utf-8")),
       st.sampled_from([".json", ".json.gz"]), st.booleans())
def test_fuzz_file_bytes(raw, suffix, compress):
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / f"fuzz{suffix}"
        p.write_bytes(gzip.compress(raw) if compress else raw)
        try:
            io.load_instance(p)
        except InputError as err:
            assert err.file == str(p)


def test_atomic_target_gives_each_writer_its_own_temp_file(tmp_path):
    """Two writers of the same file (two runs writing one report folder) get distinct temp
    files: the later rename wins whole, neither fails on the other's temp file; a failing
    writer leaves the target as it was and no temp file behind."""
    target = tmp_path / "plot.png"
    with io.atomic_target(target) as a, io.atomic_target(target) as b:
        assert a != b and a.parent == b.parent == tmp_path
        a.write_text("first")
        b.write_text("second")
    assert target.read_text() == "first"  # the outer context replaces last
    try:
        with io.atomic_target(target) as c:
            c.write_text("half")
            raise OSError(28, "No space left on device")
    except OSError:
        pass
    assert target.read_text() == "first" and sorted(p.name for p in tmp_path.iterdir()) == ["plot.png"]
