"""Late acceptance over serial schedules (formulations/placement/search/lahc.py) and its compiled
decoder (search/sgs.py): the decoder is the list scheduler's earliest-start rule
(:class:`~edgebench.formulations.placement.problem.Profile`) on random orders and options, both
variants, memory included; every decoded schedule is feasible for the referee, which scores it as
the decoder does; the search never returns worse than its start, never beats the referee's
brute-force optimum on tiny instances and reaches the fixed-allocation optimum there; the same seed
gives the same schedule; bad parameters are clear InputErrors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from edgebench import registry
from edgebench.errors import InputError
from edgebench.formulations.placement import enum as E
from edgebench.formulations.placement.problem import (
    Profile, prepare, schedule_objective, schedule_violations, to_decisions,
)
from edgebench.formulations.placement.search import lahc as LA
from edgebench.formulations.placement.search import shapes as SH
from edgebench.formulations.placement.search.sgs import Tables
from edgebench.instances.generators.placement import generate_placement
from edgebench.instances.io import load_instance
from edgebench.referee.placement import evaluate
from test_placement_enum import assert_between_optimum_and_fixed_optimum, tiny_instances

TOL = 1e-6
ALIBABA = "instances/data/placement-alibaba-v2/placement-alibaba-c3-s3.json.gz"  # memory capacities
SYN3_MULTI = "instances/data/placement-synthetic-3-multi-v2/placement-synthetic-3-s1-17330a79.json.gz"


def _reference_decode(data, order, choice):
    """The serial rule written with the list scheduler's own profile (problem.Profile)."""
    prof = Profile(data)
    out = [None] * data.num_tasks
    for j in order:
        o = data.options[j][choice[j]]
        s = prof.earliest(o, data.arrivals[j])
        prof.place(o, s)
        out[j] = (o, s)
    return out


def _instances():
    yield generate_placement("synthetic-3", seed=1, num_tasks=24, variant="single")
    yield generate_placement("synthetic-3", seed=2, num_tasks=24, variant="multi")
    yield generate_placement("hetero-6", seed=3, num_tasks=30, variant="multi")
    yield load_instance(ALIBABA)


@pytest.mark.parametrize("inst", list(_instances()), ids=["syn3-single", "syn3-multi", "hetero6-multi", "alibaba"])
def test_decoder_is_the_list_schedulers_rule_and_the_referee_agrees(inst):
    data = prepare(inst.payload)
    tables = Tables(data)
    rng = np.random.default_rng(0)
    counts = np.diff(tables.offset)
    for _ in range(8):
        order = rng.permutation(data.num_tasks).astype(np.int64)
        choice = np.array([rng.integers(c) for c in counts], dtype=np.int64)
        value = tables.decode(order, choice)
        ref = _reference_decode(data, order, choice)
        assert tables.start.tolist() == [s for _, s in ref]
        assert value == schedule_objective(data, ref)
        sched = tables.schedule(order, choice)
        assert sched == ref
        assert schedule_violations(data, sched) == []
        ev = evaluate(inst, to_decisions(sched))
        assert ev.feasible, ev.violations[:3]
        assert ev.primary_value == pytest.approx(value, abs=TOL)
    assert not tables.used.any() and not tables.starts.any()  # the workspace is left empty


def test_encode_then_decode_gives_back_a_schedule_no_worse():
    """A fixed schedule's tasks in start order, each with its option: every task starts no later
    than it did (the serial rule starts each at its earliest fit beside the earlier ones)."""
    inst = load_instance(SYN3_MULTI)
    data = prepare(inst.payload)
    tables = Tables(data)
    order, choice = tables.encode(_reference_decode(data, np.arange(data.num_tasks)[::-1],
                                                    np.zeros(data.num_tasks, dtype=np.int64)))
    before = _reference_decode(data, order, choice)
    tables.decode(order, choice)
    assert all(int(tables.start[j]) <= s for j, (_, s) in enumerate(before))


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances(max_tasks=3))
def test_on_tiny_instances_it_reaches_the_fixed_allocation_optimum(inst):
    """Never below the referee's brute-force optimum (it is a referee-feasible schedule), and equal
    to the fixed-allocation restriction's optimum (placement-milp, solved to optimality): the
    serial schedules of the dominant options hold an optimal fixed-allocation schedule."""
    assert_between_optimum_and_fixed_optimum(
        inst, lambda: registry.solve(inst, LA.SOLVER_NAME, seed=0, iterations=3000, history=50, window=3))


