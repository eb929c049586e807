"""Issue 17: the lumpiness cuts of the mapping MILP (formulations/mapping_milp.py, add_lumpiness;
proofs in docs/formulations/mapping.md, "Lumpiness cuts") hold at every integer point, never
cut the optimum off, and every MILP backend still agrees with branch and bound."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from edgebench.formulations import mapping_milp as MM
from edgebench.formulations.mapping import MILP_BACKENDS, solve_exact
from edgebench.formulations.mapping_problem import GOALS, build_problem
from edgebench.instances.generators import generate


def tiny(seed: int, *, nodes: int = 4, tasks: int = 3, **kw):
    kw.setdefault("link_bw_range", [40.0, 150.0])
    return generate("mapping", "thesis", seed=seed, nodes=nodes, task_nodes=tasks, **kw)


def _point(pr, mm, x, b):
    """Values of x, Y, z, mean and deviations of the integer point (mapping x, bandwidths b,
    canonical routes); the other variables do not occur in the lumpiness rows."""
    val: dict[int, float] = {}
    for t in range(pr.n):
        for p in range(pr.P):
            val[int(mm.x[t, p])] = float(x[t] == p)
    inc = pr.link_inc(np.asarray(x)[None])[0]  # (V, R)
    for z, (y, _lo, _hi) in mm.z_info.items():
        v, r = (int(s) for s in mm.model.names[z][2:-1].split(","))
        val[y] = float(inc[v, r])
        val[z] = float(b[v] * inc[v, r])
    for key in mm.s:
        u = mm.U0[key] + np.array([sum(c * val[k] for k, c in row) for row in mm.U[key]])
        mu = float(u.mean())
        val[mm.mean[key]] = mu
        for e, d in zip(mm.dev[key], u):
            val[e] = abs(float(d) - mu)
    return val


@pytest.mark.parametrize("seed", range(6))
def test_lumpiness_cuts_hold_at_every_integer_point(seed, monkeypatch):
    monkeypatch.setattr(MM, "LUMP_SQUARES", True)  # check the (default off) sum-of-squares row too
    inst = tiny(seed, nodes=4, tasks=3 + seed % 2)
    pr = build_problem(inst)
    if seed == 0:  # BWmin = 1 must not make z look like a binary
        pr.bmin[:] = np.minimum(1.0, pr.bmax)
    g = GOALS["composite"]
    mm = MM.build_milp(pr, g)
    first = len(mm.model.rows)
    assert MM.add_lumpiness(mm, pr, g) > 0
    rows = list(range(first, len(mm.model.rows)))
    rng = np.random.default_rng(seed)
    checked = 0
    for x in itertools.product(range(pr.P), repeat=pr.n):
        x = np.array(x)
        if not (pr.fits(x[None])[0] and pr.routable_all(x[None])[0]):
            continue
        for b in (pr.bmin, pr.bmax, rng.uniform(pr.bmin, pr.bmax)):
            if not pr.link_capacity_ok(x, b):
                continue
            val = _point(pr, mm, x, b)
            sq = {key: float(np.std(mm.U0[key] + np.array([sum(c * val[k] for k, c in row)
                                                             for row in mm.U[key]]))) for key in mm.s}
            for r in rows:
                idx, coef = mm.model.rows[r]
                name = mm.model.row_names[r]
                if name.startswith("lump_sq_"):
                    val[mm.s[name[len("lump_sq_"):]]] = sq[name[len("lump_sq_"):]]
                lhs = sum(c * val[i] for i, c in zip(idx, coef))
                assert lhs >= mm.model.row_lo[r] - 1e-9, (name, x, lhs, mm.model.row_lo[r])
                checked += 1
    assert checked > 0


def test_lumpiness_raises_the_root_bound():
    """The leaf cuts are not implied by the cone: the root LP bound drops."""
    inst = generate("mapping", "thesis", seed=1, nodes=10, task_nodes=6)
    pr = build_problem(inst)
    g = GOALS["composite"]
    mm = MM.build_milp(pr, g)
    before = MM._lp_extremes(mm.model, [], objective=True)["objective"]
    MM.add_lumpiness(mm, pr, g)
    after = MM._lp_extremes(mm.model, [], objective=True)["objective"]
    assert after < before - 1e-3


@pytest.mark.parametrize("seed,objective", [(5, "composite"), (6, "L"), (7, "composite")])
def test_every_milp_backend_agrees_with_bnb_with_the_cuts(seed, objective):
    inst = tiny(seed, nodes=4, tasks=3)
    ref = solve_exact(inst, objective=objective, backend="bnb")
    assert ref.status == "optimal"
    for be in MILP_BACKENDS:
        for ws in (True, False) if be == "ortools-highs" else (True,):
            r = solve_exact(inst, objective=objective, backend=be, time_limit=60, warm_start=ws)
            assert r.status == "optimal", (be, ws, r.message)
            assert r.value == pytest.approx(ref.value, abs=1e-6), (be, ws)
            assert r.stats["model_size"]["lumpiness_cuts"] > 0
            assert (r.bound >= r.value - 1e-12) if objective == "composite" else (r.bound <= r.value + 1e-12)


def test_cuts_never_cut_off_the_optimum_free_routing():
    """Free routing (flow binaries, no warm start): the cuts see z = B*f; every shortest-path
    mapping is a free-routing point, so the MILP's optimum is at least bnb's shortest-path one."""
    sp = solve_exact(tiny(3, nodes=4, tasks=3), objective="composite", backend="bnb")
    r = solve_exact(tiny(3, nodes=4, tasks=3, routing="free"), objective="composite", backend="ortools-highs",
                    time_limit=60)
    assert r.status == "optimal", r.message
    assert r.stats["model_size"]["lumpiness_cuts"] > 0
    assert r.value >= sp.value - 1e-6
    assert r.bound >= r.value - 1e-12
