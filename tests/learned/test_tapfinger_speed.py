"""TapFinger's training hot path (issue 24, item 3): the typed graph projections compute what
the first path computed, the memoised action masks are the recomputed ones, and the same seed
gives the same training run."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from edgebench.learned import tapfinger as tf  # noqa: E402
from edgebench.learned.envs.placement import PlacementParallelEnv, PlacementVectorEnv  # noqa: E402
from edgebench.learned.train_tapfinger import TrainArgs, train  # noqa: E402

SMALL = {"num_tasks": 8}
#: the wall-clock columns of a training run's metrics (everything else must repeat)
TIMED = {"sps", "ms_per_decision"}


@pytest.fixture(autouse=True)
def _threads():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
    tf.TYPED_PROJECTIONS = True
    tf.PACKED = True


def _batch(preset: str, params: dict, steps: int = 4, envs: int = 3):
    """A small batch of mid-episode states (obs, ids, masks) and a float64 model."""
    es = [tf.make_env(preset=preset, params=params, variant="multi") for _ in range(envs)]
    lay = tf.EnvLayout.of_env(es[0])
    torch.manual_seed(0)
    model = tf.make_model(tf.ModelConfig(hidden=16, layers=2, heads=2, pointer_layers=1), lay).double()
    seeds = iter(range(100))
    venv = PlacementVectorEnv(es, lambda env: env.reset(seed=next(seeds))[0])
    obs = venv.reset()
    rng = np.random.default_rng(0)
    for _ in range(steps):
        actions, _ = tf.act_batch(model, es, obs, lay, rng, greedy=False)
        obs, *_ = venv.step(actions)
    o = np.stack([np.stack([ob[a]["observation"] if a in ob else np.zeros(lay.obs_size(), np.float32)
                            for a in env.possible_agents]) for env, ob in zip(es, obs)])
    ids = np.stack([tf.pending_ids(env, lay) for env in es])
    masks = torch.as_tensor(np.stack([tf.masks_from_obs(env, ob, lay) for env, ob in zip(es, obs)]))
    return model, o, ids, masks


@pytest.mark.parametrize("preset,params", [("synthetic-3", SMALL), ("hetero-6", {"num_tasks": 24, "max_eligible": 6})])
def test_typed_projections_equal_the_first_path(preset, params):
    """Each node type's projections applied to its own nodes (the new path) give the outputs
    and the gradients of every projection applied to every node and the own type's row picked
    (the first path), in float64 to 1e-12."""
    model, o, ids, masks = _batch(preset, params)
    out = {}
    for typed in (False, True):
        tf.TYPED_PROJECTIONS = typed
        model.zero_grad()
        logits, z, clus, values = model(o, ids, masks)
        (logits.clamp(min=-10.0).sum() + values.sum() + z.square().sum()).backward()
        out[typed] = ([t.detach().clone() for t in (logits, z, clus, values)],
                      [p.grad.detach().clone() for p in model.parameters() if p.grad is not None])
    for a, b in zip(out[False][0] + out[False][1], out[True][0] + out[True][1]):
        assert torch.allclose(a, b, rtol=0.0, atol=1e-12), float((a - b).abs().max())
    assert len(out[False][1]) == len(out[True][1]) > 0


def test_memoised_masks_equal_recomputed_ones():
    """Over whole episodes of random valid joint actions, every agent's memoised mask equals a
    freshly computed one, and the memo is read-only (no caller can corrupt a later step)."""
    for seed in range(3):
        env = tf.make_env(preset="hetero-6", params={"num_tasks": 16, "max_eligible": 6}, variant="multi")
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        steps = 0
        while env.agents:
            for n in range(len(env.possible_agents)):
                memo = env._mask(n)
                env.memo_masks = False
                fresh = env._mask(n)
                env.memo_masks = True
                assert np.array_equal(memo, fresh)
                assert not memo.flags.writeable
            actions = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
            obs, *_ = env.step(actions)
            steps += 1
        assert steps > 0 and PlacementParallelEnv.memo_masks


def _run(seed: int) -> dict:
    args = TrainArgs(preset="synthetic-3", variant="multi", gen_params=SMALL, steps=64, seed=seed, num_envs=4,
                     rollout_steps=8, epochs=2, minibatch=16, eval_every=1, eval_episodes=1, device="cpu",
                     model=tf.ModelConfig(hidden=16, layers=1, heads=2, pointer_layers=1))
    return train(args, log=None)


def test_same_seed_same_training_run():
    """Two training runs with the same seed (vector env, batched policy, new hot path) log the
    same metrics (wall-clock columns aside) and end with the same weights; another seed differs."""
    a, b, c = _run(3), _run(3), _run(4)

    def rows(res):
        return [{k: v for k, v in r.items() if k not in TIMED} for r in res["history"]]

    def same(x, y):
        if isinstance(x, float) and isinstance(y, float):
            return (math.isnan(x) and math.isnan(y)) or x == y
        return x == y

    ra, rb = rows(a), rows(b)
    assert len(ra) == len(rb) > 2
    for x, y in zip(ra, rb):
        assert x.keys() == y.keys() and all(same(x[k], y[k]) for k in x), (x, y)
    sa, sb, sc = (r["model"].state_dict() for r in (a, b, c))
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


@pytest.mark.parametrize("preset,params", [("synthetic-3", SMALL), ("hetero-6", {"num_tasks": 24, "max_eligible": 6})])
def test_packed_path_equals_the_first_path(preset, params):
    """Issue 42: the packed forward (absent running rows and dummy pending slots out of the graph,
    the pointer's linear layers on the real tokens only) gives the first path's logits, values,
    cluster embeddings and real slots' embeddings, and the same gradients of every weight, in
    float64 to 1e-11 (dummy slots' embeddings are 0 on the packed path and never read)."""
    model, o, ids, masks = _batch(preset, params, steps=6)
    lay = model.lay
    P, W = lay.pending_size, tf.N_PEND + lay.types
    real = torch.as_tensor(o[..., tf.N_CLUSTER:tf.N_CLUSTER + P * W].reshape(*o.shape[:2], P, W)[..., 0] > 0.5)
    assert real.any() and not real.all()  # both kinds of slot are exercised
    out = {}
    for packed in (False, True):
        model.zero_grad()
        logits, z, clus, values = model(o, ids, masks, packed=packed)
        zr = z * real[..., None]
        (logits.clamp(min=-10.0).sum() + values.sum() + zr.square().sum() + clus.sum()).backward()
        out[packed] = ([t.detach().clone() for t in (logits, zr, clus, values)],
                       [p.grad.detach().clone() for p in model.parameters() if p.grad is not None])
    assert len(out[False][1]) == len(out[True][1]) > 0
    for a, b in zip(out[False][0] + out[False][1], out[True][0] + out[True][1]):
        assert torch.allclose(a, b, rtol=0.0, atol=1e-11), float((a - b).abs().max())


@pytest.mark.parametrize("preset,params", [("synthetic-3", {"num_tasks": 24}),
                                           ("hetero-6", {"num_tasks": 40, "max_eligible": 6, "noise": 0.2})])
def test_kept_grids_give_a_fresh_envs_masks(preset, params):
    """Issue 42: an env that keeps its per-type allocation grids across episodes (noise-free: the
    whole grid per type key) shows the action masks of a fresh env, over whole episodes of
    random valid joint actions (one env, three episodes; with and without noise)."""
    env = tf.make_env(preset=preset, params=params, variant="multi")
    for seed in range(3):
        fresh = tf.make_env(preset=preset, params=params, variant="multi")
        obs, _ = env.reset(seed=seed)
        fobs, _ = fresh.reset(seed=seed)
        rng = np.random.default_rng(seed)
        steps = 0
        while env.agents:
            for a in env.agents:
                assert np.array_equal(obs[a]["action_mask"], fobs[a]["action_mask"])
            actions = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
            obs, *_ = env.step(actions)
            fobs, *_ = fresh.step(actions)
            steps += 1
        assert steps > 0 and not fresh.agents


def test_array_draws_follow_the_weights():
    """tf._draw: never an index of weight 0, frequencies within 0.01 of the normalised weights
    (20,000 draws per row; the standard error is at most 0.0036)."""
    w = np.array([[0.0, 1.0, 3.0, 0.0, 4.0], [2.0, 0.0, 0.0, 2.0, 0.0]], dtype=np.float32)
    rng = np.random.default_rng(0)
    draws = np.stack([tf._draw(rng, w) for _ in range(20_000)])
    for r in range(len(w)):
        freq = np.bincount(draws[:, r], minlength=w.shape[1]) / len(draws)
        assert np.all(freq[w[r] == 0] == 0)
        assert np.allclose(freq, w[r] / w[r].sum(), atol=0.01), freq


@pytest.mark.parametrize("preset,params", [("synthetic-3", SMALL), ("hetero-6", {"num_tasks": 24, "max_eligible": 6})])
def test_packed_update_terms_equal_the_first_path(preset, params):
    """Issue 42: the update's log-probabilities, entropies and values on the packed path (the
    recorded slot and cell masks, the allocation head on the conflict winners only) equal the
    first path's (full masks, every agent's head), and so do the gradients of every weight, in
    float64 to 1e-10, over rollout batches of a float64 model."""
    from edgebench.learned.train_tapfinger import _logp_entropy

    es = [tf.make_env(preset=preset, params=params, variant="multi") for _ in range(3)]
    lay = tf.EnvLayout.of_env(es[0])
    torch.manual_seed(0)
    model = tf.make_model(tf.ModelConfig(hidden=16, layers=2, heads=2, pointer_layers=1), lay).double()
    seeds = iter(range(100))
    venv = PlacementVectorEnv(es, lambda env: env.reset(seed=next(seeds))[0])
    obs = venv.reset()
    rng = np.random.default_rng(0)
    recs = []
    for _ in range(6):
        actions, rec = tf.act_batch(model, es, obs, lay, rng, greedy=False)
        obs, *_ = venv.step(actions)
        recs.append(rec)
    batch = {k: np.concatenate([r[k] for r in recs]) for k in recs[0] if k != "margin"}
    idx = np.arange(len(batch["slot"]))
    assert batch["m"].sum() > 0 and (batch["m"] == 0).any()
    out = {}
    try:
        for packed in (False, True):
            tf.PACKED = packed
            model.zero_grad()
            logp, ent, values = _logp_entropy(model, batch, idx)
            (logp.sum() + ent.sum() + values.sum()).backward()
            out[packed] = [t.detach().clone() for t in (logp, ent, values)] + [
                p.grad.detach().clone() for p in model.parameters() if p.grad is not None]
    finally:
        tf.PACKED = True
    assert len(out[False]) == len(out[True]) > 3
    for a, b in zip(out[False], out[True]):
        assert torch.allclose(a, b, rtol=0.0, atol=1e-10), float((a - b).abs().max())
