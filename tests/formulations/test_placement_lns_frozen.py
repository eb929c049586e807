"""placement-lns with a frozen prefix (``improve(..., frozen=, not_before=)``, the continuation
expert of TapFinger's DAgger, docs/tapfinger.md): the frozen tasks never move, no other task
starts before ``not_before``, the result is a feasible fixed-allocation schedule by the referee
and never worse than its start; the destroy moves free movable tasks only."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from edgebench.formulations import placement as P
from edgebench.formulations.placement.search import lns as L
from edgebench.formulations.placement.search.neighbourhoods import KINDS, destroy
from edgebench.instances.generators import generate
from edgebench.referee import evaluate_decisions

#: objective values are integers in steps
TOL = 1e-9


def _continuation(seed: int, variant: str, num_tasks: int = 14):
    """(instance, data, start schedule, t, prefix): a list schedule (arrival order, each task at
    its earliest completion), t its median distinct start step, the prefix the tasks it starts
    before t, and a start whose other tasks all start at t or later (the list-scheduling
    completion of the prefix with arrivals moved to t, then each other task delayed by two steps
    where that stays feasible: room for the search to improve)."""
    inst = generate("placement", "synthetic-3", seed=seed, variant=variant, num_tasks=num_tasks)
    data = P.prepare(inst.placement)
    J = data.num_tasks
    first = P.repair_schedule(data, [None] * J)
    times = sorted({s for _, s in first})
    t = times[len(times) // 2]
    prefix = {j for j in range(J) if first[j][1] < t}
    shifted = dataclasses.replace(data, arrivals=[a if j in prefix else max(a, t) for j, a in enumerate(data.arrivals)])
    start = P.repair_schedule(shifted, [first[j] if j in prefix else None for j in range(J)])
    for j in range(J):  # delay the continuation's tasks by two steps where the schedule stays feasible
        if j in prefix:
            continue
        trial = list(start)
        trial[j] = (start[j][0], start[j][1] + 2)
        if not P.schedule_violations(data, trial):
            start = trial
    assert not P.schedule_violations(data, start) and prefix and len(prefix) < J
    return inst, data, start, t, prefix


@pytest.mark.parametrize("variant", ["single", "multi"])
@pytest.mark.parametrize("moves", ["classic", "adaptive"])
def test_frozen_prefix_never_moves_and_nothing_else_starts_before_t(variant, moves):
    """On three 14-task instances per variant: every task of the prefix keeps its (cluster,
    start, cpu, gpu) in the referee's decisions, every other task starts at t or later, the
    referee finds the result feasible with the value the search reports, and that value is at
    most the start's (and below it on at least one instance: the search does improve)."""
    better = 0
    for seed in range(3):
        inst, data, start, t, prefix = _continuation(seed, variant)
        v0 = P.schedule_objective(data, start)
        sched, info = L.improve(data, start, seed=seed, deadline=None, iterations=8, block=4, moves=moves,
                                types=[x.type for x in inst.placement.tasks], frozen=prefix, not_before=t)
        dec = P.to_decisions(sched)
        ev = evaluate_decisions(inst, dec)
        assert ev.feasible, ev.violations[:3]
        for j, d in enumerate(dec.tasks):
            o, s = start[j]
            if j in prefix:
                assert (d.cluster, d.start, d.cpu, d.gpu) == (o.cluster, s, o.cpu, o.gpu), j
            else:
                assert d.start >= t, (j, d.start, t)
            assert not d.history
        value = float(ev.objectives["total_completion_time"])
        assert value == pytest.approx(info["lns_end"], abs=TOL) and info["lns_start"] == v0
        assert value <= v0 + TOL
        better += value < v0
    assert better >= 1


def test_everything_frozen_returns_the_start_and_a_start_before_not_before_is_refused():
    inst, data, start, t, prefix = _continuation(0, "single")
    everything = set(range(data.num_tasks))
    sched, info = L.improve(data, start, seed=0, deadline=None, iterations=5, frozen=everything, not_before=t)
    assert sched == start and info["neighbourhoods"] == 0
    with pytest.raises(ValueError, match="before not_before"):
        L.improve(data, start, seed=0, deadline=None, iterations=1, not_before=t)  # the prefix starts before t


@pytest.mark.parametrize("kind", ("classic",) + KINDS)
def test_destroy_moves_free_movable_tasks_only(kind):
    """Every move, with ``movable`` given, frees at most ``block`` tasks (fewer where one cluster
    has fewer), all movable."""
    inst, data, start, t, prefix = _continuation(1, "multi")
    movable = [j for j in range(data.num_tasks) if j not in prefix]
    types = [x.type for x in inst.placement.tasks]
    rng = np.random.default_rng(0)
    for _ in range(20):
        free = (L.neighbourhood(rng, data, start, 4, movable) if kind == "classic"
                else destroy(kind, rng, data, start, 4, types, movable))
        assert 0 < len(free) <= 4 and free <= set(movable)
