"""Probes behind "Closing the 96-task hetero-6 single gap" in docs/formulations/placement.md:
two lower bounds of the fixed-allocation placement model that were measured and not adopted.

* ``assign``: the start-slot assignment bound of the single-task variant (capacities dropped;
  each task takes one (cluster, step) slot at its shortest duration there), solved exactly by
  ``scipy.optimize.linear_sum_assignment``;
* ``lagrange``: the Lagrangian relaxation of the assignment rows (3) of the windowed model:
  one MILP per cluster plus the late variables, multipliers from the LP's duals and then
  subgradient steps (Polyak step towards ``--target``).  Each value is a valid lower bound
  (proof in the docs); every cluster MILP contributes its proven MIP bound.

    nice -n 10 .venv/bin/python bench/probe_placement_bounds.py assign 96 --ub 442
    nice -n 10 .venv/bin/python bench/probe_placement_bounds.py lagrange 96 --ub 442 --target 441 --steps 8

hetero-6, seed 0, single-task variant; one thread.  Not a pytest module.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _data(n: int, ub: int):
    from edgebench.formulations import placement as P
    from edgebench.instances.generators import generate

    data = P.prepare(generate("placement", "hetero-6", seed=0, num_tasks=n, variant="single").placement)
    return data, P.finish_bounds(data, ub)


def assignment_bound(n: int, ub: int) -> float:
    from scipy.optimize import linear_sum_assignment

    data, finish_by = _data(n, ub)
    horizon = max(finish_by)
    cost = np.full((n, data.num_clusters * horizon), 1e9)
    for j in range(n):
        a = data.arrivals[j]
        for cl in range(data.num_clusters):
            steps = [o.steps for o in data.options[j] if o.cluster == cl]
            if steps:
                ts = np.arange(a, finish_by[j] - min(steps) + 1)
                cost[j, cl * horizon + ts] = ts - a + min(steps)
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].sum())


def lagrangian_bounds(n: int, ub: int, slack: int, target: float, steps: int, sub_limit: float):
    """Yields (step, L(lambda), seconds) for the LP duals and then each subgradient step."""
    from edgebench.formulations import placement as P
    from edgebench.formulations.linear import LinearModel
    from edgebench.formulations.placement_highs import lp_row_duals, solve_highs

    data, finish_by = _data(n, ub)
    bm = P.build_model(data, finish_by, [a + slack for a in data.arrivals])
    m = bm.model
    duals = lp_row_duals(m)
    assign_row = {m.row_names.index(f"assign[{j}]"): j for j in range(n)}
    lam = np.zeros(n)
    for r, j in assign_row.items():
        lam[j] = duals[r]
    task = dict(zip(bm.y_vars, bm.y_task))
    cluster = {v: data.options[j][k].cluster for v, j, k in zip(bm.y_vars, bm.y_task, bm.y_option)}
    subs = []
    for cl in range(data.num_clusters):
        vs = [v for v in bm.y_vars if cluster[v] == cl]
        idx = {v: i for i, v in enumerate(vs)}
        sm = LinearModel(name=f"cluster{cl}")
        for v in vs:
            sm.add_binary(m.names[v])
        for r, name in enumerate(m.row_names):
            if name.split("[")[0] in ("cap_cpu", "cap_gpu", "cap_mem", "clique_cpu", "clique_gpu", "clique_mem",
                                      "single") and int(name.split("[")[1].split(",")[0]) == cl:
                ii, vv = m.rows[r]
                sm.add_row(((idx[i], c) for i, c in zip(ii, vv)), m.row_lo[r], m.row_hi[r])
        per_task: dict[int, list[int]] = {}
        for v in vs:
            per_task.setdefault(task[v], []).append(idx[v])
        for ii in per_task.values():
            sm.add_le(((i, 1.0) for i in ii), 1.0)
        subs.append((sm, vs))
    theta = 1.0
    for step in range(steps + 1):
        t0 = time.perf_counter()
        total, used = float(lam.sum()), np.zeros(n)
        for j, z in bm.late_vars.items():
            if m.obj[z] - lam[j] < 0:
                total += m.obj[z] - lam[j]
                used[j] += 1
        for sm, vs in subs:
            sm.set_objective([(i, m.obj.get(v, 0.0) - lam[task[v]]) for i, v in enumerate(vs)])
            sol = solve_highs(sm, time_limit=sub_limit, mip_gap=1e-6)
            total += sol.bound
            for i, v in enumerate(vs):
                used[task[v]] += sol.values[i] > 0.5
        yield step, total, time.perf_counter() - t0
        g = 1.0 - used
        if not g.any():
            return
        lam = lam + theta * (target - total) / float(g @ g) * g
        theta *= 0.85


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("probe", choices=("assign", "lagrange"))
    ap.add_argument("tasks", type=int)
    ap.add_argument("--ub", type=int, required=True, help="a known schedule's objective (the proven horizon)")
    ap.add_argument("--target", type=float, help="Polyak target (default: --ub)")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--slack", type=int, default=16)
    ap.add_argument("--sub-limit", type=float, default=30.0)
    a = ap.parse_args()
    if a.probe == "assign":
        t0 = time.perf_counter()
        print(f"assignment bound {assignment_bound(a.tasks, a.ub):.1f} ({time.perf_counter() - t0:.2f} s)")
        return
    best = -np.inf
    for step, val, secs in lagrangian_bounds(a.tasks, a.ub, a.slack, a.target or a.ub, a.steps, a.sub_limit):
        best = max(best, val)
        print(f"step {step}: L = {val:.3f} (best {best:.3f}, {secs:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
