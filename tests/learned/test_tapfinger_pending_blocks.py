"""The two optional blocks at the end of the generic pending rows, checked the same way
(``--cross-features``, session 24; ``--plan-features``, session 25; learned/tapfinger_features.py):
each block only appends to the pending rows (every other value and every action mask equals the
env's without it along a whole episode), a model with it trains, resumes, exports and plays through
the ``tapfinger`` solver to the referee's value, every mismatch or bad value is one line and exit 2,
and the env passes PettingZoo's parallel API test. What each block's values are is tested in
``test_tapfinger_cross_features.py`` and ``test_tapfinger_plan_features.py``."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from edgebench import registry  # noqa: E402
from edgebench.cli import main  # noqa: E402
from edgebench.instances.generators import generate  # noqa: E402
from edgebench.instances.io import write_json  # noqa: E402
from edgebench.learned import tapfinger as tf  # noqa: E402
from edgebench.learned.train_tapfinger import transfer_layout  # noqa: E402
from edgebench.referee import evaluate as evaluate_solution  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_deterministic")

H6 = dict(variant="single", num_tasks=40, switching_overhead=0, max_eligible=6, noise=0)
CFG = tf.ModelConfig(hidden=16, layers=1, heads=2, pointer_layers=1, inputs="generic")
#: block -> (make_env keyword, command-line flag, env keyword, the words of its mismatch message)
BLOCKS = {"cross": ("cross", "--cross-features", "cross_features", "cross-cluster features"),
          "plan": ("plan", "--plan-features", "plan_features", "plan features")}


@pytest.mark.parametrize("block,base", [("cross", {}), ("plan", {}), ("plan", {"cross": True})])
def test_the_block_only_appends_to_the_pending_rows(block, base):
    inst = generate("placement", "hetero-6", seed=6, **H6)
    key = BLOCKS[block][0]
    without = tf.make_env(inst, inputs="generic", **base)
    with_ = tf.make_env(inst, inputs="generic", **base, **{key: True})
    lw_, lb = tf.generic_layout(without), tf.generic_layout(with_)
    assert lb.obs_size() == lw_.obs_size() + lw_.pending_size * 3 == with_.obs_size
    rng = np.random.default_rng(3)
    ow, _ = without.reset(seed=0)
    ob, _ = with_.reset(seed=0)
    steps = 0
    while with_.agents:
        for a in with_.agents:
            cw = tf.split_obs(ow[a]["observation"][None, None], lw_)
            cb = tf.split_obs(ob[a]["observation"][None, None], lb)
            assert np.array_equal(cw[0], cb[0]) and np.array_equal(cw[2], cb[2])
            assert np.array_equal(cw[1], cb[1][..., :lw_.pend_width])
            assert np.array_equal(ow[a]["action_mask"], ob[a]["action_mask"])
        acts = {a: int(rng.choice(np.flatnonzero(ob[a]["action_mask"]))) for a in with_.agents}
        ow, *_ = without.step(acts)
        ob, *_ = with_.step(acts)
        steps += 1
    assert not without.agents and steps > 10


@pytest.mark.parametrize("block", BLOCKS)
def test_a_model_with_the_block_trains_exports_and_plays_through_the_solver(block, tmp_path, capsys):
    key, flag = BLOCKS[block][:2]
    out, exp = tmp_path / "run", tmp_path / "x.pt"
    cli = ["train", "tapfinger", "--preset", "hetero-6", "--variant", "single", "--set", "num_tasks=12",
           "--set", "max_eligible=6", "--set", "switching_overhead=0", "--set", "noise=0", "--seed", "3",
           "--num-envs", "2", "--rollout-steps", "8", "--epochs", "1", "--minibatch", "16", "--eval-every", "0",
           "--eval-episodes", "1", "--device", "cpu", "--hidden", "16", "--layers", "1", "--heads", "2",
           "--inputs", "generic", flag, "--out", str(out)]
    assert main(cli + ["--steps", "16"]) == 0
    assert main(cli + ["--steps", "32", "--resume", "--export", str(exp)]) == 0
    capsys.readouterr()
    model, lay, blob = tf.load_checkpoint(exp)
    assert getattr(lay, key) == 3 and flag in blob["extra"]["command"]
    inst = generate("placement", "hetero-6", seed=9, **{**H6, "num_tasks": 20})
    res = registry.solve(inst, "tapfinger", seed=0, checkpoint=str(exp))
    ev = evaluate_solution(inst, res.solution)
    assert res.status in ("feasible", "optimal") and ev.feasible
    # the solver plays the same decisions as the model on an env built with the block
    env = tf.make_env(inst, inputs="generic", **{key: True})
    ep = tf.run_episode(model, env, tf.generic_layout(env), seed=0)
    assert ep["mean_ct"] == pytest.approx(ev.objectives["mean_completion_time"], rel=1e-12)


@pytest.mark.parametrize("block", BLOCKS)
def test_mismatches_and_bad_values_are_one_line_and_exit_2(block, tmp_path, capsys):
    key, flag, env_key, words = BLOCKS[block]
    with pytest.raises(tf.InputError, match=env_key):
        tf.make_env(preset="hetero-6", params={"num_tasks": 12}, **{key: True})  # one-hot inputs
    with pytest.raises(tf.InputError, match=key):
        tf.EnvLayout([(8, 4)], 10, 4, [], inputs="generic", **{key: 5})
    with pytest.raises(tf.InputError, match=key):
        tf.EnvLayout([(8, 4)], 10, 4, ["a"], **{key: 3})  # one-hot
    plain = tf.generic_layout(tf.make_env(preset="hetero-6", params={"num_tasks": 12}, inputs="generic"))
    withb = tf.generic_layout(tf.make_env(preset="hetero-6", params={"num_tasks": 12}, inputs="generic",
                                          **{key: True}))
    model = tf.make_model(CFG, withb)
    with pytest.raises(tf.InputError, match=words):
        tf.bind_layout(model, plain)
    with pytest.raises(tf.InputError, match=words):
        transfer_layout(withb, plain, file="init.pt")
    assert main(["train", "tapfinger", flag, "--out", str(tmp_path / "r")]) == 2  # one-hot
    assert f"{flag} needs --inputs generic" in capsys.readouterr().err
    good = tmp_path / "x.pt"
    tf.save_checkpoint(good, model, withb)
    blob = torch.load(good, weights_only=True)
    inst = tmp_path / "i.json"
    write_json(inst, generate("placement", "hetero-6", seed=1, num_tasks=12))
    for k, value in enumerate((7, 1, -3, "x")):
        bad = tmp_path / f"bad{k}.pt"
        torch.save({**blob, "layout": {**blob["layout"], key: value}}, bad)
        sol = tmp_path / f"s{k}.json"
        rc = main(["solve", str(inst), "--solver", "tapfinger", "--param", f"checkpoint={bad}", "-o", str(sol)])
        err = capsys.readouterr().err.strip()
        assert rc == 2 and "\n" not in err and str(bad) in err and key in err and "Traceback" not in err, (value, err)
        assert not sol.exists()


@pytest.mark.parametrize("block", BLOCKS)
def test_the_env_passes_pettingzoo_s_parallel_api_test(block):
    from pettingzoo.test import parallel_api_test

    parallel_api_test(tf.make_env(preset="hetero-6", params={"num_tasks": 20}, inputs="generic",
                                  **{BLOCKS[block][0]: True}), num_cycles=200)
