"""The CP-SAT interval model of the offloading problem (docs/formulations/offloading.md §2):
per task and feasible server an optional fixed-size interval, ``AddCumulative`` /
``AddNoOverlap`` per edge server and resource, precedence with transfer delays enforced by
the presence literals, one makespan variable per workflow, in integer ticks with durations,
delays and releases rounded up. :func:`solve_cpsat_model` runs the phases: CP-SAT, the
heuristic schedules when CP-SAT has none or a worse one, LNS (``offloading_lns``), probes
(``offloading_probe``) and CP-SAT again on the time left.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from edgebench.formulations import offloading_bounds as ob
from edgebench.formulations.deadline import Deadline
from edgebench.formulations.linear import run_cpsat
from edgebench.formulations.offloading_lns import improve
from edgebench.formulations.offloading_problem import (
    _INT_TOL,
    OffloadingData,
    RawSolve,
    resource_groups,
    _resource_scale,
    auto_time_scale,
    objective_of,
    rounding_adjustment_ticks,
    ticked,
    time_windows,
)
from edgebench.formulations.offloading_probe import bisect
from edgebench.formulations.offloading_schedules import best_heuristic, cloud_schedule, list_schedule

#: the LNS hands back to CP-SAT after this many steps in a row without a better schedule
LNS_PATIENCE = 12


# ======================================================================================
# CP-SAT interval model
# ======================================================================================


def _ceil_int(x: float) -> int:
    """ceil of a tick value that is an integer up to float noise."""
    return int(math.ceil(x - 1e-9 * max(1.0, abs(x))))


@dataclass
class CpsatModel:
    model: Any
    data: OffloadingData  # ticked
    exact: OffloadingData  # seconds
    q: float
    present: list[dict[int, Any]]
    start: list[Any]
    end: list[Any]
    cmax: list[Any]
    resource_exact: bool
    adjustment_ticks: int
    hint: tuple[list[int], list[float]] | None = None
    infeasible_reason: str | None = None
    #: another heuristic schedule (ticks): every task on the cloud, None when impossible
    alt: tuple[list[int], list[float]] | None = None


def build_cpsat(data: OffloadingData, *, time_scale: float | str = "auto", hint: bool = True,
                edge_form: str = "auto", cuts: bool = True, deadline: Deadline | float | None = None) -> CpsatModel:
    """The CP-SAT interval model of ``data`` (seconds) in ticks of 1/time_scale seconds.

    ``deadline`` (a :class:`~edgebench.formulations.deadline.Deadline`, a ``time.perf_counter()``
    value or None) is checked between the phases (heuristic schedules, heads / tails, the
    objective floor) and between blocks of constraints (per task, per edge, per server and
    resource, per workflow): :class:`~edgebench.formulations.deadline.Expired` once it has
    passed. A build that completes is the same model with or without a deadline."""
    from ortools.sat.python import cp_model

    dl = Deadline.of(deadline)

    if edge_form not in ("auto", "pairs", "linear", "same"):
        raise ValueError(f"edge_form must be auto, pairs, linear or same, got {edge_form!r}")
    q = auto_time_scale(data) if time_scale == "auto" else float(time_scale)
    if not (q > 0 and math.isfinite(q)):
        raise ValueError(f"time_scale must be a positive number or 'auto', got {time_scale!r}")
    dl.check("building the CP-SAT model: start")
    td = ticked(data, q)
    N, W = td.N, td.W
    m = cp_model.CpModel()
    dl.check("building the CP-SAT model: integer ticks")

    # time windows valid for some optimal schedule, tightened by a heuristic schedule
    # the list schedule is the hint (CP-SAT's search follows a hint closely: the all-cloud
    # schedule as hint slowed the proof of daggen 50 x 3 from 12 s to beyond 40 s); the
    # better of both tightens the windows, and the all-cloud one is offered to the search
    # after CP-SAT's phase when it is better than CP-SAT's incumbent (solve_cpsat_model)
    hsched = list_schedule(td) if hint else None
    alt = cloud_schedule(td) if hint else None
    est, lft, cwb = time_windows(td, best_heuristic(td) if hint else None, integral=True)
    dl.check("building the CP-SAT model: heuristic schedules and time windows")
    hb = [int(math.floor(h + 1e-9)) for h in lft]
    # heads / tails of every feasible schedule of the ticked data (§4a): per-host earliest
    # starts and least times to the workflow's end, and a floor on the objective
    heads = tails = None
    obj_floor = None
    if cuts:
        excl = ob.exclusive_servers(td)
        if all(excl[s] for s in range(td.S) if td.cap[s] is not None):
            # per-host heads / tails only where every edge server is exclusive: they made
            # CP-SAT prove heft-random 50 x 8 in 13-16 s instead of 32 s (floor alone), but
            # kept it from proving daggen 50 x 3 in 40 s (floor alone: 30 s; docs §4a)
            heads = ob.heads(td, excl)
            dl.check("building the CP-SAT model: heads")
            tails = ob.tails(td, excl)
            dl.check("building the CP-SAT model: tails")
    if heads is not None and tails is not None:
        for g in range(N):
            est[g] = max(est[g], min(heads[g].values()))
            hb[g] = min(hb[g], int(math.floor(cwb[td.tasks[g][0]] - min(tails[g].values()) + 1e-6)))
    if cuts:
        lb = ob.lower_bound(td)  # mean makespan in ticks
        obj_floor = int(math.ceil(W * lb + sum(a * q for a in td.arrival) - 1e-9 * max(1.0, W * lb)))
        dl.check("building the CP-SAT model: the objective floor")

    present: list[dict[int, Any]] = []
    start, end = [], []
    reason = None
    for g in range(N):
        dl.check("building the CP-SAT model: task variables")
        lo = int(math.ceil(est[g] - 1e-9))
        hi = hb[g] - int(td.min_dur(g))
        if hi < lo:
            reason = f"task {td.tasks[g]} cannot finish by the horizon"
            hi = lo
        sv = m.NewIntVar(lo, hi, f"s{g}")
        ev = m.NewIntVar(lo, max(hb[g], lo), f"e{g}")
        lits = {}
        for s in td.hosts[g]:
            lits[s] = m.NewBoolVar(f"x{g}_{s}")
        m.AddExactlyOne(list(lits.values()))
        m.Add(ev == sv + sum(int(td.dur[g][s]) * lits[s] for s in lits))
        m.Add(ev <= hb[g])
        for s in lits:
            r = int(td.rel[g][s]) if heads is None else _ceil_int(heads[g][s])
            if r > lo:
                m.Add(sv >= r).OnlyEnforceIf(lits[s])
        present.append(lits)
        start.append(sv)
        end.append(ev)
    if reason is not None:
        m.AddBoolOr([])  # the instance is infeasible under the horizon: an empty clause

    # intervals per server
    intervals: list[dict[int, Any]] = [dict() for _ in range(N)]
    for g in range(N):
        dl.check("building the CP-SAT model: intervals")
        for s, lit in present[g].items():
            d = int(td.dur[g][s])
            if len(present[g]) == 1:
                intervals[g][s] = m.NewIntervalVar(start[g], d, end[g], f"iv{g}_{s}")
            else:
                intervals[g][s] = m.NewOptionalFixedSizeIntervalVar(start[g], d, lit, f"iv{g}_{s}")

    # capacities
    res_vals = [[td.demand[g][r] for g in range(N)] + [c[r] for c in td.cap if c is not None] for r in range(2)]
    scales = [_resource_scale(v) for v in res_vals]
    resource_exact = all(ex for _, ex in scales)
    dem_scaled = [[int(math.ceil(td.demand[g][r] * scales[r][0] - _INT_TOL * max(1.0, td.demand[g][r] * scales[r][0])))
                   for r in range(2)] for g in range(N)]
    cap_scaled: list[Any] = [None if c is None else
                             [int(math.floor(c[r] * scales[r][0] + _INT_TOL * max(1.0, c[r] * scales[r][0])))
                              for r in range(2)] for c in td.cap]
    for s, r, kind, items, cap in resource_groups(td, dem_scaled, cap_scaled):
        dl.check("building the CP-SAT model: capacities")
        if kind == "nooverlap":
            m.AddNoOverlap([intervals[g][s] for g, _ in items])
        else:
            m.AddCumulative([intervals[g][s] for g, _ in items], [d for _, d in items], cap)

    # precedence with transfer delays
    for k, (_, _, a, b) in enumerate(td.edges):
        dl.check("building the CP-SAT model: precedence")
        m.Add(start[b] >= end[a])
        off_diag = {int(c) for (p, qq), c in td.delay[k].items() if p != qq}
        form = "same" if edge_form == "auto" else edge_form
        if not any(off_diag):
            continue
        if form == "pairs":
            # (p, q): s_b >= e_a + delay(p, q) if a runs on p and b on q
            for (p, qq), c in td.delay[k].items():
                if p != qq and c > 0:
                    m.Add(start[b] >= end[a] + int(c)).OnlyEnforceIf([present[a][p], present[b][qq]])
        elif form == "linear":
            # one per source server p: s_b >= e_a + sum_q delay(p, q) x_bq if a runs on p
            for p in td.hosts[a]:
                terms = [(int(td.delay[k][(p, qq)]), present[b][qq]) for qq in td.hosts[b] if td.delay[k][(p, qq)] > 0]
                if terms:
                    m.Add(start[b] >= end[a] + sum(c * x for c, x in terms)).OnlyEnforceIf(present[a][p])
        else:
            # same_k <=> a and b on one server; s_b >= e_a + (smallest delay between two
            # different servers) unless same_k; larger delays pairwise as above
            same = m.NewBoolVar(f"same{k}")
            for p in td.hosts[a]:
                if p in present[b]:
                    m.AddBoolOr([same.Not(), present[a][p].Not(), present[b][p]])
                    m.AddBoolOr([present[a][p].Not(), present[b][p].Not(), same])
                else:
                    m.AddImplication(present[a][p], same.Not())
            for p in td.hosts[b]:
                if p not in present[a]:
                    m.AddImplication(present[b][p], same.Not())
            cmin = min(off_diag)
            if cmin > 0:
                m.Add(start[b] >= end[a] + cmin).OnlyEnforceIf(same.Not())
            for (p, qq), c in td.delay[k].items():
                if p != qq and c > cmin:
                    m.Add(start[b] >= end[a] + int(c)).OnlyEnforceIf([present[a][p], present[b][qq]])

    # makespans and objective: minimise the sum of the workflows' finish times
    cmax = []
    for w in range(W):
        dl.check("building the CP-SAT model: makespans")
        gs = td.gid[w]
        lo = max(int(td.min_rel(g) + td.min_dur(g)) for g in gs)
        cw = m.NewIntVar(lo, max(int(cwb[w]), lo), f"c{w}")
        sinks = [g for g in gs if not td.succs[g]]
        for g in sinks:
            m.Add(cw >= end[g])
        if tails is not None:
            for g in gs:
                dl.check("building the CP-SAT model: tails per workflow")
                low = _ceil_int(min(tails[g].values()))
                if low > 0:
                    m.Add(cw >= end[g] + low)
                for s, lit in present[g].items():
                    t = _ceil_int(tails[g][s])
                    if t > low:
                        m.Add(cw >= end[g] + t).OnlyEnforceIf(lit)
        cmax.append(cw)
    if obj_floor is not None:
        m.Add(sum(cmax) >= obj_floor)
    m.Minimize(sum(cmax))

    if hsched is not None and reason is None:
        srv, st = hsched
        hfin = [st[g] + td.dur[g][srv[g]] for g in range(N)]
        if all(hfin[g] <= hb[g] for g in range(N)):
            for g in range(N):
                for s, lit in present[g].items():
                    m.AddHint(lit, s == srv[g])
                m.AddHint(start[g], int(round(st[g])))
                m.AddHint(end[g], int(round(hfin[g])))
            for w in range(W):
                m.AddHint(cmax[w], int(round(max(hfin[g] for g in td.gid[w]))))
    return CpsatModel(m, td, data, q, present, start, end, cmax, resource_exact, rounding_adjustment_ticks(td),
                      hsched, reason, alt)


def cpsat_size(cm: CpsatModel) -> dict[str, int]:
    proto = cm.model.Proto()
    nnz = 0
    for ct in proto.constraints:
        nnz += len(ct.enforcement_literal)
        if ct.has_linear():
            nnz += len(ct.linear.vars)
        elif ct.has_bool_or():
            nnz += len(ct.bool_or.literals)
        elif ct.has_bool_and():
            nnz += len(ct.bool_and.literals)
        elif ct.has_exactly_one():
            nnz += len(ct.exactly_one.literals)
        elif ct.has_at_most_one():
            nnz += len(ct.at_most_one.literals)
        elif ct.has_no_overlap():
            nnz += len(ct.no_overlap.intervals)
        elif ct.has_cumulative():
            nnz += len(ct.cumulative.intervals)
        elif ct.has_interval():
            nnz += 3
    return {"variables": len(proto.variables), "constraints": len(proto.constraints), "nonzeros": nnz}


def solve_cpsat_model(cm: CpsatModel, *, time_limit: float | None = None, threads: int = 1, seed: int = 0,
                      log: bool = False, params: dict | None = None, lns: float = 0.0,
                      probe: float = 0.0) -> RawSolve:
    """Solve the interval model; with ``lns`` > 0 and a time limit, CP-SAT gets the share
    1 - lns of it and, unless it proved optimality, a large-neighbourhood search around its
    incumbent (offloading_lns.py) the rest; with ``probe`` > 0 the last share ``probe`` of
    the limit (or all the time left when the search stalls earlier) goes to objective-cap
    probes that raise the bound (offloading_probe.py), then CP-SAT resumes on what is left."""
    td, q, W = cm.data, cm.q, cm.data.W
    t0 = time.perf_counter()
    later = max(lns, probe)  # the share of the limit left for the search and the probes
    first = time_limit if (time_limit is None or later <= 0) else time_limit * (1.0 - later)
    # params: expert CP-SAT parameters, e.g. linearization_level
    solver, code, status = run_cpsat(cm.model, time_limit=first, threads=threads, seed=seed, log=log,
                                     params=params)
    name = solver.StatusName(code)
    arr = sum(td.arrival)
    raw = RawSolve(status, f"CP-SAT {name}", 0.0, extra={
        "branches": solver.NumBranches(), "conflicts": solver.NumConflicts(), "wall_time": solver.WallTime()})
    values = list(solver.ResponseProto().solution) if status in ("optimal", "feasible") else None
    b_ticks = solver.BestObjectiveBound() if values is not None else None
    if values is not None:
        raw.extra["cpsat_objective"] = (solver.ObjectiveValue() / q - arr) / W
    if status in ("feasible", "timeout"):
        # never an empty answer: the heuristic schedules the model was built with (all-cloud,
        # list) when CP-SAT has none or a worse one; the time left goes to the phases below
        values, status = _heuristic_vector(cm, values, status, raw, t0=t0, time_limit=time_limit, seed=seed)
    if values is not None:
        # probes only where the model's bound is one of the true problem (exact resources)
        probing = status == "feasible" and time_limit is not None and probe > 0 and cm.resource_exact
        if status == "feasible" and time_limit is not None and lns > 0:
            lns_end = t0 + time_limit * ((1.0 - probe) if probing else 1.0)
            values, raw.extra["lns"] = improve(cm, values, deadline=lns_end, seed=seed, params=params,
                                               patience=LNS_PATIENCE)
        if probing:
            # the reserved share, or half of the time left when the search stalled earlier
            # (the other half goes to CP-SAT below, which proved heft-random 100 x 8 that way)
            now, end = time.perf_counter(), t0 + time_limit
            lo0 = _ceil_ticks(b_ticks) or 0
            values, lo, raw.extra["probe"] = bisect(cm, values, lo0, deadline=now + max(probe * time_limit,
                                                                                         (end - now) / 2),
                                                    seed=seed, params=params)
            if lo > lo0 or b_ticks is not None:  # a refuted cap: the ticked optimum is >= lo
                b_ticks = lo if b_ticks is None else max(b_ticks, lo)
            if raw.extra["probe"]["closed"]:
                status = "optimal"
        if status == "feasible" and time_limit is not None and (lns > 0 or probing):
            left = t0 + time_limit - time.perf_counter()
            if left > 1.0:
                # the search stalled: CP-SAT again on the full model from the best schedule,
                # for the rest of the time (a better schedule, a proof or a higher bound)
                values, b_ticks, status = _resume_cpsat(cm, values, b_ticks, left, threads=threads, seed=seed,
                                                        params=params, extra=raw.extra,
                                                        floor_ticks=_ceil_ticks(b_ticks))
        raw.server = [next(s for s, lit in cm.present[g].items() if values[lit.Index()]) for g in range(td.N)]
        raw.start = [float(values[v.Index()]) for v in cm.start]
        raw.finish = [raw.start[g] + td.dur[g][raw.server[g]] for g in range(td.N)]
        obj_ticks = sum(values[v.Index()] for v in cm.cmax)
        raw.model_objective = (obj_ticks / q - arr) / W
        raw.extra["ceiled_objective"] = raw.model_objective
        if b_ticks is not None:  # None: CP-SAT found nothing, the schedule came from elsewhere
            raw.extra["ceiled_bound"] = (b_ticks / q - arr) / W
            if obj_ticks <= b_ticks:  # the search reached CP-SAT's bound: optimal for the model
                raw.status = "optimal"
            # valid for the true problem only when the resources were scaled exactly (ceiled
            # demands / floored capacities make the model a restriction, not a relaxation)
            raw.bound = raw.extra["ceiled_bound"] - cm.adjustment_ticks / q if cm.resource_exact else None
    raw.runtime = time.perf_counter() - t0
    return raw


def _heuristic_vector(cm: CpsatModel, values: list[int] | None, status: str, raw: RawSolve, *, t0: float,
                      time_limit: float | None, seed: int) -> tuple[list[int] | None, str]:
    """The best of CP-SAT's incumbent ``values`` (None: it found nothing) and the model's
    heuristic schedules (all-cloud ``cm.alt``, list schedule ``cm.hint``), as a full solution
    vector of the model; ``raw`` records which heuristic won (``alt_schedule``)."""
    td, q = cm.data, cm.q
    arr = sum(td.arrival) * q
    cur = None if values is None else sum(values[v.Index()] for v in cm.cmax)
    cands = [(lab, c) for lab, c in (("all-cloud", cm.alt), ("list", cm.hint)) if c is not None]
    for lab, sched in sorted(cands, key=lambda lc: objective_of(td, *lc[1])):
        ticks = objective_of(td, *sched) * td.W + arr
        if cur is not None and ticks >= cur - 0.5:
            break  # sorted: no later heuristic beats the incumbent either
        left = 10.0 if time_limit is None else max(0.1, min(10.0, t0 + time_limit - time.perf_counter()))
        vec = _solution_vector(cm, *sched, seed=seed, time_limit=left)
        if vec is not None:
            raw.status = "feasible"
            raw.extra["alt_schedule"] = lab
            if values is None:
                raw.message = f"{raw.message}; the {lab} heuristic schedule"
            return vec, "feasible"
    return values, status


def _ceil_ticks(b_ticks: float | None) -> int | None:
    """The smallest integer tick count a proven (float) bound of the ticked objective allows."""
    return None if b_ticks is None else int(math.ceil(b_ticks - 1e-6))


def _resume_cpsat(cm: CpsatModel, values: list[int], b_ticks: float | None, time_limit: float, *, threads: int,
                  seed: int, params: dict | None, extra: dict,
                  floor_ticks: int | None = None) -> tuple[list[int], float | None, str]:
    """CP-SAT on the full model hinted with ``values``: the better schedule and the larger
    bound of the two runs (both bound the same model). ``floor_ticks``: a proven lower bound
    of the model's optimum (CP-SAT's earlier bound, refuted probes), added as a constraint:
    it removes no optimal solution."""
    sub = cm.model.clone()
    if floor_ticks is not None:
        sub.Add(sum(cm.cmax) >= int(floor_ticks))
    proto = sub.Proto()
    proto.clear_solution_hint()
    proto.solution_hint.vars.extend(range(len(values)))
    proto.solution_hint.values.extend(values)
    solver, _, status = run_cpsat(sub, time_limit=time_limit, threads=threads, seed=seed + 1, params=params)
    extra["resumed_cpsat"] = {"status": status, "time_limit": round(time_limit, 2)}
    if status in ("optimal", "feasible"):
        b_ticks = solver.BestObjectiveBound() if b_ticks is None else max(b_ticks, solver.BestObjectiveBound())
        new = list(solver.ResponseProto().solution)
        if sum(new[v.Index()] for v in cm.cmax) <= sum(values[v.Index()] for v in cm.cmax):
            values = new
    return values, b_ticks, "feasible"


def _solution_vector(cm: CpsatModel, server: list[int], start: list[float], *, seed: int = 0,
                     time_limit: float = 10.0) -> list[int] | None:
    """A full solution vector of the model for a schedule in ticks (servers and starts fixed;
    CP-SAT fills in the rest), or None when the schedule does not fit the model's windows."""
    sub = cm.model.clone()
    proto = sub.Proto()
    for g in range(cm.data.N):
        for s, lit in cm.present[g].items():
            dom = proto.variables[lit.Index()].domain
            dom.clear()
            dom.extend([int(s == server[g])] * 2)
        dom = proto.variables[cm.start[g].Index()].domain
        bounds = list(dom)  # (the proto's repeated field takes no negative index)
        lo, hi = bounds[0], bounds[-1]
        t = int(round(start[g]))
        if not lo <= t <= hi:
            return None
        dom.clear()
        dom.extend([t, t])
    proto.clear_solution_hint()
    solver, _, status = run_cpsat(sub, time_limit=time_limit, threads=1, seed=seed)
    return list(solver.ResponseProto().solution) if status in ("optimal", "feasible") else None
