"""The offloading simulator and its baselines: HEFT / CPOP / PEFT against hand computations
and the classic HEFT paper example, the patent's greedy rule, all-cloud, nearest-edge; every
output accepted by the referee, same seed same output; the simulator's event semantics."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from edgebench import registry
from edgebench.errors import InputError
from edgebench.instances import io, semantics
from edgebench.instances.generators import generate
from edgebench.referee import evaluate, evaluate_decisions
from edgebench.solvers import offloading_baselines as ob
from edgebench.solvers import offloading_sim as osim

TINY = Path(__file__).resolve().parents[1] / "data" / "good" / "offloading_tiny.json"
BASELINES = ["heft", "cpop", "peft", "affinity", "all-cloud", "nearest-edge", "random"]


def _classic_dict(exec_times, edges, servers, name="classic"):
    """A classic DAG-scheduling instance: one-task-at-a-time processors, exec_times and edge
    costs (paid only between different processors), no images, pulls or input data."""
    return {
        "format_version": 1, "family": "offloading", "id": name,
        "offloading": {
            "servers": [{"name": f"P{i}", "cpu": 1.0, "mem": 1.0, "images": ["x"]} for i in range(servers)],
            "distance": [[0.0 if i == j else 1.0 for j in range(servers)] for i in range(servers)],
            "workflows": [{
                "tasks": [{"functions": [{"image": "x", "cpu": 1.0, "mem": 1.0, "exec_time": 1.0}]}
                          for _ in exec_times],
                "edges": [{"src": a, "dst": b, "cost": float(c)} for a, b, c in edges],
                "exec_times": [[float(x) for x in row] for row in exec_times],
            }],
        },
    }


def _sched(result):
    wd = result.solution.offloading.workflows[0]
    return [t.server for t in wd.tasks], [t.start for t in wd.tasks]


# ======================================================================================
# A small heterogeneous instance computed by hand
# ======================================================================================

# Two processors P0, P1; five tasks; edge costs are paid only between different processors.
#
#   task  P0  P1   w-bar        edges (cost):  0->1 (4)  0->2 (2)  1->3 (1)  2->3 (6)  2->4 (3)
#   t0     4   6   5
#   t1     3   7   5
#   t2     6   3   4.5
#   t3     2   4   3
#   t4     3   3   3
#
# c-bar = the cost (two processors: the only distinct pairs are (P0, P1) and (P1, P0)).
# Upward ranks:   t3 = 3, t4 = 3, t1 = 5 + (1 + 3) = 9, t2 = 4.5 + max(6 + 3, 3 + 3) = 13.5,
#                 t0 = 5 + max(4 + 9, 2 + 13.5) = 20.5
# Downward ranks: t0 = 0, t1 = 0 + 5 + 4 = 9, t2 = 0 + 5 + 2 = 7,
#                 t3 = max(9 + 5 + 1, 7 + 4.5 + 6) = 17.5, t4 = 7 + 4.5 + 3 = 14.5
HAND_EXEC = [[4, 6], [3, 7], [6, 3], [2, 4], [3, 3]]
HAND_EDGES = [(0, 1, 4), (0, 2, 2), (1, 3, 1), (2, 3, 6), (2, 4, 3)]


@pytest.fixture(scope="module")
def hand():
    return io.instance_from_dict(_classic_dict(HAND_EXEC, HAND_EDGES, 2, "hand"))


def test_hand_ranks(hand):
    p = hand.offloading
    g = osim.workflow_graphs(p)[0]
    wbar, cbar = ob.mean_costs(p, 0, g)
    assert wbar == pytest.approx([5, 5, 4.5, 3, 3])
    assert cbar == pytest.approx([4, 2, 1, 6, 3])
    ru = ob.upward_ranks(g.topo, wbar, ob.out_edges(g, cbar, p.workflows[0].edges))
    rd = ob.downward_ranks(g, wbar, cbar)
    assert ru == pytest.approx([20.5, 9, 13.5, 3, 3])
    assert rd == pytest.approx([0, 9, 7, 17.5, 14.5])


def test_hand_heft(hand):
    # Order by upward rank: t0 (20.5), t2 (13.5), t1 (9), t3 (3), t4 (3; t3 first: topological order).
    # t0: P0 [0, 4] (EFT 4)  vs P1 [0, 6]                                   -> P0 [0, 4]
    # t2: P0 [4, 10] (EFT 10) vs P1: EST 4 + 2 = 6, [6, 9] (EFT 9)          -> P1 [6, 9]
    # t1: P0: EST 4, [4, 7] (EFT 7) vs P1: EST 8, P1 busy until 9, [9, 16]  -> P0 [4, 7]
    # t3: P0: EST max(7, 9 + 6) = 15, [15, 17] vs P1: EST max(7 + 1, 9) = 9, [9, 13] -> P1 [9, 13]
    # t4: P0: EST 9 + 3 = 12, [12, 15] vs P1: EST 9, busy until 13, [13, 16]  -> P0 [12, 15]
    # Makespan 15.
    r = registry.solve(hand, "heft")
    servers, starts = _sched(r)
    assert servers == [0, 0, 1, 1, 0]
    assert starts == pytest.approx([0, 4, 6, 9, 12])
    ev = evaluate(hand, r.solution)
    assert ev.feasible and ev.primary_value == pytest.approx(15)


def test_hand_cpop(hand):
    # Priorities (up + down): t0 20.5, t1 18, t2 20.5, t3 20.5, t4 17.5; |CP| = 20.5.
    # Critical path: t0 -> t2 (20.5; t1 has 18) -> t3 (20.5; t4 has 17.5).
    # CP processor: P0: 4 + 6 + 2 = 12, P1: 6 + 3 + 4 = 13 -> P0.
    # Ready queue by priority:
    # t0 (CP) -> P0 [0, 4]
    # t2 (20.5, CP) -> P0 [4, 10]
    # t1 (18; t4 17.5 is ready too): P0: busy until 10, [10, 13] vs P1: EST 4 + 4 = 8, [8, 15] -> P0 [10, 13]
    # t3 (20.5, CP) -> P0: EST max(13, 10) = 13, [13, 15]
    # t4: P0: EST 10, busy until 15, [15, 18] vs P1: EST 10 + 3 = 13, [13, 16] -> P1 [13, 16]
    # Makespan 16 (HEFT: 15).
    r = registry.solve(hand, "cpop")
    servers, starts = _sched(r)
    assert servers == [0, 0, 0, 0, 1]
    assert starts == pytest.approx([0, 10, 4, 13, 13])
    assert evaluate(hand, r.solution).primary_value == pytest.approx(16)
    pol = ob.plan_policy("cpop")
    osim.simulate(hand, pol)
    info = pol.planner.workflow_info[0]
    assert info["critical_path"] == [0, 2, 3] and info["cp_server"] == 0
    assert info["priority"] == pytest.approx([20.5, 18, 20.5, 20.5, 17.5])


def test_hand_peft(hand):
    # Optimistic cost table (exits t3, t4: 0):
    # OCT(t1, P0) = min(0 + 2, 0 + 4 + 1) = 2          OCT(t1, P1) = min(0 + 2 + 1, 0 + 4) = 3
    # OCT(t2, P0) = max(min(2, 4 + 6), min(3, 3 + 3)) = 3
    # OCT(t2, P1) = max(min(2 + 6, 4), min(3 + 3, 3)) = 4
    # OCT(t0, P0) = max(min(2 + 3, 3 + 7 + 4), min(3 + 6, 4 + 3 + 2)) = max(5, 9) = 9
    # OCT(t0, P1) = max(min(2 + 3 + 4, 3 + 7), min(3 + 6 + 2, 4 + 3)) = max(9, 7) = 9
    # rank_oct = mean: t0 9, t1 2.5, t2 3.5, t3 0, t4 0.
    # t0: O_EFT P0 4 + 9 = 13 vs P1 6 + 9 = 15                 -> P0 [0, 4]
    # t2 (3.5): P0 10 + 3 = 13 vs P1 9 + 4 = 13: tie, the smaller EFT wins -> P1 [6, 9]
    # t1 (2.5): P0 7 + 2 = 9 vs P1 16 + 3 = 19                  -> P0 [4, 7]
    # t3 (0, lower index than t4): P0 17 vs P1 13               -> P1 [9, 13]
    # t4: P0 15 vs P1 16                                         -> P0 [12, 15]
    p = hand.offloading
    g = osim.workflow_graphs(p)[0]
    _, cbar = ob.mean_costs(p, 0, g)
    table = ob.oct_table(p, 0, g, cbar)
    assert [table[t][0] for t in range(5)] == pytest.approx([9, 2, 3, 0, 0])
    assert [table[t][1] for t in range(5)] == pytest.approx([9, 3, 4, 0, 0])
    r = registry.solve(hand, "peft")
    servers, starts = _sched(r)
    assert servers == [0, 0, 1, 1, 0]
    assert starts == pytest.approx([0, 4, 6, 9, 12])


# ======================================================================================
# The classic example of Topcuoglu, Hariri & Wu (2002), Fig. 2
# ======================================================================================

CLASSIC_W = [[14, 16, 9], [13, 19, 18], [11, 13, 19], [13, 8, 17], [12, 13, 10], [13, 16, 9], [7, 15, 11],
             [5, 11, 14], [18, 12, 20], [21, 7, 16]]
CLASSIC_E = [(1, 2, 18), (1, 3, 12), (1, 4, 9), (1, 5, 11), (1, 6, 14), (2, 8, 19), (2, 9, 16), (3, 7, 23),
             (4, 8, 27), (4, 9, 23), (5, 9, 13), (6, 8, 15), (7, 10, 17), (8, 10, 11), (9, 10, 13)]


@pytest.fixture(scope="module")
def classic():
    return io.instance_from_dict(_classic_dict(CLASSIC_W, [(a - 1, b - 1, c) for a, b, c in CLASSIC_E], 3))


def test_classic_heft_80(classic):
    p = classic.offloading
    g = osim.workflow_graphs(p)[0]
    wbar, cbar = ob.mean_costs(p, 0, g)
    ru = ob.upward_ranks(g.topo, wbar, ob.out_edges(g, cbar, p.workflows[0].edges))
    # the paper's Table: 108, 77, 80, 80, 69, 63.333, 42.667, 35.667, 44.333, 14.667
    assert ru == pytest.approx([108, 77, 80, 80, 69, 63.333, 42.667, 35.667, 44.333, 14.667], abs=1e-3)
    r = registry.solve(classic, "heft")
    servers, starts = _sched(r)
    # the paper's Fig. 4(a): n1 P3 0, n2 P1 27, n3 P3 9, n4 P2 18, n5 P3 28, n6 P2 26, n7 P3 38,
    # n8 P1 57, n9 P2 56, n10 P2 73 -> makespan 80
    assert servers == [2, 0, 2, 1, 2, 1, 2, 0, 1, 1]
    assert starts == pytest.approx([0, 27, 9, 18, 28, 26, 38, 57, 56, 73])
    assert evaluate(classic, r.solution).primary_value == pytest.approx(80)


def test_classic_cpop_86(classic):
    r = registry.solve(classic, "cpop")
    ev = evaluate(classic, r.solution)
    assert ev.feasible and ev.primary_value == pytest.approx(86)
    pol = ob.plan_policy("cpop")
    osim.simulate(classic, pol)
    info = pol.planner.workflow_info[0]
    assert info["critical_path"] == [0, 1, 8, 9]  # n1, n2, n9, n10 with |CP| = 108
    assert info["cp_server"] == 1                  # P2: 16 + 19 + 12 + 7 = 54


# ======================================================================================
# Every baseline on generated instances
# ======================================================================================


def _instances():
    return [
        generate("offloading", "patent-example"),
        generate("offloading", "edge-poisson", seed=3),
        generate("offloading", "daggen", seed=1, tasks=12),
        generate("offloading", "heft-random", seed=2, tasks=15),
        io.load_instance(TINY),
    ]


@pytest.fixture(scope="module")
def instances():
    return _instances()


@pytest.mark.parametrize("name", BASELINES)
def test_referee_accepts_and_same_seed_same_output(instances, name):
    info = registry.get(name)
    assert info.kind == "heuristic" and "offloading" in info.families
    for inst in instances:
        has_cloud = osim.cloud_index(inst.offloading) is not None
        a = registry.solve(inst, name, seed=7)
        b = registry.solve(inst, name, seed=7)
        if name == "all-cloud" and not has_cloud:
            assert a.status == "infeasible" and "cloud" in a.stats["reason"]
            continue
        assert a.status == "feasible", (inst.id, a.stats)
        assert a.solution.decisions == b.solution.decisions, (inst.id, "same seed, same decisions")
        ev = evaluate(inst, a.solution)
        assert ev.feasible, (inst.id, ev.violations[:3])
        assert a.solution.objective == pytest.approx(ev.primary_value), inst.id


@pytest.mark.parametrize("name", ["heft", "cpop", "peft"])
def test_simulator_reproduces_plans(instances, name):
    """A plan (server + planned start per task) executed by the event simulator comes out
    unchanged: the planners' timelines and the simulator agree."""
    for inst in instances:
        pol = ob.plan_policy(name)
        res = osim.simulate(inst, pol)
        for w, plan in pol.plans.items():
            for t, (s, st) in plan.items():
                assert res.servers[w][t] == s
                assert res.starts[w][t] == pytest.approx(st, abs=1e-9), (inst.id, w, t)


