"""Referee of the offloading family (patent): DAG workflows on edge servers, time in seconds.

Durations, input and transfer times come from :mod:`edgebench.instances.semantics`
(task_duration, input_time, transfer_time, exec_time, can_host); checks and objectives are
defined in ``docs/referee.md``.
"""

from __future__ import annotations

import numpy as np

from edgebench.instances import semantics
from edgebench.instances.model import Instance
from edgebench.referee.common import ATOL, RTOL, Collector, Evaluation, IdentityCache, finish, fmt
from edgebench.solution import OffloadingDecisions

FAMILY = "offloading"


def _tol(x: float) -> float:
    return ATOL + RTOL * abs(x)


def _static(instance: Instance) -> list[tuple[float, float]]:
    """Per workflow: (critical path at minimum execution times, best sequential time)."""
    o = instance.offloading
    assert o is not None
    S = len(o.servers)
    out = []
    for w, wf in enumerate(o.workflows):
        n = len(wf.tasks)
        host = [[s for s in range(S) if semantics.can_host(o, w, t, s)] or list(range(S)) for t in range(n)]
        ex = [[semantics.exec_time(o, w, t, s) for s in range(S)] for t in range(n)]
        best = [min(ex[t][s] for s in host[t]) for t in range(n)]
        preds: list[list[int]] = [[] for _ in range(n)]
        for e in wf.edges:
            preds[e.dst].append(e.src)
        level = [0.0] * n
        for v in semantics.topological_order(n, ((e.src, e.dst) for e in wf.edges)):
            level[v] = best[v] + max((level[u] for u in preds[v]), default=0.0)
        cp = max(level)
        all_host = [s for s in range(S) if all(s in host[t] for t in range(n))] or list(range(S))
        seq = min(sum(ex[t][s] for t in range(n)) for s in all_host)
        out.append((cp, seq))
    return out


_static_cache = IdentityCache(_static, size=32)


