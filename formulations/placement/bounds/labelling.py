"""The labelling programme of the trajectory bound (6), compiled (numba): one task, one cluster.
:func:`placement.bounds.trajectory.price_pair` prepares its arrays and reads its answer; the relaxation,
its proof and the order of the operations are those written there (docs/formulations/placement.md,
"(6) Trajectory pricing").

The programme is a line-by-line translation of the vectorised numpy version it replaced (session
12): per step, every label is extended by a pause and by every candidate allocation, children are
pruned by the fewest steps they still need, sorted by (group, progress down, cost up) with stable
sorts and filtered to each group's Pareto front.  Progress uses the same float operations in the
same order (numba does not fuse or reorder them without ``fastmath``), so the prices, and the
columns chosen among equal prices, are those of the numpy version: the bound did not change, only
its speed (about 10x: numpy spent its time on the overhead of small arrays).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: :func:`label` returns this status when a label needs a noise factor beyond those given
NEED_FACTORS = 1


@njit(cache=True, inline="always")
def _grow(a, n):
    if n <= a.size:
        return a
    out = np.empty(max(n, 2 * a.size), dtype=a.dtype)
    out[:a.size] = a
    return out


@njit(cache=True)
def envelope(p, par, eps, sig, kappa, base, synthetic):
    """placement.bounds.trajectory.additive_envelope for one progress p, parameter, draw and loss factor
    (the proof is there): ``sup_{0 <= q <= p} q + sig max(h(q) + eps, 0)`` plus 1e-12."""
    if not synthetic:
        out = p + sig * max(par + eps, 0.0)
        return out + 1e-12
    sp = sig * par
    if p <= kappa - 0.25 * sp * sp:
        h = par * math.sqrt(max(kappa - p, 0.0)) + base
        val = p + sig * (h + eps)
    else:
        val = kappa + 0.25 * sp * sp + sig * (base + eps)
    if p > kappa:
        val = max(val, p + sig * (base + eps))
    return max(val, p) + 1e-12


@njit(cache=True)
def envelope_grid(p, par, eps, sig, kappa, base, synthetic):
    """:func:`envelope` on rows p x columns par (eps per row, sig per row and column)."""
    out = np.empty((p.size, par.size))
    for i in range(p.size):
        for j in range(par.size):
            out[i, j] = envelope(p[i], par[j], eps[i], sig[i, j], kappa, base, synthetic)
    return out


@njit(cache=True, inline="always")
def _step(p, par, fac, lossy, synthetic, additive, kappa, base, sigma):
    """Progress after one executed step: the referee's recursion, or under additive noise (``fac``
    is then the draw) its monotone :func:`envelope`."""
    if additive:
        return envelope(p, par, fac, sigma if lossy else 1.0, kappa, base, synthetic)
    if synthetic:
        inc = par * math.sqrt(max(kappa - p, 0.0)) + base
    else:
        inc = par
    gain = inc * fac
    if lossy:
        gain = gain * sigma
    return p + gain


@njit(cache=True)
def step_grid(p, par, fac, lossy, synthetic, additive, kappa, base, sigma):
    """:func:`_step` on rows p x columns par, one noise factor (or draw), ``lossy`` per row and
    column."""
    out = np.empty((p.size, par.size))
    for i in range(p.size):
        for j in range(par.size):
            out[i, j] = _step(p[i], par[j], fac, lossy[i, j], synthetic, additive, kappa, base, sigma)
    return out


@njit(cache=True, inline="always")
def _fewest(b, grid, done_at, synthetic, additive, kappa, base, pmax, fmax, top_add):
    """A lower bound (>= 1) on the executed steps a label of progress ``b / grid`` still needs:
    one relaxed step from progress p gains at most ``g(p) = (pmax sqrt(max(kappa - p, 0)) + base)
    fmax + 1 / grid`` (the largest parameter, the largest noise factor, the rounding up; table:
    pmax for the bracket), and g only falls as progress grows, so r steps reach at most p + r g(p).
    Under additive noise one envelope step adds at most ``top_add`` (placement.bounds.trajectory.Options)."""
    p = float(b) / grid
    if additive:
        g = top_add
    else:
        if synthetic:
            g = pmax * math.sqrt(max(kappa - p, 0.0)) + base
        else:
            g = pmax
        g = (g * fmax + 1.0 / grid) * (1.0 + 1e-9)
    return np.int64(max(math.ceil((done_at - p) / g - 1e-6), 1.0))


@njit(cache=True)
def pareto(key, cost, idx):
    """The labels ``idx`` (sorted by group ``key``, progress down, cost up) on their group's
    Pareto front: the first of each group, then each whose cost is below every earlier cost of its
    group; in ``idx``'s order."""
    sel = np.empty(idx.size, dtype=np.int64)
    ns = 0
    run = 0
    for j in range(idx.size):
        i = idx[j]
        if j == 0 or key[i] != key[idx[j - 1]] or cost[i] < run:
            run = cost[i]
            sel[ns] = i
            ns += 1
    return sel[:ns]