def test_workflows_are_planned_in_arrival_order():
    inst = generate("offloading", "edge-poisson", seed=0)
    p = inst.offloading
    r = registry.solve(inst, "heft")
    for w, wd in enumerate(r.solution.offloading.workflows):
        assert min(t.start for t in wd.tasks) >= p.workflows[w].arrival - 1e-9


def test_all_cloud_and_nearest_edge_placements():
    inst = generate("offloading", "edge-poisson", seed=2)
    p = inst.offloading
    cloud = osim.cloud_index(p)
    r = registry.solve(inst, "all-cloud")
    assert all(t.server == cloud for wd in r.solution.offloading.workflows for t in wd.tasks)
    r = registry.solve(inst, "nearest-edge")
    for w, wd in enumerate(r.solution.offloading.workflows):
        src = p.workflows[w].source
        for t, ts in enumerate(wd.tasks):
            edge = [s for s in range(len(p.servers)) if not p.servers[s].is_cloud and semantics.can_host(p, w, t, s)]
            assert ts.server == min(edge, key=lambda s: (p.distance[src][s], s))


def test_affinity_on_patent_example():
    # The greedy rule: 1 on es1 (holds a, input local: 0 + 0.5); cand {2 (b), 3 (a)}: es1 holds a -> 3,
    # es1 (0 + 0.5); cand {2}: es2 (0.5 x 1 + 0.5 = 1.0) beats es1 (pull 1 + 0.5) and es3;
    # cand {4 (b), 5 (a)}: es2 holds b -> 4 on es2 (0.5); cand {5}: es1 costs max(0.5 x 1, 0) + 0.5 = 1.0,
    # es3 max(0.5 x 0.2, 0.5 x 1.2) + 0.5 = 1.1 -> es1 (myopic; the MDP picks es3); 6 on es2.
    inst = generate("offloading", "patent-example")
    pol = osim.AffinityPolicy(np.random.default_rng(0))
    res = osim.simulate(inst, pol)
    assert [(t, s) for _, t, s in pol.log] == [(0, 0), (2, 0), (1, 1), (3, 1), (4, 0), (5, 1)]
    assert res.mean_makespan == pytest.approx(4.0)
    assert evaluate_decisions(inst, res.decisions).primary_value == pytest.approx(4.0)


