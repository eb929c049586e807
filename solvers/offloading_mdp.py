"""The patent's method: workflow offloading as a Markov decision process solved by value
iteration (registered ``mdp-vi``, kind "mdp").

The MDP of one workflow (the patent's steps b1-b8; ``docs/offloading-baselines.md``):

* **Sets.** Predecessor table, offloaded set ``comp``, waiting set ``wait`` (= the tasks not
  in ``comp``), candidate set ``cand`` = the tasks not in ``comp`` whose predecessors are all
  in ``comp`` (initially the entry tasks).
* **State** ``s = (comp, sigma, i)``: ``comp`` the offloaded set (a bitmask), ``sigma`` the
  servers of the *frontier* — the offloaded tasks that still have a successor outside
  ``comp``, in increasing task order (exactly the servers later transfer times depend on) —
  and ``i`` the task to offload next. The terminal state (every task offloaded) has value 0.
  Resource occupancy is not part of the state: the reward does not depend on it and the
  simulator enforces the capacities (a task queues at its server until CPU and memory are
  free; resources are taken when it starts and released when it ends).
* **Actions.** The servers that can host task ``i`` (``semantics.can_host``; the cloud, if
  any, is one of them — the patent's a_c).
* **Reward** ``r(s, a) = -(t_trans + t_exec)``: ``t_trans`` = the time task ``i``'s inputs
  need to reach server ``a`` — the largest of ``semantics.input_time`` (data from the
  workflow's source) and, over its incoming edges, ``semantics.transfer_time`` from the
  predecessor's server (``d x adj / b`` unless the edge has a classic ``cost``);
  ``t_exec`` = ``semantics.task_duration`` (the image-pull delay when ``a`` lacks an image,
  then the execution time = the sum of the function instances' times / speed).
* **Transition** (b8.1): ``comp' = comp + {i}``, ``sigma'`` = the servers of the new
  frontier, and the next task is drawn uniformly from the candidates whose images server
  ``a`` holds, or from all candidates when none does (the patent: "otherwise at random").
  The first task is drawn the same way with the workflow's source server.
* **Value** ``V(s) = max_a [r(s, a) + gamma * sum_s' P(s'|s, a) V(s')]`` with discount
  ``gamma`` (0.5 in the patent's example); the policy takes the argmax, evaluating servers
  holding the task's images and servers lacking them (which pay the pull delay) alike;
  ties go to a holder, then to the lowest server index.

**Value iteration.** The reachable states are enumerated breadth first (layer k = k tasks
offloaded); synchronous (Jacobi) Bellman backups ``V <- max_a (R + gamma P V)`` over all of
them until ``max |V_new - V| < tol`` (the MDP is acyclic, so this happens after at most
depth + 1 sweeps even with gamma = 1). If the workflow's whole state space has at most
``max_states`` states, one solve at the workflow's arrival is exact and the policy looks up
every later decision. Otherwise the **approximation** is a receding horizon: at every
decision the states reachable within H decisions are enumerated (H the largest depth whose
states fit ``max_states``, at least 1) and every state H decisions ahead is aggregated into
one absorbing state of value 0; the error of a value is at most
``gamma^H * R_max * (1 + gamma + ... )`` over the decisions left beyond the horizon
(reported as ``error_bound``). As soon as a window covers every remaining decision the
solve is exact again and is reused.

The schedule is produced by the event simulator (:mod:`edgebench.solvers.offloading_sim`)
with the patent's candidate rule (a task becomes a candidate when its predecessors are
offloaded); the MDP policy chooses the server of every candidate.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgebench.errors import InputError
from edgebench.instances import semantics
from edgebench.instances.model import Instance, OffloadingPayload
from edgebench.registry import Result, register
from edgebench.solvers.offloading_sim import (
    OffloadingSim,
    PatentOrderPolicy,
    SimTimeout,
    WorkflowGraph,
    patent_pool,
    workflow_graphs,
)

NAME = "mdp-vi"
DEFAULT_GAMMA = 0.5
DEFAULT_TOL = 1e-9
DEFAULT_MAX_STATES = 2_000
DEFAULT_MAX_SWEEPS = 100_000
#: Q-values closer than this (relative) are ties
TIE = 1e-12

PARAMS = {
    "gamma": f"float in [0, 1], default {DEFAULT_GAMMA}: discount factor (the patent's example uses 0.5)",
    "tol": f"float > 0, default {DEFAULT_TOL:g}: value iteration stops when max |V_new - V| < tol",
    "max_states": f"int >= 1, default {DEFAULT_MAX_STATES}: largest enumerated state space; beyond it, a "
                  "receding horizon (states more than H decisions ahead aggregated into one of value 0)",
    "max_sweeps": f"int >= 1, default {DEFAULT_MAX_SWEEPS}: safety cap on Bellman sweeps per solve",
}

State = tuple[int, tuple[int, ...], int]
Post = tuple[int, tuple[int, ...], tuple[int, ...]]


class _Timeout(Exception):
    pass


# ======================================================================================
# The MDP of one workflow
# ======================================================================================


class WorkflowMDP:
    """States, actions, rewards and transitions of workflow ``w`` (module docstring)."""

    def __init__(self, payload: OffloadingPayload, w: int, gamma: float, graph: WorkflowGraph | None = None):
        self.payload = payload
        self.w = w
        self.gamma = float(gamma)
        g = graph if graph is not None else workflow_graphs(payload)[w]
        self.g = g
        self.n = g.n
        S = len(payload.servers)
        self.S = S
        self.full = (1 << g.n) - 1
        self.source = payload.workflows[w].source
        self.dur = [[semantics.task_duration(payload, w, t, s) for s in range(S)] for t in range(g.n)]
        self.inp = [[semantics.input_time(payload, w, t, s) for s in range(S)] for t in range(g.n)]
        self.trans: dict[int, list[list[float]]] = {}
        for e in range(len(payload.workflows[w].edges)):
            self.trans[e] = [[semantics.transfer_time(payload, w, e, a, b) for b in range(S)] for a in range(S)]
        self.pred_mask = [0] * g.n
        self.succ_mask = [0] * g.n
        for t in range(g.n):
            for _, u in g.preds[t]:
                self.pred_mask[t] |= 1 << u
            for c in g.succs[t]:
                self.succ_mask[t] |= 1 << c
        self._frontier: dict[int, tuple[int, ...]] = {}
        self._cands: dict[int, tuple[int, ...]] = {}
        self._pools: dict[tuple[int, int], tuple[int, ...]] = {}
        self._layouts: dict[tuple[int, int], tuple] = {}
        # the largest one-step cost, for the horizon's error bound
        self.r_max = 0.0
        for t in range(g.n):
            for s in g.hosts[t]:
                tt = self.inp[t][s]
                for e, _ in g.preds[t]:
                    tt = max(tt, max(self.trans[e][a][s] for a in range(S)))
                self.r_max = max(self.r_max, tt + self.dur[t][s])

    # ---- sets ------------------------------------------------------------------------

    def frontier(self, comp: int) -> tuple[int, ...]:
        """Offloaded tasks with a successor not yet offloaded (increasing order)."""
        f = self._frontier.get(comp)
        if f is None:
            f = tuple(t for t in range(self.n) if comp >> t & 1 and self.succ_mask[t] & ~comp)
            self._frontier[comp] = f
        return f

    def candidates(self, comp: int) -> tuple[int, ...]:
        """The patent's cand: tasks not offloaded whose predecessors all are."""
        c = self._cands.get(comp)
        if c is None:
            c = tuple(t for t in range(self.n) if not comp >> t & 1 and not self.pred_mask[t] & ~comp)
            self._cands[comp] = c
        return c

    def actions(self, state: State) -> tuple[int, ...]:
        return self.g.hosts[state[2]]

    def initial(self) -> list[tuple[float, State]]:
        """The distribution of the first state: the first task drawn with the source server."""
        pool = patent_pool(self.g, self.candidates(0), self.source)
        return [(1.0 / len(pool), (0, (), t)) for t in pool]

    def state_of(self, comp: int, servers: list[int] | dict[int, int], nxt: int) -> State:
        """The state with offloaded set ``comp`` (servers[t] for its tasks) and next task ``nxt``."""
        return comp, tuple(servers[u] for u in self.frontier(comp)), nxt

    def t_trans(self, state: State, s: int) -> float:
        comp, fs, t = state
        assign = dict(zip(self.frontier(comp), fs))
        r = self.inp[t][s]
        for e, u in self.g.preds[t]:
            r = max(r, self.trans[e][assign[u]][s])
        return r

    def reward(self, state: State, s: int) -> float:
        """r(s, a) = -(t_trans + t_exec)."""
        return -(self.t_trans(state, s) + self.dur[state[2]][s])

    def pool(self, comp: int, s: int) -> tuple[int, ...]:
        """Step b8.1: the candidates of ``comp`` whose images server s holds, else all of them."""
        key = (comp, s)
        p = self._pools.get(key)
        if p is None:
            p = tuple(patent_pool(self.g, self.candidates(comp), s))
            self._pools[key] = p
        return p

    def _layout(self, comp: int, t: int) -> tuple[tuple[tuple[int, int], ...], int, tuple[int, ...]]:
        """For offloading t from comp: (edge, frontier position of the source) per incoming
        edge of t, the next offloaded set, and where each new frontier task's server comes
        from (a position in the old frontier, or -1 for t itself)."""
        key = (comp, t)
        lay = self._layouts.get(key)
        if lay is None:
            F = self.frontier(comp)
            pos = {u: i for i, u in enumerate(F)}
            preds = tuple((e, pos[u]) for e, u in self.g.preds[t])
            comp2 = comp | (1 << t)
            src = tuple(-1 if u == t else pos[u] for u in self.frontier(comp2)) if comp2 != self.full else ()
            lay = (preds, comp2, src)
            self._layouts[key] = lay
        return lay

    def step_post(self, state: State, s: int) -> tuple[float, Post | None]:
        """(reward, post-decision state) of action s; None when the workflow is done. The
        post-decision state ``(comp', sigma', pool)`` is followed by a decision state
        ``(comp', sigma', c)`` for each c of the pool, with probability 1 / len(pool)."""
        comp, fs, t = state
        preds, comp2, src = self._layout(comp, t)
        tt = self.inp[t][s]
        for e, i in preds:
            x = self.trans[e][fs[i]][s]
            if x > tt:
                tt = x
        r = -(tt + self.dur[t][s])
        if comp2 == self.full:
            return r, None
        return r, (comp2, tuple(s if i < 0 else fs[i] for i in src), self.pool(comp2, s))

    @staticmethod
    def after(post: Post) -> list[tuple[float, State]]:
        """The decision states following a post-decision state, with their probabilities."""
        comp, fs, pool = post
        p = 1.0 / len(pool)
        return [(p, (comp, fs, c)) for c in pool]

    def step(self, state: State, s: int) -> tuple[float, list[tuple[float, State]]]:
        """(reward, [(probability, next state)]); an empty list means terminal."""
        r, post = self.step_post(state, s)
        return r, ([] if post is None else self.after(post))

    def expand(self, state: State) -> list[tuple[int, float, Post | None]]:
        """Every action of ``state`` with its reward and post-decision state."""
        return [(a, *self.step_post(state, a)) for a in self.g.hosts[state[2]]]

    def remaining(self, state: State) -> int:
        """Decisions left from ``state`` (including its own)."""
        return self.n - bin(state[0]).count("1")


