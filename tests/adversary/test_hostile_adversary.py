"""Hostile input, round three (issue 44), the adversary's part: ``adversary check`` recomputes
every number a certificate states and refuses what it cannot verify (case 5), damaged
certificates and search states give one line (case 8), a search killed at any moment resumes
without a mixed ``best`` or a duplicated evaluation (case 7), and data reaches the terminal
escaped (case 12)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edgebench.adversary import certificate, search as search_mod
from edgebench.adversary.search import Config, Search, contender, search
from edgebench.cli import main
from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.sets import ADVERSARIAL_DIR
from edgebench.referee import evaluate
from edgebench.registry import solve

HEFT = ADVERSARIAL_DIR / "offloading-adversarial-v1" / "heft"
#: the heft certificate's exact reference value (offloading-cpsat, proven optimal)
OPT = 132.54


def _copy(tmp_path: Path, src: Path = HEFT) -> Path:
    dst = tmp_path / "cert"
    shutil.copytree(src, dst)
    return dst


def _edit(folder: Path, **changes) -> None:
    cert = json.loads((folder / "certificate.json").read_text())
    for k, v in changes.items():
        if v is KeyError:
            cert.pop(k)
        else:
            cert[k] = v
    (folder / "certificate.json").write_text(json.dumps(cert))


def _check_fails(capsys, folder: Path, *pieces: str) -> str:
    assert main(["adversary", "check", str(folder)]) == 2
    cap = capsys.readouterr()
    err = cap.err
    assert err.count("\n") == 1 and "Traceback" not in err and err.startswith("edgebench: error: "), err
    assert not cap.out.startswith("OK"), cap.out
    for p in pieces:
        assert p in err, err
    return err


def _forge_random_reference(folder: Path, *, with_bound: bool) -> float:
    """Replace the exact reference by a referee-feasible random schedule still labelled
    offloading-cpsat / optimal, with every number recomputed to match it (the issue's forgery)."""
    inst = io.load_instance(folder / "instance.json")
    sol = solve(inst, "random", seed=3).solution
    ev = evaluate(inst, sol)
    r = float(ev.objectives[ev.primary])
    assert ev.feasible and r > OPT * 1.5  # far from the optimum
    data = sol.model_dump(mode="json")
    data.update(solver="offloading-cpsat", status="optimal", objective=r, bound=r)
    (folder / "reference.json").write_text(json.dumps(data))
    cert = json.loads((folder / "certificate.json").read_text())
    t = cert["target"]["value"]
    limit = t / r if with_bound else None
    cert["reference"].update(value=r, status="optimal")
    cert.update(ratio=t / r, bound=r if with_bound else None, bound_kind="solver: offloading-cpsat" if with_bound
                else None, ratio_limit=limit, claim=certificate.statement("offloading", t / r, limit))
    (folder / "certificate.json").write_text(json.dumps(cert))
    return r


# ---- case 5: every printed number recomputed ---------------------------------------------------

def test_shipped_certificate_passes_with_its_proof_named(capsys):
    assert main(["adversary", "check", str(HEFT)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith(f"OK {HEFT}: heft 831.857 / offloading-cpsat 132.54 = 6.2763")
    assert "reference: optimal: the verified bound (solver: offloading-cpsat) meets its value" in out


def test_forged_claim_text_is_refused(tmp_path, capsys):
    folder = _copy(tmp_path)
    _edit(folder, claim="target / optimum >= 99.0000 and <= 99.0000")
    _check_fails(capsys, folder, "certificate.json: claim: the claim is not what the numbers say",
                 "'target / optimum >= 6.2763 and <= 6.2763'")


def test_random_reference_labelled_exact_with_solver_bound_fails(tmp_path, capsys):
    """The issue's forgery: a random schedule labelled offloading-cpsat / optimal, its value
    given as the solver's bound; re-running offloading-cpsat proves the optimum 132.54."""
    folder = _copy(tmp_path)
    r = _forge_random_reference(folder, with_bound=True)
    err = _check_fails(capsys, folder, "certificate.json: bound: cannot verify the bound", "proves 132.54")
    assert repr(r) in err


def test_random_reference_labelled_optimal_without_bound_fails(tmp_path, capsys):
    folder = _copy(tmp_path)
    _forge_random_reference(folder, with_bound=False)
    _check_fails(capsys, folder, "reference.status: the reference is labelled optimal, but offloading-cpsat re-run "
                                 "finds 132.54")


def test_optimal_label_that_cannot_be_rerun_reads_as_heuristic(tmp_path, capsys):
    """No bound, reference an unknown program labelled optimal: the claim's one side rests on
    the referee alone and passes; the output says the optimality is unverified."""
    folder = _copy(tmp_path)
    cert = json.loads((folder / "certificate.json").read_text())
    cert["reference"]["solver"] = "my-exact"
    cert.update(bound=None, bound_kind=None, ratio_limit=None,
                claim=certificate.statement("offloading", cert["ratio"], None))
    (folder / "certificate.json").write_text(json.dumps(cert))
    assert main(["adversary", "check", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "(target / optimum >= 6.2763)" in out
    assert "reference: heuristic reference (its 'optimal' status is unverified: 'my-exact' is not a registered " \
           "solver)" in out


@pytest.mark.parametrize("changes,pieces", [
    ({"bound_kind": "trust me"}, ["bound_kind: cannot verify a bound of kind 'trust me'"]),
    ({"bound_kind": "solver: heft"}, ["bound_kind: a solver bound must be the reference's ('offloading-cpsat')"]),
    ({"ratio_limit": 7.5}, ["ratio_limit: the ratio limit T/B is 6.27627"]),
    ({"ratio_limit": None}, ["ratio_limit: the ratio limit T/B is 6.27627"]),
    ({"sense": "max"}, ["sense: 'max', but the instance gives 'min'"]),
    ({"bound": 140.0, "bound_kind": "combinatorial: heads"}, ["bound: the combinatorial bound is"]),
])
def test_each_recorded_number_and_label_is_compared(tmp_path, capsys, changes, pieces):
    folder = _copy(tmp_path)
    _edit(folder, **changes)
    _check_fails(capsys, folder, *pieces)


def test_solver_bound_beyond_what_the_rerun_proves_is_refused(tmp_path, capsys):
    """A bound 1 % above the optimum, every derived number made consistent with it."""
    folder = _copy(tmp_path)
    cert = json.loads((folder / "certificate.json").read_text())
    b = OPT * 1.01
    t = cert["target"]["value"]
    cert["reference"]["status"] = "feasible"
    cert.update(bound=b, ratio_limit=t / b, claim=certificate.statement("offloading", cert["ratio"], t / b))
    (folder / "certificate.json").write_text(json.dumps(cert))
    # the reference's value is below this bound: refused before or by the re-run, never OK
    _check_fails(capsys, folder, "certificate.json: bound:")


# ---- case 8: damaged certificates and states ------------------------------------------------

@pytest.mark.parametrize("changes,field", [
    ({"bound": "x"}, "bound: Input should be a valid number"),
    ({"ratio": KeyError}, "ratio: required field is missing"),
    ({"ratio": "1.5"}, "ratio: Input should be a valid number"),
    ({"target": [1, 2]}, "target: Input should be an object"),
    ({"reference": {"value": 1}}, "reference.solver: required field is missing"),
    ({"certificate_version": "1"}, "certificate_version: not a version-1 certificate"),
])
def test_damaged_certificate_one_line(tmp_path, capsys, changes, field):
    folder = _copy(tmp_path)
    _edit(folder, **changes)
    _check_fails(capsys, folder, f"certificate.json: {field}")


def test_solution_path_outside_the_folder_is_refused(tmp_path, capsys):
    folder = _copy(tmp_path)
    cert = json.loads((folder / "certificate.json").read_text())
    cert["target"]["solution"] = "/etc/passwd"
    (folder / "certificate.json").write_text(json.dumps(cert))
    _check_fails(capsys, folder, "target.solution: path '/etc/passwd' leads outside the folder")


def test_several_folders_one_line_each(tmp_path, capsys):
    bad = _copy(tmp_path)
    _edit(bad, ratio=1.0)
    assert main(["adversary", "check", str(HEFT), str(bad)]) == 2
    cap = capsys.readouterr()
    assert cap.out.count("\n") == 1 and cap.out.startswith(f"OK {HEFT}")
    assert cap.err.count("\n") == 1 and "certificate.json: ratio: the referee gives" in cap.err


def _config(evals=6, **kw):
    fam = kw.pop("family", "placement")
    return Config(family=fam, target=contender(fam, solver=kw.pop("target", "placement-fifo")),
                  reference=contender(fam, solver=kw.pop("reference", "sjf"), field_name="--reference"),
                  size=kw.pop("size", 6), evals=evals, seed=kw.pop("seed", 0), **kw)


ARGV = ["adversary", "search", "--family", "placement", "--target", "placement-fifo", "--reference", "sjf",
        "--size", "6", "--seed", "0", "--quiet"]


@pytest.mark.parametrize("damage,field", [
    (lambda st: [1], "state_version: not a version-1 search state"),
    (lambda st: {k: v for k, v in st.items() if k != "rng"}, "rng: required field is missing"),
    (lambda st: {**st, "evals": "many"}, "evals: Input should be a valid integer"),
    (lambda st: {**st, "rng": {"bit_generator": "PCG64", "state": 1}}, "rng: not the state of a PCG64 generator"),
    (lambda st: {**st, "best": {**st["best"], "folder": "../../etc"}}, "best.folder: path '../../etc' leads outside"),
    (lambda st: {**st, "current": {"instance": {}, "ratio": 1, "badness": 1, "t": 1, "r": 1}},
     "current.instance.format_version"),
])
def test_damaged_state_one_line(tmp_path, capsys, damage, field):
    out = tmp_path / "s"
    search(_config(evals=2), out, progress=False)
    st = json.loads((out / "state.json").read_text())
    (out / "state.json").write_text(json.dumps(damage(st)))
    assert main([*ARGV, "--evals", "4", "-o", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "state.json: " in err and field in err, err


# ---- case 7: a search killed at any moment ---------------------------------------------------

def _trace(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "trace.jsonl").read_text().splitlines()]


def _untimed(folder: Path) -> list[dict]:
    """The trace without its wall-clock column (the rest is determined by the seed)."""
    return [{k: v for k, v in row.items() if k != "elapsed_s"} for row in _trace(folder)]


class Crash(BaseException):
    """Stands for SIGKILL: nothing after the raise point runs (no except clause catches it)."""


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("full") / "s"
    search(_config(evals=10), out, progress=False)
    return out


@pytest.mark.parametrize("where", ["certificate_write", "point_best", "save", "disk_full_in_log"])
def test_killed_search_resumes_without_mixed_best_or_duplicate(tmp_path, monkeypatch, uninterrupted, where):
    """A crash in the middle of writing an improvement, right after ``best`` moved, or after
    an evaluation was logged but before the state counting it was saved: ``best`` is always
    one complete, checkable certificate, and the resumed trace equals the uninterrupted one."""
    out = tmp_path / "s"
    calls = {"n": 0}
    if where == "certificate_write":
        real = certificate.write

        def target(folder, inst, ts, rs, cert):  # the instance is written, then the process dies
            calls["n"] += 1
            if calls["n"] == 2:
                io.write_json(Path(folder) / "instance.json", inst)
                raise Crash
            real(folder, inst, ts, rs, cert)
        monkeypatch.setattr(certificate, "write", target)
    elif where == "point_best":
        real = search_mod._point_best

        def target(out_, folder):
            real(out_, folder)
            calls["n"] += 1
            if calls["n"] == 2:
                raise Crash
        monkeypatch.setattr(search_mod, "_point_best", target)
    elif where == "save":
        real = Search.save

        def target(self):
            calls["n"] += 1
            if calls["n"] == 4:
                raise Crash
            real(self)
        monkeypatch.setattr(Search, "save", target)
    else:
        real = Search._log

        def target(self, row):  # half a line reaches the disk, then it is full
            calls["n"] += 1
            if calls["n"] == 3:
                with open(self.out / "trace.jsonl", "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row)[:20])
                raise OSError(28, "No space left on device")
            real(self, row)
        monkeypatch.setattr(Search, "_log", target)
    with pytest.raises(OSError if where == "disk_full_in_log" else Crash):
        search(_config(evals=10), out, progress=False)
    monkeypatch.undo()
    certificate.check(out / "best")  # the best folder is consistent even now
    search(_config(evals=10), out, resume=True, progress=False)
    assert _untimed(out) == _untimed(uninterrupted)
    evals = [row["eval"] for row in _trace(out)]
    assert evals == sorted(set(evals))  # no evaluation logged twice
    assert sorted(p.name for p in (out / "improvements").iterdir()) == \
        sorted(p.name for p in (uninterrupted / "improvements").iterdir())
    a = certificate.check(out / "best")
    assert a["instance_hash"] == io.read_json(uninterrupted / "best" / "certificate.json")["instance_hash"]
    assert not list(out.glob(".*")) and not list((out / "improvements").glob(".*"))


def test_sigkill_of_a_real_search_process(tmp_path, uninterrupted):
    """The CLI in a subprocess, killed with SIGKILL once a few evaluations are logged, then
    resumed: no evaluation twice, the same trace and best as the uninterrupted search."""
    out = tmp_path / "s"
    argv = [sys.executable, "-m", "edgebench", *ARGV, "--evals", "10", "-o", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        trace = out / "trace.jsonl"
        if trace.exists() and trace.read_text().count("\n") >= 3:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = subprocess.run(argv + ["--resume"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _untimed(out) == _untimed(uninterrupted)
    assert os.path.islink(out / "best")
    certificate.check(out / "best")


# ---- case 12: data reaches the terminal escaped ---------------------------------------------

def test_certificate_labels_cannot_write_to_the_terminal(tmp_path, capsys):
    folder = _copy(tmp_path)
    cert = json.loads((folder / "certificate.json").read_text())
    cert["target"]["solver"] = "heft\x1b[2J\nOK forged: 1.0000 /"
    (folder / "certificate.json").write_text(json.dumps(cert))
    assert main(["adversary", "check", str(folder)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "\x1b" not in out and "heft\\x1b[2J\\nOK forged" in out


def test_input_error_names_are_escaped():
    line = InputError("bad \x1b]0;title\x07", file="a\nOK b.json", field="x\u202e").line()
    assert line == "a\\nOK b.json: x\\u202e: bad \\x1b]0;title\\x07"


@pytest.mark.parametrize("changes,field", [({"target": [1, 2]}, "target"), ({"search": KeyError}, "params.seed"),
                                           ({"ratio": "x"}, "ratio")])
def test_sets_build_reads_a_damaged_certificate_in_one_error(tmp_path, changes, field):
    """The ``adversary`` converter of ``sets build`` reads certificates with the same model."""
    from edgebench.adversary import found

    folder = _copy(tmp_path)
    _edit(folder, **changes)
    with pytest.raises(InputError) as err:
        found.convert([folder / "instance.json"], seed=0, target="heft", reference="offloading-cpsat", size=10,
                      evals=300)
    assert err.value.field == field


def test_search_killed_during_its_start_restarts_clean(tmp_path, uninterrupted, monkeypatch):
    """Killed after the start's certificate, before the first state: no state.json, so the
    same command starts afresh and ends as the uninterrupted search (no stale folder)."""
    out = tmp_path / "s"
    monkeypatch.setattr(Search, "save", lambda self: (_ for _ in ()).throw(Crash()))
    with pytest.raises(Crash):
        search(_config(evals=10), out, progress=False)
    monkeypatch.undo()
    assert (out / "improvements" / "0001").is_dir() and not (out / "state.json").exists()
    (out / "improvements" / "0009").mkdir()  # a stale folder the fresh search must not keep
    search(_config(evals=10), out, progress=False)
    assert _untimed(out) == _untimed(uninterrupted)
    assert sorted(p.name for p in (out / "improvements").iterdir()) == \
        sorted(p.name for p in (uninterrupted / "improvements").iterdir())


def test_a_module_named_by_a_certificate_is_never_imported(tmp_path, monkeypatch, capsys):
    """A reference labelled ``MODULE:FUNCTION`` / optimal: the check does not resolve it (that
    would import a module from the working folder: code execution from data)."""
    folder = _copy(tmp_path)
    (tmp_path / "evil_adv_mod.py").write_text("open('IMPORTED', 'w').close()\ndef solve(i, **k): pass\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    cert = json.loads((folder / "certificate.json").read_text())
    cert["reference"]["solver"] = "evil_adv_mod:solve"
    cert.update(bound=None, bound_kind=None, ratio_limit=None,
                claim=certificate.statement("offloading", cert["ratio"], None))
    (folder / "certificate.json").write_text(json.dumps(cert))
    assert main(["adversary", "check", str(folder)]) == 0
    assert "is a MODULE:FUNCTION, not a built-in exact solver" in capsys.readouterr().out
    assert not (tmp_path / "IMPORTED").exists()
