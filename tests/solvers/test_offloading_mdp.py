"""The patent's value-iteration MDP (``mdp-vi``): the worked example, exactness on chains
(against backward induction and brute force) and on a small DAG (against an independent
expectimax), convergence to the tolerance, the receding-horizon approximation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from edgebench import registry
from edgebench.errors import InputError
from edgebench.instances import io, semantics
from edgebench.instances.generators import generate
from edgebench.referee import evaluate
from edgebench.solvers import offloading_mdp as om
from edgebench.solvers import offloading_sim as osim

GAMMA = 0.5


def _instance(tasks, edges, name):
    """Three edge servers with different images, speeds and distances, plus a cloud."""
    return io.instance_from_dict({
        "format_version": 1, "family": "offloading", "id": name,
        "offloading": {
            "servers": [{"name": "e0", "cpu": 4.0, "mem": 4.0, "images": ["a"], "speed": 1.0},
                        {"name": "e1", "cpu": 4.0, "mem": 4.0, "images": ["b"], "speed": 1.5},
                        {"name": "e2", "cpu": 2.0, "mem": 2.0, "images": ["a", "b"], "speed": 0.8},
                        {"name": "cloud", "is_cloud": True, "images": [], "speed": 3.0}],
            "distance": [[0, 1, 0.4, 6], [1, 0, 0.7, 6], [0.4, 0.7, 0, 6], [6, 6, 6, 0]],
            "bandwidth": 2.0, "image_pull_delay": 0.6,
            "workflows": [{"arrival": 0.0, "source": 1, "tasks": tasks,
                           "edges": [{"src": a, "dst": b, "data": d} for a, b, d in edges]}],
        },
    })


def _t(image, ex, cpu=1.0, input_data=0.0):
    return {"functions": [{"image": image, "cpu": cpu, "mem": 1.0, "exec_time": ex}], "input_data": input_data}


CHAIN_TASKS = [_t("a", 1.0, input_data=1.5), _t("b", 2.0), _t("a", 0.7), _t("b", 1.2), _t("a", 2.5)]
CHAIN_EDGES = [(0, 1, 1.0), (1, 2, 3.0), (2, 3, 0.5), (3, 4, 2.0)]


@pytest.fixture(scope="module")
def chain():
    return _instance(CHAIN_TASKS, CHAIN_EDGES, "chain")


def _reward(p, k, prev, s, edge):
    """-(t_trans + t_exec) of chain task k on s after its predecessor on prev, from semantics."""
    tt = semantics.input_time(p, 0, k, s)
    if prev is not None:
        tt = max(tt, semantics.transfer_time(p, 0, edge, prev, s))
    return -(tt + semantics.task_duration(p, 0, k, s))


def _chain_return(p, placement, gamma):
    total, prev = 0.0, None
    for k, s in enumerate(placement):
        total += gamma ** k * _reward(p, k, prev, s, k - 1)
        prev = s
    return total


def _hosts(p, t):
    return [s for s in range(len(p.servers)) if semantics.can_host(p, 0, t, s)]


def test_chain_vi_equals_backward_induction_and_brute_force(chain):
    p = chain.offloading
    n = len(p.workflows[0].tasks)
    # backward induction over (task k, server of task k-1)
    J = {s: 0.0 for s in range(len(p.servers))}
    for k in reversed(range(n)):
        prevs = [None] if k == 0 else list(range(len(p.servers)))
        J = {prev: max(_reward(p, k, prev, s, k - 1) + GAMMA * (J[s] if k < n - 1 else 0.0)
                       for s in _hosts(p, k)) for prev in prevs}
    dp = J[None]
    # brute force over every placement
    best_pl, best = None, -np.inf
    for pl in itertools.product(*[_hosts(p, k) for k in range(n)]):
        v = _chain_return(p, pl, GAMMA)
        if v > best:
            best_pl, best = pl, v
    assert dp == pytest.approx(best, abs=1e-12)
    # value iteration over the enumerated MDP
    mdp = om.WorkflowMDP(p, 0, GAMMA)
    init = mdp.initial()
    assert len(init) == 1  # a chain has one candidate at a time: deterministic transitions
    res = om.value_iteration(mdp, [s for _, s in init], tol=1e-12)
    # states: the first task, then (task k, server of task k-1) for k = 1..n-1
    assert res.exact and res.stats["states"] == 1 + (n - 1) * len(p.servers)
    assert res.value(init[0][1]) == pytest.approx(best, abs=1e-9)
    # the policy executed by the simulator attains the optimal return
    pol = om.MDPPolicy(np.random.default_rng(0), gamma=GAMMA)
    out = osim.simulate(chain, pol)
    placement = out.servers[0]
    assert _chain_return(p, placement, GAMMA) == pytest.approx(best, abs=1e-9)
    assert evaluate(chain, registry.solve(chain, "mdp-vi").solution).feasible


def test_convergence_to_tolerance(chain):
    p = chain.offloading
    mdp = om.WorkflowMDP(p, 0, GAMMA)
    roots = [s for _, s in mdp.initial()]
    exact = om.value_iteration(mdp, roots, tol=1e-14)
    n = len(p.workflows[0].tasks)
    # acyclic: Jacobi sweeps are exact after n sweeps, and sweep n + 1 changes nothing
    assert exact.stats["sweeps"] <= n + 1 and exact.stats["residual"] < 1e-14
    for tol in (1.0, 0.1, 1e-3):
        res = om.value_iteration(mdp, roots, tol=tol)
        assert res.stats["residual"] < tol
        assert res.stats["backups"] == res.stats["state_actions"] * res.stats["sweeps"]
        # contraction: ||V - V*|| <= gamma / (1 - gamma) * ||V_k - V_(k-1)||
        err = np.max(np.abs(res.values - np.array([exact.value(s) for s in res.states])))
        assert err <= GAMMA / (1 - GAMMA) * res.stats["residual"] + 1e-12
        # Bellman residual of the returned values: ||T V - V|| <= gamma * residual
        tv = np.maximum.reduceat(res.q, res.sa_start[:-1])
        assert np.max(np.abs(tv - res.values)) <= GAMMA * res.stats["residual"] + 1e-12
    loose = om.value_iteration(mdp, roots, tol=1.0)
    assert loose.stats["sweeps"] < exact.stats["sweeps"]


# A small DAG with random draws of the next task (tasks 1 and 2 share an image) and a
# long edge 0 -> 4 (task 0's server stays in the state until task 4 is offloaded).
DAG_TASKS = [_t("a", 1.0, input_data=1.0), _t("b", 1.5), _t("b", 0.5), _t("a", 1.0), _t("b", 2.0)]
DAG_EDGES = [(0, 1, 1.0), (0, 2, 2.0), (1, 3, 0.5), (2, 3, 1.5), (0, 4, 4.0), (3, 4, 0.5)]


def _expectimax(p, gamma):
    """The optimal expected discounted return, by recursion over full assignments (no state
    abstraction), straight from semantics and the patent's selection rule."""
    wf = p.workflows[0]
    n = len(wf.tasks)
    preds = {t: [(e, ed.src) for e, ed in enumerate(wf.edges) if ed.dst == t] for t in range(n)}

    def holds(s, t):
        return p.servers[s].is_cloud or all(img in p.servers[s].images for img in semantics.task_images(p, 0, t))

    def pool(assign, s):
        cand = [t for t in range(n) if t not in assign and all(u in assign for _, u in preds[t])]
        return [t for t in cand if holds(s, t)] or cand

    def value(assign, t):
        best = -np.inf
        for s in _hosts(p, t):
            tt = semantics.input_time(p, 0, t, s)
            for e, u in preds[t]:
                tt = max(tt, semantics.transfer_time(p, 0, e, assign[u], s))
            r = -(tt + semantics.task_duration(p, 0, t, s))
            a2 = {**assign, t: s}
            nxt = pool(a2, s)
            v = r + (gamma * float(np.mean([value(a2, c) for c in nxt])) if nxt else 0.0)
            best = max(best, v)
        return best

    first = pool({}, wf.source)
    return float(np.mean([value({}, c) for c in first]))


