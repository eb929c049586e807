"""Speed of ``placement-lahc``'s decoder (issue 45, session 31): one serial-schedule decode of a
shipped best known's order and options (:func:`placement.search.sgs.decode`, numba) beside the same
rule written with the list scheduler's profile (:meth:`placement.problem.Profile.earliest`), and a
fixed number of late-acceptance moves (:func:`placement.search.lahc.improve`). Both decoders run on
the same order in one session, so their ratio is the figure to read::

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python -m pytest bench/bench_placement_lahc.py \\
        --benchmark-enable -q --benchmark-json runs/bench_placement_lahc.json
"""

from __future__ import annotations

import pytest

from edgebench.formulations.placement.problem import Profile, prepare
from edgebench.formulations.placement.search import lahc as LA
from edgebench.formulations.placement.search.lns import to_schedule
from edgebench.formulations.placement.search.sgs import Tables
from edgebench.instances import sets
from edgebench.instances.io import content_hash, load_solution

CASES = [("placement-synthetic-3-multi-v2", 0), ("placement-hetero-6-v2", 0), ("placement-testbed-v2", 0)]


def _start(name, index):
    inst = sets.load_set(name)[index]
    data = prepare(inst.payload)
    best = load_solution(sets.best_known_solution(content_hash(inst)), inst).placement
    tables = Tables(data)
    order, choice = tables.encode(to_schedule(inst.payload, data, best))
    return inst, data, tables, order, choice


def _profile_decode(data, order, choice):
    prof = Profile(data)
    total = 0
    for j in order:
        o = data.options[j][choice[j]]
        s = prof.earliest(o, data.arrivals[j])
        prof.place(o, s)
        total += s + o.steps - data.arrivals[j]
    return total


@pytest.mark.parametrize("decoder", ["kernel", "profile"])
@pytest.mark.parametrize("name,index", CASES)
def test_decode(benchmark, name, index, decoder):
    inst, data, tables, order, choice = _start(name, index)
    if decoder == "kernel":
        value = benchmark(tables.decode, order, choice)
    else:
        value = benchmark(_profile_decode, data, order, choice)
    benchmark.extra_info.update({"instance": f"{name}[{index}]", "tasks": data.num_tasks, "value": int(value)})
    assert value == tables.decode(order, choice)


@pytest.mark.parametrize("name,index", CASES)
def test_moves(benchmark, name, index):
    """10,000 late-acceptance moves from the best known's fixed schedule (seed 0)."""
    inst, data, tables, order, choice = _start(name, index)
    start = tables.decode(order, choice)
    out = {}

    def run():
        out.update(LA.improve(tables, order, choice, seed=0, iterations=10_000, deadline=None)[2])

    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=1)
    benchmark.extra_info.update({"instance": f"{name}[{index}]", "start": int(start), "best": int(out["value"])})
    assert out["value"] <= start


def _shaped(name, index):
    """The best known's own histories as shapes, with every two-piece shape (pieces = 2)."""
    import time

    inst = sets.load_set(name)[index]
    data = prepare(inst.payload)
    best = load_solution(sets.best_known_solution(content_hash(inst)), inst).placement
    t0 = time.process_time()
    tables, order, choice = LA.two_piece_start(inst.payload, data, best, to_schedule(inst.payload, data, best))
    return inst, data, tables, order, choice, time.process_time() - t0


@pytest.mark.parametrize("name,index", CASES)
def test_decode_shapes(benchmark, name, index):
    """One decode of the best known itself (its histories as shapes of up to several pieces), to read
    beside ``test_decode[kernel]`` (the fixed version); extra_info: the CPU seconds of listing the
    shapes (shapes.two_piece over every task) and their number."""
    inst, data, tables, order, choice, listing = _shaped(name, index)
    value = benchmark(tables.decode, order, choice)
    benchmark.extra_info.update({"instance": f"{name}[{index}]", "tasks": data.num_tasks, "value": int(value),
                                 "shapes": int(tables.offset[-1]), "listing_cpu_s": round(listing, 2)})


@pytest.mark.parametrize("name,index", CASES)
def test_moves_shapes(benchmark, name, index):
    """10,000 late-acceptance moves with shapes of two pieces from the best known itself (seed 0,
    lift 0.01)."""
    inst, data, tables, order, choice, _ = _shaped(name, index)
    start = tables.decode(order, choice)
    out = {}

    def run():
        out.update(LA.improve(tables, order, choice, seed=0, iterations=10_000, deadline=None, lift=0.01)[2])

    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=1)
    benchmark.extra_info.update({"instance": f"{name}[{index}]", "start": int(start), "best": int(out["value"])})
    assert out["value"] <= start
