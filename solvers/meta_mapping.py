"""The mapping family (CES) as a random-key problem for the metaheuristics.

Genome (``dim = N + V``): one key per task node of every job (global numbering in job order,
N in all) followed by one key per task link (V in all, job order).

Decoding, vectorised over the whole population (numpy arrays [G, ...], one Python step per
task node and per task link, never per genome):

1. **Task nodes**, in genome order. The key of task node n names a *preferred* physical node
   ``floor(key * P)``. The node taken is the feasible node nearest to it in index space
   (ties: the lower index), where feasible means enough free CPU and RAM in every time
   segment the job is active in (capacity minus background minus the task nodes already
   decoded) and reachability: a canonical route must exist from the node of every
   already-decoded predecessor in the task graph, and to the node of every already-decoded
   successor.  If no node is feasible the reachability condition is dropped, then the
   capacity condition (the node with the most slack is taken); the genome is then infeasible
   and scored as such.
2. **Task links**, in genome order. The key gives a bandwidth level ``frac`` in [0, 1],
   continuous, with a saturated margin: ``frac = clip((key - 0.1) / 0.8, 0, 1)``, so a fifth
   of the key range maps exactly to BWmin or BWmax; the bandwidth is ``BWmin + frac (BWmax -
   BWmin)``, clipped to the free bandwidth along the canonical route (in the job's segments)
   but never below BWmin.  A co-located task link gets BWmax and no route.

Every job starts at its arrival (``start`` None); capacities are enforced per time segment
of the referee, so jobs that are simultaneously active (the usual multi-job case: one
segment) share the capacities, and jobs that never overlap do not.

The fitness is the referee's composite, computed for the whole population by
:func:`edgebench.referee.mapping.batch_objectives` (the same code as the referee's
``evaluate``). A genome whose decoding is infeasible scores ``-(1 + total violation)``, below
every feasible composite (a feasible composite is at least 0.25: utilisations are at most 1,
so L <= 0.5).
"""

from __future__ import annotations

import numpy as np

from edgebench.instances.model import Instance
from edgebench.referee import mapping as ref
from edgebench.solution import JobDecision, LinkDecision, MappingDecisions
from edgebench.solvers.meta_common import KEY_MAX, clip_keys, index_to_key, key_to_index

#: fraction of the key range at each end that maps exactly to BWmin / BWmax
BW_MARGIN = 0.1
#: slack of the decoder's capacity tests (the referee allows 1e-6 absolute + relative)
CAP_EPS = 1e-9


def bw_fraction(keys: np.ndarray) -> np.ndarray:
    """Bandwidth level in [0, 1] of link keys (saturated margins of :data:`BW_MARGIN`)."""
    return np.clip((keys - BW_MARGIN) / (1.0 - 2.0 * BW_MARGIN), 0.0, 1.0)


def bw_key(frac: np.ndarray) -> np.ndarray:
    """A key whose :func:`bw_fraction` is ``frac`` (the ends go inside the saturated margins)."""
    frac = np.asarray(frac, dtype=float)
    key = BW_MARGIN + frac * (1.0 - 2.0 * BW_MARGIN)
    key = np.where(frac <= 0.0, BW_MARGIN / 2, key)
    return np.where(frac >= 1.0, 1.0 - BW_MARGIN / 2, key)


