"""TapFinger (edgebench.learned.tapfinger): graph and masks, Bayes conflict resolution, valid
actions, checkpoint round trip and reproducibility, referee-checked solver outputs, a short
training run that learns, the train CLI."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from edgebench import registry  # noqa: E402
from edgebench.instances.generators import generate, needs_traces  # noqa: E402
from edgebench.learned import acting  # noqa: E402
from edgebench.learned import tapfinger as tf  # noqa: E402
from edgebench.learned.train_tapfinger import TrainArgs, evaluate, train  # noqa: E402
from edgebench.referee import evaluate as evaluate_solution  # noqa: E402

SMALL = {"num_tasks": 12}


pytestmark = pytest.mark.usefixtures("torch_deterministic")


def _tiny(encoder="graph", pointer="pointer", variant="multi", seed=0):
    torch.manual_seed(seed)
    env = tf.make_env(preset="synthetic-3", params=SMALL, variant=variant)
    env.reset(seed=0)
    lay = tf.EnvLayout.of_env(env)
    model = tf.make_model(tf.ModelConfig(hidden=16, layers=1, heads=2, pointer_layers=1, encoder=encoder,
                                         pointer=pointer), lay)
    return env, lay, model


def test_graph_nodes_and_edges():
    env, lay, _ = _tiny()
    obs, _ = env.reset(seed=1)
    o = np.stack([obs[a]["observation"] for a in env.possible_agents])[None]
    ids = tf.pending_ids(env, lay)[None]
    x, edges = tf.build_graph(o, ids, lay)
    N, P, R = lay.n, lay.pending_size, lay.max_running
    assert x["clus"].shape[0] == N and x["pend"].shape[0] == N * P and x["run"].shape[0] == N * R
    assert x["short"].shape[0] == 1
    # one pending -> cluster edge per real pending slot; dummies carry the flag and no edge
    real = int((ids >= 0).sum())
    assert edges[("pend", "in", "clus")].shape[1] == real
    assert float(x["pend"][:, -1].sum()) == N * P - real
    # the same task pending in two clusters is linked both ways
    flat = ids.reshape(-1)
    same = edges[("pend", "same", "pend")]
    for s, d in same.T.tolist():
        assert flat[s] == flat[d] >= 0 and s // P != d // P
    assert edges[("clus", "up", "short")].shape[1] == N


def test_masks_match_env_and_actions_valid():
    env, lay, model = _tiny(variant="multi")
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=2)
    steps = 0
    while env.agents:
        masks = tf.masks_from_obs(env, obs, lay)
        for n, a in enumerate(env.possible_agents):
            assert masks[n].sum() == obs[a]["action_mask"][:-1].sum()
        actions, rec = tf.act(model, env, obs, lay, rng, greedy=False)
        for a, x in actions.items():
            assert obs[a]["action_mask"][x] == 1
        # at most one winner per task; the others send void
        won = [int(rec["ids"][n, rec["slot"][n]]) for n in range(lay.n) if rec["m"][n]]
        assert len(won) == len(set(won))
        obs, _, _, _, infos = env.step(actions)
        assert not any(i.get("conflict_lost") or i.get("invalid_action") for i in infos.values())
        steps += 1
    assert infos["cluster_0"]["objectives"] is not None and steps > 0


def test_bayes_conflict_resolution_prefers_roomier_cluster():
    env, lay, model = _tiny()
    obs, _ = env.reset(seed=5)
    # find a state in which some task is pending in two clusters
    for _ in range(50):
        ids = tf.pending_ids(env, lay)
        shared = [j for j in set(ids[0]) & set(ids[1]) if j >= 0]
        if shared:
            break
        obs, *_ = env.step({a: env.void_action(a) for a in env.agents})
    else:
        pytest.skip("no shared pending task in this episode")
    j = shared[0]
    # force both agents' pointers to j with equal probability: the posterior is ~ copies
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    logits_j = {n: int(np.flatnonzero(ids[n] == j)[0]) for n in (0, 1)}
    masks = tf.masks_from_obs(env, obs, lay)
    if not (masks[0, logits_j[0]].any() and masks[1, logits_j[1]].any()):
        pytest.skip("the shared task does not fit both clusters")
    orig = model.forward

    def forward(o, i, m, void_ok=None, values=True):
        lg, z, c, v = orig(o, i, m, void_ok, values)
        lg = torch.full_like(lg, tf.NEG)
        lg[0, 0, logits_j[0]] = 0.0
        lg[0, 1, logits_j[1]] = 0.0
        return lg, z, c, v

    model.forward = forward
    _, rec = tf.act(model, env, obs, lay, np.random.default_rng(0), greedy=True)
    c0, c1 = env._copies(j, 0), env._copies(j, 1)
    assert rec["m"][0] + rec["m"][1] == 1
    assert rec["m"][0] == (1 if c0 >= c1 else 0)


@pytest.mark.parametrize("encoder,pointer", [("graph", "pointer"), ("mlp", "pointer"), ("graph", "random")])
def test_checkpoint_roundtrip_reproduces_and_passes_referee(tmp_path, encoder, pointer):
    env, lay, model = _tiny(encoder=encoder, pointer=pointer)
    path = tmp_path / "tf.pt"
    tf.save_checkpoint(path, model, lay)
    inst = generate("placement", "synthetic-3", seed=123, variant="multi", **SMALL)
    a = tf.run_episode(model, env, lay, seed=4, instance=inst, check_masks=True)
    loaded, lay2, _ = tf.load_checkpoint(path)
    b = tf.run_episode(loaded, tf.make_env(inst, lay=lay2), lay2, seed=4, check_masks=True)
    assert a["done"] and b["done"]
    assert a["decisions"] == b["decisions"] and a["objectives"] == b["objectives"]
    name = {"mlp": "tapfinger-nograph", "random": "tapfinger-nopointer"}.get(encoder if encoder == "mlp" else pointer,
                                                                              "tapfinger")
    res = registry.solve(inst, name, seed=4, checkpoint=str(path))
    assert res.status == "feasible"
    ev = evaluate_solution(inst, res.solution)
    assert ev.feasible
    assert ev.objectives["total_completion_time"] == res.solution.objective
    assert res.solution.objective == a["objectives"]["total_completion_time"]


def test_bad_checkpoint_is_input_error(tmp_path):
    from edgebench.errors import InputError

    bad = tmp_path / "bad.pt"
    bad.write_text("not a checkpoint")
    inst = generate("placement", "synthetic-3", seed=1, **SMALL)
    with pytest.raises(InputError):
        registry.solve(inst, "tapfinger", checkpoint=str(bad))
    with pytest.raises(InputError):
        registry.solve(inst, "tapfinger", checkpoint=str(tmp_path / "missing.pt"))


def test_short_training_run_learns():
    """Pure MAPPO (the paper's procedure, no behaviour cloning): after 4096 env steps (64 updates)
    the greedy policy beats its own random initialisation on the held-out seeds (no paper numbers
    asserted). The preset is the paper's task-selection ablation workload (min 3 CPU + 3 GPU, no
    gain from more resources, short and long tasks), where a random network's greedy allocations
    waste capacity. A run this short is chaotic in the last bits of the float kernels, and more so
    at a high rate: with the first checkpoints' layer and void rule (``gat``, ``cluster``), lr 3e-3
    and 1024 steps, training seeds 0, 1, 2 gave ratios 0.61 / 0.63 / 0.84 on the host the test was
    written on, 1.03 / 0.95 / 0.76 on session 22's and 0.99 / 0.67 / 1.36 on session 32's (an AVX2
    host; seeds 3-7 there 0.62-1.54). At lr 1e-3 and 4096 steps session 32's host gives 0.75 / 0.65
    / 0.96 (seeds 3, 4: 0.71, 0.99): no seed worse than its start. So three seeds are trained at
    that rate and the test asks for learning across them: the best at least 15 % lower, the mean
    ratio at least 5 % lower."""
    ratios = []
    for seed in (0, 1, 2):
        args = TrainArgs(preset="sjf-ablation", steps=4096, gen_params=SMALL, num_envs=8, rollout_steps=8,
                         eval_every=0, eval_episodes=6, lr=1e-3, ent_coef=0.0, seed=seed,
                         model=tf.ModelConfig(hidden=32, layers=1, heads=2, pointer_layers=1, conv="gat",
                                              void_rule="cluster"))
        res = train(args, log=None)
        first, last = res["history"][0], res["final"]
        assert first["update"] == 0 and last["global_step"] == 4096
        ratios.append(last["eval_mean_ct"] / first["eval_mean_ct"])
        # the final evaluation is reproducible from the returned model
        again = evaluate(res["model"], args, res["layout"])
        assert again["eval_mean_ct"] == last["eval_mean_ct"]
    assert min(ratios) < 0.85 and sum(ratios) / len(ratios) < 0.95, ratios


@pytest.mark.parametrize("variant", ["multi", "single"])
def test_expert_replay_reproduces_the_exact_objective(variant):
    """Replaying the exact model's schedule through the env (the behaviour-cloning expert) gives
    exactly the exact model's objective, and every expert label is an allowed action."""
    from edgebench.learned.train_tapfinger import expert_schedule, replay_expert

    env = tf.make_env(preset="synthetic-3", params=SMALL, variant=variant)
    lay = tf.EnvLayout.of_env(env)
    for seed in (3, 4):
        inst = generate("placement", "synthetic-3", seed=seed, variant=variant, **SMALL)
        sol = expert_schedule(inst, time_limit=10)
        assert sol["status"] == "optimal"
        rep = replay_expert(env, lay, inst, sol["tasks"])
        assert rep["ok"] and rep["objectives"]["total_completion_time"] == sol["objective"]
        P = lay.pending_size
        starts = rep["slot"] < P
        assert int(starts.sum()) == SMALL["num_tasks"]  # every task started once, by its expert cluster
        for t, n in zip(*np.nonzero(starts)):
            assert rep["masks"][t, n, rep["slot"][t, n]].reshape(-1)[rep["alloc"][t, n]]
        # a schedule that is not the expert's is caught (wrong start step -> a different objective or not ok)
        bad = [(n, s + 1, c, g) if j == 0 else (n, s, c, g) for j, (n, s, c, g) in enumerate(sol["tasks"])]
        rep2 = replay_expert(env, lay, inst, bad)
        assert not rep2["ok"] or rep2["objectives"] is None or \
            rep2["objectives"]["total_completion_time"] != sol["objective"]


