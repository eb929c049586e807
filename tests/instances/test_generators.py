"""The seeded instance generators: every preset round-trips, is byte-stable per seed,
honours overrides, rejects bad ones, and states the sources' facts."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from edgebench.errors import InputError
from edgebench.instances import io, semantics
from edgebench.instances.generators import generate, presets
from edgebench.instances.generators.patent import (
    PUBLISHED_COMPLETION,
    PUBLISHED_PLACEMENT,
    brute_force,
    list_schedule,
)

#: small sizes for the presets that allow them (the facts tests use the full presets)
SMALL = {
    ("placement", "synthetic-3"): {"num_tasks": 24},
    ("placement", "synthetic-6"): {"num_tasks": 24},
    ("placement", "hetero-6"): {"num_tasks": 24},
    ("placement", "sjf-ablation"): {"num_tasks": 24},
    ("placement", "testbed"): {},
    ("placement", "alibaba"): {"num_tasks": 24},
    ("mapping", "thesis"): {},
    ("mapping", "thesis-queue"): {"jobs": 4},
    ("offloading", "heft-random"): {"tasks": 10},
    ("offloading", "daggen"): {"tasks": 10},
    ("offloading", "edge-poisson"): {"workflows": 2, "tasks": 6},
    ("offloading", "patent-example"): {},
}
DETERMINISTIC = {("offloading", "patent-example")}


def _testbed_available() -> str | None:
    """None if the testbed preset can run here, else the reason to skip."""
    try:
        from edgebench.instances.traces import default_traces_dir  # noqa: F401
        from edgebench.instances.traces.testbed import generate_testbed  # noqa: F401
    except ImportError as exc:
        return f"the testbed trace helper is not available: {exc}"
    d = default_traces_dir()
    if d is None or not (d / "tapfinger_testbed_profiles.csv").exists():
        return "traces/tapfinger_testbed_profiles.csv not found"
    return None


def _gen(family: str, preset: str, seed: int = 0, **extra):
    if preset == "testbed":
        reason = _testbed_available()
        if reason:
            pytest.skip(reason)
    if preset == "alibaba":
        from edgebench.instances.traces import default_traces_dir

        d = default_traces_dir()
        if d is None or not (d / "alibaba_gpu_v2023_openb_pod_list_default.csv").exists():
            pytest.skip("the openb pod list (traces/alibaba_gpu_v2023_openb_pod_list_default.csv) not found")
    return generate(family, preset, seed=seed, **{**SMALL[(family, preset)], **extra})


ALL = sorted(presets())


def test_preset_table_lists_every_family():
    assert set(SMALL) == set(ALL)
    for fam in ("placement", "mapping", "offloading"):
        sub = presets(fam)
        assert sub and all(k[0] == fam for k in sub)
        assert all(isinstance(v, str) and v for v in sub.values())
    with pytest.raises(InputError) as exc:
        presets("scheduling")
    assert exc.value.field == "family"


@pytest.mark.parametrize("family,preset", ALL)
def test_round_trip_and_byte_identical(tmp_path, family, preset):
    inst = _gen(family, preset, seed=7)
    assert inst.family == family
    if SMALL[(family, preset)]:
        # overridden parameters: the id carries a digest of them after the seed
        assert inst.id.startswith(f"{family}-{preset}-s7-") and len(inst.id) == len(f"{family}-{preset}-s7-") + 8
    else:
        assert inst.id == f"{family}-{preset}-s7"
    if preset != "testbed":
        meta = inst.meta
        assert {"generator", "preset", "params", "seed", "source", "reference"} <= set(meta)
        assert meta["preset"] == preset and meta["seed"] == 7
        assert ":" in meta["generator"]
        for key, value in SMALL[(family, preset)].items():
            assert meta["params"][key] == value
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    io.write_json(a, inst)
    io.write_json(b, _gen(family, preset, seed=7))  # a fresh generation, same seed
    assert a.read_bytes() == b.read_bytes()
    back = io.load_instance(a)
    assert back == inst
    assert io.content_hash(back) == io.content_hash(inst)


@pytest.mark.parametrize("family,preset", [k for k in ALL if k not in DETERMINISTIC])
def test_different_seeds_differ(family, preset):
    one = _gen(family, preset, seed=1).payload.model_dump(mode="json")
    two = _gen(family, preset, seed=2).payload.model_dump(mode="json")
    assert one != two


def test_patent_example_ignores_seed_but_names_it():
    a = generate("offloading", "patent-example", seed=1)
    b = generate("offloading", "patent-example", seed=2)
    assert a.payload == b.payload and a.id != b.id


# ---------------------------------------------------------------------------------------
# Overrides and bad input
# ---------------------------------------------------------------------------------------


def test_overrides_are_applied_and_recorded():
    p = generate("placement", "synthetic-3", seed=0, num_tasks=16, clusters=2, variant="multi",
                 capacity=[8, 4], noise=0.0)
    pl = p.placement
    assert len(pl.clusters) == 2 and len(pl.tasks) == 16 and pl.variant == "multi" and pl.noise == 0.0
    assert all(c.capacity.cpu == 8 and c.capacity.gpu == 4 for c in pl.clusters)
    assert all(1 <= len(t.eligible) <= 2 for t in pl.tasks)
    assert p.meta["params"]["num_tasks"] == 16 and p.meta["params"]["clusters"] == 2
    # num_tasks follows 64 x clusters unless given
    assert len(generate("placement", "synthetic-3", clusters=1).placement.tasks) == 64
    # a per-cluster capacity list sets the number of clusters
    h = generate("placement", "hetero-6", capacity=[[4, 4], [32, 32]], num_tasks=10)
    assert [c.capacity.cpu for c in h.placement.clusters] == [4, 32]
    only_ic = generate("placement", "synthetic-3", num_tasks=20, type_probs={"ic": 1.0})
    assert {t.type for t in only_ic.placement.tasks} == {"ic"}

    m = generate("mapping", "thesis", seed=0, nodes=6, task_nodes=5, topology="star")
    assert len(m.mapping.nodes) == 6 and len(m.mapping.jobs[0].tasks) == 5
    assert m.mapping.objective.bandwidth_levels == 5

    o = generate("offloading", "heft-random", seed=0, tasks=10, servers=3)
    assert len(o.offloading.workflows[0].tasks) == 10 and len(o.offloading.servers) == 3
    assert generate("offloading", "heft-random", v=12).meta["params"]["tasks"] == 12  # HEFT's name
    d = generate("offloading", "daggen", seed=0, n=10, servers=3, cloud=False)
    assert len(d.offloading.workflows[0].tasks) == 10 and len(d.offloading.servers) == 3
    assert not any(s.is_cloud for s in d.offloading.servers)


@pytest.mark.parametrize("family,preset,overrides,key", [
    ("placement", "synthetic-3", {"bogus": 1}, "bogus"),
    ("placement", "synthetic-3", {"num_tasks": "many"}, "num_tasks"),
    ("placement", "synthetic-3", {"num_tasks": 0}, "num_tasks"),
    ("placement", "synthetic-3", {"num_tasks": True}, "num_tasks"),
    ("placement", "synthetic-3", {"rate": -1.0}, "rate"),
    ("placement", "synthetic-3", {"noise": 1.0}, "noise"),
    ("placement", "synthetic-3", {"variant": "both"}, "variant"),
    ("placement", "synthetic-3", {"type_probs": {"ic": 0.3, "lm": 0.3}}, "type_probs"),
    ("placement", "synthetic-3", {"type_probs": {"speech": 1.0}}, "type_probs"),
    ("placement", "synthetic-3", {"capacity": [16, 0]}, "capacity"),
    ("placement", "hetero-6", {"clusters": 3}, "clusters"),
    ("placement", "sjf-ablation", {"capacity": [2, 2]}, "capacity"),
    ("mapping", "thesis", {"topology": "cube"}, "topology"),
    ("mapping", "thesis", {"task_nodes": 1}, "task_nodes"),
    ("mapping", "thesis", {"weights": [0.5, 0.5, 0.5]}, "weights"),
    ("mapping", "thesis", {"link_prob": 1.5}, "link_prob"),
    ("mapping", "thesis", {"bw_min_range": [10, 80]}, "bw_min_range"),
    ("mapping", "thesis", {"jobs": 3}, "jobs"),
    ("mapping", "thesis-queue", {"rate": 0}, "rate"),
    ("offloading", "heft-random", {"beta": 3.0}, "beta"),
    ("offloading", "heft-random", {"v": 10, "tasks": 10}, "tasks"),
    ("offloading", "daggen", {"fat": 0.0}, "fat"),
    ("offloading", "daggen", {"mindata": 60.0}, "mindata"),
    ("offloading", "daggen", {"cloud": "yes"}, "cloud"),
    ("offloading", "edge-poisson", {"workflows": -2}, "workflows"),
    ("offloading", "patent-example", {"exec_time": 1.0}, "exec_time"),
])
def test_bad_overrides_name_the_key(family, preset, overrides, key):
    with pytest.raises(InputError) as exc:
        generate(family, preset, **overrides)
    assert exc.value.field == key, str(exc.value)
    assert key in str(exc.value)


def test_unknown_key_lists_the_known_ones():
    with pytest.raises(InputError, match=r"unknown parameter 'tasks' for preset 'synthetic-3' \(known: .*num_tasks"):
        generate("placement", "synthetic-3", tasks=5)


def test_unknown_family_preset_and_bad_seed():
    with pytest.raises(InputError) as exc:
        generate("placement", "synthetic-99")
    assert exc.value.field == "preset"
    with pytest.raises(InputError) as exc:
        generate("routing", "thesis")
    assert exc.value.field == "family"
    with pytest.raises(InputError) as exc:
        generate("mapping", "thesis", seed=-1)
    assert exc.value.field == "seed"


# ---------------------------------------------------------------------------------------
# Placement facts
# ---------------------------------------------------------------------------------------


def test_synthetic_3_facts():
    inst = generate("placement", "synthetic-3", seed=0)
    pl = inst.placement
    assert [(c.capacity.cpu, c.capacity.gpu) for c in pl.clusters] == [(16, 16)] * 3
    assert len(pl.tasks) == 192
    arrivals = [t.arrival for t in pl.tasks]
    assert arrivals == sorted(arrivals) and arrivals[0] >= 0
    assert 1.6 <= len(pl.tasks) / (arrivals[-1] + 1) <= 2.4  # Poisson rate 2 per step
    counts = np.bincount(arrivals)
    assert counts.max() <= 12  # Poisson(2) per step, not bursts
    for t in pl.tasks:
        assert 1 <= len(t.eligible) <= 3 and list(t.eligible) == sorted(set(t.eligible))
        assert (t.minimum.cpu, t.minimum.gpu) == (2, 1)
    types = [t.type for t in pl.tasks]
    assert 0.35 <= types.count("ic") / len(types) <= 0.65
    assert {len(t.eligible) for t in pl.tasks} == {1, 2, 3}
    assert pl.noise == 0.1 and pl.switching_overhead == 0.5 and pl.pending_size == 10
    assert pl.step_seconds == 10.0 and pl.variant == "single"
    assert inst.meta["params"]["rate"] == 2.0 and inst.meta["params"]["num_tasks"] == 192
    # the two types' performance: ic 4 steps whatever the allocation; lm 2 steps at 16/16,
    # slower at the minimum, and CPU-bottlenecked (2 CPU feed at most 4 GPUs)
    quiet = generate("placement", "synthetic-3", seed=0, noise=0.0, num_tasks=40).placement
    ic = next(j for j, t in enumerate(quiet.tasks) if t.type == "ic")
    lm = next(j for j, t in enumerate(quiet.tasks) if t.type == "lm")
    assert semantics.fixed_run_steps(quiet, ic, 2, 1) == 4 == semantics.fixed_run_steps(quiet, ic, 16, 16)
    assert semantics.fixed_run_steps(quiet, lm, 16, 16) == 2
    assert semantics.fixed_run_steps(quiet, lm, 2, 1) > 10
    assert semantics.fixed_run_steps(quiet, lm, 2, 16) == semantics.fixed_run_steps(quiet, lm, 2, 4)


def test_synthetic_6_and_hetero_6_facts():
    s6 = generate("placement", "synthetic-6", seed=0).placement
    assert len(s6.clusters) == 6 and len(s6.tasks) == 384
    assert 3.2 <= 384 / (s6.tasks[-1].arrival + 1) <= 4.8
    h6 = generate("placement", "hetero-6", seed=0).placement
    assert [(c.capacity.cpu, c.capacity.gpu) for c in h6.clusters] == [(4, 4), (8, 8), (12, 12), (16, 16),
                                                                         (24, 24), (32, 32)]
    assert len(h6.tasks) == 384
    assert 4.8 <= 384 / (h6.tasks[-1].arrival + 1) <= 7.2
    assert all(1 <= len(t.eligible) <= 3 for t in h6.tasks)


def test_sjf_ablation_facts():
    pl = generate("placement", "sjf-ablation", seed=0).placement
    assert len(pl.clusters) == 3 and len(pl.tasks) == 192 and pl.noise == 0.0
    assert {t.type for t in pl.tasks} == {"short", "long"}
    for j, t in enumerate(pl.tasks[:20]):
        assert (t.minimum.cpu, t.minimum.gpu) == (3, 3)
        want = 1 if t.type == "short" else 10
        # no gain from more resources
        assert semantics.fixed_run_steps(pl, j, 3, 3) == want == semantics.fixed_run_steps(pl, j, 16, 16)


# ---------------------------------------------------------------------------------------
# Mapping facts
# ---------------------------------------------------------------------------------------


def _graph(n, links):
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from((link.src, link.dst) for link in links)
    return g


def test_thesis_facts():
    sizes = set()
    for seed in range(12):
        m = generate("mapping", "thesis", seed=seed).mapping
        assert len(m.nodes) == 10
        g = _graph(10, m.links)
        assert nx.is_strongly_connected(g)
        for link in m.links:  # every undirected link in both directions, same bandwidth
            back = [x for x in m.links if x.src == link.dst and x.dst == link.src]
            assert len(back) == 1 and back[0].bandwidth == link.bandwidth
            assert 100 <= link.bandwidth <= 1000
        for nd in m.nodes:
            assert 50 <= nd.cpu <= 100 and 50 <= nd.ram <= 100
            assert 0.1 * nd.cpu - 1e-3 <= nd.bg_cpu <= 0.5 * nd.cpu + 1e-3
            assert 0.1 * nd.ram - 1e-3 <= nd.bg_ram <= 0.5 * nd.ram + 1e-3
        (job,) = m.jobs
        assert (job.arrival, job.duration, job.priority) == (0.0, 1.0, 0)
        n = len(job.tasks)
        assert 3 <= n <= 8
        sizes.add(n)
        assert nx.is_weakly_connected(_graph(n, job.links))
        for t in job.tasks:
            assert 10 <= t.cpu <= 50 and 10 <= t.ram <= 50
        for link in job.links:
            assert 10 <= link.bw_min <= 50 <= link.bw_max <= 100
        obj = m.objective
        assert obj.include_background and obj.bandwidth_levels == 5 and obj.routing == "shortest_path"
        assert all(abs(w - 1 / 3) < 1e-12 for w in obj.weights)
    assert len(sizes) >= 3  # drawn, not fixed


@pytest.mark.parametrize("n", [3, 5, 8])
def test_thesis_topologies(n):
    ring = generate("mapping", "thesis", seed=n, topology="ring", task_nodes=n).mapping.jobs[0]
    assert sorted((x.src, x.dst) for x in ring.links) == sorted((i, (i + 1) % n) for i in range(n))
    cycles = list(nx.simple_cycles(_graph(n, ring.links)))
    assert len(cycles) == 1 and len(cycles[0]) == n  # one directed cycle through every node

    star = generate("mapping", "thesis", seed=n, topology="star", task_nodes=n).mapping.jobs[0]
    assert {(x.src, x.dst) for x in star.links} == {(0, i) for i in range(1, n)} | {(i, 0) for i in range(1, n)}

    tree = generate("mapping", "thesis", seed=n, topology="tree", task_nodes=n).mapping.jobs[0]
    und = nx.Graph([(x.src, x.dst) for x in tree.links])
    assert len(tree.links) == 2 * (n - 1) and nx.is_tree(und) and und.number_of_nodes() == n
    assert all(any(y.src == x.dst and y.dst == x.src for y in tree.links) for x in tree.links)

    gossip = generate("mapping", "thesis", seed=n, topology="gossip", task_nodes=n).mapping.jobs[0]
    g = _graph(n, gossip.links)
    assert all(g.out_degree(i) == 2 for i in range(n))

    rnd = generate("mapping", "thesis", seed=n, topology="random", task_nodes=n).mapping.jobs[0]
    assert nx.is_weakly_connected(_graph(n, rnd.links))
    assert not any((y.src, y.dst) == (x.dst, x.src) for x in rnd.links for y in rnd.links)  # one direction


def test_thesis_jobs_fit_the_network():
    from edgebench.instances.generators.mapping import certify_job

    for seed in range(10):
        inst = generate("mapping", "thesis-queue", seed=seed, jobs=5, task_nodes=8)
        m = inst.mapping
        for job in m.jobs:
            where = certify_job(m, job.model_dump(mode="json"))
            assert where is not None and len(where) == 8


def test_thesis_queue_facts():
    m = generate("mapping", "thesis-queue", seed=0).mapping
    assert len(m.jobs) == 20 and len(m.nodes) == 10
    arrivals = [j.arrival for j in m.jobs]
    assert arrivals == sorted(arrivals) and arrivals[0] > 0
    assert 20 / arrivals[-1] == pytest.approx(0.5, rel=0.6)
    assert all(j.duration > 0 and j.priority in (0, 1, 2) for j in m.jobs)
    assert all(3 <= len(j.tasks) <= 8 for j in m.jobs)
    topologies = {j.name.split("(")[1].split(",")[0] for j in m.jobs}
    assert len(topologies) >= 3
    fixed = generate("mapping", "thesis-queue", seed=0, jobs=5, topology="ring").mapping
    assert all("(ring," in j.name for j in fixed.jobs)


# ---------------------------------------------------------------------------------------
# Offloading facts
# ---------------------------------------------------------------------------------------


def test_heft_random_facts():
    for seed in range(5):
        inst = generate("offloading", "heft-random", seed=seed)
        o = inst.offloading
        (wf,) = o.workflows
        assert len(wf.tasks) == 20 and len(o.servers) == 3
        assert wf.exec_times is not None and len(wf.exec_times) == 20
        assert all(len(row) == 3 for row in wf.exec_times)
        for t, row in enumerate(wf.exec_times):
            w = wf.tasks[t].functions[0].exec_time
            assert 0 <= w <= 40
            for x in row:
                assert w * 0.75 - 1e-3 <= x <= w * 1.25 + 1e-3  # beta = 0.5
        assert all(e.cost is not None and 0 <= e.cost <= 40 for e in wf.edges)
        assert nx.is_directed_acyclic_graph(nx.DiGraph([(e.src, e.dst) for e in wf.edges]))
        assert all((s.cpu, s.mem, s.is_cloud) == (1.0, 1.0, False) for s in o.servers)
        assert all(f.cpu == 1 and f.mem == 1 for t in wf.tasks for f in t.functions)
        assert all(o.distance[i][j] == (0.0 if i == j else 1.0) for i in range(3) for j in range(3))
        assert o.bandwidth == 1.0 and wf.arrival == 0.0 and wf.source == 0
        # execution time on server s is the exec_times entry
        assert semantics.exec_time(o, 0, 5, 2) == wf.exec_times[5][2]
    # ccr: mean communication cost ~ ccr x mean computation cost
    costs = [e.cost for s in range(20) for e in generate("offloading", "heft-random", seed=s, ccr=0.5)
             .offloading.workflows[0].edges]
    assert np.mean(costs) == pytest.approx(0.5 * 20, rel=0.2)


def test_daggen_facts():
    o = generate("offloading", "daggen", seed=3).offloading
    (wf,) = o.workflows
    assert len(wf.tasks) == 20
    edge = [s for s in o.servers if not s.is_cloud]
    assert len(edge) == 4 and o.servers[-1].is_cloud and o.servers[-1].speed == 4.0
    assert all(4 <= s.cpu <= 8 and 4 <= s.mem <= 8 and 1 <= s.speed <= 2 for s in edge)
    assert all(o.distance[i][4] == 10.0 == o.distance[4][i] for i in range(4))
    assert all(o.distance[i][j] <= math.sqrt(2) for i in range(4) for j in range(4))
    assert o.bandwidth == 100.0 and o.image_pull_delay == 0.5
    for t in wf.tasks:
        (f,) = t.functions
        assert f.image in {"img0", "img1", "img2", "img3"} and f.cpu in (1.0, 2.0) and 0.5 <= f.mem <= 1.0
        assert 0.25 - 1e-9 <= f.exec_time <= 2.5 + 1e-9  # 5..50 MB x 0.05 s/MB
    assert nx.is_directed_acyclic_graph(nx.DiGraph([(e.src, e.dst) for e in wf.edges]))
    entry = {t for t in range(20)} - {e.dst for e in wf.edges}
    assert all(wf.tasks[t].input_data > 0 for t in entry)
    for e in wf.edges:  # ccr 0.4: transfer at distance 1 = 0.4 x source exec time
        src_exec = wf.tasks[e.src].functions[0].exec_time
        assert e.data / o.bandwidth == pytest.approx(0.4 * src_exec, abs=1e-3)


def test_edge_poisson_facts():
    o = generate("offloading", "edge-poisson", seed=0).offloading
    assert len(o.workflows) == 5
    arrivals = [w.arrival for w in o.workflows]
    assert arrivals == sorted(arrivals) and arrivals[0] > 0
    assert all(not o.servers[w.source].is_cloud for w in o.workflows)
    assert all(len(w.tasks) == 10 for w in o.workflows)


# ---------------------------------------------------------------------------------------
# The patent's worked example
# ---------------------------------------------------------------------------------------


def test_patent_example_facts():
    o = generate("offloading", "patent-example").offloading
    assert [(s.cpu, s.mem, s.images) for s in o.servers] == [(6, 3, ("a",)), (3, 2, ("b",)), (2, 1, ("a",))]
    assert not any(s.is_cloud for s in o.servers)
    assert o.distance == ((0, 1, 1.2), (1, 0, 0.2), (1.2, 0.2, 0))
    (wf,) = o.workflows
    assert [t.functions[0].image for t in wf.tasks] == ["a", "b", "a", "b", "a", "b"]
    assert {(e.src + 1, e.dst + 1) for e in wf.edges} == {(1, 2), (1, 3), (2, 4), (2, 5), (3, 5), (4, 6), (5, 6)}
    assert all(semantics.task_demand(o, 0, t) == (2, 1) for t in range(6))  # es1 (6, 3) -> (4, 2)


def test_patent_example_published_placement_completes_at_2_8():
    o = generate("offloading", "patent-example").offloading
    res = list_schedule(o, PUBLISHED_PLACEMENT)
    assert res["makespan"] == pytest.approx(PUBLISHED_COMPLETION, abs=1e-9)
    assert res["start"][0] == 0.0


def test_patent_example_brute_force_optimality():
    o = generate("offloading", "patent-example").offloading
    all_makespans = brute_force(o)
    assert len(all_makespans) == 3 ** 6
    best = min(all_makespans.values())
    assert best == pytest.approx(2.8, abs=1e-9)
    assert all_makespans[PUBLISHED_PLACEMENT] == pytest.approx(2.8, abs=1e-9)
    # the published placement is the unique optimum, by a clear margin
    others = [v for k, v in all_makespans.items() if k != PUBLISHED_PLACEMENT]
    assert min(others) >= 2.8 + 0.5


def test_patent_example_referee_agrees():
    referee = pytest.importorskip("edgebench.referee")
    if not hasattr(referee, "evaluate_decisions"):
        pytest.skip("the referee is not available yet")
    inst = generate("offloading", "patent-example")
    res = list_schedule(inst.offloading, PUBLISHED_PLACEMENT)
    decisions = {"workflows": [{"tasks": [{"server": s, "start": st}
                                          for s, st in zip(PUBLISHED_PLACEMENT, res["start"])]}]}
    ev = referee.evaluate_decisions(inst, decisions)
    assert ev.feasible, ev.violations
    assert ev.primary_value == pytest.approx(2.8, abs=1e-6)
