"""Rounding cuts for the trajectory bound (6) (issue 23).  Proof: docs/formulations/placement.md,
"(6) Trajectory pricing", *Rounding cuts*.

For a cluster n, a resource r (cpu or gpu), a step t and integers 1 <= a < g, every
referee-feasible schedule satisfies

    sum_j floor(a x_j / g) <= floor(a C / g)

where x_j is task j's (integer) amount of r on n in step t and C the capacity: floor is
superadditive and non-decreasing, so the sum is at most floor(a sum_j x_j / g) <= floor(a C / g).
(6)'s master LP may mix histories so that, say, 2.7 tasks hold 6 of 16 GPUs in a step; the cut
with a = 1, g = 6 allows 2.

The cut enters (6) as one more Lagrangian term ``nu (sum_j floor(a x_j / g) - floor(a C / g))
<= 0`` with nu >= 0: a task's price gains ``nu floor(a x / g)`` in every step it holds x of r on n — a
non-decreasing function of the allocation, so (6)'s labelling programme and its proof (allocations
replaced by kept ones with no more cpu and gpu) hold unchanged — and the value loses
``nu floor(C / g)``.  The cuts are separated on the master LP's solution once column generation
has converged, a fixed number of rounds (no clock: same input, same bound).
"""

from __future__ import annotations

import functools
import math

import numpy as np

#: a cut is added only when the master's solution violates it by more than this
VIOLATION = 1e-3
#: the most violated cuts added per separation round (a deterministic order)
PER_ROUND = 400


class Cuts:
    """The rounding cuts found so far: cut k is (n, r, t, a, g), right-hand side floor(a C / g)."""

    def __init__(self, caps: np.ndarray, H: int):
        self.caps, self.H = caps, H
        self.keys: list[tuple[int, int, int, int, int]] = []
        self.rhs: list[int] = []
        self.at: dict[tuple[int, int], list[tuple[int, int, int, int]]] = {}  # (n, t) -> [(k, r, a, g)]
        self._seen: set = set()

    def __len__(self) -> int:
        return len(self.keys)

    def add(self, n: int, r: int, t: int, a: int, g: int) -> int:
        k = len(self.keys)
        self.keys.append((n, r, t, a, g))
        self.rhs.append(a * int(self.caps[n, r]) // g)
        self.at.setdefault((n, t), []).append((k, r, a, g))
        self._seen.add((n, r, t, a, g))
        return k

    def coef(self, k: int, x):
        """Cut k's coefficient floor(a x / g) of an amount x (a number or an integer array)."""
        _, _, _, a, g = self.keys[k]
        return (a * x) // g

    def row(self, k: int) -> int:
        """Cut k's capacity row, flat (n, r, t) as in (4)'s master."""
        n, r, t, _, _ = self.keys[k]
        return (n * 2 + r) * self.H + t

    def total(self, nu: np.ndarray) -> int:
        """sum_k nu_k floor(C_k / g_k) (exact integers)."""
        return int(np.dot(nu.astype(np.int64), np.array(self.rhs, dtype=np.int64))) if self.keys else 0

    def step_cost(self, nu: np.ndarray, n: int, t: int, cpu: np.ndarray, gpu: np.ndarray):
        """Per allocation (arrays cpu, gpu) its cut cost in step t on n, or None where no cut with
        nu > 0 applies."""
        out = None
        for k, r, _, _ in self.at.get((n, t), ()):
            if nu[k]:
                term = int(nu[k]) * self.coef(k, cpu if r == 0 else gpu)
                out = term if out is None else out + term
        return out

    def column(self, use: dict) -> tuple[list[int], list[float]]:
        """(cut indices, coefficients floor(a x / g)) of a column with usage {(n, r, t): x}."""
        ks, vs = [], []
        for (n, r, t), x in use.items():
            for k, rr, _, _ in self.at.get((n, t), ()):
                if rr == r and self.coef(k, x):
                    ks.append(k)
                    vs.append(float(self.coef(k, x)))
        return ks, vs

    def separate(self, rows: dict) -> list[int]:
        """Add the cuts the master's solution violates; ``rows``: flat capacity row -> [(share,
        amount)] of the columns in the solution.  Per row the cut (a, g), 1 <= a < g <= C, not yet
        added with the largest violation per unit of a; then the ``PER_ROUND`` rows with the
        largest such violations.  Returns the new cuts' indices (a deterministic order)."""
        H = self.H
        found = []
        for rr in sorted(rows):
            n, rem = divmod(rr, 2 * H)
            r, t = divmod(rem, H)
            C = int(self.caps[n, r])
            a, g = _pairs(C)
            if not a.size:
                continue
            share = np.array([s for s, _ in rows[rr]])
            amount = np.array([x for _, x in rows[rr]], dtype=np.int64)
            lhs = ((a[:, None] * amount[None, :]) // g[:, None]) @ share
            score = (lhs - (a * C) // g) / a
            for i in np.argsort(-score, kind="stable"):
                if score[i] <= VIOLATION:
                    break
                if (n, r, t, int(a[i]), int(g[i])) not in self._seen:
                    found.append((-float(score[i]), rr, int(a[i]), int(g[i])))
                    break
        found.sort()
        new = []
        for _, rr, a, g in found[:PER_ROUND]:
            n, rem = divmod(rr, 2 * H)
            r, t = divmod(rem, H)
            new.append(self.add(n, r, t, a, g))
        return new


@functools.lru_cache(maxsize=None)
def _pairs(C: int) -> tuple[np.ndarray, np.ndarray]:
    """The multipliers a / g of the cuts tried for capacity C: 1 <= a < g <= C, gcd(a, g) = 1,
    a / g increasing (equal scores keep the smaller a / g)."""
    out = sorted({(a // math.gcd(a, g), g // math.gcd(a, g)) for g in range(2, C + 1) for a in range(1, g)},
                 key=lambda p: (p[0] / p[1], p[1]))
    return (np.array([p[0] for p in out], dtype=np.int64), np.array([p[1] for p in out], dtype=np.int64))
