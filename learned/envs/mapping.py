"""``MappingEnv``: CES-PPO's two-phase MDP (SPEC.md Family B, "Learned method") as a
Gymnasium environment.

Per job (jobs in arrival order), the agent first maps the job's task nodes one by one
(action = physical node), then gives each task link whose ends sit on different nodes a
bandwidth level (action = level a in 0..L-1, ``B = bw_min + a/(L-1) (bw_max - bw_min)``,
:func:`edgebench.instances.semantics.bandwidth_level`). Routes are the canonical routes of
:func:`edgebench.instances.semantics.canonical_route`; links between co-located task nodes
take no decision (empty route, bandwidth ``bw_max``).

Action masks (``obs["action_mask"]`` and ``info["action_mask"]``, int8) keep every episode
feasible:

* mapping phase: a node is allowed when it has the free CPU and RAM, every task link
  between the task and an already-mapped task is routable with its ``bw_min`` free along the
  canonical route (``bw_min`` of every routed link is reserved until its level is chosen),
  and -- with ``lookahead`` (default) -- the remaining task nodes can still be completed:
  a greedy completion (the generator's certification strategies) succeeds, or the node is
  the one of the completion that made the previous choice allowed (so a mask is never empty);
* bandwidth phase: a level is allowed when its bandwidth minus ``bw_min`` fits the residual
  of every physical link of the route after the reservations of the links still undecided.

Jobs of a stream (``thesis-queue``) start at their arrival, or -- when they cannot be
completed against the jobs they overlap in time -- at the earliest end of a running job at
which they can (FIFO by arrival). The reward is a pluggable function of a
:class:`MappingStep`; the default gives the referee's composite of the finished mapping at
the end and 0 before. See ``docs/environments.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from edgebench.errors import InputError
from edgebench.instances import semantics
from edgebench.learned.envs import InstanceSource, check_env_size

__all__ = ["MappingEnv", "MappingStep", "composite_reward", "DECISION_FEATURES", "EPS"]

#: resources are compared with this slack (the referee allows 1e-6 absolute + relative)
EPS = 1e-9

#: names of the entries of ``obs["decision"]`` (all in [0, 1])
DECISION_FEATURES = (
    "phase",              # 0 mapping, 1 bandwidth
    "index",              # current task node / bandwidth decision / items of the phase
    "tasks",              # task nodes of the job / max_tasks
    "links",              # task links of the job / max_links
    "done",               # fraction of the job's decisions made
    "job",                # job position in arrival order / jobs
    "task_cpu",           # mapping: current task's cpu / largest node cpu
    "task_ram",           # mapping: current task's ram / largest node ram
    "link_bw_min",        # bandwidth: current link's bw_min / largest link bandwidth
    "link_bw_max",        # bandwidth: current link's bw_max / largest link bandwidth
    "route_residual",     # bandwidth: residual along the route / largest link bandwidth
    "route_hops",         # bandwidth: hops of the route / nodes
)


@dataclass(frozen=True)
class MappingStep:
    """What a reward function sees after every step.

    ``phase`` is "map" or "bandwidth"; ``index`` the task node or task link decided;
    ``action`` the action applied (the fallback when the agent's action was masked, see
    ``invalid``); ``value`` the physical node or the bandwidth given; ``job_done`` whether
    the step finished its job; at the end (``terminated``) ``evaluation`` is the referee's
    :class:`~edgebench.referee.Evaluation` of the decisions (None after a dead end)."""

    env: "MappingEnv"
    phase: str
    job: int
    index: int
    action: int
    value: float
    invalid: bool
    job_done: bool
    terminated: bool
    dead_end: bool = False
    evaluation: Any = None


RewardFn = Callable[[MappingStep], float]


def composite_reward(step: MappingStep) -> float:
    """The default reward: the referee's composite of the finished mapping at the end
    (0 in every other step and after a dead end)."""
    if step.terminated and step.evaluation is not None:
        return float(step.evaluation.objectives.get("composite", 0.0))
    return 0.0


# --------------------------------------------------------------------------------------
# Per-instance data
# --------------------------------------------------------------------------------------


@dataclass
class _Job:
    n: int
    cpu: list[float]
    ram: list[float]
    #: per task link: (src, dst, bw_min, bw_max)
    links: list[tuple[int, int, float, float]]
    #: per task node: (link index, other end, node is the link's source)
    adj: list[list[tuple[int, int, bool]]]
    #: task nodes by decreasing cpu + ram (the greedy completion's order)
    order: list[int]
    arrival: float
    duration: float
    #: mean bw_max of each task node's out-links
    out_bw: list[float]


class _Net:
    """The instance's static data as plain lists (the mask checks run in pure Python)."""

    def __init__(self, inst) -> None:
        m = inst.mapping
        self.inst = inst
        self.payload = m
        self.P = len(m.nodes)
        self.R = len(m.links)
        self.cpu_cap = [float(n.cpu) for n in m.nodes]
        self.ram_cap = [float(n.ram) for n in m.nodes]
        self.free_cpu0 = [float(n.cpu - n.bg_cpu) for n in m.nodes]
        self.free_ram0 = [float(n.ram - n.bg_ram) for n in m.nodes]
        self.bw0 = [float(lk.bandwidth) for lk in m.links]
        self.routes = semantics.route_table(m)
        self.incident: list[list[int]] = [[] for _ in range(self.P)]
        for r, lk in enumerate(m.links):
            self.incident[lk.src].append(r)
            self.incident[lk.dst].append(r)
        self.levels = int(m.objective.bandwidth_levels)
        self.max_cpu = max(self.cpu_cap)
        self.max_ram = max(self.ram_cap)
        self.max_bw = max(self.bw0) if self.bw0 else 1.0
        self.jobs: list[_Job] = []
        for job in m.jobs:
            n = len(job.tasks)
            links = [(lk.src, lk.dst, float(lk.bw_min), float(lk.bw_max)) for lk in job.links]
            adj: list[list[tuple[int, int, bool]]] = [[] for _ in range(n)]
            outs: list[list[float]] = [[] for _ in range(n)]
            for k, (s, d, _, hi) in enumerate(links):
                adj[s].append((k, d, True))
                adj[d].append((k, s, False))
                outs[s].append(hi)
            cpu = [float(t.cpu) for t in job.tasks]
            ram = [float(t.ram) for t in job.tasks]
            order = sorted(range(n), key=lambda t: (-(cpu[t] + ram[t]), t))
            self.jobs.append(_Job(n, cpu, ram, links, adj, order, float(job.arrival), float(job.duration),
                                  [sum(o) / len(o) if o else 0.0 for o in outs]))
        self.order = sorted(range(len(m.jobs)), key=lambda k: (m.jobs[k].arrival, k))