# ======================================================================================
# Value iteration
# ======================================================================================


@dataclass
class VIResult:
    """The enumerated (window of the) MDP and its values. ``q`` holds one value per
    state-action pair, grouped by state (``sa_start[k]`` .. ``sa_start[k+1]``)."""

    mdp: WorkflowMDP
    index: dict[State, int]
    states: list[State]
    sa_start: np.ndarray
    sa_action: np.ndarray
    reward: np.ndarray
    values: np.ndarray
    q: np.ndarray
    exact: bool
    horizon: int
    stats: dict[str, Any] = field(default_factory=dict)
    #: the expansion of every enumerated state (reused by the next window)
    rows: dict[State, list] = field(default_factory=dict, repr=False)

    def value(self, state: State) -> float:
        return float(self.values[self.index[state]])

    def q_values(self, state: State) -> dict[int, float]:
        k = self.index[state]
        a, b = int(self.sa_start[k]), int(self.sa_start[k + 1])
        return {int(self.sa_action[i]): float(self.q[i]) for i in range(a, b)}

    def best_action(self, state: State) -> int:
        """argmax_a Q(s, a); ties: a server holding the task's images, then the lowest index."""
        qs = self.q_values(state)
        top = max(qs.values())
        tied = [a for a, v in qs.items() if v >= top - TIE * max(1.0, abs(top))]
        holders = self.mdp.g.holders[state[2]]
        return min(tied, key=lambda a: (a not in holders, a))