def evaluate(instance: Instance, decisions: OffloadingDecisions) -> Evaluation:
    o = instance.offloading
    assert o is not None
    col = Collector()
    W, S = len(o.workflows), len(o.servers)
    if len(decisions.workflows) != W:
        col.add("decision_count", "solution", abs(len(decisions.workflows) - W),
                f"{len(decisions.workflows)} workflow decisions for {W} workflows")
        return finish(FAMILY, col, {}, {})
    sound = True
    finishes: list[list[float] | None] = []
    # per server: start, finish, cpu, mem, (workflow, task)
    occ: list[list[tuple[float, float, float, float, int, int]]] = [[] for _ in range(S)]
    for w, (wf, wd) in enumerate(zip(o.workflows, decisions.workflows)):
        n = len(wf.tasks)
        if len(wd.tasks) != n:
            col.add("task_count", f"workflow {w}", abs(len(wd.tasks) - n),
                    f"workflow {w} has {len(wd.tasks)} task schedules for {n} tasks")
            sound = False
            finishes.append(None)
            continue
        srv = [ts.server for ts in wd.tasks]
        bad = False
        for t, s in enumerate(srv):
            if s >= S:
                col.add("server_index", f"workflow {w} task {t}", s - (S - 1),
                        f"workflow {w} task {t} is on server {s}, which does not exist ({S} servers)")
                bad = True
        if bad:
            sound = False
            finishes.append(None)
            continue
        st = [float(ts.start) for ts in wd.tasks]
        fin = [st[t] + semantics.task_duration(o, w, t, srv[t]) for t in range(n)]
        finishes.append(fin)
        for t in range(n):
            earliest = wf.arrival + semantics.input_time(o, w, t, srv[t])
            if st[t] < earliest - _tol(earliest):
                col.add("start_before_arrival", f"workflow {w} task {t}", earliest - st[t],
                        f"workflow {w} task {t} starts at {fmt(st[t])} on server {srv[t]}, before "
                        f"{fmt(earliest)} (arrival {fmt(wf.arrival)} + input time)")
        for e, edge in enumerate(wf.edges):
            a, b = edge.src, edge.dst
            ready = fin[a] + semantics.transfer_time(o, w, e, srv[a], srv[b])
            if st[b] < ready - _tol(ready):
                col.add("precedence", f"workflow {w} edge {e} (task {a} -> task {b})", ready - st[b],
                        f"workflow {w} task {b} starts at {fmt(st[b])} on server {srv[b]}, before task {a} "
                        f"(server {srv[a]}) finishes at {fmt(fin[a])} and its data arrives at {fmt(ready)}")
        for t in range(n):
            s = srv[t]
            if not o.servers[s].is_cloud and fin[t] > st[t]:
                cpu, mem = semantics.task_demand(o, w, t)
                occ[s].append((st[t], fin[t], cpu, mem, w, t))

    # ---- capacity of every edge server at every instant -------------------------------
    for s, items in enumerate(occ):
        if not items:
            continue
        srv_m = o.servers[s]
        arr = np.array([x[:4] for x in items], dtype=float)
        times = np.unique(arr[:, :2])
        i0 = np.searchsorted(times, arr[:, 0])
        i1 = np.searchsorted(times, arr[:, 1])
        seg_a, seg_b = times[:-1], times[1:]
        long_enough = (seg_b - seg_a) > ATOL + RTOL * np.abs(seg_a)
        for cid, what, col_idx, cap in (("capacity_cpu", "cpu", 2, srv_m.cpu), ("capacity_mem", "mem", 3, srv_m.mem)):
            diff = np.zeros(len(times))
            np.add.at(diff, i0, arr[:, col_idx])
            np.add.at(diff, i1, -arr[:, col_idx])
            load = np.cumsum(diff)[:-1]
            for i in np.nonzero((load > cap + _tol(cap)) & long_enough)[0].tolist():
                a, b = float(seg_a[i]), float(seg_b[i])
                # the exact sum of the tasks running in the segment (the cumulative sum may round)
                running = [k for k, x in enumerate(items) if x[0] <= a < x[1]]
                exact = float(sum(items[k][col_idx] for k in running))
                if exact <= cap + _tol(cap):
                    continue
                if col.room() <= 0:
                    col.skip(1)
                    continue
                running = [(items[k][4], items[k][5]) for k in running]
                col.add(cid, f"server {s} segment [{fmt(a)}, {fmt(b)})", float(exact - cap),
                        f"tasks {[f'w{w}t{t}' for w, t in running]} use {fmt(float(exact))} {what} on server {s} "
                        f"in [{fmt(a)}, {fmt(b)}), capacity {fmt(cap)}")

    details: dict = {"finish": finishes}
    if not sound:
        return finish(FAMILY, col, {}, details)
    static = _static_cache(instance)
    makespans, slrs, speedups = [], [], []
    for w, wf in enumerate(o.workflows):
        fin = finishes[w]
        assert fin is not None
        ms = max(fin) - wf.arrival
        makespans.append(ms)
        cp, seq = static[w]
        slrs.append(ms / cp if cp > 0 else None)
        speedups.append(seq / ms if ms > 0 else None)
    details["makespan"] = makespans
    details["slr"] = slrs
    details["speedup"] = speedups
    slr_ok = [x for x in slrs if x is not None]
    sp_ok = [x for x in speedups if x is not None]
    all_fin = max(max(f) for f in finishes if f is not None)
    objectives = {
        "mean_makespan": float(np.mean(makespans)),
        "makespan": all_fin - min(wf.arrival for wf in o.workflows),
        "mean_slr": float(np.mean(slr_ok)) if slr_ok else None,
        "mean_speedup": float(np.mean(sp_ok)) if sp_ok else None,
    }
    return finish(FAMILY, col, objectives, details)  # type: ignore[arg-type]


__all__ = ["evaluate"]
