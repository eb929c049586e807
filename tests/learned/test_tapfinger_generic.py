"""The generic reading of an instance by a TapFinger checkpoint (learned/tapfinger_generic.py,
issue 24 item 5): types by performance features, allocations on the cluster's own grid, and
no placement set of the paper suite declined by ``tapfinger``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from edgebench import registry  # noqa: E402
from edgebench.instances.generators import generate  # noqa: E402
from edgebench.instances.io import load_instance  # noqa: E402
from edgebench.instances.traces import default_traces_dir  # noqa: E402
from edgebench.learned import tapfinger as tf  # noqa: E402
from edgebench.learned.tapfinger_generic import grid_maps, type_features, type_view  # noqa: E402
from edgebench.referee import evaluate as evaluate_solution  # noqa: E402
from edgebench.runner.suite import load_suite  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "instances" / "data"
ALIBABA = DATA / "placement-alibaba-v2" / "placement-alibaba-c3-s1.json.gz"
#: the generic reading's reference for a test-bed checkpoint is the test-bed preset, generated
#: from the raw profiles (../shared/traces, not shipped); without them the solver says so (InputError)
needs_traces = pytest.mark.skipif(
    default_traces_dir() is None,
    reason="real traces not found: no ../shared/traces beside the checkout and $EDGEBENCH_TRACES unset")


def _paper_placement_sets() -> list[str]:
    suite = load_suite(ROOT / "edgebench" / "runner" / "suites" / "paper.toml")
    return [i.set for i in suite.instances if i.set and i.set.startswith("placement")]


def test_grid_maps_identity_within_the_grid_and_scaled_beyond():
    (c1, g1), (c2, g2) = grid_maps(((12, 4), (96, 8)), 16, 16)
    assert c1.tolist() == list(range(13)) + [-1] * 4 and g1.tolist() == list(range(5)) + [-1] * 12
    assert c2.tolist() == [6 * k for k in range(17)]  # 96 CPUs on a 16-cell axis
    assert g2.tolist() == list(range(9)) + [-1] * 8


def test_types_by_features():
    """A type the checkpoint knows by name keeps it; the resource-insensitive trace types (one
    per observed duration) are read by their speed: the order of speeds is kept (a faster trace
    type never reads as a slower checkpoint type than a slower trace type does); the mapping is
    deterministic."""
    ref = generate("placement", "synthetic-3", seed=0, num_tasks=24).placement
    names = sorted(ref.performance.types)
    ali = load_instance(ALIBABA).placement
    feats = type_features(ali)
    assert all(np.allclose(f[:3], 0.0) for f in feats.values())  # no gain from more resources
    _, mapping = type_view(ali, names, ref)
    theirs = type_features(ref)
    assert set(mapping) == set(ali.performance.types) and set(mapping.values()) == set(names)
    pairs = sorted((feats[t][3], theirs[mapping[t]][3]) for t in feats)
    assert all(a[1] <= b[1] for a, b in zip(pairs, pairs[1:]))  # monotone in the speed at the minimum
    assert type_view(ali, names, ref) == type_view(ali, names, ref)
    assert type_view(ref, names, ref)[1] == {n: n for n in names}


@needs_traces
def test_alibaba_is_played_generically_with_valid_actions():
    """An alibaba instance (96-CPU / 8-GPU clusters, one type per observed duration) is played by
    ``tapfinger`` through the generic reading; every action the policy takes is allowed by the
    env's own mask, and the referee accepts the schedule."""
    inst = load_instance(ALIBABA)
    path, match = tf.nearest_checkpoint(inst, "tapfinger-mappo")
    assert path is not None and match.startswith("generic (")
    model, lay, _ = tf.load_checkpoint(path)
    env = tf.make_env(inst, lay=lay, types=tf.generic_types(inst, lay, path))
    tf.check_layout(env, lay, scaled=True)
    obs, _ = env.reset(seed=0)
    acting = tf.acting_model(model)
    rng = np.random.default_rng(0)
    started = 0
    for _ in range(40):  # the first decisions (the mapped masks and the decoding)
        actions, _ = tf.act(acting, env, obs, lay, rng, greedy=True, values=False)
        assert all(obs[a]["action_mask"][x] for a, x in actions.items())
        started += sum(x != env.void_action(a) for a, x in actions.items())
        obs, *_ = env.step(actions)
    assert started > 0
    res = registry.solve(inst, "tapfinger", seed=0)
    assert res.status == "feasible" and res.solution.stats["checkpoint_match"] == match
    assert evaluate_solution(inst, res.solution).feasible


