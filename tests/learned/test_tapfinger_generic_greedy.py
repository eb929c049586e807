"""Issue 42 (generic models' greedy validation far above their sampled episodes): the greedy
play's network path (float64, full pointer, allocation head on the full grid) scores every state
as the sampled play's path does (float32, packed pointer, compact allocation cells), so the gap
is the policy's, not a path mismatch; and bench/tapfinger_greedy_gap.py's decodings
(docs/tapfinger.md "Type-generic inputs: the greedy gap")."""

from __future__ import annotations


import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from edgebench.instances.generators import generate  # noqa: E402
from edgebench.learned import tapfinger as tf  # noqa: E402

SMALL = {"num_tasks": 12, "switching_overhead": 0, "noise": 0}
CFG = tf.ModelConfig(hidden=16, layers=1, heads=2, pointer_layers=1, inputs="generic", void_rule="system")
TOL = 1e-5  # probabilities: float32 vs float64 arithmetic of the same weights


@pytest.fixture(autouse=True)
def _threads():
    torch.set_num_threads(1)
    yield


def _model(seed: int = 0):
    torch.manual_seed(seed)
    env = tf.make_env(preset="synthetic-3", params=SMALL, variant="multi", inputs="generic")
    return tf.make_model(CFG, tf.generic_layout(env))


def test_greedy_and_sampled_paths_give_the_same_policy_on_every_state():
    """Along a sampled episode, at every state: the pointer distribution of the sampled path
    (float32, packed) and of the greedy path (float64 copy, full) agree within TOL, masks
    included (void allowed or not); so do the allocation distributions of each active agent's
    likeliest slot, compact cells (sampled) vs laid out on the full grid (greedy)."""
    model = _model().eval()
    m64 = tf.acting_model(model)
    inst = generate("placement", "synthetic-3", seed=7, variant="multi", **SMALL)
    env = tf.make_env(inst, inputs="generic")
    lay = tf.generic_layout(env)
    tf.bind_layout(model, lay), tf.bind_layout(m64, lay)
    N, P = lay.n, lay.pending_size
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0, options={"instance": inst})
    checked = void_states = 0
    while env.agents:
        o = np.stack([obs[a]["observation"] for a in env.possible_agents])[None]
        ids = tf.pending_ids(env, lay)[None]
        masks = tf.masks_from_obs(env, obs, lay)[None]
        void_ok = tf.void_allowed(env, lay, "system")[None]
        slot_ok = masks.reshape(1, N, P, -1).any(-1)
        with torch.inference_mode():
            l32, z32, c32, _ = model(o, ids, torch.as_tensor(masks), void_ok, False, packed=True, slot_ok=slot_ok)
            l64, z64, c64, _ = m64(o, ids, torch.as_tensor(masks), void_ok, False)
        p32, p64 = torch.softmax(l32, -1).numpy(), torch.softmax(l64, -1).numpy()
        assert np.array_equal(l32.numpy() > tf.NEG / 2, l64.numpy() > tf.NEG / 2)  # the same masks
        assert np.abs(p32 - p64).max() <= TOL
        for n in np.flatnonzero(slot_ok[0].any(-1)):
            s = int(np.argmax(np.where(slot_ok[0, n], p64[0, n, :P], -1.0)))
            slot = np.full((1, N), P)
            slot[0, n] = s
            won = np.zeros((1, N), dtype=np.int64)
            won[0, n] = 1
            own = masks.reshape(1, N, P, -1)[0, np.arange(N), np.minimum(slot[0], P - 1)][None]
            cells = tf.winner_cells([env], ids, slot, won, own, lay)
            with torch.inference_mode():
                a64 = m64.alloc_logits(z64, c64, torch.as_tensor(slot), torch.as_tensor(masks),
                                       tf.grid_cells(cells, own, won))[0, n]
                a32 = model.alloc_head(z32[0, n, s][None], c32[0, n][None], torch.as_tensor(own[0, n][None]), cells,
                                       compact=True)[0]
            assert np.abs(torch.softmax(a64, -1).numpy() - torch.softmax(a32, -1).numpy()).max() <= TOL
            checked += 1
            void_states += int(void_ok[0, n])
        actions, _ = tf.act(model, env, obs, lay, rng, greedy=False, values=False)
        obs = env.step(actions)[0]
    assert checked >= 12 and void_states >= 1


def test_greedy_gap_decodings(tmp_path, capsys, bench_script):
    """The bench's "greedy" decoding is run_episode's greedy play (same mean completion time);
    "greedy-novoid" never voids while a slot is placeable (no void, no stall); every decoding
    finishes the episode; pick_max is restored; a bad decoding is one line and exit 2."""
    gap = bench_script("tapfinger_greedy_gap")
    model = _model(1)
    inst = generate("placement", "synthetic-3", seed=11, variant="multi", **SMALL)
    env = tf.make_env(inst, inputs="generic")
    ref = tf.run_episode(model, env, tf.generic_layout(env), seed=0, instance=inst)
    greedy = gap.play(model, inst, "multi", 0, "greedy")
    assert greedy["done"] and abs(greedy["mean_ct"] - ref["mean_ct"]) <= 1e-9
    novoid = gap.play(model, inst, "multi", 0, "greedy-novoid")
    assert novoid["done"] and novoid["voids"] == 0 and novoid["stalls"] == 0 and novoid["starts"] == 12
    both = gap.play(model, inst, "multi", 0, "sample-both")
    assert both["done"] and both["starts"] == 12
    assert tf.pick_max is gap.pick_max
    path = tmp_path / "m.pt"
    tf.save_checkpoint(path, model, tf.generic_layout(env), extra={"args": {"preset": "synthetic-3", "variant": "multi",
                                                                              "gen_params": SMALL}})
    assert gap.main([str(path), "--seeds", "1", "--decodings", "greedy"]) == 0
    assert "greedy" in capsys.readouterr().out
    assert gap.main([str(path), "--decodings", "bogus"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bogus" in err[0]
