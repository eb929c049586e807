"""The TapFinger solvers' sampling decode (``samples``; issue 42, docs/learned-baselines.md "Sampling
decode"): after the first episode, K sampled episodes of the same policy, seeded from (seed, k),
and the schedule the referee scores lowest is kept; the same seed gives the same schedule, the
kept one is the minimum of the episodes played, a deadline keeps the best complete episode, and a
bad value is one clear line (exit 2 from the CLI)."""

from __future__ import annotations

import json
import math
import time

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from edgebench import registry  # noqa: E402
from edgebench.cli import main  # noqa: E402
from edgebench.errors import InputError  # noqa: E402
from edgebench.instances.generators import generate  # noqa: E402
from edgebench.instances.io import write_json  # noqa: E402
from edgebench.learned import tapfinger as tf  # noqa: E402
from edgebench.referee import evaluate  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_deterministic")

# a loaded multi instance (the plan file, trained on hetero-6 single, plays it with generic inputs):
# its sampled episodes differ, where a light single instance gives every episode the same value
H6 = dict(variant="multi", num_tasks=40, max_eligible=6)
FILE = "tapfinger-plan-bc-hetero-6-single.pt"


@pytest.fixture(scope="module")
def inst():
    return generate("placement", "hetero-6", seed=10**9 + 5, **H6)


def _episodes(inst, seed: int, k: int, temperature: float = 1.0) -> list[tuple[float, object]]:
    """(referee value, decisions) of the first (greedy) episode and of sampled episodes 1..k, each
    played on its own, outside the solver."""
    model, _, _ = tf.load_checkpoint(tf.CHECKPOINT_DIR / FILE)
    env = tf.make_env(inst, inputs="generic", plan=True)
    lay = tf.generic_layout(env)
    out = []
    with torch.no_grad():
        for j in range(k + 1):
            ep = tf.run_episode(model, env, lay, seed=seed if j == 0 else tf.sample_seed(seed, j), greedy=j == 0,
                                temperature=temperature)
            sol = registry.make_result(inst, "x", status="feasible", decisions=ep["decisions"]).solution
            ev = evaluate(inst, sol)
            assert ev.feasible
            out.append((float(ev.objectives["total_completion_time"]), ep["decisions"]))
    return out


def _sampled_values(inst, seed: int, k: int, temperature: float = 1.0) -> list[float]:
    return [v for v, _ in _episodes(inst, seed, k, temperature)]


def test_sampling_keeps_the_referees_best_episode_and_is_seeded(inst):
    res = registry.solve(inst, "tapfinger-plan-bc", seed=3, samples=6)
    st = res.solution.stats
    assert res.status == "feasible" and st["samples_played"] == 6
    ev = evaluate(inst, res.solution)
    assert ev.feasible
    value = float(ev.objectives["total_completion_time"])
    assert res.solution.objective == pytest.approx(value, rel=1e-12)
    values = _sampled_values(inst, 3, 6)
    assert st["first_objective"] == pytest.approx(values[0], rel=1e-12)
    assert value == pytest.approx(min(values), rel=1e-12) and value <= st["first_objective"]
    assert values[st["best_sample"]] == pytest.approx(value, rel=1e-12)
    assert values.index(min(values)) == st["best_sample"]  # ties keep the earlier episode
    assert st["sample_values"] == pytest.approx(values, rel=1e-12)
    greedy = registry.solve(inst, "tapfinger-plan-bc", seed=3)
    assert greedy.solution.objective == pytest.approx(values[0], rel=1e-12)
    again = registry.solve(inst, "tapfinger-plan-bc", seed=3, samples=6)
    assert again.solution.placement == res.solution.placement
    assert again.solution.objective == res.solution.objective


def test_sampled_episodes_differ_from_each_other(inst):
    """The seeds (seed, k) give different episodes: the decode is not K copies of one."""
    values = _sampled_values(inst, 3, 6)
    assert len(set(values[1:])) > 1 and min(values) < values[0]
    assert len({tf.sample_seed(0, k) for k in range(1, 50)} | {tf.sample_seed(1, 1)}) == 50