def test_never_worse_than_its_start_and_same_seed_same_schedule():
    inst = load_instance(SYN3_MULTI)
    runs = [registry.solve(inst, LA.SOLVER_NAME, seed=7, iterations=4000) for _ in range(2)]
    other = registry.solve(inst, LA.SOLVER_NAME, seed=8, iterations=4000)
    for r in runs + [other]:
        ev = evaluate(inst, r.solution.placement)
        assert ev.feasible and r.solution.objective == pytest.approx(ev.primary_value, abs=TOL)
        assert ev.primary_value <= r.stats["start"]["value"] + TOL
    assert runs[0].solution.placement == runs[1].solution.placement
    assert runs[0].stats["iterations"] == runs[1].stats["iterations"] == 4000
    # from the sjf / optimus start the queue moves pay: it improves
    assert runs[0].solution.objective < runs[0].stats["start"]["value"] - TOL
    assert runs[0].stats["message"].startswith("4000 moves")


def test_improve_keeps_the_best_and_the_late_list_accepts_worse():
    inst = load_instance(SYN3_MULTI)
    data = prepare(inst.payload)
    tables = Tables(data)
    order = np.arange(data.num_tasks, dtype=np.int64)
    choice = np.zeros(data.num_tasks, dtype=np.int64)
    start = tables.decode(order, choice)
    best_order, best_choice, info = LA.improve(tables, order, choice, seed=0, iterations=3000, deadline=None,
                                               history=200, window=10)
    assert tables.decode(best_order, best_choice) == info["value"] <= start
    assert info["decoded_start"] == start and info["iterations"] == 3000
    assert [v for _, _, v in info["trace"]] == sorted((v for _, _, v in info["trace"]), reverse=True)
    assert sum(info["moves"].values()) == info["accepted"]
    assert (order == np.arange(data.num_tasks)).all()  # the caller's arrays are not touched


@pytest.mark.parametrize("params, field", [({"history": 0}, "history"), ({"window": 0}, "window"),
                                           ({"iterations": -1}, "iterations"), ({"warm_start": "nope.json"}, None),
                                           ({"moves": 3}, None)])
def test_bad_parameters_are_input_errors(params, field):
    inst = generate_placement("synthetic-3", seed=0, num_tasks=6)
    with pytest.raises(InputError) as err:
        registry.solve(inst, LA.SOLVER_NAME, **params)
    if field:
        assert field in str(err.value)


@pytest.mark.parametrize("variant", ["multi", "single"])
def test_reallocating_moves_after_the_search_are_kept_only_when_the_referee_agrees(variant):
    """The best fixed schedule, then placement-lns's grow / early moves: the result is the referee's
    value of the better of the two, and on these generated instances the moves save steps
    (hetero-6, 40 tasks, seed 3: 163 -> 154 multi, 187 -> 181 single, 3,000 moves of seed 0)."""
    inst = generate_placement("hetero-6", seed=3, num_tasks=40, variant=variant)
    r = registry.solve(inst, LA.SOLVER_NAME, seed=0, iterations=3000)
    ev = evaluate(inst, r.solution.placement)
    assert ev.feasible and r.solution.objective == pytest.approx(ev.primary_value, abs=TOL)
    assert r.stats["grown_value"] == pytest.approx(ev.primary_value, abs=TOL)
    assert ev.primary_value < r.stats["value"] - 0.5
    assert any(d.history for d in r.solution.placement.tasks)  # some task re-allocates
    assert "re-allocating moves" in r.stats["message"]


