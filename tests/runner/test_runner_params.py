"""One parameter check (issue 17 item 5, issue 18 item 3): bad solver parameters are one
InputError naming the field — in ``edgebench solve``, in suites (every entry, before any run,
also under ``--dry-run``) and in the Python API; default time limits; the proven rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgebench import registry
from edgebench.cli import main
from edgebench.errors import InputError
from edgebench.instances.io import load_instance
from edgebench.runner import suite as S
from edgebench.runner.execute import make_row

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "tests" / "data" / "good"
TINY = GOOD / "offloading_tiny.json"

BAD = [
    ("offloading-milp", "backend", '"nosuch"', "nosuch", "must be one of"),
    ("offloading-milp", "threads", "-1", -1, "must be >= 1"),
    ("offloading-milp", "mip_gap", '"abc"', "abc", "valid number"),
    ("offloading-cpsat", "edge_form", '"sideways"', "sideways", "must be one of"),
    ("ga", "population", "1", 1, "[2, 1000000]"),
    ("random", "attempts", "0", 0, ">= 1"),
    ("heft", "colour", "1", 1, "unknown parameter"),
]
#: the cases that reached the solver before (a solver error, not an input error)
EXACT_BAD = BAD[:4]


def one_line_error(capsys, *argv: str) -> str:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("edgebench: error: "), err
    return lines[0]


@pytest.mark.parametrize("solver,name,toml,value,reason", BAD)
def test_suite_parameters_are_checked_before_any_run_even_dry(tmp_path, capsys, solver, name, toml, value, reason):
    suite = tmp_path / "s.toml"
    suite.write_text(f'name = "p"\ntime_limit = 1\n[[instances]]\nfiles = ["{TINY}"]\n'
                     f'[[solvers]]\nname = "heft"\n[[solvers]]\nname = "{solver}"\nparams = {{ {name} = {toml} }}\n')
    line = one_line_error(capsys, "run", str(suite), "--dry-run", "--db", str(tmp_path / "r.sqlite"))
    assert f"{suite}: solvers[1].params.{name}: " in line and reason in line
    assert not (tmp_path / "r.sqlite").exists()


def test_kind_entries_check_every_solver_they_select(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text(f'name = "p"\n[[instances]]\nfiles = ["{TINY}"]\n'
                     f'[[solvers]]\nkind = "exact"\nparams = {{ threads = 0 }}\n')
    with pytest.raises(InputError) as ei:
        S.plan(S.load_suite(suite), file=str(suite))
    assert ei.value.field == "solvers[0].params.threads" and ">= 1" in ei.value.reason


@pytest.mark.parametrize("solver,name,toml,value,reason", EXACT_BAD)
def test_solve_cli_bad_parameter_is_one_line(tmp_path, capsys, solver, name, toml, value, reason):
    out = tmp_path / "sol.json"
    line = one_line_error(capsys, "solve", str(TINY), "--solver", solver, "--param", f"{name}={toml}", "-o", str(out))
    assert f"<command line>: params.{name}: " in line and reason in line
    assert not out.exists()


@pytest.mark.parametrize("solver,name,toml,value,reason", EXACT_BAD)
def test_python_api_bad_parameter_is_an_input_error(solver, name, toml, value, reason):
    inst = load_instance(TINY)
    with pytest.raises(InputError) as ei:
        registry.solve(inst, solver, **{name: value})
    assert ei.value.field == f"params.{name}" and reason in ei.value.reason


@pytest.mark.parametrize("kw,field", [({"time_limit": -5}, "time_limit"), ({"time_limit": float("nan")}, "time_limit")])
def test_python_api_bad_time_limit(kw, field):
    with pytest.raises(InputError) as ei:
        registry.solve(load_instance(TINY), "heft", **kw)
    assert ei.value.field == field


def test_declared_types_choices_and_bounds_accept_good_values():
    registry.check_params("placement-milp", {"window": "auto", "threads": 2, "mip_gap": 0.0})
    registry.check_params("placement-milp", {"window": 12})
    with pytest.raises(InputError, match="'auto' or 'full'"):
        registry.check_params("placement-milp", {"window": "wide"})
    registry.check_params("offloading-cpsat", {"time_scale": "auto", "horizon": 3.5, "cpsat_params": {"a": 1}})
    registry.check_params("mapping-exact", {"objective": "L", "backend": "bnb", "exact": False})


@pytest.fixture
def probe():
    seen = {}

    @registry.register("test-probe-exact", families=("offloading",), kind="exact")
    def solve(instance, *, time_limit=None, seed=0):
        seen["time_limit"] = time_limit
        return registry.get("heft").fn(instance, seed=seed)

    yield seen
    registry._REGISTRY.pop("test-probe-exact", None)


def test_exact_solvers_get_the_documented_default_time_limit(probe):
    assert registry.get("offloading-milp").default_time_limit == registry.DEFAULT_TIME_LIMITS["exact"] == 300.0
    assert registry.get("heft").default_time_limit is None
    # metaheuristics stop at their evaluation budget, not at a clock: same seed, same result anywhere
    assert registry.get("ga").default_time_limit is None and registry.get("pso").default_time_limit is None
    registry.solve(load_instance(TINY), "test-probe-exact")
    assert probe["time_limit"] == 300.0
    registry.solve(load_instance(TINY), "test-probe-exact", time_limit=2)
    assert probe["time_limit"] == 2.0


def test_solve_cli_prints_the_default_time_limit(tmp_path, capsys, probe):
    rc = main(["solve", str(TINY), "--solver", "test-probe-exact", "-o", str(tmp_path / "s.json")])
    out, _ = capsys.readouterr()
    assert rc == 0 and "time limit 300 s" in out and probe["time_limit"] == 300.0


# ---- the proven rule ------------------------------------------------------------------


def _spec(kind: str, proves: bool):
    p = S.plan(S.suite_from_dict({"name": "x", "instances": [{"files": [str(TINY)]}],
                                  "solvers": [{"name": "heft"}]}), file="x")
    import dataclasses

    return dataclasses.replace(p.runs[0], kind=kind, proves=proves)


@pytest.mark.parametrize("kind,proves,bound,expect,proven", [
    ("heuristic", False, 2.0, "feasible", 0),   # a heuristic cannot prove
    ("exact", True, 1.9, "feasible", 0),        # the bound does not match the referee's value
    ("exact", True, None, "feasible", 0),       # no bound
    ("exact", True, 2.0, "optimal", 1),
])
def test_optimal_counts_only_when_proven(kind, proves, bound, expect, proven):
    res = {"status": "optimal", "feasible": 1, "units_ok": 1, "primary_value": 2.0, "reported_objective": 2.0,
           "bound": bound}
    row = make_row(_spec(kind, proves), res, sweep=None, suite=None)
    assert (row["status"], row["proven"]) == (expect, proven)
    assert row["claimed_status"] == (None if expect == "optimal" else "optimal")