def test_lns_expert_replays_with_the_referee_objective():
    """The LNS expert (``--expert placement-lns``, issue 42 item 3): its schedules hold one start
    and allocation per task (no re-allocating history), their objective is the referee's, the
    env replays them exactly, and they are never worse than the MILP's on these instances."""
    from edgebench.learned.train_tapfinger import expert_schedule, replay_expert
    env = tf.make_env(preset="synthetic-3", params=SMALL, variant="multi")
    lay = tf.EnvLayout.of_env(env)
    for seed in (3, 4):
        inst = generate("placement", "synthetic-3", seed=seed, variant="multi", **SMALL)
        lns = expert_schedule(inst, time_limit=3, expert="placement-lns")
        milp = expert_schedule(inst, time_limit=10)
        assert lns["tasks"] is not None and len(lns["tasks"]) == SMALL["num_tasks"]
        rep = replay_expert(env, lay, inst, lns["tasks"])
        assert rep["ok"] and rep["objectives"]["total_completion_time"] == lns["objective"]
        assert lns["objective"] <= milp["objective"] + 1e-9
    with pytest.raises(tf.InputError):
        expert_schedule(inst, expert="random")


def test_online_lns_expert_replays_with_the_referee_objective():
    """The online expert (``--expert placement-lns-online``, session 22): one start and allocation
    per task, none before its arrival, the referee's objective, and the env replays it exactly."""
    from edgebench.learned.train_tapfinger import expert_schedule, replay_expert
    env = tf.make_env(preset="synthetic-3", params=SMALL, variant="multi")
    lay = tf.EnvLayout.of_env(env)
    for seed in (3, 4):
        inst = generate("placement", "synthetic-3", seed=seed, variant="multi", **SMALL)
        sol = expert_schedule(inst, time_limit=30, expert="placement-lns-online")
        assert sol["tasks"] is not None and len(sol["tasks"]) == SMALL["num_tasks"]
        assert all(s >= inst.placement.tasks[j].arrival for j, (_, s, _, _) in enumerate(sol["tasks"]))
        rep = replay_expert(env, lay, inst, sol["tasks"])
        assert rep["ok"] and rep["objectives"]["total_completion_time"] == sol["objective"]


