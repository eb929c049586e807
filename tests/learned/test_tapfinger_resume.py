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