def value_iteration(mdp: WorkflowMDP, roots: list[State], *, tol: float = DEFAULT_TOL,
                    max_states: int = DEFAULT_MAX_STATES, max_sweeps: int = DEFAULT_MAX_SWEEPS,
                    deadline: float | None = None,
                    cache: dict[State, list[tuple[int, float, Post | None]]] | None = None) -> VIResult:
    """Enumerate the states reachable from ``roots`` breadth first — all of them when they
    are at most ``max_states``, else the first H layers that fit (H >= 1; the states of
    layer H become one absorbing state of value 0) — and run synchronous Bellman backups
    ``V(s) <- max_a [r(s, a) + gamma * sum_s' P(s'|s, a) V(s')]`` until
    ``max |V_new - V| < tol`` (or ``max_sweeps``). ``cache`` maps states to their expansions
    from an earlier solve (``VIResult.rows``), so that overlapping windows expand each state
    once. Transitions are stored through post-decision states (the random draw of the next
    task follows the action), which is the same Bellman operator with fewer stored entries."""
    from scipy import sparse

    t0 = time.perf_counter()
    index: dict[State, int] = {}
    states: list[State] = []
    for st in roots:
        if st not in index:
            index[st] = len(states)
            states.append(st)
    rows_out: list[list[tuple[int, float, Post | None]]] = []
    post_index: dict[Post, int] = {}
    posts: list[Post] = []
    layer = list(states)
    depth = 0
    exact = True
    leaves = 0
    count = 0
    while layer:
        first_post = len(posts)
        for st in layer:
            row = cache.get(st) if cache is not None else None
            if row is None:
                row = mdp.expand(st)
                count += 1
                if deadline is not None and count % 1024 == 0 and time.perf_counter() > deadline:
                    raise _Timeout
            for _, _, post in row:
                if post is not None and post not in post_index:
                    post_index[post] = len(posts)
                    posts.append(post)
            rows_out.append(row)
        depth += 1
        new: dict[State, None] = {}
        for post in posts[first_post:]:
            comp, fs, pool = post
            for c in pool:
                s2 = (comp, fs, c)
                if s2 not in index:
                    new[s2] = None
        if new and len(states) + len(new) > max_states:
            exact = False
            leaves = len(new)
            break
        for s2 in new:
            index[s2] = len(states)
            states.append(s2)
        layer = list(new)
    n_var = len(rows_out)  # expanded states (the leaves beyond the horizon are not variables)
    n_post = len(posts) if exact else first_post  # posts of the last layer lead to leaves (value 0)
    sa_action, rewards, a_rows, a_cols = [], [], [], []
    sa_start = np.zeros(n_var + 1, dtype=np.int64)
    k = 0
    for i, row in enumerate(rows_out):
        sa_start[i] = k
        for a, r, post in row:
            sa_action.append(a)
            rewards.append(r)
            if post is not None:
                j = post_index[post]
                if j < n_post:
                    a_rows.append(k)
                    a_cols.append(j)
            k += 1
    sa_start[n_var] = k
    m_rows, m_cols, m_vals = [], [], []
    for j in range(n_post):
        comp, fs, pool = posts[j]
        p = 1.0 / len(pool)
        for c in pool:
            m_rows.append(j)
            m_cols.append(index[(comp, fs, c)])
            m_vals.append(p)
    R = np.asarray(rewards, dtype=float)
    A = sparse.csr_matrix((np.ones(len(a_rows)), (np.asarray(a_rows, dtype=np.int64),
                                                  np.asarray(a_cols, dtype=np.int64))), shape=(k, n_post))
    M = sparse.csr_matrix((np.asarray(m_vals, dtype=float), (np.asarray(m_rows, dtype=np.int64),
                                                             np.asarray(m_cols, dtype=np.int64))),
                          shape=(n_post, n_var))
    P = (A @ M).tocsr()  # P[(s, a), s'] = probability of s' after action a in s
    enum_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    V = np.zeros(n_var)
    gamma = mdp.gamma
    sweeps = 0
    residual = float("inf")
    starts = sa_start[:-1]
    while sweeps < max_sweeps:
        Q = R + gamma * (P @ V)
        Vn = np.maximum.reduceat(Q, starts) if n_var else V
        residual = float(np.max(np.abs(Vn - V))) if n_var else 0.0
        V = Vn
        sweeps += 1
        if residual < tol:
            break
        if deadline is not None and time.perf_counter() > deadline:
            raise _Timeout
    Q = R + gamma * (P @ V)
    vi_s = time.perf_counter() - t1
    horizon = depth if not exact else max((mdp.remaining(s) for s in roots), default=0)
    bound = 0.0
    if not exact:
        left = max(mdp.remaining(s) for s in roots) - depth
        bound = gamma ** depth * mdp.r_max * sum(gamma ** i for i in range(max(left, 0)))
    stats = {"states": n_var, "leaves": leaves, "post_states": n_post, "state_actions": int(k),
             "transitions": int(P.nnz), "sweeps": sweeps, "backups": int(k) * sweeps,
             "state_backups": n_var * sweeps, "residual": residual, "exact": exact, "horizon": horizon,
             "error_bound": bound, "enumerate_seconds": enum_s, "vi_seconds": vi_s}
    states = states[:n_var]
    return VIResult(mdp, index, states, sa_start, np.asarray(sa_action, dtype=np.int64), R, V, Q,
                    exact, horizon, stats, rows=dict(zip(states, rows_out)))