@pytest.mark.parametrize("gamma", [0.5, 0.9, 1.0])
def test_small_dag_exact_against_expectimax(gamma):
    inst = _instance(DAG_TASKS, DAG_EDGES, "dag")
    p = inst.offloading
    mdp = om.WorkflowMDP(p, 0, gamma)
    init = mdp.initial()
    res = om.value_iteration(mdp, [s for _, s in init], tol=1e-12)
    assert res.exact
    v = sum(pr * res.value(s) for pr, s in init)
    assert v == pytest.approx(_expectimax(p, gamma), abs=1e-9)
    # some transition is random (tasks 1 and 2 are drawn when neither or both images are held)
    assert any(post is not None and len(post[2]) > 1 for row in res.rows.values() for _, _, post in row)


def test_patent_example():
    inst = generate("offloading", "patent-example")
    r = registry.solve(inst, "mdp-vi")
    assert r.status == "feasible" and r.solution.solver == "mdp-vi"
    servers = [t.server for t in r.solution.offloading.workflows[0].tasks]
    # {1:es1, 3:es1, 2:es2, 4:es2, 5:es3, 6:es2}
    assert servers == [0, 1, 0, 1, 2, 1]
    ev = evaluate(inst, r.solution)
    assert ev.feasible
    assert ev.objectives["mean_makespan"] == pytest.approx(2.8)
    assert r.solution.objective == pytest.approx(2.8)
    st = r.stats
    assert st["exact"] and st["vi_solves"] == 1 and st["states"] > 0 and st["backups"] > 0
    assert st["max_residual"] < 1e-9
    # the patent's decision order res = (1,es1), (3,es1), (2,es2), (4,es2), (5,es3), (6,es2)
    pol = om.MDPPolicy(np.random.default_rng(0))
    osim.simulate(inst, pol)
    assert [(t, s) for _, t, s in pol.log] == [(0, 0), (2, 0), (1, 1), (3, 1), (4, 2), (5, 1)]


