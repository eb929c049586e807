"""Instance features (one function per family) and the PCA projection of the footprints."""

from __future__ import annotations

import math

import numpy as np
import pytest

from edgebench.features import FEATURES, features, projection
from edgebench.instances import sets
from edgebench.instances.generators import generate

SETS = ["placement-synthetic-3-v1", "placement-hetero-6-v1", "mapping-thesis-v1", "mapping-topologies-v1",
        "offloading-heft-random-v1", "offloading-patent-example-v1"]


@pytest.mark.parametrize("name", SETS)
def test_features_named_finite_and_plausible(name):
    for inst in sets.load_set(name):
        f = features(inst)
        assert tuple(f) == FEATURES[inst.family] and all(math.isfinite(v) for v in f.values())
        if inst.family == "placement":
            assert f["tasks"] == len(inst.placement.tasks) and 0 < f["eligibility"] <= 1 and f["load"] > 0
        elif inst.family == "offloading":
            assert f["depth"] >= 1 and f["width"] >= 1 and f["depth"] * f["width"] >= f["tasks"]
        else:
            assert f["nodes"] == len(inst.mapping.nodes) and 0 < f["network_density"] <= 1


def test_features_follow_the_instance():
    """Raising the generator's CCR raises the ccr feature; more tasks per step raises the load."""
    lo = features(generate("offloading", "heft-random", seed=1, tasks=20, ccr=0.1))["ccr"]
    hi = features(generate("offloading", "heft-random", seed=1, tasks=20, ccr=5.0))["ccr"]
    assert hi > 10 * lo
    calm = features(generate("placement", "synthetic-3", seed=1, num_tasks=30, rate=0.5))["load"]
    busy = features(generate("placement", "synthetic-3", seed=1, num_tasks=30, rate=6.0))["load"]
    assert busy > calm


def test_projection_is_standardised_pca():
    rng = np.random.default_rng(0)
    t = rng.normal(size=200)
    # feature 0 and 1 carry the same signal at different scales, feature 2 is weak noise, 3 constant
    x = np.column_stack([t, 1000 * t + rng.normal(scale=1e-3, size=200), rng.normal(scale=0.1, size=200),
                         np.full(200, 7.0)])
    coords, share = projection(x)
    assert coords.shape == (200, 2) and share[0] == pytest.approx(2 / 3, abs=0.02)
    assert abs(np.corrcoef(coords[:, 0], t)[0, 1]) > 0.99  # scale does not matter: standardised
    assert abs(np.corrcoef(coords[:, 0], coords[:, 1])[0, 1]) < 1e-6  # orthogonal axes
    # same as numpy's eigen-decomposition of the correlation matrix (up to sign)
    z = (x[:, :3] - x[:, :3].mean(0)) / x[:, :3].std(0)
    w, v = np.linalg.eigh(np.cov(z.T, bias=True))
    assert np.allclose(np.abs(coords[:, 0]), np.abs(z @ v[:, -1]), atol=1e-8)
    assert projection(np.ones((5, 3)))[0].tolist() == np.zeros((5, 2)).tolist()
