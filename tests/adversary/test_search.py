"""The adversarial search: certificates the referee re-checks, seeded and resumable runs, the
certified ratio's direction against brute force, and bad input as one line with exit code 2."""

from __future__ import annotations

import json
import math

import pytest

from edgebench.adversary import certificate
from edgebench.adversary.search import Config, Search, contender, search
from edgebench.cli import main
from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.referee import evaluate
from edgebench.registry import solve


def _config(family="offloading", target="heft", reference="peft", size=6, evals=6, **kw):
    return Config(family=family, target=contender(family, solver=target),
                  reference=contender(family, solver=reference, field_name="--reference"), size=size, evals=evals,
                  **kw)


def _ratios(folder):
    return [json.loads(line).get("ratio") for line in (folder / "trace.jsonl").read_text().splitlines()]


def test_every_improvement_has_a_certificate_the_referee_rechecks(tmp_path):
    out = tmp_path / "s"
    summary = search(_config(evals=8, seed=1), out, progress=False)
    folders = sorted((out / "improvements").iterdir())
    assert summary["improvements"] == len(folders) >= 1 and summary["evals"] == 8
    ratios = []
    for f in folders:
        c = certificate.check(f)
        assert math.isclose(c["checked_ratio"], c["ratio"], rel_tol=1e-12)
        ratios.append(c["ratio"])
    assert ratios == sorted(ratios) and certificate.check(out / "best")["ratio"] == ratios[-1]  # min: T/R grows


def test_same_seed_same_search_and_resume_continues_exactly(tmp_path, monkeypatch):
    cfg = _config(family="placement", target="placement-fifo", reference="sjf", size=6, evals=10, seed=2)
    search(cfg, tmp_path / "a", progress=False)
    search(cfg, tmp_path / "b", progress=False)
    assert _ratios(tmp_path / "a") == _ratios(tmp_path / "b")
    # interrupt a third run after 4 steps, then resume it: the same trace as the uninterrupted one
    real, calls = Search._step, []

    def step(self):
        if len(calls) == 4:
            raise KeyboardInterrupt
        calls.append(1)
        real(self)

    monkeypatch.setattr(Search, "_step", step)
    with pytest.raises(KeyboardInterrupt):
        search(cfg, tmp_path / "c", progress=False)
    monkeypatch.setattr(Search, "_step", real)
    with pytest.raises(InputError, match="--resume"):
        search(cfg, tmp_path / "c", progress=False)
    search(cfg, tmp_path / "c", resume=True, progress=False)
    assert _ratios(tmp_path / "c") == _ratios(tmp_path / "a")
    a = io.read_json(tmp_path / "a" / "best" / "certificate.json")
    c = io.read_json(tmp_path / "c" / "best" / "certificate.json")
    assert a["instance_hash"] == c["instance_hash"] and a["ratio"] == c["ratio"]


def test_certified_ratio_brackets_the_true_ratio_by_brute_force(tmp_path):
    """Exact reference (offloading-cpsat): for min the certificate says T/OPT >= T/R and
    <= T/B. Every referee-feasible schedule we can make (200 random ones, the list heuristics)
    has a value >= B, so no schedule contradicts the claimed bracket; and T/R >= T/v for all of
    them only if R <= v (R is the optimum: no schedule found beats it)."""
    out = tmp_path / "x"
    search(_config(target="heft", reference="offloading-cpsat", size=5, evals=3, seed=0), out, progress=False)
    c = certificate.check(out / "best")
    inst = io.load_instance(out / "best" / "instance.json")
    values = []
    for seed in range(200):
        ev = evaluate(inst, solve(inst, "random", seed=seed).solution)
        if ev.feasible:
            values.append(ev.objectives[ev.primary])
    for name in ("heft", "cpop", "peft"):
        ev = evaluate(inst, solve(inst, name).solution)
        values.append(ev.objectives[ev.primary])
    assert len(values) > 100
    tol = 1e-9 * max(values)
    assert all(v >= c["reference"]["value"] - tol for v in values)  # the reference is the optimum here
    assert c["bound"] is not None and all(v >= c["bound"] - tol for v in values)
    assert c["ratio"] <= c["ratio_limit"] * (1 + 1e-9)


