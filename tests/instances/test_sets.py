"""Embedded instance sets: recipes, manifests, byte-identical rebuilds, certified best-known values."""

import json
import math
import re
import shutil

import pytest

from edgebench.cli import main as cli_main
from edgebench.errors import InputError
from edgebench.instances import sets
from edgebench.instances.io import content_hash, load_instance, load_solution
from edgebench.instances.traces import default_traces_dir
from edgebench.referee import evaluate
from edgebench.runner.bestknown import verify_entry

#: rebuilding every daggen file takes ~1 s each (pydot): the test rebuilds these entries of
#: such sets (`edgebench sets build NAME -o DIR` rebuilds all of them)
SLOW_SETS = {"offloading-daggen-v2": [0, 1, 2, 3, 4], "offloading-stg-v2": [0, 1, 2, 3, 361], "offloading-stg-100-v2": [0, 1]}


def test_every_recipe_is_shipped_and_every_shipped_set_has_a_recipe():
    assert set(sets.list_sets()) == set(sets.RECIPES)
    assert all((sets.RECIPES_DIR / f"{n}.toml").is_file() for n in sets.RECIPES)


def test_library_size():
    fams = {}
    for name in sets.list_sets():
        m = sets.read_manifest(name)
        fams.setdefault(m["family"], []).append(len(m["instances"]))
    assert sum(map(sum, fams.values())) >= 150 and sum(map(len, fams.values())) >= 12
    assert all(len(v) >= 4 for v in fams.values()) and len(fams) == 3


@pytest.mark.parametrize("name", sorted(sets.RECIPES))
def test_set_loads_and_matches_manifest(name, spread, spread_loaded):
    """Every manifest entry names a best-known record; the instances load (``sets.load_set``) with
    their manifest's id and hash. Of the two STG sets (900 instances) an evenly spread sample of 40
    is loaded (tests/conftest.py; all with ``EDGEBENCH_FULL_SETS=1``): the demo test loads every
    shipped instance through ``sets.load_set``, which refuses one whose hash is not its manifest's."""
    manifest = sets.read_manifest(name)
    assert manifest["name"] == name and re.search(r"-v\d+$", name)
    assert manifest["recipe"] == {"file": f"{name}.toml", "version": sets.RECIPES[name].version}
    assert len(manifest["instances"]) > 0
    for entry in manifest["instances"]:
        assert set(entry["best_known"]) >= {"objective", "bound", "solver", "date"}
    entries = spread(manifest["instances"])
    insts = spread_loaded(name)
    assert len(insts) == len(entries)
    for inst, entry in zip(insts, entries):
        assert inst.family == manifest["family"]
        assert inst.id == entry["id"] and content_hash(inst) == entry["hash"]


@pytest.mark.parametrize("name", sorted(sets.RECIPES))
def test_set_regenerates_byte_identically(tmp_path, name):
    recipe = sets.RECIPES[name]
    if recipe.source is not None and recipe.converter != "adversary" and default_traces_dir() is None:
        pytest.skip("the traces folder (../shared/traces) is absent")
    only = SLOW_SETS.get(name)
    sets.build_set(name, out_dir=tmp_path, only=only)
    shipped = sets.DATA_DIR / name
    entries = sets.read_manifest(name)["instances"]
    for k, entry in enumerate(entries):
        if only is None or k in only:
            assert (tmp_path / name / entry["file"]).read_bytes() == (shipped / entry["file"]).read_bytes()
    if only is None:
        rebuilt = json.loads((tmp_path / name / "manifest.json").read_text())["instances"]
        assert [{**e, "best_known": None} for e in rebuilt] == [{**e, "best_known": None} for e in entries]


def test_trace_sets_record_source_and_terms():
    for name, recipe in sets.RECIPES.items():
        m = sets.read_manifest(name)
        if recipe.source is None:
            assert "source" not in m
            continue
        terms = "found by edgebench adversary search" if recipe.converter == "adversary" else "research use"
        assert m["source"]["terms"].startswith(terms) and m["source"]["files"]
        assert all(re.fullmatch(r"[0-9a-f]{64}", f["sha256"]) for f in m["source"]["files"])