@pytest.mark.parametrize("name", _paper_placement_sets())
def test_every_paper_placement_set_is_played_by_tapfinger(name):
    """No hole: ``tapfinger`` applies to every instance of every placement set of the paper
    suite (exactly, as the nearest preset, or generically), so the runner plans its runs."""
    files = sorted((DATA / name).glob("placement-*.json*"))
    assert files, name
    info = registry.get("tapfinger")
    for f in files:
        assert info.applies(load_instance(f), {}) is None, f.name


def test_a_converted_instance_goes_by_its_converter_name(tmp_path):
    """placement-alibaba-v2's instances have ``meta.converter == "alibaba"`` and no preset: a
    ``PREFIX-alibaba-single.pt`` is their exact file, tried before the other presets' (issue 42;
    before, it was only "nearest"). Fake directory: one shipped generic file under two names."""
    src = tf.CHECKPOINT_DIR / "tapfinger-generic-bc-synthetic-3-single"
    side = json.loads(src.with_suffix(".json").read_text())
    for preset in ("alibaba", "synthetic-3"):
        dst = tmp_path / f"tapfinger-generic-bc-{preset}-single"
        dst.with_suffix(".pt").symlink_to(src.with_suffix(".pt"))
        dst.with_suffix(".json").write_text(json.dumps({**side, "preset": preset}))
    inst = load_instance(ALIBABA)
    assert "preset" not in inst.meta and inst.meta["converter"] == "alibaba"
    path, match = tf.nearest_checkpoint(inst, "tapfinger-generic-bc", tmp_path)
    assert (path.name, match) == ("tapfinger-generic-bc-alibaba-single.pt", "exact")
    s3 = generate("placement", "synthetic-3", seed=0, num_tasks=12)
    path, match = tf.nearest_checkpoint(s3, "tapfinger-generic-bc", tmp_path)
    assert (path.name, match) == ("tapfinger-generic-bc-synthetic-3-single.pt", "exact")


def test_a_file_without_fallback_plays_only_its_own_preset(tmp_path):
    """A sidecar with ``"fallback": false`` (the alibaba trace file) keeps the file for its own
    preset's instances: an instance of a preset with no file of its own gets the next file by
    name, not this one, although "alibaba" sorts first (issue 42); with the key absent it is
    every preset's first by name."""
    src = tf.CHECKPOINT_DIR / "tapfinger-generic-bc-synthetic-3-single"
    side = json.loads(src.with_suffix(".json").read_text())
    for preset, extra in (("alibaba", {"fallback": False}), ("hetero-6", {})):
        dst = tmp_path / f"tapfinger-generic-bc-{preset}-single"
        dst.with_suffix(".pt").symlink_to(src.with_suffix(".pt"))
        dst.with_suffix(".json").write_text(json.dumps({**side, "preset": preset, **extra}))
    s6 = generate("placement", "synthetic-6", seed=0, num_tasks=12)
    path, match = tf.nearest_checkpoint(s6, "tapfinger-generic-bc", tmp_path)
    assert (path.name, match) == ("tapfinger-generic-bc-hetero-6-single.pt", "nearest (hetero-6 single)")
    inst = load_instance(ALIBABA)
    path, match = tf.nearest_checkpoint(inst, "tapfinger-generic-bc", tmp_path)
    assert (path.name, match) == ("tapfinger-generic-bc-alibaba-single.pt", "exact")
    (tmp_path / "tapfinger-generic-bc-hetero-6-single.json").unlink()
    path, why = tf.nearest_checkpoint(s6, "tapfinger-generic-bc", tmp_path)
    assert path is None and why == "no shipped tapfinger-generic-bc-*.pt checkpoint plays synthetic-6 instances"
    side_a = tmp_path / "tapfinger-generic-bc-alibaba-single.json"
    side_a.write_text(json.dumps({**side, "preset": "alibaba"}))
    path, match = tf.nearest_checkpoint(s6, "tapfinger-generic-bc", tmp_path)
    assert (path.name, match) == ("tapfinger-generic-bc-alibaba-single.pt", "nearest (alibaba single)")
