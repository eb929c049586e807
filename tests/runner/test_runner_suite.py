"""Suite files: validation (one clear line, exit code 2, nothing run), time limits by size and
by kind, planning and run keys, the embedded default suite."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from edgebench.cli import main
from edgebench.errors import InputError
from edgebench.runner import suite as S
from edgebench.runner.store import FORMAT_VERSION, Store

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "tests" / "data" / "good"


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


BASE = f"""
name = "t"
time_limit = 5
[[instances]]
dir = "{GOOD}"
"""


def plan_text(tmp_path: Path, text: str):
    p = write(tmp_path, text)
    return S.plan(S.load_suite(p), file=str(p), base_dir=tmp_path)


# ---- validation ---------------------------------------------------------------------


@pytest.mark.parametrize("extra,field,reason", [
    ('[[solvers]]\nname = "no-such"\n', "solvers[0].name", "unknown solver 'no-such'"),
    ('[[solvers]]\nkind = "magic"\n', "solvers[0].kind", ""),
    ('[[solvers]]\nname = "heft"\nfamilies = ["placement"]\n', "solvers[0].families",
     "does not support family 'placement'"),
    ('[[solvers]]\nname = "random"\ncolour = 1\n', "solvers[0].colour", "unknown field"),
    ('[[solvers]]\nname = "random"\nparams = { attemps = 3 }\n', "solvers[0].params.attemps", "unknown parameter"),
    ('[[solvers]]\nname = "random"\nparams = { seed = 3 }\n', "solvers[0].params.seed", "set by the runner"),
    ('[[solvers]]\nname = "random"\ntime_limit = -1\n', "solvers[0].time_limit", "positive number"),
    ('[[solvers]]\nkind = "heuristic"\nexclude = ["nope"]\n', "solvers[0].exclude[0]", "unknown solver"),
    ('[[solvers]]\nname = "random"\nlabel = "x"\n[[solvers]]\nname = "heft"\nlabel = "x"\n', "solvers[1].label",
     "two different"),
])
def test_bad_solver_entries(tmp_path, extra, field, reason):
    with pytest.raises(InputError) as ei:
        plan_text(tmp_path, BASE + extra)
    assert ei.value.field == field
    assert reason in ei.value.reason
    assert ei.value.file.endswith("s.toml")


def test_unknown_top_level_key_and_set(tmp_path):
    with pytest.raises(InputError) as ei:
        plan_text(tmp_path, 'colour = "red"\n' + BASE + '[[solvers]]\nname = "random"\n')
    assert (ei.value.field, ei.value.reason) == ("colour", "unknown field")
    with pytest.raises(InputError) as ei:
        plan_text(tmp_path, 'name = "t"\n[[instances]]\nset = "no-such-set"\n[[solvers]]\nname = "random"\n')
    assert ei.value.field == "instances[0].set" and "unknown instance set" in ei.value.reason
    with pytest.raises(InputError) as ei:
        plan_text(tmp_path, 'name = "t"\n[[instances]]\nset = "a"\ndir = "b"\n[[solvers]]\nname = "random"\n')
    assert "exactly one" in ei.value.reason
    with pytest.raises(InputError) as ei:
        plan_text(tmp_path, 'name = "t"\n[time_limit]\nfast = 3\n' + BASE.split("time_limit = 5")[1]
                  + '[[solvers]]\nname = "random"\n')
    assert ei.value.field == "time_limit.fast"
    with pytest.raises(InputError, match="malformed TOML"):
        plan_text(tmp_path, "name = \n")


def test_solver_that_supports_no_family_of_the_suite(tmp_path):
    text = f'name = "t"\n[[instances]]\nfiles = ["{GOOD / "placement_tiny.json"}"]\n[[solvers]]\nname = "heft"\n'
    with pytest.raises(InputError, match="does not support family placement"):
        plan_text(tmp_path, text)


def test_cli_bad_suite_is_one_line_exit_2_and_runs_nothing(tmp_path, capsys):
    suite = write(tmp_path, BASE + '[[solvers]]\nname = "no-such"\n')
    db = tmp_path / "r.sqlite"
    rc = main(["run", str(suite), "--db", str(db), "--no-progress"])
    out, err = capsys.readouterr()
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("edgebench: error: ") and "solvers[0].name" in err
    assert not db.exists()


def test_cli_unreadable_and_newer_stores_are_refused(tmp_path, capsys):
    suite = write(tmp_path, BASE + '[[solvers]]\nname = "random"\n')
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database at all" * 10)
    rc = main(["run", str(suite), "--db", str(junk), "--no-progress", "--no-report"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "unreadable results store" in err
    assert junk.read_bytes() == b"this is not a database at all" * 10

    newer = tmp_path / "newer.sqlite"
    Store.open(newer).close()
    conn = sqlite3.connect(newer)
    conn.execute("UPDATE meta SET value=? WHERE key='format_version'", (str(FORMAT_VERSION + 1),))
    conn.commit()
    conn.close()
    before = newer.read_bytes()
    rc = main(["run", str(suite), "--db", str(newer), "--no-progress", "--no-report"])
    err = capsys.readouterr().err
    assert rc == 2 and "newer edgebench" in err and err.count("\n") == 1
    assert newer.read_bytes() == before
    rc = main(["report", "--db", str(newer), "-o", str(tmp_path / "rep")])
    assert rc == 2 and "newer edgebench" in capsys.readouterr().err

    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    rc = main(["report", "--db", str(other), "-o", str(tmp_path / "rep")])
    assert rc == 2 and "not an edgebench results store" in capsys.readouterr().err


# ---- time limits, planning ------------------------------------------------------------


def test_time_limits_fixed_by_size_and_by_kind():
    tl = S.parse_time_limit({"by_size": [[0, 2], [10, 5], [50, 30]]})
    assert [tl.seconds(n) for n in (1, 9, 10, 49, 50, 999)] == [2, 2, 5, 5, 30, 30]
    assert S.parse_time_limit(7).seconds(10**6) == 7.0
    with pytest.raises(ValueError):
        S.parse_time_limit({"by_size": [[10, 2], [5, 3]]})
    suite = S.suite_from_dict({"name": "k", "time_limit": {"default": 9, "exact": {"by_size": [[0, 1], [20, 4]]}},
                               "instances": [{"set": "x"}], "solvers": [{"kind": "exact"}]})
    assert suite.time_limit_for("exact").seconds(25) == 4.0
    assert suite.time_limit_for("heuristic").seconds(25) == 9.0


def test_plan_kinds_labels_keys_and_overrides(tmp_path):
    text = "seeds = [0, 1]\n" + BASE + """
