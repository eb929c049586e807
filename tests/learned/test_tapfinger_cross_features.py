"""The pending rows' cross-cluster features (``--cross-features``, generic inputs; issue 42, session
24; learned/tapfinger_features.py, ``CROSS_FEATURES``): each value is the brute-force best run time
over the other clusters' free resources, the block only appends to the pending rows, a model with it
trains, exports and plays through the solver, and every mismatch or bad value is one line and
exit 2."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from edgebench import registry  # noqa: E402
from edgebench.cli import main  # noqa: E402
from edgebench.instances.generators import generate  # noqa: E402
from edgebench.instances.io import write_json  # noqa: E402
from edgebench.learned import tapfinger as tf  # noqa: E402
from edgebench.learned.tapfinger_features import CROSS_FEATURES  # noqa: E402
from edgebench.learned.train_tapfinger import transfer_layout  # noqa: E402
from edgebench.referee import evaluate as evaluate_solution  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_deterministic")

H6 = dict(variant="single", num_tasks=40, switching_overhead=0, max_eligible=6, noise=0)
CFG = tf.ModelConfig(hidden=16, layers=1, heads=2, pointer_layers=1, inputs="generic")


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


def test_the_block_only_appends_to_the_pending_rows():
    """Everything else of the observation (and every action mask) is the plain generic one, value
    for value, along one episode of drawn actions played in both envs."""
    inst = generate("placement", "hetero-6", seed=6, **H6)
    plain, cross = tf.make_env(inst, inputs="generic"), tf.make_env(inst, inputs="generic", cross=True)
    lp, lx = tf.generic_layout(plain), tf.generic_layout(cross)
    assert lx.obs_size() == lp.obs_size() + lp.pending_size * 3 == cross.obs_size
    rng = np.random.default_rng(3)
    op, _ = plain.reset(seed=0)
    ox, _ = cross.reset(seed=0)
    steps = 0
    while cross.agents:
        for a in cross.agents:
            cp = tf.split_obs(op[a]["observation"][None, None], lp)
            cx = tf.split_obs(ox[a]["observation"][None, None], lx)
            assert np.array_equal(cp[0], cx[0]) and np.array_equal(cp[2], cx[2])
            assert np.array_equal(cp[1], cx[1][..., :lp.pend_width])
            assert np.array_equal(op[a]["action_mask"], ox[a]["action_mask"])
        acts = {a: int(rng.choice(np.flatnonzero(ox[a]["action_mask"]))) for a in cross.agents}
        op, *_ = plain.step(acts)
        ox, *_ = cross.step(acts)
        steps += 1
    assert not plain.agents and steps > 10


def test_a_cross_model_trains_exports_and_plays_through_the_solver(tmp_path, capsys):
    out, exp = tmp_path / "run", tmp_path / "x.pt"
    cli = ["train", "tapfinger", "--preset", "hetero-6", "--variant", "single", "--set", "num_tasks=12",
           "--set", "max_eligible=6", "--set", "switching_overhead=0", "--set", "noise=0", "--seed", "3",
           "--num-envs", "2", "--rollout-steps", "8", "--epochs", "1", "--minibatch", "16", "--eval-every", "0",
           "--eval-episodes", "1", "--device", "cpu", "--hidden", "16", "--layers", "1", "--heads", "2",
           "--inputs", "generic", "--cross-features", "--out", str(out)]
    assert main(cli + ["--steps", "16"]) == 0
    assert main(cli + ["--steps", "32", "--resume", "--export", str(exp)]) == 0
    capsys.readouterr()
    model, lay, blob = tf.load_checkpoint(exp)
    assert lay.cross == 3 and "--cross-features" in blob["extra"]["command"]
    inst = generate("placement", "hetero-6", seed=9, **{**H6, "num_tasks": 20})
    res = registry.solve(inst, "tapfinger", seed=0, checkpoint=str(exp))
    ev = evaluate_solution(inst, res.solution)
    assert res.status in ("feasible", "optimal") and ev.feasible
    # the solver plays the same decisions as the model on an env built with the features
    env = tf.make_env(inst, inputs="generic", cross=True)
    ep = tf.run_episode(model, env, tf.generic_layout(env), seed=0)
    assert ep["mean_ct"] == pytest.approx(ev.objectives["mean_completion_time"], rel=1e-12)


def test_mismatches_and_bad_values_are_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(tf.InputError, match="cross_features"):
        tf.make_env(preset="hetero-6", params={"num_tasks": 12}, cross=True)  # one-hot inputs
    with pytest.raises(tf.InputError, match="cross"):
        tf.EnvLayout([(8, 4)], 10, 4, [], inputs="generic", cross=5)
    with pytest.raises(tf.InputError, match="cross"):
        tf.EnvLayout([(8, 4)], 10, 4, ["a"], cross=3)  # one-hot
    plain_env = tf.make_env(preset="hetero-6", params={"num_tasks": 12}, inputs="generic")
    cross_env = tf.make_env(preset="hetero-6", params={"num_tasks": 12}, inputs="generic", cross=True)
    plain, cross = tf.generic_layout(plain_env), tf.generic_layout(cross_env)
    model = tf.make_model(CFG, cross)
    with pytest.raises(tf.InputError, match="cross-cluster"):
        tf.bind_layout(model, plain)
    with pytest.raises(tf.InputError, match="cross-cluster"):
        transfer_layout(cross, plain, file="init.pt")
    assert main(["train", "tapfinger", "--cross-features", "--out", str(tmp_path / "r")]) == 2  # one-hot
    assert "--cross-features needs --inputs generic" in capsys.readouterr().err
    good = tmp_path / "x.pt"
    tf.save_checkpoint(good, model, cross)
    blob = torch.load(good, weights_only=True)
    inst = tmp_path / "i.json"
    write_json(inst, generate("placement", "hetero-6", seed=1, num_tasks=12))
    for k, value in enumerate((7, 1, -3, "x")):
        bad = tmp_path / f"bad{k}.pt"
        torch.save({**blob, "layout": {**blob["layout"], "cross": value}}, bad)
        sol = tmp_path / f"s{k}.json"
        rc = main(["solve", str(inst), "--solver", "tapfinger", "--param", f"checkpoint={bad}", "-o", str(sol)])
        err = capsys.readouterr().err.strip()
        assert rc == 2 and "\n" not in err and str(bad) in err and "cross" in err and "Traceback" not in err, (value, err)
        assert not sol.exists()


def test_the_cross_env_passes_pettingzoo_s_parallel_api_test():
    from pettingzoo.test import parallel_api_test

    parallel_api_test(tf.make_env(preset="hetero-6", params={"num_tasks": 20}, inputs="generic", cross=True),
                      num_cycles=200)