@njit(cache=True)
def label(cpu, gpu, param, level, synthetic, additive, kappa, base, sigma, pmax, fmax, top_add, factors,
          a, H, lamc, lamg, mu, extra, cap, has_cap, switching, scale, grid, done_at):
    """(status, best, has_best, t_end, row, option, work, parents, options, offsets).

    ``lamc, lamg, mu``: the cluster's multipliers per step (length H); ``extra``: (max(H - a, 0),
    options) further costs per step; ``cap``/``has_cap``: only histories costing below it count.
    ``parents``/``options`` hold every step's labels' parent row and option (offsets per step)
    for the walk back to the column.  status NEED_FACTORS: ``factors`` is too short."""
    big = np.iinfo(np.int64).max
    nopt = cpu.size
    nlev = (level.max() + 2) if nopt else 1
    best = cap
    has_best = has_cap
    found = False
    t_end = -1
    brow = -1
    bopt = -1
    work = 0
    # labels at the start of the current step
    K = np.zeros(1, dtype=np.int64)
    LV = np.full(1, -1, dtype=np.int64)
    B = np.zeros(1, dtype=np.int64)
    C = np.zeros(1, dtype=np.int64)
    parents = np.full(64, -1, dtype=np.int64)
    options = np.full(64, -1, dtype=np.int64)
    offsets = np.zeros(64, dtype=np.int64)
    offsets[1] = 1  # layer 0: the empty history
    nlayers = 1
    allcost = np.zeros(nopt, dtype=np.int64)
    cand = np.arange(nopt)
    if nopt == 0:
        return 0, best, False, t_end, brow, bopt, work, parents, options, offsets[:2].copy()
    t = a
    while B.size and ((not has_best) or ((t + 1 - a) << scale) < best):
        L = B.size
        if t < H:
            lc, lg, m = lamc[t], lamg[t], mu[t]
            for o in range(nopt):
                allcost[o] = lc * cpu[o] + lg * gpu[o] + extra[t - a, o]
        else:
            m = 0
            allcost[:] = 0
        if not switching:  # only the allocations on the (parameter up, cost down) front at these costs
            order = np.argsort(allcost, kind="mergesort")  # np.lexsort((allcost, -param))
            order = order[np.argsort(-param[order], kind="mergesort")]
            nc = 0
            top = big
            first = True
            cand = np.empty(nopt, dtype=np.int64)
            for i in order:
                if first or allcost[i] < top:
                    cand[nc] = i
                    nc += 1
                    top = allcost[i]
                    first = False
            cand = cand[:nc]
        nc = cand.size
        for i in range(L):
            if K[i] >= factors.size:
                return NEED_FACTORS, best, has_best, t_end, brow, bopt, work, parents, options, offsets.copy()
        work += L * nc
        # children: the pauses (k, -1) then the executed steps (k + 1, level), rows then options
        M = L + L * nc
        K2 = np.empty(M, dtype=np.int64)
        LV2 = np.empty(M, dtype=np.int64)
        B2 = np.empty(M, dtype=np.int64)
        C2 = np.empty(M, dtype=np.int64)
        P2 = np.empty(M, dtype=np.int64)
        O2 = np.empty(M, dtype=np.int64)
        K2[:L] = K
        LV2[:L] = -1
        B2[:L] = B
        C2[:L] = C
        P2[:L] = np.arange(L)
        O2[:L] = -1
        cnt = L
        step_best = big
        sr = -1
        so = -1
        any_done = False
        for r in range(L):
            p = float(B[r]) / grid
            fac = factors[K[r]]
            start = m if K[r] == 0 else 0
            for c in range(nc):
                o = cand[c]
                lossy = switching and (level[o] != LV[r]) and K[r] > 0
                q = _step(p, param[o], fac, lossy, synthetic, additive, kappa, base, sigma)
                tot = C[r] + allcost[o] + start
                if q >= done_at:
                    if (not any_done) or tot < step_best:
                        step_best, sr, so = tot, r, o
                        any_done = True
                else:
                    K2[cnt] = K[r] + 1
                    LV2[cnt] = level[o] if switching else -1
                    B2[cnt] = min(np.int64(math.ceil(q * grid)), np.int64(grid))
                    C2[cnt] = tot
                    P2[cnt] = r
                    O2[cnt] = o
                    cnt += 1
        if any_done:
            val = ((t + 1 - a) << scale) + step_best
            if (not has_best) or val < best:
                best, has_best, found = val, True, True
                t_end, brow, bopt = t, sr, so
        # prune: completion no earlier than t + 1 + (the fewest steps still needed)
        n2 = 0
        for i in range(cnt):
            keep = True
            if has_best:
                f = _fewest(B2[i], grid, done_at, synthetic, additive, kappa, base, pmax, fmax, top_add)
                keep = (((t + 1 - a + f) << scale) + C2[i]) < best
            if keep:
                K2[n2], LV2[n2], B2[n2], C2[n2], P2[n2], O2[n2] = K2[i], LV2[i], B2[i], C2[i], P2[i], O2[i]
                n2 += 1
        K2, LV2, B2, C2, P2, O2 = K2[:n2], LV2[:n2], B2[:n2], C2[:n2], P2[:n2], O2[:n2]
        if n2:
            key = K2 * nlev + (LV2 + 1)
            # np.lexsort((C2, -B2, key)): stable sorts from the last key to the first
            idx = np.argsort(C2, kind="mergesort")
            idx = idx[np.argsort(-B2[idx], kind="mergesort")]
            idx = idx[np.argsort(key[idx], kind="mergesort")]
            sel = pareto(key, C2, idx)
            K, LV, B, C = K2[sel], LV2[sel], B2[sel], C2[sel]
            P2, O2 = P2[sel], O2[sel]
        else:
            K, LV, B, C = K2, LV2, B2, C2
        # layer nlayers: the labels at the start of step t + 1
        end = offsets[nlayers] + P2.size
        offsets = _grow(offsets, nlayers + 2)
        parents = _grow(parents, end)
        options = _grow(options, end)
        parents[offsets[nlayers]:end] = P2
        options[offsets[nlayers]:end] = O2
        offsets[nlayers + 1] = end
        nlayers += 1
        t += 1
    if not found:
        has_best = False
    return 0, best, has_best, t_end, brow, bopt, work, parents, options, offsets[:nlayers + 1].copy()


