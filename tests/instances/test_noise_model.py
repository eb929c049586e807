"""The additive clipped progress noise (the TapFinger authors' model, issue 24): one semantics
(``semantics.noisy_gain``) used by the scalar and the vectorised run lengths, the default
model leaving every earlier instance byte for byte, the generator's parameter and its errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from edgebench.errors import InputError
from edgebench.instances import io, semantics
from edgebench.instances.generators.placement import generate_placement

ROOT = Path(__file__).resolve().parents[2]


def _additive(seed: int = 0, **kw):
    return generate_placement("synthetic-3", seed=seed, num_tasks=24, noise_model="additive", **kw)


def test_noisy_gain_is_the_authors_clipped_sum():
    inst = _additive()
    p = inst.placement
    assert p.noise_model == "additive" and p.noise == pytest.approx(0.1, abs=1e-12)
    clipped = 0
    for j in range(6):
        for k in range(300):
            eps = semantics.noise_draw(p, j, k)
            assert -0.1 <= eps <= 0.1
            for inc in (0.01, 0.05, 0.3):
                got = semantics.noisy_gain(p, j, k, inc)
                assert got == pytest.approx(max(inc + eps, 0.0), abs=1e-15)
                clipped += got == 0.0
            assert semantics.noisy_gain(p, j, k, 0.0) == 0.0  # no noise-free gain: nothing
    assert clipped > 0  # small gains do get clipped at 0
    with pytest.raises(ValueError):
        semantics.noise_factor(p, 0, 0)  # the multiplicative factor is not defined here


def test_multiplicative_default_is_unchanged():
    inst = generate_placement("synthetic-3", seed=0, num_tasks=24)
    p = inst.placement
    assert p.noise_model == "multiplicative"
    for k in range(20):
        assert semantics.noisy_gain(p, 0, k, 0.3) == 0.3 * semantics.noise_factor(p, 0, k)
    assert "noise_model" not in io.dump_json_text(inst)
    assert "noise_model" not in inst.meta["params"]


def test_a_shipped_instance_keeps_its_bytes():
    f = ROOT / "instances" / "data" / "placement-synthetic-3-v2" / "placement-synthetic-3-s0.json.gz"
    raw = gzip.open(f).read()
    inst = io.load_instance(f)
    assert io.dump_json_text(inst).encode() == raw
    assert io.dump_json_text(generate_placement("synthetic-3", seed=0)).encode() == raw


def test_additive_round_trips_and_differs():
    inst = _additive()
    text = io.dump_json_text(inst)
    assert '"noise_model": "additive"' in text
    back = io.instance_from_dict(json.loads(text))
    assert back == inst and io.content_hash(back) == io.content_hash(inst)
    mult = generate_placement("synthetic-3", seed=0, num_tasks=24)
    assert io.content_hash(mult) != io.content_hash(inst)


@pytest.mark.parametrize("seed", [0, 1])
def test_vectorised_run_lengths_equal_the_scalar_ones_additive(seed):
    inst = _additive(seed)
    p = inst.placement
    for j in range(len(p.tasks)):
        n = p.tasks[j].eligible[0]
        dom = semantics.dominant_options(p, j, n)
        assert dom
        for c, g, steps in dom:
            assert semantics.fixed_run_steps(p, j, c, g) == steps
        # the grid equals the scalar simulation at every allocation (not only the kept ones)
        cap = p.clusters[n].capacity
        grid = semantics._grid_steps(p, j, 2, 1, cap.cpu, cap.gpu)
        for c in range(2, cap.cpu + 1, 3):
            for g in range(1, cap.gpu + 1, 3):
                want = semantics.fixed_run_steps(p, j, c, g)
                assert int(grid[c - 2, g - 1]) == (-1 if want is None else want)


def test_additive_and_multiplicative_run_lengths_differ_somewhere():
    add = _additive().placement
    mul = generate_placement("synthetic-3", seed=0, num_tasks=24).placement
    pairs = [(semantics.fixed_run_steps(add, j, 2, 1), semantics.fixed_run_steps(mul, j, 2, 1))
             for j in range(len(add.tasks))]
    assert any(a != m for a, m in pairs)


def test_same_seed_same_additive_instance_and_bound():
    from edgebench.formulations.placement.bounds.additive import additive_bound

    a, b = _additive(7), _additive(7)
    assert io.dump_json_text(a) == io.dump_json_text(b)
    assert additive_bound(a.placement) == additive_bound(b.placement)
    assert io.content_hash(_additive(8)) != io.content_hash(a)


def test_generator_rejects_a_bad_noise_model():
    with pytest.raises(InputError, match="noise_model"):
        generate_placement("synthetic-3", seed=0, noise_model="gaussian")


def test_an_instance_file_with_a_bad_noise_model_is_one_clear_error(tmp_path):
    data = json.loads(io.dump_json_text(_additive()))
    data["placement"]["noise_model"] = "gaussian"
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(data))
    with pytest.raises(InputError) as e:
        io.load_instance(f)
    assert "noise_model" in str(e.value)


def test_validation_bound_on_run_length_under_additive_noise():
    # an lm task at 1 GPU gains tanh(1/16) sqrt(0.2) ~ 0.028 < 0.1 at the end of its run: no
    # worst-case bound, the realised run decides; at 16 GPUs the bound 1 / (g(1) - 0.1) holds
    inst = _additive()
    p = inst.placement
    for j in range(len(p.tasks)):
        bound = p._run_steps_bound(j)
        best = min(s for n in p.tasks[j].eligible
                   if (s := semantics.fixed_run_steps(p, j, p.clusters[n].capacity.cpu,
                                                      p.clusters[n].capacity.gpu)) is not None)
        assert best <= bound + 1e-9


def test_referee_applies_the_switching_loss_after_clipping():
    """One task, re-allocated every step: the referee's finish is the hand-computed one with
    gain_k = max(inc_k + eps_k, 0) x (1 - switching_overhead) after the start step."""
    from edgebench.referee.placement import evaluate
    from edgebench.solution import AllocationChange, PlacementDecision, PlacementDecisions

    inst = io.instance_from_dict({
        "format_version": 1, "family": "placement", "id": "hand-additive",
        "placement": {
            "clusters": [{"capacity": {"cpu": 2, "gpu": 2}}],
            "tasks": [{"arrival": 0, "type": "t", "minimum": {"cpu": 1, "gpu": 1}, "eligible": [0]}],
            "performance": {"kind": "synthetic", "types": {"t": {"base": 0.08}}},
            "noise": 0.1, "noise_seed": 5, "noise_model": "additive", "switching_overhead": 0.5,
        }})
    p = inst.placement
    allocs = [(1, 1), (2, 2)] * 200
    progress, t = 0.0, 0
    while progress < 1.0 - semantics.PROGRESS_EPS:
        gain = max(0.08 + semantics.noise_draw(p, 0, t), 0.0)
        progress += gain * (0.5 if t > 0 else 1.0)
        t += 1
    history = [AllocationChange(step=k, cpu=c, gpu=g) for k, (c, g) in enumerate(allocs[:t])]
    ev = evaluate(inst, PlacementDecisions(tasks=[PlacementDecision(cluster=0, start=0, history=history)]))
    assert ev.feasible and ev.details["finish"] == [t]
    assert any(semantics.noise_draw(p, 0, k) < -0.08 for k in range(t))  # a clipped step occurred


def test_cli_bad_noise_model_is_one_line_exit_2_and_nothing_written(tmp_path, capsys):
    from edgebench.cli import main

    out = tmp_path / "out"
    rc = main(["generate", "placement", "--preset", "synthetic-3", "--set", "noise_model=gaussian", "-o", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and not out.exists()
    assert len(err.splitlines()) == 1 and "noise_model" in err and "Traceback" not in err
