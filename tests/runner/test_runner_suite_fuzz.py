"""Property-based fuzz of the suite reader (issue 18, item 5): random and mutated TOML suites
are either planned or refused with one InputError naming the file — never a traceback.

Bounded to a few seconds: a fixed number of examples, no deadline, no example database."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from edgebench.errors import InputError
from edgebench.runner import suite as S

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "tests" / "data" / "good"

VALID = f"""
name = "fuzz"
seeds = [0, 1]
time_limit = 5
kill_grace = 1.0
memory_limit_mb = 2048
threads = 1
workers = 2

[[instances]]
files = ["{GOOD / 'offloading_tiny.json'}"]

[[solvers]]
name = "heft"

[[solvers]]
name = "offloading-milp"
params = {{ backend = "ortools-cbc", threads = 1, mip_gap = 0.01 }}
time_limit = {{ by_size = [[0, 2], [10, 4]] }}

[[solvers]]
kind = "metaheuristic"
params = {{ max_evaluations = 50 }}
seeds = [3]
"""

SETTINGS = settings(max_examples=60, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2 ** 70), max_value=2 ** 70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(["heft", "random", "exact", "auto", "nosuch", "by_size", "default", "placement", "", "0"]),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(
        ["name", "kind", "params", "time_limit", "by_size", "seeds", "backend", "threads", "set", "files", "dir",
         "label", "exclude", "families", "default", "exact", "x"]), inner, max_size=4)), max_leaves=12)

DELETE = object()  # a mutation that removes the key
PATHS = [("name",), ("seeds",), ("time_limit",), ("kill_grace",), ("memory_limit_mb",), ("threads",), ("workers",),
         ("plugins",), ("instances",), ("solvers",), ("instances", 0), ("instances", 0, "files"),
         ("solvers", 0), ("solvers", 0, "name"), ("solvers", 1, "params"), ("solvers", 1, "params", "backend"),
         ("solvers", 1, "params", "threads"), ("solvers", 1, "params", "mip_gap"), ("solvers", 1, "time_limit"),
         ("solvers", 2, "kind"), ("solvers", 2, "seeds"), ("solvers", 2, "params", "max_evaluations"),
         ("description",), ("extra",)]


def _check(text_or_data, tmp_path: Path) -> None:
    """Read and plan; anything but success or one InputError fails the test."""
    try:
        if isinstance(text_or_data, str):
            p = tmp_path / "fuzz.toml"
            p.write_text(text_or_data, encoding="utf-8", errors="surrogatepass")
            suite, file = S.load_suite(p), str(p)
        else:
            suite, file = S.suite_from_dict(text_or_data, "fuzz.toml"), "fuzz.toml"
        S.plan(suite, file=file, base_dir=tmp_path)
    except InputError as err:
        line = str(err)
        assert "\n" not in line and err.reason
        assert err.file is not None


def _set(data, path, value):
    node = data
    for k in path[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(k, {}) if not isinstance(k, int) else node
        elif isinstance(node, list) and isinstance(k, int) and k < len(node):
            node = node[k]
        else:
            return data
    last = path[-1]
    if value is DELETE:
        if isinstance(node, dict):
            node.pop(last, None)
        return data
    if isinstance(node, dict) and not isinstance(last, int):
        node[last] = value
    elif isinstance(node, list) and isinstance(last, int) and last < len(node):
        node[last] = value
    return data


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(PATHS), st.one_of(st.just(DELETE), values)), min_size=1, max_size=3))
@example([(("time_limit",), DELETE)])          # the cases, always tried
@example([(("kill_grace",), math.nan)])
@example([(("solvers", 1, "params", "backend"), "nosuch")])
def test_mutated_suite_values_plan_or_fail_with_one_line(tmp_path, edits):
    data = tomllib.loads(VALID)
    for path, value in edits:
        _set(data, path, value)
    _check(data, tmp_path)


CHUNKS = ["nan", "inf", "-1", "1e400", "99999999999999999999", "\"", "[", "]", "{", "}", "=", "\n", "#", "1979-05-27",
          "true", "[[solvers]]\n", "\x00", "é", "0x10", "-0.0", "time_limit = 5\n"]
TL_AT = VALID.index("time_limit = 5\n")
KG_AT = VALID.index("1.0", VALID.index("kill_grace"))


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, len(VALID)), st.sampled_from(["insert", "delete", "replace"]),
                          st.sampled_from(CHUNKS)), min_size=1, max_size=4))
@example([(TL_AT, "delete", "time_limit = 5\n")])   # the cases, always tried
@example([(KG_AT, "replace", "nan")])
def test_mutated_suite_text_plans_or_fails_with_one_line(tmp_path, edits):
    text = VALID
    for i, op, chunk in edits:
        i = min(i, len(text))
        if op == "insert":
            text = text[:i] + chunk + text[i:]
        elif op == "delete":
            text = text[:i] + text[i + len(chunk):]
        else:
            text = text[:i] + chunk + text[i + len(chunk):]
    _check(text, tmp_path)


@pytest.mark.parametrize("field,value,reason", [
    ("kill_grace", math.nan, "finite"),
    ("time_limit", math.inf, "finite"),
    ("memory_limit_mb", 10 ** 30, "less than or equal"),
    ("workers", 10 ** 9, "less than or equal"),
    ("seeds", [2 ** 64], "less than or equal"),
])
def test_out_of_range_suite_fields_name_the_field(field, value, reason):
    data = tomllib.loads(VALID)
    data[field] = value
    with pytest.raises(InputError) as ei:
        S.suite_from_dict(data, "fuzz.toml")
    assert ei.value.field.startswith(field) and reason in ei.value.reason


def test_suite_without_time_limit_uses_the_default(tmp_path):
    """Was an AttributeError in plan (also with --dry-run)."""
    data = tomllib.loads(VALID)
    del data["time_limit"]
    p = S.plan(S.suite_from_dict(data, "fuzz.toml"), file="fuzz.toml")
    assert {r.time_limit for r in p.runs if r.solver == "heft"} == {60.0}
    assert {r.solver for r in p.runs} >= {"heft", "offloading-milp", "ga", "pso"}  # the fuzz's seed plans


def test_cli_dry_run_of_suites_missing_time_limit_or_with_nan(tmp_path, capsys):
    """The issue's two suite cases through ``edgebench run --dry-run``: the first plans (60 s),
    the second is one line naming the field, exit 2."""
    from edgebench.cli import main

    base = f'name = "t"\n[[instances]]\nfiles = ["{GOOD / "offloading_tiny.json"}"]\n[[solvers]]\nname = "heft"\n'
    ok = tmp_path / "no_tl.toml"
    ok.write_text(base)
    assert main(["run", str(ok), "--dry-run", "--db", str(tmp_path / "r.sqlite")]) == 0
    assert "60" in capsys.readouterr().out
    bad = tmp_path / "nan.toml"
    bad.write_text("kill_grace = nan\n" + base)
    assert main(["run", str(bad), "--dry-run", "--db", str(tmp_path / "r.sqlite")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"edgebench: error: {bad}: kill_grace: must be a finite number, got nan"]
