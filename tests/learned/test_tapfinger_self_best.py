"""Self-imitation of the sampling decode (issue 42; ``--dagger-expert self-best``,
:func:`edgebench.learned.train_tapfinger.self_best_dataset`): each round the student plays its
greedy episode and K sampled ones per training instance; the episode the referee scores lowest is
kept and its own decisions are the labels. Checked here: the kept episode is the least of the
episodes played outside the trainer, its labels are that episode (its returns add up to the kept
schedule's value), a round is seeded, a run selects on validation, and a bad option is one line
with exit 2."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from edgebench.cli import main  # noqa: E402
from edgebench.instances.generators import generate  # noqa: E402
from edgebench.learned import tapfinger as tf  # noqa: E402
from edgebench.learned.train_tapfinger import EVAL_SEED_BASE, TrainArgs, self_best_dataset, train  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_deterministic")

SMALL = {"num_tasks": 24, "switching_overhead": 0.0, "noise": 0.0}
CFG = tf.ModelConfig(hidden=16, layers=1, heads=2, pointer_layers=1)


def _args(**kw) -> TrainArgs:
    base = dict(preset="synthetic-3", variant="multi", steps=0, gen_params=SMALL, eval_episodes=2, seed=3,
                dagger_expert="self-best", dagger_instances=1, dagger_samples=4, dagger_temperature=1.0,
                bc_value_coef=0.0, model=CFG)
    return TrainArgs(**{**base, **kw})


@pytest.fixture(scope="module")
def student():
    """A fresh (seeded) small network and its layout."""
    torch.manual_seed(0)
    env = tf.make_env(preset="synthetic-3", params=SMALL, variant="multi")
    lay = tf.EnvLayout.of_env(env)
    return tf.make_model(CFG, lay), lay


def _played(model, lay, args: TrainArgs, round_: int) -> tuple[float, list[float]]:
    """(the greedy episode's referee value, every sampled one's) of the round's one instance, played
    outside the trainer with the decode's seeds."""
    rng = np.random.default_rng([args.seed, 20_062, round_])
    seed = int(rng.integers(0, EVAL_SEED_BASE, size=1)[0])
    inst = generate("placement", args.preset, seed=seed, variant=args.variant, **args.gen_params)
    env = tf.make_env(preset=args.preset, params=args.gen_params, variant=args.variant, lay=lay)
    vals = []
    with torch.no_grad():
        for k in range(args.dagger_samples + 1):
            ep = tf.run_episode(model, env, lay, seed=seed if k == 0 else tf.sample_seed(seed, k), greedy=k == 0,
                                instance=inst, temperature=args.dagger_temperature)
            vals.append(tf.referee_value(inst, ep["decisions"]) if ep["done"] else math.inf)
    return vals[0], vals[1:]


def _played_back(data: dict, lay, args: TrainArgs, round_: int) -> float:
    """The referee value of the round's one instance played by the labels alone."""
    rng = np.random.default_rng([args.seed, 20_062, round_])
    seed = int(rng.integers(0, EVAL_SEED_BASE, size=1)[0])
    inst = generate("placement", args.preset, seed=seed, variant=args.variant, **args.gen_params)
    env = tf.make_env(inst, lay=lay, variant=args.variant)
    obs, _ = env.reset(seed=seed)
    G1 = lay.max_gpu + 1
    s = 0
    info: dict = {}
    while env.agents:
        assert np.array_equal(np.stack([obs[a]["observation"] if a in obs else np.zeros(lay.obs_size(), np.float32)
                                        for a in env.possible_agents]), data["obs"][s])
        actions = {}
        for n, a in enumerate(env.possible_agents):
            if a not in obs:
                continue
            if data["m"][s, n]:
                c, g = divmod(int(data["alloc"][s, n]), G1)
                actions[a] = env.encode_action(a, int(data["slot"][s, n]), c, g)
            else:
                actions[a] = env.void_action(a)
        obs, _, _, _, infos = env.step(actions)
        info = next(iter(infos.values()))
        s += 1
    assert s == len(data["slot"])
    return tf.referee_value(inst, info["decisions"])


