"""CES single-job baselines (flexitask, smart, greedy-bw): referee-feasible, deterministic,
and each rule does what docs/mapping-baselines.md says."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from edgebench import registry
from edgebench.errors import InputError
from edgebench.instances import io, semantics
from edgebench.instances.generators import generate
from edgebench.instances.sets import load_set
from edgebench.referee import evaluate
from edgebench.solvers import mapping_baselines as mb
from edgebench.solvers.mapping_sim import PLACERS, NetworkState, make_placement, residual_instance

BASELINES = ("flexitask", "smart", "greedy-bw")
GOOD = Path(__file__).resolve().parents[1] / "data" / "good"
SETS = load_set("mapping-thesis-v1") + load_set("mapping-topologies-v1")


def _instance(nodes, links, jobs, **objective) -> "io.Instance":
    """nodes: (cpu, ram[, bg_cpu, bg_ram]); links: (src, dst, bw) made bidirectional;
    jobs: dicts with tasks [(cpu, ram)] and links [(src, dst, bw_min, bw_max)]."""
    nd = []
    for n in nodes:
        cpu, ram = n[0], n[1]
        bg = n[2:] if len(n) > 2 else (0.0, 0.0)
        nd.append({"cpu": cpu, "ram": ram, "bg_cpu": bg[0], "bg_ram": bg[1]})
    lk = []
    for a, b, bw in links:
        lk += [{"src": a, "dst": b, "bandwidth": bw}, {"src": b, "dst": a, "bandwidth": bw}]
    js = []
    for j in jobs:
        d = {k: v for k, v in j.items() if k not in ("tasks", "links")}
        d["tasks"] = [{"cpu": c, "ram": r} for c, r in j["tasks"]]
        d["links"] = [{"src": s, "dst": t, "bw_min": lo, "bw_max": hi} for s, t, lo, hi in j.get("links", [])]
        js.append(d)
    data = {"format_version": 1, "family": "mapping", "id": "t", "mapping": {"nodes": nd, "links": lk, "jobs": js}}
    if objective:
        data["mapping"]["objective"] = objective
    return io.instance_from_dict(data)


def test_registered():
    for name in BASELINES:
        info = registry.get(name)
        assert info.kind == "heuristic"
        assert info.families == ("mapping",)
        assert info.params, name
        assert name in PLACERS


@pytest.mark.parametrize("name", BASELINES)
def test_embedded_sets_feasible_and_deterministic(name):
    for inst in SETS:
        a = registry.solve(inst, name, seed=3)
        b = registry.solve(inst, name, seed=3)
        assert a.status == "feasible", (inst.id, a.stats)
        assert a.solution.decisions == b.solution.decisions
        ev = evaluate(inst, a.solution)
        assert ev.feasible, (inst.id, ev.violations[:3])
        # the reported objective and stats are the referee's
        assert a.solution.objective == pytest.approx(ev.objectives["composite"])
        for key in ("L", "D_BW", "mean_wait", "p95_wait"):
            assert a.stats[key] == pytest.approx(ev.objectives[key])
        # every non-co-located link is routed canonically and gets at least bw_min
        m = inst.mapping
        for jd, job in zip(a.solution.mapping.jobs, m.jobs):
            for ld, v in zip(jd.links, job.links):
                route = semantics.canonical_route(m, jd.nodes[v.src], jd.nodes[v.dst])
                assert tuple(ld.route) == route
                if route:
                    assert v.bw_min - 1e-9 <= ld.bandwidth <= v.bw_max + 1e-9


def test_greedy_bw_maximises_satisfaction_on_the_sets():
    """greedy-bw's LP maximises D_BW for its mapping; on the thesis sets it is never below
    the other baselines' D_BW by more than their mapping luck allows: check >= FlexiTask's."""
    for inst in SETS:
        g = evaluate(inst, registry.solve(inst, "greedy-bw").solution).objectives["D_BW"]
        f = evaluate(inst, registry.solve(inst, "flexitask").solution).objectives["D_BW"]
        assert g >= f - 1e-9, inst.id


@pytest.mark.parametrize("name", BASELINES)
def test_multi_job_instance_all_jobs_held_at_once(name):
    inst = generate("mapping", "thesis-queue", seed=1, jobs=3, rate=0.5, task_nodes_range=[3, 4])
    r = registry.solve(inst, name)
    assert r.status == "feasible"
    assert all(jd.start is None for jd in r.solution.mapping.jobs)
    ev = evaluate(inst, r.solution)
    assert ev.feasible, ev.violations[:3]
    # simultaneously active: the load of all jobs fits the network together
    st = NetworkState(inst.mapping)
    for k, jd in enumerate(r.solution.mapping.jobs):
        pl = make_placement(inst.mapping, k, jd.nodes, [(ld.route, ld.bandwidth) for ld in jd.links])
        assert st.fits(pl)
        st.commit(pl)


@pytest.mark.parametrize("name", BASELINES)
def test_too_many_simultaneous_jobs_is_infeasible(name):
    inst = generate("mapping", "thesis-queue", seed=0, jobs=30)
    r = registry.solve(inst, name)
    assert r.status == "infeasible"
    assert "does not fit" in r.stats["reason"]
    assert r.solution.mapping is None


@pytest.mark.parametrize("name", BASELINES)
def test_every_generated_job_fits_the_empty_network(name):
    """The last-resort pass (the generator's certification rules) makes every certified job
    placeable on the network without other jobs — e.g. job 14 of thesis-queue seed 2, a
    tight 8-task job on which FlexiTask's own passes get stuck."""
    for seed in (0, 1, 2):
        m = generate("mapping", "thesis-queue", seed=seed).mapping
        for k in range(len(m.jobs)):
            assert PLACERS[name].fn(NetworkState(m), k) is not None, (seed, k)


def test_params_are_validated():
    inst = SETS[0]
    with pytest.raises(InputError, match="unknown parameter"):
        registry.solve(inst, "smart", nope=1)
    with pytest.raises(InputError) as e:
        registry.solve(inst, "flexitask", weights=[1, 2])
    assert e.value.field == "params.weights"
    with pytest.raises(InputError):
        registry.solve(inst, "greedy-bw", bandwidth="max")
    with pytest.raises(InputError):
        registry.solve(inst, "flexitask", avg_threshold=0)
    with pytest.raises(InputError):
        registry.solve(inst, "smart", seed=-1)


def test_time_limit_zero_is_a_timeout():
    r = registry.solve(SETS[-1], "flexitask", time_limit=0.0)
    assert r.status == "timeout"


# ---- FlexiTask ----------------------------------------------------------------------


def _one_task_net(n_nodes=3):
    return [(100.0, 100.0)] * n_nodes, [(i, i + 1, 1000.0) for i in range(n_nodes - 1)]


def test_flexitask_heat_spreads_identical_jobs():
    nodes, links = _one_task_net(3)
    inst = _instance(nodes, links, [{"tasks": [(10.0, 10.0)]}] * 3)
    st = NetworkState(inst.mapping)
    st.record()
    # heat alone (weights 0, 0, 1): each new job goes to a node not selected recently
    chosen = []
    for k in range(3):
        pl = mb.place_flexitask(st, k, weights=(0.0, 0.0, 1.0))
        chosen.append(pl.nodes[0])
        st.commit(pl)
    assert sorted(chosen) == [0, 1, 2]
    # with heat switched off, ties go to the lowest index every time
    st = NetworkState(inst.mapping)
    st.record()
    chosen = []
    for k in range(3):
        pl = mb.place_flexitask(st, k, weights=(0.0, 1.0, 0.0))
        chosen.append(pl.nodes[0])
        st.commit(pl)
    assert chosen == [0, 0, 0]


def test_flexitask_long_term_peak_filters_a_recently_hot_node():
    nodes, links = _one_task_net(2)
    inst = _instance(nodes, links, [{"tasks": [(10.0, 10.0)]}])
    st = NetworkState(inst.mapping)
    # node 0 was 95 % busy two samples ago, now idle; node 1 is 30 % busy now
    st.history.extend([np.array([0.95, 0.3]), np.array([0.0, 0.3]), np.array([0.0, 0.3])])
    st.used_cpu = np.array([0.0, 30.0])
    # idleness and balance prefer node 0; the long-term peak (0.95 > 0.9) filters it out
    assert mb.place_flexitask(st, 0).nodes == (1,)
    # a long window of 1 sample forgets the peak
    assert mb.place_flexitask(st, 0, long_window=1).nodes == (0,)
    # the filter is soft: when every node is above the thresholds, the resources decide
    st.history.extend([np.array([0.95, 0.95])])
    assert mb.place_flexitask(st, 0).nodes == (0,)


def test_level_rule_takes_the_highest_free_level():
    """FlexiTask's bandwidth rule on a fixed mapping where both task links cross physical
    link 0->1 (100, of which 80 is free above the two bw_min): link 0 (10..50, index
    order first) takes its top level 50; link 1 (10..110) gets the highest level whose extra
    fits the 40 left: levels are 10, 35, 60, 85, 110 -> 35."""
    inst = _bottleneck()
    b = mb._Build(NetworkState(inst.mapping), 0)
    for t, p in ((0, 0), (1, 1), (2, 2)):
        b.place(t, p, b.needs(t, p)[0])
    routes = b.routes()
    bws = mb._level_bandwidths(b, routes, [0, 1], [4, 4])
    assert bws == pytest.approx([50.0, 35.0])
    r = registry.solve(inst, "flexitask")
    assert evaluate(inst, r.solution).feasible


# ---- Smart --------------------------------------------------------------------------


def test_smart_bandwidth_by_importance():
    # a star job whose leaves cannot share the hub's node; plenty of bandwidth everywhere
    inst = _instance([(100.0, 100.0), (100.0, 100.0), (100.0, 100.0), (100.0, 100.0)],
                     [(0, 1, 1000.0), (0, 2, 1000.0), (0, 3, 1000.0)],
                     [{"tasks": [(60.0, 60.0), (60.0, 60.0), (60.0, 60.0)],
                       "links": [(0, 1, 10.0, 100.0), (0, 2, 10.0, 50.0)]}],
                     bandwidth_levels=5)
    r = registry.solve(inst, "smart")
    bws = [ld.bandwidth for ld in r.solution.mapping.jobs[0].links]
    # shares 100/150 and 50/150; relative to the top share: 1 and 0.5 -> levels 4 and 2
    assert bws[0] == pytest.approx(semantics.bandwidth_level(10.0, 100.0, 4, 5))
    assert bws[1] == pytest.approx(semantics.bandwidth_level(10.0, 50.0, 2, 5))


def test_smart_connectivity_pulls_neighbours_close():
    # a line 0-1-2-3; the job's two task nodes cannot share a node; connectivity weight only
    inst = _instance([(100.0, 100.0)] * 4, [(0, 1, 1000.0), (1, 2, 1000.0), (2, 3, 1000.0)],
                     [{"tasks": [(60.0, 60.0), (60.0, 60.0)], "links": [(0, 1, 10.0, 50.0)]}])
    st = NetworkState(inst.mapping)
    pl = mb.place_smart(st, 0, weights=(0.0, 0.0, 1.0, 0.0))
    a, b = pl.nodes
    assert len(semantics.canonical_route(inst.mapping, a, b)) == 1


# ---- greedy-bw ----------------------------------------------------------------------


def test_greedy_bw_colocates_heavy_pairs():
    # nodes hold two task nodes each; the light link 1-2 is mapped first (Prim order from
    # the heaviest task node), the heavy pairs 0-1 and 2-3 end up sharing a node each
    inst = _instance([(70.0, 70.0), (70.0, 70.0), (70.0, 70.0)], [(0, 1, 1000.0), (1, 2, 1000.0)],
                     [{"tasks": [(30.0, 30.0), (30.0, 30.0), (30.0, 30.0), (30.0, 30.0)],
                       "links": [(0, 1, 50.0, 100.0), (2, 3, 50.0, 100.0), (1, 2, 1.0, 2.0)]}])
    pl = mb.place_greedy_bw(NetworkState(inst.mapping), 0)
    assert pl.nodes[0] == pl.nodes[1]  # the heavy pairs share a node
    assert pl.nodes[2] == pl.nodes[3]
    r = registry.solve(inst, "greedy-bw")
    assert evaluate(inst, r.solution).objectives["D_BW"] == pytest.approx(1.0)


def _bottleneck():
    # three task nodes that must sit on three different nodes of a line 0-1-2; task links
    # 0->1 (range 10..50) and 0->2 (range 10..110) both cross physical link 0->1 (cap 100)
    return _instance([(50.0, 50.0)] * 3, [(0, 1, 100.0), (1, 2, 1000.0)],
                     [{"tasks": [(40.0, 40.0)] * 3,
                       "links": [(0, 1, 10.0, 50.0), (0, 2, 10.0, 110.0)]}])


def test_greedy_bw_lp_is_optimal_and_waterfill_is_fair():
    inst = _bottleneck()
    r = registry.solve(inst, "greedy-bw")
    ev = evaluate(inst, r.solution)
    assert ev.feasible
    links = r.solution.mapping.jobs[0].links
    # comm order: the hub (task 0) on node 0, its heavier partner (task 2) adjacent on node 1,
    # task 1 on node 2: both task links cross physical link 0->1 (100, 80 free above the minima)
    assert r.solution.mapping.jobs[0].nodes == (0, 2, 1)
    assert set(links[0].route) & set(links[1].route)
    # max delta_a + delta_b, 40 delta_a + 100 delta_b <= 80: delta_a = 1, delta_b = 0.4
    assert links[0].bandwidth == pytest.approx(50.0, abs=1e-6)
    assert links[1].bandwidth == pytest.approx(10.0 + 0.4 * 100.0, abs=1e-6)
    w = registry.solve(inst, "greedy-bw", bandwidth="waterfill").solution.mapping.jobs[0].links
    # max-min fair: equal delta, 140 delta = 80
    d = [(w[0].bandwidth - 10.0) / 40.0, (w[1].bandwidth - 10.0) / 100.0]
    assert d[0] == pytest.approx(d[1], abs=1e-9)
    assert d[0] == pytest.approx(80.0 / 140.0, abs=1e-6)


def test_lp_and_waterfill_rules_directly():
    """The two bandwidth rules on a fixed mapping (hub on node 0, leaves on 1 and 2)."""
    inst = _bottleneck()
    st = NetworkState(inst.mapping)
    b = mb._Build(st, 0)
    for t, p in ((0, 0), (1, 1), (2, 2)):
        got = b.needs(t, p)
        b.place(t, p, got[0])
    routes = b.routes()
    assert set(routes[0]) & set(routes[1])
    lp = mb._lp_bandwidths(b, routes)
    assert lp == pytest.approx([50.0, 50.0], abs=1e-6)
    b2 = mb._Build(st, 0)
    for t, p in ((0, 0), (1, 1), (2, 2)):
        b2.place(t, p, b2.needs(t, p)[0])
    wf = mb._waterfill_bandwidths(b2, routes)
    assert (wf[0] - 10) / 40 == pytest.approx((wf[1] - 10) / 100, abs=1e-9)
    assert (wf[0] - 10) + (wf[1] - 10) == pytest.approx(80.0, abs=1e-6)


def test_comm_order_prim_like():
    inst = _instance([(100.0, 100.0)], [], [{"tasks": [(1.0, 1.0)] * 4,
                                           "links": [(0, 1, 1.0, 5.0), (1, 2, 1.0, 90.0), (2, 3, 1.0, 20.0)]}])
    assert mb.comm_order(inst.mapping.jobs[0]) == [2, 1, 3, 0]


def test_residual_instance_holds_the_residual_network():
    inst = SETS[2]
    st = NetworkState(inst.mapping)
    pl = PLACERS["smart"].fn(st, 0)
    st.commit(pl)
    temp = residual_instance(inst, st, 0)
    m = temp.mapping
    for p, nd in enumerate(m.nodes):
        assert nd.cpu - nd.bg_cpu == pytest.approx(max(st.free_cpu()[p], 1e-9 * nd.cpu))
    for r, lk in enumerate(m.links):
        assert lk.bandwidth == pytest.approx(max(st.free_bw()[r], 1e-9))
    assert len(m.jobs) == 1 and m.jobs[0].arrival == 0.0
    assert not math.isnan(sum(n.bg_cpu for n in m.nodes))
