"""Where bound (6)'s LP and the best known differ, per cluster (docs/formulations/placement.md,
"hetero-6-v2: where its gap sits", session 10).

Runs (4) then (6)'s column generation (``rounded_multipliers``, ``--cut-rounds`` rounds of
rounding cuts, default 0: plain (6)) on one placement instance of a shipped set, re-solves the
master LP as it ended and prints, per cluster, the tasks (the LP's mass) and the total flow time
of the LP's solution next to the shipped best known's. Then, for the ``--small`` clusters, it
checks the windowed energy rounding inequalities on the LP's solution: for every window [u, t),
resource r and divisor g,

    sum over tasks j arriving at or after u that the LP completes on n by t of
        floor(e_j / g) * mass  <=  floor(C (t - u) / g)

(e_j the task's least energy of r on n, ``placement_bound.min_energy``; valid for every
referee-feasible schedule: those tasks run only inside the window) and prints the most violated.

    .venv/bin/python bench/probe_lp_clusters.py placement-hetero-6-v2 0 --small 0,1

Not a pytest module; one instance per call; minutes on a 384-task instance (one thread).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from edgebench.errors import InputError
from edgebench.formulations.placement_bound import cluster_durations, min_energy, proof_applies
from edgebench.formulations.placement_cglns import decisions_columns
from edgebench.formulations.placement_lagrange import lagrangian_multipliers
from edgebench.formulations.placement_trajectory import rounded_multipliers, tasks_of
from edgebench.instances import sets
from edgebench.instances.io import content_hash, load_solution


def lp_by_cluster(p, cut_rounds: int) -> tuple[float, list[tuple[int, int, int, float]]]:
    """(master LP value, [(task, cluster, flow F - a, mass)] of the columns the LP uses)."""
    durations = cluster_durations(p)
    r = rounded_multipliers(p, durations, lagrangian_multipliers(p, durations), cut_rounds=cut_rounds)
    sol = r.master.solve() if r.master is not None else None
    if sol is None:
        raise InputError("the master LP did not solve")
    x = r.master.primal()
    tasks = tasks_of(p, durations)
    return sol[0], [(tasks[i].j, n, m, float(x[c])) for c, (i, m, n) in enumerate(r.master.meta) if x[c] > 1e-9]


def window_violations(p, used: list, n: int, r: int, top: int = 5) -> list[tuple[float, int, int, int]]:
    """The ``top`` most violated windowed energy rounding inequalities on cluster n, resource r:
    (violation, u, t, g), empty when none is violated by more than 1e-6."""
    cap = (p.clusters[n].capacity.cpu, p.clusters[n].capacity.gpu)[r]
    energy = {j: min_energy(p, j, n, r) for j in {j for j, nn, _, _ in used if nn == n}}  # once per task
    items = [(int(p.tasks[j].arrival), int(p.tasks[j].arrival) + m, w, energy[j]) for j, nn, m, w in used if nn == n]
    if not items:
        return []
    gs = sorted({x for *_, x in items if x})
    T = max(F for _, F, _, _ in items)
    out = []
    for u in range(T):
        for t in range(u + 1, T + 1):
            inside = [(x, w) for a, F, w, x in items if a >= u and F <= t and x]
            if not inside:
                continue
            for g in gs:
                if g > cap * (t - u):  # a history done inside the window holds <= cap per step,
                    break  # so its least energy is <= cap (t - u) < g: nothing counts, rhs 0
                v = sum((x // g) * w for x, w in inside) - (cap * (t - u)) // g
                if v > 1e-6:
                    out.append((v, u, t, g))
    return sorted(out, reverse=True)[:top]


def _fail(message: str) -> None:
    print(f"probe_lp_clusters: {message}", file=sys.stderr)
    sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("set")
    ap.add_argument("index", type=int)
    ap.add_argument("--small", default="0,1", help="clusters whose windows are checked, e.g. 0,1 ('' for none)")
    ap.add_argument("--cut-rounds", type=int, default=0, help="rounds of rounding cuts (default 0: plain (6))")
    a = ap.parse_args(argv)
    try:
        inst = sets.load_set(a.set)[a.index]
        small = sorted({int(x) for x in a.small.split(",") if x.strip()})
    except (InputError, ValueError, IndexError) as e:
        _fail(f"{a.set}[{a.index}] --small {a.small!r}: {e}")
    p = inst.placement
    if p is None or not proof_applies(p):
        _fail(f"{a.set}[{a.index}]: not a placement instance that bound (6) applies to")
    if a.cut_rounds < 0 or any(n < 0 or n >= len(p.clusters) for n in small):
        _fail(f"--cut-rounds must be >= 0 and --small among 0..{len(p.clusters) - 1}")
    try:
        value, used = lp_by_cluster(p, a.cut_rounds)
    except InputError as e:
        _fail(e.line())
    N = len(p.clusters)
    lp_n, lp_f = np.zeros(N), np.zeros(N)
    for _, n, m, w in used:
        lp_n[n] += w
        lp_f[n] += w * m
    bk_n, bk_f = np.zeros(N, dtype=int), np.zeros(N, dtype=int)
    path = sets.best_known_solution(content_hash(inst))
    cols = decisions_columns(p, load_solution(path, inst).placement) if path else None
    for c in cols or ():
        bk_n[c.n] += 1
        bk_f[c.n] += c.F - int(p.tasks[c.j].arrival)
    print(f"{a.set}[{a.index}]: master LP {value:.1f}" + (f", best known {bk_f.sum()}" if cols else ""))
    print("cluster  cpu/gpu  | LP tasks  LP flow | best tasks  best flow")
    for n, c in enumerate(p.clusters):
        best = f"{bk_n[n]:>10d} {bk_f[n]:>10d}" if cols else "         -          -"
        print(f"{n:>7d}  {c.capacity.cpu:>3d}/{c.capacity.gpu:<3d} | {lp_n[n]:>8.1f} {lp_f[n]:>8.0f} | {best}")
    for n in small:
        for r, name in ((0, "cpu"), (1, "gpu")):
            top = window_violations(p, used, n, r)
            print(f"cluster {n} {name}: " + ("no windowed energy rounding inequality is violated" if not top else
                  "most violated (violation, u, t, g): " + ", ".join(f"({v:.3f}, {u}, {t}, {g})" for v, u, t, g in top)))


if __name__ == "__main__":
    main()