def test_the_kept_episode_is_the_least_and_its_labels_are_its_decisions(student):
    model, lay = student
    args = _args()
    n = SMALL["num_tasks"]
    improved = 0
    for round_ in range(4):
        data = self_best_dataset(model, args, lay, round_)
        greedy, sampled = _played(model, lay, args, round_)
        best = min([greedy, *sampled])
        assert data["cuts"] == 1 and data["skipped"] == 0
        assert data["student_mean_ct"] == pytest.approx(greedy / n, abs=1e-12)
        assert data["expert_mean_ct"] == pytest.approx(best / n, abs=1e-12)
        assert data["improved"] == int(best < greedy)
        improved += data["improved"]
        # the labels played back through the env (winners: their slot and allocation; everyone else
        # void) are the kept episode: the same schedule, the same referee value
        assert _played_back(data, lay, args, round_) == best
        # every label is an allowed choice of its state; the winners' allocations are allowed cells
        S, N = data["slot"].shape
        P = data["slot_ok"].shape[-1]
        win = data["m"].astype(bool)
        assert (data["slot"][win] < P).all()
        rows = np.nonzero(win)
        assert data["slot_ok"][rows[0], rows[1], data["slot"][win]].all()
        assert data["alloc_ok"][rows[0], rows[1], data["alloc"][win]].all()
    assert improved > 0, "a fresh network's sampled episodes should beat its greedy one on some instance"


def test_a_round_is_seeded(student):
    model, lay = student
    args = _args(dagger_instances=2)
    a = self_best_dataset(model, args, lay, 1)
    b = self_best_dataset(model, args, lay, 1)
    for k in ("obs", "slot", "alloc", "m", "ret"):
        assert np.array_equal(a[k], b[k])
    c = self_best_dataset(model, args, lay, 2)
    assert not np.array_equal(a["obs"][:1], c["obs"][:1]) or len(a["slot"]) != len(c["slot"])


def test_a_self_best_run_selects_on_validation(tmp_path):
    """Two rounds from a fresh network: each adds the kept episodes' states to the aggregate, and the
    exported weights are the best on validation (never worse than the initial weights)."""
    args = _args(dagger_rounds=2, dagger_instances=2, dagger_epochs=1, val_episodes=2, out=str(tmp_path / "run"))
    res = train(args, log=None)
    hist = res["history"]
    vals = [h["val_mean_ct"] for h in hist if "val_mean_ct" in h]
    assert len(vals) == 1 + 2 + 1  # initial weights, one epoch per round, the selection row
    assert vals[-1] == min(vals[:-1])
    states = [h["bc_states"] for h in hist if h.get("bc_epoch", 0) > 0]
    assert states[1] > states[0]
    kept = [h["expert_mean_ct"] for h in hist if h.get("dagger_round", 0) > 0 and h.get("bc_epoch", 0) > 0]
    assert len(kept) == 2 and all(math.isfinite(v) for v in kept)
    # --dagger-window 1: the same rounds (round 1 is the same, so round 2's student is too), but
    # round 2 trains on its own states only
    res_w = train(_args(dagger_rounds=2, dagger_instances=2, dagger_epochs=1, val_episodes=2, dagger_window=1,
                        out=str(tmp_path / "run-w")), log=None)
    states_w = [h["bc_states"] for h in res_w["history"] if h.get("bc_epoch", 0) > 0]
    assert states_w == [states[0], states[1] - states[0]]


COMMON = ["train", "tapfinger", "--preset", "synthetic-3", "--steps", "0", "--set", "num_tasks=12"]


@pytest.mark.parametrize("extra, field", [
    (["--dagger-samples", "4"], "--dagger-samples"),  # needs --dagger-expert self-best
    (["--dagger-temperature", "0.5"], "--dagger-temperature"),
    (["--dagger-expert", "self-best", "--dagger-temperature", "0"], "--dagger-temperature"),  # argparse: usage too
    (["--dagger-expert", "self-best", "--dagger-temperature", "11"], "--dagger-temperature"),
    (["--dagger-expert", "self-best", "--dagger-samples", "0"], "--dagger-samples"),
])
def test_bad_self_best_options_exit_2_naming_the_option(tmp_path, capsys, extra, field):
    """The option's check is one line naming it (an argparse type error prints the usage first, as
    every option of the CLI does); nothing is written."""
    rc = main([*COMMON, "--out", str(tmp_path / "run"), *extra])
    err = capsys.readouterr().err.strip()
    lines = err.splitlines()
    assert rc == 2 and "Traceback" not in err and field in lines[-1] and "error" in lines[-1]
    if not lines[0].startswith("usage:"):
        assert len(lines) == 1
    assert not (tmp_path / "run").exists()
