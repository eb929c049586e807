"""The shared PPO core (edgebench.learned.ppo): GAE against a hand computation, the clipped
surrogate's statistics, the KL early stop of the minibatch epochs."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from edgebench.learned import ppo  # noqa: E402


def test_gae_matches_a_hand_computation_and_stops_at_episode_ends():
    r = np.array([[1.0], [2.0], [3.0]])
    v = np.array([[0.5], [1.0], [1.5]])
    nt = np.array([1.0, 0.0, 1.0])  # the episode ends after step 1
    adv, ret = ppo.gae(r, v, np.array([2.0]), nt, gamma=0.9, lam=0.8)
    d2 = 3.0 + 0.9 * 2.0 - 1.5
    d1 = 2.0 - 1.0  # nothing bootstrapped across the episode end
    d0 = 1.0 + 0.9 * 1.0 - 0.5
    want = [d0 + 0.9 * 0.8 * d1, d1, d2]
    assert adv[:, 0].tolist() == pytest.approx(want)
    assert ret[:, 0].tolist() == pytest.approx([a + b for a, b in zip(want, [0.5, 1.0, 1.5])])


def test_ppo_loss_at_the_rollout_policy_and_when_clipped():
    lp = torch.log(torch.tensor([0.2, 0.5, 0.3, 0.9]))
    adv = torch.tensor([1.0, -1.0, 2.0, 0.0])
    val, ret, ent = torch.zeros(4), torch.ones(4), torch.full((4,), 0.7)
    loss, st = ppo.ppo_loss(lp, lp, adv, val, ret, ent, clip=0.2, vf_coef=0.5, ent_coef=0.1)
    assert st["approx_kl"] == pytest.approx(0.0) and st["clipfrac"] == 0.0
    assert st["policy_loss"] == pytest.approx(0.0, abs=1e-6)  # normalised advantages average to 0
    assert st["value_loss"] == pytest.approx(0.5) and st["entropy"] == pytest.approx(0.7)
    assert loss.item() == pytest.approx(0.5 * 0.5 - 0.1 * 0.7, abs=1e-6)
    # a ratio far above 1 with a positive advantage is clipped at 1 + clip; masked entries are ignored
    new = lp + torch.tensor([1.0, 0.0, 0.0, 5.0])
    mask = torch.tensor([True, True, True, False])
    _, st2 = ppo.ppo_loss(new, lp, adv, val, ret, ent, clip=0.2, vf_coef=0.5, ent_coef=0.0, mask=mask,
                          norm_adv=False)
    assert st2["clipfrac"] == pytest.approx(1 / 3)
    assert st2["policy_loss"] == pytest.approx(-(1.2 * 1.0 + (-1.0) + 2.0) / 3)


def test_ppo_update_runs_epochs_and_stops_on_kl():
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.zeros(3))
    opt = torch.optim.SGD([w], lr=1.0)
    old = torch.log_softmax(w.detach(), -1)
    acts = torch.tensor([0, 0, 0, 0, 1, 2, 0, 0])
    calls = []

    def loss_fn(idx):
        calls.append(len(idx))
        lp = torch.log_softmax(w, -1)[acts[idx]]
        return ppo.ppo_loss(lp, old[acts[idx]], torch.ones(len(idx)), torch.zeros(len(idx)), torch.zeros(len(idx)),
                            torch.zeros(len(idx)), clip=10.0, vf_coef=0.0, ent_coef=0.0, norm_adv=False)

    st = ppo.ppo_update(opt, [w], 8, epochs=3, minibatch=4, permute=np.random.default_rng(0).permutation,
                        loss_fn=loss_fn, max_grad_norm=100.0)
    assert st["epochs"] == 3 and calls == [4] * 6
    calls.clear()
    st = ppo.ppo_update(opt, [w], 8, epochs=3, minibatch=4, permute=np.random.default_rng(0).permutation,
                        loss_fn=loss_fn, max_grad_norm=100.0, target_kl=1e-6)
    assert st["epochs"] == 1 and calls == [4, 4]
