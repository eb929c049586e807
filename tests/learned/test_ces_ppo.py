"""CES-PPO: masks, reward terms, a short training run that learns, resume, checkpoints that
reproduce their evaluation, registered solvers checked by the referee, CES-Multi with the
learned scheduler, and the ``edgebench train ces-ppo`` command."""

from __future__ import annotations

import csv

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from edgebench import registry  # noqa: E402
from edgebench.cli import main  # noqa: E402
from edgebench.errors import InputError  # noqa: E402
from edgebench.instances.generators import generate  # noqa: E402
from edgebench.learned import ces_ppo  # noqa: E402
from edgebench.learned.envs.mapping import MappingEnv  # noqa: E402
from edgebench.learned.train_ces_ppo import (BC_SEED_FLOOR, TEACHER_HEURISTICS, Args, RewardCoefs,  # noqa: E402
                                             ThesisReward, bc_seed, behaviour_clone, collect_expert_data,
                                             evaluate_network, heuristic_solution,
                                             expert_level, expert_solution, lambda_h_at, replay_expert, train)
from edgebench.referee import evaluate, evaluate_decisions  # noqa: E402

SIZES = {"max_nodes": 10, "max_tasks": 8, "max_levels": 5}


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A short training run (1024 steps, then resumed to 2048): (out dir, summaries)."""
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("ces-ppo")
    args = dict(total_steps=1024, num_envs=4, num_steps=64, eval_seeds=6, eval_every=2, seed=3)
    first = train(Args(**args), out, log=None, tensorboard=False)
    args["total_steps"] = 2048
    second = train(Args(**args), out, resume=True, log=None, tensorboard=True)
    return out, first, second


# ---- network and masks ------------------------------------------------------------------


@pytest.mark.parametrize("node_head", [False, True])
def test_masked_logits_follow_phase_and_mask(node_head):
    torch.manual_seed(0)
    net = ces_ppo.build_network(**SIZES, hidden=32, node_head=node_head)
    env = MappingEnv(generate("mapping", "thesis", seed=5), **SIZES)
    obs, _ = env.reset(seed=0)
    seen = set()
    while True:
        x = torch.from_numpy(ces_ppo.flatten_obs(obs)).unsqueeze(0)
        m = torch.from_numpy(obs["action_mask"].astype(bool)).unsqueeze(0)
        with torch.no_grad():
            logits, value = net.logits_value(x, m)
        assert x.shape[1] == ces_ppo.obs_dim(SIZES["max_nodes"], SIZES["max_tasks"])
        assert value.shape == (1,)
        masked = ~m[0]
        assert torch.all(logits[0][masked] == ces_ppo.MASK_LOGIT)
        assert torch.all(logits[0][~masked] > ces_ppo.MASK_LOGIT / 2)
        phase = env.unwrapped._phase
        seen.add(phase)
        if phase == "bandwidth":  # levels beyond L are never offered
            assert torch.all(logits[0][SIZES["max_levels"]:] == ces_ppo.MASK_LOGIT)
        probs = torch.softmax(logits[0], -1)
        assert float(probs[masked].sum()) == 0.0
        obs, _, term, _, info = env.step(ces_ppo.decide(net, obs, greedy=True))
        assert not info["invalid_action"]
        if term:
            break
    assert seen == {"map", "bandwidth"}


@pytest.mark.parametrize("variant", ces_ppo.VARIANTS)
def test_sampled_actions_always_valid(variant):
    torch.manual_seed(1)
    net = ces_ppo.build_network(**SIZES, hidden=32)
    gen = torch.Generator().manual_seed(7)
    for s in range(4):
        env = ces_ppo.make_env(variant, generate("mapping", "thesis", seed=100 + s), **SIZES)
        obs, _ = env.reset(seed=0)
        while True:
            a = ces_ppo.decide(net, obs, greedy=False, generator=gen)
            assert obs["action_mask"][a] == 1
            obs, _, term, _, info = env.step(a)
            assert not info["invalid_action"]
            if term:
                break
        assert info["feasible"] and not info["dead_end"]


def test_degree_rule_plays_every_bandwidth_decision():
    inst = generate("mapping", "thesis", seed=11, task_nodes=6)
    env = ces_ppo.make_env("ppo-balance", inst, **SIZES)
    obs, _ = env.reset(seed=0)
    while True:
        assert env.unwrapped._phase == "map"  # the agent never sees a bandwidth decision
        obs, _, term, _, info = env.step(int(np.flatnonzero(obs["action_mask"])[-1]))
        if term:
            break
    assert info["feasible"]


# ---- reward -----------------------------------------------------------------------------


def test_lambda_h_schedule():
    a = Args()
    assert lambda_h_at(a, 0.0) == pytest.approx(0.8)
    assert lambda_h_at(a, 1.0) == pytest.approx(0.1)
    assert lambda_h_at(a, 0.5) == pytest.approx(0.45)
    assert lambda_h_at(Args(variant="ces-ppo-noheur"), 0.0) == 0.0
    assert lambda_h_at(Args(variant="ppo-balance"), 0.3) == 0.0


def test_thesis_reward_terms():
    inst = generate("mapping", "thesis", seed=21, task_nodes=5)
    rew = ThesisReward(RewardCoefs(), "ces-ppo", lambda_h=0.5)
    env = MappingEnv(inst, **SIZES, reward_fn=rew)
    obs, _ = env.reset(seed=0)
    rew.observe(env)
    total = 0.0
    while True:
        free_cpu, free_ram, _ = env.free_resources()
        i, q = env._index, int(np.flatnonzero(obs["action_mask"])[0])
        phase = env._phase
        obs, r, term, _, info = env.step(q)
        t = rew.last
        if phase == "map":
            net, job = env._net, env._net.jobs[0]
            u_c = 1 - (free_cpu[q] - job.cpu[i]) / net.cpu_cap[q]
            u_r = 1 - (free_ram[q] - job.ram[i]) / net.ram_cap[q]
            close = np.clip(1 - (abs(u_c - 0.625) + abs(u_r - 0.625)) / 1.25, 0, 1)
            assert t["closeness"] == pytest.approx(close)
            for key in ("load", "affinity", "topo"):
                assert 0.0 <= t[key] <= 1.0 + 1e-12
        else:
            assert q == 0 and t["delta"] == 0.0  # the lowest level: bw_min
            assert 0.0 <= t["compete"] <= 1.0
        expect = t.get("step", 0.0) + 0.5 * t.get("heuristic", 0.0) + t.get("final", 0.0)
        assert r == pytest.approx(expect)
        total += r
        if term:
            break
    o = info["objectives"]
    assert t["final"] == pytest.approx(1.0 * (1 - o["L"]) + 1.0 * o["D_BW"] + 0.1 * o["U_avg"])


# ---- training ---------------------------------------------------------------------------


def test_short_training_learns_and_resumes(trained):
    out, first, second = trained
    assert first["global_step"] == 1024 and second["global_step"] == 2048
    # beats its randomly initialised network on the held-out seeds
    assert second["final_composite"] > second["initial_composite"] + 0.02
    assert second["initial_composite"] == first["initial_composite"]
    with open(out / "progress.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["update"]) for r in rows] == list(range(1, 9))
    assert float(rows[0]["lambda_h"]) == pytest.approx(0.8)
    assert any((out / "tb").iterdir())


def test_training_is_reproducible(tmp_path):
    det = torch.are_deterministic_algorithms_enabled()
    args = dict(total_steps=256, num_envs=2, num_steps=64, eval_seeds=2, seed=9)
    a = train(Args(**args), tmp_path / "a", log=None, tensorboard=False)
    b = train(Args(**args), tmp_path / "b", log=None, tensorboard=False)
    assert a["final_composite"] == b["final_composite"]
    ma = ces_ppo.read_checkpoint(tmp_path / "a" / "checkpoint.pt")["model"]
    mb = ces_ppo.read_checkpoint(tmp_path / "b" / "checkpoint.pt")["model"]
    assert all(torch.equal(ma[k], mb[k]) for k in ma)
    assert torch.get_num_threads() == 1 and torch.are_deterministic_algorithms_enabled() == det


def test_checkpoint_reproduces_its_evaluation(trained):
    out, _, second = trained
    pol = ces_ppo.load_policy(out / "checkpoint.pt")
    rec = pol.meta["eval"]
    assert rec["composite"] == pytest.approx(second["final_composite"])
    insts = [generate("mapping", "thesis", seed=s) for s in rec["seeds"]]
    again = evaluate_network(pol.net, pol.variant, SIZES, insts)
    assert [p["composite"] for p in again["per_instance"]] == pytest.approx(rec["per_instance"], abs=1e-12)
    # and through the registered solver, checked by the referee
    for s, inst in zip(rec["seeds"][:3], insts):
        res = registry.solve(inst, "ces-ppo", seed=0, checkpoint=str(out / "checkpoint.pt"))
        ev = evaluate(inst, res.solution)
        assert res.status == "feasible" and ev.feasible
        assert ev.objectives["composite"] == pytest.approx(rec["per_instance"][rec["seeds"].index(s)], abs=1e-12)


@pytest.mark.parametrize("name", ces_ppo.VARIANTS)
def test_shipped_checkpoints(name):
    path = ces_ppo.DEFAULT_CHECKPOINTS[name]
    assert path.is_file() and path.stat().st_size < 2 * 1024 * 1024
    pol = ces_ppo.load_policy(path)
    assert pol.variant == name
    rec = pol.meta["eval"]
    raw = ces_ppo.read_checkpoint(path)
    # the documented training commands (docs/ces-ppo.md): a behaviour-cloning warm start from the
    # best heuristic (PPO-Balance: by L), then PPO with the variant's reward; the size-independent
    # per-node network, 10- and 20-node training networks
    assert raw["arch"] == "per-node" and tuple(raw["args"]["nodes_mix"]) == (10, 20)
    assert raw["args"]["bc_instances"] == 1500 and raw["args"]["bc_teacher"] == "heuristics"
    assert raw["args"]["bc_objective"] == ("L" if name == "ppo-balance" else "composite")
    assert raw["bc"]["complete"] > 1400 and raw["global_step"] >= 19000
    mix = raw["args"]["nodes_mix"]
    seeds = rec["seeds"][:4]  # alternately 10- and 20-node held-out networks
    for s, want in zip(seeds, rec["per_instance"]):
        inst = generate("mapping", rec["preset"], seed=s, **rec["params"], nodes=mix[s % len(mix)])
        res = registry.solve(inst, name, seed=0)
        ev = evaluate(inst, res.solution)
        assert res.status == "feasible" and ev.feasible
        assert ev.objectives["composite"] == pytest.approx(want, abs=1e-12)
        assert res.solution.objective == pytest.approx(want, abs=1e-12)


def test_solver_errors(trained):
    out, _, _ = trained
    inst = generate("mapping", "thesis", seed=1, nodes=12)
    res = registry.solve(inst, "ces-ppo", checkpoint=str(out / "checkpoint.pt"))
    assert res.status == "error" and "too large" in res.stats["reason"]
    with pytest.raises(InputError):
        registry.solve(generate("mapping", "thesis", seed=1), "ces-ppo", bogus=1)
    with pytest.raises(InputError):
        registry.solve(generate("mapping", "thesis", seed=1), "ces-ppo", checkpoint=str(out / "nope.pt"))
    with pytest.raises(InputError):  # a ces-ppo checkpoint is not a ppo-balance one
        registry.solve(generate("mapping", "thesis", seed=1), "ppo-balance", checkpoint=str(out / "checkpoint.pt"))


def test_sampling_is_seeded(trained):
    out, _, _ = trained
    inst = generate("mapping", "thesis", seed=4)
    a = registry.solve(inst, "ces-ppo", seed=5, greedy=False, checkpoint=str(out / "checkpoint.pt"))
    b = registry.solve(inst, "ces-ppo", seed=5, greedy=False, checkpoint=str(out / "checkpoint.pt"))
    assert a.solution.mapping == b.solution.mapping


@pytest.mark.parametrize("policy", ["fifo", "ces-multi"])
def test_ces_multi_with_learned_scheduler(trained, policy):
    out, _, _ = trained
    inst = generate("mapping", "thesis-queue", seed=2, jobs=6)
    res = registry.solve(inst, policy, seed=0, time_limit=60, scheduler="ces-ppo",
                         scheduler_params={"checkpoint": str(out / "checkpoint.pt")})
    ev = evaluate(inst, res.solution)
    assert res.status == "feasible" and ev.feasible


# ---- behaviour-cloning warm start ---------------------------------------------------------


@pytest.mark.parametrize("seed,tasks", [(7, 4), (11, 6)])
@pytest.mark.parametrize("variant", ["ces-ppo", "ppo-balance"])
def test_expert_replay_reproduces_the_exact_composite(tmp_path, seed, tasks, variant):
    """Replaying the exact solution through the env gives its mapping and -- up to the level
    rounding of its bandwidths -- its referee composite (exactly when every exact bandwidth is
    on the level grid, as the composite optimum's bw_max always is)."""
    inst = generate("mapping", "thesis", seed=seed, task_nodes=tasks)
    sol = expert_solution(inst, cache_dir=tmp_path)
    assert sol is not None and sol["status"] == "optimal"
    assert expert_solution(inst, cache_dir=tmp_path) == sol  # served from the JSON cache
    assert len(list(tmp_path.glob("*.json"))) == 1
    reward = ThesisReward(variant=variant, lambda_h=0.8)
    env = ces_ppo.make_env(variant, inst, **SIZES, reward_fn=reward)
    rep = replay_expert(env, inst, sol, reward)
    assert rep["complete"] and rep["feasible"]
    assert len(rep["actions"]) == len(rep["obs"]) == len(rep["masks"]) == len(rep["rewards"])
    assert all(m[a] for m, a in zip(rep["masks"], rep["actions"]))
    got = env.unwrapped.decisions()
    assert list(got.jobs[0].nodes) == sol["jobs"][0]["nodes"]
    L = inst.mapping.objective.bandwidth_levels
    job = inst.mapping.jobs[0]
    on_grid = all(any(abs(b - (lk.bw_min + a / (L - 1) * (lk.bw_max - lk.bw_min))) < 1e-9 for a in range(L))
                  for lk, b in zip(job.links, sol["jobs"][0]["bandwidth"]))
    if variant == "ces-ppo":
        tol = 1e-9 if on_grid else 0.5 / (L - 1)
        assert rep["objectives"]["composite"] == pytest.approx(sol["composite"], abs=tol)
        assert evaluate_decisions(inst, got).objectives["composite"] == pytest.approx(
            rep["objectives"]["composite"], abs=1e-12)
    else:  # PPO-Balance: only the mapping decisions are the agent's (levels by the degree rule)
        assert len(rep["actions"]) == tasks


def test_load_balance_expert_for_ppo_balance(tmp_path):
    """PPO-Balance's teacher: the exact L optimum, cached beside (not over) the composite one."""
    inst = generate("mapping", "thesis", seed=9, task_nodes=5)
    comp = expert_solution(inst, cache_dir=tmp_path)
    bal = expert_solution(inst, cache_dir=tmp_path, objective="L")
    assert bal is not None and bal["status"] == "optimal"
    assert sorted(p.name.endswith("-L.json") for p in tmp_path.glob("*.json")) == [False, True]
    assert expert_solution(inst, cache_dir=tmp_path, objective="L") == bal  # from the cache
    # the L optimum of mapping-exact (the referee's L counts link loads too, so its bandwidths
    # matter), not the composite optimum
    from edgebench.formulations.mapping import solve_exact

    ref = {obj: evaluate_decisions(inst, solve_exact(inst, objective=obj, threads=1).decisions()).objectives
           for obj in ("composite", "L")}
    assert bal["jobs"] != comp["jobs"] and ref["L"]["L"] < ref["composite"]["L"]
    assert bal["composite"] == pytest.approx(ref["L"]["composite"], abs=1e-9)
    assert comp["composite"] == pytest.approx(ref["composite"]["composite"], abs=1e-9)
    env = ces_ppo.make_env("ppo-balance", inst, **SIZES)
    rep = replay_expert(env, inst, bal)  # PPO-Balance replays the L expert's mapping
    assert rep["complete"] and rep["feasible"] and len(rep["actions"]) == 5
    Args(variant="ppo-balance", bc_objective="L").check()
    with pytest.raises(InputError):
        Args(bc_objective="D_BW").check()


def test_heuristic_teacher_is_the_best_heuristic():
    """The cheap teacher: the best of the registered heuristics by the referee's objective."""
    inst = generate("mapping", "thesis", seed=13, nodes=20, task_nodes=6)
    got = {}
    for name in TEACHER_HEURISTICS:
        res = registry.solve(inst, name, seed=0)
        got[name] = evaluate(inst, res.solution).objectives
    for objective, key, pick in (("composite", "composite", max), ("L", "L", min)):
        sol = heuristic_solution(inst, objective=objective)
        assert sol["solver"] == pick(got, key=lambda n: got[n][key])
        assert sol["composite"] == pytest.approx(got[sol["solver"]]["composite"], abs=1e-12)
        env = ces_ppo.make_env("ces-ppo", inst, max_nodes=20, max_tasks=8, max_levels=5)
        rep = replay_expert(env, inst, sol)
        assert rep["complete"] and rep["feasible"]
        if objective == "composite":  # the teacher's mapping, its bandwidths rounded to allowed levels
            assert list(env.unwrapped.decisions().jobs[0].nodes) == sol["jobs"][0]["nodes"]
    with pytest.raises(InputError):
        Args(bc_teacher="oracle").check()
    with pytest.raises(InputError):
        Args(bc_teacher="best", bc_objective="L").check()


def test_best_teacher_is_never_below_the_heuristics(tmp_path):
    """``bc_teacher="best"``: the better of the heuristics and the (time-capped) exact solve."""
    kw = dict(bc_instances=3, seed=6, params={"task_nodes_range": [3, 4]}, expert_cache=str(tmp_path / "c"))
    sizes = {"max_nodes": 10, "max_tasks": 4, "max_levels": 5}
    got = {t: collect_expert_data(Args(bc_teacher=t, **kw), sizes)["expert_composite"]
           for t in ("heuristics", "exact", "best")}
    assert got["best"] == pytest.approx(got["exact"], abs=1e-12)  # small jobs: the exact optimum wins
    assert got["best"] >= got["heuristics"] - 1e-12


def test_expert_level_is_nearest_allowed():
    mask = np.array([1, 1, 1, 0, 0], dtype=np.int8)
    assert expert_level(10.0, 50.0, 50.0, 5, mask) == 2  # bw_max not allowed: highest allowed
    assert expert_level(10.0, 50.0, 21.0, 5, np.ones(5, dtype=np.int8)) == 1
    assert expert_level(10.0, 50.0, 25.0, 5, np.ones(5, dtype=np.int8)) == 1  # tie: the lower level


def test_bc_seeds_avoid_held_out_seeds():
    args = Args(eval_seeds=5, eval_seed_base=BC_SEED_FLOOR + 10)
    rng = np.random.default_rng(0)
    seeds = [bc_seed(rng, args) for _ in range(200)]
    assert all(s >= BC_SEED_FLOOR and not args.eval_seed_base <= s < args.eval_seed_base + 5 for s in seeds)


def test_behaviour_cloning_fits_the_expert(tmp_path):
    torch.manual_seed(0)
    args = Args(bc_instances=6, bc_epochs=60, bc_batch=32, bc_lr=3e-3, expert_cache=str(tmp_path / "cache"), seed=4,
                params={"task_nodes_range": [3, 4]})
    sizes = {"max_nodes": 10, "max_tasks": 4, "max_levels": 5}
    data = collect_expert_data(args, sizes)
    assert data["complete"] == 6 and len(data["action"]) == len(data["ret"]) > 6
    net = ces_ppo.build_network(**sizes, hidden=64)
    with torch.no_grad():
        logits, _ = net.logits_value(data["obs"], data["mask"])
        before = float(torch.nn.functional.cross_entropy(logits, data["action"]))
    fit = behaviour_clone(net, data, args)
    assert fit["cross_entropy"] < 0.5 * before and fit["accuracy"] > 0.8


def test_training_with_bc_warm_start(tmp_path):
    args = Args(total_steps=0, bc_instances=4, bc_epochs=3, eval_seeds=2, seed=5,
                expert_cache=str(tmp_path / "cache"), params={"task_nodes_range": [3, 4]})
    summary = train(args, tmp_path / "bc", log=None, tensorboard=False)
    assert summary["global_step"] == 0 and summary["bc_composite"] == summary["final_composite"]
    data = ces_ppo.read_checkpoint(tmp_path / "bc" / "checkpoint.pt")
    assert data["bc"]["decisions"] > 0 and data["bc"]["complete"] == 4
    assert data["args"]["bc_instances"] == 4
    assert len(list((tmp_path / "cache").glob("*.json"))) == 4
    # then PPO fine-tuning continues from the cloned network (cache reused)
    args.total_steps, args.num_envs, args.num_steps = 128, 2, 64
    summary = train(args, tmp_path / "bc2", log=None, tensorboard=False)
    assert summary["global_step"] == 128 and summary["bc_composite"] is not None
    with pytest.raises(InputError):
        Args(total_steps=0).check()  # 0 PPO steps only after a BC warm start


def test_best_of_samples_is_seeded_and_not_worse(trained):
    out, _, _ = trained
    inst = generate("mapping", "thesis", seed=6)
    kw = dict(checkpoint=str(out / "checkpoint.pt"))
    greedy = registry.solve(inst, "ces-ppo", seed=2, **kw)
    a = registry.solve(inst, "ces-ppo", seed=2, samples=4, **kw)
    b = registry.solve(inst, "ces-ppo", seed=2, samples=4, **kw)
    assert a.solution.mapping == b.solution.mapping and a.stats["samples"] == 4
    assert a.solution.objective >= greedy.solution.objective - 1e-12
    assert a.stats["first_composite"] == pytest.approx(greedy.solution.objective, abs=1e-12)
    assert evaluate(inst, a.solution).feasible
    with pytest.raises(InputError):
        registry.solve(inst, "ces-ppo", samples=-1, **kw)


# ---- command line -----------------------------------------------------------------------


def test_cli_train(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["train", "ces-ppo", "--variant", "ppo-balance", "--steps", "128", "--num-steps", "32",
               "--eval-seeds", "2", "--eval-every", "1", "--seed", "2", "--out", str(out), "--no-tensorboard"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "update 1/1" in text and "done: 128 steps" in text
    assert (out / "checkpoint.pt").is_file() and (out / "progress.csv").is_file()
    assert ces_ppo.load_policy(out / "checkpoint.pt").variant == "ppo-balance"
    rc = main(["train", "ces-ppo", "--steps", "128", "--set", "nodes=0", "--out", str(tmp_path / "bad")])
    assert rc == 2
    assert "edgebench: error: <command line>" in capsys.readouterr().err
    # the behaviour-cloning warm start from the command line (BC only: --steps 0)
    rc = main(["train", "ces-ppo", "--steps", "0", "--bc-instances", "2", "--bc-epochs", "2", "--eval-seeds", "2",
               "--set", "task_nodes_range=[3,4]", "--expert-cache", str(tmp_path / "cache"),
               "--out", str(tmp_path / "bc"), "--no-tensorboard"])
    assert rc == 0
    assert "(behaviour cloning)" in capsys.readouterr().out
    assert ces_ppo.read_checkpoint(tmp_path / "bc" / "checkpoint.pt")["bc"]["complete"] == 2
    rc = main(["train", "ces-ppo", "--steps", "0", "--out", str(tmp_path / "bad2")])  # 0 steps needs BC
    assert rc == 2


def _per_node_checkpoint(path, variant="ces-ppo"):
    torch.manual_seed(0)
    net = ces_ppo.build_network(**SIZES, hidden=32, arch="per-node")
    torch.save({"format": ces_ppo.CHECKPOINT_FORMAT, "variant": variant, "sizes": dict(SIZES), "hidden": 32,
                "node_head": False, "arch": "per-node", "model": net.state_dict()}, path)
    return net


def test_per_node_network_ignores_padding(tmp_path):
    """The per-node network scores every physical node with the same weights: padding a
    10-node instance to 20 nodes leaves the 10 real logits unchanged (padding is masked)."""
    net = _per_node_checkpoint(tmp_path / "pn.pt")
    inst = generate("mapping", "thesis", seed=5)
    out = []
    for nodes in (10, 20):
        env = ces_ppo.make_env("ces-ppo", inst, max_nodes=nodes, max_tasks=8, max_levels=5)
        obs, _ = env.reset(seed=0)
        net.set_sizes(nodes, 8)
        x = torch.from_numpy(ces_ppo.flatten_obs(obs)).unsqueeze(0)
        m = torch.from_numpy(obs["action_mask"].astype(bool)).unsqueeze(0)
        with torch.no_grad():
            out.append(net.logits_value(x, m))
    (l10, v10), (l20, v20) = out
    assert torch.allclose(l10[0, :10], l20[0, :10], atol=1e-5) and torch.allclose(v10, v20, atol=1e-5)
    assert bool((l20[0, 10:] == ces_ppo.MASK_LOGIT).all())
    net.set_sizes(12, 8)
    with pytest.raises(ValueError):
        net.logits_value(x, m)  # a 20-node observation is not a 12-node one


@pytest.mark.parametrize("variant", ces_ppo.VARIANTS)
def test_per_node_checkpoint_plays_any_node_count(tmp_path, variant):
    path = tmp_path / f"{variant}.pt"
    _per_node_checkpoint(path, variant)
    for nodes in (6, 10, 20, 25):
        inst = generate("mapping", "thesis", seed=2, nodes=nodes)
        res = registry.solve(inst, variant, checkpoint=str(path))
        assert res.status in ("feasible", "infeasible"), (nodes, res.status, res.stats)
        if res.status == "feasible":
            assert evaluate(inst, res.solution).feasible
    # more bandwidth levels than the network's head: a clear status, never a crash
    inst = generate("mapping", "thesis", seed=2, nodes=20, bandwidth_levels=7)
    res = registry.solve(inst, variant, checkpoint=str(path))
    assert res.status == "error" and "bandwidth levels" in res.stats["reason"]


def test_training_node_mix(tmp_path):
    from edgebench.learned.train_ces_ppo import _instance, _sizes

    args = Args(nodes_mix=(10, 20), arch="per-node")
    args.check()
    assert [len(_instance(args, s).mapping.nodes) for s in (4, 5, 6)] == [10, 20, 10]
    assert _sizes(args)["max_nodes"] == 20
    for bad in ({"nodes_mix": (0,)}, {"arch": "graph"}):
        with pytest.raises(InputError):
            Args(**bad).check()
    summary = train(Args(total_steps=128, num_envs=2, num_steps=64, num_minibatches=2, eval_seeds=2, seed=2,
                         arch="per-node", nodes_mix=(10, 20)), tmp_path / "mix", log=None, tensorboard=False)
    data = ces_ppo.read_checkpoint(summary["checkpoint"])
    assert data["arch"] == "per-node" and data["sizes"]["max_nodes"] == 20
    inst = generate("mapping", "thesis", seed=3, nodes=20)
    assert registry.solve(inst, "ces-ppo", checkpoint=summary["checkpoint"]).status in ("feasible", "infeasible")


def test_registry_lists_the_ces_checkpoints_with_their_training():
    import hashlib

    from edgebench import registry

    for name, default in (("ces-ppo", "ces-ppo-bc-mix.pt"), ("ces-ppo-noheur", "ces-ppo-noheur-bc-mix.pt"),
                          ("ppo-balance", "ces-ppo-balance-bc-mix.pt")):
        recs = registry.get(name).as_dict()["checkpoints"]
        files = {r["file"]: r for r in recs}
        # the default, the earlier pure-PPO per-node one and the earlier flat one, nothing else
        assert len(recs) == 3 and default in files, name
        assert [r["file"] for r in recs if r.get("default")] == [default], name
        rec = files[default]
        assert rec["variant"] == name and rec["algorithm"] == "bc+ppo" and rec["env_steps"] > 0
        path = ces_ppo.CHECKPOINT_DIR / default
        assert rec["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert ces_ppo.DEFAULT_CHECKPOINTS[name] == path


def test_compare_summary_and_candidates(tmp_path, capsys):
    """The thesis comparison: a candidate checkpoint plays under its label, the summary gives
    mean ± 95 % CI over the seeds and the paired difference to FlexiTask, and a written CSV
    re-renders the same tables; bad input is one error line."""
    from edgebench.learned.ces_ppo_cli import _main, compare, markdown_tables, read_rows, summary_table

    out = tmp_path / "cmp.csv"
    rows = compare([4], [42, 43, 44], nodes=(10,), exact=False, out=str(out), log=None,
                   candidates=(("cand", str(ces_ppo.DEFAULT_CHECKPOINTS["ces-ppo"])),))
    by = {(r["solver"], r["seed"]): r for r in rows}
    assert all(by[("cand", s)]["composite"] == by[("ces-ppo", s)]["composite"] for s in (42, 43, 44))
    text = summary_table(rows)
    lines = {ln.split(" | ")[0].lstrip("| "): ln for ln in text.splitlines() if ln.startswith("| ")}
    fx = [by[("flexitask", s)]["composite"] for s in (42, 43, 44)]  # t(0.975, 2 dof) = 4.3027
    assert lines["flexitask"].split(" | ")[1] == f"{np.mean(fx):.3f} ± {4.3027 * np.std(fx, ddof=1) / 3**0.5:.3f}"
    assert lines["cand"].split(" | ")[4] == lines["ces-ppo"].split(" | ")[4]  # same paired difference
    assert lines["flexitask"].endswith("| - | - |")
    again = read_rows(str(out))
    assert summary_table(again) == text and markdown_tables(again) == markdown_tables(rows)
    assert _main(["compare", "--from-csv", str(out)]) == 0
    assert "mean ± 95 % CI over the seeds" in capsys.readouterr().out
    bad = tmp_path / "bad.csv"
    bad.write_text("nodes,size\n10,x\n")
    for argv in (["compare", "--from-csv", str(bad)], ["compare", "--from-csv", str(tmp_path / "none.csv")],
                 ["compare", "--candidate", "no-equals-sign"],
                 ["compare", "--seeds", "1", "--candidate", f"x={tmp_path / 'none.pt'}"]):
        assert _main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("edgebench: error: "), argv
