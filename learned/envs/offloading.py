"""``OffloadingEnv``: DAG workflow offloading (SPEC.md Family C, the patent's MDP) as a
Gymnasium environment driving the suite's offloading simulator
(:class:`edgebench.solvers.offloading_sim.OffloadingSim`, the execution model of every
offloading baseline and of the MDP solver).

One decision per task: the simulator's candidate set (the patent's ``cand``: tasks whose
predecessors are all offloaded -- candidate rule "dispatched" -- or, optionally, all
finished) is served workflow by workflow in arrival order, and the next task is chosen by
the patent's procedure (``order="patent"``: uniformly, with the environment's ``np_random``,
among the candidates whose images the current server -- the server of the workflow's
previous decision, first its source -- holds, else among all;
:func:`~edgebench.solvers.offloading_sim.patent_pool`) or in topological order
(``order="topological"``: the smallest candidate index). The action is a server
(``Discrete(max_servers)``), masked to the servers that can host the task
(``semantics.can_host``). Between decisions the simulator runs its events: dispatched tasks
start as soon as their data has arrived and their server has the CPU and memory free (FIFO
per server, first fit), and release them when they finish.

Rewards (``reward=``): "makespan" (default) -- minus the time integral of the number of
workflows in the system (arrived, not finished) over the simulated time that passed since
the previous decision, so that an episode's return is exactly minus the sum of the
workflows' makespans (rewards are delayed to the decisions after which time advances);
"patent" -- the patent's ``-(t_trans + t_exec)`` of the decision (the simulator's
``arrival_transfer`` and ``semantics.task_duration``); or any ``f(OffloadingStep) ->
float``. See ``docs/environments.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from edgebench.errors import InputError
from edgebench.learned.envs import InstanceSource

__all__ = ["OffloadingEnv", "OffloadingStep", "makespan_reward", "patent_reward", "SERVER_FEATURES", "TIME_CLIP",
           "SQUASH"]

#: normalised times are clipped to [0, TIME_CLIP]
TIME_CLIP = 10.0
#: counts x (queued tasks) are observed as x / (x + SQUASH)
SQUASH = 4.0

#: columns of ``obs["servers"]`` (one row per server, for the current task)
SERVER_FEATURES = (
    "cpu",          # capacity / largest edge capacity (cloud: 1)
    "mem",          # capacity / largest edge capacity (cloud: 1)
    "is_cloud",
    "has_images",   # holds every image of the current task
    "can_host",
    "distance",     # distance from the current server / largest distance
    "free_cpu",     # free now / capacity (cloud: 1)
    "free_mem",     # free now / capacity (cloud: 1)
    "load",         # tasks dispatched to the server and not finished, squashed
    "t_trans",      # the task's input delay on this server / time scale
    "t_exec",       # the task's duration on this server (image pulls included) / time scale
)


@dataclass(frozen=True)
class OffloadingStep:
    """What a reward function sees after every step: the decision (``workflow``, ``task``,
    ``server``), its ``t_trans`` (input delay on the server) and ``t_exec`` (duration,
    image pulls included), the simulated time before and after the events that ran until
    the next decision (``time_before``, ``time_after``), ``active_time`` (the integral of
    the number of workflows in the system over that time), and at the end the referee's
    ``evaluation``."""

    env: "OffloadingEnv"
    workflow: int
    task: int
    server: int
    t_trans: float
    t_exec: float
    time_before: float
    time_after: float
    active_time: float
    invalid: bool
    terminated: bool
    evaluation: Any = None


RewardFn = Callable[[OffloadingStep], float]


def makespan_reward(step: OffloadingStep) -> float:
    """Minus the workflow-time that passed since the previous decision (the return of an
    episode is minus the sum of the workflows' makespans)."""
    return -step.active_time


def patent_reward(step: OffloadingStep) -> float:
    """The patent's r(s, a) = -(t_trans + t_exec)."""
    return -(step.t_trans + step.t_exec)


_REWARDS: dict[str, RewardFn] = {"makespan": makespan_reward, "patent": patent_reward}


class OffloadingEnv(gym.Env):
    """DAG workflow offloading as a Gymnasium environment (see the module docstring).

    Args:
        instance: an Instance (or a path / plain dict) of family "offloading" played in every
            episode; None to draw instances from the generator.
        preset, params: the generator spec (``generate("offloading", preset, seed=<drawn>,
            **params)``), used when ``instance`` is None (default preset "daggen").
        max_servers, max_tasks: sizes of the spaces (default: from the pinned instance or
            the generator's seed-0 instance); a larger episode instance raises InputError.
        order: "patent" (default) or "topological".
        candidate_rule: the simulator's "dispatched" (default, the patent's) or "finished".
        reward: "makespan" (default), "patent" or a function of :class:`OffloadingStep`.
        shaping: more reward functions whose values are added.
        invalid_action: "fallback" (default; a masked server is replaced by the lowest
            allowed one, ``info["invalid_action"] = True``) or "raise" (ValueError).
        invalid_penalty: subtracted from the reward of a step whose action was masked.
        render_mode: None or "ansi".
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(self, instance: Any = None, *, preset: str = "daggen", params: Mapping[str, Any] | None = None,
                 max_servers: int | None = None, max_tasks: int | None = None, order: str = "patent",
                 candidate_rule: str = "dispatched", reward: str | RewardFn = "makespan",
                 shaping: Sequence[RewardFn] = (), invalid_action: str = "fallback", invalid_penalty: float = 0.0,
                 render_mode: str | None = None) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise InputError(f"render_mode must be None or one of {self.metadata['render_modes']}",
                             field="render_mode")
        if order not in ("patent", "topological"):
            raise InputError("order must be 'patent' or 'topological'", field="order")
        if candidate_rule not in ("dispatched", "finished"):
            raise InputError("candidate_rule must be 'dispatched' or 'finished'", field="candidate_rule")
        if invalid_action not in ("fallback", "raise"):
            raise InputError("invalid_action must be 'fallback' or 'raise'", field="invalid_action")
        if isinstance(reward, str):
            if reward not in _REWARDS:
                raise InputError(f"reward must be one of {', '.join(_REWARDS)} or a function", field="reward")
            reward_fn = _REWARDS[reward]
        elif callable(reward):
            reward_fn = reward
        else:
            raise InputError("reward must be a name or a function", field="reward")
        self.render_mode = render_mode
        self.source = InstanceSource("offloading", instance, None if instance is not None else preset, params)
        probe = self.source.probe().offloading
        if max_servers is None:
            max_servers = len(probe.servers)
        if max_tasks is None:
            max_tasks = max(len(wf.tasks) for wf in probe.workflows)
        for name, v in (("max_servers", max_servers), ("max_tasks", max_tasks)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise InputError(f"{name} must be a positive integer, got {v!r}", field=name)
        self.max_servers = int(max_servers)
        self.max_tasks = int(max_tasks)
        self.order = order
        self.candidate_rule = candidate_rule
        self.reward_fn: RewardFn = reward_fn
        self.shaping = tuple(shaping)
        self.invalid_action = invalid_action
        self.invalid_penalty = float(invalid_penalty)

        f32 = np.float32
        self.action_space = spaces.Discrete(self.max_servers)
        self.observation_space = spaces.Dict({
            "servers": spaces.Box(0.0, TIME_CLIP, (self.max_servers, len(SERVER_FEATURES)), f32),
            "tasks": spaces.Box(0.0, 1.0, (self.max_tasks, 4), f32),
            "task": spaces.Box(0.0, TIME_CLIP, (5,), f32),
            "progress": spaces.Box(0.0, TIME_CLIP, (4,), f32),
            "action_mask": spaces.Box(0, 1, (self.max_servers,), np.int8),
        })
        self.sim = None
        self._static_of = None
        self._over = True
        self.instance = None
        self.instance_seed: int | None = None

    # ---- episode ----------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        from edgebench.solvers.offloading_sim import OffloadingSim

        super().reset(seed=seed)
        inst, gen_seed = self.source.draw(self.np_random, options)
        o = inst.offloading
        if len(o.servers) > self.max_servers:
            raise InputError(f"the instance has {len(o.servers)} servers, the environment at most "
                             f"{self.max_servers}", field="max_servers")
        big = max(len(wf.tasks) for wf in o.workflows)
        if big > self.max_tasks:
            raise InputError(f"the instance has a workflow of {big} tasks, the environment at most "
                             f"{self.max_tasks}", field="max_tasks")
        self.instance = inst
        self.instance_seed = gen_seed
        self.sim = sim = OffloadingSim(o, candidate_rule=self.candidate_rule)
        if self._static_of is not inst:
            self._static(sim)
            self._static_of = inst
        self._current = [wf.source for wf in o.workflows]
        self._dispatched = [0] * sim.W
        self._n_done_workflows = 0
        self._over = False
        self._carry = self._run_until_decision()
        obs = self._obs()
        return obs, self._info(obs)

    def _static(self, sim) -> None:
        o = sim.payload
        edge_cpu = [x for x, c in zip(sim.cap_cpu, sim.is_cloud) if not c] or [1.0]
        edge_mem = [x for x, c in zip(sim.cap_mem, sim.is_cloud) if not c] or [1.0]
        self._max_cpu = max(max(edge_cpu), 1e-9)
        self._max_mem = max(max(edge_mem), 1e-9)
        self._max_dist = max(max(max(row) for row in o.distance), 1e-9)
        self._scale = []
        for w, g in enumerate(sim.graphs):
            total = sum(min(sim.duration(w, t, s) for s in g.hosts[t]) for t in range(g.n))
            self._scale.append(total if total > 1e-9 else 1.0)

    def _active(self) -> int:
        """Workflows in the system now: arrived and not finished."""
        from edgebench.solvers.offloading_sim import DONE

        sim = self.sim
        return sum(1 for w in range(sim.W) if sim.arrived[w] and any(st != DONE for st in sim.state[w]))

    def _run_until_decision(self) -> float:
        """Run the simulator's events until a candidate needs a decision (or the end);
        returns the workflow-time that passed (integral of the active workflows)."""
        sim = self.sim
        acc = 0.0
        while True:
            w = next((w for w in sim.order if sim.cands[w]), None)
            if w is not None:
                self._pick(w)
                return acc
            sim.start_ready()
            before = sim.now
            active = self._active()
            if sim.advance() is None:
                self._over = True
                return acc
            acc += active * (sim.now - before)

    def _pick(self, w: int) -> None:
        from edgebench.solvers.offloading_sim import patent_pool

        sim = self.sim
        cands = sim.cands[w]
        if self.order == "topological":
            t = min(cands)
        else:
            pool = patent_pool(sim.graphs[w], cands, self._current[w])
            t = pool[int(self.np_random.integers(len(pool)))] if len(pool) > 1 else pool[0]
        self._w, self._task = w, t
        self._mask = np.zeros(self.max_servers, dtype=np.int8)
        self._mask[list(sim.graphs[w].hosts[t])] = 1

    def step(self, action):
        from edgebench.solvers.offloading_sim import Dispatch, arrival_transfer

        if self._over:
            raise RuntimeError("the episode is over: call reset()")
        a = int(action)
        invalid = not (0 <= a < self.max_servers and self._mask[a])
        if invalid:
            if self.invalid_action == "raise":
                raise ValueError(f"server {a} cannot host the task (allowed: {np.flatnonzero(self._mask).tolist()})")
            a = int(np.flatnonzero(self._mask)[0])
        sim, w, t = self.sim, self._w, self._task
        t_trans = arrival_transfer(sim, w, t, a)
        t_exec = sim.duration(w, t, a)
        sim.dispatch(Dispatch(w, t, a))
        self._current[w] = a
        self._dispatched[w] += 1
        before = sim.now
        active_time = self._carry + self._run_until_decision()
        self._carry = 0.0
        terminated = self._over
        evaluation = None
        if terminated:
            from edgebench.referee import evaluate_decisions

            self._result = sim.result()
            evaluation = evaluate_decisions(self.instance, self._result.decisions)
            self._mask = np.zeros(self.max_servers, dtype=np.int8)
        ctx = OffloadingStep(self, w, t, a, t_trans, t_exec, before, sim.now, active_time, invalid, terminated,
                             evaluation)
        reward = float(self.reward_fn(ctx)) + sum(float(h(ctx)) for h in self.shaping)
        if invalid:
            reward -= self.invalid_penalty
        obs = self._obs()
        info = self._info(obs)
        info["invalid_action"] = invalid
        if terminated:
            info["decisions"] = self._result.decisions
            info["feasible"] = evaluation.feasible
            info["objectives"] = dict(evaluation.objectives)
        return obs, reward, terminated, False, info

    def decisions(self):
        """The OffloadingDecisions of the finished episode (None before the end)."""
        return self._result.decisions if self._over and self.sim is not None else None

    # ---- observation ------------------------------------------------------------------

    def action_masks(self) -> np.ndarray:
        """The current action mask (int8; a copy)."""
        return self._mask.copy()

    def _obs(self) -> dict[str, np.ndarray]:
        from edgebench.solvers.offloading_sim import DONE, UNRELEASED, CANDIDATE, arrival_transfer

        sim = self.sim
        o = sim.payload
        servers = np.zeros((self.max_servers, len(SERVER_FEATURES)), dtype=np.float32)
        task = np.zeros(5, dtype=np.float32)
        tasks = np.zeros((self.max_tasks, 4), dtype=np.float32)
        progress = np.zeros(4, dtype=np.float32)
        if not self._over:
            w, t = self._w, self._task
            g = sim.graphs[w]
            scale = self._scale[w]
            load = [0] * sim.S
            for w2 in range(sim.W):
                for u, st in enumerate(sim.state[w2]):
                    if st not in (UNRELEASED, CANDIDATE, DONE):
                        load[sim.server[w2][u]] += 1
            for s in range(sim.S):
                row = servers[s]
                cloud = sim.is_cloud[s]
                row[0] = 1.0 if cloud else sim.cap_cpu[s] / self._max_cpu
                row[1] = 1.0 if cloud else sim.cap_mem[s] / self._max_mem
                row[2] = float(cloud)
                row[3] = float(s in g.holders[t])
                row[4] = float(self._mask[s])
                row[5] = o.distance[self._current[w]][s] / self._max_dist
                row[6] = 1.0 if cloud else sim.free_cpu[s] / sim.cap_cpu[s]
                row[7] = 1.0 if cloud else sim.free_mem[s] / sim.cap_mem[s]
                row[8] = load[s] / (load[s] + SQUASH)
                if self._mask[s]:
                    row[9] = arrival_transfer(sim, w, t, s) / scale
                    row[10] = sim.duration(w, t, s) / scale
            cpu, mem = sim.demand[w][t]
            hosts = g.hosts[t]
            task[0] = cpu / self._max_cpu
            task[1] = mem / self._max_mem
            task[2] = sum(sim.duration(w, t, s) for s in hosts) / len(hosts) / scale
            task[3] = len(g.preds[t]) / self.max_tasks
            task[4] = len(g.succs[t]) / self.max_tasks
            for u in range(g.n):
                srv = sim.server[w][u]
                if srv >= 0:
                    tasks[u, 0] = 1.0
                    tasks[u, 2] = (srv + 1) / self.max_servers
                    tasks[u, 3] = float(sim.state[w][u] == DONE)
            tasks[t, 1] = 1.0
            progress[:] = (sim.order.index(w) / sim.W, self._dispatched[w] / g.n, g.n / self.max_tasks,
                           (sim.now - float(o.workflows[w].arrival)) / scale)
        else:
            progress[:2] = 1.0
        obs = {"servers": servers, "tasks": tasks, "task": task, "progress": progress,
               "action_mask": self._mask.copy()}
        for key in ("servers", "task", "progress"):
            np.clip(obs[key], 0.0, TIME_CLIP, out=obs[key])
        return obs

    def _info(self, obs: dict[str, np.ndarray]) -> dict[str, Any]:
        over = self._over
        return {"action_mask": obs["action_mask"].copy(), "workflow": None if over else self._w,
                "task": None if over else self._task, "time": self.sim.now, "instance_seed": self.instance_seed}

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        sim = self.sim
        if sim is None:
            return "OffloadingEnv (not reset)"
        head = f"OffloadingEnv t={sim.now:.3f}, {sum(self._dispatched)} of {sum(g.n for g in sim.graphs)} tasks offloaded"
        lines = [head + (" [over]" if self._over else f", next: workflow {self._w} task {self._task}")]
        for w in range(sim.W):
            placed = " ".join(f"{u}:{s}" for u, s in enumerate(sim.server[w]) if s >= 0)
            lines.append(f"  workflow {w}: {placed}")
        lines.append("mask: " + "".join(str(int(x)) for x in self._mask))
        return "\n".join(lines)
