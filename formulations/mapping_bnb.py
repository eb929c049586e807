"""Exact decomposition of the mapping problem: branch and bound over the node mapping, the
bandwidth sub-problem solved exactly at the leaves (canonical shortest-path routing).

The search assigns task nodes one at a time (largest demand first, then the task with the
most task links to those already placed) and is *vectorised*: a batch of up to a few
thousand partial mappings of the same depth is expanded at once with numpy (capacity,
routability, link-capacity at BWmin, incremental loads), every child gets an upper bound,
children that cannot beat the incumbent are dropped, the rest are pushed best-first onto a
depth-first stack of batches.

Upper bound of a partial mapping (maximising ``const + alpha*D_BW - beta*L``)::

    const - beta*(w1*LB(std_cpu) + w2*LB(std_ram)) + UB(alpha*D_BW - beta*w3*std_bw)

* ``LB(std)`` (nodes): for any completion, ``P var = min_c sum_p (U_p - c)^2`` and, since
  the loads a task adds are non-negative, ``(U0_p + sum a - c)^2 >= (U0_p - c)^2 + sum
  [a^2 + 2a(U0_p - c)]`` — a bound separable over the remaining tasks (each goes *whole* to
  its best feasible node, so the lumpiness of the tasks counts; only their stacking is
  relaxed). The minimum over c is taken over the reachable range of the final mean on a
  grid: the quadratic part exactly per interval, the concave per-task minima at the
  interval ends.
* ``UB`` (bandwidth): ``||M u|| >= g.u`` for the unit centred direction g of the current
  link loads, which makes the bandwidth part separable over task links: each routed link
  takes the better end of its bandwidth range; the links of an unplaced task node to placed
  ones share that node's one placement q (a feasible node: route to / from q or
  co-location); a link with no end placed takes the best route between any two nodes (or
  co-location); capped by ``alpha`` (D_BW <= 1, std >= 0).
* The parts are computed in stages (CPU, RAM, bandwidth), each only for the children the
  previous stages did not prune.

The *joint per-task bound* (``JOINT``, on by default; the search keeps the smaller of the two
bounds) lets every unplaced task node take ONE node q for all parts at once: each std is
bounded through a lower bound x of its variance that is separable over the tasks (stacking
inequality and Lagrangian capacity multipliers included) and chords of sqrt over the range
of x (cut where the incumbent's room ends; ``JOINT_SQRT_GRID`` pieces, each with its own chord,
treated like grid intervals), so the whole objective bound is
``max over grid intervals of (const + sum_j max_q score[j, q])``. Its bandwidth part is first
the linearisation above, then, on the children that survive, a second-order version (the
curvature the new links add). Choices whose bound cannot beat the incumbent are dropped and
the bound recomputed (fixing). Proofs: docs/formulations/mapping.md, "Joint per-task bound".

At a leaf the same linearisation at the reference bandwidths (BWmax when D_BW counts, else
BWmin) is exact when every link keeps its reference end; otherwise (or when the reference
violates a link capacity) the exact bandwidth sub-problem is solved
(:func:`edgebench.formulations.mapping_problem.solve_bandwidth`).

Symmetry: task nodes that are interchangeable (same demands, same task links to every
other task node with the same ranges) are ordered (p(i) <= p(j)).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from edgebench.formulations.mapping_problem import CAP_EPS, Goal, MappingProblem, solve_bandwidth

#: pruning tolerance: a node is dropped when its bound is at most incumbent + PRUNE_TOL
PRUNE_TOL = 1e-9
#: grid intervals of the mean in the node-part bound
GRID = 3
#: also bound every child by the joint per-task bound (each unplaced task node takes ONE node for
#: the CPU, RAM and bandwidth parts at once; docs/formulations/mapping.md, "Joint per-task
#: bound") and keep the smaller of the two bounds; False gives the separate bound only
JOINT = True
#: grid intervals of each mean (CPU, RAM) in the joint bound
JOINT_GRID = 3
#: the stages of the joint bound, by its bandwidth part: "linear" (the separate bound's
#: linearisation at the current loads, :meth:`_Search._bw_terms`; cheap) then "chord" (second
#: order, :meth:`_Search._bw_chord`) on the children the first stage could not prune
JOINT_BW = ("linear", "chord")
#: pieces of the sqrt chord of each node part (CPU, RAM) in the joint bound: the range of the
#: variance bound split into this many pieces (equal in sqrt), each with its own chord
JOINT_SQRT_GRID = 2
#: grid intervals of the added link utilisation in the "chord" bandwidth part
JOINT_BW_GRID = 2
#: pieces of the sqrt chord of the "chord" bandwidth part (as JOINT_SQRT_GRID)
JOINT_BW_SQRT_GRID = 1
#: Lagrangian subgradient steps of the joint bound (capacity and stacking multipliers)
JOINT_STEPS = 3
#: rounds of fixing in the joint bound (choices that cannot beat the incumbent are dropped)
JOINT_FIX = 1
#: fraction of the Polyak step taken
JOINT_THETA = 1.0
#: widths of the beam dives of the first incumbent (each followed by the local search)
WARM_WIDTHS = (8, 32, 128, 512)
#: children bounded jointly at once (memory: about JOINT_CHUNK * JOINT_GRID^2 * m * P floats)
JOINT_CHUNK = 512


@dataclass
class BnBResult:
    status: str  # optimal | feasible | infeasible | timeout
    x: np.ndarray | None
    b: np.ndarray | None
    value: float  # internal (maximised) value of the goal
    bound: float
    stats: dict = field(default_factory=dict)


def task_order(pr: MappingProblem) -> list[int]:
    """Largest normalised demand first; then repeatedly the task with the most task links to
    the tasks already ordered (ties: larger demand, lower index)."""
    if pr.n == 0:
        return []
    size = pr.dc / max(pr.free_cpu.max(), 1e-9) + pr.dr / max(pr.free_ram.max(), 1e-9)
    adj = np.zeros((pr.n, pr.n), dtype=int)
    for s, t in zip(pr.lsrc, pr.ldst):
        adj[s, t] += 1
        adj[t, s] += 1
    order = [int(np.argmax(size))]
    left = set(range(pr.n)) - set(order)
    while left:
        best = max(left, key=lambda t: (adj[t, order].sum(), size[t], -t))
        order.append(best)
        left.remove(best)
    return order


def twins(pr: MappingProblem) -> list[tuple[int, int]]:
    """Pairs (i, j), i < j, of interchangeable task nodes of the same job."""
    links = {}
    for v in range(pr.V):
        links[(int(pr.lsrc[v]), int(pr.ldst[v]))] = (float(pr.bmin[v]), float(pr.bmax[v]))
    out = []
    for i in range(pr.n):
        for j in range(i + 1, pr.n):
            if pr.dc[i] != pr.dc[j] or pr.dr[i] != pr.dr[j]:
                continue
            ok = links.get((i, j)) == links.get((j, i))
            for k in range(pr.n):
                if not ok:
                    break
                if k in (i, j):
                    continue
                ok = links.get((i, k)) == links.get((j, k)) and links.get((k, i)) == links.get((k, j))
            if ok:
                out.append((i, j))
    # keep only classes in which every pair is interchangeable (then sorting the class's
    # nodes is a valid symmetry breaking; partial overlaps are left alone)
    adj: dict[int, set[int]] = {}
    for i, j in out:
        adj.setdefault(i, set()).add(j)
        adj.setdefault(j, set()).add(i)
    keep = []
    for i, j in out:
        cls = {i} | adj[i]
        if all(adj[a] >= cls - {a} for a in cls):
            keep.append((i, j))
    return keep


class _Search:
    def __init__(self, pr: MappingProblem, g: Goal, *, time_limit: float | None, tol: float,
                 order: list[int] | None = None, symmetry: bool = True, joint: bool | None = None):
        self.pr = pr
        self.joint = JOINT if joint is None else bool(joint)
        self.g = g
        self.tol = tol
        self.deadline = None if time_limit is None else time.perf_counter() + float(time_limit)
        self.order = order if order is not None else task_order(pr)
        n = pr.n
        self.pos = np.empty(n, dtype=int)
        self.pos[self.order] = np.arange(n)
        w1, w2, w3 = pr.weights
        self.w = (w1, w2, w3)
        self.kappa = g.beta * w3 / math.sqrt(pr.R) if pr.R else 0.0
        self.vt = pr.v_total
        self.a_v = g.alpha / self.vt if self.vt else 0.0  # value of delta = 1 for one link
        # reference bandwidths of the incremental loads
        self.b0 = pr.bmax.copy() if g.alpha > 0 or g.beta * w3 == 0 else pr.bmin.copy()
        # per depth: links routed when the task at that depth is placed
        self.routed_at: list[list[tuple[int, int, bool]]] = [[] for _ in range(n)]
        for v in range(pr.V):
            ps, pt = self.pos[pr.lsrc[v]], self.pos[pr.ldst[v]]
            d = max(ps, pt)
            other = min(ps, pt)
            self.routed_at[d].append((v, int(other), bool(ps == d)))  # (link, pos of other end, new is src)
        self.twin_prev: list[list[int]] = [[] for _ in range(n)]
        if symmetry:
            for i, j in twins(pr):
                a, b = sorted((int(self.pos[i]), int(self.pos[j])))
                self.twin_prev[b].append(a)  # node(at depth b) >= node(at depth a)
        self.max_hops = int(pr.hops.max()) if pr.P else 0
        from scipy.sparse import csr_matrix

        self.inc_sparse = csr_matrix(pr.inc.reshape(pr.P * pr.P, max(pr.R, 0)))
        self.qidx = np.arange(pr.P)
        # per canonical route p -> q: sum of 1/BW and of 1/BW^2 over its links
        self.route_s1 = np.asarray(self.inc_sparse @ (1.0 / pr.bw)).ravel() if pr.R else np.zeros(pr.P * pr.P)
        self.route_s2 = np.asarray(self.inc_sparse @ (1.0 / pr.bw ** 2)).ravel() if pr.R else np.zeros(pr.P * pr.P)
        self.offdiag = (pr.routable & ~np.eye(pr.P, dtype=bool)).reshape(-1)
        self.chunk = int(max(64, min(4096, (1 << 21) // max(1, pr.P * max(pr.R, 1)))))
        self.inc_value = -math.inf
        self.inc_x: np.ndarray | None = None
        self.inc_b: np.ndarray | None = None
        self.nodes = 0
        self.depth_nodes = [0] * (n + 1)  # search nodes expanded per depth
        self.leaves = 0
        self.subproblems = 0
        self.sub_gap = 0.0  # largest unclosed gap of a leaf sub-problem taken as solved
        self.timed_out = False
        self.t0 = time.perf_counter()
        self.trace: list[tuple[float, float]] = []
        self._open: list[float] = []

    # ---- incumbent --------------------------------------------------------------------
    def offer(self, x: np.ndarray, b: np.ndarray, value: float) -> None:
        if value > self.inc_value:
            self.trace.append((time.perf_counter() - self.t0, float(value)))
            self.inc_value = float(value)
            self.inc_x = np.asarray(x, dtype=int).copy()
            self.inc_b = np.asarray(b, dtype=float).copy()

    # ---- bounds -----------------------------------------------------------------------
    def _node_lb(self, U: np.ndarray, a: np.ndarray, fm: np.ndarray) -> np.ndarray:
        """Lower bound of std over completions. U (K,P) current utilisation; a (m,P) the
        remaining tasks' increments; fm (K,m,P) feasible placements."""
        K, P = U.shape
        if a.shape[0] == 0:
            return _pstd(U)
        big = 1e18
        amin = np.where(fm, a[None], big).min(axis=2)  # (K,m)
        amax = np.where(fm, a[None], -big).max(axis=2)
        su = U.sum(axis=1)
        cmin = (su + amin.sum(axis=1)) / P
        cmax = (su + amax.sum(axis=1)) / P
        grid = cmin[:, None] + (cmax - cmin)[:, None] * np.linspace(0.0, 1.0, GRID + 1)[None, :]  # (K,G+1)
        base = a[None] * a[None] + 2.0 * a[None] * U[:, None, :]  # (K,m,P)
        base = np.where(fm, base, big)
        # T(c) = min_p base - 2 a c   -> (K,G+1,m)
        T = (base[:, None, :, :] - 2.0 * a[None, None, :, :] * grid[:, :, None, None]).min(axis=3)
        Tsum = np.minimum(T[:, :-1, :], T[:, 1:, :]).sum(axis=2)  # (K,G)
        mean = su / P
        S0 = ((U - mean[:, None]) ** 2).sum(axis=1)
        cl = np.clip(mean[:, None], grid[:, :-1], grid[:, 1:])
        Q = P * (cl - mean[:, None]) ** 2 + S0[:, None]
        lb = (Q + Tsum).min(axis=1)
        return np.sqrt(np.maximum(lb, 0.0) / P)

    def _link_terms(self, h: np.ndarray, v: int) -> np.ndarray:
        """Best value of task link v's separable term given h = g.(route)/BW (K,)."""
        pr = self.pr
        k = self.kappa
        if pr.elastic[v]:
            return np.maximum(self.a_v - k * pr.bmax[v] * h, -k * pr.bmin[v] * h)
        return self.a_v - k * pr.bmax[v] * h

    def _bw_ub(self, asg: np.ndarray, depth: int, ul: np.ndarray, fm: np.ndarray | None,
               rem: list[int]) -> np.ndarray:
        """Upper bound of alpha*D - beta*w3*std_bw over completions. asg (K,depth) nodes of
        the first ``depth`` tasks of the order; ul (K,R) loads at the reference bandwidths."""
        pr, g = self.pr, self.g
        K = asg.shape[0]
        if pr.V == 0 or self.vt == 0:
            return np.full(K, g.alpha)
        if self.kappa == 0.0 or pr.R == 0:
            return np.full(K, g.alpha)
        return self._bw_ub_dir(asg, depth, self._direction(ul), fm, rem)

    def _direction(self, ul: np.ndarray) -> np.ndarray:
        """Unit centred direction (K,R) of the current link utilisations (0 where they are all
        equal)."""
        pr = self.pr
        u = pr.base_ub[None, :] + ul / pr.bw[None, :]
        dv = u - u.mean(axis=1, keepdims=True)
        nrm = np.sqrt((dv * dv).sum(axis=1))
        return np.where(nrm[:, None] > 1e-15, dv / np.maximum(nrm, 1e-300)[:, None], 0.0)

    def _route_weights(self, gd: np.ndarray) -> np.ndarray:
        """HB (K, P*P): HB[k, p*P+q] = sum_r gd[k,r]/BW(r) over the canonical route p -> q."""
        return np.asarray(self.inc_sparse @ (gd / self.pr.bw[None, :]).T).T

    def _bw_ub_dir(self, asg: np.ndarray, depth: int, gd: np.ndarray, fm: np.ndarray | None,
                   rem: list[int]) -> np.ndarray:
        """The separable bound for unit centred directions gd (K,R) (any such direction gives a
        valid bound; the current loads' direction is used)."""
        pr, g = self.pr, self.g
        K = asg.shape[0]
        HB = self._route_weights(gd)  # (K, P*P): g-weight of every canonical route
        P = pr.P
        total = self.a_v * pr.fixed_delta - self.kappa * (gd @ pr.base_ub)
        rows = np.arange(K)
        hmin_all = None
        acc: dict[int, np.ndarray] = {}
        for v in range(pr.V):
            ps, pt = self.pos[pr.lsrc[v]], self.pos[pr.ldst[v]]
            if ps < depth and pt < depth:
                a, b = asg[:, ps], asg[:, pt]
                h = HB[rows, a * P + b]
                term = np.where(a == b, self.a_v, self._link_terms(h, v))
            elif ps < depth or pt < depth:
                # grouped by the unplaced end: all its links share its node q (below)
                src_known = ps < depth
                p0 = asg[:, ps] if src_known else asg[:, pt]
                other = pr.ldst[v] if src_known else pr.lsrc[v]
                j = rem.index(int(other))
                cols = p0[:, None] * P + self.qidx[None, :] if src_known else self.qidx[None, :] * P + p0[:, None]
                H = np.take_along_axis(HB, cols, axis=1)  # (K,P): h of the route p0 -> q (or q -> p0)
                okq = pr.routable[p0] if src_known else pr.routable[:, p0].T
                same = self.qidx[None, :] == p0[:, None]
                tq = np.where(same, self.a_v, np.where(okq, self._link_terms(H, v), -np.inf))
                acc[j] = tq if j not in acc else acc[j] + tq
                continue
            else:
                if hmin_all is None:  # best route between any two distinct nodes
                    hmin_all = np.where(self.offdiag[None, :], HB, np.inf).min(axis=1)
                    hmin_all = np.where(np.isfinite(hmin_all), hmin_all, 0.0)
                term = np.maximum(self._link_terms(hmin_all, v), self.a_v)
            total = total + term
        for j, tq in acc.items():  # each unplaced task node takes one node for all its links
            total = total + np.where(fm[:, j, :], tq, -np.inf).max(axis=1)
        return np.minimum(total, g.alpha)

    # ---- joint per-task bound (docs/formulations/mapping.md, "Joint per-task bound") ----
    def _node_chord(self, U: np.ndarray, a: np.ndarray, fm: np.ndarray, wk: float, lam: np.ndarray,
                    room: np.ndarray | None = None):
        """One node resource's part of the joint bound. For every completion whose added
        utilisation A = sum of the remaining tasks' increments lies in grid interval k,
        ``-beta*wk*std >= const[:, k] + sum_j score[:, k, j, q_j]`` (q_j: task j's node).

        P*var = sum_p U_p^2 - (su + A)^2/P with U_p = U0_p + (sum of the a on p), and
        (sum_S a)^2 >= sum_S a^2 + lam_p (sum_S a - amax_p) for 0 <= lam_p <= 2 a_(2),p (the
        stacking inequality; lam = 0 drops the stacking), -(su + A)^2/P >= its chord on the
        interval (concave in A): a lower bound x of P*var separable over the tasks; then
        sqrt(max(x, 0)) >= the chord of sqrt on the range [max(xlo, 0), xhi] of x.
        U (K,P); a (m,P); fm (K,m,P); lam (K,P) within its range (see :meth:`_stack_cap`).
        Returns const (K,G), score (K,G,m,P) (meaningful where fm) and the chord slopes (K,G)
        of sqrt times beta*wk/sqrt(P) (d score / d x)."""
        K, P = U.shape
        G = JOINT_GRID
        big = 1e18
        amin = np.where(fm, a[None], big).min(axis=2).sum(axis=1)
        amax = np.where(fm, a[None], -big).max(axis=2).sum(axis=1)
        su = U.sum(axis=1)
        A = amin[:, None] + (amax - amin)[:, None] * np.linspace(0.0, 1.0, G + 1)[None, :]  # (K,G+1)
        chord = -(2.0 * su[:, None] + A[:, :-1] + A[:, 1:]) / P  # chord slope of -(su + A)^2 / P
        amax_p = np.where(fm, a[None], 0.0).max(axis=1)  # (K,P) largest increment that may land on p
        cst = ((U * U).sum(axis=1) - (lam * amax_p).sum(axis=1))[:, None] - (su[:, None] + A[:, :-1]) ** 2 / P \
            - chord * A[:, :-1]  # (K,G)
        t = (a[None] * a[None] + (2.0 * U + lam)[:, None, :] * a[None])[:, None] + chord[:, :, None, None] * a[None, None]
        f4 = fm[:, None]
        xlo = cst + np.where(f4, t, np.inf).min(axis=3).sum(axis=2)
        xhi = cst + np.where(f4, t, -np.inf).max(axis=3).sum(axis=2)
        coef = self.g.beta * wk / math.sqrt(P)
        const, slope = self._sqrt_pieces(xlo, xhi, None if room is None else room / coef, JOINT_SQRT_GRID)
        S = const.shape[2]  # every (mean interval k, sqrt piece s) is one interval of the result
        const = -coef * (const + slope * cst[:, :, None])
        score = -coef * slope[:, :, :, None, None] * t[:, :, None]
        return (const.reshape(K, G * S), score.reshape(K, G * S, *t.shape[2:]),
                coef * slope.reshape(K, G * S))

    @classmethod
    def _sqrt_pieces(cls, xlo: np.ndarray, xhi: np.ndarray, smax: np.ndarray | None, pieces: int):
        """``pieces`` chords of sqrt(max(x, 0)) (K,G,S): the range of :meth:`_sqrt_chord` (after
        the cut at smax) split into S pieces of equal length in sqrt(x), each with its own
        chord. Every x of the range lies in some piece, where that piece's chord is <= sqrt;
        so a bound that takes the maximum over the pieces holds for every completion (the
        pieces are treated like the grid intervals of the means). S = 1 is the single chord."""
        if pieces <= 1:
            c, sl = cls._sqrt_chord(xlo, xhi, smax)
            return c[..., None], sl[..., None]
        if smax is not None:
            cap = np.where(smax > 0, smax * smax, -1.0)[:, None]
            xhi = np.minimum(xhi, cap)
        xl = np.maximum(xlo, 0.0)
        rl, rh = np.sqrt(xl), np.sqrt(np.maximum(xhi, xl))
        r = rl[..., None] + (rh - rl)[..., None] * np.linspace(0.0, 1.0, pieces + 1)  # (K,G,S+1)
        y = r * r
        c, sl = cls._sqrt_chord(y[..., :-1], y[..., 1:], None)
        if smax is not None:
            c = np.where((xhi < xlo)[..., None], np.inf, c)
        return c, sl

    @staticmethod
    def _sqrt_chord(xlo: np.ndarray, xhi: np.ndarray, smax: np.ndarray | None):
        """sqrt(max(x, 0)) >= c + slope * x on [xlo, xhi] (K,G): the chord through
        max(xlo, 0) and xhi. With smax (K,) (the room against the incumbent, in sqrt units),
        the range is cut at smax^2: a completion with sqrt(x) > smax is no better than the
        incumbent, so the chord need not hold there; an interval beyond smax gets c = +inf
        (nothing in it beats the incumbent). Returns (c, slope)."""
        if smax is not None:
            cap = np.where(smax > 0, smax * smax, -1.0)[:, None]
            xhi = np.minimum(xhi, cap)
        xl = np.maximum(xlo, 0.0)
        rl, rh = np.sqrt(xl), np.sqrt(np.maximum(xhi, 0.0))
        slope = np.where(xhi > xl, 1.0 / np.maximum(rl + rh, 1e-300), 0.0)  # (rh - rl) / (xhi - xl)
        c = rl - slope * xl
        if smax is not None:
            c = np.where(xhi < xlo, np.inf, c)
        return c, slope

    @staticmethod
    def _stack_cap(a: np.ndarray, fm: np.ndarray) -> np.ndarray:
        """Largest valid stacking multiplier per node (K,P): 2 x the second smallest increment
        among the remaining tasks that fit on p (0 where fewer than two fit)."""
        m = a.shape[0]
        if m < 2:
            return np.zeros((fm.shape[0], fm.shape[2]))
        srt = np.sort(np.where(fm, a[None], np.inf), axis=1)
        return np.where(np.isfinite(srt[:, 1]), 2.0 * srt[:, 1], 0.0)

    def _bw_terms(self, asg: np.ndarray, depth: int, gd: np.ndarray, fm: np.ndarray, rem: list[int]):
        """The bandwidth part of the joint bound: ``alpha*D - beta*w3*std_bw <= const +
        sum_j T[:, j, q_j]`` for every completion (q_j: the node of the j-th remaining task).
        The same separable terms as :meth:`_bw_ub_dir`, but a link between two unplaced task
        nodes goes to the later one of the order, j, and takes for each q_j the best node of
        the other end (where it fits, routable, or co-located). Returns const (K,), T (K,m,P)
        (-inf where a link cannot be routed)."""
        pr, g = self.pr, self.g
        K, m, P = asg.shape[0], len(rem), pr.P
        T = np.zeros((K, m, P))
        if pr.V == 0 or self.vt == 0 or self.kappa == 0.0 or pr.R == 0:
            return np.full(K, g.alpha), T
        HB = self._route_weights(gd)
        total = self.a_v * pr.fixed_delta - self.kappa * (gd @ pr.base_ub)
        rows = np.arange(K)
        H3 = None
        eye = np.eye(P, dtype=bool)
        for v in range(pr.V):
            ps, pt = self.pos[pr.lsrc[v]], self.pos[pr.ldst[v]]
            if ps < depth and pt < depth:
                a, b = asg[:, ps], asg[:, pt]
                total = total + np.where(a == b, self.a_v, self._link_terms(HB[rows, a * P + b], v))
            elif ps < depth or pt < depth:
                src_known = ps < depth
                p0 = asg[:, ps] if src_known else asg[:, pt]
                j = rem.index(int(pr.ldst[v] if src_known else pr.lsrc[v]))
                cols = p0[:, None] * P + self.qidx[None, :] if src_known else self.qidx[None, :] * P + p0[:, None]
                H = np.take_along_axis(HB, cols, axis=1)
                okq = pr.routable[p0] if src_known else pr.routable[:, p0].T
                same = self.qidx[None, :] == p0[:, None]
                T[:, j] += np.where(same, self.a_v, np.where(okq, self._link_terms(H, v), -np.inf))
            else:
                if H3 is None:
                    H3 = HB.reshape(K, P, P)  # [k, src node, dst node]
                js, jd = rem.index(int(pr.lsrc[v])), rem.index(int(pr.ldst[v]))
                tv = np.where(eye[None], self.a_v, np.where(pr.routable[None], self._link_terms(H3, v), -np.inf))
                if pt > ps:  # the destination comes later: best source node for each of its nodes
                    T[:, jd] += np.where(fm[:, js, :, None], tv, -np.inf).max(axis=1)
                else:
                    T[:, js] += np.where(fm[:, jd, None, :], tv, -np.inf).max(axis=2)
        return total, T

    def _bw_chord(self, asg: np.ndarray, depth: int, ul: np.ndarray, fm: np.ndarray, rem: list[int],
                  room: np.ndarray | None = None):
        """The bandwidth part of the joint bound, second order: for every completion whose added
        link utilisation T lies in grid interval k, ``alpha*D - beta*w3*std_bw <= const[:, k] +
        sum_j score[:, k, j, q_j]``.

        Routed links sit at their reference bandwidths b0 (y = M u_ref, the centred current
        utilisations), plus a slack per routed link for B != b0 (triangle inequality). A new
        link w adds Delta_w = B_w e_w / BW >= 0, so ||y + M Delta||^2 >= ||y||^2 + sum_w
        (2 y.Delta_w + ||Delta_w||^2) - T^2/R (cross terms of non-negative vectors dropped;
        -T^2/R >= its chord on the interval): x, separable over the new links; then
        ||M u|| >= the chord of sqrt on [max(xlo, 0), xhi], and each link takes its best
        bandwidth (a concave quadratic in B) and route. Links between two unplaced task nodes
        go to the later one, which takes the best node of the other end for each of its own.
        Returns const (K,G), score (K,G,m,P) (-inf where a link cannot be routed)."""
        pr, g = self.pr, self.g
        K, m, P = asg.shape[0], len(rem), pr.P
        G = JOINT_BW_GRID
        if pr.V == 0 or self.vt == 0 or self.kappa == 0.0 or pr.R == 0:
            return np.full((K, 1), g.alpha), np.zeros((K, 1, m, P))
        kap, av = self.kappa, self.a_v
        u = pr.base_ub[None, :] + ul / pr.bw[None, :]
        y = u - u.mean(axis=1, keepdims=True)
        S1, S2 = self.route_s1, self.route_s2  # (P*P,): sum over the route of 1/BW, 1/BW^2
        Y1 = self._route_weights(y)  # (K,P*P): sum of y/BW over the route
        const = np.full(K, av * pr.fixed_delta)
        slack = np.zeros(K)
        new = []
        thi = np.zeros(K)
        for v in range(pr.V):
            ps, pt = self.pos[pr.lsrc[v]], self.pos[pr.ldst[v]]
            if ps < depth and pt < depth:  # routed (or co-located): at b0, plus the slack of B != b0
                a, b = asg[:, ps], asg[:, pt]
                if pr.elastic[v]:
                    d0 = (self.b0[v] - pr.bmin[v]) / pr.spread[v]
                    nrm = np.sqrt(S2[a * P + b])
                    sl = np.maximum(0.0, np.maximum(av * (0.0 - d0) + kap * (self.b0[v] - pr.bmin[v]) * nrm,
                                                    av * (1.0 - d0) + kap * (pr.bmax[v] - self.b0[v]) * nrm))
                    const = const + np.where(a == b, av, av * d0 + sl)
                    slack = slack + np.where(a == b, 0.0, sl)
                else:
                    const = const + av
                continue
            # the routes the link can take: from / to its placed end, or between any two nodes
            if ps < depth or pt < depth:
                p0 = asg[:, ps] if ps < depth else asg[:, pt]
                cols = p0[:, None] * P + self.qidx[None, :] if ps < depth else self.qidx[None, :] * P + p0[:, None]
                j = rem.index(int(pr.ldst[v] if ps < depth else pr.lsrc[v]))
                new.append((v, j, None, cols, None))
                thi = thi + pr.bmax[v] * S1[cols].max(axis=1)
            else:
                js, jd = rem.index(int(pr.lsrc[v])), rem.index(int(pr.ldst[v]))
                # the later end owns the link; the other end's choices are reduced over (axis)
                new.append((v, jd, (js, 2), None, None) if pt > ps else (v, js, (jd, 3), None, None))
                thi = thi + pr.bmax[v] * S1.max()
        # grid on T and the chord of -T^2/R on each interval
        T = thi[:, None] * np.linspace(0.0, 1.0, G + 1)[None, :]  # (K,G+1)
        lamT = -(T[:, :-1] + T[:, 1:]) / pr.R
        cst = (y * y).sum(axis=1)[:, None] - T[:, :-1] ** 2 / pr.R - lamT * T[:, :-1]  # (K,G)
        diag_flat = np.eye(P, dtype=bool).reshape(-1)
        links = []
        Xlo = np.zeros((K, G, m, P))
        Xhi = np.zeros((K, G, m, P))
        for v, j, other, cols, _ in new:
            if cols is not None:  # (K,G,P) over the owner's node q
                c1 = 2.0 * np.take_along_axis(Y1, cols, axis=1)[:, None, :] + lamT[:, :, None] * S1[cols][:, None, :]
                s2 = S2[cols][:, None, :]
                ok = self.offdiag[cols][:, None, :]
                same = diag_flat[cols][:, None, :]
            else:  # (K,G,P*P) over every pair of nodes
                c1 = 2.0 * Y1[:, None, :] + lamT[:, :, None] * S1[None, None, :]
                s2 = S2[None, None, :]
                ok = self.offdiag[None, None, :]
                same = diag_flat[None, None, :]
            bl, bh = pr.bmin[v], pr.bmax[v]
            xa, xb = s2 * bl * bl + c1 * bl, s2 * bh * bh + c1 * bh
            bv = np.clip(-c1 / np.maximum(2.0 * s2, 1e-300), bl, bh)
            xmin = np.where(ok, np.minimum(np.minimum(xa, xb), s2 * bv * bv + c1 * bv), np.where(same, 0.0, np.inf))
            xmax = np.where(ok, np.maximum(xa, xb), np.where(same, 0.0, -np.inf))
            links.append((v, j, other, c1, s2, ok, same))
            Xlo[:, :, j] += self._reduce_other(xmin, other, fm, np.min, np.inf)
            Xhi[:, :, j] += self._reduce_other(xmax, other, fm, np.max, -np.inf)
        fm4 = fm[:, None]
        xlo = cst + np.where(fm4, Xlo, np.inf).min(axis=3).sum(axis=2)
        xhi = cst + np.where(fm4, Xhi, -np.inf).max(axis=3).sum(axis=2)
        c0, slope = self._sqrt_pieces(xlo, xhi, None if room is None else (room + slack) / kap, JOINT_BW_SQRT_GRID)
        S = c0.shape[2]  # every (T interval k, sqrt piece s) is one interval of the result
        c0, slope = c0.reshape(K, G * S), slope.reshape(K, G * S)
        cst = np.repeat(cst, S, axis=1)
        ks = kap * slope[:, :, None]  # (K,G*S,1)
        score = np.zeros((K, G * S, m, P))
        for v, j, other, c1, s2, ok, same in links:
            c1 = np.repeat(c1, S, axis=1)
            bl, bh = pr.bmin[v], pr.bmax[v]
            if pr.elastic[v]:  # the best bandwidth of the concave quadratic on [bl, bh]
                lin = av / pr.spread[v]
                a2 = ks * s2
                bst = np.where(a2 > 0, np.clip((lin - ks * c1) / np.maximum(2.0 * a2, 1e-300), bl, bh),
                               np.where(lin - ks * c1 >= 0, bh, bl))
                f = av * (bst - bl) / pr.spread[v] - ks * (s2 * bst * bst + c1 * bst)
            else:
                f = av - ks * (s2 * bl * bl + c1 * bl)
            f = np.where(ok, f, np.where(same, av, -np.inf))
            score[:, :, j] += self._reduce_other(f, other, fm, np.max, -np.inf)
        return -kap * (c0 + slope * cst) + const[:, None], score

    @staticmethod
    def _reduce_other(arr: np.ndarray, other, fm: np.ndarray, red, fill: float) -> np.ndarray:
        """(K,G,P) per node of the owning task: arr itself (one end placed) or, for a link
        between two unplaced task nodes (arr (K,G,P*P) over [src node, dst node]), reduced over
        the nodes where the other end fits."""
        if other is None:
            return arr
        K, G = arr.shape[0], arr.shape[1]
        P = fm.shape[2]
        a4 = np.broadcast_to(arr, (K, G, arr.shape[2])).reshape(K, G, P, P)
        jo, axis = other
        mask = fm[:, None, jo, :, None] if axis == 2 else fm[:, None, jo, None, :]
        return red(np.where(mask, a4, fill), axis=axis)

    def _joint_ub(self, depth: int, asg, lc, lr, ul, fm: np.ndarray, rem: list[int], bw: str = "chord",
                  room: np.ndarray | None = None) -> np.ndarray:
        """The joint per-task bound (K,): every remaining task node takes one node q for the CPU,
        RAM and bandwidth parts at once; the maximum over the grid intervals of the means.

        Lagrangian terms (any multipliers give a valid bound, the smallest bound found is kept):
        nu_p >= 0 on the CPU / RAM capacity left on node p (the value of a feasible completion
        is at most itself + sum_p nu_p (free_p - demand placed on p)) and the stacking
        multipliers of :meth:`_node_chord`; ``JOINT_STEPS`` projected subgradient steps (Polyak
        steps towards the incumbent) from zero, on the children not yet pruned. Then
        ``JOINT_FIX`` rounds of fixing: a node q whose bound with task j placed on it is no
        better than the incumbent is removed from j's choices, and the bound is computed again
        on the narrower choices (its ranges, chords and multiplier caps shrink)."""
        pr = self.pr
        w1, w2, _ = self.w
        K, P = asg.shape[0], pr.P
        out = np.empty(K)
        res = []
        if self.g.beta > 0:
            res = [(wk, dem[rem], cap, base, load, i) for i, (wk, dem, cap, base, load) in
                   enumerate(((w1, pr.dc, pr.cpu, pr.base_uc, lc), (w2, pr.dr, pr.ram, pr.base_ur, lr))) if wk > 0]
        caps = ((pr.dc[rem], pr.free_cpu, lc), (pr.dr[rem], pr.free_ram, lr))
        thr = self.inc_value + self.tol
        target = self.inc_value if math.isfinite(self.inc_value) else None
        for lo in range(0, K, JOINT_CHUNK):
            sl = slice(lo, min(K, lo + JOINT_CHUNK))
            if self._out_of_time():  # the rest keeps the separate bound (valid); the search stops next
                out[lo:] = np.inf
                break
            f = fm[sl].copy()
            k = f.shape[0]
            ctx = {"Us": [base[None] + load[sl] / cap[None] for _, _, cap, base, load, _ in res],
                   "As": [dem[:, None] / cap[None] for _, dem, cap, _, _, _ in res],
                   "wks": [wk for wk, *_ in res],
                   "rooms": [None if room is None else room[sl, i] for *_, i in res],
                   "frees": [free[None] + CAP_EPS - load[sl] for _, free, load in caps],  # >= demand placed on p
                   "dems": [dem for dem, _, _ in caps]}
            lams = [np.zeros((k, P)) for _ in res]
            nus = [np.zeros((k, P)) for _ in caps]
            best = np.full(k, np.inf)
            live = np.arange(k)
            rounds = JOINT_STEPS + (JOINT_FIX if target is not None else 0)
            bconst = T = None
            for it in range(rounds + 1):
                if bconst is None:  # the bandwidth part on the current choices
                    if bw == "chord":
                        bconst, T = self._bw_chord(asg[sl], depth, ul[sl], f, rem,
                                                   None if room is None else room[sl, 2])
                    else:
                        bconst, T = self._bw_terms(asg[sl], depth, self._direction(ul[sl]), f, rem)
                        bconst, T = bconst[:, None], T[:, None]
                fixing = it > JOINT_STEPS
                val, q, kk, slopes, cond = self._joint_eval(ctx, f, live, lams, nus, bconst, T, fixing or (
                    it == JOINT_STEPS and JOINT_FIX > 0 and target is not None))
                best[live] = np.minimum(best[live], val)
                if it == rounds or target is None:
                    break
                go = best[live] > thr
                live, q, kk, val = live[go], q[go], kk[go], val[go]
                if len(live) == 0:
                    break
                if it >= JOINT_STEPS:  # fixing: drop the choices that cannot beat the incumbent
                    cond = cond[go]
                    narrow = f[live] & (cond > thr)
                    if (narrow == f[live]).all():
                        break
                    f[live] = narrow
                    dead = ~narrow.any(axis=2).all(axis=1)  # a task with no choice left
                    best[live[dead]] = -np.inf
                    live = live[~dead]
                    if len(live) == 0:
                        break
                    bconst = None
                    continue
                self._lagrange_step(ctx, f, live, lams, nus, q, kk, slopes, val - target)
            out[sl] = best
        return out

    def _joint_eval(self, ctx, f, live, lams, nus, bconst, T, want_cond: bool):
        """One evaluation of the joint bound for the rows ``live`` of a chunk: returns the bound,
        the best choices q (l,m), grid intervals kk (l,2), the sqrt chord slopes of the node
        parts and, with ``want_cond``, the bound with task j on node q (l,m,P)."""
        fl = f[live]
        n_live, m, P = fl.shape
        li = np.arange(n_live)
        parts = [self._node_chord(U[live], a_, fl, wk, lam[live], None if rm is None else rm[live])
                 for wk, U, a_, lam, rm in zip(ctx["wks"], ctx["Us"], ctx["As"], lams, ctx["rooms"])]
        pen = sum(nu[live][:, None, :] * dem[None, :, None] for nu, dem in zip(nus, ctx["dems"]))
        cst = bconst[live] + sum((nu[live] * fr[live]).sum(axis=1) for nu, fr in zip(nus, ctx["frees"]))[:, None]
        fT = np.where(fl[:, None], T[live] - pen[:, None], -np.inf)  # (l,Gb,m,P)
        slopes = [pt[2] for pt in parts]
        while len(parts) < 2:
            parts.append((np.zeros((n_live, 1)), np.zeros((n_live, 1, 1, 1)), None))
        (c0, s0, _), (c1, s1, _) = parts
        val = np.full(n_live, -np.inf)
        q = np.zeros((n_live, m), dtype=int)
        kk = np.zeros((n_live, 2), dtype=int)
        cond = np.full((n_live, m, P), -np.inf) if want_cond else None
        with np.errstate(invalid="ignore"):
            for k0 in range(s0.shape[1]):  # every combination of the grid intervals of the means
                for k1 in range(s1.shape[1]):
                    S = s0[:, k0, None] + s1[:, k1, None] + fT  # (l,Gb,m,P)
                    Smax = S.max(axis=3)  # (l,Gb,m)
                    v = c0[:, k0, None] + c1[:, k1, None] + cst + Smax.sum(axis=2)  # (l,Gb)
                    if want_cond:  # task j forced onto q: its term S[j,q] instead of its best
                        cond = np.maximum(cond, (v[:, :, None, None] - Smax[..., None] + S).max(axis=1))
                    k2 = v.argmax(axis=1)
                    vb = v[li, k2]
                    better = vb > val
                    val = np.where(better, vb, val)
                    kk[better, 0], kk[better, 1] = k0, k1
                    q[better] = S[li, k2].argmax(axis=2)[better]
        val = np.where(np.isnan(val), -np.inf, self.g.const + val)
        if want_cond:
            cond = np.where(np.isnan(cond), -np.inf, self.g.const + cond)
        return val, q, kk, slopes, cond

    def _lagrange_step(self, ctx, f, live, lams, nus, q, kk, slopes, excess) -> None:
        """A projected subgradient step (a JOINT_THETA share of Polyak's step towards the
        incumbent) on the capacity multipliers nu and the stacking multipliers lam of the rows
        ``live``, from the choices q of the last evaluation."""
        gap = JOINT_THETA * np.maximum(excess, 0.0)
        li = np.arange(len(live))
        onehot = q[:, :, None] == self.qidx[None, None, :]  # (l,m,P)
        for nu, fr, dem in zip(nus, ctx["frees"], ctx["dems"]):  # d bound / d nu = free - placed demand
            gr = fr[live] - (onehot * dem[None, :, None]).sum(axis=1)
            nn = (gr * gr).sum(axis=1)
            stp = np.where(nn > 0, gap / np.maximum(nn, 1e-300), 0.0)
            nu[live] = np.maximum(nu[live] - stp[:, None] * gr, 0.0)
        for r, (lam, a_) in enumerate(zip(lams, ctx["As"])):
            fl = f[live]
            ds = slopes[r][li, kk[:, r]]  # d(-score)/dx of the chosen interval
            amax_p = np.where(fl, a_[None], 0.0).max(axis=1)
            gr = -ds[:, None] * ((onehot * a_[None]).sum(axis=1) - amax_p)  # d bound / d lam
            nn = (gr * gr).sum(axis=1)
            stp = np.where(nn > 0, gap / np.maximum(nn, 1e-300), 0.0)
            lam[live] = np.clip(lam[live] - stp[:, None] * gr, 0.0, self._stack_cap(a_, fl))

    # ---- leaves -----------------------------------------------------------------------
    def _leaves(self, asg: np.ndarray, lc: np.ndarray, lr: np.ndarray, ul: np.ndarray) -> None:
        pr, g = self.pr, self.g
        K = asg.shape[0]
        self.leaves += K
        w1, w2, w3 = self.w
        sc = _pstd(pr.base_uc[None] + lc / pr.cpu[None])
        sr = _pstd(pr.base_ur[None] + lr / pr.ram[None])
        node_part = g.const - g.beta * (w1 * sc + w2 * sr)
        ub = node_part + self._bw_ub(asg, pr.n, ul, None, [])
        x = asg[:, self.pos]  # task -> node
        # value at the reference bandwidths
        col = x[:, pr.lsrc] == x[:, pr.ldst] if pr.V else np.zeros((K, 0), dtype=bool)
        if pr.R:
            u = pr.base_ub[None] + ul / pr.bw[None]
            sb = _pstd(u)
            cap_ok = (ul <= pr.res_bw[None] + CAP_EPS * (1 + pr.bw[None])).all(axis=1)
        else:
            sb = np.zeros(K)
            cap_ok = np.ones(K, dtype=bool)
        at_max = self.b0 >= pr.bmax
        dl = np.where(col | ~pr.elastic[None] | at_max[None], 1.0, 0.0)
        D0 = (pr.fixed_delta + dl.sum(axis=1)) / self.vt if self.vt else np.ones(K)
        val0 = node_part + g.alpha * D0 - g.beta * w3 * sb
        ok0 = cap_ok.copy()
        if g.d_min is not None:
            ok0 &= D0 >= g.d_min - 1e-12
        exact = ok0 & (ub - val0 <= self.tol * 0.5)
        order = np.argsort(-ub, kind="stable")
        for i in order:
            if ub[i] <= self.inc_value + self.tol:
                break
            if exact[i]:
                b = pr.bmax.copy()
                b[~col[i]] = self.b0[~col[i]]
                self.offer(x[i], b, float(val0[i]))
                continue
            if self._out_of_time():
                self.timed_out = True
                self._open.append(float(ub[i]))
                continue
            self.subproblems += 1
            res = solve_bandwidth(pr, g, x[i])
            if res.b is None:
                continue
            self.offer(x[i], res.b, float(node_part[i] + res.value))
            if res.status != "optimal":
                self.sub_gap = max(self.sub_gap, res.bound - res.value)

    def _out_of_time(self) -> bool:
        return self.deadline is not None and time.perf_counter() > self.deadline

    # ---- expansion ----------------------------------------------------------------------
    def _expand(self, depth: int, asg, lc, lr, ul, umin):
        """Children of a batch at ``depth`` (tasks order[:depth] placed)."""
        pr = self.pr
        t = self.order[depth]
        P = pr.P
        ok = (lc + pr.dc[t] <= pr.free_cpu[None] + CAP_EPS) & (lr + pr.dr[t] <= pr.free_ram[None] + CAP_EPS)
        for prev in self.twin_prev[depth]:
            ok &= np.arange(P)[None, :] >= asg[:, prev][:, None]
        links = self.routed_at[depth]
        for v, other, new_is_src in links:
            po = asg[:, other]
            ok &= pr.routable[:, po].T if new_is_src else pr.routable[po]
        i, p = np.nonzero(ok)
        asg2 = np.concatenate([asg[i], p[:, None]], axis=1)
        K = len(i)
        lc2 = lc[i]
        lc2[np.arange(K), p] += pr.dc[t]
        lr2 = lr[i]
        lr2[np.arange(K), p] += pr.dr[t]
        ul2 = ul[i]
        um2 = umin[i]
        if links and pr.R:
            for v, other, new_is_src in links:
                po = asg2[:, other]
                rt = pr.inc[p, po] if new_is_src else pr.inc[po, p]  # (K,R)
                ul2 += self.b0[v] * rt
                um2 += pr.bmin[v] * rt
            good = (um2 <= pr.res_bw[None, :] + CAP_EPS * (1 + pr.bw[None, :])).all(axis=1)
            if not good.all():
                asg2, lc2, lr2, ul2, um2 = asg2[good], lc2[good], lr2[good], ul2[good], um2[good]
        return asg2, lc2, lr2, ul2, um2

    def _bound(self, depth: int, asg, lc, lr, ul):
        """Upper bounds of children at ``depth`` (order[:depth] placed, depth < n); -inf for
        children proven infeasible or pruned. The parts are computed in stages (CPU, RAM,
        bandwidth), each on the children that the previous stages could not prune."""
        pr, g = self.pr, self.g
        rem = self.order[depth:]
        K = asg.shape[0]
        out = np.full(K, -np.inf)
        fc = pr.free_cpu[None] - lc
        fr = pr.free_ram[None] - lr
        fm = (pr.dc[rem][None, :, None] <= fc[:, None, :] + CAP_EPS) & (pr.dr[rem][None, :, None] <= fr[:, None, :]
                                                                         + CAP_EPS)
        alive = np.nonzero(fm.any(axis=2).all(axis=1))[0]
        w1, w2, w3 = self.w
        # optimistic remainder before each stage: bandwidth part <= alpha, other std >= 0
        ub = np.full(len(alive), g.const + g.alpha)
        cut = np.zeros((len(alive), 3))  # what each part (CPU, RAM, bandwidth) takes off const + alpha
        thr = self.inc_value + self.tol
        with np.errstate(over="ignore", invalid="ignore"):
            if g.beta > 0:
                for i, (wk, dem, cap, base, load) in enumerate(((w1, pr.dc, pr.cpu, pr.base_uc, lc),
                                                                (w2, pr.dr, pr.ram, pr.base_ur, lr))):
                    if wk <= 0 or len(alive) == 0:
                        continue
                    U = base[None] + load[alive] / cap[None]
                    cut[:, i] = g.beta * wk * self._node_lb(U, dem[rem][:, None] / cap[None], fm[alive])
                    ub = ub - cut[:, i]
                    keep = ub > thr
                    alive, ub, cut = alive[keep], ub[keep], cut[keep]
            if len(alive):
                bwu = self._bw_ub(asg[alive], depth, ul[alive], fm[alive], [int(r) for r in rem])
                cut[:, 2] = g.alpha - bwu
                ub = ub - g.alpha + bwu
            # room of each part against the incumbent: a completion whose part takes off more than
            # cut + room is no better than the incumbent (the other parts at their separate bounds)
            room = (ub - self.inc_value)[:, None] + cut if math.isfinite(self.inc_value) else None
            for bw in (JOINT_BW if self.joint else ()):  # the joint bound, one stage per bandwidth part
                keep = ub > thr
                alive, ub = alive[keep], ub[keep]
                room = room[keep] if room is not None else None
                if len(alive):
                    ub = np.minimum(ub, self._joint_ub(depth, asg[alive], lc[alive], lr[alive], ul[alive], fm[alive],
                                                       [int(r) for r in rem], bw, room))
        out[alive] = ub
        return out

    # ---- first incumbent: beam dives and a local search ------------------------------------
    def warm(self) -> None:
        """Beam dives of the widths ``WARM_WIDTHS``, each followed by the local search from
        that dive's own best leaf (not only from the overall best: a narrow dive's leaf and a
        wide dive's leaf lead the local search to different optima); the best mapping found
        becomes the incumbent. Only incumbents come out of it: the proof is unchanged."""
        best = (self.inc_value, self.inc_x, self.inc_b)
        for width in WARM_WIDTHS:
            if self._out_of_time():
                break
            self.inc_value, self.inc_x, self.inc_b = -math.inf, None, None
            self.dive(width)
            self.improve()
            if self.inc_value > best[0]:
                best = (self.inc_value, self.inc_x, self.inc_b)
        self.inc_value, self.inc_x, self.inc_b = best
        self.trace = [tr for k, tr in enumerate(self.trace) if tr[1] > max((t[1] for t in self.trace[:k]),
                                                                            default=-math.inf)]

    def dive(self, width: int = 8) -> None:
        """Beam search down the tree: at each depth only the ``width`` children with the
        largest bounds are kept; the leaves reached offer incumbents. Only incumbents come out
        of it (every offered value is exact), so the search's proof is unchanged. The children
        are ranked by the separate bound (the joint bound's choices led the beam to worse leaves
        on 20 x 8)."""
        joint, self.joint = self.joint, False
        try:
            self._dive(width)
        finally:
            self.joint = joint

    def _dive(self, width: int) -> None:
        pr = self.pr
        R = pr.R
        depth, asg = 0, np.zeros((1, 0), dtype=int)
        lc, lr, ul, um = np.zeros((1, pr.P)), np.zeros((1, pr.P)), np.zeros((1, R)), np.zeros((1, R))
        while not self._out_of_time():
            asg, lc, lr, ul, um = self._expand(depth, asg, lc, lr, ul, um)
            if asg.shape[0] == 0:
                return
            if depth + 1 == pr.n:
                self._leaves(asg, lc, lr, ul)
                return
            ub = self._bound(depth + 1, asg, lc, lr, ul)
            idx = np.nonzero(np.isfinite(ub))[0]
            idx = idx[np.argsort(-ub[idx], kind="stable")][:width]
            if len(idx) == 0:
                return
            asg, lc, lr, ul, um = asg[idx], lc[idx], lr[idx], ul[idx], um[idx]
            depth += 1

    def improve(self, max_rounds: int = 50) -> None:
        """Local search from the incumbent: every move of one task node to another node and
        every swap of two task nodes' nodes, scored exactly by the leaf routine; repeated
        while it improves."""
        pr = self.pr
        n, P = pr.n, pr.P
        for _ in range(max_rounds):
            if self.inc_x is None or self._out_of_time():
                return
            x0 = self.inc_x
            before = self.inc_value
            moves = np.repeat(x0[None, :], n * P, axis=0)
            moves[np.arange(n * P), np.repeat(np.arange(n), P)] = np.tile(np.arange(P), n)
            pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if x0[i] != x0[j]]
            swaps = np.repeat(x0[None, :], len(pairs), axis=0)
            for k, (i, j) in enumerate(pairs):
                swaps[k, i], swaps[k, j] = x0[j], x0[i]
            X = np.unique(np.concatenate([moves, swaps]), axis=0)
            X = X[(X != x0[None, :]).any(axis=1)]
            X = X[pr.fits(X) & pr.routable_all(X)]
            if pr.V and pr.R and len(X):
                um = (pr.bmin[None, :, None] * pr.link_inc(X)).sum(axis=1)
                X = X[(um <= pr.res_bw[None] + CAP_EPS * (1 + pr.bw[None])).all(axis=1)]
            if len(X) == 0:
                return
            lc, lr = pr.loads(X)
            ul = (self.b0[None, :, None] * pr.link_inc(X)).sum(axis=1) if pr.V and pr.R else np.zeros((len(X), pr.R))
            self._leaves(X[:, self.order], lc, lr, ul)
            if self.inc_value <= before:
                return

    # ---- driver -----------------------------------------------------------------------
    def run(self) -> None:
        pr = self.pr
        R = pr.R
        root = (0, np.zeros((1, 0), dtype=int), np.zeros((1, pr.P)), np.zeros((1, pr.P)), np.zeros((1, R)),
                np.zeros((1, R)), np.array([np.inf]))
        stack = [root]
        while stack:
            depth, asg, lc, lr, ul, um, ub = stack.pop()
            keep = ub > self.inc_value + self.tol
            if not keep.any():
                continue
            if not keep.all():
                asg, lc, lr, ul, um, ub = asg[keep], lc[keep], lr[keep], ul[keep], um[keep], ub[keep]
            if self._out_of_time():
                self.timed_out = True
                self._open.append(float(ub.max()))
                for item in stack:
                    self._open.append(float(item[6].max()) if len(item[6]) else -math.inf)
                return
            self.nodes += asg.shape[0]
            self.depth_nodes[depth] += asg.shape[0]
            asg2, lc2, lr2, ul2, um2 = self._expand(depth, asg, lc, lr, ul, um)
            if asg2.shape[0] == 0:
                continue
            if depth + 1 == pr.n:
                self._leaves(asg2, lc2, lr2, ul2)
                continue
            ub2 = self._bound(depth + 1, asg2, lc2, lr2, ul2)
            keep = ub2 > self.inc_value + self.tol
            if not keep.any():
                continue
            idx = np.nonzero(keep)[0]
            idx = idx[np.argsort(-ub2[idx], kind="stable")]
            C = self.chunk
            pieces = [idx[k:k + C] for k in range(0, len(idx), C)]
            for piece in reversed(pieces):
                stack.append((depth + 1, asg2[piece], lc2[piece], lr2[piece], ul2[piece], um2[piece], ub2[piece]))


