"""Training that stops and resumes anywhere (issue 42 item 1): N updates in one process give
the same weights as N/2 updates, a stop, and a resume for the other N/2 — the run folder
holds the whole state (weights, both optimisers, the learner's RNGs, the vector env's episodes
in flight, the step ledger)."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from edgebench.learned import tapfinger as tf  # noqa: E402
from edgebench.learned.envs.placement import PlacementParallelEnv, PlacementVectorEnv  # noqa: E402
from edgebench.learned.train_tapfinger import TrainArgs, train  # noqa: E402

#: 4 envs x 8 steps per update; 12-task episodes of the multi variant last longer than one
#: update, so the stop falls inside episodes (the journal is what carries them over)
BASE = dict(preset="synthetic-3", variant="multi", gen_params={"num_tasks": 12}, seed=3, num_envs=4,
            rollout_steps=8, epochs=2, minibatch=16, eval_every=0, eval_episodes=1, threads=1,
            device="cpu", critic_warmup=1, val_episodes=1,
            model=tf.ModelConfig(hidden=16, layers=1, heads=2))
UPDATES = 6


def weights(model) -> dict[str, np.ndarray]:
    return {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}


def last_weights(run) -> dict[str, np.ndarray]:
    model, _, _ = tf.load_checkpoint(run / "last.pt")
    return weights(model)


def test_straight_and_stopped_and_resumed_runs_give_identical_weights(tmp_path):
    steps = UPDATES * BASE["num_envs"] * BASE["rollout_steps"]
    straight = tmp_path / "straight"
    train(TrainArgs(**BASE, steps=steps, out=str(straight)), log=None)
    split = tmp_path / "split"
    train(TrainArgs(**BASE, steps=steps // 2, out=str(split)), log=None)
    blob = torch.load(split / "last.pt", weights_only=True)
    st = blob["extra"]["train_state"]
    # episodes were in flight at the stop: the journal holds their actions
    assert any(len(a) > 0 for a in st["venv"]["actions"])
    assert st["ledger"]["resumptions"] == 0 and st["ledger"]["env_steps"] == steps // 2
    res = train(TrainArgs(**BASE, steps=steps, out=str(split), resume=True), log=None)
    a, b = last_weights(straight), last_weights(split)
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k], b[k]), k  # bit for bit, same machine and thread count
    assert res["ledger"]["resumptions"] == 1 and res["ledger"]["env_steps"] == steps
    assert res["ledger"]["cpu_seconds"] > 0
    # the training rows (not the timing) agree (repr: NaN rows compare equal)
    rows = lambda run: [repr((r["update"], r["global_step"], r.get("train_mean_ct"), r.get("value_loss")))  # noqa: E731
                        for r in torch.load(run / "last.pt", weights_only=True)["extra"]["train_state"]["history"]
                        if r.get("sps") is not None]
    assert rows(straight) == rows(split)
    # the state stays small (a few MB at the shipped size; this model is tiny)
    assert (split / "last.pt").stat().st_size < 4 * 2**20


def test_vector_env_restores_the_episodes_in_flight():
    """state() -> restore() on fresh envs gives the same observations and the same next steps."""
    def make():
        return [PlacementParallelEnv(params={"num_tasks": 8}, variant="multi") for _ in range(2)]

    draws = iter(range(100))
    draw = lambda: [next(draws), 7]  # noqa: E731
    start = lambda env, tok: env.reset(seed=int(tok[0]))[0]  # noqa: E731
    a = PlacementVectorEnv(make(), draw=draw, start=start)
    obs = a.reset()
    rng = np.random.default_rng(0)

    def random_actions(venv, obs):
        acts = []
        for env, o in zip(venv.envs, obs):
            acts.append({ag: int(rng.choice(np.flatnonzero(o[ag]["action_mask"]))) for ag in o})
        return acts

    for _ in range(5):
        obs, *_ = a.step(random_actions(a, obs))
    saved = json.loads(json.dumps(a.state()))  # plain data
    b = PlacementVectorEnv(make(), draw=draw, start=start)
    obs_b = b.restore(saved)
    for oa, ob in zip(obs, obs_b):
        for ag in oa:
            assert np.array_equal(oa[ag]["observation"], ob[ag]["observation"])
            assert np.array_equal(oa[ag]["action_mask"], ob[ag]["action_mask"])
    acts = random_actions(a, obs)
    ra, rb = a.step(acts)[1], b.step(acts)[1]
    assert np.array_equal(ra, rb)
    with pytest.raises(ValueError):
        b.restore({**saved, "tokens": saved["tokens"][:1], "actions": saved["actions"][:1],
                   "returns": saved["returns"][:1]})


def test_annealed_rates_follow_the_run_s_steps_across_a_resume(tmp_path):
    """--anneal-lr STEPS: before each update both rates are base x (1 - step / STEPS), step the
    env step at which that update's rollout began; the horizon is the option's, not --steps, so a
    run stopped early and resumed gives the straight run's weights bit for bit."""
    from edgebench.learned.train_tapfinger import lr_factor

    per_update = BASE["num_envs"] * BASE["rollout_steps"]
    steps = UPDATES * per_update
    args = dict(BASE, lr=1e-3, critic_lr=2e-3, anneal_steps=steps + per_update)
    straight = tmp_path / "straight"
    train(TrainArgs(**args, steps=steps, out=str(straight)), log=None)
    split = tmp_path / "split"
    train(TrainArgs(**args, steps=steps // 2, out=str(split)), log=None)
    train(TrainArgs(**args, steps=steps, out=str(split), resume=True), log=None)
    a, b = last_weights(straight), last_weights(split)
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    # the last update's rollout began at steps - per_update: factor 2 / (UPDATES + 1)
    factor = lr_factor(steps - per_update, steps + per_update)
    assert factor == pytest.approx(2 / (UPDATES + 1), rel=1e-12)
    opt = torch.load(straight / "last.pt", weights_only=True)["optimizer"]
    assert [g["lr"] for g in opt["param_groups"]] == pytest.approx([1e-3 * factor, 2e-3 * factor], rel=1e-12)
    # the decay changes the run (the same run at constant rates ends elsewhere)
    const = tmp_path / "const"
    train(TrainArgs(**dict(args, anneal_steps=0), steps=steps, out=str(const)), log=None)
    c = last_weights(const)
    assert any(not np.array_equal(a[k], c[k]) for k in a)
    assert lr_factor(0, 10) == 1.0 and lr_factor(10, 10) == 0.0 and lr_factor(20, 10) == 0.0


def test_anneal_lr_reaches_train_args_and_the_recorded_command():
    """``--anneal-lr STEPS`` reaches TrainArgs.anneal_steps and the recorded command (absent by
    default); a negative horizon is refused by the parser."""
    from edgebench.cli import build_parser
    from edgebench.learned.tapfinger_cli import train_args_from_cli, training_command

    parse = build_parser().parse_args
    base = ["train", "tapfinger", "--out", "o", "--set", "num_tasks=8"]
    ns = parse(base)
    assert train_args_from_cli(ns).anneal_steps == 0 == TrainArgs().anneal_steps
    assert "--anneal-lr" not in training_command(ns)
    ns = parse(base + ["--anneal-lr", "8000000"])
    assert train_args_from_cli(ns).anneal_steps == 8_000_000
    assert "--anneal-lr 8000000" in training_command(ns)
    with pytest.raises(SystemExit):
        parse(base + ["--anneal-lr", "-1"])