# ======================================================================================
# The online policy
# ======================================================================================


class MDPPolicy(PatentOrderPolicy):
    """The patent's procedure with the server chosen by the value-iteration policy."""

    name = NAME

    def __init__(self, rng: np.random.Generator, *, gamma: float = DEFAULT_GAMMA, tol: float = DEFAULT_TOL,
                 max_states: int = DEFAULT_MAX_STATES, max_sweeps: int = DEFAULT_MAX_SWEEPS,
                 deadline: float | None = None) -> None:
        super().__init__(rng)
        self.gamma = gamma
        self.tol = tol
        self.max_states = max_states
        self.max_sweeps = max_sweeps
        self.deadline = deadline

    def reset(self, sim: OffloadingSim) -> None:
        super().reset(sim)
        self.mdps: dict[int, WorkflowMDP] = {}
        self.tables: dict[int, VIResult] = {}
        self.totals = {"vi_solves": 0, "states": 0, "leaves": 0, "state_actions": 0, "sweeps": 0, "backups": 0,
                       "vi_seconds": 0.0, "enumerate_seconds": 0.0, "max_residual": 0.0, "max_error_bound": 0.0}
        self.modes: list[str] = []
        self.min_horizon: int | None = None

    def _solve(self, mdp: WorkflowMDP, roots: list[State], cache: dict | None = None) -> VIResult:
        try:
            res = value_iteration(mdp, roots, tol=self.tol, max_states=self.max_states,
                                  max_sweeps=self.max_sweeps, deadline=self.deadline, cache=cache)
        except _Timeout:
            raise SimTimeout from None
        st = res.stats
        tot = self.totals
        tot["vi_solves"] += 1
        for key in ("states", "leaves", "state_actions", "sweeps", "backups"):
            tot[key] += st[key]
        tot["vi_seconds"] += st["vi_seconds"]
        tot["enumerate_seconds"] += st["enumerate_seconds"]
        tot["max_residual"] = max(tot["max_residual"], st["residual"])
        tot["max_error_bound"] = max(tot["max_error_bound"], st["error_bound"])
        if not res.exact:
            self.min_horizon = res.horizon if self.min_horizon is None else min(self.min_horizon, res.horizon)
        return res

    def on_arrival(self, sim: OffloadingSim, w: int) -> None:
        mdp = WorkflowMDP(sim.payload, w, self.gamma, sim.graphs[w])
        self.mdps[w] = mdp
        res = self._solve(mdp, [s for _, s in mdp.initial()])
        self.modes.append("exact" if res.exact else "horizon")
        # an exact table serves every later decision; a horizon window serves its root only
        self.tables[w] = res

    def choose_server(self, sim: OffloadingSim, w: int, t: int) -> int:
        mdp = self.mdps[w]
        comp = 0
        for u, s in enumerate(sim.server[w]):
            if s >= 0:
                comp |= 1 << u
        state = mdp.state_of(comp, sim.server[w], t)
        table = self.tables.get(w)
        if table is None or (not table.exact and comp != 0) or state not in table.index:
            table = self._solve(mdp, [state], cache=table.rows if table is not None else None)
            self.tables[w] = table
        return table.best_action(state)

    def stats(self) -> dict[str, Any]:
        out = dict(self.totals)
        out["decisions"] = self.n_decisions
        out["workflow_modes"] = list(self.modes)
        out["exact"] = all(m == "exact" for m in self.modes) and self.min_horizon is None
        out["min_horizon"] = self.min_horizon
        out["gamma"] = self.gamma
        out["tol"] = self.tol
        return out