[[solvers]]
kind = "heuristic"
families = ["offloading"]
exclude = ["all-cloud"]
seeds = [3]
[[solvers]]
name = "random"
params = { attempts = 5 }
"""
    p = plan_text(tmp_path, text)
    labels = {r.label for r in p.runs}
    assert "all-cloud" not in labels and "heft" in labels and "random[attempts=5]" in labels
    assert all(r.family == "offloading" for r in p.runs if r.label == "heft")
    assert {r.seed for r in p.runs if r.label == "heft"} == {3}
    assert {r.seed for r in p.runs if r.label == "random[attempts=5]"} == {0, 1}
    assert all(r.time_limit == 5 and r.kill_after == pytest.approx(5 * 1.2 + 5) for r in p.runs)
    keys = [r.key for r in p.runs]
    assert len(set(keys)) == len(keys)
    again = plan_text(tmp_path, text)
    assert [r.key for r in again.runs] == keys  # stable keys: what resuming relies on
    other = S.plan(S.load_suite(tmp_path / "s.toml"), file="s", base_dir=tmp_path, time_limit=2.0, seeds=[7])
    assert {r.seed for r in other.runs} == {7} and {r.time_limit for r in other.runs} == {2.0}
    assert not set(keys) & {r.key for r in other.runs}


def test_default_suite_covers_all_families_and_kinds():
    from edgebench import registry

    p = S.plan(S.default_suite(), file=str(S.DEFAULT_SUITE), base_dir=S.SUITES_DIR)
    assert {r.family for r in p.runs} == {"placement", "mapping", "offloading"}
    kinds_present = {s.kind for s in registry.solvers()}
    assert {r.kind for r in p.runs} == kinds_present
    # every registered solver runs on every instance of its families that it does not decline
    # (register(applies=...): a learned policy with no checkpoint for the instance); a decline is a note
    for s in registry.solvers():
        planned = {r.inst.hash for r in p.runs if r.solver == s.name}
        for ref in p.instances:
            if ref.family in s.families:
                declines = s.applies is not None and s.applies(ref.instance, {}) is not None
                assert (ref.hash in planned) != declines, (s.name, ref.id)
        if len(planned) < sum(ref.family in s.families for ref in p.instances):
            assert any(n.startswith(f"note: {s.name} declines") for n in p.notes), s.name
    # the TOML round trip of a suite
    text = S.suite_to_toml(p.suite)
    assert S.suite_from_dict(__import__("tomllib").loads(text)) == p.suite


def test_default_suite_is_a_first_look_within_150_s():
    """The default suite must end within 150 s on 2 cores (issue 43; docs/runner.md, "The
    default suite"): the metaheuristics run seed 0 and stop at 20,000 evaluations (their own
    default budget, reproducible on any machine) or at 3 s; placement-cg-lns runs 5 s (the same
    schedules as at 10 s on the six placement instances), every other heuristic 10 s."""
    from edgebench import registry

    p = S.plan(S.default_suite(), file=str(S.DEFAULT_SUITE), base_dir=S.SUITES_DIR)
    meta = [r for r in p.runs if r.kind == "metaheuristic"]
    assert {r.solver for r in meta} == {s.name for s in registry.solvers() if s.kind == "metaheuristic"}
    assert {r.time_limit for r in meta} == {3.0}
    assert all(r.params == {"max_evaluations": 20_000} for r in meta)
    assert {r.seed for r in p.runs} == {0}
    assert {r.time_limit for r in p.runs if r.solver == "placement-cg-lns"} == {5.0}
    assert {r.time_limit for r in p.runs if r.kind == "heuristic" and r.solver != "placement-cg-lns"} == {10.0}


def test_adhoc_matrix(tmp_path):
    data = S.adhoc_suite(base=S.default_suite(), instances=[str(GOOD)], solvers=["heft", "kind:mdp"])
    suite = S.suite_from_dict(data)
    p = S.plan(suite, time_limit=3.0, seeds=[0, 1, 2])
    assert {r.solver for r in p.runs} == {"heft"} | {s.name for s in __import__("edgebench.registry").registry.solvers()
                                                     if s.kind == "mdp"}
    assert len(p.runs) == len({r.solver for r in p.runs}) * 3  # one offloading instance x 3 seeds
    with pytest.raises(InputError, match="neither an instance set"):
        S.adhoc_suite(base=None, instances=["/no/such/dir"], solvers=["heft"])
