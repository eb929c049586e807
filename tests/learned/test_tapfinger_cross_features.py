"""The pending rows' cross-cluster features (``--cross-features``, generic inputs; issue 42, session
24; learned/tapfinger_features.py, ``CROSS_FEATURES``): each value is the brute-force best run time
over the other clusters' free resources. That the block only appends, trains, plays and refuses bad
values: test_tapfinger_pending_blocks.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from edgebench.instances.generators import generate  # noqa: E402
from edgebench.learned import tapfinger as tf  # noqa: E402
from edgebench.learned.tapfinger_features import CROSS_FEATURES  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_deterministic")

H6 = dict(variant="single", num_tasks=40, switching_overhead=0, max_eligible=6, noise=0)


def _best(sim, j: int, cpu: int, gpu: int) -> float:
    """Brute force: the fewest steps of task j over every allocation from its minimum up to
    (cpu, gpu), from the simulator's own run lengths (inf: none fits or none finishes)."""
    best = math.inf
    for c in range(sim.min_cpu[j], cpu + 1):
        for g in range(sim.min_gpu[j], gpu + 1):
            if c == 0 and g == 0:
                continue
            d = sim.run_steps(j, c, g)
            if d is not None:
                best = min(best, d)
    return best


def _random_steps(env, rng, steps: int):
    """Observations along ``steps`` steps of uniformly drawn valid actions."""
    obs, _ = env.reset(seed=0)
    for _ in range(steps):
        yield obs
        obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents})
        if not env.agents:
            return


def test_cross_features_are_the_brute_force_best_run_times():
    inst = generate("placement", "hetero-6", seed=5, **H6)
    env = tf.make_env(inst, inputs="generic", cross=True)
    lay = tf.generic_layout(env)
    assert lay.cross == len(CROSS_FEATURES) == 3
    P, W, X = lay.pending_size, lay.pend_width, lay.cross
    checked = {"here": 0, "elsewhere": 0, "none now": 0}
    for obs in _random_steps(env, np.random.default_rng(1), 60):
        sim = env.sim
        free = [sim.free(k)[:2] for k in range(lay.n)]
        for a in env.agents:
            n = int(a.split("_")[1])
            rows = obs[a]["observation"][tf.N_CLUSTER:tf.N_CLUSTER + P * W].reshape(P, W)
            for slot, j in enumerate(sim.pending(n)[:P]):
                queue = sim.eligible[j]
                now = {k: _best(sim, j, *free[k]) for k in queue}
                full = {k: _best(sim, j, *lay.caps[k]) for k in queue}
                b, f = min(now.values()), min(full.values())
                want = [b / now[n] if math.isfinite(now[n]) else 0.0, f / full[n],
                        f / b if math.isfinite(b) else 0.0]
                assert rows[slot, W - X:] == pytest.approx(want, rel=1e-6), (a, j)
                checked["here" if want[0] == 1.0 else "elsewhere" if want[0] > 0 else "none now"] += 1
            assert not rows[len(sim.pending(n)[:P]):].any()  # empty slots stay 0
    assert all(v > 0 for v in checked.values()), checked  # every case was seen