def _pstd(u: np.ndarray) -> np.ndarray:
    if u.shape[-1] == 0:
        return np.zeros(u.shape[:-1])
    d = u - u.mean(axis=-1, keepdims=True)
    return np.sqrt((d * d).mean(axis=-1))


def branch_and_bound(pr: MappingProblem, g: Goal, *, time_limit: float | None = None, tol: float = PRUNE_TOL,
                     incumbent: tuple[np.ndarray, np.ndarray] | None = None, order: list[int] | None = None,
                     symmetry: bool = True, warm: bool = True, joint: bool | None = None) -> BnBResult:
    """Solve the mapping problem exactly (shortest-path routing) for goal ``g``.

    ``incumbent`` (x, b) seeds the search (its exact value is recomputed). Returns the best
    mapping, its exact bandwidths, its value and a proven upper bound: ``incumbent + tol``
    when the search finished, the largest open bound when the time limit stopped it."""
    t0 = time.perf_counter()
    if pr.routing != "shortest_path":
        raise ValueError("the branch and bound handles canonical shortest-path routing only")
    s = _Search(pr, g, time_limit=time_limit, tol=tol, order=order, symmetry=symmetry, joint=joint)
    if pr.n == 0:
        x = np.zeros(0, dtype=int)
        res = solve_bandwidth(pr, g, x)
        if res.b is None:
            return BnBResult("infeasible", None, None, -math.inf, -math.inf, {})
        v = g.const - g.beta * (pr.weights[0] * _pstd(pr.base_uc[None])[0] + pr.weights[1]
                                * _pstd(pr.base_ur[None])[0]) + res.value
        return BnBResult("optimal", x, res.b, float(v), float(v), {"nodes": 0})
    if incumbent is not None:
        x, b = incumbent
        x = np.asarray(x, dtype=int)
        if pr.fits(x[None])[0] and pr.routable_all(x[None])[0]:
            res = solve_bandwidth(pr, g, x)
            if res.b is not None:
                node_part = g.const - g.beta * (pr.weights[0] * pr.node_std(x[None])[0][0]
                                                + pr.weights[1] * pr.node_std(x[None])[1][0])
                s.offer(x, res.b, float(node_part + res.value))
    if warm:
        s.warm()
    s.run()
    stats = {"nodes": s.nodes, "depth_nodes": s.depth_nodes, "leaves": s.leaves, "subproblems": s.subproblems, "order": s.order,
             "symmetric_pairs": sum(len(v) for v in s.twin_prev), "runtime": time.perf_counter() - t0,
             "incumbent_trace": s.trace,
             "tolerance": tol}
    if s.timed_out:
        open_ub = max(s._open) if s._open else -math.inf
        bound = max(open_ub, s.inc_value + tol)
        if s.inc_x is None:
            return BnBResult("timeout", None, None, -math.inf, bound, stats)
        return BnBResult("feasible", s.inc_x, s.inc_b, s.inc_value, bound + s.sub_gap, stats)
    if s.inc_x is None:
        return BnBResult("infeasible", None, None, -math.inf, -math.inf, stats)
    status = "optimal"
    return BnBResult(status, s.inc_x, s.inc_b, s.inc_value, s.inc_value + tol + s.sub_gap, stats)
