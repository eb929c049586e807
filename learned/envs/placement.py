"""``PlacementParallelEnv``: TapFinger's multi-agent placement MDP (SPEC.md Family A) as a
PettingZoo ``ParallelEnv`` driving :class:`edgebench.solvers.placement_sim.PlacementSim`.

One agent per cluster, ``"cluster_0" .. "cluster_{N-1}"``. Agent n's action is a flat
``Discrete(pending_size * G_n + 1)``: ``slot * G_n + cpu * (cap_gpu + 1) + gpu`` starts the
task in pending slot ``slot`` of its cluster (``sim.pending(n)``, queue order) at
``(cpu, gpu)`` of the cluster's allocation grid ``0..cap_cpu x 0..cap_gpu`` (``G_n =
(cap_cpu + 1)(cap_gpu + 1)``); the last action, ``pending_size * G_n``, is the void action.
Observations are dicts ``{"observation": float32 vector, "action_mask": int8 vector}``; a
(slot, allocation) is allowed when the slot holds a task, the allocation is at least its
minimum, fits the cluster's free CPU / GPU / memory and lets the task finish; the void action
is always allowed.

Conflicts: when several agents pick the same task, the env applies the paper's rule
Pr(n | j) ~ Pr(j | n) Pr(n) with Pr(n) proportional to how many copies of j fit the free
resources of cluster n at j's minimum, deterministically: the cluster with the most copies
wins, ties go to the lowest cluster index; the losers take the void action this step.

Variants (the instance's ``variant``): "single" -- every ``step`` is one real timestep (at
most one start per cluster); "multi" -- several logical steps per real timestep: agents keep
choosing until a logical step in which nobody starts a task, then the timestep executes;
intermediate rewards are 0 (gamma = 1). In both, timesteps in which no agent has anything
but the void action are executed at once (the simulator's ``skip_idle``). The reward of
agent n for the timesteps executed by a ``step`` is minus the number of tasks associated
with cluster n (running on it, or arrived and waiting in its queue) summed over those
timesteps. At the end every agent's info carries ``"decisions"`` (the simulator's
:class:`~edgebench.solution.PlacementDecisions`, which the referee accepts). See
``docs/environments.md``.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Mapping, Sequence

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

from edgebench.errors import InputError
from edgebench.instances import semantics
from edgebench.learned.envs import InstanceSource, check_env_size
from edgebench.learned.tapfinger_features import CROSS_FEATURES, PLAN_FEATURES, TASK_FEATURES, TaskFeatures, plan_row
from edgebench.solvers.placement_list_window import Planner, window_plan

__all__ = ["PlacementParallelEnv", "PlacementVectorEnv", "parallel_env", "env", "raw_env", "CLUSTER_FEATURES", "PENDING_FEATURES",
           "RUNNING_FEATURES", "squash"]

#: per-agent cluster features (first block of the observation)
CLUSTER_FEATURES = ("free_cpu", "free_gpu", "cap_cpu", "cap_gpu", "queue", "running", "time")
#: per pending slot, followed by a one-hot of the task type
PENDING_FEATURES = ("present", "min_cpu", "min_gpu", "waited", "fits_now", "eligible")
#: per running task (start order), followed by a one-hot of the task type
RUNNING_FEATURES = ("present", "cpu", "gpu", "elapsed", "progress")

#: time-like counts x are observed as x / (x + SQUASH) in [0, 1)
SQUASH = 10.0


def squash(x: float) -> float:
    """Map a non-negative count (steps waited, queue length) into [0, 1)."""
    return x / (x + SQUASH) if x > 0 else 0.0


class PlacementParallelEnv(ParallelEnv):
    """TapFinger placement as a PettingZoo parallel environment (see the module docstring).

    Args:
        instance: an Instance (or a path / plain dict) of family "placement" played in every
            episode; None to draw instances from the generator.
        preset, params: the generator spec (``generate("placement", preset, seed=<drawn>,
            **params)``), used when ``instance`` is None (default "synthetic-3"); every drawn
            instance must have the clusters (count and capacities) of the generator's
            seed-0 instance, which fix the spaces.
        variant: override the instance's "single" / "multi" variant (None: keep it).
        max_running: running tasks shown per agent (default: the most tasks that fit a
            cluster at the smallest minimum, over the clusters).
        max_steps: truncate after this many timesteps (default: the last arrival plus the
            sum of the tasks' run lengths at their minimum, plus one).
        invalid_action: "void" (default; a masked action counts as the void action,
            ``info["invalid_action"] = True``) or "raise" (ValueError).
        render_mode: None or "ansi".
        task_inputs: "onehot" (default: each pending / running row ends with a one-hot of the
            task type) or "generic" (it ends with the type-free features
            :data:`~edgebench.learned.tapfinger_features.TASK_FEATURES` of the task on the
            agent's cluster, read from the performance model: any task types, any instance
            whose clusters match, issue 42 item 4).
        cross_features: generic inputs only: each pending row ends with the task's
            :data:`~edgebench.learned.tapfinger_features.CROSS_FEATURES` as well (what the other
            clusters of its queue could do with it now); default False (every checkpoint before
            session 24).
        plan_features: generic inputs only: each pending row ends (after the cross-cluster block)
            with the task's :data:`~edgebench.learned.tapfinger_features.PLAN_FEATURES` (what the
            step's shared plan of the windows, ``placement-list-window``'s, does with it); default
            False (every checkpoint before session 25).
    """

    metadata = {"render_modes": ["ansi"], "name": "edgebench_placement_v0", "is_parallelizable": True}
    #: memoise each agent's last action mask (:meth:`_mask`); False recomputes every mask (the
    #: first path, kept for ``bench/bench_learned.py``'s side-by-side throughput and a test)
    memo_masks: bool = True
    #: keep the per-type allocation grids across episodes while the performance model, noise and
    #: clusters stay the same (False: rebuilt every episode, the first path, for the benchmark)
    keep_grids: bool = True

    def __init__(self, instance: Any = None, *, preset: str = "synthetic-3",
                 params: Mapping[str, Any] | None = None, variant: str | None = None,
                 max_running: int | None = None, max_steps: int | None = None,
                 invalid_action: str = "void", render_mode: str | None = None,
                 type_view: tuple[Sequence[str], Mapping[str, str]] | None = None,
                 task_inputs: str = "onehot", cross_features: bool = False, plan_features: bool = False) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise InputError(f"render_mode must be None or one of {self.metadata['render_modes']}",
                             field="render_mode")
        if variant not in (None, "single", "multi"):
            raise InputError("variant must be None, 'single' or 'multi'", field="variant")
        if invalid_action not in ("void", "raise"):
            raise InputError("invalid_action must be 'void' or 'raise'", field="invalid_action")
        if task_inputs not in ("onehot", "generic"):
            raise InputError(f"task_inputs must be 'onehot' or 'generic', got {task_inputs!r}", field="task_inputs")
        self.task_inputs = task_inputs
        if not isinstance(cross_features, bool) or (cross_features and task_inputs != "generic"):
            raise InputError("cross_features must be true or false, and true only with task_inputs='generic'",
                             field="cross_features")
        #: width of the cross-cluster block at the end of each pending row (0: off)
        self.cross_width = len(CROSS_FEATURES) if cross_features else 0
        if not isinstance(plan_features, bool) or (plan_features and task_inputs != "generic"):
            raise InputError("plan_features must be true or false, and true only with task_inputs='generic'",
                             field="plan_features")
        #: width of the plan block after it (0: off)
        self.plan_width = len(PLAN_FEATURES) if plan_features else 0
        self._planner: Planner | None = None
        self._plan: tuple[tuple, dict] | None = None
        self._features: TaskFeatures | None = None
        self.render_mode = render_mode
        self.variant_override = variant
        self.max_steps_arg = max_steps
        self.invalid_action = invalid_action
        self.source = InstanceSource("placement", instance, None if instance is not None else preset, params)
        probe = self.source.probe().placement
        self._caps = [(c.capacity.cpu, c.capacity.gpu) for c in probe.clusters]
        self.pending_size = probe.pending_size
        # type_view = (names, mapping): the observation's type one-hot is over ``names`` and an
        # instance type t is shown as mapping[t] (a policy trained on other task types reads the
        # instance through its own types: learned/tapfinger_generic.py); None: the instance's types
        self._type_map = dict(type_view[1]) if type_view is not None else {}
        self.type_names = list(type_view[0]) if type_view is not None else sorted(probe.performance.types)
        N = len(self._caps)
        if max_running is None:
            min_c = min((t.minimum.cpu for t in probe.tasks if t.minimum.cpu > 0), default=1)
            min_g = min((t.minimum.gpu for t in probe.tasks if t.minimum.gpu > 0), default=1)
            max_running = max(min(c // min_c, g // min_g) for c, g in self._caps)
        if isinstance(max_running, bool) or not isinstance(max_running, (int, np.integer)) or max_running < 1:
            raise InputError(f"max_running must be a positive integer, got {max_running!r}", field="max_running")
        self.max_running = int(max_running)
        self.possible_agents = [f"cluster_{n}" for n in range(N)]
        self.agents: list[str] = []
        self._index = {a: n for n, a in enumerate(self.possible_agents)}
        T = len(self.type_names) if task_inputs == "onehot" else len(TASK_FEATURES)
        self.task_width = T
        self.obs_size = (len(CLUSTER_FEATURES)
                         + self.pending_size * (len(PENDING_FEATURES) + T + self.cross_width + self.plan_width)
                         + self.max_running * (len(RUNNING_FEATURES) + T))
        self._grid = [(c + 1) * (g + 1) for c, g in self._caps]
        self._max_cap = (max(c for c, _ in self._caps), max(g for _, g in self._caps))
        self._n_actions = [self.pending_size * G + 1 for G in self._grid]
        check_env_size(self.obs_size * N + max(self._n_actions),
                       f"{self.obs_size} observation x {N} clusters (the state) + {max(self._n_actions):,} actions "
                       f"(pending {self.pending_size} x allocation grid)", "placement.clusters")
        self._action_spaces = {a: spaces.Discrete(self._n_actions[n]) for n, a in enumerate(self.possible_agents)}
        self._obs_spaces = {
            a: spaces.Dict({
                "observation": spaces.Box(0.0, 1.0, (self.obs_size,), np.float32),
                "action_mask": spaces.Box(0, 1, (self._n_actions[n],), np.int8),
            })
            for n, a in enumerate(self.possible_agents)
        }
        self.state_space = spaces.Box(0.0, 1.0, (self.obs_size * N,), np.float32)
        self._np_random: np.random.Generator | None = None
        self.sim = None
        self.instance = None
        self.instance_seed: int | None = None

    # ---- spaces -----------------------------------------------------------------------

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_spaces[agent]

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str) -> spaces.Space:
        return self._action_spaces[agent]

    def void_action(self, agent: str) -> int:
        return self._n_actions[self._index[agent]] - 1

    def encode_action(self, agent: str, slot: int, cpu: int, gpu: int) -> int:
        """The flat action that starts pending slot ``slot`` at (cpu, gpu)."""
        n = self._index[agent]
        cap_c, cap_g = self._caps[n]
        if not (0 <= slot < self.pending_size and 0 <= cpu <= cap_c and 0 <= gpu <= cap_g):
            raise ValueError(f"({slot}, {cpu}, {gpu}) is outside agent {agent}'s action grid")
        return slot * self._grid[n] + cpu * (cap_g + 1) + gpu

    def decode_action(self, agent: str, action: int) -> tuple[int, int, int] | None:
        """(slot, cpu, gpu) of a flat action; None for the void action."""
        n = self._index[agent]
        a = int(action)
        if a == self._n_actions[n] - 1:
            return None
        slot, alloc = divmod(a, self._grid[n])
        cpu, gpu = divmod(alloc, self._caps[n][1] + 1)
        return slot, cpu, gpu

    # ---- episode ----------------------------------------------------------------------

    @property
    def np_random(self) -> np.random.Generator:
        if self._np_random is None:
            self._np_random, _ = seeding.np_random()
        return self._np_random

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        from edgebench.solvers.placement_sim import PlacementSim

        if seed is not None or self._np_random is None:
            self._np_random, _ = seeding.np_random(seed)
        inst, gen_seed = self.source.draw(self._np_random, options)
        p = inst.placement
        caps = [(c.capacity.cpu, c.capacity.gpu) for c in p.clusters]
        if caps != self._caps:
            raise InputError(f"the instance's clusters {caps} differ from the environment's {self._caps}",
                             field="clusters")
        if p.pending_size != self.pending_size:
            raise InputError(f"the instance's pending_size {p.pending_size} differs from the environment's "
                             f"{self.pending_size}", field="pending_size")
        generic = self.task_inputs == "generic"  # type-free observations: any task types
        unknown = sorted({t for t in p.performance.types if self._type_map.get(t, t) not in self.type_names})
        if unknown and not generic:
            raise InputError(f"task types {unknown} are not among the environment's {self.type_names}",
                             field="performance.types")
        if self.variant_override is not None and p.variant != self.variant_override:
            from edgebench.instances import io

            data = inst.model_dump(mode="json")
            data["placement"]["variant"] = self.variant_override
            inst = io.instance_from_dict(data)
            p = inst.placement
        self.instance = inst
        self.instance_seed = gen_seed
        self.sim = sim = PlacementSim(inst)
        self._types = [0 if generic else self.type_names.index(self._type_map.get(t.type, t.type)) for t in p.tasks]
        self._finish_grid: dict[tuple[int, int], np.ndarray] = {}
        # the per-type grids depend on the performance model, the noise and the clusters only:
        # kept across episodes while those stay the same (the generator's instances share them)
        static = (p.performance, p.noise, p.noise_model,
                  tuple((c.capacity.cpu, c.capacity.gpu, c.capacity.memory) for c in p.clusters))
        if getattr(self, "_grid_static", None) != static or not self.keep_grids:
            self._grid_static = static
            self._type_grid: dict[tuple, tuple[np.ndarray, list[tuple[int, int]]]] = {}
            #: noise-free instances: a run's length depends on the task's type and minimum only,
            #: so the whole grid is one per type key
            self._type_finish_grid: dict[tuple, np.ndarray] = {}
            self._features = None
        if generic:  # the task features' caches (per type and cluster) stay while the grids do
            if self._features is None:
                self._features = TaskFeatures(p)
            else:
                self._features.reset(p)
        self._mask_memo: dict[int, tuple[tuple, np.ndarray]] = {}
        self._planner = Planner(p) if self.plan_width else None
        self._plan = None
        if self.max_steps_arg is not None:
            self.max_steps = int(self.max_steps_arg)
        else:
            total = 0
            for j in range(sim.num_tasks):
                d = sim.run_steps(j, sim.min_cpu[j], sim.min_gpu[j])
                if d is None:
                    d = min((sim.run_steps(j, sim.cap_cpu[n], sim.cap_gpu[n]) or semantics.MAX_RUN_STEPS)
                            for n in sim.eligible[j])
                total += d
            self.max_steps = max(sim.arrival) + total + 1
        self.agents = list(self.possible_agents)
        self.logical_step = 0
        self._last_started: dict[str, int | None] = {a: None for a in self.agents}
        # timesteps executed before the first decision: their rewards go to the first step
        self._carry = self._skip_idle()
        obs = self._observe_all()
        infos = {a: self._agent_info(a, obs[a]) for a in self.agents}
        return obs, infos

    def _guaranteed(self, j: int, c: int, g: int) -> bool:
        """Task j run from scratch at the constant allocation (c, g) surely finishes within
        the referee's step limit: the performance models' per-step gain is monotone in the
        progress, so its smallest value over a run is at progress 0 or 1, and that bound under
        the worst noise draw (``semantics.worst_gain``) decides. Depends only on j's type and
        minimum."""
        p = self.sim.payload
        lo = min(semantics.increment(p, j, c, g, 0.0), semantics.increment(p, j, c, g, 1.0 - semantics.PROGRESS_EPS))
        worst = semantics.worst_gain(p, lo) if lo > 0 else 0.0
        return worst > 0 and math.ceil(1.0 / worst) <= semantics.MAX_RUN_STEPS

    def _grid_of(self, j: int, n: int) -> np.ndarray:
        """Static int8 grid (cap_cpu + 1, cap_gpu + 1): allocations of j on n that are at
        least its minimum, within the capacity and let it finish (allocations whose finish
        the bound does not guarantee are simulated: ``PlacementSim.run_steps``)."""
        key = (j, n)
        grid = self._finish_grid.get(key)
        if grid is not None:
            return grid
        sim = self.sim
        task = sim.payload.tasks[j]
        mn = task.minimum
        tkey = (task.type, mn.cpu, mn.gpu, mn.memory, n)
        hit = self._type_grid.get(tkey)
        if hit is None:
            cap_c, cap_g = self._caps[n]
            sure = np.zeros((cap_c + 1, cap_g + 1), dtype=np.int8)
            unsure: list[tuple[int, int]] = []
            if semantics.fits(mn, sim.payload.clusters[n].capacity):
                for c in range(mn.cpu, cap_c + 1):
                    for g in range(mn.gpu, cap_g + 1):
                        if c <= 0 and g <= 0:
                            continue
                        if self._guaranteed(j, c, g):
                            sure[c, g] = 1
                        else:
                            unsure.append((c, g))
            hit = self._type_grid[tkey] = (sure, unsure)
        sure, unsure = hit
        noise_free = sim.payload.noise <= 0
        if unsure and noise_free and tkey in self._type_finish_grid:
            grid = self._type_finish_grid[tkey]
        elif unsure:
            grid = sure.copy()
            for c, g in unsure:
                if sim.run_steps(j, c, g) is not None:
                    grid[c, g] = 1
            if noise_free:
                self._type_finish_grid[tkey] = grid
        else:
            grid = sure
        self._finish_grid[key] = grid
        return grid

    def _mask(self, n: int) -> np.ndarray:
        """Agent n's action mask (read-only int8). It is a function of (episode over, n's free
        resources, n's pending window) and the static per-(task, cluster) grids, so the last
        one per agent is memoised on that key: a step asks for each mask up to three times
        (the step's validation, ``_anyone_can_act``, the observation)."""
        sim = self.sim
        fc, fg, fm = sim.free(n)
        pend = tuple(sim.pending(n)[: self.pending_size])
        key = (sim.done, fc, fg, fm, pend)
        hit = self._mask_memo.get(n) if self.memo_masks else None
        if hit is not None and hit[0] == key:
            return hit[1]
        G = self._grid[n]
        mask = np.zeros(self._n_actions[n], dtype=np.int8)
        mask[-1] = 1
        if not sim.done:  # (variant "single": every step executes a timestep, so no cluster has started yet)
            cap_c, cap_g = self._caps[n]
            for slot, j in enumerate(pend):
                mm = sim.min_mem[j]
                if fm is not None and mm is not None and mm > fm:
                    continue
                if sim.min_cpu[j] > fc or sim.min_gpu[j] > fg:
                    continue
                sub = mask[slot * G:(slot + 1) * G].reshape(cap_c + 1, cap_g + 1)
                sub[:fc + 1, :fg + 1] = self._grid_of(j, n)[:fc + 1, :fg + 1]
        mask.flags.writeable = False
        self._mask_memo[n] = (key, mask)
        return mask

    def _anyone_can_act(self) -> bool:
        return any(self._mask(n)[:-1].any() for n in range(len(self._caps)))

    def _associated(self) -> list[int]:
        """Tasks associated with each cluster now: running on it or waiting in its queue."""
        sim = self.sim
        return [len(sim.running(n)) + sim.queue_length(n) for n in range(len(self._caps))]

    def _skip_idle(self) -> list[float]:
        """Execute every timestep in which no agent can start anything; returns the rewards
        (minus the associated tasks times the steps executed) per cluster."""
        from edgebench.solvers.placement_sim import Stalled

        sim = self.sim
        rew = [0.0] * len(self._caps)
        self._stalled = False
        while not sim.done and sim.t < self.max_steps and not self._anyone_can_act():
            counts = self._associated()
            t0 = sim.t
            try:
                sim.skip_idle()
            except Stalled:
                self._stalled = True
                break
            for n, c in enumerate(counts):
                rew[n] -= c * (sim.t - t0)
        return rew

    def step(self, actions: Mapping[str, Any]):
        sim = self.sim
        if sim is None or not self.agents:
            raise RuntimeError("the episode is over: call reset()")
        N = len(self._caps)
        masks = [self._mask(n) for n in range(N)]
        pending = [sim.pending(n) for n in range(N)]
        invalid = {a: False for a in self.agents}
        picks: dict[int, list[tuple[int, int, int]]] = {}  # task -> [(cluster, cpu, gpu)]
        for a in self.agents:
            n = self._index[a]
            act = actions.get(a)
            if act is None:
                act = self.void_action(a)
            act = int(np.asarray(act).item())
            ok = 0 <= act < self._n_actions[n] and masks[n][act]
            if not ok:
                if self.invalid_action == "raise":
                    raise ValueError(f"agent {a}: action {act} is masked")
                invalid[a] = True
                continue
            dec = self.decode_action(a, act)
            if dec is None:
                continue
            slot, c, g = dec
            picks.setdefault(pending[n][slot], []).append((n, c, g))
        started: dict[str, int | None] = {a: None for a in self.agents}
        lost = {a: False for a in self.agents}
        for j in sorted(picks):
            cands = picks[j]
            win = max(cands, key=lambda x: (self._copies(j, x[0]), -x[0]))
            for n, c, g in cands:
                if n == win[0]:
                    continue
                lost[self.possible_agents[n]] = True
            n, c, g = win
            sim.start(j, n, c, g)
            started[self.possible_agents[n]] = j
        self._last_started = started
        self.logical_step += 1
        rew, self._carry = self._carry, [0.0] * N
        any_start = any(v is not None for v in started.values())
        advance = (not sim.multi) or (not any_start) or not self._anyone_can_act()
        if advance:
            counts = self._associated()
            sim.step()
            for n, c in enumerate(counts):
                rew[n] -= c
            extra = self._skip_idle()
            rew = [r + e for r, e in zip(rew, extra)]
        done = sim.done
        trunc = not done and (sim.t >= self.max_steps or getattr(self, "_stalled", False))
        agents = list(self.agents)
        obs = self._observe_all()
        rewards = {a: float(rew[self._index[a]]) for a in agents}
        terms = {a: done for a in agents}
        truncs = {a: trunc for a in agents}
        infos = {}
        for a in agents:
            info = self._agent_info(a, obs[a])
            info["invalid_action"] = invalid[a]
            info["conflict_lost"] = lost[a]
            info["started"] = started[a]
            info["advanced"] = advance
            infos[a] = info
        if done or trunc:
            decisions = sim.decisions()
            objectives = None
            if done:
                from edgebench.referee import evaluate_decisions

                ev = evaluate_decisions(self.instance, decisions)
                objectives = dict(ev.objectives)
            for a in agents:
                infos[a]["decisions"] = decisions
                infos[a]["objectives"] = objectives
                infos[a]["stalled"] = bool(getattr(self, "_stalled", False))
            self.agents = []
        return obs, rewards, terms, truncs, infos

    def _copies(self, j: int, n: int) -> float:
        """How many copies of task j fit the free resources of cluster n at its minimum."""
        sim = self.sim
        fc, fg, fm = sim.free(n)
        k = math.inf
        if sim.min_cpu[j] > 0:
            k = min(k, fc // sim.min_cpu[j])
        if sim.min_gpu[j] > 0:
            k = min(k, fg // sim.min_gpu[j])
        mm = sim.min_mem[j]
        if fm is not None and mm:
            k = min(k, fm // mm)
        return k

    # ---- observations -----------------------------------------------------------------

    def _observe(self, n: int) -> dict[str, np.ndarray]:
        sim = self.sim
        T = self.task_width
        feats = self._features if self.task_inputs == "generic" else None
        cap_c, cap_g = self._caps[n]
        max_c, max_g = self._max_cap
        fc, fg, _ = sim.free(n)
        vec = np.zeros(self.obs_size, dtype=np.float32)
        running = sim.running(n)
        vec[0:7] = (fc / cap_c, fg / cap_g, cap_c / max_c, cap_g / max_g, squash(sim.queue_length(n)),
                    squash(len(running)), squash(sim.t))
        pos = len(CLUSTER_FEATURES)
        width = len(PENDING_FEATURES) + T + self.cross_width + self.plan_width
        free = [sim.free(k)[:2] for k in range(len(self._caps))] if self.cross_width else None
        plan = self._window_plan() if self.plan_width else None
        at = len(PENDING_FEATURES) + T + self.cross_width
        for slot, j in enumerate(sim.pending(n)[: self.pending_size]):
            row = vec[pos + slot * width: pos + (slot + 1) * width]
            row[0] = 1.0
            row[1] = min(sim.min_cpu[j] / cap_c, 1.0)
            row[2] = min(sim.min_gpu[j] / cap_g, 1.0)
            row[3] = squash(sim.t - sim.arrival[j])
            row[4] = float(sim.min_cpu[j] <= fc and sim.min_gpu[j] <= fg)
            row[5] = len(sim.eligible[j]) / len(self._caps)
            if feats is not None:
                row[len(PENDING_FEATURES):len(PENDING_FEATURES) + T] = feats.task(j, n)
                if free is not None:
                    row[len(PENDING_FEATURES) + T:at] = feats.cross(j, n, sim.eligible[j], free)
                if plan is not None:
                    row[at:] = plan_row(plan, j, n, sim.t)
            else:
                row[len(PENDING_FEATURES) + self._types[j]] = 1.0
        pos += self.pending_size * width
        width = len(RUNNING_FEATURES) + T
        for i, j in enumerate(running[: self.max_running]):
            row = vec[pos + i * width: pos + (i + 1) * width]
            c, g = sim.allocation(j)
            row[0] = 1.0
            row[1] = c / cap_c
            row[2] = g / cap_g
            row[3] = squash(sim.t - sim.start_step(j))
            row[4] = min(max(sim.progress(j), 0.0), 1.0)
            if feats is not None:
                row[len(RUNNING_FEATURES):] = feats.running(j, n, c, g, float(sim.progress(j)))
            else:
                row[len(RUNNING_FEATURES) + self._types[j]] = 1.0
        return {"observation": vec, "action_mask": self._mask(n)}

    def _window_plan(self) -> dict:
        """The shared plan of the windows in the current state (``window_plan``), made once per
        state (step and starts so far) and read by every agent."""
        key = (self.sim.t, self.sim.num_started)
        if self._plan is None or self._plan[0] != key:
            self._plan = (key, window_plan(self.sim, self._planner))
        return self._plan[1]

    def cell_features(self, n: int, j: int, max_cpu: int, max_gpu: int, *, version: str = "v1") -> np.ndarray:
        """Generic inputs: the allocation head's features ``version`` ("v1" or "v2") of every cell
        of a (max_cpu + 1) x (max_gpu + 1) grid for task j on cluster n now
        (:meth:`TaskFeatures.cells`; "v2" relative to the cells the action mask allows j now)."""
        if self._features is None:
            raise ValueError("cell features need task_inputs='generic' and a reset")
        fc, fg, _ = self.sim.free(n)
        allowed = None
        if version != "v1":
            allowed = np.zeros(np.add(self._caps[n], 1), dtype=bool)
            if self.sim.min_cpu[j] <= fc and self.sim.min_gpu[j] <= fg:  # as _mask (memory aside)
                allowed[:fc + 1, :fg + 1] = self._grid_of(j, n)[:fc + 1, :fg + 1] > 0
        return self._features.cells(j, n, fc, fg, max_cpu, max_gpu, version=version, allowed=allowed)

    def cell_features_at(self, n: int, j: int, c: np.ndarray, g: np.ndarray, *, version: str = "v1") -> np.ndarray:
        """Generic inputs: :meth:`cell_features` of the cells (c[k], g[k]) only (int arrays within
        cluster n's capacity; for "v2" the allowed cells, the reference of its relative features):
        float32 (K, F) (:meth:`TaskFeatures.cells_at`)."""
        if self._features is None:
            raise ValueError("cell features need task_inputs='generic' and a reset")
        fc, fg, _ = self.sim.free(n)
        return self._features.cells_at(j, n, fc, fg, c, g, version=version)

    def _observe_all(self) -> dict[str, dict[str, np.ndarray]]:
        return {a: self._observe(self._index[a]) for a in self.agents}

    def _agent_info(self, agent: str, obs: dict[str, np.ndarray]) -> dict[str, Any]:
        n = self._index[agent]
        return {"action_mask": obs["action_mask"].copy(), "t": self.sim.t, "logical_step": self.logical_step,
                "pending": self.sim.pending(n)[: self.pending_size], "instance_seed": self.instance_seed}

    def state(self) -> np.ndarray:
        """Global state for a centralised critic: every agent's observation vector, in agent
        order."""
        return np.concatenate([self._observe(n)["observation"] for n in range(len(self._caps))])

    def decisions(self):
        """The simulator's PlacementDecisions (complete once the episode has terminated)."""
        return None if self.sim is None else self.sim.decisions()

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        sim = self.sim
        if sim is None:
            return "PlacementParallelEnv (not reset)"
        lines = [f"PlacementParallelEnv step {sim.t} (logical {self.logical_step}), variant {sim.variant}, "
                 f"{sim.num_tasks - sum(sim.is_finished(j) for j in range(sim.num_tasks))} tasks unfinished"]
        for n in range(len(self._caps)):
            fc, fg, _ = sim.free(n)
            lines.append(f"  cluster {n}: free ({fc} cpu, {fg} gpu), running {sim.running(n)}, "
                         f"pending {sim.pending(n)[: self.pending_size]}")
        return "\n".join(lines)

    def close(self) -> None:
        pass


raw_env = PlacementParallelEnv


class PlacementVectorEnv:
    """E placement environments stepped in lockstep, for a policy that decides for all of them
    in one batched forward pass (TapFinger's ``act_batch``). An environment whose episode ends
    is reset at once on a new episode, so every step returns an observation for every
    environment.

    Two ways to start episodes:

    - ``reset_fn(env) -> obs``: any reset (the vector env cannot be saved);
    - ``draw() -> token`` and ``start(env, token) -> obs``: ``draw`` picks the next episode (a
      JSON-able token, e.g. the instance's generator seed and the env's reset seed, drawn from
      the trainer's RNG) and ``start`` resets an env on it. The vector env then keeps a journal
      per slot -- the token of the episode in progress and the joint actions taken since its
      reset -- so that :meth:`state` is a few kB of plain data and :meth:`restore` rebuilds every
      slot exactly (``start`` on the token, then the actions replayed: the env is deterministic
      given its reset seed and the actions). A training run that stops anywhere resumes with the
      same episodes in flight (``docs/tapfinger.md``, "Training that stops and resumes").

    ``step(actions)`` takes one PettingZoo action dict per environment and returns
    (obs list, rewards float array (E, agents) in ``possible_agents`` order, done float array
    (E,): 1 where the episode ended at this step, finished: list of (env index, summed
    episode reward of all agents, tasks) of the episodes that ended)."""

    def __init__(self, envs: list[PlacementParallelEnv], reset_fn=None, *, draw=None, start=None) -> None:
        if not envs:
            raise ValueError("PlacementVectorEnv needs at least one environment")
        if (reset_fn is None) == (draw is None or start is None):
            raise ValueError("PlacementVectorEnv needs either reset_fn or both draw and start")
        self.envs = list(envs)
        self.reset_fn = reset_fn
        self.draw, self.start = draw, start
        self.num_envs = len(self.envs)
        self.num_agents = len(self.envs[0].possible_agents)
        self.obs: list[dict] = []
        self._ret = np.zeros(self.num_envs)
        #: per slot: the token of the episode in progress and the joint actions since its reset
        self._tokens: list[Any] = [None] * self.num_envs
        self._actions: list[list[list[int]]] = [[] for _ in self.envs]

    def _new_episode(self, e: int) -> dict:
        env = self.envs[e]
        if self.reset_fn is not None:
            return self.reset_fn(env)
        token = self.draw()
        self._tokens[e], self._actions[e] = token, []
        return self.start(env, token)

    def reset(self) -> list[dict]:
        self.obs = [self._new_episode(e) for e in range(self.num_envs)]
        self._ret[:] = 0.0
        return self.obs

    def step(self, actions: list[Mapping[str, Any]]):
        E = self.num_envs
        rewards, dones = np.zeros((E, self.num_agents)), np.zeros(E)
        finished = []
        for e, env in enumerate(self.envs):
            if self.reset_fn is None:  # journal: -1 = the agent sent no action (void)
                self._actions[e].append([-1 if actions[e].get(a) is None else int(np.asarray(actions[e][a]).item())
                                         for a in env.possible_agents])
            obs, rew, _, _, _ = env.step(actions[e])
            rewards[e] = [rew.get(a, 0.0) for a in env.possible_agents]
            self._ret[e] += rewards[e].sum()
            if not env.agents:  # terminated or truncated: the next episode starts now
                dones[e] = 1.0
                finished.append((e, float(self._ret[e]), env.sim.num_tasks))
                self._ret[e] = 0.0
                obs = self._new_episode(e)
            self.obs[e] = obs
        return self.obs, rewards, dones, finished

    def state(self) -> dict[str, Any]:
        """The episodes in flight as plain data: {"tokens", "actions", "returns"}."""
        if self.reset_fn is not None:
            raise ValueError("a PlacementVectorEnv built with reset_fn keeps no journal: use draw and start")
        return {"tokens": list(self._tokens), "actions": [[list(a) for a in acts] for acts in self._actions],
                "returns": [float(r) for r in self._ret]}

    def restore(self, state: Mapping[str, Any]) -> list[dict]:
        """Rebuild every slot from :meth:`state`'s data (``start`` on its token, then its actions
        replayed) and return the observations. Raises ValueError when the data does not fit
        (wrong number of slots, an action a slot's agents cannot take, an episode that ends
        during the replay)."""
        if self.reset_fn is not None:
            raise ValueError("a PlacementVectorEnv built with reset_fn keeps no journal: use draw and start")
        tokens, acts, rets = state["tokens"], state["actions"], state["returns"]
        if not (len(tokens) == len(acts) == len(rets) == self.num_envs):
            raise ValueError(f"the saved state has {len(tokens)} slots, this run {self.num_envs}")
        self.obs = []
        for e, env in enumerate(self.envs):
            obs = self.start(env, tokens[e])
            for joint in acts[e]:
                if len(joint) != self.num_agents or not env.agents:
                    raise ValueError(f"slot {e}: the saved actions do not replay on the saved episode")
                obs = env.step({a: int(x) for a, x in zip(env.possible_agents, joint) if int(x) >= 0})[0]
            if not env.agents:
                raise ValueError(f"slot {e}: the saved episode ends during the replay")
            self._tokens[e], self._actions[e] = tokens[e], [list(map(int, j)) for j in acts[e]]
            self._ret[e] = float(rets[e])
            self.obs.append(obs)
        return self.obs


def parallel_env(**kwargs: Any) -> PlacementParallelEnv:
    """The PettingZoo parallel environment (keyword arguments of PlacementParallelEnv)."""
    return PlacementParallelEnv(**kwargs)


def env(**kwargs: Any):
    """The same environment as a PettingZoo AEC environment (``parallel_to_aec``)."""
    from pettingzoo.utils.conversions import parallel_to_aec

    return parallel_to_aec(parallel_env(**kwargs))
