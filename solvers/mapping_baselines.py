"""The CES thesis's single-job baselines (family mapping, kind "heuristic"):

* ``flexitask`` — Kubernetes-like two-phase scheduler: filter the nodes by resources and by
  load thresholds on the short-term average and long-term peak utilisation, then score by
  idleness, balance and selection "heat"; bandwidth: each task link requests the highest
  bandwidth level that is free along its route (bandwidth as a static resource).
* ``smart`` — weighted sum of resource efficiency, load balance, network connectivity and
  resource margin; bandwidth by link importance (the link's share of the job's bw_max).
* ``greedy-bw`` — greedy maximum bandwidth satisfaction: heavy-communicating task pairs
  are mapped together or adjacent, then the bandwidth is split by an LP that maximises the
  job's satisfaction D_BW (or by max-min fair water-filling).

(The thesis's ``random`` baseline is ``edgebench.solvers.random_baseline``.)

Common frame. Task nodes are mapped one by one; a node is a candidate for a task node only
if its free CPU and RAM hold the task and every task link to an already mapped task node
can get its bw_min along the canonical route (``semantics.canonical_route``) — that bw_min
is reserved at once, so a completed node mapping always has room for every bw_min. If a
pass gets stuck, it is retried with the other task orders (decreasing CPU+RAM demand, then
index order); only then does the placement fail. Bandwidth above bw_min is handed out by
each baseline's own rule. Co-located task links get an empty route and their bw_max (they
use no physical bandwidth and count as fully satisfied).

A mapping instance may hold several jobs: the registered solvers place them in arrival
order (ties by index), each on the network left by the earlier ones, all jobs treated as
simultaneously active (``start`` = arrival). The queue simulator (``mapping_sim``) calls
the same placers through :data:`edgebench.solvers.mapping_sim.PLACERS`. Every number the
thesis leaves open is documented, with its reason, in ``docs/mapping-baselines.md``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from edgebench.instances import semantics
from edgebench.instances.generators import as_choice, as_float, as_int
from edgebench.instances.model import Instance
from edgebench.registry import Result, make_result, register
from edgebench.solution import MappingDecisions
from edgebench.solvers.mapping_sim import (
    EPS,
    HISTORY_LEN,
    PLACERS,
    NetworkState,
    Placement,
    SimTimeout,
    check_deadline,
    check_seed,
    fit_bandwidth,
    make_placement,
    parse_params,
    referee_stats,
    register_placer,
)

# --------------------------------------------------------------------------------------
# Parameter defaults (reasons in docs/mapping-baselines.md)
# --------------------------------------------------------------------------------------

#: FlexiTask: filter thresholds on node utilisation (max of CPU and RAM share in use)
FLEXI_AVG_THRESHOLD = 0.8
FLEXI_PEAK_THRESHOLD = 0.9
#: FlexiTask: windows, in utilisation samples (short-term average, long-term peak) and in
#: node selections (heat)
FLEXI_SHORT_WINDOW = 3
FLEXI_LONG_WINDOW = 10
FLEXI_HEAT_WINDOW = 8
#: FlexiTask score weights: idleness, balance, (1 - heat)
FLEXI_WEIGHTS = (1.0, 1.0, 1.0)
#: Smart score weights: resource efficiency, load balance, network connectivity, margin
SMART_WEIGHTS = (0.25, 0.25, 0.25, 0.25)
#: Smart: the thesis's ideal node utilisation (U_ideal of CES-PPO's R_map)
SMART_IDEAL = 0.625


def _weights(n: int):
    def check(v: Any) -> tuple[float, ...]:
        if not isinstance(v, (list, tuple)) or len(v) != n:
            raise TypeError(f"expected {n} non-negative weights")
        w = tuple(as_float(0.0, None)(x) for x in v)
        if sum(w) <= 0:
            raise ValueError("the weights must not all be zero")
        return w

    return check


def _unit(lo_open: bool = False, hi_open: bool = False):
    return as_float(0.0, 1.0, lo_open=lo_open, hi_open=hi_open)


FLEXI_SPEC = {
    "avg_threshold": (FLEXI_AVG_THRESHOLD, _unit(lo_open=True)),
    "peak_threshold": (FLEXI_PEAK_THRESHOLD, _unit(lo_open=True)),
    "short_window": (FLEXI_SHORT_WINDOW, as_int(1, HISTORY_LEN)),
    "long_window": (FLEXI_LONG_WINDOW, as_int(1, HISTORY_LEN)),
    "heat_window": (FLEXI_HEAT_WINDOW, as_int(1, HISTORY_LEN)),
    "weights": (FLEXI_WEIGHTS, _weights(3)),
}
SMART_SPEC = {
    "weights": (SMART_WEIGHTS, _weights(4)),
    "ideal_utilisation": (SMART_IDEAL, _unit(lo_open=True, hi_open=True)),
}
GREEDY_SPEC = {
    "bandwidth": ("lp", as_choice("lp", "waterfill")),
}

FLEXI_PARAMS = {
    "avg_threshold": f"float in (0, 1], default {FLEXI_AVG_THRESHOLD}: filter, short-term average utilisation limit",
    "peak_threshold": f"float in (0, 1], default {FLEXI_PEAK_THRESHOLD}: filter, long-term peak utilisation limit",
    "short_window": f"int >= 1, default {FLEXI_SHORT_WINDOW}: utilisation samples in the short-term average",
    "long_window": f"int >= 1, default {FLEXI_LONG_WINDOW}: utilisation samples in the long-term peak",
    "heat_window": f"int >= 1, default {FLEXI_HEAT_WINDOW}: recent node selections counted as heat",
    "weights": f"3 floats >= 0, default {list(FLEXI_WEIGHTS)}: score weights of idleness, balance, 1 - heat",
}
SMART_PARAMS = {
    "weights": f"4 floats >= 0, default {list(SMART_WEIGHTS)}: efficiency, balance, connectivity, margin",
    "ideal_utilisation": f"float in (0, 1), default {SMART_IDEAL}: the efficiency term's target utilisation",
}
GREEDY_PARAMS = {
    "bandwidth": "'lp' (default: maximise the job's D_BW) or 'waterfill' (max-min fair satisfaction)",
}


# ======================================================================================
# Common frame: one job's tentative mapping
# ======================================================================================


class _Build:
    """A tentative mapping of job k on a copy of the free resources of ``state``."""

    def __init__(self, state: NetworkState, k: int):
        payload = state.payload
        self.payload = payload
        self.state = state
        self.k = k
        self.job = job = payload.jobs[k]
        self.n = len(job.tasks)
        self.cpu = [float(t.cpu) for t in job.tasks]
        self.ram = [float(t.ram) for t in job.tasks]
        self.cap_cpu = state.cap_cpu
        self.cap_ram = state.cap_ram
        self.free_cpu = state.free_cpu()
        self.free_ram = state.free_ram()
        self.free_bw = state.free_bw()
        self.where = [-1] * self.n
        self.placed: list[int] = []  # task nodes in mapping order
        #: per task node: (task link index, other task node, this one is the link's source)
        self.inc: list[list[tuple[int, int, bool]]] = [[] for _ in range(self.n)]
        for i, v in enumerate(job.links):
            self.inc[v.src].append((i, v.dst, True))
            self.inc[v.dst].append((i, v.src, False))

    def needs(self, t: int, p: int) -> tuple[dict[int, float], list[tuple[int, int]]] | None:
        """bw_min per physical link that mapping task node t on p adds for its links to
        mapped task nodes, and (task link, hops) of those links; None if a route is missing."""
        need: dict[int, float] = {}
        hops: list[tuple[int, int]] = []
        for i, o, is_src in self.inc[t]:
            q = self.where[o]
            if q < 0:
                continue
            if q == p:
                hops.append((i, 0))
                continue
            route = semantics.canonical_route(self.payload, p, q) if is_src else \
                semantics.canonical_route(self.payload, q, p)
            if route is None:
                return None
            hops.append((i, len(route)))
            bmin = float(self.job.links[i].bw_min)
            for r in route:
                need[r] = need.get(r, 0.0) + bmin
        return need, hops

    def candidates(self, t: int, deadline: float | None = None) -> list[tuple[int, list[tuple[int, int]]]]:
        """Nodes that can take task node t now (CPU, RAM and every bw_min to mapped nodes),
        each as (node, [(task link, hops)] of t's links to mapped task nodes). No candidate's
        per-link loads are kept (issue 28: they were O(candidates x route length), 10^8 on a
        10,000-node ring). Where every link's free bandwidth covers the sum of t's bw_min to
        mapped nodes, no link can be short: hops come from one search per mapped neighbour
        and no route is built. Otherwise each candidate's loads are summed and checked, one
        candidate at a time. Same candidates, in the same order, as summing them all."""
        ok = np.flatnonzero((self.free_cpu >= self.cpu[t] - EPS) & (self.free_ram >= self.ram[t] - EPS))
        mapped = [(i, self.where[o], is_src) for i, o, is_src in self.inc[t] if self.where[o] >= 0]
        fb = self.free_bw
        total = 0.0
        for i, _, _ in mapped:
            total += float(self.job.links[i].bw_min)  # >= any link's load (the loads sum subsets, in order)
        out: list[tuple[int, list[tuple[int, int]]]] = []
        if not mapped or not len(fb) or total <= float(fb.min()) + EPS:
            table = semantics.route_table(self.payload)
            # t is the link's source: route p -> q (a search into q); else q -> p (from q)
            rows = [(i, table.hops_into(q) if is_src else table[q]) for i, q, is_src in mapped]
            for p in ok.tolist():
                if all(row.reachable(p) for _, row in rows):
                    out.append((p, [(i, row.hops[p]) for i, row in rows]))
            return out
        for p in ok.tolist():
            check_deadline(deadline)
            got = self.needs(t, p)
            if got is not None and all(x <= fb[r] + EPS for r, x in got[0].items()):
                out.append((p, got[1]))
        return out

    def place(self, t: int, p: int, need: dict[int, float]) -> None:
        self.where[t] = p
        self.placed.append(t)
        self.free_cpu[p] -= self.cpu[t]
        self.free_ram[p] -= self.ram[t]
        for r, x in need.items():
            self.free_bw[r] -= x

    def routes(self) -> list[tuple[int, ...]]:
        """Canonical route of every task link under the completed mapping (() co-located)."""
        out = []
        for v in self.job.links:
            a, b = self.where[v.src], self.where[v.dst]
            route = semantics.canonical_route(self.payload, a, b)
            assert route is not None  # checked by candidates()
            out.append(route)
        return out

    def finish(self, bandwidths: list[float]) -> Placement | None:
        routes = self.routes()
        links = [(rt, float(b) if rt else float(v.bw_max)) for rt, b, v in zip(routes, bandwidths, self.job.links)]
        pl = make_placement(self.payload, self.k, self.where, links)
        return fit_bandwidth(self.payload, self.state, pl)


def _orders(job, primary: list[int]) -> list[list[int]]:
    """The primary task order, then decreasing CPU+RAM demand, then index order (distinct)."""
    n = len(job.tasks)
    demand = sorted(range(n), key=lambda t: (-(job.tasks[t].cpu + job.tasks[t].ram), t))
    out: list[list[int]] = []
    for order in (primary, demand, list(range(n))):
        if order and order not in out:
            out.append(order)
    return out


def _spread(b: _Build, t: int, cands) -> int:
    """Most free node (free CPU + free RAM, in units), ties lowest index."""
    return min(range(len(cands)), key=lambda c: (-(b.free_cpu[cands[c][0]] + b.free_ram[cands[c][0]]), cands[c][0]))


def _pack(b: _Build, t: int, cands) -> int:
    """First node in index order."""
    return 0


def _map_nodes(state: NetworkState, k: int, primary: list[int], choose, deadline: float | None) -> _Build | None:
    """Map job k's task nodes with ``choose(build, t, cands) -> index into cands``, trying
    the task orders of :func:`_orders` until one pass maps every task node; as a last
    resort, the two rules the instance generator certifies jobs with (decreasing demand;
    most free node, then first node in index order — ``generators.mapping.certify_job``),
    so that every generated job fits the network without other jobs."""
    job = state.payload.jobs[k]
    # necessary conditions first (most calls from a loaded stream fail; fail them cheaply)
    fc, fr = state.free_cpu(), state.free_ram()
    if (sum(t.cpu for t in job.tasks) > fc.sum() + EPS or sum(t.ram for t in job.tasks) > fr.sum() + EPS
            or any(not ((fc >= t.cpu - EPS) & (fr >= t.ram - EPS)).any() for t in job.tasks)):
        return None
    passes = [(order, choose) for order in _orders(job, primary)]
    demand = _orders(job, [])[0]
    passes += [(demand, _spread), (demand, _pack)]
    for order, rule in passes:
        check_deadline(deadline)
        b = _Build(state, k)
        for t in order:
            cands = b.candidates(t, deadline)
            if not cands:
                break
            p = cands[rule(b, t, cands)][0]
            got = b.needs(t, p)
            assert got is not None  # a candidate's routes exist
            b.place(t, p, got[0])
        else:
            return b
    return None


# ======================================================================================
# Bandwidth rules (applied after the node mapping; bw_min is already reserved)
# ======================================================================================


def _level_bandwidths(b: _Build, routes, order: list[int], target: list[int]) -> list[float]:
    """Links in ``order`` take the highest bandwidth level <= their target level whose extra
    above bw_min is free along the route (level 0 = bw_min, reserved already)."""
    levels = b.payload.objective.bandwidth_levels
    out = [0.0] * len(routes)
    for i in order:
        v = b.job.links[i]
        rt = routes[i]
        if not rt:
            out[i] = float(v.bw_max)
            continue
        room = min(float(b.free_bw[r]) for r in rt)
        a = target[i]
        while a > 0 and semantics.bandwidth_level(v.bw_min, v.bw_max, a, levels) - v.bw_min > room + EPS:
            a -= 1
        bw = semantics.bandwidth_level(v.bw_min, v.bw_max, a, levels)
        for r in rt:
            b.free_bw[r] -= bw - v.bw_min
        out[i] = bw
    return out


def _lp_bandwidths(b: _Build, routes) -> list[float]:
    """Maximise the job's D_BW: max sum_v delta_v over the non-co-located links with
    bw_max > bw_min, delta_v in [0, 1], B_v = bw_min + delta_v (bw_max - bw_min), subject to
    the free bandwidth of every physical link (net of the reserved bw_min). HiGHS via scipy."""
    links = b.job.links
    out = [float(v.bw_min) for v in links]
    idx = [i for i, rt in enumerate(routes) if rt and links[i].bw_max > links[i].bw_min]
    if not idx:
        return out
    rows = sorted({r for i in idx for r in routes[i]})
    row_of = {r: j for j, r in enumerate(rows)}
    A = np.zeros((len(rows), len(idx)))
    for c, i in enumerate(idx):
        span = float(links[i].bw_max - links[i].bw_min)
        for r in routes[i]:
            A[row_of[r], c] += span
    cap = np.maximum(np.array([b.free_bw[r] for r in rows]) - EPS, 0.0)
    if (A.sum(axis=1) <= cap).all():  # every link can have its bw_max: the LP's unique optimum
        delta = np.ones(len(idx))
    else:
        from scipy.optimize import linprog

        res = linprog(-np.ones(len(idx)), A_ub=A, b_ub=cap, bounds=[(0.0, 1.0)] * len(idx), method="highs")
        delta = np.clip(res.x, 0.0, 1.0) if res.status == 0 else np.zeros(len(idx))
    load = A @ delta
    over = load > cap
    if over.any():  # solver rounding: shrink the links through an overloaded row
        scale = np.ones(len(rows))
        scale[over] = cap[over] / load[over]
        for c, i in enumerate(idx):
            delta[c] *= min(scale[row_of[r]] for r in routes[i])
    for c, i in enumerate(idx):
        out[i] = float(links[i].bw_min + delta[c] * (links[i].bw_max - links[i].bw_min))
    for i, rt in enumerate(routes):
        for r in rt:
            b.free_bw[r] -= out[i] - links[i].bw_min
    return out


def _waterfill_bandwidths(b: _Build, routes) -> list[float]:
    """Max-min fair satisfaction (progressive filling): every unfrozen link raises its
    delta at the same rate; a link freezes at delta 1 or when a physical link on its route
    runs out of free bandwidth."""
    links = b.job.links
    out = [float(v.bw_min) for v in links]
    idx = [i for i, rt in enumerate(routes) if rt and links[i].bw_max > links[i].bw_min]
    delta = {i: 0.0 for i in idx}
    span = {i: float(links[i].bw_max - links[i].bw_min) for i in idx}
    room = {r: max(float(b.free_bw[r]) - EPS, 0.0) for i in idx for r in routes[i]}
    active = set(idx)
    while active:
        rate: dict[int, float] = {}
        for i in active:
            for r in routes[i]:
                rate[r] = rate.get(r, 0.0) + span[i]
        step = min(1.0 - delta[i] for i in active)
        for r, s in rate.items():
            step = min(step, room[r] / s)
        step = max(step, 0.0)
        for i in active:
            delta[i] += step
        for r, s in rate.items():
            room[r] -= step * s
        full = {r for r in rate if room[r] <= 1e-12 * (1.0 + float(b.free_bw[r]))}
        active = {i for i in active if delta[i] < 1.0 - 1e-12 and not any(r in full for r in routes[i])}
    for i in idx:
        out[i] = float(links[i].bw_min + min(delta[i], 1.0) * span[i])
        for r in routes[i]:
            b.free_bw[r] -= out[i] - links[i].bw_min
    return out


# ======================================================================================
# FlexiTask
# ======================================================================================


def _node_util(b: _Build) -> np.ndarray:
    return np.maximum(1.0 - b.free_cpu / b.cap_cpu, 1.0 - b.free_ram / b.cap_ram)


@register_placer("flexitask", FLEXI_SPEC)
def place_flexitask(state: NetworkState, k: int, *, rng=None, deadline: float | None = None,
                    avg_threshold: float = FLEXI_AVG_THRESHOLD, peak_threshold: float = FLEXI_PEAK_THRESHOLD,
                    short_window: int = FLEXI_SHORT_WINDOW, long_window: int = FLEXI_LONG_WINDOW,
                    heat_window: int = FLEXI_HEAT_WINDOW, weights=FLEXI_WEIGHTS) -> Placement | None:
    """FlexiTask placement of job k on ``state`` (None when it does not fit)."""
    hist = list(state.history)
    short_hist = hist[len(hist) - (short_window - 1):] if short_window > 1 else []
    long_hist = hist[len(hist) - (long_window - 1):] if long_window > 1 else []
    committed = list(state.selections)[-heat_window:]
    w_idle, w_bal, w_heat = weights

    def choose(b: _Build, t: int, cands) -> int:
        cur = _node_util(b)
        short_avg = (sum(short_hist, np.zeros_like(cur)) + cur) / (len(short_hist) + 1)
        long_peak = np.maximum.reduce(long_hist + [cur]) if long_hist else cur
        ps = np.array([p for p, _ in cands])
        ok = (short_avg[ps] <= avg_threshold + EPS) & (long_peak[ps] <= peak_threshold + EPS)
        if not ok.any():  # soft filter: never leave a job unplaceable that the resources admit
            ok[:] = True
        recent = (committed + [b.where[x] for x in b.placed])[-heat_window:]
        heat = np.bincount(np.array(recent, dtype=int), minlength=state.P)[ps] / heat_window if recent else 0.0
        fc = (b.free_cpu[ps] - b.cpu[t]) / b.cap_cpu[ps]
        fr = (b.free_ram[ps] - b.ram[t]) / b.cap_ram[ps]
        idle = 0.5 * (fc + fr)
        bal = 1.0 - np.abs(fc - fr) / 2.0  # 1 - std of the two used shares
        score = w_idle * idle + w_bal * bal + w_heat * (1.0 - heat)
        score = np.where(ok, score, -np.inf)
        return int(np.argmax(score))

    b = _map_nodes(state, k, list(range(len(state.payload.jobs[k].tasks))), choose, deadline)
    if b is None:
        return None
    routes = b.routes()
    top = b.payload.objective.bandwidth_levels - 1
    return b.finish(_level_bandwidths(b, routes, list(range(len(routes))), [top] * len(routes)))


# ======================================================================================
# Smart
# ======================================================================================


@register_placer("smart", SMART_SPEC)
def place_smart(state: NetworkState, k: int, *, rng=None, deadline: float | None = None,
                weights=SMART_WEIGHTS, ideal_utilisation: float = SMART_IDEAL) -> Placement | None:
    """Smart placement of job k on ``state`` (None when it does not fit)."""
    payload = state.payload
    job = payload.jobs[k]
    w_eff, w_bal, w_conn, w_mar = weights
    P = state.P
    out_links = semantics.out_links(payload)
    span_ideal = max(ideal_utilisation, 1.0 - ideal_utilisation)

    def choose(b: _Build, t: int, cands) -> int:
        ps = np.array([p for p, _ in cands])
        U = 1.0 - 0.5 * (b.free_cpu / b.cap_cpu + b.free_ram / b.cap_ram)
        d = 0.5 * (b.cpu[t] / b.cap_cpu[ps] + b.ram[t] / b.cap_ram[ps])
        after = U[ps] + d
        eff = 1.0 - np.abs(after - ideal_utilisation) / span_ideal
        s1, s2 = U.sum(), (U * U).sum()
        mean = (s1 + d) / P
        var = (s2 - U[ps] ** 2 + after ** 2) / P - mean ** 2
        bal = 1.0 - 2.0 * np.sqrt(np.maximum(var, 0.0))
        total = sum(float(job.links[i].bw_max) for i, _ in cands[0][1])
        if cands[0][1] and total > 0:
            conn = np.array([sum(float(job.links[i].bw_max) / (1.0 + h) for i, h in hops) / total
                             for _, hops in cands])
        else:
            out_bw = np.array([sum(float(b.free_bw[r]) for _, r in out_links[p]) for p in ps])
            conn = out_bw / out_bw.max() if out_bw.max() > 0 else np.zeros(len(ps))
        margin = np.minimum((b.free_cpu[ps] - b.cpu[t]) / b.cap_cpu[ps], (b.free_ram[ps] - b.ram[t]) / b.cap_ram[ps])
        score = w_eff * eff + w_bal * bal + w_conn * conn + w_mar * margin
        return int(np.argmax(score))

    demand = sorted(range(len(job.tasks)), key=lambda t: (-(job.tasks[t].cpu + job.tasks[t].ram), t))
    b = _map_nodes(state, k, demand, choose, deadline)
    if b is None:
        return None
    routes = b.routes()
    levels = payload.objective.bandwidth_levels
    tot = sum(float(v.bw_max) for v in job.links)
    imp = [float(v.bw_max) / tot if tot > 0 else 1.0 for v in job.links]
    top = max(imp, default=1.0)
    target = [int(np.ceil((levels - 1) * x / top - 1e-9)) if top > 0 else levels - 1 for x in imp]
    order = sorted(range(len(routes)), key=lambda i: (-imp[i], i))
    return b.finish(_level_bandwidths(b, routes, order, target))


# ======================================================================================
# Greedy bandwidth
# ======================================================================================


def comm_order(job) -> list[int]:
    """Task nodes in order of communication weight, Prim-like: first the task node with the
    largest total bw_max on its links, then repeatedly the unmapped one with the largest
    bw_max to the mapped ones (ties: larger total, then lower index)."""
    n = len(job.tasks)
    w = np.zeros((n, n))
    for v in job.links:
        w[v.src, v.dst] += v.bw_max
        w[v.dst, v.src] += v.bw_max
    total = w.sum(axis=1)
    order: list[int] = []
    left = set(range(n))
    to_set = np.zeros(n)
    while left:
        t = min(left, key=lambda x: (-to_set[x], -total[x], x))
        order.append(t)
        left.discard(t)
        to_set += w[t]
    return order


@register_placer("greedy-bw", GREEDY_SPEC)
def place_greedy_bw(state: NetworkState, k: int, *, rng=None, deadline: float | None = None,
                    bandwidth: str = "lp") -> Placement | None:
    """Greedy bandwidth-satisfaction placement of job k on ``state`` (None when it does not fit)."""
    job = state.payload.jobs[k]

    def choose(b: _Build, t: int, cands) -> int:
        best = None
        for c, (p, hops) in enumerate(cands):
            cost = sum(float(job.links[i].bw_max) * h for i, h in hops)
            margin = min((b.free_cpu[p] - b.cpu[t]) / b.cap_cpu[p], (b.free_ram[p] - b.ram[t]) / b.cap_ram[p])
            key = (round(cost, 9), -margin, p)
            if best is None or key < best[0]:
                best = (key, c)
        return best[1]  # type: ignore[index]

    b = _map_nodes(state, k, comm_order(job), choose, deadline)
    if b is None:
        return None
    routes = b.routes()
    bws = _lp_bandwidths(b, routes) if bandwidth == "lp" else _waterfill_bandwidths(b, routes)
    return b.finish(bws)


# ======================================================================================
# Registered solvers: every job of the instance, in arrival order, all active at once
# ======================================================================================


def place_all(instance: Instance, name: str, *, seed: int = 0, deadline: float | None = None,
              **params: Any) -> tuple[list[Placement] | None, str | None]:
    """Place every job of ``instance`` with placer ``name`` in arrival order (ties by
    index), each on the network left by the earlier ones. Returns (placements by job index,
    None) or (None, reason)."""
    info = PLACERS[name]
    opts = parse_params(name, info.spec, params)
    payload = instance.mapping
    assert payload is not None
    state = NetworkState(payload)
    state.record()
    rng = np.random.default_rng(seed)
    order = sorted(range(len(payload.jobs)), key=lambda k: (payload.jobs[k].arrival, k))
    out: list[Placement | None] = [None] * len(payload.jobs)
    for k in order:
        pl = info.fn(state, k, rng=rng, deadline=deadline, **opts)
        if pl is None:
            done = sum(p is not None for p in out)
            return None, (f"{name}: job {k} does not fit the network left by the {done} job(s) placed before it "
                          "(jobs are placed in arrival order and held simultaneously)")
        out[k] = pl
        state.commit(pl)
    return out, None  # type: ignore[return-value]


def _solve(name: str, instance: Instance, time_limit: float | None, seed: int, params: dict[str, Any]) -> Result:
    started = time.perf_counter()
    seed = check_seed(seed)
    parse_params(name, PLACERS[name].spec, params)  # bad parameters raise before any work
    deadline = None if time_limit is None else started + float(time_limit)
    try:
        placements, reason = place_all(instance, name, seed=seed, deadline=deadline, **params)
    except SimTimeout:
        return make_result(instance, name, status="timeout", seed=seed, params=params, started=started,
                           stats={"time_limit": time_limit})
    if placements is None:
        return make_result(instance, name, status="infeasible", seed=seed, params=params, started=started,
                           stats={"reason": reason})
    decisions = MappingDecisions(jobs=tuple(pl.decision() for pl in placements))
    feasible, stats = referee_stats(instance, decisions)
    return make_result(instance, name, status="feasible" if feasible else "error", decisions=decisions, seed=seed,
                       params=params, objective=stats.get("composite"), started=started, stats=stats)


@register("flexitask", families=("mapping",), kind="heuristic",
          description="CES baseline FlexiTask: Kubernetes-like filter (resources, load thresholds) and score "
                      "(idleness, balance, heat); highest free bandwidth level per link",
          params=FLEXI_PARAMS, check=lambda p: parse_params("flexitask", FLEXI_SPEC, p))
def solve_flexitask(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    """FlexiTask baseline (see the module docstring)."""
    return _solve("flexitask", instance, time_limit, seed, params)


@register("smart", families=("mapping",), kind="heuristic",
          description="CES baseline Smart: weighted efficiency / balance / connectivity / margin score; bandwidth "
                      "by link importance",
          params=SMART_PARAMS, check=lambda p: parse_params("smart", SMART_SPEC, p))
def solve_smart(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    """Smart baseline (see the module docstring)."""
    return _solve("smart", instance, time_limit, seed, params)


@register("greedy-bw", families=("mapping",), kind="heuristic",
          description="Greedy bandwidth satisfaction: heavy-communicating task pairs together or adjacent, then an "
                      "LP (or water-filling) maximising D_BW",
          params=GREEDY_PARAMS, check=lambda p: parse_params("greedy-bw", GREEDY_SPEC, p))
def solve_greedy_bw(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    """Greedy bandwidth-satisfaction baseline (see the module docstring)."""
    return _solve("greedy-bw", instance, time_limit, seed, params)


__all__ = ["FLEXI_SPEC", "GREEDY_SPEC", "SMART_SPEC", "comm_order", "place_all", "place_flexitask",
           "place_greedy_bw", "place_smart"]