@njit(cache=True)
def walk_back(a, t_end, row, option, parents, options, offsets):
    """The (step, option) of the history ending at (t_end, row, option), latest first: layer
    ``tt - a`` holds the labels at the start of step tt."""
    steps = [(t_end, option)]
    r, tt = row, t_end
    while tt > a:
        base = offsets[tt - a]
        o = options[base + r]
        if o >= 0:
            steps.append((tt - 1, o))
        r = parents[base + r]
        tt -= 1
    return steps


@njit(cache=True)
def undominated_groups(b, use, order, starts):
    """Bound (7)'s dominance filter, compiled, on each group of labels at once: group g is
    ``order[starts[g]:starts[g + 1]]``, visited in that order; a label is kept unless a kept label
    of its group has at least its progress ``b`` and at most its usage at every position of
    ``use`` (rows); the kept indices, group by group, each in visiting order.  The logic of the
    numpy loop it replaced (session 27), so the same labels survive; a kept label whose total
    usage exceeds the label's is skipped before the positions are compared (it cannot be at most
    everywhere)."""
    kept = np.empty(order.size, dtype=np.int64)
    total = use.sum(axis=1)
    m = 0
    width = use.shape[1]
    for g in range(starts.size - 1):
        first = m
        for ii in range(starts[g], starts[g + 1]):
            i = order[ii]
            dominated = False
            for r in range(first, m):
                k = kept[r]
                if b[k] >= b[i] and total[k] <= total[i]:
                    below = True
                    for c in range(width):
                        if use[k, c] > use[i, c]:
                            below = False
                            break
                    if below:
                        dominated = True
                        break
            if not dominated:
                kept[m] = i
                m += 1
    return kept[:m]


@njit(cache=True)
def undominated(b, use, order):
    """:func:`undominated_groups` on one group: the labels in ``order``."""
    starts = np.empty(2, dtype=np.int64)
    starts[0] = 0
    starts[1] = order.size
    return undominated_groups(b, use, order, starts)


@njit(cache=True)
def step_rows(p, ks, par, factors, lossy, synthetic, additive, kappa, base, sigma):
    """:func:`step_grid` with a noise index per row: row i advances with ``factors[ks[i]]``."""
    out = np.empty((p.size, par.size))
    for i in range(p.size):
        fac = factors[ks[i]]
        for j in range(par.size):
            out[i, j] = _step(p[i], par[j], fac, lossy[i, j], synthetic, additive, kappa, base, sigma)
    return out


@njit(cache=True)
def needed_steps(b, ks, top, factors, synthetic, additive, kappa, base, sigma, grid, done_at):
    """Per label of progress ``b[i] / grid`` after ``ks[i]`` executed steps: the executed steps it
    still needs at the gain parameter ``top`` with no switching loss, its progress rounded up to
    the grid after each step (bound (7)'s pruning); -1 where ``factors`` is too short."""
    out = np.empty(b.size, dtype=np.int64)
    for i in range(b.size):
        p = float(b[i]) / grid
        k = ks[i]
        steps = 0
        out[i] = -1
        while k + steps < factors.size:
            q = _step(p, top, factors[k + steps], False, synthetic, additive, kappa, base, sigma)
            steps += 1
            if q >= done_at:
                out[i] = steps
                break
            p = min(np.ceil(q * grid), float(grid)) / grid
    return out
