"""The integer time-indexed relaxation R with reduced-cost fixing (formulations/placement_timip.py):
its bound is never above the brute-force optimum of the referee's problem, whatever number U it is
asked to prove, and the fixing never removes a column of an optimal schedule."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings

from edgebench import registry
from edgebench.formulations.placement.bounds import ladder as PB
from edgebench.formulations.placement import enum as E
from edgebench.formulations.placement.bounds import lagrange as PL
from edgebench.formulations.placement.bounds import timip as T
from edgebench.referee.placement import evaluate
from test_placement_bound import TYPES, brute_force, tiny_instances
from test_placement_exact import tiny


def _columns_of(inst, dec):
    """Per task the (cluster, first non-empty allocation step, completion step) of a schedule."""
    ev = evaluate(inst, dec)
    assert ev.feasible
    out = []
    for j, d in enumerate(dec.tasks):
        s = min(h.step for h in d.history if h.cpu + h.gpu > 0) if d.history else d.start
        out.append((d.cluster, s, ev.details["finish"][j]))
    return out


@pytest.mark.slow
@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances())
def test_bound_never_above_the_optimum_and_fixing_keeps_an_optimal_schedule(inst):
    """R's bound for U = opt, opt + 1, opt + 5 and a large U = opt + 12 (the optima are 1-15) against the brute-force optimum of the
    switching-relaxed problem (at most the referee's: a stronger check); where the enumerator of
    the referee's own problem finishes quickly, the columns of its optimal schedule all survive
    the fixing for U = its value + 1."""
    p = inst.placement
    durations = PB.cluster_durations(p)
    assume(all(durations) and PB.proof_applies(p))
    opt = brute_force(p)
    assert opt < math.inf
    opt = int(round(opt))
    _, Lam, Mu, _ = PL.lagrangian_multipliers(p, durations)
    for upper in (opt, opt + 1, opt + 5, opt + 12):
        r = T.timip_bound(p, upper, multipliers=(Lam, Mu))
        assert r.bound is not None, r.reason
        assert r.bound <= opt, (upper, r.bound, opt, r.reason)
    try:
        value, dec = E.optimum(inst, max_states=1_500)
    except E.StateLimitError:
        return
    # 'no schedule of value <= value' is false: every column of that schedule must survive
    cols = T.fix_columns(p, durations, int(round(value)) + 1, Lam, Mu)
    have = set(zip(cols.task.tolist(), cols.cluster.tolist(), cols.start.tolist(), cols.finish.tolist()))
    single = p.variant == "single"
    for j, (n, s, F) in enumerate(_columns_of(inst, dec)):
        s = s if single else int(p.tasks[j].arrival)  # variant multi: the column's start is the arrival
        assert (j, n, s, F) in have, (j, n, s, F)


def test_fixing_at_zero_multipliers_is_the_horizon():
    """With Lam = Mu = 0 a column's price is its flow time: the survivors for U are the columns
    with F - a <= U - 1 - (the other tasks' shortest durations)."""
    inst = tiny([(0, "fix", (1, 1), (0,)), (1, "lm", (1, 1), (0, 1))], [(2, 2), (1, 2)], "single", 0.0, TYPES)
    p = inst.placement
    d = PB.cluster_durations(p)
    H = 6
    lam, mu = np.zeros((2, 2, H), dtype=np.int64), np.zeros((2, H), dtype=np.int64)
    cols = T.fix_columns(p, d, 12, lam, mu)
    mins = [min(row.values()) for row in d]
    flow = cols.finish - np.array([t.arrival for t in p.tasks])[cols.task]
    assert (flow <= 11 - (sum(mins) - np.array(mins)[cols.task])).all()
    assert flow.max() == 11 - min(mins)
    assert cols.slack == (11 - sum(mins)) << PL.SCALE


INTEGRAL = tiny([(0, "lm", (1, 1), (0,)), (0, "gpu", (1, 0), (0,)), (0, "gpu", (1, 0), (0,))], [(3, 3)], "multi",
                0.0, TYPES)


def test_r_is_above_the_lagrangian_where_integrality_matters():
    """One "lm" task and two "gpu" tasks (no GPU minimum) arriving together on one (3 cpu, 3 gpu)
    cluster, variant multi: the Lagrangian (the LP value of R) spreads the tasks' choices of
    completion fractionally and gets 5; R must pick one window per task and reaches the
    brute-force optimum 6, above (1)-(4). The trajectory bound (6), whose columns are real
    allocation histories, reaches 6 too, so the whole combinatorial bound does."""
    p = INTEGRAL.placement
    d = PB.cluster_durations(p)
    assert PL.lagrangian_bound(p, d) == 5
    assert PB.reallocating_bound(p)[0] == 6
    assert brute_force(p) == 6
    r = T.timip_bound(p, 6)
    assert r.bound == 6, r.reason
    assert T.timip_bound(p, 7).bound == 6  # R's own optimum when U is not reached


def test_no_schedule_below_is_proven_by_the_fixing_alone():
    """Where (4) already reaches U the slack is negative: the bound is U with no model."""
    inst = tiny([(0, "fix", (1, 1), (0,))] * 4, [(4, 1)], "multi", 0.0, TYPES)
    r = T.timip_bound(inst.placement, 30)
    assert (r.bound, r.stats["columns"]) == (30, 0)
    assert T.timip_bound(inst.placement, 31).bound == 30


def test_too_many_columns_declines():
    inst = tiny([(0, "fix", (1, 1), (0,)), (0, "lm", (1, 1), (0,))], [(2, 2)], "single", 0.0, TYPES)
    r = T.timip_bound(inst.placement, 10_000, max_columns=50)
    assert r.bound is None and "survive the fixing" in r.reason


def test_declines_where_the_proof_does_not_apply():
    types = dict(TYPES, flat={"gpu_scale": 1.0, "curvature": 1.0})
    inst = tiny([(0, "flat", (1, 1), (0,))], [(2, 2)], "multi", 0.0, types)
    assert T.timip_bound(inst.placement, 5).bound is None


def test_same_input_same_bound():
    inst = tiny([(0, "lm", (1, 1), (0, 1)), (1, "gpu", (0, 1), (1,)), (0, "fix", (1, 1), (0,))],
                [(3, 2), (2, 2)], "single", 0.2, TYPES)
    a, b = T.timip_bound(inst.placement, 20, seed=3), T.timip_bound(inst.placement, 20, seed=3)
    assert (a.bound, a.stats["relaxed_schedule"]) == (b.bound, b.stats["relaxed_schedule"])


def test_exact_model_proves_at_the_root():
    """placement-exact on the instance above (optimum 6): R reaches the incumbent, the search is
    skipped and the status is optimal; ``upper`` below the optimum lets R prove only ``upper``
    (never more: U is an upper end of what it proves); ``root=False`` is the search alone, with the same optimum."""
    res = registry.solve(INTEGRAL, "placement-exact", time_limit=30)
    assert res.status == "optimal" and res.solution.objective == res.solution.bound == 6
    assert res.solution.stats["root"]["bound"] == 6 and res.solution.stats["expanded"] == 0
    low = registry.solve(INTEGRAL, "placement-exact", time_limit=30, upper=4)
    assert low.solution.objective == 6 and low.solution.stats["root"]["bound"] == 4
    assert low.solution.bound <= 6  # the search goes on from there (and proves 6 here)
    plain = registry.solve(INTEGRAL, "placement-exact", time_limit=30, root=False)
    assert plain.status == "optimal" and plain.solution.objective == 6 and "root" not in plain.solution.stats
