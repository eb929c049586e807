"""Moves of the adversarial search: every proposal validates, keeps the size and id, and stays
inside the documented realistic ranges (edgebench.adversary.moves.RANGES)."""

from __future__ import annotations

import numpy as np
import pytest

from edgebench.adversary.moves import RANGES, propose
from edgebench.instances.generators import generate

STARTS = [("placement", "synthetic-3", {"num_tasks": 8}), ("offloading", "heft-random", {"tasks": 10}),
          ("offloading", "daggen", {"tasks": 8}), ("mapping", "thesis", {"nodes": 10})]


def _size(inst):
    p = inst.payload
    if inst.family == "placement":
        return len(p.tasks), len(p.clusters)
    if inst.family == "offloading":
        return sum(len(w.tasks) for w in p.workflows), len(p.servers)
    return len(p.nodes), sum(len(j.tasks) for j in p.jobs)


def _within(inst, start):
    R = RANGES[inst.family]
    p = inst.payload
    if inst.family == "placement":
        assert all(0 <= t.arrival <= R["arrival_per_task"] * len(p.tasks) or t in start.placement.tasks
                   for t in p.tasks)
        assert all(c.capacity.cpu in R["capacities"] or c in start.placement.clusters for c in p.clusters)
        assert all(1 <= len(t.eligible) <= R["max_eligible"] for t in p.tasks)
    elif inst.family == "offloading":
        for wf in p.workflows:
            if wf.exec_times is not None:
                lo, hi = R["exec_time"]
                assert all(lo <= x <= hi for row in wf.exec_times for x in row)
                assert all(e.cost is None or R["edge_cost"][0] <= e.cost <= R["edge_cost"][1] for e in wf.edges)
    else:
        tol = 1e-3
        for nd in p.nodes:
            assert R["node_cpu"][0] - tol <= nd.cpu <= R["node_cpu"][1] + tol
            assert R["background"][0] - tol <= nd.bg_cpu / nd.cpu <= R["background"][1] + tol
        for j in p.jobs:
            assert all(R["task_cpu"][0] - tol <= t.cpu <= R["task_cpu"][1] + tol for t in j.tasks)
            assert all(R["bw_min"][0] - tol <= k.bw_min <= k.bw_max for k in j.links)
        assert all(R["link_bw"][0] - tol <= k.bandwidth <= R["link_bw"][1] + tol for k in p.links)


@pytest.mark.parametrize("family,preset,params", STARTS, ids=[f"{f}-{p}" for f, p, _ in STARTS])
def test_moves_validate_keep_size_and_stay_in_range(family, preset, params):
    start = generate(family, preset, seed=3, **params)
    rng = np.random.default_rng(0)
    inst, changed = start, 0
    for _ in range(40):
        new, what = propose(inst, rng, moves=2)
        assert new.id == start.id and _size(new) == _size(start)
        changed += new.content_hash() != inst.content_hash()
        inst = new
        _within(inst, start)
    assert changed >= 30  # moves do change the instance


def test_proposals_are_seeded():
    start = generate("offloading", "heft-random", seed=0, tasks=8)
    a = [propose(start, np.random.default_rng(5))[0].content_hash() for _ in range(2)]
    b = propose(start, np.random.default_rng(6))[0].content_hash()
    assert a[0] == a[1] and len({a[0], b, start.content_hash()}) == 3