def test_ids_are_unique_across_sets():
    ids = [e["id"] for name in sets.list_sets() for e in sets.read_manifest(name)["instances"]]
    hashes = [e["hash"] for name in sets.list_sets() for e in sets.read_manifest(name)["instances"]]
    assert len(ids) == len(set(ids)) and len(hashes) == len(set(hashes))


def test_unknown_set_is_an_input_error():
    with pytest.raises(InputError, match="unknown instance set"):
        sets.read_manifest("placement-nothing-v9")


# --------------------------------------------------------------------------------------
# recipes and the command line
# --------------------------------------------------------------------------------------

RECIPE = """name = "placement-tiny-v1"
version = 1
family = "placement"
preset = "{preset}"
description = "three tiny instances"
seeds = [3, 4, 5]
[params]
num_tasks = 4
{extra}
"""


def _recipe(tmp_path, preset="synthetic-3", extra=""):
    p = tmp_path / "placement-tiny-v1.toml"
    p.write_text(RECIPE.format(preset=preset, extra=extra))
    return p


def test_sets_build_command_builds_a_set_from_a_recipe_file(tmp_path, capsys):
    assert cli_main(["sets", "build", str(_recipe(tmp_path)), "-o", str(tmp_path / "out")]) == 0
    folder = tmp_path / "out" / "placement-tiny-v1"
    m = json.loads((folder / "manifest.json").read_text())
    assert [e["seed"] for e in m["instances"]] == [3, 4, 5] and m["recipe"]["version"] == 1
    assert sets.load_set("placement-tiny-v1", tmp_path / "out")[0].placement.tasks.__len__() == 4


@pytest.mark.parametrize("preset,extra,field", [("nope", "", "preset"), ("synthetic-3", "bogus = 1", "params.bogus"),
                                                ("synthetic-3", 'variant = "both"', "params.variant")])