def test_unknown_params_and_bad_seed_are_refused(instances):
    with pytest.raises(InputError):
        registry.solve(instances[0], "heft", depth=3)
    with pytest.raises(InputError):
        registry.solve(instances[0], "affinity", seed=-1)


def test_time_limit_gives_timeout(instances):
    r = registry.solve(instances[1], "heft", time_limit=0.0)
    assert r.status == "timeout" and r.solution.decisions is None


# ======================================================================================
# The simulator's semantics
# ======================================================================================


def _two_servers(tasks, edges=(), arrival=0.0, cpu=2.0):
    return io.instance_from_dict({
        "format_version": 1, "family": "offloading", "id": "sim-test",
        "offloading": {
            "servers": [{"name": "e0", "cpu": cpu, "mem": 2.0, "images": ["a"]},
                        {"name": "e1", "cpu": 4.0, "mem": 4.0, "images": []},
                        {"name": "cloud", "is_cloud": True, "speed": 2.0}],
            "distance": [[0, 1, 5], [1, 0, 5], [5, 5, 0]],
            "bandwidth": 1.0, "image_pull_delay": 0.25,
            "workflows": [{"arrival": arrival, "source": 0, "tasks": tasks,
                           "edges": [{"src": a, "dst": b, "data": d} for a, b, d in edges]}],
        },
    })


