"""The PPO core shared by the learned trainers (:mod:`edgebench.learned.train_tapfinger`,
MAPPO over the placement env, and :mod:`edgebench.learned.train_ces_ppo`): generalised
advantage estimation, the clipped surrogate with value loss and entropy bonus, and the
minibatch-epoch loop with gradient clipping and an optional KL early stop (CleanRL's ``ppo.py``
semantics). The trainers own their rollouts, networks and bookkeeping; they hand this module
tensors and a callable that re-evaluates a minibatch.
"""

from __future__ import annotations

from typing import Callable, Sequence

__all__ = ["gae", "ppo_loss", "ppo_update"]


def gae(rewards, values, next_value, nonterminal, gamma: float, lam: float):
    """Advantages and returns of a rollout with a leading time axis T.

    ``rewards``, ``values``, ``nonterminal``: (T, ...); ``next_value``: (...), the value of the
    state after the last step. ``nonterminal[t]`` is 0 when the transition at t ends an
    episode (then nothing is bootstrapped from the state after it), else 1. Accepts numpy
    arrays or torch tensors; returns torch float32 tensors (adv, ret) of shape (T, ...)."""
    import torch

    r = torch.as_tensor(rewards, dtype=torch.float32)
    v = torch.as_tensor(values, dtype=torch.float32)
    nt = torch.as_tensor(nonterminal, dtype=torch.float32)
    nv = torch.as_tensor(next_value, dtype=torch.float32)
    while nt.dim() < r.dim():
        nt = nt.unsqueeze(-1)
    adv = torch.zeros_like(r)
    last = torch.zeros_like(r[0])
    for t in reversed(range(r.shape[0])):
        boot = nv if t == r.shape[0] - 1 else v[t + 1]
        delta = r[t] + gamma * boot * nt[t] - v[t]
        last = delta + gamma * lam * nt[t] * last
        adv[t] = last
    return adv, adv + v


def ppo_loss(new_logp, old_logp, adv, new_value, ret, entropy, *, clip: float, vf_coef: float, ent_coef: float,
             mask=None, norm_adv: bool = True, old_value=None, clip_vloss: bool = False):
    """(loss, stats) of one minibatch: clipped surrogate on the (optionally normalised)
    advantages, 0.5 x squared value error (clipped around ``old_value`` with ``clip_vloss``)
    and the entropy bonus. ``mask`` (bool, shape of ``new_logp``) keeps only the entries that
    had a real choice in the policy and entropy terms and the advantage normalisation (the
    value loss uses every entry). stats: policy_loss, value_loss, entropy, approx_kl
    (E[(r - 1) - log r]), clipfrac."""
    import torch

    logratio = new_logp - old_logp
    if mask is not None:
        logratio = torch.where(mask, logratio, torch.zeros_like(logratio))
    ratio = logratio.exp()
    sel = (lambda x: x[mask]) if mask is not None else (lambda x: x.reshape(-1))
    a = adv
    if norm_adv:
        a_sel = sel(adv)
        if a_sel.numel() > 1:
            a = (adv - a_sel.mean()) / (a_sel.std() + 1e-8)
    pg = sel(torch.max(-a * ratio, -a * torch.clamp(ratio, 1 - clip, 1 + clip))).mean()
    if clip_vloss and old_value is not None:
        v_clipped = old_value + torch.clamp(new_value - old_value, -clip, clip)
        vl = 0.5 * torch.max((new_value - ret) ** 2, (v_clipped - ret) ** 2).mean()
    else:
        vl = 0.5 * ((new_value - ret) ** 2).mean()
    ent = sel(entropy).mean()
    loss = pg + vf_coef * vl - ent_coef * ent
    with torch.no_grad():
        kl = sel((ratio - 1) - logratio).mean().item()
        clipfrac = (sel((ratio - 1.0).abs() > clip).float().mean().item())
    return loss, {"policy_loss": pg.item(), "value_loss": vl.item(), "entropy": ent.item(), "approx_kl": kl,
                  "clipfrac": clipfrac}


def ppo_update(optimizer, params: Sequence, size: int, *, epochs: int, minibatch: int,
               permute: Callable[[int], Sequence[int]], loss_fn: Callable, max_grad_norm: float,
               target_kl: float | None = None) -> dict[str, float]:
    """The minibatch epochs of one PPO update: ``epochs`` passes over a permutation
    (``permute(size)``) of the ``size`` samples in minibatches of ``minibatch``;
    ``loss_fn(idx)`` returns (loss, stats) of :func:`ppo_loss` (or None to skip the
    minibatch); gradients are clipped to ``max_grad_norm``. With ``target_kl``, the epochs stop
    after the first epoch whose last minibatch's approx KL exceeds it (CleanRL). Returns the
    mean of each stat over the minibatches plus "epochs" (epochs run)."""
    import numpy as np
    import torch

    acc: dict[str, list[float]] = {}
    done = 0
    for _ in range(epochs):
        perm = permute(size)
        kl = 0.0
        for s in range(0, size, minibatch):
            out = loss_fn(perm[s:s + minibatch])
            if out is None:
                continue
            loss, stats = out
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
            optimizer.step()
            for k, v in stats.items():
                acc.setdefault(k, []).append(v)
            kl = stats.get("approx_kl", 0.0)
        done += 1
        if target_kl is not None and kl > target_kl:
            break
    res = {k: float(np.mean(v)) for k, v in acc.items()}
    res["epochs"] = float(done)
    return res
