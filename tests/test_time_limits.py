"""Every registered solver honours its time limit (issue 43 item 4, issue 44 case 2).

Each solver of ``edgebench.registry.solvers()`` runs in this process at a 2 s limit on one
shipped instance per family it supports, chosen big enough that an unbounded solver overruns
(the 192-task synthetic-3-v2 placement instance: before the deadlines, ``placement-exact`` took
18-60 s and ``placement-lagrange`` 10-45 s on it at a 5 s limit).  Asserted: the solver's wall
time (``registry.solve`` end to end, the module already imported) is at most LIMIT + MARGIN, the
status is one of the statuses and not ``error``, and decisions, where returned, are judged
feasible by the referee.

MARGIN = 1.5 s: solvers check their deadline between units of work, so they may finish the unit
in hand (one list-schedule pass, one referee evaluation of the result, one HiGHS or CP-SAT call
returning after its own limit, a policy's last step) and then build their result; on the 2-core
test machine shared with other jobs such a unit takes up to about a second.  A solver that
ignores its deadline overruns by far more (tens of seconds on the placement instance).

First-call costs are start-up, outside the solver's clock (issue 43 items 1-3 measure them
separately): the compiled kernels (numba, ``formulations/placement_labelling.py``) are warmed on a
12-task instance, and each solver first runs once on a tiny instance of the family (imports done
inside ``solve``, e.g. torch and a learned policy's checkpoint).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from edgebench import registry
from edgebench.instances.io import load_instance
from edgebench.referee import evaluate
from edgebench.solution import STATUSES

LIMIT = 2.0
MARGIN = 1.5
DATA = Path(__file__).resolve().parents[1] / "instances" / "data"
#: one shipped instance per family, small-to-medium
INSTANCES = {
    "placement": DATA / "placement-synthetic-3-v2" / "placement-synthetic-3-s0.json.gz",
    "mapping": DATA / "mapping-thesis-20-v2" / "mapping-thesis-s0-19aa1891.json",
    "offloading": DATA / "offloading-stg-100-v2" / "offloading-stg-100-rand0000-m16.json.gz",
}
#: tiny instances: each solver's first call (imports inside solve, checkpoints) runs on these
TINY = {
    "placement": DATA / "placement-synthetic-3-v1" / "placement-synthetic-3-s0-7c493faf.json",
    "mapping": DATA / "mapping-thesis-v1" / "mapping-thesis-s0-a224d9fe.json",
    "offloading": DATA / "offloading-patent-example-v1" / "offloading-patent-example-s0.json",
}

#: solvers expected to overrun (xfail, not skipped: run and reported, XPASS when they hold).
#: Empty since the offloading exact models check their deadline while building (issue 43
#: item 4): ``offloading-cpsat`` (build 1.5 s of 2.6 s at load 6, 5.9 s of 9.4 s at load 15)
#: and ``offloading-milp`` (build 3.4 s + OR-Tools SCIP 4.6 s for a 2 s limit at load 15)
#: were listed here before.
KNOWN_OVERRUNS: dict[tuple[str, str], str] = {}


def _case(name: str, fam: str):
    why = KNOWN_OVERRUNS.get((name, fam))
    marks = [pytest.mark.xfail(reason=f"known overrun: {why}", strict=False)] if why else []
    return pytest.param(name, fam, id=f"{name}-{fam}", marks=marks)


CASES = [(s.name, fam) for s in registry.solvers() for fam in s.families]


@pytest.fixture(scope="module")
def instances():
    tiny = {fam: load_instance(path) for fam, path in TINY.items()}
    registry.solve(tiny["placement"], "placement-cg-lns", iterations=1)  # the compiled kernels, no limit
    return {fam: load_instance(path) for fam, path in INSTANCES.items()}, tiny


def test_every_solver_and_family_is_covered():
    assert {fam for _, fam in CASES} == set(INSTANCES)
    assert len(CASES) >= 40  # every registered solver, once per family


@pytest.mark.parametrize("name,family", [_case(n, f) for n, f in CASES])
def test_solver_honours_time_limit(name, family, instances):
    inst, tiny = instances[0][family], instances[1][family]
    info = registry.get(name)  # imports the solver's module outside the clock
    why = info.applies(inst, {}) if info.applies is not None else None
    if why is not None:
        pytest.skip(f"{name} declines the instance: {why}")
    if info.applies is None or info.applies(tiny, {}) is None:  # first-call costs outside the clock
        registry.solve(tiny, name, time_limit=0.3)
    t = time.perf_counter()
    res = registry.solve(inst, name, time_limit=LIMIT)
    wall = time.perf_counter() - t
    sol = res.solution
    assert wall <= LIMIT + MARGIN, f"{name} on {family}: {wall:.2f} s for a {LIMIT} s limit ({sol.status})"
    assert sol.status in STATUSES and sol.status != "error", (sol.status, sol.stats.get("message"))
    if sol.placement is not None or sol.mapping is not None or sol.offloading is not None:
        ev = evaluate(inst, sol)
        assert ev.feasible, ev.violations[:3]


# ---- the deadline object and what it may change -----------------------------------------


def test_deadline_stops_the_multipliers_and_never_changes_a_finished_one():
    """A deadline only stops work: (4)'s multipliers under a generous deadline are exactly those
    without one; a deadline already passed raises Expired before any work."""
    from edgebench.formulations.placement.bounds.ladder import cluster_durations
    from edgebench.formulations.placement.deadline import Deadline, Expired
    from edgebench.formulations.placement.bounds.lagrange import lagrangian_multipliers

    p = load_instance(TINY["placement"]).placement
    d = cluster_durations(p)
    free = lagrangian_multipliers(p, d)
    timed = lagrangian_multipliers(p, d, deadline=Deadline.after(600.0))
    assert free[0] == timed[0] and free[3] == timed[3]
    assert (free[1] == timed[1]).all() and (free[2] == timed[2]).all()
    with pytest.raises(Expired):
        lagrangian_multipliers(p, d, deadline=Deadline.after(-1.0))


def test_exact_at_the_limit_is_a_timeout_with_a_schedule(instances):
    """placement-exact on the 192-task instance (18.4 s of solver for a 5 s limit before):
    within the limit, status timeout, a referee-feasible schedule, no bound it did not prove."""
    inst = instances[0]["placement"]
    t = time.perf_counter()
    res = registry.solve(inst, "placement-exact", time_limit=LIMIT)
    wall = time.perf_counter() - t
    assert wall <= LIMIT + MARGIN
    assert res.status == "timeout" and evaluate(inst, res.solution).feasible
    b = res.solution.bound
    assert b is None or b <= evaluate(inst, res.solution).primary_value + 1e-9


def test_start_slot_matrix_beyond_its_budget_is_refused_before_allocation():
    """The start-slot assignment at 10,000 tasks on 3 clusters asked for a dense 3.35 GiB int64
    matrix (issue 44 case 2); now BoundTooLarge names the size and the budget, at once, and the
    combined bound leaves (2) out (the Lagrangian (4) starts from its duals, so (4) >= (2))."""
    from types import SimpleNamespace

    from edgebench.formulations.placement.bounds.ladder import MAX_SLOT_CELLS, BoundTooLarge, start_slot_bound

    J = 10_000
    payload = SimpleNamespace(tasks=[SimpleNamespace(arrival=j // 2) for j in range(J)],
                              clusters=[object()] * 3)
    t = time.perf_counter()
    with pytest.raises(BoundTooLarge, match="GiB") as err:
        start_slot_bound(payload, [{0: 5, 1: 5, 2: 5}] * J)
    assert time.perf_counter() - t < 1.0
    assert f"{MAX_SLOT_CELLS:,}" in str(err.value)


def test_multiplier_data_beyond_their_budget_are_refused_before_allocation():
    """(4) at 10,000 tasks arriving up to step 5,000: its start-slot assignment LP would hold about
    75 million entries in Python lists (the bulk of the 7.6 GB placement-lagrange passed there)
    and its energy fronts 0.3 billion int64 cells.  Both are refused at once, before the greedy
    horizon is built (a lower bound of the horizon decides), naming the budget; placement-lagrange
    then builds its unpriced control orders, reallocating_bound keeps the bounds before (4)."""
    from types import SimpleNamespace

    from edgebench.formulations.placement.bounds.lagrange import MAX_ASSIGNMENT_ENTRIES, MAX_FRONT_CELLS, BoundTooLarge, assignment_duals, lagrangian_multipliers

    J = 10_000
    durations = [{0: 5, 1: 5, 2: 5}] * J
    for variant in ("single", "multi"):  # the fronts' budget is checked first
        payload = SimpleNamespace(tasks=[SimpleNamespace(arrival=j // 2) for j in range(J)], clusters=[object()] * 3,
                                  variant=variant)
        t = time.perf_counter()
        with pytest.raises(BoundTooLarge, match=f"{MAX_FRONT_CELLS:,}"):
            lagrangian_multipliers(payload, durations)
        assert time.perf_counter() - t < 2.0
    with pytest.raises(BoundTooLarge, match=f"{MAX_ASSIGNMENT_ENTRIES:,}"):
        assignment_duals(payload, durations, 5_000)


def test_lns_without_grow_honours_its_time_limit():
    """``placement-lns`` with ``grow=False`` (TapFinger's LNS expert, issue 42) ran its search
    with no deadline at all (172 s for a 10 s limit on a 96-task episode): the search's
    deadline was dropped with the grow step's reserve."""
    inst = load_instance(TINY["placement"])
    registry.solve(inst, "placement-lns", time_limit=1.0, grow=False)  # imports and kernels
    big = load_instance(INSTANCES["placement"])
    t0 = time.perf_counter()
    res = registry.solve(big, "placement-lns", time_limit=LIMIT, grow=False)
    wall = time.perf_counter() - t0
    assert wall <= LIMIT + MARGIN, wall
    assert res.solution.decisions is not None


# ---- the offloading exact models: the build is deadline-checked ------------------------


def test_offloading_builds_stop_at_an_expired_deadline_and_are_unchanged_otherwise(instances):
    """``build_cpsat`` / ``build_milp`` raise Expired once their deadline has passed; under a
    generous deadline they build exactly the model they build without one."""
    from edgebench.formulations.deadline import Deadline, Expired
    from edgebench.formulations.offloading_cpsat import build_cpsat
    from edgebench.formulations.offloading_milp import build_milp
    from edgebench.formulations.offloading_problem import prepare

    data = prepare(instances[1]["offloading"])
    with pytest.raises(Expired, match="building the CP-SAT model"):
        build_cpsat(data, deadline=Deadline.after(-1.0))
    with pytest.raises(Expired, match="building the MILP"):
        build_milp(data, deadline=Deadline.after(-1.0))
    assert str(build_cpsat(data, deadline=Deadline.after(600.0)).model.proto) == str(build_cpsat(data).model.proto)
    timed, free = build_milp(data, deadline=Deadline.after(600.0))[0], build_milp(data)[0]
    assert (timed.rows, timed.row_lo, timed.row_hi, timed.lb, timed.ub, timed.obj) == \
        (free.rows, free.row_lo, free.row_hi, free.lb, free.ub, free.obj)


@pytest.mark.parametrize("name", ["offloading-cpsat", "offloading-milp"])
def test_offloading_build_past_the_limit_is_a_timeout_with_the_heuristic_schedule(name, instances):
    """At a limit shorter than the 100-task instance's preparation (0.2 s on the test machine)
    the build stops at its first check: no backend runs, status ``timeout``, the heuristic
    schedule (list / all-cloud, the better) judged feasible by the referee, the combinatorial
    bound below it."""
    inst = instances[0]["offloading"]
    t = time.perf_counter()
    res = registry.solve(inst, name, time_limit=0.01)
    wall = time.perf_counter() - t
    # what runs: the preparation, the §4a bound (computed before the build), the heuristic
    # schedule and the referee (0.5-0.7 s at load 4), no backend
    assert wall <= LIMIT, wall
    assert res.status == "timeout", res.stats.get("message")
    assert res.stats["build_stopped"].startswith("building the")
    ev = evaluate(inst, res.solution)
    assert ev.feasible
    assert abs(ev.primary_value - res.solution.objective) <= 1e-9 * max(1.0, ev.primary_value)
    assert res.solution.bound is not None and res.solution.bound <= res.solution.objective + 1e-9


def test_pywraplp_translation_counts_in_the_time_limit():
    """``solve_linear``'s pywraplp backends translate the model row by row in Python (about a
    second for the 100-task offloading MILP): the translation counts in ``time_limit``; one
    that runs out of time is a ``timeout`` without a solve, never a backend given its whole
    limit after it."""
    from edgebench.formulations.linear import LinearModel, solve_linear

    lm = LinearModel()
    xs = [lm.add_binary(f"x{i}") for i in range(50)]
    for i in range(49):
        lm.add_le([(xs[i], 1.0), (xs[i + 1], 1.0)], 1.0)
    lm.set_objective([(x, -1.0) for x in xs])
    sol = solve_linear(lm, "ortools-scip", time_limit=1e-9)
    assert sol.status == "timeout" and sol.values is None
    assert "translating" in sol.message
    assert solve_linear(lm, "ortools-scip", time_limit=30.0).status == "optimal"