def _task(cpu=1.0, ex=1.0, image="a", input_data=0.0):
    return {"functions": [{"image": image, "cpu": cpu, "mem": 1.0, "exec_time": ex}], "input_data": input_data}


class _Fixed(osim.Policy):
    """Dispatches every candidate to a fixed server (test helper)."""

    def __init__(self, servers, rule="dispatched", priorities=None):
        self.servers = servers
        self.candidate_rule = rule
        self.priorities = priorities or {}

    def decide(self, sim):
        wt = sim.first_candidate()
        if wt is None:
            return None
        return osim.Dispatch(wt[0], wt[1], self.servers[wt[1]], priority=self.priorities.get(wt[1]))


def test_capacity_queues_tasks_and_releases_at_finish():
    # three independent 1-cpu tasks on e0 (2 cpu): two run at 1.5 (arrival), the third when one ends
    inst = _two_servers([_task(), _task(), _task(ex=0.5)], arrival=1.5)
    res = osim.simulate(inst, _Fixed([0, 0, 0]))
    assert res.starts[0] == pytest.approx([1.5, 1.5, 2.5])
    assert evaluate_decisions(inst, res.decisions).feasible
    # a queue priority reorders the waiting task: task 0 last
    res = osim.simulate(inst, _Fixed([0, 0, 0], priorities={0: 10.0, 1: 1.0, 2: 2.0}))
    assert res.starts[0] == pytest.approx([2.0, 1.5, 1.5])