def test_bad_recipe_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, preset, extra, field):
    path = _recipe(tmp_path, preset, extra)
    assert cli_main(["sets", "build", str(path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{path}: {field}:" in err
    assert not (tmp_path / "out").exists()


def test_recipe_unknown_key_and_unlisted_trace_file(tmp_path):
    p = tmp_path / "placement-tiny-v1.toml"
    p.write_text(RECIPE.format(preset="synthetic-3", extra="") + "\n[extra]\nx = 1\n")
    with pytest.raises(InputError, match="extra"):
        sets.read_recipe(p)
    q = tmp_path / "offloading-dag-v1.toml"
    q.write_text('name = "offloading-dag-v1"\nversion = 1\nfamily = "offloading"\nconverter = "daggen"\n'
                 'description = "d"\n[source]\nterms = "t"\nfiles = [{ name = "a.gv", sha256 = "' + "0" * 64 + '" }]\n'
                 '[[instances]]\nseed = 0\nfiles = ["b.gv"]\n')
    with pytest.raises(InputError, match="not listed"):
        sets.read_recipe(q)


def test_generate_writes_a_manifest_that_run_accepts(tmp_path, capsys):
    out = tmp_path / "gen"
    assert cli_main(["generate", "offloading", "--preset", "heft-random", "--set", "tasks=5", "--count", "2",
                     "-o", str(out)]) == 0
    assert cli_main(["generate", "offloading", "--preset", "patent-example", "-o", str(out)]) == 0
    m = json.loads((out / "manifest.json").read_text())
    assert m["name"] == "gen" and [e["seed"] for e in m["instances"]] == [0, 1, 0]
    insts = sets.load_set("gen", tmp_path)
    assert [content_hash(i) for i in insts] == [e["hash"] for e in m["instances"]]
    assert cli_main(["run", "--instances", str(out), "--solvers", "heft", "--db", str(tmp_path / "r.sqlite"),
                     "--no-report", "--no-progress"]) == 0


# --------------------------------------------------------------------------------------
# certified values
# --------------------------------------------------------------------------------------


def _certified():
    for name in sets.list_sets():
        folder = sets.DATA_DIR / name
        for entry in sets.read_manifest(name)["instances"]:
            yield name, folder, entry


@pytest.mark.slow
def test_every_best_known_solution_reproduces_its_objective(spread):
    """Every shipped solution; of the two STG sets (900 solutions) an evenly spread sample of 40
    each (all with ``EDGEBENCH_FULL_SETS=1``; `edgebench validate DIR` checks a whole folder)."""
    n = 0
    for name in sets.list_sets():
        folder = sets.DATA_DIR / name
        for entry in spread(sets.read_manifest(name)["instances"]):
            n += _solution_reproduces(folder, entry)
    assert n > 0


def _solution_reproduces(folder, entry) -> bool:
    bk = entry["best_known"]
    inst = load_instance(folder / entry["file"]) if bk.get("solution") is not None else None
    verify_entry(folder, entry, instance=inst)  # loaded once: the STG sets ship 900 solutions
    if bk.get("solution") is None:
        return False
    # `edgebench evaluate` gives exactly `objective`
    assert evaluate(inst, load_solution(folder / bk["solution"], inst)).primary_value == bk["objective"]
    assert bk["status"] in ("closed", "open") and bk["edgebench_version"] and bk["solver_config"]
    assert bk["optimal"] == (bk["status"] == "closed")
    return True


def test_every_certified_instance_has_a_bound_on_the_right_side():
    for name, folder, entry in _certified():
        bk = entry["best_known"]
        if bk.get("objective") is None:
            continue
        sense = "max" if name.startswith("mapping") else "min"
        assert bk["bound"] is not None and bk["bound_kind"], f"{name}/{entry['file']} has no bound"
        tol = 1e-6 * max(1.0, abs(bk["objective"]))
        assert (bk["bound"] <= bk["objective"] + tol) if sense == "min" else (bk["bound"] >= bk["objective"] - tol)


def _tamper(tmp_path, mutate):
    name = next(n for n, f, e in _certified() if e["best_known"].get("solution"))
    shutil.copytree(sets.DATA_DIR / name, tmp_path / name)
    folder = tmp_path / name
    entry = next(e for e in sets.read_manifest(name, tmp_path)["instances"] if e["best_known"].get("solution"))
    mutate(folder, entry)
    return folder, entry


def test_a_solution_that_does_not_reproduce_its_objective_is_refused(tmp_path):
    def worse(folder, entry):
        entry["best_known"]["objective"] = entry["best_known"]["objective"] * 0.5 - 1.0
    folder, entry = _tamper(tmp_path, worse)
    with pytest.raises(InputError) as err:
        verify_entry(folder, entry)
    assert err.value.field == "best_known.objective"


def test_a_solution_for_another_instance_is_refused(tmp_path):
    def other(folder, entry):
        entry["hash"] = "0" * 64
    folder, entry = _tamper(tmp_path, other)
    with pytest.raises(InputError) as err:
        verify_entry(folder, entry)
    assert err.value.field == "instance_hash"


# --------------------------------------------------------------------------------------
# issue 14 item 4: the daggen set discriminates
# --------------------------------------------------------------------------------------


def test_daggen_set_is_discriminating():
    from edgebench.registry import solve

    name = "offloading-daggen-v2"
    folder = sets.DATA_DIR / name
    heuristics = ["heft", "peft", "cpop", "nearest-edge", "affinity"]
    for k, entry in enumerate(sets.read_manifest(name)["instances"]):
        inst = load_instance(folder / entry["file"])
        assert not any(s.is_cloud for s in inst.offloading.servers)
        cloud = evaluate(inst, solve(inst, "all-cloud", time_limit=5).solution)
        cloud_value = cloud.primary_value if cloud.feasible else math.inf
        bk = entry["best_known"]
        best = evaluate(inst, load_solution(folder / bk["solution"], inst)).primary_value
        assert best < cloud_value  # the best known (the proven optimum where closed) beats all-cloud
        if k < 5:  # 10-task DAGs: the heuristics run in milliseconds
            values = {round(evaluate(inst, solve(inst, h, time_limit=5).solution).primary_value, 9)
                      for h in heuristics}
            assert len(values) > 1, f"{entry['file']}: every heuristic ties"


def test_bestknown_write_manifests_refuses_a_tampered_set_and_writes_nothing(tmp_path, capsys):
    name = "mapping-topologies-v1"
    shutil.copytree(sets.DATA_DIR / name, tmp_path / name)
    path = tmp_path / name / "manifest.json"
    db = str(tmp_path / "r.sqlite")
    args = ["run", "--instances", str(tmp_path / name), "--solvers", "random", "--db", db, "--no-report", "--no-progress"]
    assert cli_main(args) == 0
    m = json.loads(path.read_text())
    m["instances"][0]["best_known"]["objective"] += 0.25  # not what its solution file scores
    m["instances"][0]["best_known"]["bound"] += 0.25
    path.write_text(json.dumps(m, indent=1) + "\n")
    before = {p: p.read_bytes() for p in (tmp_path / name).rglob("*") if p.is_file()}
    capsys.readouterr()
    assert cli_main(args) == 2  # a folder's claims are re-checked before a run uses them (issue 28)
    assert "best_known.objective" in capsys.readouterr().err
    assert cli_main(["bestknown", "--db", db, "--write-manifests", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "best_known.objective" in err and "solutions/" in err
    assert {p: p.read_bytes() for p in (tmp_path / name).rglob("*") if p.is_file()} == before


@pytest.mark.slow
@pytest.mark.parametrize("name", ["offloading-patent-example-v1", "offloading-heft-random-v1", "offloading-daggen-v2",
                                  "offloading-edge-poisson-v2", "mapping-thesis-queue-v2", "placement-synthetic-3-v1"])
def test_combinatorial_bounds_hold_for_heuristic_solutions(name):
    from edgebench.registry import solve, solvers
    from edgebench.runner.bounds import combinatorial_bound

    insts = sets.load_set(name)[:2]
    for inst in insts:
        bound, kind = combinatorial_bound(inst)
        assert kind.startswith("combinatorial: ")
        for info in solvers(inst.family):
            if info.kind != "heuristic":
                continue
            ev = evaluate(inst, solve(inst, info.name, time_limit=5).solution)
            if ev.feasible:
                v = ev.primary_value
                assert (v >= bound - 1e-9) if inst.family != "mapping" else (v <= bound + 1e-9), (info.name, v, bound)


def test_bestknown_refresh_bounds_raises_weaker_shipped_bounds_only(tmp_path, capsys):
    """`bestknown --refresh-bounds` gives shipped entries the current combinatorial bound where it
    is better (no runs needed), never lowers one, and the shipped manifests are already refreshed."""
    from edgebench.runner.bounds import combinatorial_bound

    name = "offloading-edge-poisson-v2"
    shutil.copytree(sets.DATA_DIR / name, tmp_path / name)
    assert cli_main(["bestknown", "--refresh-bounds", "--data-dir", str(tmp_path)]) == 0
    assert "0 manifest entries improved" in capsys.readouterr().out  # shipped = refreshed
    path = tmp_path / name / "manifest.json"
    m = json.loads(path.read_text())
    entry = m["instances"][0]
    inst = load_instance(tmp_path / name / entry["file"])
    bound, kind = combinatorial_bound(inst)
    entry["best_known"].update(bound=0.5 * bound, bound_kind="combinatorial: critical path", status="open")
    m["instances"][1]["best_known"]["bound"] = None  # an entry without a bound gets one
    path.write_text(json.dumps(m, indent=1) + "\n")
    assert cli_main(["bestknown", "--refresh-bounds", "--data-dir", str(tmp_path)]) == 0
    assert "2 manifest entries improved" in capsys.readouterr().out
    new = json.loads(path.read_text())["instances"]
    assert new[0]["best_known"]["bound"] == pytest.approx(min(bound, new[0]["best_known"]["objective"]))
    assert new[0]["best_known"]["bound"] <= new[0]["best_known"]["objective"]
    assert new[0]["best_known"]["bound_kind"] == kind
    assert new[1]["best_known"]["bound"] is not None
    assert cli_main(["bestknown", "--refresh-bounds", "--data-dir", str(tmp_path)]) == 0
    assert "0 manifest entries improved" in capsys.readouterr().out


def test_bestknown_needs_a_store_unless_refreshing_bounds(capsys):
    assert cli_main(["bestknown"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--db" in err
