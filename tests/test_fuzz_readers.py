"""Property-based fuzzing (Hypothesis) of the instance reader, the solution reader and the CLI
(``validate``, ``info``, ``evaluate``, ``solve --solver random``) with mutated files.

Every example starts from a valid file (the tiny instances and solutions of tests/data/good)
and mutates it: values made huge, negative, NaN, infinite, of a wrong type, deleted keys,
nested junk, a key given twice, truncated bytes. The property: the reader returns a valid
model or raises InputError with a one-line message; the CLI exits 0, or exits 2 with one
``edgebench: error: <file>: <field>: <reason>`` line on stderr, no traceback and no output
file. Bounded (max_examples, no deadline, derandomized: the same examples every run) to stay
within a few seconds per test; ``EDGEBENCH_FUZZ_EXAMPLES=2000`` runs a longer random hunt.
"""

from __future__ import annotations

import contextlib
import copy
import io as _io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgebench.cli import main
from edgebench.errors import InputError
from edgebench.instances import io

GOOD = Path(__file__).resolve().parent / "data" / "good"
FAMILIES = ("placement", "mapping", "offloading")
INSTANCES = {f: json.loads((GOOD / f"{f}_tiny.json").read_text()) for f in FAMILIES}
SOLUTIONS = {f: json.loads((GOOD / f"{f}_tiny.random.json").read_text()) for f in FAMILIES}
#: EDGEBENCH_FUZZ_EXAMPLES=N runs N random (not derandomized) examples per test: a longer hunt
_HUNT = int(os.environ.get("EDGEBENCH_FUZZ_EXAMPLES", "0"))
FUZZ = settings(max_examples=_HUNT or 60, deadline=None, derandomize=not _HUNT,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CLI_EXAMPLES = _HUNT or 40


def _nested(depth: int) -> Any:
    out: Any = []
    for _ in range(depth):
        out = [out]
    return out


#: replacement values: huge, negative, non-finite, wrong types, nested junk
VALUES = st.one_of(
    st.sampled_from([10**6, 10**9, 10**12, 10**18, 10**30, 10**400, 2**63, -1, -(10**30), 0, 1e300, -1e300, 1e-300,
                     5e-324, float("nan"), float("inf"), float("-inf"), "", "16", "x" * 100, True, False, None,
                     [], {}, [1, 2], {"a": 1}]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.integers(min_value=1, max_value=500).map(_nested),
)


def _slots(tree: Any, out: list, parent: Any = None, key: Any = None) -> list:
    """Every (container, key) in the tree, the root as (None, None)."""
    out.append((parent, key))
    if isinstance(tree, dict):
        for k, v in tree.items():
            _slots(v, out, tree, k)
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            _slots(v, out, tree, i)
    return out


@st.composite
def mutated(draw, base: dict) -> bytes:
    """The bytes of ``base`` after 1-3 mutations of its values, then maybe of its text."""
    tree = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        slots = _slots(tree, [])[1:]
        parent, key = draw(st.sampled_from(slots))
        op = draw(st.sampled_from(["replace", "replace", "replace", "delete", "wrap"]))
        if op == "delete":
            del parent[key]
        elif op == "wrap":
            parent[key] = [parent[key]] if draw(st.booleans()) else {"x": parent[key]}
        else:
            parent[key] = copy.deepcopy(draw(VALUES))  # the sampled constants must stay unchanged
    text = json.dumps(tree, allow_nan=True)  # NaN / Infinity tokens are not JSON: must be refused
    tail = draw(st.sampled_from(["none", "none", "truncate", "duplicate", "garbage", "deep"]))
    if tail == "truncate":
        text = text[: draw(st.integers(0, max(len(text) - 1, 0)))]
    elif tail == "duplicate":  # give the first key of the top object twice
        first = next(iter(tree), None) if isinstance(tree, dict) else None
        if first is not None:
            text = "{" + json.dumps(first) + ": null, " + text[1:]
    elif tail == "deep":  # beyond the interpreter's recursion limit
        depth = draw(st.integers(900, 5000))
        text = "[" * depth + text + "]" * depth
    elif tail == "garbage":
        text += draw(st.sampled_from(["}", "]", "x", "\x00", "{}", "\""]))
    return text.encode("utf-8", "surrogatepass")


def _read(raw: bytes, kind: str, family: str):
    """Reader under test: InputError (one line) or a model."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    try:
        data = io.parse_json(text, file="f.json")
        if kind == "instance":
            return io.instance_from_dict(data, file="f.json")
        return io.solution_from_dict(data, file="f.json")
    except InputError as err:
        assert "\n" not in err.line() and err.line().startswith("f.json: "), err.line()
        return None


@FUZZ
@given(data=st.data())
def test_instance_reader_never_raises_anything_but_input_error(data):
    family = data.draw(st.sampled_from(FAMILIES))
    _read(data.draw(mutated(INSTANCES[family])), "instance", family)


@FUZZ
@given(data=st.data())
def test_solution_reader_never_raises_anything_but_input_error(data):
    family = data.draw(st.sampled_from(FAMILIES))
    _read(data.draw(mutated(SOLUTIONS[family])), "solution", family)


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = _io.StringIO(), _io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(args))
    return rc, out.getvalue(), err.getvalue()


def _assert_clean(rc: int, err: str, path: Path) -> None:
    assert rc in (0, 2), (rc, err)
    assert "Traceback" not in err
    if rc == 2:
        assert err.count("\n") == 1 and err.startswith("edgebench: error: "), err
    else:
        assert err == "", err


@settings(FUZZ, max_examples=CLI_EXAMPLES)
@given(data=st.data())
def test_cli_validate_info_solve_on_mutated_instances(data):
    family = data.draw(st.sampled_from(FAMILIES))
    raw = data.draw(mutated(INSTANCES[family]))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "instance.json"
        path.write_bytes(raw)
        rc, out, err = _cli("validate", str(path))
        _assert_clean(rc, err, path)
        valid = rc == 0
        rc, _, err = _cli("info", str(path))
        _assert_clean(rc, err, path)
        assert (rc == 0) == valid
        target = Path(tmp) / "out" / "solution.json"
        rc, _, err = _cli("solve", str(path), "--solver", "random", "--time-limit", "5", "-o", str(target))
        _assert_clean(rc, err, path)
        assert target.exists() == (rc == 0)
        if not valid:
            assert rc == 2 and str(path) in err
            assert sorted(p.name for p in Path(tmp).iterdir()) == ["instance.json"]


@settings(FUZZ, max_examples=CLI_EXAMPLES)
@given(data=st.data())
def test_cli_evaluate_on_mutated_solutions(data):
    family = data.draw(st.sampled_from(FAMILIES))
    raw = data.draw(mutated(SOLUTIONS[family]))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "solution.json"
        path.write_bytes(raw)
        rc, out, err = _cli("evaluate", str(GOOD / f"{family}_tiny.json"), str(path))
        _assert_clean(rc, err, path)
        if rc == 0:
            assert "feasible" in json.loads(out)
        rc, _, err = _cli("validate", str(path))
        _assert_clean(rc, err, path)