def test_first_fit_does_not_block_smaller_tasks():
    # task 0 takes both cpus for 1 s; task 1 (2 cpu) and task 2 (1 cpu) wait; when task 0 ends,
    # task 1 (first in the queue) starts and task 2 waits for it.
    inst = _two_servers([_task(cpu=2.0), _task(cpu=2.0), _task(cpu=1.0)])
    res = osim.simulate(inst, _Fixed([0, 0, 0]))
    assert res.starts[0] == pytest.approx([0.0, 1.0, 2.0])
    inst = _two_servers([_task(cpu=1.0, ex=2.0), _task(cpu=2.0), _task(cpu=1.0)])
    res = osim.simulate(inst, _Fixed([0, 0, 0]))
    # task 1 (2 cpu) does not fit next to task 0; task 2 (1 cpu) overtakes it
    assert res.starts[0] == pytest.approx([0.0, 2.0, 0.0])


def test_transfer_input_pull_and_cloud():
    # task 0 on e0 with input 2 from e0 (free), task 1 on e1 (lacks image a: pull 0.25) after
    # 1 unit of data over distance 1 -> ready at 1 + 1, duration 0.25 + 1; task 2 on the cloud
    # (speed 2, no pull) after 3 x 5 transfer from task 0
    inst = _two_servers([_task(input_data=2.0), _task(), _task()], edges=[(0, 1, 1.0), (0, 2, 3.0)])
    res = osim.simulate(inst, _Fixed([0, 1, 2]))
    assert res.starts[0] == pytest.approx([0.0, 2.0, 16.0])
    assert res.finishes[0] == pytest.approx([1.0, 3.25, 16.5])
    ev = evaluate_decisions(inst, res.decisions)
    assert ev.feasible and ev.primary_value == pytest.approx(16.5)


def test_candidate_rules():
    inst = _two_servers([_task(), _task(), _task()], edges=[(0, 1, 0.0), (1, 2, 0.0)])
    seen = {}

    class Spy(_Fixed):
        def decide(self, sim):
            wt = sim.first_candidate()
            if wt is not None:
                seen.setdefault(self.candidate_rule, []).append((wt[1], sim.now))
            return super().decide(sim)

    osim.simulate(inst, Spy([0, 0, 0], "dispatched"))
    osim.simulate(inst, Spy([0, 0, 0], "finished"))
    # the patent's rule offloads the whole chain at arrival; "finished" waits for each predecessor
    assert seen["dispatched"] == [(0, 0.0), (1, 0.0), (2, 0.0)]
    assert seen["finished"] == [(0, 0.0), (1, 1.0), (2, 2.0)]


def test_zero_duration_and_stall():
    inst = _two_servers([_task(cpu=2.0, ex=0.0), _task(cpu=2.0)])
    res = osim.simulate(inst, _Fixed([0, 0]))
    assert res.starts[0] == pytest.approx([0.0, 0.0])

    class Lazy(osim.Policy):
        name = "lazy"

        def decide(self, sim):
            return None

    with pytest.raises(RuntimeError, match="stalled"):
        osim.simulate(inst, Lazy())


