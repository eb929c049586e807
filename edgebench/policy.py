"""Online policies: write a placement, mapping or offloading *policy* — one decision at each
event — as a plain function, and run it as a registered solver.

The interface is the one the environments of :mod:`edgebench.learned.envs` expose (the
same observations and actions a learned policy sees; docs/policies.md documents every entry,
docs/environments.md the episode rules):

* a policy is ``policy(obs) -> int`` or ``policy(obs, info) -> int``;
* ``obs`` is a :class:`MappingObservation`, :class:`OffloadingObservation` or (one per
  cluster agent) :class:`PlacementObservation`: dicts of numpy arrays whose ``action_mask``
  (``int8``) marks the allowed actions — every allowed action keeps the episode feasible;
* the action is an ``int``: a physical node or bandwidth level (mapping), a server
  (offloading), ``encode_action(slot, cpu, gpu)`` or the void action (placement);
* ``info`` is the environment's info dict of that event (mapping: ``phase``, ``job``,
  ``index``; offloading: ``workflow``, ``task``, ``time``; placement: the agent's info plus
  ``agent``), read-only.

:func:`policy_solver` turns such a function into a registered solver: its ``solve`` plays
one episode of the family's environment on the instance (seeded by ``seed``), and returns
the environment's final decisions, which the referee scores like any other solver's.
"""

from __future__ import annotations

import inspect
import time
from typing import Any, Callable, TypedDict

import numpy as np
import numpy.typing as npt

from edgebench.registry import FAMILIES, Result, make_result, register

F32 = npt.NDArray[np.float32]
I8 = npt.NDArray[np.int8]


class MappingObservation(TypedDict):
    """``MappingEnv`` (``edgebench/Mapping-v0``); every float in [0, 1]."""

    nodes: F32        #: (max_nodes, 3): free CPU, free RAM, mean free incident bandwidth (normalised)
    tasks: F32        #: (max_tasks, 3): CPU, RAM, mean bw_max of the out-links of each task node
    task_nodes: F32   #: (max_tasks, max_nodes): one-hot node of each mapped task node
    decision: F32     #: (12,): DECISION_FEATURES (phase 0 map / 1 bandwidth, index, ...)
    action_mask: I8   #: (max(max_nodes, max_levels),): 1 = allowed node (map) or level (bandwidth)


class OffloadingObservation(TypedDict):
    """``OffloadingEnv`` (``edgebench/Offloading-v0``), for the task to place now."""

    servers: F32      #: (max_servers, 11): SERVER_FEATURES per server
    tasks: F32        #: (max_tasks, 4): dispatched, is current, (server + 1) / max_servers, finished
    task: F32         #: (5,): CPU, memory, mean duration, predecessors, successors (normalised)
    progress: F32     #: (4,): workflow position, dispatched share, tasks, elapsed time
    action_mask: I8   #: (max_servers,): 1 = the server can host the task


class PlacementObservation(TypedDict):
    """One cluster agent of ``PlacementParallelEnv`` (PettingZoo)."""

    observation: F32  #: CLUSTER_FEATURES (7) + pending slots x (6 + types) + running rows x (5 + types)
    action_mask: I8   #: (pending_size x G + 1,): (slot, cpu, gpu) starts allowed; the last = void


Observation = MappingObservation | OffloadingObservation | PlacementObservation
Policy = Callable[..., int]


def make_env(instance, **env_kwargs: Any):
    """The family's environment, pinned to ``instance``."""
    if instance.family == "mapping":
        from edgebench.learned.envs.mapping import MappingEnv

        return MappingEnv(instance, **env_kwargs)
    if instance.family == "offloading":
        from edgebench.learned.envs.offloading import OffloadingEnv

        return OffloadingEnv(instance, **env_kwargs)
    from edgebench.learned.envs.placement import parallel_env

    return parallel_env(instance=instance, **env_kwargs)


def _caller(policy: Policy) -> Callable[[Any, dict], int]:
    try:
        takes_info = len(inspect.signature(policy).parameters) >= 2
    except (TypeError, ValueError):
        takes_info = False
    if takes_info:
        return lambda obs, info: int(policy(obs, info))
    return lambda obs, info: int(policy(obs))


def run_episode(instance, policy: Policy, *, seed: int = 0, time_limit: float | None = None,
                env_kwargs: dict[str, Any] | None = None) -> tuple[Any, str, dict[str, Any]]:
    """Play one episode: (decisions or None, status, stats). Status ``feasible`` when the
    episode ended with decisions, ``timeout`` when ``time_limit`` ran out first, ``error``
    for a dead end or truncation."""
    act = _caller(policy)
    env = make_env(instance, **(env_kwargs or {}))
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    steps = 0
    if instance.family == "placement":  # one decision per cluster agent and step
        observations, infos = env.reset(seed=seed)
        final: dict[str, Any] = {}
        while env.agents:
            if deadline is not None and time.perf_counter() > deadline:
                return None, "timeout", {"steps": steps}
            actions = {a: act(observations[a], {**infos.get(a, {}), "agent": a}) for a in env.agents}
            observations, _, _, _, infos = env.step(actions)
            steps += 1
            final = next(iter(infos.values()), final)
        decisions = final.get("decisions")
    else:
        obs, info = env.reset(seed=seed)
        done = False
        while not done:
            if deadline is not None and time.perf_counter() > deadline:
                return None, "timeout", {"steps": steps}
            obs, _, terminated, truncated, info = env.step(act(obs, info))
            steps += 1
            done = terminated or truncated
        decisions = info.get("decisions")
    stats = {"steps": steps}
    if decisions is None:
        stats["message"] = "the episode ended without decisions (dead end or truncated)"
        return None, "error", stats
    return decisions, "feasible", stats


def policy_solver(name: str, *, families: tuple[str, ...] | list[str] = FAMILIES, kind: str = "heuristic",
                  description: str = "", env_kwargs: dict[str, Any] | None = None):
    """Decorator: register ``policy(obs[, info]) -> int`` as solver ``name`` (the policy's
    environment plays the instance; ``env_kwargs`` go to the environment, e.g.
    ``{"order": "topological"}`` for offloading). Returns the solve function, whose
    ``policy`` attribute is the policy."""

    def deco(policy: Policy):
        def solve(instance, *, time_limit: float | None = None, seed: int = 0) -> Result:
            t0 = time.perf_counter()
            decisions, status, stats = run_episode(instance, policy, seed=seed, time_limit=time_limit,
                                                   env_kwargs=env_kwargs)
            return make_result(instance, name, status=status, decisions=decisions, seed=seed, started=t0,
                               stats=stats)

        solve.__doc__ = policy.__doc__
        solve.__module__ = policy.__module__
        solve.policy = policy  # type: ignore[attr-defined]
        return register(name, families=families, kind=kind, description=description)(solve)

    return deco
