"""The Gymnasium (mapping, offloading) and PettingZoo (placement) environments: API checks,
seed determinism, masks that keep every episode referee-feasible, rewards."""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import parallel_api_test, parallel_seed_test

import edgebench.learned.envs as envs
from edgebench.errors import InputError
from edgebench.instances import io, semantics
from edgebench.instances.generators import generate
from edgebench.learned.envs.mapping import MappingEnv
from edgebench.learned.envs.offloading import OffloadingEnv, patent_reward
from edgebench.learned.envs.placement import PlacementParallelEnv, parallel_env
from edgebench.referee import evaluate_decisions
from edgebench.solution import MappingDecisions, OffloadingDecisions, PlacementDecisions


def play(env, seed: int, policy_seed: int, *, options=None):
    """One episode of a Gymnasium env under a seeded uniformly random masked policy; returns
    (actions, rewards, observations, last info)."""
    rng = np.random.default_rng(policy_seed)
    obs, info = env.reset(seed=seed, options=options)
    assert obs in env.observation_space
    np.testing.assert_array_equal(obs["action_mask"], info["action_mask"])
    actions, rewards, observations = [], [], [obs]
    while True:
        allowed = np.flatnonzero(obs["action_mask"])
        assert allowed.size > 0
        a = int(rng.choice(allowed))
        obs, r, terminated, truncated, info = env.step(a)
        assert obs in env.observation_space
        assert not info["invalid_action"]
        actions.append(a)
        rewards.append(r)
        observations.append(obs)
        if terminated or truncated:
            return actions, rewards, observations, info


def play_parallel(env, seed: int, policy_seed: int):
    """One episode of the PettingZoo env under a seeded random masked policy."""
    rng = np.random.default_rng(policy_seed)
    obs, infos = env.reset(seed=seed)
    trace = []
    returns = {a: 0.0 for a in env.possible_agents}
    while env.agents:
        actions = {}
        for a in env.agents:
            assert obs[a] in env.observation_space(a)
            actions[a] = int(rng.choice(np.flatnonzero(obs[a]["action_mask"])))
        obs, rew, term, trunc, infos = env.step(actions)
        for a, r in rew.items():
            returns[a] += r
            assert not infos[a]["invalid_action"]
        trace.append((actions, rew))
    return trace, returns, term, trunc, infos


def assert_same_obs(a, b):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


# ======================================================================================
# Registration and API checkers
# ======================================================================================


def test_gymnasium_ids_are_registered_and_make_works():
    for env_id, cls in ((envs.MAPPING_ID, MappingEnv), (envs.OFFLOADING_ID, OffloadingEnv)):
        env = gymnasium.make(env_id)
        assert isinstance(env.unwrapped, cls)
        obs, info = env.reset(seed=3)
        assert obs in env.observation_space
        env.close()