class MappingProblem:
    """Random-key view of a mapping instance (see the module docstring)."""

    family = "mapping"
    sense = "max"

    def __init__(self, instance: Instance) -> None:
        if instance.family != "mapping" or instance.mapping is None:
            raise ValueError(f"MappingProblem needs a mapping instance, got {instance.family!r}")
        self.instance = instance
        self.pre = ref.precompute(instance)
        self.fl = ref.flat(self.pre)
        fl, pre = self.fl, self.pre
        self.P, self.R, self.N, self.V = pre.P, pre.R, fl.N, fl.V
        self.dim = self.N + self.V
        self.reach = fl.routable.reshape(self.P, self.P)
        self.all_reachable = bool(self.reach.all())
        # segments of each job (jobs start at their arrivals)
        self.S = fl.active.shape[0]
        self.job_segs = [np.nonzero(fl.active[:, j] > 0)[0] for j in range(fl.J)]
        # per task node: already-decoded neighbours in the task graph (global indices)
        self.preds: list[list[int]] = [[] for _ in range(self.N)]  # m -> n, m decoded earlier
        self.succs: list[list[int]] = [[] for _ in range(self.N)]  # n -> m, m decoded earlier
        for v in range(self.V):
            s, t = int(fl.lsrc[v]), int(fl.ldst[v])
            if s < t:
                self.preds[t].append(s)
            else:
                self.succs[s].append(t)
        # decoder tables
        self.free2 = np.stack([pre.free_cpu, pre.free_ram])[:, None, :]  # [2, 1, P]
        self.free2_eps = self.free2 + CAP_EPS
        self.bw_eps = pre.bw + CAP_EPS
        self.demand2 = np.stack([fl.task_cpu, fl.task_ram], axis=1)[:, :, None]  # [N, 2, 1]
        idx = np.arange(self.P)
        self.dist = np.abs(idx[:, None] - idx[None, :]).astype(float)  # [pref, p]
        self.route_pad_r = np.where(fl.route_pad >= 0, fl.route_pad, self.R)
        self._arange_p = idx

    # ---- decoding ---------------------------------------------------------------------

    def decode_batch(self, pop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Genomes [G, dim] -> (nodes [G, N] int, bandwidth [G, V])."""
        nodes, bandwidth, _ = self._decode(pop)
        return nodes, bandwidth

    def _decode(self, pop: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """Decode and return the loads too (the referee's ``batch_loads`` of the result).

        Fast path, exactly equivalent to the sequential decoding: when the preferred nodes of
        a genome fit together (capacity in every segment, every task link routable), the
        sequential decoder takes the preferred node every time; when the wanted bandwidths
        fit together on every link, it never clips. Only the other genomes go through the
        sequential (still population-vectorised) repair."""
        pop = clip_keys(np.atleast_2d(pop))
        G = pop.shape[0]
        pre, fl = self.pre, self.fl
        P = self.P
        nodes = key_to_index(pop[:, :self.N], P)
        seg_cr = ref.node_loads(pre, fl, nodes)
        ok = (seg_cr <= self.free2_eps).reshape(G, -1).all(axis=1)
        if not self.all_reachable and self.V:
            ok &= fl.routable[nodes[:, fl.lsrc] * P + nodes[:, fl.ldst]].all(axis=1)
        bad = np.flatnonzero(~ok)
        if bad.size:
            nodes[bad] = self._repair_nodes(nodes[bad])
            seg_cr[bad] = ref.node_loads(pre, fl, nodes[bad])
        if not self.V:
            return nodes, np.zeros((G, 0)), (seg_cr, np.zeros((G, self.S, self.R)))
        a, c = nodes[:, fl.lsrc], nodes[:, fl.ldst]
        col = a == c
        bandwidth = np.where(col, fl.hi, fl.lo + bw_fraction(pop[:, self.N:]) * (fl.hi - fl.lo))
        seg_bw = ref.link_loads(pre, fl, nodes, bandwidth)
        if self.R:
            over = (seg_bw > self.bw_eps).any(axis=1)  # [G, R]
            bad = np.flatnonzero(over.any(axis=1))
            if bad.size:
                bandwidth[bad] = self._clip_bandwidth(nodes[bad], bandwidth[bad], col[bad], over[bad])
                seg_bw[bad] = ref.link_loads(pre, fl, nodes[bad], bandwidth[bad])
        return nodes, bandwidth, (seg_cr, seg_bw)

    def _repair_nodes(self, pref: np.ndarray) -> np.ndarray:
        """The sequential node decoding of genomes whose preferred nodes [G, N] do not fit."""
        G = pref.shape[0]
        fl = self.fl
        P, S = self.P, self.S
        rows = np.arange(G)
        single = S == 1
        nodes = pref.copy()
        if single:
            free = np.broadcast_to(self.free2[:, 0, :], (G, 2, P)).copy()
            if self.all_reachable:
                return self._repair_simple(pref, nodes, free)
            flat_free = free.reshape(-1)
            base_c = rows * (2 * P)
        else:
            free = np.broadcast_to(self.free2, (G, 2, S, P)).copy()
        for j in range(fl.J):
            segs = self.job_segs[j]
            for n in range(int(fl.job_first[j]), int(fl.job_first[j + 1])):
                f = free if single else free[:, :, segs, :].min(axis=2)  # [G, 2, P]
                dem = self.demand2[n]  # [2, 1]
                slack = f - dem
                cap_ok = (slack >= -CAP_EPS).all(axis=1)  # [G, P]
                feas = cap_ok
                if not self.all_reachable and (self.preds[n] or self.succs[n]):
                    feas = cap_ok.copy()
                    for m in self.preds[n]:
                        feas &= self.reach[nodes[:, m]]
                    for m in self.succs[n]:
                        feas &= self.reach[:, nodes[:, m]].T
                dist = self.dist[pref[:, n]]  # [G, P]
                choice = np.argmin(np.where(feas, dist, np.inf), axis=1)
                none = ~feas[rows, choice]
                if none.any():
                    # fall back: capacity only, then the node with the most slack
                    alt = np.argmin(np.where(cap_ok, dist, np.inf), axis=1)
                    most = np.argmax(slack.min(axis=1), axis=1)
                    choice = np.where(none, np.where(cap_ok[rows, alt], alt, most), choice)
                nodes[:, n] = choice
                if single:
                    k = base_c + choice
                    flat_free[k] -= dem[0, 0]
                    flat_free[k + P] -= dem[1, 0]
                else:
                    free[rows[:, None, None], np.arange(2)[None, :, None], segs[None, None, :],
                         choice[:, None, None]] -= dem
        return nodes

    def _repair_simple(self, pref: np.ndarray, nodes: np.ndarray, free: np.ndarray) -> np.ndarray:
        """:meth:`_repair_nodes` for one time segment and a network where every node reaches
        every other (the thesis setting): the same decisions with fewer array operations."""
        G = pref.shape[0]
        P = self.P
        fc, fr = free[:, 0, :], free[:, 1, :]
        flat_free = free.reshape(-1)
        base = np.arange(G) * (2 * P)
        dist = self.dist[pref]  # [G, N, P]
        for n in range(self.N):
            dc, dr = self.fl.task_cpu[n], self.fl.task_ram[n]
            ok = (fc >= dc - CAP_EPS) & (fr >= dr - CAP_EPS)
            choice = np.where(ok, dist[:, n], np.inf).argmin(axis=1)
            some = ok.any(axis=1)
            if not some.all():  # nothing fits: the node with the most slack
                choice = np.where(some, choice, np.minimum(fc - dc, fr - dr).argmax(axis=1))
            k = base + choice
            flat_free[k] -= dc
            flat_free[k + P] -= dr
            nodes[:, n] = choice
        return nodes

    def _clip_bandwidth(self, nodes: np.ndarray, want: np.ndarray, col: np.ndarray,
                        hot: np.ndarray) -> np.ndarray:
        """The sequential bandwidth decoding: each task link in turn gets its wanted bandwidth
        clipped to the free bandwidth along its canonical route (never below BWmin).

        Only the physical links that the wanted bandwidths overload (``hot`` [G, R]) can
        clip: on any other link the load of every prefix of the task links is at most the
        total, which fits. So the free bandwidth is tracked on the hot links only (+inf
        elsewhere) and only the task links routed over a hot link are visited."""
        G = nodes.shape[0]
        pre, fl = self.pre, self.fl
        P, S, R = self.P, self.S, self.R
        rows = np.arange(G)
        single = S == 1
        hot_ext = np.concatenate([hot, np.zeros((G, 1), dtype=bool)], axis=1)  # column R: padding
        rp_all = self.route_pad_r[nodes[:, fl.lsrc] * P + nodes[:, fl.ldst]]  # [G, V, H]
        touch = hot_ext[rows[:, None, None], rp_all].any(axis=2)  # [G, V]
        visit = np.flatnonzero(touch.any(axis=0))
        cap = np.concatenate([pre.bw, [np.inf]])
        free = np.where(hot_ext, cap, np.inf)[:, None, :]  # [G, 1, R + 1]
        if not single:
            free = np.repeat(free, S, axis=1)
        out = want.copy()
        for v in visit.tolist():
            segs = self.job_segs[int(fl.link_job[v])]
            rp = rp_all[:, v]  # [G, H]
            fb = free[:, 0, :] if single else free[:, segs, :].min(axis=1)
            avail = fb[rows[:, None], rp].min(axis=1)
            b = np.where(col[:, v], fl.hi[v], np.maximum(np.minimum(want[:, v], avail), fl.lo[v]))
            out[:, v] = b
            take = np.where(col[:, v], 0.0, b)
            if single:
                free[rows[:, None], 0, rp] -= take[:, None]
            else:
                free[rows[:, None, None], segs[None, :, None], rp[:, None, :]] -= take[:, None, None]
        return out

    def decisions_of(self, nodes: np.ndarray, bandwidth: np.ndarray) -> MappingDecisions:
        """Decisions of one decoded genome (canonical routes; co-located links: no route)."""
        fl, pre = self.fl, self.pre
        jobs = []
        for j in range(fl.J):
            nn = tuple(int(x) for x in nodes[fl.job_first[j]:fl.job_first[j + 1]])
            links = []
            for v in range(int(fl.job_first_link[j]), int(fl.job_first_link[j + 1])):
                a, c = int(nodes[fl.lsrc[v]]), int(nodes[fl.ldst[v]])
                if a == c:
                    links.append(LinkDecision(route=(), bandwidth=float(fl.hi[v])))
                else:
                    route = pre.routes[a][c]
                    links.append(LinkDecision(route=tuple(route) if route is not None else (),
                                              bandwidth=float(bandwidth[v])))
            jobs.append(JobDecision(nodes=nn, links=tuple(links)))
        return MappingDecisions(jobs=tuple(jobs))

    def decode(self, keys: np.ndarray) -> MappingDecisions:
        nodes, bandwidth = self.decode_batch(np.asarray(keys, dtype=float).reshape(1, self.dim))
        return self.decisions_of(nodes[0], bandwidth[0])

    # ---- evaluation -------------------------------------------------------------------

    def objectives(self, pop: np.ndarray) -> dict[str, np.ndarray]:
        """Every referee objective of the decoded genomes (plus ``feasible``, ``violation``)."""
        nodes, bandwidth, loads = self._decode(pop)
        return ref.batch_objectives(self.pre, nodes, bandwidth, loads=loads)

    def evaluate(self, pop: np.ndarray) -> np.ndarray:
        o = self.objectives(pop)
        return np.where(o["feasible"], o["composite"], -(1.0 + o["violation"]))

    # ---- warm start -------------------------------------------------------------------

    def encode(self, decisions: MappingDecisions) -> np.ndarray | None:
        """Node keys at the centre of each chosen node, bandwidth keys at each link's level
        (co-located links: BWmax). Decoding gives the same solution whenever the decisions
        were feasible with every job at its arrival (the decoder's preferred node is then
        always feasible), else a repaired one."""
        fl = self.fl
        if len(decisions.jobs) != fl.J:
            return None
        keys = np.zeros(self.dim)
        for j, jd in enumerate(decisions.jobs):
            lo_n, hi_n = int(fl.job_first[j]), int(fl.job_first[j + 1])
            if len(jd.nodes) != hi_n - lo_n or len(jd.links) != int(fl.job_first_link[j + 1] - fl.job_first_link[j]):
                return None
            if any(p >= self.P for p in jd.nodes):
                return None
            keys[lo_n:hi_n] = index_to_key(np.asarray(jd.nodes), self.P)
            for k, ld in enumerate(jd.links):
                v = int(fl.job_first_link[j]) + k
                lo, hi = fl.lo[v], fl.hi[v]
                frac = 1.0 if hi <= lo else (ld.bandwidth - lo) / (hi - lo)
                a, c = jd.nodes[int(fl.lsrc[v]) - lo_n], jd.nodes[int(fl.ldst[v]) - lo_n]
                if a == c:
                    frac = 1.0
                keys[self.N + v] = bw_key(np.clip(frac, 0.0, 1.0))
        return np.clip(keys, 0.0, KEY_MAX)


__all__ = ["MappingProblem", "bw_fraction", "bw_key", "BW_MARGIN"]
