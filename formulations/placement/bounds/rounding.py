"""Rounding cuts for the trajectory bound (6) (issue 23).  Proof: docs/formulations/placement.md,
"(6) Trajectory pricing", *Rounding cuts*.

For a cluster n, a step t and integers alpha, beta >= 0 (not both 0) and gamma >= 1, every
referee-feasible schedule satisfies

    sum_j floor((alpha c_j + beta g_j) / gamma) <= floor((alpha C + beta G) / gamma)

where c_j, g_j are task j's (integer) cpu and gpu on n in step t and C, G the capacities: floor is
superadditive and non-decreasing, so the sum is at most floor((alpha sum c_j + beta sum g_j) /
gamma) <= the right-hand side.  These are Chvatal-Gomory cuts of a step's two capacity rows:
beta = 0 or alpha = 0 gives the single-resource cuts ``floor(a x / g)`` (session 7); both > 0
combines the rows.  (6)'s master LP may mix histories so that, say, 2.7 tasks hold 6 of 16 GPUs
in a step (the gpu cut a / g = 1 / 6 allows 2), or, on a 4-cpu / 4-gpu cluster where every task
needs 2 cpu, 0.6 of a task holding all 4 GPUs runs beside tasks worth 1.2 more (the combined cut
alpha = beta = 1, gamma = 3, ``floor((c + g) / 3)``, gives the 4-GPU task 2 and any other 1, and
allows 2).

The cut enters (6) as one more Lagrangian term ``nu (sum_j floor(...) - rhs) <= 0`` with nu >= 0:
a task's price gains ``nu floor((alpha c + beta g) / gamma)`` in every step it holds (c, g) on n —
a non-decreasing function of both amounts, so (6)'s labelling programme and its proof
(allocations replaced by kept ones with no more cpu and gpu) hold unchanged — and the value loses
``nu rhs``.  The cuts are separated on the master LP's solution once column generation has
converged, a fixed number of rounds (no clock: same input, same bound).
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import numpy as np

#: a cut is added only when the master's solution violates it by more than this
VIOLATION = 1e-3
#: the most violated cuts added per separation round (a deterministic order)
PER_ROUND = 400
#: the combined cuts try alpha, beta in 1..COMBINED
COMBINED = 3


class Cuts:
    """The rounding cuts found so far: cut k is (n, t, alpha, beta, gamma), right-hand side
    floor((alpha C + beta G) / gamma)."""

    def __init__(self, caps: np.ndarray, H: int):
        self.caps, self.H = caps, H
        self.keys: list[tuple[int, int, int, int, int]] = []
        self.rhs: list[int] = []
        self.at: dict[tuple[int, int], list[tuple[int, int, int, int]]] = {}  # (n, t) -> [(k, alpha, beta, gamma)]
        self._seen: set = set()
        self._arr: np.ndarray | None = None  # the keys as an array (:meth:`step_costs`)

    def __len__(self) -> int:
        return len(self.keys)

    def add(self, n: int, t: int, alpha: int, beta: int, gamma: int) -> int:
        assert alpha >= 0 and beta >= 0 and alpha + beta > 0 and gamma >= 1, (alpha, beta, gamma)
        k = len(self.keys)
        self.keys.append((n, t, alpha, beta, gamma))
        self.rhs.append((alpha * int(self.caps[n, 0]) + beta * int(self.caps[n, 1])) // gamma)
        self.at.setdefault((n, t), []).append((k, alpha, beta, gamma))
        self._seen.add((n, t, alpha, beta, gamma))
        return k

    def add_single(self, n: int, r: int, t: int, a: int, g: int) -> int:
        """The single-resource cut floor(a x / g) of resource r (0 cpu, 1 gpu)."""
        return self.add(n, t, a if r == 0 else 0, a if r == 1 else 0, g)

    def coef(self, k: int, cpu, gpu):
        """Cut k's coefficient floor((alpha cpu + beta gpu) / gamma) (numbers or integer arrays)."""
        _, _, al, be, ga = self.keys[k]
        return (al * cpu + be * gpu) // ga

    def rows(self, k: int) -> tuple[int, int]:
        """Cut k's cpu and gpu capacity rows, flat (n, r, t) as in (4)'s master."""
        n, t = self.keys[k][:2]
        return (n * 2) * self.H + t, (n * 2 + 1) * self.H + t

    def coefs(self, k: int, entry: Callable[[int], tuple]) -> tuple[np.ndarray, np.ndarray]:
        """(columns, coefficients) of cut k over the columns that hold cpu or gpu in its step;
        ``entry(row)``: (columns, amounts) of a flat capacity row."""
        amounts: dict[int, list[int]] = {}
        for r, row in enumerate(self.rows(k)):
            cols, vals = entry(row)
            for c, x in zip(cols, vals):
                amounts.setdefault(int(c), [0, 0])[r] = int(x)
        cols = np.array(sorted(amounts), dtype=np.int64)
        use = np.array([amounts[c] for c in cols.tolist()], dtype=np.int64).reshape(-1, 2)
        return cols, self.coef(k, use[:, 0], use[:, 1])

    def total(self, nu: np.ndarray) -> int:
        """sum_k nu_k rhs_k (exact integers)."""
        return int(np.dot(nu.astype(np.int64), np.array(self.rhs, dtype=np.int64))) if self.keys else 0

    def step_costs(self, nu: np.ndarray, n: int, a: int, cpu: np.ndarray, gpu: np.ndarray):
        """The cut costs of holding each allocation (arrays cpu, gpu) on n in each step t in [a, H):
        an integer array (H - a, allocations), row t - a the sum over step t's cuts k of
        nu_k floor((alpha cpu + beta gpu) / gamma); None where no cut with nu > 0 applies on n from
        step a on."""
        if self._arr is None or self._arr.shape[0] != len(self.keys):
            self._arr = np.array(self.keys, dtype=np.int64).reshape(-1, 5)
        K = self._arr
        on = np.nonzero((K[:, 0] == n) & (K[:, 1] >= a) & (nu[:K.shape[0]] > 0))[0]
        if not on.size:
            return None
        t, al, be, ga = K[on, 1], K[on, 2], K[on, 3], K[on, 4]
        terms = nu[on].astype(np.int64)[:, None] * ((al[:, None] * cpu[None, :] + be[:, None] * gpu[None, :])
                                                   // ga[:, None])
        out = np.zeros((self.H - a, cpu.size), dtype=np.int64)
        np.add.at(out, t - a, terms)
        return out

    def column(self, use: dict) -> tuple[list[int], list[float]]:
        """(cut indices, coefficients) of a column with usage {(n, r, t): x}."""
        ks, vs = [], []
        for n, t in sorted({(n, t) for (n, _, t) in use}):
            for k, _, _, _ in self.at.get((n, t), ()):
                v = self.coef(k, use.get((n, 0, t), 0), use.get((n, 1, t), 0))
                if v:
                    ks.append(k)
                    vs.append(float(v))
        return ks, vs

    def separate(self, steps: dict) -> list[int]:
        """Add the cuts the master's solution violates; ``steps``: (n, t) -> [(share, cpu, gpu)]
        of the columns in the solution.  Per step the cut not yet added with the largest violation
        per unit of alpha + beta among the cpu cuts, among the gpu cuts and among the combined
        ones; then the ``PER_ROUND`` largest.  Returns the new cuts' indices (a deterministic
        order)."""
        found = []
        for n, t in sorted(steps):
            C, G = int(self.caps[n, 0]), int(self.caps[n, 1])
            share = np.array([s for s, _, _ in steps[n, t]])
            cpu = np.array([c for _, c, _ in steps[n, t]], dtype=np.int64)
            gpu = np.array([g for _, _, g in steps[n, t]], dtype=np.int64)
            for al, be, ga in _families(C, G):
                if not al.size:
                    continue
                lhs = ((al[:, None] * cpu[None, :] + be[:, None] * gpu[None, :]) // ga[:, None]) @ share
                score = (lhs - (al * C + be * G) // ga) / (al + be)
                for i in np.argsort(-score, kind="stable"):
                    if score[i] <= VIOLATION:
                        break
                    key = (n, t, int(al[i]), int(be[i]), int(ga[i]))
                    if key not in self._seen:
                        found.append((-float(score[i]), key))
                        break
        found.sort()
        return [self.add(*key) for _, key in found[:PER_ROUND]]


@functools.lru_cache(maxsize=None)
def _pairs(C: int) -> tuple[np.ndarray, np.ndarray]:
    """The multipliers a / g of the single-resource cuts tried for capacity C: 1 <= a < g <= C,
    gcd(a, g) = 1, a / g increasing (equal scores keep the smaller a / g)."""
    out = sorted({(a // math.gcd(a, g), g // math.gcd(a, g)) for g in range(2, C + 1) for a in range(1, g)},
                 key=lambda p: (p[0] / p[1], p[1]))
    return (np.array([p[0] for p in out], dtype=np.int64), np.array([p[1] for p in out], dtype=np.int64))


@functools.lru_cache(maxsize=None)
def _combined(C: int, G: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(alpha, beta, gamma) of the combined cuts tried for capacities (C, G): 1 <= alpha, beta <=
    COMBINED, gcd 1, 2 <= gamma <= alpha C + beta G (gamma = 1 or larger cut nothing), in a fixed
    order."""
    out = [(al, be, ga) for al in range(1, COMBINED + 1) for be in range(1, COMBINED + 1)
           if math.gcd(al, be) == 1 for ga in range(2, al * C + be * G + 1)]
    arr = np.array(out, dtype=np.int64).reshape(-1, 3)
    return arr[:, 0], arr[:, 1], arr[:, 2]


@functools.lru_cache(maxsize=None)
def _families(C: int, G: int) -> tuple:
    """The three families tried per step: cpu cuts, gpu cuts, combined cuts (each (alpha, beta,
    gamma) arrays)."""
    zc, zg = np.zeros(_pairs(C)[0].size, dtype=np.int64), np.zeros(_pairs(G)[0].size, dtype=np.int64)
    return ((_pairs(C)[0], zc, _pairs(C)[1]), (zg, _pairs(G)[0], _pairs(G)[1]), _combined(C, G))
