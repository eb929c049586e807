"""The multi-job stream bound (formulations/mapping_stream.py) against brute force: every stream
solution of tiny instances — every node mapping, bandwidths on a grid of levels, start times on
a grid of waits — is scored by the referee's own batch objectives; the bound must be >= the best
feasible one. Proof: docs/formulations/mapping.md, "Multi-job streams"."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edgebench.formulations.mapping_stream import combine, fits_in_total, set_goal, stream_bound
from edgebench.instances.generators import generate
from edgebench.instances.io import instance_from_dict
from edgebench.referee.mapping import batch_objectives, flat, precompute

#: float slack of the comparisons (the bound's own search tolerance is 1e-9)
TOL = 1e-7


def tiny_stream(seed: int, *, jobs: int = 2, nodes: int = 3, tasks: int = 2, durations=None, arrivals=None, **kw):
    kw.setdefault("link_bw_range", [40.0, 150.0])
    inst = generate("mapping", "thesis-queue", seed=seed, jobs=jobs, nodes=nodes, task_nodes=tasks,
                    topology="random", **kw)
    if durations is None and arrivals is None:
        return inst
    d = inst.model_dump(mode="json")
    for j, job in enumerate(d["mapping"]["jobs"]):
        if durations is not None:
            job["duration"] = float(durations[j])
        if arrivals is not None:
            job["arrival"] = float(arrivals[j])
    d["id"] = f"{d['id']}-timed"
    return instance_from_dict(d)


def brute_force(inst, *, levels: int, times) -> float:
    """The best referee composite over all node mappings x bandwidth levels x start times
    (each job: its arrival or any of ``times`` after it); -inf when nothing is feasible."""
    pre = precompute(inst)
    fl = flat(pre)
    nodes = np.array(list(itertools.product(range(pre.P), repeat=fl.N)), dtype=np.int64).reshape(-1, fl.N)
    steps = np.linspace(0.0, 1.0, levels)
    fr = np.array(list(itertools.product(steps, repeat=fl.V))).reshape(-1, fl.V)
    bw = fl.lo[None] + fr * (fl.hi - fl.lo)[None]
    X = np.repeat(nodes, len(bw), axis=0)
    B = np.tile(bw, (len(nodes), 1))
    best = -np.inf
    grid = [sorted({float(a)} | {float(t) for t in times if t > a}) for a in pre.arrivals]
    for starts in itertools.product(*grid):
        o = batch_objectives(pre, X, B, np.array(starts))
        if o["feasible"].any():
            best = max(best, float(o["composite"][o["feasible"]].max()))
    return best


def test_set_goal_shares_the_links():
    inst = tiny_stream(0, jobs=3)
    v = [len(j.links) for j in inst.mapping.jobs]
    g = set_goal(inst, [0, 2])
    pi = (v[0] + v[2]) / sum(v)
    assert (g.const, g.alpha, g.beta) == pytest.approx((1 - pi / 2, pi / 2, 0.5), abs=1e-12)


def test_combine_is_the_serial_mean_without_coactive_sets():
    """Only singletons can be active: the composite is the duration-weighted mean of the jobs'
    segment scores, so the LP bound is the duration-weighted mean of their H."""
    h = {(0,): 0.9, (1,): 0.8, (0, 1): None}
    b, lam = combine([1.0, 3.0], h)
    assert b == pytest.approx((0.9 * 1 + 0.8 * 3) / 4, abs=1e-9)
    assert combine([1.0, 3.0], {(0,): 0.9, (1,): 0.8, (0, 1): 0.95})[0] >= b
    assert combine([1.0, 3.0], {(0,): 0.9, (1,): None, (0, 1): None})[0] == 1.0  # job 1 fits nowhere


def test_total_demand_check():
    inst = tiny_stream(1, jobs=2)
    assert fits_in_total(inst, [0])
    d = inst.model_dump(mode="json")
    for t in d["mapping"]["jobs"][1]["tasks"]:
        t["cpu"] = 1000.0
    d["id"] += "-big"
    assert not fits_in_total(instance_from_dict(d), [1])


@pytest.mark.parametrize("seed", [0, 1])
def test_bound_holds_against_brute_force_three_jobs(seed):
    inst = tiny_stream(seed, jobs=3, nodes=3, tasks=2, durations=[4.0, 2.0, 6.0], arrivals=[0.0, 1.0, 1.5])
    sb = stream_bound(inst, set_time_limit=None)
    # overlaps of several kinds and serial orders (0-1-2 and 0-2-1 among them)
    best = brute_force(inst, levels=2, times=(1.5, 4.0, 6.0, 10.0))
    assert np.isfinite(best)
    assert best <= sb.bound + TOL, (best, sb.bound, sb.set_bounds)
    assert sb.bound < 1.0  # not the trivial bound


@settings(max_examples=100, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), d=st.lists(st.floats(0.5, 20.0), min_size=2, max_size=2),
       a=st.lists(st.floats(0.0, 10.0), min_size=2, max_size=2))
def test_bound_holds_against_brute_force_hypothesis(seed, d, a):
    inst = tiny_stream(seed, jobs=2, nodes=3, tasks=2, durations=d, arrivals=a)
    sb = stream_bound(inst, set_time_limit=None)
    lo, hi = min(a), max(a)
    times = (hi + 0.5 * min(d), lo + d[0], lo + d[1], hi + max(d) + 1.0)  # overlaps and both serial orders
    best = brute_force(inst, levels=2, times=times)
    assert best <= sb.bound + TOL, (best, sb.bound, sb.set_bounds)


def test_seeded_and_budgeted():
    """Same instance, same bound (the searches finish); a spent budget leaves H = 1 (valid)."""
    inst = tiny_stream(3, jobs=3)
    a, b = stream_bound(inst, set_time_limit=None), stream_bound(inst, set_time_limit=None)
    assert a.bound == b.bound and a.set_bounds == b.set_bounds
    c = stream_bound(inst, budget=0.0)
    assert c.bound == 1.0 and all(s.startswith("not searched") or s.startswith("infeasible")
                                  for s in c.set_status.values())


def test_free_routing_gets_the_trivial_set_bound():
    inst = tiny_stream(4, jobs=2, routing="free")
    sb = stream_bound(inst, set_time_limit=None)
    assert sb.bound == 1.0 and all(h in (None, 1.0) for h in sb.set_bounds.values())