@dataclass
class _Committed:
    start: float
    end: float
    cpu: list[float]
    ram: list[float]
    bw: list[float]


# --------------------------------------------------------------------------------------
# The environment
# --------------------------------------------------------------------------------------


class MappingEnv(gym.Env):
    """CES task-graph mapping + elastic bandwidth as a Gymnasium environment.

    Args:
        instance: an Instance (or a path / plain dict) of family "mapping" played in every
            episode; None to draw instances from the generator.
        preset, params: the generator spec (``generate("mapping", preset, seed=<drawn>,
            **params)``), used when ``instance`` is None (default preset "thesis").
        max_nodes, max_tasks, max_levels: sizes of the spaces (default: from the pinned
            instance, or the generator's parameters); an episode instance that exceeds them
            raises InputError at reset.
        reward_fn: ``f(MappingStep) -> float``; default :func:`composite_reward`.
        shaping: more reward functions whose values are added (the learned policy's terms).
        lookahead: mask nodes after which the job can no longer be completed (default True).
        invalid_action: "fallback" (default; a masked action is replaced by the lowest
            allowed one, ``info["invalid_action"] = True``) or "raise" (ValueError).
        invalid_penalty: subtracted from the reward of a step whose action was masked.
        dead_end_reward: added when an episode ends because no action is allowed (only
            possible without lookahead, or for a job even the greedy completion cannot map).
        render_mode: None or "ansi".
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, instance: Any = None, *, preset: str = "thesis", params: Mapping[str, Any] | None = None,
                 max_nodes: int | None = None, max_tasks: int | None = None, max_levels: int | None = None,
                 reward_fn: RewardFn | None = None, shaping: Sequence[RewardFn] = (), lookahead: bool = True,
                 invalid_action: str = "fallback", invalid_penalty: float = 0.0, dead_end_reward: float = -1.0,
                 render_mode: str | None = None) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise InputError(f"render_mode must be None or one of {self.metadata['render_modes']}",
                             field="render_mode")
        if invalid_action not in ("fallback", "raise"):
            raise InputError("invalid_action must be 'fallback' or 'raise'", field="invalid_action")
        self.render_mode = render_mode
        self.source = InstanceSource("mapping", instance, None if instance is not None else preset, params)
        probe = self.source.probe()
        gp = self.source.generator_params()
        pm = probe.mapping
        if max_nodes is None:
            max_nodes = int(gp.get("nodes") or len(pm.nodes))
        if max_tasks is None:
            if gp:
                max_tasks = int(gp.get("task_nodes") or gp.get("task_nodes_range", [0, 0])[1])
            max_tasks = max(int(max_tasks or 0), max(len(j.tasks) for j in pm.jobs))
        if max_levels is None:
            max_levels = int(gp.get("bandwidth_levels") or pm.objective.bandwidth_levels)
        for name, v in (("max_nodes", max_nodes), ("max_tasks", max_tasks), ("max_levels", max_levels)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise InputError(f"{name} must be a positive integer, got {v!r}", field=name)
        self.max_nodes = int(max_nodes)
        self.max_tasks = int(max_tasks)
        self.max_levels = int(max_levels)
        self.max_links = max(self.max_tasks * (self.max_tasks - 1), 1)
        self.n_actions = max(self.max_nodes, self.max_levels)
        check_env_size(self.max_tasks * self.max_nodes + 3 * (self.max_nodes + self.max_tasks) + self.n_actions,
                       f"{self.max_tasks} task nodes x {self.max_nodes} nodes + features + {self.n_actions} actions",
                       "mapping.nodes")
        self.reward_fn: RewardFn = reward_fn or composite_reward
        self.shaping = tuple(shaping)
        self.lookahead = bool(lookahead)
        self.invalid_action = invalid_action
        self.invalid_penalty = float(invalid_penalty)
        self.dead_end_reward = float(dead_end_reward)

        f32 = np.float32
        self.action_space = spaces.Discrete(self.n_actions)
        self.observation_space = spaces.Dict({
            "nodes": spaces.Box(0.0, 1.0, (self.max_nodes, 3), f32),
            "tasks": spaces.Box(0.0, 1.0, (self.max_tasks, 3), f32),
            "task_nodes": spaces.Box(0.0, 1.0, (self.max_tasks, self.max_nodes), f32),
            "decision": spaces.Box(0.0, 1.0, (len(DECISION_FEATURES),), f32),
            "action_mask": spaces.Box(0, 1, (self.n_actions,), np.int8),
        })
        self._net: _Net | None = None
        self._net_inst = None
        self._over = True
        self.instance = None
        self.instance_seed: int | None = None

    # ---- episode set-up -------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        inst, gen_seed = self.source.draw(self.np_random, options)
        if inst is not self._net_inst:
            net = _Net(inst)
            if net.P > self.max_nodes:
                raise InputError(f"the instance has {net.P} physical nodes, the environment at most "
                                 f"{self.max_nodes}", field="max_nodes")
            big = max(j.n for j in net.jobs)
            if big > self.max_tasks:
                raise InputError(f"the instance has a job of {big} task nodes, the environment at most "
                                 f"{self.max_tasks}", field="max_tasks")
            if net.levels > self.max_levels:
                raise InputError(f"the instance has {net.levels} bandwidth levels, the environment at most "
                                 f"{self.max_levels}", field="max_levels")
            self._net, self._net_inst = net, inst
        self.instance = inst
        self.instance_seed = gen_seed
        self._committed: list[_Committed] = []
        self._decisions: dict[int, Any] = {}
        self._jpos = 0
        self._over = False
        self._dead = False
        self._begin_job()
        obs = self._obs()
        info = self._info(obs)
        # a job that fits nowhere leaves no allowed action: say so now; the next step ends the episode
        info["dead_end"] = not bool(self._mask.any())
        return obs, info

    def _overlap_base(self, start: float, end: float) -> tuple[list[float], list[float], list[float]]:
        """Free CPU, RAM and bandwidth for a job running in [start, end): the empty network
        minus every committed job whose interval overlaps it (conservative in time)."""
        net = self._net
        cpu, ram, bw = list(net.free_cpu0), list(net.free_ram0), list(net.bw0)
        for c in self._committed:
            if c.start < end and start < c.end:
                for p in range(net.P):
                    cpu[p] -= c.cpu[p]
                    ram[p] -= c.ram[p]
                for r in range(net.R):
                    bw[r] -= c.bw[r]
        return cpu, ram, bw

    def _begin_job(self) -> None:
        net = self._net
        k = net.order[self._jpos]
        job = net.jobs[k]
        self._k = k
        self._job = job
        starts = [job.arrival] + sorted({c.end for c in self._committed if c.end > job.arrival})
        chosen = None
        for t in starts:
            cpu, ram, bw = self._overlap_base(t, t + job.duration)
            wit = self._complete([-1] * job.n, cpu, ram, bw, job)
            if wit is not None:
                chosen = (t, cpu, ram, bw, wit)
                break
        if chosen is None:  # not even the greedy completion maps it: play it on the emptiest network
            t = starts[-1]
            cpu, ram, bw = self._overlap_base(t, t + job.duration)
            chosen = (t, cpu, ram, bw, None)
        self._start, self._cpu, self._ram, self._bw, self._witness = chosen
        self._nodes = [-1] * job.n
        self._phase = "map"
        self._index = 0
        self._bw_links: list[int] = []
        self._levels_given: dict[int, float] = {}
        self._cand_witness: dict[int, list[int]] = {}
        self._mask = self._map_mask()

    # ---- feasibility helpers ----------------------------------------------------------

    def _link_adds(self, job: _Job, t: int, q: int, where: list[int]) -> dict[int, float] | None:
        """bw_min added on each physical link when task t goes to node q next to the mapped
        tasks of ``where``; None when a link between them has no route."""
        net = self._net
        adds: dict[int, float] = {}
        for k, other, is_src in job.adj[t]:
            po = where[other]
            if po < 0:
                continue
            a, b = (q, po) if is_src else (po, q)
            if a == b:
                continue
            route = net.routes[a][b]
            if route is None:
                return None
            lo = job.links[k][2]
            for r in route:
                adds[r] = adds.get(r, 0.0) + lo
        return adds

    def _complete(self, where: list[int], cpu: list[float], ram: list[float], bw: list[float],
                  job: _Job) -> list[int] | None:
        """A full mapping extending ``where`` (-1 = unmapped) within the free ``cpu``/``ram``/
        ``bw`` (bw_min reserved on every routed link), found greedily: tasks by decreasing
        cpu + ram; nodes tried "spread" (most free first), "pack" (index order) or "partner"
        (nodes of mapped neighbours first, then spread). None when the three fail."""
        net = self._net
        rest = [t for t in job.order if where[t] < 0]
        if not rest:
            return list(where)
        P = net.P
        for strategy in ("spread", "pack", "partner"):
            w = list(where)
            c, r_, b = list(cpu), list(ram), list(bw)
            ok_all = True
            for t in rest:
                tc, tr = job.cpu[t], job.ram[t]
                if strategy == "pack":
                    cands: list[int] = list(range(P))
                else:
                    cands = sorted(range(P), key=lambda q: (-(c[q] + r_[q]), q))
                    if strategy == "partner":
                        first = []
                        for _, other, _ in job.adj[t]:
                            if w[other] >= 0 and w[other] not in first:
                                first.append(w[other])
                        cands = first + [q for q in cands if q not in first]
                placed = False
                for q in cands:
                    if c[q] < tc - EPS or r_[q] < tr - EPS:
                        continue
                    adds = self._link_adds(job, t, q, w)
                    if adds is None or any(v > b[r] + EPS for r, v in adds.items()):
                        continue
                    c[q] -= tc
                    r_[q] -= tr
                    for r, v in adds.items():
                        b[r] -= v
                    w[t] = q
                    placed = True
                    break
                if not placed:
                    ok_all = False
                    break
            if ok_all:
                return w
        return None

    def _used(self) -> tuple[list[float], list[float], list[float]]:
        """Free CPU, RAM and bandwidth left in the current job's state (mapped tasks taken
        off; bandwidth: reservations and allocations taken off)."""
        job = self._job
        cpu, ram = list(self._cpu), list(self._ram)
        for t, q in enumerate(self._nodes):
            if q >= 0:
                cpu[q] -= job.cpu[t]
                ram[q] -= job.ram[t]
        bw = list(self._bw)
        for k, (s, d, lo, _) in enumerate(job.links):
            a, b = self._nodes[s], self._nodes[d]
            if a < 0 or b < 0 or a == b:
                continue
            give = self._levels_given.get(k, lo)
            for r in self._net.routes[a][b]:
                bw[r] -= give
        return cpu, ram, bw

    def free_resources(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Free CPU and RAM per physical node and free bandwidth per physical link for the
        current job (background, overlapping jobs, the job's mapped task nodes, allocated
        bandwidth and the bw_min reservations taken off): for reward-shaping functions."""
        cpu, ram, bw = self._used()
        return np.array(cpu), np.array(ram), np.array(bw)

    def _map_mask(self) -> np.ndarray:
        net, job, i = self._net, self._job, self._index
        mask = np.zeros(self.n_actions, dtype=np.int8)
        cpu, ram, bw = self._used()
        self._cand_witness = {}
        wit_node = self._witness[i] if self._witness is not None else -1
        for q in range(net.P):
            if cpu[q] < job.cpu[i] - EPS or ram[q] < job.ram[i] - EPS:
                continue
            adds = self._link_adds(job, i, q, self._nodes)
            if adds is None or any(v > bw[r] + EPS for r, v in adds.items()):
                continue
            if self.lookahead and self._witness is not None and q != wit_node:
                w = list(self._nodes)
                w[i] = q
                c2, r2, b2 = list(cpu), list(ram), list(bw)
                c2[q] -= job.cpu[i]
                r2[q] -= job.ram[i]
                for r, v in adds.items():
                    b2[r] -= v
                comp = self._complete(w, c2, r2, b2, job)
                if comp is None:
                    continue
                self._cand_witness[q] = comp
            mask[q] = 1
        return mask

    def _route(self, k: int) -> tuple[int, ...]:
        s, d, _, _ = self._job.links[k]
        return self._net.routes[self._nodes[s]][self._nodes[d]]  # type: ignore[return-value]

    def _residual(self, k: int) -> float:
        """How much more than bw_min link k can get: the smallest residual on its route."""
        _, _, bw = self._used()
        return min((bw[r] for r in self._route(k)), default=math.inf)

    def _bw_mask(self) -> np.ndarray:
        k = self._bw_links[self._index]
        lo, hi = self._job.links[k][2], self._job.links[k][3]
        extra = self._residual(k)
        mask = np.zeros(self.n_actions, dtype=np.int8)
        L = self._net.levels
        for a in range(L):
            if semantics.bandwidth_level(lo, hi, a, L) - lo <= extra + EPS:
                mask[a] = 1
        mask[0] = 1  # bw_min is reserved: always allowed
        return mask

    # ---- stepping ---------------------------------------------------------------------

    def step(self, action):
        if self._over:
            raise RuntimeError("the episode is over: call reset()")
        if not self._mask.any():  # dead end from the start (reset reported it): end, whatever the action
            self._over = self._dead = True
            obs = self._obs()
            info = self._info(obs)
            info.update({"invalid_action": True, "dead_end": True, "decisions": None})
            return obs, float(self.dead_end_reward), True, False, info
        a = int(action)
        invalid = not (0 <= a < self.n_actions and self._mask[a])
        if invalid:
            if self.invalid_action == "raise":
                raise ValueError(f"action {a} is masked in phase {self._phase!r} (allowed: "
                                 f"{np.flatnonzero(self._mask).tolist()})")
            a = int(np.flatnonzero(self._mask)[0])
        job, k = self._job, self._k
        phase, index = self._phase, self._index
        job_done = False
        if phase == "map":
            q = a
            # keep a completion of the new partial mapping (the invariant behind the masks)
            if self._witness is not None and self._witness[index] != q:
                self._witness = self._cand_witness.get(q)  # None only without lookahead
            self._nodes[index] = q
            value = float(q)
            self._index += 1
            if self._index >= job.n:
                self._bw_links = [kk for kk, (s, d, _, _) in enumerate(job.links) if self._nodes[s] != self._nodes[d]]
                self._phase, self._index = "bandwidth", 0
                job_done = not self._bw_links
        else:
            kk = self._bw_links[index]
            lo, hi = job.links[kk][2], job.links[kk][3]
            value = semantics.bandwidth_level(lo, hi, a, self._net.levels)
            self._levels_given[kk] = value
            self._index += 1
            job_done = self._index >= len(self._bw_links)

        evaluation = None
        terminated = False
        if job_done:
            self._finish_job()
            self._jpos += 1
            if self._jpos >= len(self._net.order):
                terminated = True
                self._over = True
                evaluation = self._evaluate()
            else:
                self._begin_job()
        elif self._phase == "map":
            self._mask = self._map_mask()
        if not terminated and self._phase == "bandwidth" and not job_done:
            self._mask = self._bw_mask()
        if not terminated and not self._mask.any():
            terminated = True  # dead end: no action allowed
            self._over = True
            self._dead = True
        if terminated:
            self._mask = np.zeros(self.n_actions, dtype=np.int8)
        ctx = MappingStep(self, phase, k, index, a, value, invalid, job_done, terminated, self._dead, evaluation)
        reward = float(self.reward_fn(ctx)) + sum(float(h(ctx)) for h in self.shaping)
        if invalid:
            reward -= self.invalid_penalty
        if self._dead:
            reward += self.dead_end_reward
        obs = self._obs()
        info = self._info(obs)
        info["invalid_action"] = invalid
        if terminated:
            info["dead_end"] = self._dead
            info["decisions"] = None if self._dead else self.decisions()
            if evaluation is not None:
                info["feasible"] = evaluation.feasible
                info["objectives"] = dict(evaluation.objectives)
        return obs, reward, terminated, False, info

    def _finish_job(self) -> None:
        from edgebench.solution import JobDecision, LinkDecision

        net, job, k = self._net, self._job, self._k
        links = []
        bw = [0.0] * net.R
        for kk, (s, d, lo, hi) in enumerate(job.links):
            a, b = self._nodes[s], self._nodes[d]
            if a == b:
                links.append(LinkDecision(route=(), bandwidth=hi))
                continue
            route = net.routes[a][b]
            give = self._levels_given[kk]
            for r in route:
                bw[r] += give
            links.append(LinkDecision(route=tuple(route), bandwidth=give))
        cpu = [0.0] * net.P
        ram = [0.0] * net.P
        for t, q in enumerate(self._nodes):
            cpu[q] += job.cpu[t]
            ram[q] += job.ram[t]
        self._decisions[k] = JobDecision(nodes=tuple(self._nodes), links=tuple(links), start=self._start)
        self._committed.append(_Committed(self._start, self._start + job.duration, cpu, ram, bw))

    def decisions(self):
        """The MappingDecisions of the finished episode (None before the end or after a dead
        end)."""
        from edgebench.solution import MappingDecisions

        if not self._over or self._dead:
            return None
        return MappingDecisions(jobs=tuple(self._decisions[k] for k in range(len(self._net.jobs))))

    def _evaluate(self):
        from edgebench.referee import evaluate_decisions

        return evaluate_decisions(self.instance, self.decisions())

    # ---- observation ------------------------------------------------------------------

    def action_masks(self) -> np.ndarray:
        """The current action mask (int8; a copy)."""
        return self._mask.copy()

    def _obs(self) -> dict[str, np.ndarray]:
        net, job = self._net, self._job
        P, n = net.P, job.n
        cpu, ram, bw = self._used()
        nodes = np.zeros((self.max_nodes, 3), dtype=np.float32)
        for p in range(P):
            nodes[p, 0] = cpu[p] / net.cpu_cap[p]
            nodes[p, 1] = ram[p] / net.ram_cap[p]
            inc = net.incident[p]
            if inc:
                nodes[p, 2] = sum(bw[r] for r in inc) / len(inc) / net.max_bw
        tasks = np.zeros((self.max_tasks, 3), dtype=np.float32)
        placed = np.zeros((self.max_tasks, self.max_nodes), dtype=np.float32)
        for t in range(n):
            tasks[t, 0] = job.cpu[t] / net.max_cpu
            tasks[t, 1] = job.ram[t] / net.max_ram
            tasks[t, 2] = job.out_bw[t] / net.max_bw
            if self._nodes[t] >= 0:
                placed[t, self._nodes[t]] = 1.0
        dec = np.zeros(len(DECISION_FEATURES), dtype=np.float32)
        n_links = len(job.links)
        colocated = 0
        if self._phase == "bandwidth":
            colocated = n_links - len(self._bw_links)
            dec[0] = 1.0
            items = max(len(self._bw_links), 1)
            made = n + colocated + self._index
        else:
            items = n
            made = self._index
        dec[1] = self._index / items
        dec[2] = n / self.max_tasks
        dec[3] = n_links / self.max_links
        dec[4] = made / (n + n_links)
        dec[5] = self._jpos / len(net.order)
        if not self._over:
            if self._phase == "map":
                dec[6] = job.cpu[self._index] / net.max_cpu
                dec[7] = job.ram[self._index] / net.max_ram
            else:
                kk = self._bw_links[self._index]
                dec[8] = job.links[kk][2] / net.max_bw
                dec[9] = job.links[kk][3] / net.max_bw
                route = self._route(kk)
                dec[10] = min((bw[r] for r in route), default=0.0) / net.max_bw
                dec[11] = len(route) / P
        obs = {"nodes": nodes, "tasks": tasks, "task_nodes": placed, "decision": dec,
               "action_mask": self._mask.copy()}
        for key in ("nodes", "tasks", "decision"):
            np.clip(obs[key], 0.0, 1.0, out=obs[key])
        return obs

    def _info(self, obs: dict[str, np.ndarray]) -> dict[str, Any]:
        return {"action_mask": obs["action_mask"].copy(), "phase": self._phase, "job": self._k,
                "index": self._index, "instance_seed": self.instance_seed}

    # ---- rendering --------------------------------------------------------------------

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        net, job = self._net, self._job
        if net is None:
            return "MappingEnv (not reset)"
        cpu, ram, bw = self._used()
        pos = min(self._jpos + 1, len(net.order))
        lines = [f"MappingEnv job {self._k} ({pos}/{len(net.order)}), start {self._start:g}, "
                 f"phase {self._phase}, index {self._index}" + (" [over]" if self._over else "")]
        lines.append("task nodes -> physical: " + " ".join(
            f"{t}:{q if q >= 0 else '-'}" for t, q in enumerate(self._nodes)))
        lines.append("free cpu: " + " ".join(f"{x:.1f}" for x in cpu))
        lines.append("free ram: " + " ".join(f"{x:.1f}" for x in ram))
        if self._levels_given:
            lines.append("bandwidth: " + " ".join(f"{kk}:{v:.1f}" for kk, v in sorted(self._levels_given.items())))
        lines.append("mask: " + "".join(str(int(x)) for x in self._mask))
        return "\n".join(lines)
