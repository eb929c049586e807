"""The metaheuristics: the shared framework (budgets, traces, evaluator, parameters), the
mapping random-key problem (vectorised decoder = an independent per-genome sequential
decoder; batch objectives = the referee), GA and PSO on every family (referee-feasible,
same seed -> same output, anytime traces, warm start, time limit) and the 2 % check against
the exact mapping optimum."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from edgebench import registry
from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.generators import generate
from edgebench.referee import evaluate, evaluate_decisions
from edgebench.referee import mapping as ref
from edgebench.solvers import meta_common as mc
from edgebench.solvers.ga import GAParams
from edgebench.solvers.meta_mapping import MappingProblem, bw_fraction
from edgebench.solvers.pso import PSOParams

# ---- framework ----------------------------------------------------------------------------


class Sphere:
    """A toy problem: minimise the distance of the keys to 0.3 (no decoder)."""

    family = "toy"
    sense = "min"
    dim = 4

    def __init__(self) -> None:
        self.calls = 0

    def decode(self, keys):
        return keys

    def evaluate(self, pop):
        self.calls += len(pop)
        return ((pop - 0.3) ** 2).sum(axis=1)

    def encode(self, decisions):
        return None


def test_budget_and_defaults():
    assert mc.make_budget(None, None) == mc.Budget(None, mc.DEFAULT_EVALUATIONS)
    assert mc.make_budget(2.0, None) == mc.Budget(2.0, None)
    assert mc.make_budget(2.0, 50) == mc.Budget(2.0, 50)
    for bad in ({"time_limit": 0}, {"time_limit": -1.0}, {"max_evaluations": 0}, {"max_evaluations": 1.5},
                {"time_limit": None, "max_evaluations": None}, {"time_limit": float("nan")}):
        with pytest.raises(InputError):
            mc.Budget(**bad)


def test_keys_round_trip():
    n = np.array([1, 2, 3, 7, 10])
    for k in range(10):
        idx = np.minimum(k, n - 1)
        assert (mc.key_to_index(mc.index_to_key(idx, n), n) == idx).all()
    keys = mc.clip_keys(np.array([-0.5, 0.2, 1.0, 3.0, np.nan, np.inf]))
    assert (keys >= 0).all() and (keys < 1).all() and keys[1] == 0.2
    assert (mc.key_to_index(np.array([0.0, mc.KEY_MAX]), 4) == [0, 3]).all()


def test_evaluator_budget_trace_and_best():
    pr = Sphere()
    ev = mc.Evaluator(pr, mc.Budget(None, 25))
    rng = np.random.default_rng(0)
    for _ in range(3):
        vals = ev(rng.random((10, 4)))
    assert ev.evaluations == 25 and pr.calls == 25 and ev.exhausted()
    assert np.isinf(vals[5:]).all() and np.isfinite(vals[:5]).all()
    pts = ev.trace.as_list()
    assert pts and all(a[1] < b[1] and b[2] < a[2] and a[0] <= b[0] for a, b in zip(pts, pts[1:]))
    assert pts[-1][2] == ev.best_value == pytest.approx(float(((ev.best_keys - 0.3) ** 2).sum()))
    assert ev.trace.best_at(evaluations=pts[0][1]) == pts[0][2]
    assert ev.trace.best_at(evaluations=0) is None


def test_ga_and_pso_minimise_a_toy_problem():
    from edgebench.solvers import ga, pso

    for mod, params in ((ga, GAParams(population=20)), (pso, PSOParams(particles=20))):
        ev, gens = mod.run(Sphere(), params, mc.Budget(None, 2000), seed=0)
        assert ev.evaluations == 2000 and gens > 50
        assert ev.best_value < 1e-3, mod.__name__


@pytest.mark.parametrize("solver,bad", [
    ("ga", {"population": 1}), ("ga", {"population": 2.5}), ("ga", {"elite": 100}), ("ga", {"crossover": 1.5}),
    ("ga", {"mutation": -0.1}), ("ga", {"tournament": 0}), ("ga", {"max_evaluations": 0}),
    ("ga", {"immigrants": 0.9}), ("ga", {"stall": True}), ("ga", {"warm_start": 3}), ("ga", {"colour": "red"}),
    ("pso", {"particles": 0}), ("pso", {"inertia": 2.0}), ("pso", {"topology": "star"}), ("pso", {"vmax": 0}),
    ("pso", {"neighbours": 0}), ("pso", {"restart": 0}), ("pso", {"swarm": 3}),
])
def test_bad_parameters_name_the_parameter(solver, bad):
    inst = generate("mapping", "thesis", seed=0, task_nodes=3)
    with pytest.raises(InputError) as exc:
        registry.solve(inst, solver, **bad)
    assert exc.value.field == f"params.{next(iter(bad))}"


def test_bad_seed_and_time_limit():
    inst = generate("mapping", "thesis", seed=0, task_nodes=3)
    with pytest.raises(InputError):
        registry.solve(inst, "ga", seed=-1)
    with pytest.raises(InputError):
        registry.solve(inst, "pso", time_limit=0)
    with pytest.raises(InputError):
        registry.solve(inst, "ga", warm_start="no-such-solver")
    with pytest.raises(InputError):
        registry.solve(inst, "ga", warm_start="heft")  # an offloading heuristic


def test_registry_entries():
    for name in ("ga", "pso"):
        info = registry.get(name)
        assert info.kind == "metaheuristic" and set(info.families) == {"placement", "mapping", "offloading"}
        assert "max_evaluations" in info.params and "warm_start" in info.params


# ---- mapping: decoder and batch objectives --------------------------------------------------


def chain_instance():
    """A one-way chain 0 -> 1 -> 2 -> 3 (not every node reaches every other) where each node
    holds one task node: the decoder must respect reachability."""
    nodes = [{"cpu": 100, "ram": 100, "bg_cpu": 10 * i, "bg_ram": 5} for i in range(4)]
    links = [{"src": i, "dst": i + 1, "bandwidth": 60} for i in range(3)]
    tasks = [{"cpu": 50, "ram": 20}, {"cpu": 40, "ram": 30}, {"cpu": 45, "ram": 10}]
    tl = [{"src": 0, "dst": 1, "bw_min": 10, "bw_max": 40}, {"src": 1, "dst": 2, "bw_min": 20, "bw_max": 50},
          {"src": 0, "dst": 2, "bw_min": 5, "bw_max": 30}]
    return io.instance_from_dict({"format_version": 1, "family": "mapping", "id": "chain", "mapping": {
        "nodes": nodes, "links": links, "jobs": [{"tasks": tasks, "links": tl}]}})


def two_job_instance():
    """Two overlapping jobs and a third that starts after the first ends (three segments)."""
    inst = generate("mapping", "thesis", seed=4, task_nodes=4)
    d = inst.model_dump(mode="json")
    job = d["mapping"]["jobs"][0]
    d["mapping"]["jobs"] = [dict(job, arrival=0.0, duration=2.0), dict(job, arrival=1.0, duration=2.0),
                            dict(job, arrival=2.5, duration=1.0)]
    d["id"] = "three-jobs"
    return io.instance_from_dict(d)


MAPPING_CASES = {
    "thesis-8": lambda: generate("mapping", "thesis", seed=1, task_nodes=8),
    "thesis-tight": lambda: generate("mapping", "thesis", seed=5, task_nodes=8, link_bw_range=[50, 120],
                                     link_prob=0.15),
    "queue": lambda: generate("mapping", "thesis-queue", seed=2, jobs=4),
    "chain": chain_instance,
    "three-jobs": two_job_instance,
}


def sequential_decode(pr: MappingProblem, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The decoder as documented, one genome at a time in plain Python (the test's oracle)."""
    fl, pre = pr.fl, pr.pre
    P = pr.P
    active = fl.active > 0
    free_cpu = np.tile(pre.free_cpu, (len(active), 1))
    free_ram = np.tile(pre.free_ram, (len(active), 1))
    reach = [[pre.routes[a][b] is not None for b in range(P)] for a in range(P)]
    nodes = [0] * fl.N
    for n in range(fl.N):
        segs = active[:, fl.task_job[n]]
        c, r = fl.task_cpu[n], fl.task_ram[n]
        fc, fr = free_cpu[segs].min(axis=0), free_ram[segs].min(axis=0)
        cap = [fc[p] - c >= -1e-9 and fr[p] - r >= -1e-9 for p in range(P)]
        ok = []
        for p in range(P):
            good = cap[p]
            for v in range(fl.V):
                s, t = fl.lsrc[v], fl.ldst[v]
                if t == n and s < n:
                    good = good and reach[nodes[s]][p]
                if s == n and t < n:
                    good = good and reach[p][nodes[t]]
            ok.append(good)
        pref = min(int(keys[n] * P), P - 1)
        order = sorted(range(P), key=lambda p: (abs(p - pref), p))
        pick = next((p for p in order if ok[p]), None)
        if pick is None:
            pick = next((p for p in order if cap[p]), None)
        if pick is None:
            pick = int(np.argmax(np.minimum(fc - c, fr - r)))
        nodes[n] = pick
        free_cpu[segs, pick] -= c
        free_ram[segs, pick] -= r
    free_bw = np.tile(pre.bw, (len(active), 1))
    bw = np.zeros(fl.V)
    for v in range(fl.V):
        a, b = nodes[fl.lsrc[v]], nodes[fl.ldst[v]]
        lo, hi = fl.lo[v], fl.hi[v]
        if a == b:
            bw[v] = hi
            continue
        want = lo + float(bw_fraction(np.array(keys[pr.N + v]))) * (hi - lo)
        route = list(pre.routes[a][b] or [])
        segs = active[:, fl.link_job[v]]
        avail = free_bw[np.ix_(segs, route)].min() if route else math.inf
        bw[v] = max(min(want, avail), lo)
        for x in route:
            free_bw[segs, x] -= bw[v]
    return np.array(nodes), bw