@pytest.mark.parametrize("expert", ["online-list", "online-played"])
def test_window_experts_replay_exactly_where_the_window_binds(expert):
    """The experts played by the agents' rules (session 23): on hetero-6 single with a pending
    window of 2 (where the online LNS's own schedules do not replay, tests/solvers/
    test_placement_lns_window.py) every schedule replays exactly, with the referee's objective."""
    from edgebench.learned.train_tapfinger import expert_schedule, replay_expert
    params = dict(SMALL, pending_size=2)
    for seed in (3, 4):
        inst = generate("placement", "hetero-6", seed=seed, variant="single", **params)
        env = tf.make_env(inst, inputs="generic")
        sol = expert_schedule(inst, time_limit=30, expert=expert)
        assert sol["tasks"] is not None and len(sol["tasks"]) == params["num_tasks"]
        rep = replay_expert(env, tf.EnvLayout.of_env(env), inst, sol["tasks"])
        assert rep["ok"] and rep["objectives"]["total_completion_time"] == sol["objective"]


@pytest.mark.parametrize("variant", ["single", "multi"])
def test_dagger_relabelling_from_a_student_state(variant):
    """DAgger's expert from a student state: the exact model re-solved with the student's tasks
    started before step t fixed keeps their cluster, start and allocation, starts every other
    task at t or later, is never worse than the student's own completion, is optimal from an
    optimal prefix (the exact schedule's own prefix gives back the exact objective), and its
    replay from t reproduces its objective with every label allowed by the env masks."""
    from edgebench.learned.train_tapfinger import (expert_from_state, expert_schedule, replay_expert,
                                                   student_states)

    env, lay, model = _tiny(variant=variant)
    P, G1 = lay.pending_size, lay.max_gpu + 1
    inst = generate("placement", "synthetic-3", seed=5, variant=variant, **SMALL)
    ep = tf.run_episode(model, env, lay, instance=inst, greedy=True)
    started = student_states(env)
    assert len(started) == SMALL["num_tasks"] and ep["done"]
    times = sorted({v[1] for v in started.values()})
    t = times[len(times) // 2]
    prefix = {j: v for j, v in started.items() if v[1] < t}
    assert prefix
    sol = expert_from_state(inst, prefix, t, time_limit=10)
    assert sol["status"] == "optimal"
    for j, (n, s, c, g) in enumerate(sol["tasks"]):
        if j in prefix:
            assert (n, s, c, g) == prefix[j]
        else:
            assert s >= t and s >= inst.placement.tasks[j].arrival
    assert sol["objective"] <= ep["objectives"]["total_completion_time"]
    full = replay_expert(env, lay, inst, sol["tasks"])
    rep = replay_expert(env, lay, inst, sol["tasks"], record_from=t)
    assert rep["ok"] and rep["objectives"]["total_completion_time"] == sol["objective"]
    assert 0 < len(rep["slot"]) < len(full["slot"])
    starts = rep["slot"] < P
    assert int(starts.sum()) == SMALL["num_tasks"] - len(prefix)  # the expert's tasks only, each once
    for k, n in zip(*np.nonzero(starts)):
        c, g = divmod(int(rep["alloc"][k, n]), G1)
        assert rep["masks"][k, n, rep["slot"][k, n], c, g]
    # consistency with the exact model: from the optimum's own prefix the optimum is re-found
    opt = expert_schedule(inst, time_limit=10)
    pre = {j: tuple(x) for j, x in enumerate(opt["tasks"]) if x[1] < t}
    again = expert_from_state(inst, pre, t, time_limit=10)
    assert again["status"] == "optimal" and again["objective"] == opt["objective"]
    with pytest.raises(ValueError):
        expert_from_state(inst, {0: (0, t, 1, 1)}, t)  # a "started" task must start before t


def test_dagger_round_and_validation_selection(tmp_path):
    """A tiny run with a validation split and one DAgger round: the DAgger states are added to
    the BC data, validation (seeds 2*10**9 + k) is logged and the exported weights are the best on
    validation, whose held-out evaluation is reported last."""
    from edgebench.learned.train_tapfinger import dagger_dataset

    args = TrainArgs(preset="synthetic-3", variant="single", steps=0, gen_params=SMALL, eval_episodes=2, seed=0,
                     bc_instances=4, bc_epochs=1, bc_cache=str(tmp_path / "cache"), val_episodes=2,
                     dagger_rounds=1, dagger_instances=3, dagger_cuts=2, dagger_epochs=1,
                     model=tf.ModelConfig(hidden=16, layers=1, heads=2, pointer_layers=1))
    res = train(args, log=None)
    hist = res["history"]
    vals = [h["val_mean_ct"] for h in hist if "val_mean_ct" in h]
    assert len(vals) == 1 + 1 + 1 + 1  # initial weights, BC epoch, DAgger epoch, the selection row
    assert vals[-1] == min(vals[:-1])
    assert [h.get("dagger_round") for h in hist if "bc_epoch" in h and h["bc_epoch"] > 0] == [0, 1]
    bc_states = [h["bc_states"] for h in hist if h.get("bc_epoch", 0) > 0]
    assert bc_states[1] > bc_states[0]
    final = res["final"]
    assert "eval_mean_ct" in final and final["val_mean_ct"] == vals[-1]
    again = evaluate(res["model"], args, res["layout"], seed_base=2 * 10**9)
    assert again["eval_mean_ct"] == vals[-1]
    assert len(list((tmp_path / "cache" / "dagger").glob("*.json"))) > 0
    # the round's data is deterministic (seeded) and cached
    d1 = dagger_dataset(res["model"], args, res["layout"], 0)
    d2 = dagger_dataset(res["model"], args, res["layout"], 0)
    assert d1["cuts"] == d2["cuts"] and np.array_equal(d1["slot"], d2["slot"])
    # --init: a DAgger-only run from the exported weights starts from them (same validation value)
    # and never ends worse on validation than they are
    ckpt = tmp_path / "init.pt"
    tf.save_checkpoint(ckpt, res["model"], res["layout"])
    args2 = TrainArgs(preset="synthetic-3", variant="single", steps=0, gen_params=SMALL, eval_episodes=2, seed=1,
                      bc_cache=str(tmp_path / "cache"), val_episodes=2, init=str(ckpt), dagger_rounds=1,
                      dagger_instances=2, dagger_cuts=2, dagger_epochs=1, model=args.model)
    vals2 = [h["val_mean_ct"] for h in train(args2, log=None)["history"] if "val_mean_ct" in h]
    assert vals2[0] == vals[-1] and vals2[-1] <= vals2[0]


def test_short_behaviour_cloning_run_learns(tmp_path):
    """Behaviour cloning (8 epochs) on the exact model's schedules of 24 training instances of 12
    tasks beats the random initialisation on the held-out seeds by a wide margin and comes
    within 50 % of the expert's mean completion time (on its training instances). Measured:
    20.25 (random init) -> 4.39, expert 3.32 (one thread, seeded: repeatable)."""
    args = TrainArgs(preset="synthetic-3", steps=0, gen_params=SMALL, eval_episodes=6, seed=0, lr=1e-3,
                     bc_instances=24, bc_epochs=8, bc_cache=str(tmp_path / "cache"),
                     model=tf.ModelConfig(hidden=64, layers=2, heads=4, pointer_layers=2))
    res = train(args, log=None)
    first, last = res["history"][0], res["final"]
    assert last.get("bc_epoch") == 8 and len(list((tmp_path / "cache").glob("*.json"))) == 24
    assert last["eval_mean_ct"] < 0.5 * first["eval_mean_ct"], (first, last)
    assert last["eval_mean_ct"] < 1.5 * last["expert_mean_ct"], last


def test_train_cli_writes_logs_resumes_and_exports(tmp_path, capsys):
    from edgebench.cli import main

    out, exp = tmp_path / "run", tmp_path / "small.pt"
    base = ["train", "tapfinger", "--preset", "synthetic-3", "--variant", "single", "--seed", "3", "--out", str(out),
            "--set", "num_tasks=8", "--num-envs", "2", "--rollout-steps", "8", "--eval-every", "1",
            "--eval-episodes", "1", "--hidden", "16", "--layers", "1", "--heads", "2"]
    assert main(base + ["--steps", "16", "--export", str(exp)]) == 0
    assert "done: 16 steps" in capsys.readouterr().out
    rows = (out / "metrics.csv").read_text().strip().splitlines()
    assert rows[0].startswith("update,global_step") and len(rows) == 2 + 1
    assert (out / "last.pt").is_file() and (out / "best.pt").is_file() and any((out / "tb").iterdir())
    assert json.loads((out / "args.json").read_text())["variant"] == "single"
    assert main(base + ["--steps", "32", "--resume"]) == 0
    rows = (out / "metrics.csv").read_text().strip().splitlines()
    assert [r.split(",")[1] for r in rows[1:]] == ["0", "16", "32"]
    model, lay, blob = tf.load_checkpoint(exp)
    assert blob["extra"]["command"].startswith("edgebench train tapfinger --preset synthetic-3 --variant single")
    assert exp.stat().st_size < 2_000_000
    side = json.loads(exp.with_suffix(".json").read_text())  # the provenance sidecar of the export
    assert (side["preset"], side["variant"], side["algorithm"], side["env_steps"]) == ("synthetic-3", "single",
                                                                                        "mappo", 16)
    assert side["command"] == blob["extra"]["command"]
    assert main(["train", "tapfinger", "--out", str(out), "--set", "nope=1"]) == 2
    assert main(base + ["--steps", "16", "--device", "cuda:99"]) == 2 or torch.cuda.device_count() > 99


SHIPPED = sorted(tf.CHECKPOINT_DIR.glob("tapfinger*.pt"))


def test_checkpoints_are_shipped_with_provenance():
    """Every shipped TapFinger checkpoint has a sidecar (preset, variant, algorithm, env_steps);
    `edgebench solvers --json` lists them per learned solver with the file's sha256; the
    imitation-only files are the -bc solvers' and say so."""
    import hashlib

    from edgebench.learned.provenance import REQUIRED, sidecar

    names = {p.name for p in SHIPPED}
    assert {"tapfinger-bc-synthetic-3-multi.pt", "tapfinger-bc-synthetic-3-single.pt"} <= names, names
    for p in SHIPPED:
        meta = sidecar(p)
        assert all(k in meta for k in REQUIRED), (p.name, meta)
        assert p.name == f"{p.name.split('-' + meta['preset'])[0]}-{meta['preset']}-{meta['variant']}.pt"
    listed = {}
    for name in tf.SOLVERS:
        d = registry.get(name).as_dict()
        for rec in d["checkpoints"]:
            assert rec["sha256"] == hashlib.sha256((tf.CHECKPOINT_DIR / rec["file"]).read_bytes()).hexdigest()
            listed[rec["file"]] = rec
        if name.endswith("-bc"):
            assert d["checkpoints"] and all(r["algorithm"] in ("bc", "bc+dagger") and r["env_steps"] == 0
                                            for r in d["checkpoints"])
            assert "imitation" in d["description"]
        else:  # MAPPO-trained: the RL steps are recorded
            assert all("mappo" in r["algorithm"] and r["env_steps"] > 0 for r in d["checkpoints"])
    assert set(listed) == names
    assert "checkpoints" not in registry.get("optimus").as_dict()


@pytest.mark.parametrize("solver,preset,variant", [
    ("tapfinger", "synthetic-3", "multi"), ("tapfinger", "hetero-6", "multi"), ("tapfinger-nopointer", "hetero-6", "multi"),
    ("tapfinger-nograph", "synthetic-3", "multi"), ("tapfinger", "hetero-6", "single"), ("tapfinger", "synthetic-6", "multi"),
    ("tapfinger", "testbed", "single"), ("tapfinger-nograph", "hetero-6", "multi")])
def test_mappo_checkpoints_play_their_preset(solver, preset, variant):
    """The MAPPO-trained solvers find their own preset's checkpoint without being told (hetero-6
    multi and the no-graph ablation on synthetic-3 multi since the issue-16 follow-up, the no-graph
    ablation on hetero-6 multi since the fourth follow-up) and play a
    short held-out episode that the referee accepts; the file's provenance says bc+mappo."""
    from edgebench.learned.provenance import sidecar

    try:
        inst = generate("placement", preset, seed=10**9 + 1, variant=variant, num_tasks=12)
    except Exception as exc:  # the test-bed preset needs the traces
        pytest.skip(f"{preset}: {exc}")
    res = registry.solve(inst, solver, seed=0)
    st = res.solution.stats
    prefix = tf.SOLVERS[solver][0]
    assert res.status == "feasible", st.get("reason")
    assert (st["checkpoint"], st["checkpoint_match"]) == (f"{prefix}-{preset}-{variant}.pt", "exact")
    assert evaluate_solution(inst, res.solution).feasible
    meta = sidecar(tf.CHECKPOINT_DIR / st["checkpoint"])
    assert meta["algorithm"] == "bc+mappo" and meta["env_steps"] > 0 and meta["preset"] == preset


@pytest.mark.parametrize("preset,variant,expect,match", [
    ("synthetic-6", "multi", "tapfinger-bc-hetero-6-multi.pt", "nearest (hetero-6 multi)"),  # 6 clusters: hetero-6's grid holds them
    ("hetero-6", "single", "tapfinger-bc-hetero-6-single.pt", "exact"),
    ("sjf-ablation", "multi", "tapfinger-bc-sjf-ablation-single.pt", "nearest (sjf-ablation single)"),  # its own preset, the other variant
    ("testbed", "multi", "tapfinger-bc-testbed-multi.pt", "exact"),  # its own file (cloned on 12-task instances)
    # no-graph: task types none of its checkpoints knows: read generically (types by performance
    # features, learned/tapfinger_generic.py) by the first file with its cluster count and window
    ("testbed", "single", "tapfinger-nograph-bc-synthetic-3-single.pt", "generic (synthetic-3 single)"),
])
def test_nearest_checkpoint_or_a_generic_reading(preset, variant, expect, match):
    try:
        inst = generate("placement", preset, seed=5, variant=variant, num_tasks=12)
    except Exception as exc:  # the test-bed preset needs the traces
        pytest.skip(f"{preset}: {exc}")
    res = registry.solve(inst, "tapfinger-nograph-bc" if match.startswith("generic") else "tapfinger-bc", seed=0)
    st = res.solution.stats
    assert res.status == "feasible" and (st["checkpoint"], st["checkpoint_match"]) == (expect, match)
    assert evaluate_solution(inst, res.solution).feasible
    path, why = tf.nearest_checkpoint(inst, "no-such-policy")
    assert path is None and why == "no shipped no-such-policy-*.pt checkpoint"


@pytest.mark.parametrize("preset,variant,kw,file,match", [
    ("hetero-6", "single", {}, "hetero-6-single", "exact (generic inputs)"),
    ("synthetic-3", "single", {}, "synthetic-3-single", "exact (generic inputs)"),
    ("synthetic-3", "multi", {}, "synthetic-3-single", "nearest (synthetic-3 single) (generic inputs)"),
    # no synthetic-6 file: the other presets' files by name, the hetero-6 one first (6 clusters, other types)
    ("synthetic-6", "single", {"num_tasks": 10}, "hetero-6-single", "nearest (hetero-6 single) (generic inputs)"),
])
def test_the_generic_solver_plays_every_preset_as_trained(preset, variant, kw, file, match):
    """tapfinger-generic-bc ships files with generic inputs (hetero-6, synthetic-3 and test-bed
    single): the nearest rule takes the instance's preset's file, else the first by name, for
    every instance (no type mapping, no grid check), and its schedule is the referee's value."""
    inst = generate("placement", preset, seed=5, variant=variant, **({"num_tasks": 12} | kw))
    res = registry.solve(inst, "tapfinger-generic-bc", seed=0)
    st = res.solution.stats
    assert res.status == "feasible"
    assert (st["checkpoint"], st["checkpoint_match"]) == (f"tapfinger-generic-bc-{file}.pt", match)
    ev = evaluate_solution(inst, res.solution)
    assert ev.feasible and ev.primary_value == pytest.approx(res.solution.objective, rel=1e-9)


def test_resolve_device(monkeypatch):
    assert tf.resolve_device("cpu").type == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert tf.resolve_device("auto").type == "cpu"
    with pytest.raises(tf.InputError):
        tf.resolve_device("cuda")
    with pytest.raises(tf.InputError):
        tf.resolve_device("nonsense")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert tf.resolve_device("auto").type == "cuda"
    # a device number the machine lacks is bad input, not a CUDA error at the first tensor (seen on an
    # H200, session 24: --device cuda:99 ended in a traceback)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert tf.resolve_device("cuda:0") == torch.device("cuda", 0)
    with pytest.raises(tf.InputError, match="1 CUDA device"):
        tf.resolve_device("cuda:1")


def test_make_deterministic_switches_cuda_only(monkeypatch):
    """Training on a CUDA device turns on torch's deterministic algorithms and cuBLAS's fixed
    workspace (without them two runs of one seed differed by 0.028 after 6 updates on an H200;
    with them repeat and resume were bit-identical: bench/results/tapfinger-device-h200-issue42.json);
    on the CPU nothing changes, so CPU runs and the shipped records are untouched."""
    calls = []
    monkeypatch.setattr(torch, "use_deterministic_algorithms", lambda on, **kw: calls.append(on))
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    tf.make_deterministic(torch.device("cpu"))
    assert calls == [] and "CUBLAS_WORKSPACE_CONFIG" not in os.environ
    tf.make_deterministic(torch.device("cuda", 0))  # a device object only: no CUDA work is done
    assert calls == [True] and os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"


def test_critic_warmup_freezes_the_actor_then_mappo_selects_on_validation(tmp_path):
    """During the critic warm-up only the critic's weights move (the cloned actor is frozen);
    with validation episodes the MAPPO phase logs the start weights as a candidate and ends on
    the weights best on validation (re-evaluated: identical)."""
    env, lay, model = _tiny()
    init = tmp_path / "init.pt"
    tf.save_checkpoint(init, model, lay)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    args = TrainArgs(preset="synthetic-3", variant="multi", gen_params=SMALL, steps=64, seed=0, num_envs=2,
                     rollout_steps=16, eval_every=1, eval_episodes=1, val_episodes=2, critic_warmup=2,
                     critic_detach=True, team_reward=True, target_kl=0.05, model=model.cfg, init=str(init),
                     out=str(tmp_path / "run"))
    res = train(args, log=None)
    rows = res["history"]
    assert [r["critic_warmup"] for r in rows if "critic_warmup" in r] == [1, 1]
    assert "val_mean_ct" in rows[1] and rows[1]["global_step"] == 0
    after = res["model"].state_dict()
    for k, v in before.items():
        if k.startswith("critic."):
            assert not torch.equal(v, after[k]), k
        else:
            assert torch.equal(v, after[k]), k
    args2 = TrainArgs(**{**args.__dict__, "critic_warmup": 0, "steps": 96, "out": str(tmp_path / "run2")})
    res2 = train(args2, log=None)
    last = res2["history"][-1]
    vals = [r["val_mean_ct"] for r in res2["history"][1:-1] if "val_mean_ct" in r]
    assert last["val_mean_ct"] == min(vals) and last["selected_update"] >= 0
    again = evaluate(res2["model"], args2, lay, episodes=2, seed_base=args2.val_seed_base)
    assert again["eval_mean_ct"] == last["val_mean_ct"]


def test_init_from_another_presets_checkpoint_keeps_its_shapes(tmp_path):
    """--init from a checkpoint of another preset (issue 16: warm starts for presets without
    their own): the run keeps its own clusters and task types and takes the checkpoint's grid
    and running rows, so every weight loads unchanged; a layout that cannot hold the run's
    instances is an InputError naming the difference."""
    from edgebench.learned.train_tapfinger import transfer_layout

    _, lay, model = _tiny()
    init = tmp_path / "s3.pt"
    tf.save_checkpoint(init, model, lay)
    args = TrainArgs(preset="sjf-ablation", variant="multi", gen_params=SMALL, steps=0, eval_episodes=1,
                     model=model.cfg, init=str(init))
    res = train(args, log=None)
    assert res["layout"].type_names == ["long", "short"] and res["layout"].grid == lay.grid
    assert res["layout"].max_running == lay.max_running != tf.EnvLayout.of_env(
        tf.make_env(preset="sjf-ablation", params=SMALL)).max_running
    for k, v in model.state_dict().items():
        assert torch.equal(v, res["model"].state_dict()[k]), k
    h6 = tf.EnvLayout.of_env(tf.make_env(preset="hetero-6", params=SMALL))
    s6 = tf.EnvLayout.of_env(tf.make_env(preset="synthetic-6", params=SMALL))
    got = transfer_layout(s6, h6, file="h6.pt")
    assert got.caps == s6.caps and (got.max_cpu, got.max_gpu, got.max_running) == (32, 32, h6.max_running)
    with pytest.raises(tf.InputError, match="clusters is 6, this run's 3"):
        transfer_layout(lay, h6, file="h6.pt")
    with pytest.raises(tf.InputError, match="exceed the checkpoint's grid"):
        transfer_layout(h6, s6, file="s6.pt")


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_checkpoint_reproduces_its_evaluation(path):
    """The shipped checkpoint is small, came from the documented training command, reproduces the
    held-out evaluation recorded at export exactly (the first two held-out episodes; the
    recorded per-episode values average to the recorded mean), and its solver passes the
    referee."""
    import shlex

    from edgebench.cli import build_parser
    from edgebench.learned.tapfinger_cli import train_args_from_cli

    from edgebench.instances.traces import default_traces_dir

    assert path.stat().st_size < 2_000_000
    model, lay, blob = tf.load_checkpoint(path)
    command = blob["extra"]["command"]
    ns = build_parser().parse_args(shlex.split(command)[1:])
    if needs_traces("placement", ns.preset) and default_traces_dir() is None:
        pytest.skip(f"{path.name}: the {ns.preset} preset needs the shared traces folder (../shared/traces)")
    targs = train_args_from_cli(ns)
    cts = blob["extra"]["eval_cts"]
    assert len(cts) == targs.eval_episodes and np.mean(cts) == pytest.approx(blob["extra"]["eval"]["eval_mean_ct"])
    # the record promises the same decisions on any machine: made by the float64 tie rule, with a
    # smallest decision margin far above float64 rounding (edgebench.learned.acting)
    dec = blob["extra"]["decisions"]
    assert dec["precision"] == "float64" and dec["tie_tol"] == acting.TIE_TOL
    assert dec["margin"] is None or dec["margin"] >= acting.MIN_MARGIN
    replay = evaluate(model, targs, lay, episodes=2)
    # per-episode means of integer completion times: equal decisions give equal values
    assert replay["eval_cts"] == pytest.approx(cts[:2], abs=1e-9)
    assert replay["decision_margin"] >= acting.MIN_MARGIN
    inst = generate("placement", targs.preset, seed=10**9, variant=targs.variant, **targs.gen_params)
    name = "tapfinger-nograph" if model.cfg.encoder == "mlp" else "tapfinger"
    res = registry.solve(inst, name + ("-bc" if "-bc-" in path.name else ""), seed=0, checkpoint=str(path))
    assert res.status == "feasible" and evaluate_solution(inst, res.solution).feasible


def test_greedy_decisions_survive_another_machines_rounding(monkeypatch):
    """Another machine's kernels round differently: scores perturbed by 1e-11 (float64 rounding
    of these networks is ~1e-14) give exactly the same greedy decisions, ties included."""
    path = tf.CHECKPOINT_DIR / "tapfinger-mappo-synthetic-3-multi.pt"
    model, lay, _ = tf.load_checkpoint(path)
    inst = generate("placement", "synthetic-3", seed=10**9 + 3, variant="multi", num_tasks=48)
    base = tf.run_episode(model, tf.make_env(inst, lay=lay), lay, seed=0, instance=inst)
    assert base["decision_margin"] >= acting.MIN_MARGIN
    rng = np.random.default_rng(7)
    exact = acting.pick_max

    def jittered(scores, ok=None, tol=acting.TIE_TOL):
        s = np.asarray(scores, dtype=np.float64)
        return exact(s + rng.uniform(-1e-11, 1e-11, s.shape), ok, tol)

    monkeypatch.setattr(tf, "pick_max", jittered)
    again = tf.run_episode(model, tf.make_env(inst, lay=lay), lay, seed=0, instance=inst)
    assert again["decisions"] == base["decisions"]


def test_pick_max_breaks_ties_by_index():
    """Scores within TIE_TOL of the best are tied (lowest allowed index wins); the margin is the
    gap to the best score outside the tie set; masked entries never win."""
    i, margin = acting.pick_max([1.0, 3.0, 3.0 + 1e-12, 2.5])
    assert i == 1 and margin == pytest.approx(0.5)
    i, margin = acting.pick_max([5.0, 3.0, 3.0], ok=[False, True, True])
    assert i == 1 and margin == math.inf
    assert acting.pick_max([0.0, 1.0, 1.0 - 1e-6])[0] == 1


def test_recomputed_logp_matches_the_behaviour_policy():
    """The PPO ratio starts at exactly 1: the log-probabilities recomputed in the update from the
    stored observations, masks, void permissions and actions equal those the rollout sampled
    with (pointer + allocation of the conflict winners, pointer only for the losers)."""
    from edgebench.learned.train_tapfinger import _logp_entropy

    envs = [tf.make_env(preset="synthetic-3", params=SMALL, variant=v) for v in ("multi", "single")]
    obs = [e.reset(seed=s)[0] for s, e in enumerate(envs)]
    lay = tf.EnvLayout.of_env(envs[0])
    torch.manual_seed(0)
    model = tf.make_model(tf.ModelConfig(hidden=16, layers=1, heads=2, pointer_layers=1), lay)
    rng = np.random.default_rng(0)
    recs = []
    for _ in range(12):
        if not all(e.agents for e in envs):
            break
        actions, rec = tf.act_batch(model, envs, obs, lay, rng, greedy=False)
        recs.append(rec)
        obs = [e.step(a)[0] for e, a in zip(envs, actions)]
    batch = {k: np.concatenate([r[k] for r in recs]) for k in recs[0]}
    idx = np.arange(len(batch["slot"]))
    with torch.no_grad():
        logp, ent, values = _logp_entropy(model, batch, idx)
    act = batch["active"].astype(bool)
    assert act.sum() > 5 and batch["m"].sum() > 0
    np.testing.assert_allclose(logp.numpy()[act], batch["logp"][act], atol=1e-4)
    np.testing.assert_allclose(values.numpy(), batch["value"], atol=1e-5)


def test_provenance_records_belong_to_their_prefix(tmp_path):
    """A sidecar belongs to the solver whose prefix + preset (+ variant) is the file's stem, so
    tapfinger-bc-* files are not listed for tapfinger, and preset-only names (ces-ppo-thesis)
    work; sha256 comes from the file."""
    import hashlib

    from edgebench.learned.provenance import checkpoint_records

    def ship(stem, **meta):
        (tmp_path / f"{stem}.pt").write_bytes(stem.encode())
        (tmp_path / f"{stem}.json").write_text(json.dumps({"algorithm": "bc", "env_steps": 0, **meta}))

    ship("tapfinger-mappo-synthetic-3-multi", preset="synthetic-3", variant="multi", algorithm="bc+mappo",
         env_steps=5)
    ship("tapfinger-bc-synthetic-3-multi", preset="synthetic-3", variant="multi")
    ship("ces-ppo-thesis", preset="thesis", variant=None, algorithm="bc+ppo", env_steps=7)
    ship("ces-ppo-noheur-thesis", preset="thesis", variant=None, algorithm="bc+ppo", env_steps=9)
    (tmp_path / "tapfinger-bc-hetero-6-multi.json").write_text(json.dumps({"preset": "hetero-6", "variant": "multi"}))
    assert [r["file"] for r in checkpoint_records("tapfinger-bc", tmp_path)] == ["tapfinger-bc-synthetic-3-multi.pt"]
    (rec,) = checkpoint_records("tapfinger-mappo", tmp_path)
    assert (rec["algorithm"], rec["env_steps"]) == ("bc+mappo", 5)
    assert rec["sha256"] == hashlib.sha256(b"tapfinger-mappo-synthetic-3-multi").hexdigest()
    assert [r["env_steps"] for r in checkpoint_records("ces-ppo", tmp_path)] == [7]
    assert [r["env_steps"] for r in checkpoint_records("ces-ppo-noheur", tmp_path)] == [9]
    assert checkpoint_records("tapfinger", tmp_path) == []


def test_the_runner_plans_no_run_where_a_policy_has_no_checkpoint():
    """tapfinger-nograph / tapfinger decline instances no shipped checkpoint fits: the plan
    leaves those runs out and says so, instead of charging an error per instance."""
    from edgebench.instances.generators import generate as gen
    from edgebench.runner.suite import plan, suite_from_dict

    suite = suite_from_dict({"name": "t", "time_limit": 5, "instances": [{"set": "placement-hetero-6-v1"},
                                                                      {"set": "placement-synthetic-3-v1"}],
                             "solvers": [{"name": "tapfinger"}, {"name": "tapfinger-bc"}]})
    p = plan(suite)
    by_solver = {}
    for r in p.runs:
        by_solver.setdefault(r.solver, set()).add(r.inst.hash)
    info = registry.get("tapfinger")
    for ref in p.instances:
        fits = info.applies(ref.instance, {}) is None
        assert (ref.hash in by_solver.get("tapfinger", set())) == fits
        assert ref.hash in by_solver["tapfinger-bc"]  # imitation-only files exist for both presets
    if len(by_solver.get("tapfinger", ())) < len(p.instances):
        assert any(n.startswith("note: tapfinger declines") for n in p.notes)
    # an explicit checkpoint always applies
    inst = gen("placement", "hetero-6", seed=0, num_tasks=8)
    assert info.applies(inst, {"checkpoint": "x.pt"}) is None