# ---- shapes of several pieces (pieces = 2; a warm start's own histories) ----------------------------


def _random_shape(rng, payload, data, j):
    """A referee history of task j of one to three pieces (a pause possible in the middle) on one of
    its clusters, as a shape through the referee's simulation (shapes.of_decision)."""
    from edgebench.solution import AllocationChange, PlacementDecision

    opts = data.options[j]
    a = opts[rng.integers(len(opts))]
    same = [o for o in opts if o.cluster == a.cluster]
    changes, step = [(0, a.cpu, a.gpu)], 0
    for _ in range(int(rng.integers(0, 3))):
        step += int(rng.integers(1, 4))
        b = (0, 0) if rng.random() < 0.25 else (lambda o: (o.cpu, o.gpu))(same[rng.integers(len(same))])
        if b != changes[-1][1:]:
            changes.append((step, *b))
    if changes[-1][1:] == (0, 0):
        changes.append((step + 1, a.cpu, a.gpu))
    d = PlacementDecision(cluster=a.cluster, start=5, history=tuple(AllocationChange(step=5 + r, cpu=c, gpu=g)
                                                                    for r, c, g in changes))
    return SH.of_decision(payload, data, j, d)


def _reference_shape_decode(tables, order, choice):
    """The serial rule with every start tried in turn (no jumps): each shape at the first step
    >= arrival at which each of its pieces fits beside the shapes before it (and, single, no
    earlier first start on its cluster in that step)."""
    data = tables.data
    used = np.zeros_like(tables.used)
    starts = np.zeros_like(tables.starts)
    out = [0] * data.num_tasks
    for j in order:
        sh = tables.shapes[j][choice[j]]
        n = sh.cluster

        def amounts(s):
            for t in range(s, s + sh.steps):
                r, c, g = [p for p in sh.pieces if p[0] <= t - s][-1]
                yield t, np.array([c, g, sh.memory if (c > 0 or g > 0) else 0])

        s = data.arrivals[j]
        while (data.single and starts[n, s]) or any((used[n, :, t] + a > tables.cap[n]).any() for t, a in amounts(s)):
            s += 1
        for t, a in amounts(s):
            used[n, :, t] += a
        starts[n, s] += 1
        out[j] = s
    return out


@pytest.mark.parametrize("inst", list(_instances()), ids=["syn3-single", "syn3-multi", "hetero6-multi", "alibaba"])
def test_shapes_of_several_pieces_decode_by_the_serial_rule_and_the_referee_agrees(inst):
    """Random histories of one to three pieces (pauses, shrinking and growing ones) as shapes: the
    compiled decoder's starts are those of trying every start in turn (its jumps skip no start
    that fits), each shape's steps are the referee's, the decisions are feasible and the value is
    the referee's; the workspace is left empty."""
    payload = inst.payload
    data = prepare(payload)
    rng = np.random.default_rng(1)
    extra = [[s for s in (_random_shape(rng, payload, data, j) for _ in range(4)) if s is not None]
             for j in range(data.num_tasks)]
    tables = Tables(data, extra)
    assert any(len(sh.pieces) > 1 for shs in extra for sh in shs) and not tables.mono.all()
    counts = np.diff(tables.offset)
    for _ in range(6):
        order = rng.permutation(data.num_tasks).astype(np.int64)
        choice = np.array([rng.integers(c) for c in counts], dtype=np.int64)
        value = tables.decode(order, choice)
        assert tables.start.tolist() == _reference_shape_decode(tables, order, choice)
        ev = evaluate(inst, tables.decisions(order, choice))
        assert ev.feasible, ev.violations[:3]
        assert ev.primary_value == pytest.approx(value, abs=TOL)
    assert not tables.used.any() and not tables.starts.any()


