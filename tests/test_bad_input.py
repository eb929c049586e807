"""Bad input: one file per rule in tests/data/bad/. Each is rejected by the CLI with exit
code 2 and exactly one stderr line that names the file, the field path and the reason —
never a traceback — and no output file is written when -o was given."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from edgebench.cli import main

ROOT = Path(__file__).resolve().parents[1]
BAD = ROOT / "tests" / "data" / "bad"
GOOD = ROOT / "tests" / "data" / "good"
SCRIPT = Path(sys.executable).parent / "edgebench"

#: file -> (field path, a piece of the reason)
BAD_INSTANCES = {
    "malformed.json": ("<root>", "malformed JSON"),
    "not_gzip.json.gz": ("<root>", "malformed gzip: not a gzip stream"),
    "truncated.json.gz": ("<root>", "malformed gzip"),
    "unknown_family.json": ("family", "unknown family 'scheduling'"),
    "unknown_field.json": ("placement.clusters[1].colour", "unknown field"),
    "wrong_type.json": ("placement.clusters[0].capacity.cpu", "valid integer"),
    "negative_capacity.json": ("placement.clusters[1].capacity.gpu", "greater than 0"),
    "zero_capacity.json": ("mapping.nodes[2].cpu", "greater than 0"),
    "minimum_fits_nowhere.json": ("placement.tasks[1].minimum", "fits no eligible cluster"),
    "dangling_mapping_link.json": ("mapping.links[3].dst", "physical node 7 does not exist"),
    "dangling_eligible.json": ("placement.tasks[2].eligible[1]", "cluster 5 does not exist"),
    "cyclic_workflow.json": ("offloading.workflows[0].edges", "cyclic"),
    # issue 18: numbers that size memory or time are bounded (docs/instance-format.md, "Limits")
    "arrival_1e12.json": ("placement.tasks[0].arrival", "less than or equal to 1000000"),
    "arrival_1e300_mapping.json": ("mapping.jobs[0].arrival", "less than or equal to 10000000"),
    "arrival_1e300_offloading.json": ("offloading.workflows[0].arrival", "less than or equal to 10000000"),
    "capacity_1e6.json": ("placement.clusters[0].capacity.gpu", "less than or equal to 1024"),
    # a duration that vanishes next to a time of 1e7 stalled the offloading simulator ("policy stalled")
    "exec_time_below_resolution.json": ("offloading.workflows[0].tasks[0].functions[0].exec_time",
                                        "must be 0 or at least 1e-06"),
    "derived_time_above_limit.json": ("offloading.workflows[0].tasks[0].functions",
                                      "the task's execution takes up to 5e+08 s"),
    # a task whose progress stops short of 1 (curvature < 1, base 0) would stall every simulator
    "task_never_finishes.json": ("placement.tasks[0].type", "the task may need forever"),
    # issue 18: JSON nested beyond the recursion limit, or beyond MAX_JSON_DEPTH inside meta
    "deeply_nested.json": ("<root>", "nested deeper than 64 levels"),
    "nested_meta.json": (("meta.junk" + "[0]" * 63)[:60] + "...", "nested deeper than 64 levels"),
    # issue 18: a key given twice in one object (the last used to win silently)
    "duplicate_key.json": ("family", "duplicate key 'family'"),
    "duplicate_nested_key.json": ("placement.clusters[0].capacity.cpu", "duplicate key 'cpu'"),
}

#: solutions of tests/data/good/placement_tiny.json: file -> (field path, a piece of the reason)
BAD_SOLUTIONS = {
    "start_1e18.solution.json": ("placement.tasks[0].start", "less than or equal to 1000000000"),
    "alloc_1e30.solution.json": ("placement.tasks[1].cpu", "less than or equal to 1024"),
    "cluster_1e30.solution.json": ("placement.tasks[2].cluster", "less than 10000"),
    "duplicate_key.solution.json": ("status", "duplicate key 'status'"),
}


def call(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_error_line(err: str, file: str, field: str, reason: str) -> None:
    assert err.endswith("\n") and err.count("\n") == 1, f"expected exactly one stderr line, got {err!r}"
    assert "Traceback" not in err
    assert err.startswith(f"edgebench: error: {file}: {field}: "), err
    assert reason in err, err


def test_every_bad_file_has_a_test():
    assert sorted(p.name for p in BAD.iterdir()) == sorted([*BAD_INSTANCES, *BAD_SOLUTIONS,
                                                            "other_instance_solution.json"])


@pytest.mark.parametrize("name", sorted(BAD_SOLUTIONS))
def test_evaluate_and_validate_reject_bad_solutions(capsys, name):
    """Values that made the referee raise (ValueError for a start of 10**18, OverflowError for an
    allocation of 10**30) are refused at the boundary; duplicate keys too."""
    field, reason = BAD_SOLUTIONS[name]
    path = str(BAD / name)
    rc, out, err = call(capsys, "evaluate", str(GOOD / "placement_tiny.json"), path)
    assert rc == 2 and out == ""
    assert_one_error_line(err, path, field, reason)
    rc, out, err = call(capsys, "validate", path)
    assert rc == 2 and out == ""
    assert_one_error_line(err, path, field, reason)


@pytest.mark.parametrize("name", sorted(BAD_INSTANCES))
def test_validate_rejects(capsys, name):
    field, reason = BAD_INSTANCES[name]
    path = str(BAD / name)
    rc, out, err = call(capsys, "validate", path)
    assert rc == 2
    assert out == ""
    assert_one_error_line(err, path, field, reason)


@pytest.mark.parametrize("name", sorted(BAD_INSTANCES))
def test_solve_rejects_and_writes_nothing(capsys, tmp_path, name):
    field, reason = BAD_INSTANCES[name]
    path = str(BAD / name)
    target = tmp_path / "out" / "solution.json"
    rc, out, err = call(capsys, "solve", path, "--solver", "random", "-o", str(target))
    assert rc == 2 and out == ""
    assert_one_error_line(err, path, field, reason)
    assert not target.exists() and not target.parent.exists()


@pytest.mark.parametrize("name", ["malformed.json", "truncated.json.gz", "cyclic_workflow.json"])
def test_info_and_evaluate_reject(capsys, name):
    field, reason = BAD_INSTANCES[name]
    path = str(BAD / name)
    rc, _, err = call(capsys, "info", path)
    assert rc == 2
    assert_one_error_line(err, path, field, reason)
    rc, _, err = call(capsys, "evaluate", path, str(GOOD / "placement_tiny.random.json"))
    assert rc == 2
    assert_one_error_line(err, path, field, reason)


@pytest.mark.parametrize("name", ["malformed.json", "not_gzip.json.gz", "unknown_field.json"])
def test_installed_script_prints_no_traceback(name):
    """Through the real entry point, in a subprocess."""
    field, reason = BAD_INSTANCES[name]
    path = str(BAD / name)
    exe = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "edgebench"]
    proc = subprocess.run(exe + ["validate", path], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert_one_error_line(proc.stderr, path, field, reason)


# --------------------------------------------------------------------------------------
# a solution for another instance
# --------------------------------------------------------------------------------------


def test_solution_for_another_instance(capsys):
    sol = str(BAD / "other_instance_solution.json")
    # on its own the file is a valid solution ...
    rc, out, _ = call(capsys, "validate", sol)
    assert rc == 0 and out.startswith("OK ")
    # ... but it was made for another instance than mapping_tiny: evaluate refuses it
    rc, out, err = call(capsys, "evaluate", str(GOOD / "mapping_tiny.json"), sol)
    assert rc == 2 and out == ""
    assert_one_error_line(err, sol, "instance_hash", "solution was made for another instance")
    rc, out, err = call(capsys, "validate", "--instance", str(GOOD / "mapping_tiny.json"), sol)
    assert rc == 2
    assert_one_error_line(err, sol, "instance_hash", "another instance")


def test_solution_for_another_family(capsys):
    sol = str(GOOD / "placement_tiny.random.json")
    rc, _, err = call(capsys, "evaluate", str(GOOD / "offloading_tiny.json"), sol)
    assert rc == 2
    assert_one_error_line(err, sol, "family", "solution is for family 'placement'")


# --------------------------------------------------------------------------------------
# generate: bad --set values, unknown family / preset
# --------------------------------------------------------------------------------------

GENERATE_ERRORS = [
    (["placement", "--preset", "synthetic-3", "--set", "num_tasks=abc"], "--set num_tasks", "expected an integer"),
    (["placement", "--preset", "synthetic-3", "--set", "num_tasks=-3"], "--set num_tasks", "bad value -3"),
    (["mapping", "--preset", "thesis", "--set", "topology=moebius"], "--set topology", "must be one of"),
    (["placement", "--preset", "synthetic-3", "--set", "colour=1"], "--set colour", "unknown parameter 'colour'"),
    (["placement", "--preset", "synthetic-3", "--set", "num_tasks"], "--set", "expected key=value"),
    (["placement", "--preset", "synthetic-3", "--set", "num_tasks=4", "--set", "num_tasks=5"], "--set num_tasks",
     "given twice"),
    (["placement", "--preset", "no-such-preset"], "--preset", "unknown preset 'no-such-preset'"),
    (["scheduling", "--preset", "synthetic-3"], "FAMILY", "unknown family 'scheduling'"),
    # issue 18: sizes are bounded (this one ran out of memory)
    (["placement", "--preset", "synthetic-3", "--set", "num_tasks=1000000"], "--set num_tasks", "must be <= 10000"),
    (["placement", "--preset", "synthetic-3", "--set", "capacity=[100000, 4]"], "--set capacity", "1..1024"),
    (["mapping", "--preset", "thesis-queue", "--set", "jobs=100000"], "--set jobs", "must be <= 1000"),
    (["offloading", "--preset", "daggen", "--set", "tasks=1000000"], "--set tasks", "must be <= 10000"),
    (["mapping", "--preset", "thesis-queue", "--set", "rate=1e-9"], "--set",
     "outside the format's limits: mapping.jobs[0].arrival"),
]


@pytest.mark.parametrize("args,field,reason", GENERATE_ERRORS, ids=[" ".join(a[1:]) for a, _, _ in GENERATE_ERRORS])
def test_generate_rejects_bad_options(capsys, tmp_path, args, field, reason):
    out_dir = tmp_path / "instances"
    rc, out, err = call(capsys, "generate", *args, "--count", "2", "-o", str(out_dir))
    assert rc == 2 and out == ""
    assert_one_error_line(err, "<command line>", field, reason)
    assert not out_dir.exists()


def test_unknown_family_for_solvers(capsys):
    rc, out, err = call(capsys, "solvers", "--family", "scheduling")
    assert rc == 2 and out == ""
    assert_one_error_line(err, "<command line>", "--family", "unknown family 'scheduling'")


def test_missing_file(capsys, tmp_path):
    path = str(tmp_path / "nope.json")
    rc, _, err = call(capsys, "info", path)
    assert rc == 2
    assert_one_error_line(err, path, "<root>", "cannot read file")


def test_solver_for_another_family(capsys, tmp_path, monkeypatch):
    from edgebench import registry

    info = registry.get("random")
    monkeypatch.setitem(registry._REGISTRY, "random", registry.SolverInfo(
        info.name, ("placement",), info.kind, info.description, info.fn, info.params))
    target = tmp_path / "s.json"
    rc, _, err = call(capsys, "solve", str(GOOD / "mapping_tiny.json"), "--solver", "random", "-o", str(target))
    assert rc == 2
    assert_one_error_line(err, "<command line>", "--solver", "does not support family 'mapping'")
    assert not target.exists()


def test_output_that_cannot_be_written_is_refused_before_any_work(capsys, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    inst = str(GOOD / "placement_tiny.json")
    rc, out, err = call(capsys, "solve", inst, "--solver", "random", "-o", str(tmp_path))
    assert rc == 2 and out == ""
    assert_one_error_line(err, "<command line>", "-o", "is a folder")
    rc, _, err = call(capsys, "solve", inst, "--solver", "random", "-o", str(afile / "s.json"))
    assert rc == 2
    assert_one_error_line(err, "<command line>", "-o", "is not a folder")
    for cmd in (["generate", "placement", "--preset", "synthetic-3"], ["demo"]):
        rc, out, err = call(capsys, *cmd, "-o", str(afile / "sub"))
        assert rc == 2 and out == ""
        assert_one_error_line(err, "<command line>", "-o", "exists and is not a folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_generate_count_is_bounded(capsys, tmp_path):
    """issue 18: --count had no upper bound (every instance is built in memory first)."""
    out_dir = tmp_path / "instances"
    rc, out, err = call(capsys, "generate", "placement", "--preset", "synthetic-3", "--count", "100000000",
                        "-o", str(out_dir))
    assert rc == 2 and out == ""
    assert_one_error_line(err, "<command line>", "--count", "at most 1000 instances per call")
    assert not out_dir.exists()
