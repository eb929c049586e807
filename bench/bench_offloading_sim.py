"""Offloading simulator throughput: simulator events per second per policy, the value
iteration of the patent's MDP (states enumerated and Bellman backups per second), and the
list schedulers at scale side by side with their paper-faithful reference.

Each simulator case times whole runs (simulator construction + policy + decisions) with
pytest-benchmark and records in ``benchmark.extra_info``: instance, policy, tasks, events,
dispatches, mean makespan, median seconds per run and events per second. The VI cases time
one enumeration + value iteration of one workflow's MDP and record its states,
state-action pairs, sweeps, backups and their rates (not asserted: a benchmark never fails
on speed).

Run::

    .venv/bin/python -m pytest bench/bench_offloading_sim.py --benchmark-enable \
        --benchmark-json=offloading-sim.json

List schedulers at scale (issue 17): ``test_list_scheduler_at_scale`` times one whole
``heft`` / ``cpop`` / ``peft`` schedule (planning + simulation) of one workflow of 100, 1000
and 5000 tasks on 8 servers, ``impl=fast`` (:mod:`edgebench.solvers.offloading_baselines`)
and ``impl=reference`` (:mod:`edgebench.solvers.offloading_list_reference`, the rescanning
implementation kept for this comparison) in one benchmark group per case, so the table
shows the two side by side; the reference at 5000 tasks takes many minutes and runs only
with EDGEBENCH_BENCH_REFERENCE_5000=1::

    .venv/bin/python -m pytest bench/bench_offloading_sim.py --benchmark-enable \
        -k list_scheduler_at_scale --benchmark-group-by=group --benchmark-columns=median,rounds

Environment: EDGEBENCH_BENCH_SEED (default 0).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from edgebench.instances.generators import generate
from edgebench.referee import evaluate_decisions
from edgebench.solvers import offloading_baselines as ob
from edgebench.solvers import offloading_list_reference as oref
from edgebench.solvers import offloading_mdp as om
from edgebench.solvers import offloading_sim as osim

SEED = int(os.environ.get("EDGEBENCH_BENCH_SEED", "0"))

POLICIES = {
    "mdp-vi": lambda seed: om.MDPPolicy(np.random.default_rng(seed)),
    "affinity": lambda seed: osim.AffinityPolicy(np.random.default_rng(seed)),
    "heft": lambda seed: ob.plan_policy("heft"),
    "cpop": lambda seed: ob.plan_policy("cpop"),
    "peft": lambda seed: ob.plan_policy("peft"),
    "all-cloud": lambda seed: osim.AllCloudPolicy(),
    "nearest-edge": lambda seed: osim.NearestEdgePolicy(),
    "random-dispatched": lambda seed: osim.RandomPolicy(np.random.default_rng(seed), "dispatched"),
    "random-finished": lambda seed: osim.RandomPolicy(np.random.default_rng(seed), "finished"),
}
INSTANCES = [
    ("edge-poisson", {}),
    ("edge-poisson", {"workflows": 40}),
    ("daggen", {}),
    ("heft-random", {"tasks": 50}),
]


def _ids(items):
    return [p + "".join(f"-{k}{v}" for k, v in o.items()) for p, o in items]


def _run(inst, policy: str, seed: int) -> osim.SimResult:
    return osim.simulate(inst, POLICIES[policy](seed))


@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("preset,overrides", INSTANCES, ids=_ids(INSTANCES))
def test_events_per_second(benchmark, preset, overrides, policy):
    inst = generate("offloading", preset, seed=SEED, **overrides)
    if policy == "all-cloud" and osim.cloud_index(inst.offloading) is None:
        pytest.skip("no cloud server in this instance")
    rounds = 1 if policy == "mdp-vi" else 5
    _run(inst, policy, SEED)  # warm-up: imports (SciPy for the VI), caches
    res = benchmark.pedantic(_run, args=(inst, policy, SEED), rounds=rounds, iterations=1, warmup_rounds=0)
    median = benchmark.stats.stats.median if benchmark.stats else None
    benchmark.extra_info.update({
        "instance": inst.id, "policy": policy, "workflows": len(inst.offloading.workflows),
        "tasks": sum(len(wf.tasks) for wf in inst.offloading.workflows),
        "events": res.stats["events"], "dispatches": res.stats["dispatches"],
        "mean_makespan": res.mean_makespan, "median_run_s": median,
        "events_per_second": (res.stats["events"] / median) if median else None,
    })
    if policy == "mdp-vi":
        benchmark.extra_info.update({k: res.stats[k] for k in ("vi_solves", "states", "backups", "exact",
                                                                "min_horizon", "vi_seconds")})
    assert evaluate_decisions(inst, res.decisions).feasible


VI_CASES = [
    ("patent-example", {}),
    ("daggen", {"tasks": 8}),
    ("daggen", {"tasks": 12}),
    ("heft-random", {"tasks": 8}),
]


@pytest.mark.parametrize("preset,overrides", VI_CASES, ids=_ids(VI_CASES))
@pytest.mark.parametrize("max_states", [2_000, 50_000])
def test_vi_states_and_backups_per_second(benchmark, preset, overrides, max_states):
    inst = generate("offloading", preset, seed=SEED, **overrides)
    payload = inst.offloading

    def solve():
        mdp = om.WorkflowMDP(payload, 0, om.DEFAULT_GAMMA)
        return om.value_iteration(mdp, [s for _, s in mdp.initial()], max_states=max_states)

    solve()
    res = benchmark.pedantic(solve, rounds=3, iterations=1, warmup_rounds=0)
    st = res.stats
    median = benchmark.stats.stats.median if benchmark.stats else None
    benchmark.extra_info.update({
        "instance": inst.id, "max_states": max_states, "exact": st["exact"], "horizon": st["horizon"],
        "states": st["states"], "state_actions": st["state_actions"], "sweeps": st["sweeps"],
        "backups": st["backups"], "median_solve_s": median,
        "states_per_second": (st["states"] / median) if median else None,
        "backups_per_second_vi_only": (st["backups"] / st["vi_seconds"]) if st["vi_seconds"] > 0 else None,
        "backups_per_second": (st["backups"] / median) if median else None,
    })
    assert st["residual"] < om.DEFAULT_TOL


#: daggen stops at 1000 tasks: generating a 5000-task daggen DAG alone takes minutes
SCALE_CASES = [("heft-random", n) for n in (100, 1000, 5000)] + [("daggen", n) for n in (100, 1000)]


@pytest.mark.parametrize("impl", ["fast", "reference"])
@pytest.mark.parametrize("planner", ["heft", "cpop", "peft"])
@pytest.mark.parametrize("preset,tasks", SCALE_CASES, ids=[f"{g}-{n}" for g, n in SCALE_CASES])
def test_list_scheduler_at_scale(benchmark, preset, tasks, planner, impl):
    if impl == "reference" and tasks >= 5000 and os.environ.get("EDGEBENCH_BENCH_REFERENCE_5000") != "1":
        pytest.skip("the reference at 5000 tasks takes many minutes (EDGEBENCH_BENCH_REFERENCE_5000=1)")
    inst = generate("offloading", preset, seed=SEED, tasks=tasks, servers=8)
    policy = (lambda: ob.plan_policy(planner)) if impl == "fast" else (lambda: oref.reference_policy(planner))
    benchmark.group = f"{planner} {preset} {tasks} tasks"
    rounds = 3 if tasks <= 1000 and impl == "fast" else 1
    res = benchmark.pedantic(lambda: osim.simulate(inst, policy()), rounds=rounds, iterations=1, warmup_rounds=0)
    benchmark.extra_info.update({"instance": inst.id, "planner": planner, "impl": impl, "tasks": tasks,
                                 "edges": sum(len(wf.edges) for wf in inst.offloading.workflows),
                                 "mean_makespan": res.mean_makespan})
