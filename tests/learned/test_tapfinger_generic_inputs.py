"""TapFinger's type-generic inputs (issue 42 item 4; ``ModelConfig(inputs="generic")``,
learned/tapfinger_features.py): one network plays instances of any task types and any cluster
sizes and counts directly (no mapping through tapfinger_generic), its decisions do not depend
on type names, it trains and resumes bit for bit, its checkpoint round-trips, and a bad
``inputs`` option in a checkpoint is one line and exit code 2."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from edgebench import registry  # noqa: E402
from edgebench.cli import main  # noqa: E402
from edgebench.instances import semantics  # noqa: E402
from edgebench.instances.generators import generate  # noqa: E402
from edgebench.instances.io import instance_from_dict, load_instance, write_json  # noqa: E402
from edgebench.learned import tapfinger as tf  # noqa: E402
from edgebench.learned.tapfinger_features import TASK_FEATURES, TaskFeatures, run_steps_grid  # noqa: E402
from edgebench.learned.train_tapfinger import TrainArgs, train  # noqa: E402
from edgebench.referee import evaluate as evaluate_solution  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ALIBABA = ROOT / "instances" / "data" / "placement-alibaba-v2" / "placement-alibaba-c3-s1.json.gz"
TESTBED = ROOT / "instances" / "data" / "placement-testbed-v2" / "placement-testbed-s0.json.gz"
SMALL = {"num_tasks": 12}
CFG = tf.ModelConfig(hidden=16, layers=1, heads=2, pointer_layers=1, inputs="generic")


pytestmark = pytest.mark.usefixtures("torch_deterministic")


def _generic_model(seed: int = 0):
    torch.manual_seed(seed)
    env = tf.make_env(preset="synthetic-3", params=SMALL, variant="multi", inputs="generic")
    lay = tf.generic_layout(env)
    return tf.make_model(CFG, lay), lay


def _play(model, inst):
    env = tf.make_env(inst, inputs="generic")
    return tf.run_episode(model, env, tf.generic_layout(env), seed=0, check_masks=True)


def test_run_steps_grid_is_the_noise_free_run_length():
    """The features' run times are the referee's durations on noise-free instances (synthetic
    and table performance models), cell by cell."""
    syn = generate("placement", "synthetic-3", seed=2, noise=0.0, **SMALL).placement
    table = load_instance(TESTBED).placement
    for payload in (syn, table):
        assert payload.noise == 0
        for j in range(0, len(payload.tasks), 5):
            task = payload.tasks[j]
            cap = payload.clusters[0].capacity
            grid = run_steps_grid(payload, task.type, cap.cpu, cap.gpu)
            for c in range(task.minimum.cpu, cap.cpu + 1, 3):
                for g in range(task.minimum.gpu, cap.gpu + 1, 2):
                    if c + g == 0:
                        continue
                    exact = semantics.fixed_run_steps(payload, j, c, g)
                    assert grid[c, g] == (np.inf if exact is None else exact), (payload.performance.kind, j, c, g)
    feats = TaskFeatures(syn).task(0, 0)
    assert feats.shape == (len(TASK_FEATURES),) and np.all((feats >= 0) & (feats <= 1))


def test_one_generic_model_plays_every_cluster_grid_to_referee_feasible_schedules(tmp_path):
    """Built once on synthetic-3 (3 x 16/16), saved, then played by the ``tapfinger`` solver on
    a synthetic-3 instance, an alibaba-v2 window (104/2 + 2 x 96/8, 29 trace types) and a
    4-cluster 96-CPU / 8-GPU instance: every schedule is feasible for the referee, whose
    objective is the solver's; the solver reads the instance directly (no generic mapping)."""
    model, lay = _generic_model()
    path = tmp_path / "generic.pt"
    tf.save_checkpoint(path, model, lay)
    insts = {"synthetic-3": generate("placement", "synthetic-3", seed=5, variant="multi", **SMALL),
             "alibaba-v2": load_instance(ALIBABA),
             "96cpu-8gpu": generate("placement", "synthetic-3", seed=1, capacity=[96, 8], clusters=4, **SMALL)}
    for name, inst in insts.items():
        res = registry.solve(inst, "tapfinger", checkpoint=str(path))
        assert res.status == "feasible", (name, res.stats)
        assert res.stats["checkpoint_match"] == "given (generic inputs)"
        ev = evaluate_solution(inst, res.solution)
        assert ev.feasible, name
        assert ev.objectives["total_completion_time"] == res.solution.objective
        if name == "synthetic-3":  # the saved file plays as the model in memory did
            direct = _play(model, inst)
            assert direct["objectives"]["total_completion_time"] == res.solution.objective


def _renamed(inst, shift: int):
    """The same instance with its task types' names permuted (rotated by ``shift``)."""
    data = inst.model_dump(mode="json")
    names = sorted(data["placement"]["performance"]["types"])
    ren = dict(zip(names, names[shift:] + names[:shift]))
    perf = data["placement"]["performance"]
    perf["types"] = {ren[k]: v for k, v in perf["types"].items()}
    for t in data["placement"]["tasks"]:
        t["type"] = ren[t["type"]]
    return instance_from_dict(data)


