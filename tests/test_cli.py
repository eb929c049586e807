"""Every ``edgebench`` sub-command end to end on tiny instances: a few through the installed
script in a subprocess, the rest through ``main([...])``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from edgebench import __version__
from edgebench.cli import main
from edgebench.instances import io
from edgebench.solution import Solution

ROOT = Path(__file__).resolve().parents[1]
GOOD = ROOT / "tests" / "data" / "good"
TINY = ["placement_tiny", "mapping_tiny", "offloading_tiny"]
SCRIPT = Path(sys.executable).parent / "edgebench"


def run_script(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    exe = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "edgebench"]
    return subprocess.run(exe + list(args), capture_output=True, text=True, timeout=timeout, cwd=cwd)


def good(name: str) -> str:
    return str(GOOD / f"{name}.json")


def call(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


# --------------------------------------------------------------------------------------
# help and version
# --------------------------------------------------------------------------------------

COMMANDS = ["generate", "validate", "info", "schema", "evaluate", "solvers", "sets", "solve", "demo"]


def test_version(capsys):
    rc, out, _ = call(capsys, "--version")
    assert rc == 0 and out.strip() == f"edgebench {__version__}"


def test_top_level_help_lists_every_command(capsys):
    rc, out, _ = call(capsys, "--help")
    assert rc == 0
    for cmd in COMMANDS:
        assert cmd in out
    assert "examples:" in out


@pytest.mark.parametrize("cmd", COMMANDS)
def test_every_command_has_help_with_examples(capsys, cmd):
    rc, out, _ = call(capsys, cmd, "--help")
    assert rc == 0
    assert "examples:" in out and f"edgebench {cmd}" in out


def test_convert_is_delegated_when_available(capsys):
    try:
        import edgebench.instances.traces.cli  # noqa: F401
    except ModuleNotFoundError:
        pytest.skip("the trace converters are not installed")
    rc, out, _ = call(capsys, "convert", "--help")
    assert rc == 0 and "convert" in out


def test_usage_errors_exit_2(capsys):
    rc, _, err = call(capsys)
    assert rc == 2 and "usage:" in err
    rc, _, err = call(capsys, "solve", good("placement_tiny"))  # no --solver, no -o
    assert rc == 2 and "required" in err
    rc, _, err = call(capsys, "solve", good("placement_tiny"), "--solver", "random", "--time-limit", "-1", "-o", "x")
    assert rc == 2 and "positive" in err


def test_script_and_module_entry_points():
    proc = run_script("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"edgebench {__version__}"
    proc = subprocess.run([sys.executable, "-m", "edgebench", "--version"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and __version__ in proc.stdout


# --------------------------------------------------------------------------------------
# generate
# --------------------------------------------------------------------------------------


def test_generate_is_byte_identical_for_the_same_seed(tmp_path):
    args = ["generate", "placement", "--preset", "synthetic-3", "--set", "num_tasks=16", "--seed", "5",
            "--count", "2"]
    a = run_script(*args, "-o", str(tmp_path / "a"))
    b = run_script(*args, "-o", str(tmp_path / "b"))
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    paths_a = [Path(p) for p in a.stdout.split()]
    assert len(paths_a) == 2
    # plus the folder's manifest.json (a generated folder is a set), itself byte-identical
    assert sorted([p.name for p in paths_a] + ["manifest.json"]) == sorted(p.name for p in (tmp_path / "b").iterdir())
    ma, mb = (json.loads((tmp_path / d / "manifest.json").read_text()) for d in "ab")
    assert (ma.pop("name"), mb.pop("name")) == ("a", "b") and ma == mb
    for p in paths_a:
        assert p.read_bytes() == (tmp_path / "b" / p.name).read_bytes()
    # instance k uses seed S + k
    seeds = sorted(io.load_instance(p).meta.get("seed") for p in paths_a)
    assert seeds == [5, 6]
    assert paths_a[0].read_bytes() != paths_a[1].read_bytes()


def test_generate_gzip_and_overrides(capsys, tmp_path):
    rc, out, err = call(capsys, "generate", "mapping", "--preset", "thesis", "--set", "topology=ring",
                        "--set", "task_nodes=4", "--gzip", "-o", str(tmp_path))
    assert rc == 0, err
    (path,) = [Path(p) for p in out.split()]
    assert path.name.endswith(".json.gz") and path.read_bytes()[:2] == b"\x1f\x8b"
    inst = io.load_instance(path)
    assert inst.family == "mapping" and len(inst.mapping.jobs[0].tasks) == 4


def test_generate_every_family(capsys, tmp_path):
    for family, preset, extra in (("placement", "synthetic-3", ["--set", "num_tasks=8"]),
                                  ("mapping", "thesis", []),
                                  ("offloading", "heft-random", ["--set", "tasks=6"])):
        rc, out, err = call(capsys, "generate", family, "--preset", preset, *extra,
                            "-o", str(tmp_path / family))
        assert rc == 0, err
        assert io.load_instance(out.strip()).family == family


# --------------------------------------------------------------------------------------
# validate / info / schema
# --------------------------------------------------------------------------------------


def test_validate_instances_and_solutions(capsys):
    files = [good(n) for n in TINY] + [str(GOOD / f"{n}.random.json") for n in TINY]
    rc, out, err = call(capsys, "validate", *files)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert len(lines) == 6
    assert lines[0] == f"OK {files[0]} placement placement-tiny"
    assert lines[4] == f"OK {files[4]} mapping mapping-tiny"
    rc, out, _ = call(capsys, "validate", "--instance", good("mapping_tiny"), str(GOOD / "mapping_tiny.random.json"))
    assert rc == 0 and out.startswith("OK ")


def test_validate_stops_at_the_first_bad_file(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    rc, out, err = call(capsys, "validate", good("placement_tiny"), str(bad), good("mapping_tiny"))
    assert rc == 2
    assert out.splitlines() == [f"OK {good('placement_tiny')} placement placement-tiny"]
    assert err.count("\n") == 1 and err.startswith(f"edgebench: error: {bad}: <root>: malformed JSON")


def test_info_prints_the_content_hash():
    inst = io.load_instance(good("offloading_tiny"))
    proc = run_script("info", good("offloading_tiny"))
    assert proc.returncode == 0, proc.stderr
    assert f"hash: {io.content_hash(inst)}" in proc.stdout
    assert "family: offloading" in proc.stdout and "id: offloading-tiny" in proc.stdout
    assert "workflows: 2" in proc.stdout


@pytest.mark.parametrize("name", TINY)
def test_info_json(capsys, name):
    rc, out, _ = call(capsys, "info", "--json", good(name))
    assert rc == 0
    data = json.loads(out)
    inst = io.load_instance(good(name))
    assert data["hash"] == io.content_hash(inst) and data["family"] == inst.family and data["id"] == inst.id
    summary = data["summary"]
    if inst.family == "placement":
        assert summary["clusters"] == 2 and summary["tasks"] == 6
        assert summary["capacities"] == ["4cpu/4gpu", "8cpu/4gpu"]
        assert summary["arrivals"] == {"first": 0, "last": 4}
    elif inst.family == "mapping":
        assert summary["nodes"] == 4 and summary["links"] == 8 and summary["jobs"] == 2
        assert summary["strongly_connected"] is True and summary["task_nodes"]["total"] == 5
    else:
        assert summary["servers"] == 3 and summary["cloud_servers"] == 1 and summary["tasks"] == 7


def test_info_on_a_solution(capsys):
    rc, out, _ = call(capsys, "info", "--json", str(GOOD / "placement_tiny.random.json"))
    assert rc == 0
    data = json.loads(out)
    assert data["kind"] == "solution" and data["solver"] == "random" and data["status"] == "feasible"
    assert data["instance_hash"] == io.content_hash(io.load_instance(good("placement_tiny")))


def _refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref":
                yield v
            else:
                yield from _refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _refs(v)


@pytest.mark.parametrize("kind", ["instance", "solution"])
def test_schema_is_json_schema(capsys, kind):
    rc, out, _ = call(capsys, "schema", kind)
    assert rc == 0
    schema = json.loads(out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert {"family", "format_version"} <= set(schema["properties"])
    for ref in _refs(schema):  # every reference resolves inside the document
        assert ref.startswith("#/$defs/") and ref.split("/")[-1] in schema["$defs"]
    if kind == "instance":
        assert {"id", "family"} <= set(schema["required"])
        assert {"PlacementPayload", "MappingPayload", "OffloadingPayload"} <= set(schema["$defs"])
    else:
        assert {"instance_hash", "status"} <= set(schema["required"])


def test_schema_rejects_an_unknown_kind(capsys):
    rc, _, err = call(capsys, "schema", "bogus")
    assert rc == 2 and "invalid choice" in err


# --------------------------------------------------------------------------------------
# solvers / solve / evaluate
# --------------------------------------------------------------------------------------


def test_solvers_json(capsys):
    rc, out, _ = call(capsys, "solvers", "--json")
    assert rc == 0
    data = json.loads(out)
    assert isinstance(data, list) and data
    for entry in data:
        assert {"name", "families", "kind", "description"} <= set(entry)
    rnd = next(e for e in data if e["name"] == "random")
    assert rnd["kind"] == "heuristic" and set(rnd["families"]) == {"placement", "mapping", "offloading"}
    rc, out, _ = call(capsys, "solvers", "--family", "mapping", "--json")
    assert all("mapping" in e["families"] for e in json.loads(out))
    rc, out, _ = call(capsys, "solvers")
    assert rc == 0 and out.splitlines()[0].split()[:3] == ["name", "kind", "families"] and "random" in out


@pytest.mark.parametrize("name", TINY)
def test_solve_then_evaluate_is_feasible(capsys, tmp_path, name):
    sol_path = tmp_path / "out" / "sol.json"
    rc, out, err = call(capsys, "solve", good(name), "--solver", "random", "--seed", "3", "--time-limit", "30",
                        "-o", str(sol_path))
    assert rc == 0, err
    fields = dict(line.split(": ", 1) for line in out.splitlines())
    assert fields["status"] == "feasible" and fields["feasible"] == "true"
    sol = io.load_solution(sol_path, io.load_instance(good(name)))
    assert isinstance(sol, Solution) and sol.seed == 3
    assert [p.name for p in sol_path.parent.iterdir()] == ["sol.json"]  # no temp file left
    rc, out, err = call(capsys, "evaluate", good(name), str(sol_path))
    assert rc == 0, err
    ev = json.loads(out)
    assert set(ev) >= {"feasible", "violations", "objectives"}
    assert ev["feasible"] is True and ev["violations"] == []
    primary = {"placement": "total_completion_time", "mapping": "composite", "offloading": "mean_makespan"}
    key = primary[sol.family]
    # solve prints the REFEREE's primary objective
    shown = fields[key].split()[0]
    assert float(shown) == pytest.approx(ev["objectives"][key], rel=1e-5)


def test_solve_prints_the_referee_objective_not_the_solver_s(capsys, tmp_path, monkeypatch):
    from edgebench import registry

    info = registry.get("random")

    def lying(instance, **kw):
        res = info.fn(instance, **kw)
        forged = res.solution.model_copy(update={"objective": -12345.0})
        return registry.Result(solution=forged, runtime=res.runtime)

    monkeypatch.setitem(registry._REGISTRY, "random", registry.SolverInfo(
        info.name, info.families, info.kind, info.description, lying, info.params))
    rc, out, _ = call(capsys, "solve", good("placement_tiny"), "--solver", "random", "-o", str(tmp_path / "s.json"))
    assert rc == 0 and "-12345" not in out
    assert "(min, referee)" in out


def test_solve_with_params_and_gzip(capsys, tmp_path):
    rc, out, err = call(capsys, "solve", good("mapping_tiny"), "--solver", "random", "--param", "attempts=7",
                        "-o", str(tmp_path / "s.json.gz"))
    assert rc == 0, err
    sol = io.load_solution(tmp_path / "s.json.gz")
    assert sol.params == {"attempts": 7}


def test_solve_errors_are_one_line_and_write_nothing(capsys, tmp_path):
    out_file = tmp_path / "s.json"
    cases = [
        (["--solver", "nosuch"], "<command line>: --solver: unknown solver 'nosuch'"),
        (["--solver", "random", "--param", "colour=red"], "<command line>: params.colour: unknown parameter"),
        (["--solver", "random", "--param", "attempts"], "<command line>: --param: expected key=value"),
        (["--solver", "random", "--param", "attempts=0"], "<command line>: params.attempts: must be an integer"),
    ]
    for extra, expected in cases:
        rc, out, err = call(capsys, "solve", good("mapping_tiny"), *extra, "-o", str(out_file))
        assert rc == 2, (extra, err)
        assert err.count("\n") == 1 and expected in err, err
        assert out == "" and not out_file.exists()


def test_evaluate_infeasible_solution_exits_0(capsys, tmp_path):
    inst = io.load_instance(good("placement_tiny"))
    data = json.loads((GOOD / "placement_tiny.random.json").read_text())
    for task in data["placement"]["tasks"]:  # everything at once on cluster 1: over capacity
        task.update(cluster=1, start=5, cpu=8, gpu=4)
    sol = io.solution_from_dict(data, instance=inst)
    path = io.write_json(tmp_path / "over.json", sol)
    rc, out, err = call(capsys, "evaluate", good("placement_tiny"), str(path))
    assert rc == 0, err
    ev = json.loads(out)
    assert ev["feasible"] is False
    constraints = {v["constraint"] for v in ev["violations"]}
    assert {"capacity_cpu", "eligibility"} <= constraints


def test_evaluate_solution_without_decisions(capsys, tmp_path):
    inst = io.load_instance(good("offloading_tiny"))
    sol = Solution(family="offloading", instance_id=inst.id, instance_hash=io.content_hash(inst), solver="x",
                   status="timeout")
    path = io.write_json(tmp_path / "timeout.json", sol)
    rc, out, _ = call(capsys, "evaluate", good("offloading_tiny"), str(path))
    assert rc == 0
    ev = json.loads(out)
    assert ev["feasible"] is False and ev["violations"][0]["constraint"] == "no_solution"


# --------------------------------------------------------------------------------------
# demo
# --------------------------------------------------------------------------------------


@pytest.mark.slow  # every embedded instance: 1-1.5 min (docs/howto/run-the-tests.md)
def test_demo_exits_0_and_writes_everything(tmp_path, spread):
    out_dir = tmp_path / "demo"
    # every embedded instance (1,077): about a minute on a quiet core, several on a loaded one
    proc = run_script("demo", "--seed", "1", "-o", str(out_dir), timeout=900)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:6] == ["family", "instance", "solver", "status", "feasible", "source"]
    rows = [line.split() for line in lines[1:4]]
    assert [r[0] for r in rows] == ["placement", "mapping", "offloading"]
    assert all(r[2] == "random" and r[3] == "feasible" and r[4] == "yes" and r[5] == "generated" for r in rows)
    summary = json.loads((out_dir / "summary.json").read_text())
    from edgebench.instances import sets

    n_embedded = sum(len(sets.read_manifest(n)["instances"]) for n in sets.list_sets())
    assert summary["seed"] == 1 and len(summary["runs"]) == 3 + n_embedded
    assert {r["source"] for r in summary["runs"][3:]} == set(sets.list_sets())
    assert all(run["feasible"] is True and run["solver"] == "random" for run in summary["runs"])
    for run in summary["runs"][:3] + spread(summary["runs"][3:]):  # the files re-read: a sample
        inst = io.load_instance(run["instance"])
        sol = io.load_solution(run["solution"], inst)
        assert sol.solver == "random" and inst.family == run["family"]
    placement = io.load_instance(summary["runs"][0]["instance"])
    assert len(placement.placement.tasks) == 24
    offloading = io.load_instance(summary["runs"][2]["instance"])
    assert len(offloading.offloading.workflows[0].tasks) == 10


def test_demo_default_folder_is_runs_demo(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, err = call(capsys, "demo", "--no-sets")
    assert rc == 0, err
    assert sorted(os.listdir(tmp_path / "runs" / "demo")) == ["instances", "solutions", "summary.json"]
    assert len(list((tmp_path / "runs" / "demo" / "solutions").iterdir())) == 3


def test_convert_then_solve(capsys, tmp_path):
    try:
        from edgebench.instances.traces import default_traces_dir
    except ImportError:
        pytest.skip("the trace readers are not installed")
    traces = default_traces_dir()
    dag = traces / "daggen_dags" / "random.10.0.gv" if traces else None
    if dag is None or not dag.exists():
        pytest.skip("the shared traces folder (../shared/traces) is absent")
    inst_path = tmp_path / "dag10.json"
    rc, _, err = call(capsys, "convert", "daggen", str(dag), "-o", str(inst_path))
    assert rc == 0, err
    rc, out, err = call(capsys, "solve", str(inst_path), "--solver", "random", "-o", str(tmp_path / "sol.json"))
    assert rc == 0 and "feasible: true" in out, err


def test_sets_lists_the_embedded_sets(capsys):
    from edgebench.instances import sets

    rc, out, err = call(capsys, "sets", "--json")
    assert rc == 0, err
    rows = json.loads(out)
    assert [r["name"] for r in rows] == sets.list_sets()
    assert {r["family"] for r in rows} == {"placement", "mapping", "offloading"}
    assert all(r["instances"] > 0 for r in rows)
