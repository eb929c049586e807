"""``edgebench merge`` (same key = same run, conflicts reported, environments kept, atomic
output), the dry-run time estimate, and the SLURM / PBS launcher's batch scripts."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

import pytest

from edgebench.cli import main
from edgebench.runner import estimate as E
from edgebench.runner.merge import merge_stores
from edgebench.runner.store import Store


def row(key, value, *, h="h1", status="feasible", env="e1", label="s"):
    return {"key": key, "instance_id": f"i-{h}", "instance_hash": h, "family": "placement", "size": 3,
            "solver": label, "label": label, "kind": "heuristic", "seed": 0, "status": status,
            "feasible": int(status in ("feasible", "optimal")), "proven": 0, "units_ok": 1, "primary_name": "p",
            "sense": "min", "primary_value": value, "reported_objective": value, "bound": None, "runtime": 0.1,
            "env": env, "finished": "2026-01-02T00:00:00+00:00"}


def make(path, rows, env):
    with Store.open(path) as st:
        for r in rows:
            st.add_run(r, env)
        st.begin_sweep(suite="s", suite_toml="", argv=["edgebench", "run"], host={"host": env["host"]},
                       planned=len(rows), skipped=0)


def test_merge_same_key_is_one_run_conflicts_reported_envs_kept(tmp_path, capsys, monkeypatch):
    # the rows here are made up (no solutions, made-up keys): the referee's check of every row
    # (tests/runner/test_hostile_store.py) is switched off to test the key / conflict logic alone
    monkeypatch.setattr("edgebench.runner.merge.check_row", lambda row, instances, store: None)
    a, b, out = tmp_path / "a.sqlite", tmp_path / "b.sqlite", tmp_path / "m" / "all.sqlite"
    make(a, [row("k1", 10.0, env="ea"), row("k2", 7.0, env="ea"), row("k4", None, status="killed", env="ea")],
         {"host": "node-a"})
    make(b, [row("k1", 10.0 * (1 + 1e-12), env="eb"),  # same run, same outcome (within 1e-9)
             row("k2", 6.0, env="eb"),                     # same run, different outcome: conflict
             row("k3", 5.0, h="h2", env="eb"),             # only here
             row("k4", 9.0, env="eb")], {"host": "node-b"})  # failed in a, finished in b
    rep = merge_stores(out, [a, b])
    assert rep.added == {str(a): 3, str(b): 1} and rep.duplicates == 1 and rep.replaced == 1
    assert [c["key"] for c in rep.conflicts] == ["k2", "k4"]
    k2 = rep.conflicts[0]
    assert k2["kept"]["store"] == str(a) and k2["kept"]["primary_value"] == 7.0
    assert k2["dropped"]["store"] == str(b) and k2["dropped"]["primary_value"] == 6.0
    with Store.open(out, create=False) as st:
        assert st.keys() == {"k1", "k2", "k3", "k4"}
        assert st.run("k2")["primary_value"] == 7.0 and st.run("k4")["status"] == "feasible"
        assert st.run("k3")["env"] == "eb" and st.run("k1")["env"] == "ea"
        assert {e["host"] for e in st.envs().values()} == {"node-a", "node-b"}
        assert [s["suite"] for s in st.sweeps()] == ["s", "s", "merge"]
        best = {r["instance_hash"]: r["objective"] for r in st.bestknown()}
        assert best == {"h1": 7.0, "h2": 5.0}
    # merging again (the output counts as the first store) adds nothing
    rep2 = merge_stores(out, [b])
    assert rep2.added == {str(b): 0} and rep2.runs == 4
    # the CLI: a report line per conflict, exit 0
    assert main(["merge", "-o", str(tmp_path / "c.sqlite"), str(b), str(a)]) == 0
    text = capsys.readouterr().out
    assert text.count("CONFLICT") == 2 and "c.sqlite: 4 runs" in text


def test_merge_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys):
    good = tmp_path / "a.sqlite"
    make(good, [row("k1", 1.0)], {"host": "x"})
    bad = tmp_path / "bad.sqlite"
    bad.write_text("not a store")
    out = tmp_path / "out.sqlite"
    assert main(["merge", "-o", str(out), str(good), str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.sqlite" in err[0] and "Traceback" not in err[0]
    assert not out.exists() and not any(p.name.startswith(".out") for p in tmp_path.iterdir())
    assert main(["merge", "-o", str(good), str(good)]) == 2
    assert main(["merge", "-o", str(out), str(tmp_path / "missing.sqlite")]) == 2
    assert not out.exists()


def _lpt_brute(durations, workers):
    """The exact optimum makespan by trying every assignment (tiny cases)."""
    best = float("inf")
    n = len(durations)
    for code in range(workers ** n):
        loads = [0.0] * workers
        c = code
        for d in durations:
            loads[c % workers] += d
            c //= workers
        best = min(best, max(loads))
    return best


def test_estimate_makespan_is_within_four_thirds_of_optimal_and_bounded():
    rng = random.Random(0)
    for _ in range(40):
        ds = [rng.choice([1, 5, 10, 30, 60, 120]) * rng.random() + 0.1 for _ in range(rng.randint(1, 7))]
        for w in (1, 2, 3):
            m, opt = E.makespan(ds, w), _lpt_brute(ds, w)
            assert opt - 1e-9 <= m <= opt * 4 / 3 + 1e-9
            assert m >= max(ds) - 1e-9 and m >= sum(ds) / w - 1e-9
    assert E.makespan([30.0] * 10, 64) == pytest.approx(30.0)
    specs = [SimpleNamespace(time_limit=t, kill_after=t * 1.2 + 5) for t in (10.0, 20.0, 30.0)]
    e = E.estimate(specs, [1, 2], threads=2)
    assert e["cpu_s"] == pytest.approx(120.0) and e["wall_s"] == {1: pytest.approx(60.0), 2: pytest.approx(30.0)}
    assert e["cpu_kill_s"] == pytest.approx(2 * (72.0 + 15))


def test_dry_run_prints_cpu_and_wall_estimates(capsys):
    code = main(["run", "--instances", "offloading-heft-random-v1", "--solvers", "heft,random", "--time-limit", "30",
                 "--dry-run", "--estimate-workers", "1,4"])
    assert code == 0
    out = capsys.readouterr().out
    assert "estimate for 8 runs" in out and "CPU time 4.0 min" in out
    assert "wall time on    1 worker : 4.0 min" in out and "wall time on    4 workers: 60 s" in out
    assert main(["run", "--dry-run", "--estimate-workers", "0"]) == 2


@pytest.mark.parametrize("kind, marker", [("slurm", "#SBATCH"), ("pbs", "#PBS")])
def test_jobqueue_launcher_writes_batch_scripts(kind, marker, capsys):
    pytest.importorskip("dask_jobqueue", reason="the cluster extra is not installed")
    from edgebench.runner.jobqueue import main as launch

    assert launch([kind, "--cores", "8", "--memory", "40GB", "--walltime", "02:00:00", "--queue", "q",
                   "--prologue", "source ~/eb/bin/activate", "--print-job-script", "--", "paper"]) == 0
    script = capsys.readouterr().out
    assert marker in script and "02:00:00" in script and "source ~/eb/bin/activate" in script
    assert "--nthreads 1" in script and "--nworkers 8" in script  # one run at a time per worker
    assert launch([kind, "--print-job-script", "--", "paper", "--dask", "tcp://x:1"]) == 2


def test_jobqueue_launcher_runs_a_suite_on_a_local_cluster(tmp_path, capsys):
    from edgebench.runner.jobqueue import main as launch

    db = tmp_path / "r.sqlite"
    assert launch(["local", "--cores", "1", "--", "--instances", "offloading-patent-example-v1", "--solvers", "heft",
                   "--db", str(db), "--no-report", "--no-progress"]) == 0
    with Store.open(db, create=False) as st:
        assert st.count() == 1 and st.run(next(iter(st.keys())))["status"] in ("feasible", "optimal")
    assert json.loads(json.dumps(st.path)) == str(db)