def test_a_passed_deadline_keeps_the_first_episode(inst):
    model, _, _ = tf.load_checkpoint(tf.CHECKPOINT_DIR / FILE)
    env = tf.make_env(inst, inputs="generic", plan=True)
    got = tf.best_of_samples(model, env, tf.generic_layout(env), inst, seed=0, samples=5,
                              deadline=time.perf_counter() - 1.0, incumbent=("first", 123.0))
    assert got == ("first", 123.0, [123.0])


def test_temperature_draws_from_the_tempered_policy(inst):
    """``temperature`` reaches the sampled episodes: the solver keeps the least of the tempered
    episodes played on their own (a flatter policy: other draws than at 1, from the same seeds);
    a temperature near 0 samples the greedy episode."""
    res = registry.solve(inst, "tapfinger-plan-bc", seed=1, samples=4, temperature=3.0)
    tempered = _episodes(inst, 1, 4, temperature=3.0)
    values = [v for v, _ in tempered]
    assert res.solution.stats["sample_values"] == pytest.approx(values, rel=1e-12)
    assert res.solution.objective == pytest.approx(min(values), rel=1e-12)
    plain = _episodes(inst, 1, 4)
    assert [d for _, d in tempered[1:]] != [d for _, d in plain[1:]]  # not the untempered episodes
    cold = _episodes(inst, 1, 2, temperature=1e-4)
    assert all(d == cold[0][1] for _, d in cold)


@pytest.mark.parametrize("bad", [-1, True, 1.5, "8", tf.MAX_SAMPLES + 1])
def test_bad_samples_is_an_input_error(inst, bad):
    with pytest.raises(InputError) as exc:
        registry.solve(inst, "tapfinger-plan-bc", seed=0, samples=bad)
    assert exc.value.field == "params.samples"


@pytest.mark.parametrize("bad", [0, -0.5, float("nan"), float("inf"), True, "0.5", tf.MAX_TEMPERATURE + 1])
def test_bad_temperature_is_an_input_error(inst, bad):
    with pytest.raises(InputError) as exc:
        registry.solve(inst, "tapfinger-plan-bc", seed=0, samples=2, temperature=bad)
    assert exc.value.field == "params.temperature"


def test_bad_samples_from_the_cli_is_one_line_and_exit_2(inst, tmp_path, capsys):
    path = tmp_path / "inst.json"
    write_json(path, inst)
    out = tmp_path / "sol.json"
    rc = main(["solve", str(path), "--solver", "tapfinger-plan-bc", "--param", "samples=-3", "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "params.samples" in err[0] and "Traceback" not in err[0]
    assert not out.exists()
    rc = main(["solve", str(path), "--solver", "tapfinger-plan-bc", "--param", "samples=2", "-o", str(out)])
    assert rc == 0
    sol = json.loads(out.read_text())
    assert sol["stats"]["samples_played"] == 2 and math.isfinite(sol["objective"])


def test_a_suite_with_a_bad_decode_parameter_runs_nothing(tmp_path, capsys):
    """The solvers' ``check`` reads the same options: a suite with a bad value stops before any
    run (exit 2, one line naming the entry), and no store is written."""
    suite = tmp_path / "bad.toml"
    suite.write_text('name = "bad"\nseeds = [0]\n[[instances]]\nset = "placement-synthetic-3-v1"\n'
                     '[[solvers]]\nname = "tapfinger"\nparams = { samples = 4, temperature = 0 }\n')
    db = tmp_path / "runs.sqlite"
    assert main(["run", str(suite), "--db", str(db), "--no-report", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "solvers[0].params.temperature" in err[0]
    assert not db.exists()
    assert tf.decode_options({"samples": 3, "temperature": 0.5}) == (True, 3, 0.5)


def test_a_solve_plays_on_one_torch_thread_and_restores_the_callers(inst, monkeypatch):
    seen = []
    play = tf.run_episode

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return play(*args, **kwargs)

    monkeypatch.setattr(tf, "run_episode", spy)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        res = registry.solve(inst, "tapfinger-plan-bc", seed=0, samples=2)
        assert res.status == "feasible" and seen == [1, 1, 1]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
