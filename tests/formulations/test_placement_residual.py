"""The residual start-slot bound of the exact search equals a brute force over every
injective (cluster, step) map, and the exact search's root f with it never exceeds the
brute-force optimum of the referee's problem."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgebench.formulations.placement import enum as E
from edgebench.formulations.placement import exact as X
from edgebench.formulations.placement.bounds.residual import residual_slot_bound

from test_placement_enum import tiny_instances


def brute(N: int, t: int, arrivals, durations) -> int:
    """Every injective map task -> (cluster, step) with steps up to t + max arrival + #tasks."""
    top = max([t, *arrivals]) + len(arrivals)
    best = None
    slots = [[(n, s) for n in row for s in range(max(t, a), top + 1)] for a, row in zip(arrivals, durations)]
    for pick in itertools.product(*slots):
        if len(set(pick)) < len(pick):
            continue
        v = sum(s - a + row[n] for (n, s), a, row in zip(pick, arrivals, durations))
        best = v if best is None or v < best else best
    return best


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 2), st.integers(0, 3), st.lists(st.integers(0, 3), min_size=1, max_size=3), st.data())
def test_residual_slot_bound_is_the_brute_force_minimum(N, t, arrivals, data):
    durations = [data.draw(st.dictionaries(st.integers(0, N - 1), st.integers(1, 4), min_size=1)) for _ in arrivals]
    clusters = [SimpleNamespace() for _ in range(N)]
    assert residual_slot_bound(clusters, t, arrivals, durations) == brute(N, t, arrivals, durations)


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(tiny_instances(max_tasks=3).filter(lambda i: i.placement.variant == "single"))
def test_root_bound_never_exceeds_the_optimum(inst):
    try:
        value, _ = E.optimum(inst, max_states=8_000)
    except E.StateLimitError:
        return
    p = inst.placement
    for reduce in (False, X.lemma_holds(p)):
        m = X.Model(p, reduce, slots=True)
        init = tuple(None for _ in p.tasks)
        assert m.h(0, init) <= value + 1e-9
        # the slot part never loses to the tasks' own bounds
        assert m.h(0, init) >= X.Model(p, reduce, slots=False).h(0, init)