def test_patent_example_lookahead_matters():
    inst = generate("offloading", "patent-example")
    # gamma = 0 (myopic) is the greedy affinity rule: task 5 on es1, completion 4.0
    myopic = registry.solve(inst, "mdp-vi", gamma=0.0)
    greedy = registry.solve(inst, "affinity")
    assert myopic.solution.decisions == greedy.solution.decisions
    assert evaluate(inst, myopic.solution).primary_value == pytest.approx(4.0)
    # a horizon of one decision is myopic too
    h1 = registry.solve(inst, "mdp-vi", max_states=1)
    assert h1.solution.decisions == greedy.solution.decisions
    assert not h1.stats["exact"] and h1.stats["min_horizon"] == 1 and h1.stats["max_error_bound"] > 0


@pytest.mark.parametrize("preset,kw", [("edge-poisson", {"tasks": 6}), ("daggen", {"tasks": 12}),
                                       ("heft-random", {"tasks": 10})])
def test_horizon_approximation_and_seeding(preset, kw):
    inst = generate("offloading", preset, seed=1, **kw)
    a = registry.solve(inst, "mdp-vi", seed=4, max_states=300)
    b = registry.solve(inst, "mdp-vi", seed=4, max_states=300)
    assert a.status == "feasible"
    assert a.solution.decisions == b.solution.decisions
    ev = evaluate(inst, a.solution)
    assert ev.feasible and a.solution.objective == pytest.approx(ev.primary_value)
    st = a.stats
    assert st["decisions"] == sum(len(wf.tasks) for wf in inst.offloading.workflows)
    if not st["exact"]:
        assert st["min_horizon"] >= 1 and st["max_error_bound"] > 0
    assert st["states"] > 0 and st["backups"] >= st["states"]


def test_gamma_zero_is_affinity_on_generated_instances():
    for seed in range(3):
        inst = generate("offloading", "edge-poisson", seed=seed, tasks=6)
        assert (registry.solve(inst, "mdp-vi", seed=seed, gamma=0.0).solution.decisions
                == registry.solve(inst, "affinity", seed=seed).solution.decisions)


def test_params_are_checked():
    inst = generate("offloading", "patent-example")
    info = registry.get("mdp-vi")
    assert info.kind == "mdp" and info.families == ("offloading",)
    assert {"gamma", "tol", "max_states", "max_sweeps"} <= set(info.params)
    for bad in ({"gamma": 1.5}, {"tol": 0}, {"max_states": 0}, {"depth": 2}, {"gamma": "x"}):
        with pytest.raises(InputError):
            registry.solve(inst, "mdp-vi", **bad)


def test_time_limit_gives_timeout():
    inst = generate("offloading", "daggen", seed=0)
    r = registry.solve(inst, "mdp-vi", time_limit=0.0)
    assert r.status == "timeout"