# ======================================================================================
# Registered solver
# ======================================================================================


def _parse(params: dict[str, Any]) -> dict[str, Any]:
    out = {"gamma": DEFAULT_GAMMA, "tol": DEFAULT_TOL, "max_states": DEFAULT_MAX_STATES,
           "max_sweeps": DEFAULT_MAX_SWEEPS}
    for key, v in params.items():
        if key not in out:
            raise InputError(f"unknown parameter of solver {NAME!r} (known: {', '.join(PARAMS)})",
                             field=f"params.{key}")
        if key in ("gamma", "tol"):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
                raise InputError(f"must be a number, got {v!r}", field=f"params.{key}")
            v = float(v)
            if key == "gamma" and not 0.0 <= v <= 1.0:
                raise InputError(f"gamma must be in [0, 1], got {v!r}", field=f"params.{key}")
            if key == "tol" and not v > 0:
                raise InputError(f"tol must be > 0, got {v!r}", field=f"params.{key}")
        else:
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise InputError(f"must be an integer >= 1, got {v!r}", field=f"params.{key}")
            v = int(v)
        out[key] = v
    return out


@register(NAME, families=("offloading",), kind="mdp",
          description="The patent's MDP (state: offloaded set, frontier servers, next task; reward "
                      "-(t_trans + t_exec)) solved by value iteration, executed by the event simulator",
          params=PARAMS, check=_parse)
def solve(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    """Value-iteration MDP offloading (module docstring); the seed draws the next task where
    the patent's rule leaves a random choice."""
    from edgebench.solvers.offloading_baselines import run_policy

    started = time.perf_counter()
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"the seed must be a non-negative integer, got {seed!r}", field="seed")
    opts = _parse(params)
    deadline = None if time_limit is None else started + float(time_limit)
    policy = MDPPolicy(np.random.default_rng(seed), deadline=deadline, **opts)
    return run_policy(instance, NAME, policy, seed=int(seed), params=params, time_limit=time_limit, started=started)


__all__ = ["WorkflowMDP", "VIResult", "value_iteration", "MDPPolicy", "solve", "PARAMS"]