def random_population(pr: MappingProblem, n: int, seed: int) -> np.ndarray:
    pop = np.random.default_rng(seed).random((n, pr.dim))
    # a third with spread-out preferred nodes, a third crowded on few nodes
    pop[: n // 3, : pr.N] = (np.arange(pr.N) % pr.P + 0.5) / pr.P
    pop[n // 3: 2 * n // 3, : pr.N] *= 0.3
    return pop


@pytest.mark.parametrize("case", sorted(MAPPING_CASES))
def test_vectorised_decoder_equals_sequential_oracle(case):
    inst = MAPPING_CASES[case]()
    pr = MappingProblem(inst)
    pop = random_population(pr, 60, 1)
    nodes, bw = pr.decode_batch(pop)
    for g in range(len(pop)):
        n_ref, b_ref = sequential_decode(pr, pop[g])
        assert (nodes[g] == n_ref).all(), g
        assert np.allclose(bw[g], b_ref, rtol=0, atol=1e-9), g


@pytest.mark.parametrize("case", sorted(MAPPING_CASES))
def test_batch_objectives_equal_the_referee(case):
    inst = MAPPING_CASES[case]()
    pr = MappingProblem(inst)
    pop = random_population(pr, 60, 2)
    objs = pr.objectives(pop)
    values = pr.evaluate(pop)
    n_feasible = 0
    for g in range(len(pop)):
        ev = evaluate_decisions(inst, pr.decode(pop[g]))
        assert ev.feasible == bool(objs["feasible"][g]), (g, ev.violations[:2])
        n_feasible += ev.feasible
        for k, v in ev.objectives.items():
            assert objs[k][g] == pytest.approx(v, abs=1e-12), (g, k)
        if ev.feasible:
            assert values[g] == pytest.approx(ev.primary_value, abs=1e-12)
        else:
            assert values[g] <= -1.0
    if case != "queue":  # the queue's overlapping jobs rarely fit at their arrivals
        assert n_feasible > 0


def test_batch_objectives_with_given_starts_and_hand_decisions():
    inst = two_job_instance()
    pre = ref.precompute(inst)
    fl = ref.flat(pre)
    rng = np.random.default_rng(3)
    nodes = rng.integers(0, pre.P, (5, fl.N))
    bw = fl.lo + rng.random((5, fl.V)) * (fl.hi - fl.lo) * 1.2  # some out of range
    starts = np.array([0.0, 2.0, 4.5])
    o = ref.batch_objectives(pre, nodes, bw, starts)
    from edgebench.solution import JobDecision, LinkDecision, MappingDecisions

    for g in range(5):
        jobs = []
        for j in range(fl.J):
            nn = nodes[g, fl.job_first[j]:fl.job_first[j + 1]]
            links = []
            for v in range(fl.job_first_link[j], fl.job_first_link[j + 1]):
                a, b = nodes[g, fl.lsrc[v]], nodes[g, fl.ldst[v]]
                links.append(LinkDecision(route=() if a == b else pre.routes[a][b], bandwidth=float(bw[g, v])))
            jobs.append(JobDecision(nodes=tuple(int(x) for x in nn), links=tuple(links), start=float(starts[j])))
        ev = evaluate_decisions(inst, MappingDecisions(jobs=tuple(jobs)))
        assert ev.feasible == bool(o["feasible"][g])
        assert (o["violation"][g] > 0) == (not ev.feasible)
        for k, v in ev.objectives.items():
            assert o[k][g] == pytest.approx(v, abs=1e-12), k
    with pytest.raises(ValueError):
        ref.batch_objectives(pre, nodes[:, :-1], bw)


def test_encode_round_trip():
    inst = generate("mapping", "thesis", seed=3, task_nodes=6)
    pr = MappingProblem(inst)
    for solver in ("random", "greedy-bw", "flexitask"):
        res = registry.solve(inst, solver, seed=0)
        keys = pr.encode(res.solution.mapping)
        assert keys is not None and keys.shape == (pr.dim,)
        back = evaluate_decisions(inst, pr.decode(keys))
        orig = evaluate(inst, res.solution)
        assert back.feasible and back.primary_value == pytest.approx(orig.primary_value, abs=1e-9), solver
        assert pr.decode(keys).jobs[0].nodes == res.solution.mapping.jobs[0].nodes


def test_unfixable_genome_reported_infeasible():
    # every node holds one task node: a genome whose first key prefers the end of the chain
    # cannot be repaired (nothing is reachable from node 3)
    inst = chain_instance()
    pr = MappingProblem(inst)
    keys = np.array([0.9, 0.1, 0.1, 0.5, 0.5, 0.5])
    assert pr.evaluate(keys[None])[0] <= -1.0
    assert not evaluate_decisions(inst, pr.decode(keys)).feasible
    res = registry.solve(inst, "ga", seed=0, max_evaluations=500)
    assert res.status == "feasible" and evaluate(inst, res.solution).feasible


# ---- GA and PSO on every family -----------------------------------------------------------

FAMILY_CASES = {
    "placement": (lambda: generate("placement", "synthetic-3", seed=0, num_tasks=8), 300),
    "mapping": (lambda: generate("mapping", "thesis", seed=0, task_nodes=6), 2000),
    "mapping-jobs": (two_job_instance, 2000),
    "offloading": (lambda: generate("offloading", "heft-random", seed=0, tasks=12), 600),
    "offloading-patent": (lambda: generate("offloading", "patent-example", seed=0), 400),
}


@pytest.mark.parametrize("solver", ["ga", "pso"])
@pytest.mark.parametrize("case", sorted(FAMILY_CASES))
def test_feasible_deterministic_with_trace(solver, case):
    make, evals = FAMILY_CASES[case]
    inst = make()
    r1 = registry.solve(inst, solver, seed=7, max_evaluations=evals)
    r2 = registry.solve(inst, solver, seed=7, max_evaluations=evals)
    assert r1.status == "feasible", r1.stats.get("reason")
    ev = evaluate(inst, r1.solution)
    assert ev.feasible, ev.violations[:3]
    assert r1.solution.objective == ev.primary_value
    # same seed, same output
    assert r1.solution.decisions == r2.solution.decisions
    assert r1.solution.objective == r2.solution.objective
    assert [p[1:] for p in r1.stats["trace"]] == [p[1:] for p in r2.stats["trace"]]
    # the anytime trace: improving, within the budget, ending at the solver's best
    trace = r1.stats["trace"]
    assert r1.stats["evaluations"] == evals and r1.stats["generations"] >= 1
    assert trace and trace[-1][1] <= evals
    sign = -1 if ev.sense == "max" else 1
    assert all(sign * b[2] < sign * a[2] and a[1] < b[1] for a, b in zip(trace, trace[1:]))
    assert trace[-1][2] == pytest.approx(ev.primary_value, rel=1e-9, abs=1e-9)


def test_other_seed_other_run():
    inst = generate("mapping", "thesis", seed=0, task_nodes=6)
    a = registry.solve(inst, "ga", seed=1, max_evaluations=300)
    b = registry.solve(inst, "ga", seed=2, max_evaluations=300)
    assert a.stats["trace"] != b.stats["trace"]


@pytest.mark.parametrize("solver", ["ga", "pso"])
@pytest.mark.parametrize("family,heuristic", [("mapping", "greedy-bw"), ("offloading", "heft"),
                                              ("placement", "optimus")])
def test_warm_start_is_never_worse_than_the_heuristic(solver, family, heuristic):
    inst = {"mapping": lambda: generate("mapping", "thesis", seed=2, task_nodes=7),
            "offloading": lambda: generate("offloading", "heft-random", seed=1, tasks=12),
            "placement": lambda: generate("placement", "synthetic-3", seed=1, num_tasks=8)}[family]()
    h = evaluate(inst, registry.solve(inst, heuristic, seed=0).solution)
    res = registry.solve(inst, solver, seed=0, max_evaluations=200, warm_start=heuristic)
    assert res.stats["warm_start"] == heuristic and res.stats["warm_start_encoded"]
    v = evaluate(inst, res.solution).primary_value
    assert (v >= h.primary_value - 1e-9) if h.sense == "max" else (v <= h.primary_value + 1e-9)


def test_time_limit_stops_the_search():
    inst = generate("mapping", "thesis", seed=0, task_nodes=8)
    for solver in ("ga", "pso"):
        t0 = time.perf_counter()
        res = registry.solve(inst, solver, seed=0, time_limit=0.3)
        assert time.perf_counter() - t0 < 3.0
        assert res.status == "feasible" and res.stats["evaluations"] > 100
        assert res.stats["trace"][-1][0] <= res.runtime


# ---- the 2 % check against the exact optimum ------------------------------------------------


def _exact_available() -> bool:
    try:
        registry.get("mapping-exact")
    except KeyError:
        return False
    return True


@pytest.mark.skipif(not _exact_available(), reason="mapping-exact is not registered")
@pytest.mark.parametrize("task_nodes,seed", [(3, 100), (4, 102), (5, 101), (5, 103)])
def test_within_two_percent_of_the_exact_optimum(task_nodes, seed):
    inst = generate("mapping", "thesis", seed=seed, task_nodes=task_nodes)
    exact = registry.solve(inst, "mapping-exact", time_limit=120)
    assert exact.status == "optimal"
    opt = evaluate(inst, exact.solution).primary_value
    for solver in ("ga", "pso"):
        for s in range(3):
            res = registry.solve(inst, solver, seed=s)  # the default budget
            v = evaluate(inst, res.solution).primary_value
            assert v <= opt + 1e-7, (solver, s)  # never above the proven optimum
            assert (opt - v) / opt <= 0.02, (solver, s, v, opt)