@pytest.mark.parametrize("preset, variant", [("synthetic-3", "single"), ("hetero-6", "multi")])
def test_two_piece_shapes_run_as_the_step_rule_says(preset, variant):
    """Every generated two-piece shape's steps are the referee's simulation of that history
    (switching loss on the change step; hetero-6 with noise), and a fixed option is one piece."""
    from edgebench.referee.placement import task_finish

    inst = generate_placement(preset, seed=4, num_tasks=8, variant=variant, noise=0.1)
    payload = inst.payload
    data = prepare(payload)
    seen = 0
    for j in range(data.num_tasks):
        for sh in SH.two_piece(payload, data, j):
            (_, c, g), (k, c2, g2) = sh.pieces
            assert (c, g) != (c2, g2) and 0 < k < sh.steps
            assert task_finish(payload, j, 3, [(3, c, g), (3 + k, c2, g2)]) == 3 + sh.steps
            seen += 1
        assert SH.Shape.of(data.options[j][0]).pieces == ((0, data.options[j][0].cpu, data.options[j][0].gpu),)
    assert seen > 50


def test_a_best_known_with_reallocations_is_its_own_start():
    """pieces = 2 encodes the warm start's histories as they are: testbed-v2 s0's best known of
    sessions 29-33 (re-allocations, two tasks with two changes; kept in tests/data, as the
    manifest's best known moves on) decodes, in start order, to itself (1595); its
    fixed-allocation version decodes to 2712."""
    inst = load_instance("instances/data/placement-testbed-v2/placement-testbed-s0.json.gz")
    from edgebench.instances.io import load_solution
    from edgebench.formulations.placement.search.lns import to_schedule

    sol = load_solution(Path(__file__).parent.parent / "data" / "placement" / "testbed-v2-s0-1595.json.gz", inst)
    data = prepare(inst.payload)
    fixed = to_schedule(inst.payload, data, sol.placement)
    tables, order, choice = LA.two_piece_start(inst.payload, data, sol.placement, fixed)
    assert tables.decode(order, choice) == 1595 == evaluate(inst, sol.placement).primary_value

    def timelines(decisions):
        return [(d.cluster, d.start, [(h.step, h.cpu, h.gpu) for h in d.history] if d.history
                 else [(d.start, d.cpu, d.gpu)]) for d in decisions.tasks]

    assert timelines(tables.decisions(order, choice)) == timelines(sol.placement)
    one = Tables(data)
    assert one.decode(*one.encode(fixed)) > 2500


def test_two_pieces_same_seed_same_schedule_and_never_below_the_optimum():
    inst = generate_placement("synthetic-3", seed=2, num_tasks=30, variant="single")
    runs = [registry.solve(inst, LA.SOLVER_NAME, seed=3, iterations=3000, pieces=2, lift=0.01) for _ in range(2)]
    assert runs[0].solution.placement == runs[1].solution.placement
    ev = evaluate(inst, runs[0].solution.placement)
    assert ev.feasible and runs[0].solution.objective == pytest.approx(ev.primary_value, abs=TOL)
    assert ev.primary_value <= runs[0].stats["start"]["value"] + TOL
    assert runs[0].stats["shapes"] > 0


@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances(max_tasks=3))
def test_two_pieces_on_tiny_instances_never_beat_the_brute_force_optimum(inst):
    opt, _ = E.optimum(inst, max_states=200_000)
    r = registry.solve(inst, LA.SOLVER_NAME, seed=0, iterations=2000, history=50, window=3, pieces=2)
    assert r.status == "feasible", r.stats.get("message")
    ev = evaluate(inst, r.solution.placement)
    assert ev.feasible, ev.violations[:3]
    assert r.solution.objective == pytest.approx(ev.primary_value, abs=TOL)
    assert ev.primary_value >= opt - TOL


@pytest.mark.parametrize("params, field", [({"pieces": 3}, "pieces"), ({"pieces": 0}, "pieces"),
                                           ({"lift": -0.1}, "lift"), ({"lift": 2.0}, "lift")])
def test_bad_shape_parameters_are_input_errors(params, field):
    inst = generate_placement("synthetic-3", seed=0, num_tasks=6)
    with pytest.raises(InputError) as err:
        registry.solve(inst, LA.SOLVER_NAME, **params)
    assert field in str(err.value)