@pytest.mark.parametrize("variant", ["multi", "single"])
def test_type_names_do_not_change_the_decisions(variant):
    """The input is type-free: permuting the names of the task types leaves every observation
    and every decision unchanged (a one-hot model's input does change)."""
    model, _ = _generic_model(seed=1)
    inst = generate("placement", "synthetic-3", seed=7, variant=variant, **SMALL)
    a, b = _play(model, inst), _play(model, _renamed(inst, 1))
    assert a["done"] and a["decisions"] == b["decisions"] and a["objectives"] == b["objectives"]
    obs = [tf.make_env(i, inputs=x).reset(seed=0)[0]["cluster_0"]["observation"]
           for x in ("generic", "onehot") for i in (inst, _renamed(inst, 1))]
    assert np.array_equal(obs[0], obs[1]) and not np.array_equal(obs[2], obs[3])


def test_generic_training_resumes_bit_identically_and_exports_a_playable_checkpoint(tmp_path, capsys):
    """Two MAPPO updates straight == one update, a stop, and a resume (``--inputs generic``
    through the CLI); the export round-trips and its sidecar command names the option."""
    base = dict(preset="synthetic-3", variant="multi", gen_params=SMALL, seed=3, num_envs=4, rollout_steps=8,
                epochs=2, minibatch=16, eval_every=0, eval_episodes=1, threads=1, device="cpu",
                model=tf.ModelConfig(hidden=16, layers=1, heads=2, inputs="generic"))
    straight = train(TrainArgs(**base, steps=64, out=str(tmp_path / "a")), log=None)
    assert straight["history"][-1]["global_step"] == 64
    cli = ["train", "tapfinger", "--preset", "synthetic-3", "--variant", "multi", "--set", "num_tasks=12",
           "--seed", "3", "--num-envs", "4", "--rollout-steps", "8", "--epochs", "2", "--minibatch", "16",
           "--eval-every", "0", "--eval-episodes", "1", "--device", "cpu", "--hidden", "16", "--layers", "1",
           "--heads", "2", "--inputs", "generic", "--out", str(tmp_path / "b")]
    assert main(cli + ["--steps", "32"]) == 0
    assert main(cli + ["--steps", "64", "--resume", "--export", str(tmp_path / "g.pt")]) == 0
    capsys.readouterr()
    a, _, _ = tf.load_checkpoint(tmp_path / "a" / "last.pt")
    b, lay, blob = tf.load_checkpoint(tmp_path / "b" / "last.pt")
    assert blob["config"]["inputs"] == "generic" and lay.inputs == "generic" and lay.type_names == []
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
    g, glay, gblob = tf.load_checkpoint(tmp_path / "g.pt")
    assert g.cfg.inputs == "generic" and "--inputs generic" in gblob["extra"]["command"]
    sg = g.state_dict()
    assert all(torch.equal(sg[k], sb[k]) for k in sb)
    inst = generate("placement", "synthetic-3", seed=11, variant="multi", **SMALL)
    assert _play(g, inst)["decisions"] == _play(b, inst)["decisions"]


def test_generic_checkpoint_round_trip(tmp_path):
    model, lay = _generic_model(seed=2)
    path = tmp_path / "g.pt"
    tf.save_checkpoint(path, model, lay)
    loaded, lay2, _ = tf.load_checkpoint(path)
    assert loaded.cfg == model.cfg and lay2 == lay
    inst = generate("placement", "synthetic-3", seed=3, capacity=[[8, 4], [24, 8]], variant="multi", **SMALL)
    a, b = _play(model, inst), _play(loaded, inst)
    assert a["done"] and a["decisions"] == b["decisions"]


def test_bad_inputs_option_in_a_checkpoint_is_one_line_and_exit_2(tmp_path, capsys):
    model, lay = _generic_model()
    good = tmp_path / "g.pt"
    tf.save_checkpoint(good, model, lay)
    blob = torch.load(good, weights_only=True)
    inst = tmp_path / "i.json"
    write_json(inst, generate("placement", "synthetic-3", seed=1, **SMALL))
    cases = {"evil": ({**blob, "config": {**blob["config"], "inputs": "evil"}}, "checkpoint.config.inputs"),
             "mixed": ({**blob, "layout": {**blob["layout"], "inputs": "onehot"}}, "checkpoint.layout.inputs")}
    for name, (bad, field) in cases.items():
        path = tmp_path / f"{name}.pt"
        torch.save(bad, path)
        out = tmp_path / f"{name}.sol.json"
        rc = main(["solve", str(inst), "--solver", "tapfinger", "--param", f"checkpoint={path}", "-o", str(out)])
        err = capsys.readouterr().err.strip()
        assert rc == 2, (name, err)
        assert "\n" not in err and str(path) in err and field in err and "Traceback" not in err, (name, err)
        assert not out.exists()
    with pytest.raises(tf.InputError, match="graph encoder"):
        tf.make_model(tf.ModelConfig(encoder="mlp", inputs="generic"), lay)