@pytest.mark.parametrize("env_id", [envs.MAPPING_ID, envs.OFFLOADING_ID])
def test_check_env_passes_without_warnings(env_id):
    env = gymnasium.make(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


@pytest.mark.parametrize("variant", ["single", "multi"])
def test_parallel_api_test(variant):
    env = parallel_env(params={"num_tasks": 10}, variant=variant)
    parallel_api_test(env, num_cycles=1000)


def test_render_ansi():
    m = MappingEnv(render_mode="ansi")
    m.reset(seed=0)
    assert "MappingEnv" in m.render()
    o = OffloadingEnv(render_mode="ansi")
    o.reset(seed=0)
    assert "OffloadingEnv" in o.render()
    p = parallel_env(params={"num_tasks": 6}, render_mode="ansi")
    p.reset(seed=0)
    assert "cluster 0" in p.render()


# ======================================================================================
# Mapping
# ======================================================================================


def test_mapping_seed_determinism_and_fresh_instances():
    env1, env2 = MappingEnv(), MappingEnv()
    a1, r1, o1, i1 = play(env1, seed=11, policy_seed=5)
    a2, r2, o2, i2 = play(env2, seed=11, policy_seed=5)
    assert a1 == a2 and r1 == r2
    for x, y in zip(o1, o2):
        assert_same_obs(x, y)
    assert i1["decisions"] == i2["decisions"]
    seeds = set()
    for s in range(5):
        env1.reset(seed=s)
        seeds.add(env1.instance.id)
    assert len(seeds) == 5  # a fresh generated instance per seed
    # without a seed, reset continues the stream: a new instance
    env1.reset(seed=1)
    first = env1.instance.id
    env1.reset()
    assert env1.instance.id != first


@pytest.mark.parametrize("preset,params,episodes", [
    ("thesis", {}, 40),
    ("thesis", {"task_nodes": 8, "cpu_range": [40.0, 60.0], "ram_range": [40.0, 60.0]}, 40),
    ("thesis-queue", {"jobs": 6, "rate": 1.0}, 8),
])
def test_mapping_masks_keep_every_episode_feasible(preset, params, episodes):
    env = MappingEnv(preset=preset, params=params)
    for ep in range(episodes):
        _, rewards, _, info = play(env, seed=ep, policy_seed=100 + ep)
        assert info["dead_end"] is False
        dec = info["decisions"]
        assert isinstance(dec, MappingDecisions)
        ev = evaluate_decisions(env.instance, dec)
        assert ev.feasible, ev.violations[:3]
        # the default reward: 0 until the end, then the referee's composite
        assert all(r == 0.0 for r in rewards[:-1])
        assert rewards[-1] == pytest.approx(ev.objectives["composite"])
        assert info["objectives"]["composite"] == pytest.approx(ev.objectives["composite"])
        for k, jd in enumerate(dec.jobs):
            assert jd.start >= env.instance.mapping.jobs[k].arrival


def test_mapping_two_phases_and_decision_count():
    env = MappingEnv(params={"task_nodes": 5, "topology": "ring"})
    obs, info = env.reset(seed=2)
    job = env.instance.mapping.jobs[0]
    phases = [info["phase"]]
    done = False
    steps = 0
    rng = np.random.default_rng(0)
    while not done:
        obs, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        phases.append(info["phase"])
        steps += 1
    nodes = info["decisions"].jobs[0].nodes
    routed = sum(1 for lk in job.links if nodes[lk.src] != nodes[lk.dst])
    assert steps == len(job.tasks) + routed  # co-located links take no decision
    assert phases[: len(job.tasks)] == ["map"] * len(job.tasks)
    for k, lk in enumerate(job.links):
        ld = info["decisions"].jobs[0].links[k]
        if nodes[lk.src] == nodes[lk.dst]:
            assert ld.route == () and ld.bandwidth == lk.bw_max
        else:
            assert ld.route == semantics.canonical_route(env.instance.mapping, nodes[lk.src], nodes[lk.dst])
            levels = [semantics.bandwidth_level(lk.bw_min, lk.bw_max, a, 5) for a in range(5)]
            assert min(abs(ld.bandwidth - b) for b in levels) < 1e-9


def test_mapping_bandwidth_mask_allows_only_levels_that_fit():
    env = MappingEnv(params={"task_nodes": 4, "topology": "star", "link_bw_range": [100.0, 120.0]})
    rng = np.random.default_rng(1)
    seen_partial = False
    for ep in range(20):
        obs, info = env.reset(seed=ep)
        done = False
        while not done:
            if info["phase"] == "bandwidth":
                mask = obs["action_mask"]
                levels = env.instance.mapping.objective.bandwidth_levels
                assert mask[0] == 1 and not mask[levels:].any()
                seen_partial |= bool(mask[:levels].sum() < levels)
            obs, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        assert evaluate_decisions(env.instance, info["decisions"]).feasible
    assert seen_partial  # thin links: some levels were masked


def test_mapping_without_lookahead_can_dead_end_cleanly():
    env = MappingEnv(lookahead=False, params={"task_nodes": 8, "cpu_range": [40.0, 60.0],
                                              "ram_range": [40.0, 60.0]})
    dead = 0
    for ep in range(40):
        _, rewards, _, info = play(env, seed=ep, policy_seed=ep)
        if info["dead_end"]:
            dead += 1
            assert info["decisions"] is None
            assert rewards[-1] == pytest.approx(env.dead_end_reward)
        else:
            assert evaluate_decisions(env.instance, info["decisions"]).feasible
    assert dead > 0  # the lookahead is what prevents them


def test_mapping_invalid_actions_fallback_and_raise():
    env = MappingEnv()
    obs, _ = env.reset(seed=0)
    bad = int(np.flatnonzero(obs["action_mask"] == 0)[0]) if (obs["action_mask"] == 0).any() else env.n_actions
    obs2, _, _, _, info = env.step(bad)
    assert info["invalid_action"] is True
    strict = MappingEnv(invalid_action="raise")
    obs, _ = strict.reset(seed=0)
    with pytest.raises(ValueError):
        strict.step(env.n_actions + 5)
    # unmasked random actions still end in feasible decisions
    env.action_space.seed(0)
    for ep in range(5):
        env.reset(seed=ep)
        done = False
        while not done:
            _, _, done, _, info = env.step(env.action_space.sample())
        assert evaluate_decisions(env.instance, info["decisions"]).feasible


def test_mapping_pinned_instance_and_shaping_hooks():
    inst = generate("mapping", "thesis", seed=7)
    calls = []

    def hook(step):
        calls.append((step.phase, step.index))
        if not step.terminated:
            cpu, ram, bw = step.env.free_resources()
            m = step.env.instance.mapping
            assert cpu.shape == (len(m.nodes),) and bw.shape == (len(m.links),)
            assert cpu.min() >= -1e-9 and ram.min() >= -1e-9 and bw.min() >= -1e-9
        return 1.0

    env = MappingEnv(inst, shaping=[hook])
    _, rewards, _, info = play(env, seed=0, policy_seed=0)
    assert env.instance is inst
    assert len(calls) == len(rewards)
    assert rewards[0] == 1.0
    ev = evaluate_decisions(inst, info["decisions"])
    assert rewards[-1] == pytest.approx(1.0 + ev.objectives["composite"])
    other = generate("mapping", "thesis", seed=8)
    play(env, seed=0, policy_seed=0, options={"instance": other})
    assert env.instance is other
    with pytest.raises(InputError):
        env.reset(options={"instance": generate("offloading", "patent-example")})
    small = MappingEnv(generate("mapping", "thesis", seed=1, nodes=12))
    with pytest.raises(InputError, match="physical nodes"):
        small.reset(options={"instance": generate("mapping", "thesis", seed=1, nodes=30)})


# ======================================================================================
# Offloading
# ======================================================================================


def test_offloading_seed_determinism():
    e1, e2 = OffloadingEnv(), OffloadingEnv()
    a1, r1, o1, i1 = play(e1, seed=4, policy_seed=9)
    a2, r2, o2, i2 = play(e2, seed=4, policy_seed=9)
    assert a1 == a2 and r1 == r2
    for x, y in zip(o1, o2):
        assert_same_obs(x, y)
    assert i1["decisions"] == i2["decisions"]


@pytest.mark.parametrize("preset,params,order", [
    ("daggen", {}, "patent"),
    ("daggen", {"tasks": 12, "cloud": False}, "topological"),
    ("edge-poisson", {"workflows": 3, "tasks": 8}, "patent"),
    ("heft-random", {"tasks": 15}, "patent"),
])
def test_offloading_masks_keep_every_episode_feasible(preset, params, order):
    env = OffloadingEnv(preset=preset, params=params, order=order)
    for ep in range(12):
        _, rewards, _, info = play(env, seed=ep, policy_seed=ep)
        dec = info["decisions"]
        assert isinstance(dec, OffloadingDecisions)
        ev = evaluate_decisions(env.instance, dec)
        assert ev.feasible, ev.violations[:3]
        # the default reward telescopes to minus the sum of the workflows' makespans
        W = len(env.instance.offloading.workflows)
        assert sum(rewards) == pytest.approx(-ev.objectives["mean_makespan"] * W)


def test_offloading_patent_example_published_placement():
    inst = generate("offloading", "patent-example")
    published = {0: 0, 2: 0, 1: 1, 3: 1, 4: 2, 5: 1}
    for order in ("topological", "patent"):
        env = OffloadingEnv(inst, order=order)
        obs, info = env.reset(seed=0)
        total = 0.0
        done = False
        while not done:
            t = info["task"]
            assert obs["action_mask"][published[t]] == 1
            obs, r, done, _, info = env.step(published[t])
            total += r
        assert total == pytest.approx(-2.8)
        assert info["objectives"]["mean_makespan"] == pytest.approx(2.8)


def test_offloading_patent_reward_and_order():
    inst = generate("offloading", "patent-example")
    env = OffloadingEnv(inst, reward="patent", order="patent")
    seen = []

    def record(step):
        seen.append(step)
        return 0.0

    env.shaping = (record,)
    _, rewards, _, info = play(env, seed=3, policy_seed=3)
    o = inst.offloading
    for step, r in zip(seen, rewards):
        assert r == pytest.approx(patent_reward(step))
        assert step.t_exec == pytest.approx(semantics.task_duration(o, 0, step.task, step.server))
    # t_trans: the input delay from the predecessors' servers (entry task: from the source)
    servers = {step.task: step.server for step in seen}
    for step in seen:
        delays = [semantics.input_time(o, 0, step.task, step.server)]
        delays += [semantics.transfer_time(o, 0, e, servers[edge.src], step.server)
                   for e, edge in enumerate(o.workflows[0].edges) if edge.dst == step.task]
        assert step.t_trans == pytest.approx(max(delays))
    # the decisions are the simulator's: the same as the offloading simulator run on them
    sched = info["decisions"].workflows[0].tasks
    assert [ts.server for ts in sched] == [servers[t] for t in range(len(sched))]
    # the patent's procedure offloads a task only after all its predecessors
    order = [s.task for s in seen]
    for e in o.workflows[0].edges:
        assert order.index(e.src) < order.index(e.dst)


def test_offloading_env_drives_the_offloading_simulator():
    """The env's schedule is the simulator's: a fixed rule played through the env and as a
    simulator policy gives the same decisions."""
    from edgebench.solvers.offloading_sim import Dispatch, Policy, simulate

    def rule(w, t, hosts):
        return hosts[(w + 3 * t) % len(hosts)]

    class Fixed(Policy):
        name = "fixed"

        def decide(self, sim):
            wt = sim.first_candidate()
            if wt is None:
                return None
            w, t = wt
            return Dispatch(w, t, rule(w, t, sim.graphs[w].hosts[t]))

    for preset, params in (("edge-poisson", {"workflows": 3, "tasks": 8}), ("daggen", {"tasks": 12})):
        inst = generate("offloading", preset, seed=2, **params)
        env = OffloadingEnv(inst, order="topological")
        obs, info = env.reset(seed=0)
        done = False
        while not done:
            hosts = np.flatnonzero(obs["action_mask"]).tolist()
            obs, _, done, _, info = env.step(rule(info["workflow"], info["task"], hosts))
        assert info["decisions"] == simulate(inst, Fixed()).decisions


def test_offloading_mask_is_can_host():
    env = OffloadingEnv(params={"task_cpu_range": [1, 6], "server_cpu_range": [4, 8], "cloud": True})
    obs, info = env.reset(seed=5)
    o = env.instance.offloading
    done = False
    while not done:
        t = info["task"]
        w = info["workflow"]
        expect = [int(semantics.can_host(o, w, t, s)) for s in range(len(o.servers))]
        assert obs["action_mask"][: len(o.servers)].tolist() == expect
        obs, _, done, _, info = env.step(int(np.flatnonzero(obs["action_mask"])[-1]))
    assert evaluate_decisions(env.instance, info["decisions"]).feasible


# ======================================================================================
# Placement (PettingZoo)
# ======================================================================================


def _placement_instance(clusters, tasks, variant="single", types=None):
    return io.instance_from_dict({
        "format_version": 1, "family": "placement", "id": "hand", "placement": {
            "clusters": [{"capacity": {"cpu": c, "gpu": g}} for c, g in clusters],
            "tasks": [{"arrival": a, "type": "ic", "minimum": {"cpu": 2, "gpu": 1}, "eligible": el}
                      for a, el in tasks],
            "performance": {"kind": "synthetic", "types": types or {"ic": {"base": 0.25}}},
            "noise": 0.0, "variant": variant,
        }})


@pytest.mark.parametrize("variant,preset", [("single", "synthetic-3"), ("multi", "synthetic-3"),
                                            ("single", "hetero-6")])
def test_placement_masks_keep_every_episode_feasible(variant, preset):
    env = parallel_env(preset=preset, params={"num_tasks": 30}, variant=variant)
    for ep in range(4):
        trace, returns, term, trunc, infos = play_parallel(env, seed=ep, policy_seed=ep)
        assert all(term.values()) and not any(trunc.values())
        dec = next(iter(infos.values()))["decisions"]
        assert isinstance(dec, PlacementDecisions)
        ev = evaluate_decisions(env.instance, dec)
        assert ev.feasible, ev.violations[:3]
        assert env.instance.placement.variant == variant


def test_pettingzoo_parallel_seed_test():
    parallel_seed_test(lambda: parallel_env(params={"num_tasks": 12}, variant="multi"), num_cycles=200)


def test_placement_seed_determinism():
    e1 = parallel_env(params={"num_tasks": 20}, variant="multi")
    e2 = parallel_env(params={"num_tasks": 20}, variant="multi")
    t1, r1, *_, i1 = play_parallel(e1, seed=8, policy_seed=2)
    t2, r2, *_, i2 = play_parallel(e2, seed=8, policy_seed=2)
    assert t1 == t2 and r1 == r2
    assert i1["cluster_0"]["decisions"] == i2["cluster_0"]["decisions"]


def test_placement_action_encoding_and_spaces():
    env = PlacementParallelEnv(preset="hetero-6", params={"num_tasks": 12})
    env.reset(seed=0)
    for n, agent in enumerate(env.possible_agents):
        space = env.action_space(agent)
        assert space is env.action_space(agent)
        c, g = [(4, 4), (8, 8), (12, 12), (16, 16), (24, 24), (32, 32)][n]
        assert space.n == env.pending_size * (c + 1) * (g + 1) + 1
        assert env.decode_action(agent, env.void_action(agent)) is None
        a = env.encode_action(agent, 3, 2, 1)
        assert env.decode_action(agent, a) == (3, 2, 1)
    assert env.state().shape == env.state_space.shape


def test_placement_conflict_goes_to_the_cluster_with_most_copies():
    # task 0 is visible to both clusters; cluster 1 fits 8 copies at the minimum, cluster 0 two
    inst = _placement_instance([(4, 4), (16, 16)], [(0, [0, 1])])
    env = PlacementParallelEnv(inst)
    obs, _ = env.reset(seed=0)
    acts = {a: env.encode_action(a, 0, 2, 1) for a in env.agents}
    obs, rew, term, trunc, infos = env.step(acts)
    assert infos["cluster_1"]["started"] == 0 and infos["cluster_0"]["conflict_lost"] is True
    assert infos["cluster_0"]["started"] is None
    assert env.sim.cluster_of(0) == 1
    # equal capacities: the lowest cluster index wins
    inst = _placement_instance([(8, 8), (8, 8)], [(0, [0, 1])])
    env = PlacementParallelEnv(inst)
    env.reset(seed=0)
    env.step({a: env.encode_action(a, 0, 2, 1) for a in env.agents})
    assert env.sim.cluster_of(0) == 0


def test_placement_rewards_count_associated_tasks():
    # one cluster, two 4-step tasks arriving at 0: single variant starts one per step
    inst = _placement_instance([(4, 4)], [(0, [0]), (0, [0])], variant="single")
    env = PlacementParallelEnv(inst)
    obs, _ = env.reset(seed=0)
    total = 0.0
    while env.agents:
        mask = obs["cluster_0"]["action_mask"]
        allowed = np.flatnonzero(mask[:-1])
        a = int(allowed[0]) if allowed.size else env.void_action("cluster_0")
        obs, rew, term, trunc, infos = env.step({"cluster_0": a})
        total += rew["cluster_0"]
    ev = evaluate_decisions(inst, infos["cluster_0"]["decisions"])
    assert ev.feasible
    # one task per cluster: the return is minus the total completion time
    assert total == -ev.objectives["total_completion_time"]
    # multi variant: both start in step 0 in two logical steps, the first rewarded 0
    inst = _placement_instance([(4, 4)], [(0, [0]), (0, [0])], variant="multi")
    env = PlacementParallelEnv(inst)
    obs, _ = env.reset(seed=0)
    a = env.encode_action("cluster_0", 0, 2, 1)
    obs, rew, *_ , infos = env.step({"cluster_0": a})
    assert rew["cluster_0"] == 0.0 and infos["cluster_0"]["advanced"] is False
    obs, rew, term, *_ = env.step({"cluster_0": env.encode_action("cluster_0", 0, 2, 1)})
    assert rew["cluster_0"] == -8.0 and term["cluster_0"]
    assert env.sim.start_step(0) == env.sim.start_step(1) == 0


def test_placement_masks_exclude_allocations_that_never_finish():
    # measured-table performance: allocations below the measured grid (4 CPU, 2 GPU) make no
    # progress although the task's minimum is 2 CPU + 1 GPU
    inst = io.instance_from_dict({
        "format_version": 1, "family": "placement", "id": "table", "placement": {
            "clusters": [{"capacity": {"cpu": 6, "gpu": 4}}],
            "tasks": [{"arrival": 0, "type": "t", "minimum": {"cpu": 2, "gpu": 1}, "eligible": [0]}],
            "performance": {"kind": "table", "types": {"t": {"entries": [{"cpu": 4, "gpu": 2, "seconds": 20}]}}},
        }})
    env = PlacementParallelEnv(inst)
    obs, _ = env.reset(seed=0)
    mask = obs["cluster_0"]["action_mask"]
    allowed = {env.decode_action("cluster_0", int(a)) for a in np.flatnonzero(mask[:-1])}
    expect = {(0, c, g) for c in range(2, 7) for g in range(1, 5)
              if semantics.fixed_run_steps(inst.placement, 0, c, g) is not None}
    assert allowed == expect and expect == {(0, c, g) for c in range(4, 7) for g in range(2, 5)}
    *_, infos = env.step({"cluster_0": env.encode_action("cluster_0", 0, 4, 2)})
    assert evaluate_decisions(inst, infos["cluster_0"]["decisions"]).objectives["total_completion_time"] == 2


def test_mapping_env_job_that_fits_nowhere_is_a_dead_end_at_reset():
    from edgebench.instances.io import instance_from_dict
    from edgebench.learned.envs.mapping import MappingEnv

    inst = instance_from_dict({
        "format_version": 1, "family": "mapping", "id": "too-big",
        "mapping": {"nodes": [{"cpu": 10, "ram": 10}, {"cpu": 10, "ram": 10}],
                    "links": [{"src": 0, "dst": 1, "bandwidth": 100}, {"src": 1, "dst": 0, "bandwidth": 100}],
                    "jobs": [{"tasks": [{"cpu": 50, "ram": 5}]}]}})
    env = MappingEnv(inst)
    obs, info = env.reset(seed=0)
    assert info["dead_end"] is True and not obs["action_mask"].any()
    obs, reward, terminated, truncated, info = env.step(0)
    assert terminated and info["dead_end"] and info["decisions"] is None
    assert reward == env.dead_end_reward


def test_placement_vector_env_matches_separate_envs_and_auto_resets():
    """PlacementVectorEnv steps E envs in lockstep exactly as stepping each alone would (same
    observations, rewards and episode ends), resets a finished env at once through
    ``reset_fn`` and reports the finished episode's summed return."""
    from edgebench.learned.envs.placement import PlacementVectorEnv

    variants = ("multi", "single")
    counter = iter(range(1000))
    used: dict[int, list[int]] = {0: [], 1: []}
    vec_envs = [parallel_env(params={"num_tasks": 8}, variant=v) for v in variants]

    def reset_fn(env):
        seed = next(counter)
        used[vec_envs.index(env)].append(seed)
        return env.reset(seed=seed)[0]

    vec = PlacementVectorEnv(vec_envs, reset_fn)
    obs = vec.reset()
    solo = [parallel_env(params={"num_tasks": 8}, variant=v) for v in variants]
    solo_obs = [e.reset(seed=used[i][0])[0] for i, e in enumerate(solo)]
    solo_ret = [0.0, 0.0]
    episodes = [0, 0]
    rng = np.random.default_rng(0)
    for _ in range(150):
        for e in range(2):
            assert obs[e].keys() == solo_obs[e].keys()
            for a in obs[e]:
                assert_same_obs(obs[e][a], solo_obs[e][a])
        actions = [{a: int(rng.choice(np.flatnonzero(o[a]["action_mask"]))) for a in o} for o in obs]
        obs, rewards, dones, finished = vec.step(actions)
        assert rewards.shape == (2, 3) and dones.shape == (2,)
        for e in range(2):
            so, rew, *_ = solo[e].step(actions[e])
            assert rewards[e].tolist() == [rew.get(a, 0.0) for a in solo[e].possible_agents]
            solo_ret[e] += sum(rew.values())
            assert dones[e] == (0.0 if solo[e].agents else 1.0)
            if not solo[e].agents:
                assert (e, solo_ret[e], 8) in finished
                episodes[e] += 1
                solo_ret[e] = 0.0
                so = solo[e].reset(seed=used[e][episodes[e]])[0]
            solo_obs[e] = so
        assert len(finished) == int(dones.sum())
    assert min(episodes) >= 2