def test_dispatch_checks():
    inst = _two_servers([_task(cpu=3.0), _task()])  # task 0 does not fit e0 (2 cpu)
    sim = osim.OffloadingSim(inst.offloading)
    sim.advance()
    with pytest.raises(ValueError, match="cannot host"):
        sim.dispatch(osim.Dispatch(0, 0, 0))
    with pytest.raises(ValueError, match="not a candidate"):
        sim.dispatch(osim.Dispatch(0, 5, 1))


def test_random_policy_is_seeded_and_accepted():
    inst = generate("offloading", "edge-poisson", seed=1)
    for rule in osim.CANDIDATE_RULES:
        a = osim.simulate(inst, osim.RandomPolicy(np.random.default_rng(3), rule))
        b = osim.simulate(inst, osim.RandomPolicy(np.random.default_rng(3), rule))
        assert a.decisions == b.decisions
        ev = evaluate_decisions(inst, a.decisions)
        assert ev.feasible and ev.primary_value == pytest.approx(a.mean_makespan)
        assert a.stats["events"] >= sum(len(wf.tasks) for wf in inst.offloading.workflows)
        assert math.isfinite(a.stats["end_time"])


# --------------------------------------------------------------------------------------
# issue 17: the fast list schedulers compute exactly what the paper-faithful reference does
# --------------------------------------------------------------------------------------


def test_profile_timeline_answers_like_the_rescanning_reference():
    """Random reservations with fractional cpu/mem on a capacity-shared server: every
    earliest-start query answers the same start as the reference's candidate rescans."""
    from edgebench.solvers.offloading_list_reference import RescanTimeline

    inst = generate("offloading", "daggen", seed=3, tasks=5, servers=2)
    payload = inst.offloading
    s = next(k for k, srv in enumerate(payload.servers) if not srv.is_cloud)
    cap_c, cap_m = payload.servers[s].cpu, payload.servers[s].mem
    rng = np.random.default_rng(0)
    for _ in range(20):
        fast, ref = ob.Timeline.of(payload), RescanTimeline(payload)
        for _ in range(60):
            est = float(rng.integers(0, 40)) / 2
            dur = float(rng.integers(1, 12)) / 2
            cpu = float(rng.choice([cap_c, cap_c / 2, cap_c / 4, 0.0]))
            mem = float(rng.choice([cap_m, cap_m / 3, 0.0]))
            x = ref.earliest_start(s, est, dur, cpu, mem)
            assert fast.earliest_start(s, est, dur, cpu, mem) == x
            if rng.random() < 0.7:
                fast.reserve(s, x, dur, cpu, mem)
                ref.reserve(s, x, dur, cpu, mem)


@pytest.mark.parametrize("preset", ["heft-random", "daggen", "edge-poisson"])
def test_fast_list_schedulers_reproduce_the_reference(preset):
    """Same servers and starts as the reference (rescanning timeline, per-pair cost loops)
    on random instances of every generator (several workflows in edge-poisson)."""
    from edgebench.solvers.offloading_list_reference import reference_policy

    checked = 0
    for seed in range(3):
        for tasks, servers in ((12, 2), (30, 4)):
            inst = generate("offloading", preset, seed=seed, tasks=tasks, servers=servers)
            for name in ("heft", "cpop", "peft"):
                a = osim.simulate(inst, ob.plan_policy(name))
                b = osim.simulate(inst, reference_policy(name))
                assert a.servers == b.servers and a.starts == b.starts, (inst.id, name)
                checked += 1
    assert checked == 18


def test_vectorised_costs_equal_the_loops():
    from edgebench.solvers.offloading_list_reference import mean_costs_loops, oct_table_loops

    for preset in ("heft-random", "daggen"):
        inst = generate("offloading", preset, seed=1, tasks=25, servers=4)
        p = inst.offloading
        g = osim.workflow_graph(p, 0)
        wbar, cbar = ob.mean_costs(p, 0, g)
        assert (wbar, cbar) == mean_costs_loops(p, 0, g)
        assert ob.oct_table(p, 0, g, cbar) == oct_table_loops(p, 0, g, cbar)