def test_maximisation_ratio_direction(tmp_path):
    out = tmp_path / "m"
    search(_config(family="mapping", target="greedy-bw", reference="smart", size=6, evals=4), out, progress=False)
    c = certificate.check(out / "best")
    assert c["sense"] == "max" and c["claim"].startswith("target / optimum <=")
    assert certificate.badness(c["ratio"], "max") == pytest.approx(1 / c["ratio"])


def test_tampered_certificate_is_rejected(tmp_path, capsys):
    out = tmp_path / "t"
    search(_config(evals=2), out, progress=False)
    cert = io.read_json(out / "best" / "certificate.json")
    cert["ratio"] *= 1.5
    (out / "best" / "certificate.json").write_text(json.dumps(cert))
    assert main(["adversary", "check", str(out / "best")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "certificate.json: ratio: the referee gives" in err


@pytest.mark.parametrize("argv,field", [
    (["--family", "offloading", "--target", "nope", "--reference", "peft", "--evals", "2"], "--target"),
    (["--family", "offloading", "--target", "heft", "--reference", "optimus", "--evals", "2"], "--reference"),
    (["--family", "offloading", "--target", "heft", "--reference", "peft"], "--evals"),
    (["--family", "offloading", "--target", "heft", "--reference-command", "true", "--reference", "peft",
      "--evals", "2"], "--reference"),
    (["--family", "offloading", "--target", "heft", "--reference", "peft", "--evals", "2", "--resume"], "state.json"),
    (["--family", "offloading", "--target", "heft", "--target-param", "foo=1", "--reference", "peft", "--evals", "2"],
     "--target-param.foo: unknown parameter"),
    (["--family", "placement", "--size", "100000", "--target", "optimus", "--reference", "sjf", "--evals", "2"],
     "<command line>: --size: bad value"),
    (["--family", "offloading", "--target", "heft", "--reference", "peft", "--evals", "2", "--t0", "0.0005"], "--t0"),
])
def test_bad_parameters_one_line_exit_2(tmp_path, capsys, argv, field):
    assert main(["adversary", "search", *argv, "-o", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err and "Traceback" not in err


def test_cli_search_and_check(tmp_path, capsys):
    out = tmp_path / "cli"
    assert main(["adversary", "search", "--family", "offloading", "--size", "6", "--target", "cpop",
                 "--reference", "heft", "--evals", "3", "--seed", "4", "-o", str(out), "--quiet"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["evals"] == 3 and (out / "state.json").is_file()
    assert main(["adversary", "check", str(out / "best")]) == 0
    assert capsys.readouterr().out.startswith(f"OK {out / 'best'}: cpop ")


def test_help_documents_the_command_with_examples(capsys):
    assert main(["adversary", "--help"]) == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "edgebench adversary search --family offloading" in out
    assert "edgebench adversary check" in out and "docs/adversary.md" in out


def test_module_function_target_and_command_reference(tmp_path, monkeypatch, capsys):
    """Any solver the suite can run: a MODULE:FUNCTION target against an external program."""
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "greedy_offloading.py"
    (tmp_path / "myadv_mod.py").write_text(
        "from edgebench.registry import get\n"
        "def solve(instance, *, time_limit=None, seed=0):\n"
        "    return get('random').fn(instance, seed=seed)\n"
        "solve.families = ('offloading',)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    cmd = f"{sys.executable} {example} {{instance}} {{solution}} --seed {{seed}}"
    assert main(["adversary", "search", "--family", "offloading", "--size", "5", "--target", "myadv_mod:solve",
                 "--reference-command", cmd, "--reference-time-limit", "60", "--evals", "2", "-o", "o",
                 "--quiet"]) == 0
    capsys.readouterr()
    c = certificate.check(tmp_path / "o" / "best")
    assert c["target"]["solver"] == "myadv_mod:solve" and c["reference"]["solver"] == cmd
    assert c["reference"]["status"] in ("feasible", "optimal")
