"""The continuous-time disjunctive MILP of the offloading problem with a resource-flow
capacity model (Artigues, Michelon & Reusser 2003), built once as a
:class:`~edgebench.formulations.linear.LinearModel` on the exact float data and solved
through any backend of :func:`~edgebench.formulations.linear.solve_linear`
(docs/formulations/offloading.md §3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from edgebench.formulations.deadline import Deadline
from edgebench.formulations.linear import LinearModel, solve_linear
from edgebench.formulations.offloading_problem import OffloadingData, RawSolve, resource_groups, time_windows
from edgebench.formulations.offloading_schedules import best_heuristic

MILP_BACKENDS = ("ortools-scip", "ortools-cbc", "ortools-highs", "pulp-cbc", "pulp-highs", "pyomo-highs")
DEFAULT_MILP_BACKEND = "ortools-scip"


# ======================================================================================
# MILP: continuous-time disjunctive model with resource flows, one LinearModel
# ======================================================================================


def _merged(terms) -> list[tuple[int, float]]:
    acc: dict[int, float] = {}
    for i, c in terms:
        acc[int(i)] = acc.get(int(i), 0.0) + float(c)
    return [(i, c) for i, c in acc.items() if c != 0.0]


class _MergingModel(LinearModel):
    """A LinearModel whose rows merge repeated variables (a row such as s_b - s_a -
    sum_p d_ap x_ap - M x_ap names x_ap twice, and some backends keep only the last
    coefficient of a repeated variable)."""

    def add_row(self, terms, lo=-math.inf, hi=math.inf, name=""):
        return super().add_row(_merged(terms), lo, hi, name)


@dataclass
class MilpIndex:
    x: list[dict[int, int]]
    st: list[int]
    cmax: list[int]
    y: dict[tuple[int, int], int]
    flows: int = 0
    bigm: dict[str, float] = field(default_factory=dict)
    #: the heuristic schedule (seconds) the windows were tightened with, None without one
    heuristic: tuple[list[int], list[float]] | None = None


def build_milp(data: OffloadingData, *, use_heuristic_horizon: bool = True,
               deadline: Deadline | float | None = None):
    """The MILP of ``data`` (seconds) as one LinearModel. Returns (model, index).

    ``deadline`` (a :class:`~edgebench.formulations.deadline.Deadline`, a ``time.perf_counter()``
    value or None) is checked between blocks of rows (per task, per edge, per workflow, per
    server pair / flow network): :class:`~edgebench.formulations.deadline.Expired` once it has
    passed. A build that completes is the same model with or without a deadline."""
    dl = Deadline.of(deadline)
    N, W = data.N, data.W
    lm = _MergingModel(name="offloading-milp", sense="min")
    dl.check("building the MILP: start")
    heur = best_heuristic(data) if use_heuristic_horizon else None
    est, lft, cwb = time_windows(data, heur)
    hb = lft
    dl.check("building the MILP: time windows")

    x: list[dict[int, int]] = []
    st: list[int] = []
    for g in range(N):
        xs = {s: lm.add_binary(f"x[{g},{s}]") for s in data.hosts[g]}
        x.append(xs)
        lo = est[g]
        st.append(lm.add_var(f"s[{g}]", lo, max(lo, hb[g] - data.min_dur(g))))
    for g in range(N):
        dl.check("building the MILP: assignment rows")
        # (1) one server per task
        lm.add_eq([(v, 1.0) for v in x[g].values()], 1.0, f"assign[{g}]")
        # (2) release: arrival + input fetch on the chosen server
        if max(data.rel[g].values()) > data.min_rel(g):
            lm.add_ge([(st[g], 1.0)] + [(x[g][s], -data.rel[g][s]) for s in x[g]], 0.0, f"release[{g}]")
        # (3) finish within the (valid or user) horizon
        lm.add_le([(st[g], 1.0)] + [(x[g][s], data.dur[g][s]) for s in x[g]], hb[g], f"horizon[{g}]")

    # (4) precedence with server-dependent transfer delays
    for k, (_, _, a, b) in enumerate(data.edges):
        dl.check("building the MILP: precedence rows")
        dur_a = [(x[a][p], -data.dur[a][p]) for p in x[a]]
        need_base = False
        for p in data.hosts[a]:
            mp = max(data.delay[k][(p, qq)] for qq in data.hosts[b])
            if mp <= 0:
                need_base = True
                continue
            terms = [(st[b], 1.0), (st[a], -1.0)] + dur_a
            terms += [(x[b][qq], -data.delay[k][(p, qq)]) for qq in data.hosts[b] if data.delay[k][(p, qq)] > 0]
            terms.append((x[a][p], -mp))
            lm.add_ge(terms, -mp, f"prec[{k},{p}]")
        if need_base:
            lm.add_ge([(st[b], 1.0), (st[a], -1.0)] + dur_a, 0.0, f"prec[{k}]")

    # (5) makespan of each workflow (its sinks' finish times)
    cmax = []
    for w in range(W):
        dl.check("building the MILP: makespan rows")
        gs = data.gid[w]
        lo = max(data.min_rel(g) + data.min_dur(g) for g in gs)
        cw = lm.add_var(f"C[{w}]", lo, max(lo, cwb[w]))
        cmax.append(cw)
        for g in gs:
            if not data.succs[g]:
                lm.add_ge([(cw, 1.0), (st[g], -1.0)] + [(x[g][s], -data.dur[g][s]) for s in x[g]], 0.0,
                          f"makespan[{w},{g}]")

    # (6)-(9) capacities: sequencing variables y[i,j] (i finishes before j starts) and flows
    y: dict[tuple[int, int], int] = {}
    maxm = 0.0

    def yv(i: int, j: int) -> int:
        nonlocal maxm
        key = (i, j)
        if key not in y:
            y[key] = lm.add_binary(f"y[{i},{j}]")
            big = hb[i] - est[j]
            maxm = max(maxm, big)
            # y[i,j] = 1  =>  s_j >= s_i + dur_i
            lm.add_ge([(st[j], 1.0), (st[i], -1.0)] + [(x[i][s], -data.dur[i][s]) for s in x[i]] +
                      [(y[key], -big)], -big, f"seq[{i},{j}]")
        return y[key]

    def ordered(i: int, j: int) -> bool:
        """i finishes before j can start in every schedule."""
        return i in data.anc[j] or hb[i] <= est[j]

    n_flows = 0
    excl: set[tuple[int, int]] = set()
    for s, r, kind, items, cap in resource_groups(data, [list(d) for d in data.demand],
                                                   [None if c is None else list(c) for c in data.cap]):
        gs = [g for g, _ in items]
        if kind == "nooverlap":
            for ii, i in enumerate(gs):
                dl.check("building the MILP: sequencing rows")
                for j in gs[ii + 1:]:
                    if ordered(i, j) or ordered(j, i):
                        continue
                    # (6) two tasks on the same server are sequenced one way or the other
                    lm.add_ge([(yv(i, j), 1.0), (yv(j, i), 1.0), (x[i][s], -1.0), (x[j][s], -1.0)], -1.0,
                              f"disj[{s},{r},{i},{j}]")
                    if (i, j) not in excl and min(data.dur[i].values()) > 0 and min(data.dur[j].values()) > 0:
                        # both orders at once is impossible for positive durations
                        excl.add((i, j))
                        lm.add_le([(yv(i, j), 1.0), (yv(j, i), 1.0)], 1.0, f"excl[{i},{j}]")
            continue
        # resource flow network on server s for resource r: source -> tasks -> (sink)
        dem = dict(items)
        src = {g: lm.add_var(f"f[{s},{r},src,{g}]", 0.0, dem[g]) for g in gs}
        arc: dict[tuple[int, int], int] = {}
        for i in gs:
            dl.check("building the MILP: resource-flow rows")
            for j in gs:
                if i == j or ordered(j, i):
                    continue
                ub = min(dem[i], dem[j])
                v = lm.add_var(f"f[{s},{r},{i},{j}]", 0.0, ub)
                arc[(i, j)] = v
                if not ordered(i, j):
                    # (8) flow only along sequenced pairs
                    lm.add_le([(v, 1.0), (yv(i, j), -ub)], 0.0, f"flowseq[{s},{r},{i},{j}]")
        n_flows += len(src) + len(arc)
        # (7) the source supplies the capacity
        lm.add_le([(v, 1.0) for v in src.values()], cap, f"supply[{s},{r}]")
        for g in gs:
            inflow = [(src[g], 1.0)] + [(arc[(i, g)], 1.0) for i in gs if (i, g) in arc]
            outflow = [(arc[(g, j)], 1.0) for j in gs if (g, j) in arc]
            # (9) a task on s receives exactly its demand and passes on at most that
            lm.add_eq(inflow + [(x[g][s], -dem[g])], 0.0, f"in[{s},{r},{g}]")
            if outflow:
                lm.add_le(outflow + [(x[g][s], -dem[g])], 0.0, f"out[{s},{r},{g}]")

    # objective: mean makespan
    lm.set_objective([(cw, 1.0 / W) for cw in cmax], constant=-sum(data.arrival) / W)
    return lm, MilpIndex(x, st, cmax, y, n_flows, {"max_big_m": maxm}, heur)


def solve_milp_model(lm, idx: MilpIndex, data: OffloadingData, *, backend: str, time_limit: float | None = None,
                     threads: int = 1, seed: int = 0, mip_gap: float = 1e-9, log: bool = False) -> RawSolve:
    sol = solve_linear(lm, backend, time_limit=time_limit, threads=threads, seed=seed, mip_gap=mip_gap, log=log)
    status, message = sol.status, sol.message
    if status == "error" and sol.values is None and backend.startswith("ortools-") and time_limit is not None \
            and sol.runtime >= 0.9 * time_limit and "pywraplp status" in message:
        # pywraplp's HiGHS answers ABNORMAL (99) at the time limit without handing back an
        # incumbent: that is a timeout, not a crash
        status, message = "timeout", f"{message} (at the time limit: treated as a timeout)"
    raw = RawSolve(status, message, sol.runtime, extra={"solver_gap": sol.gap})
    if sol.values is not None and sol.status in ("optimal", "feasible"):
        v = sol.values
        raw.server = [max(idx.x[g], key=lambda s: v[idx.x[g][s]]) for g in range(data.N)]
        raw.start = [max(data.min_rel(g), float(v[idx.st[g]])) for g in range(data.N)]
        raw.finish = [raw.start[g] + data.dur[g][raw.server[g]] for g in range(data.N)]
        raw.model_objective = sol.objective
        raw.extra["max_violation"] = lm.max_violation(v)
    raw.bound = sol.bound
    return raw
