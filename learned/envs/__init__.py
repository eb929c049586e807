"""Reinforcement-learning environments over the suite's instance format.

* ``edgebench/Mapping-v0`` -> :class:`edgebench.learned.envs.mapping.MappingEnv` (Gymnasium):
  CES-PPO's two-phase MDP (map task nodes, then give each task link a bandwidth level).
* ``edgebench/Offloading-v0`` -> :class:`edgebench.learned.envs.offloading.OffloadingEnv`
  (Gymnasium): one server per workflow task, earliest-start list scheduling.
* :func:`edgebench.learned.envs.placement.parallel_env` (PettingZoo ``ParallelEnv``): one
  TapFinger agent per cluster driving the placement simulator.

Every environment takes an :class:`~edgebench.instances.model.Instance` (or a path / dict)
OR a generator spec (``preset`` + ``params``); with a spec, every ``reset`` draws a fresh
instance from the generator with a seed taken from the environment's ``np_random``, and
``reset(options={"instance": inst})`` pins one for that episode. Environments end with
``info["decisions"]``: the decisions model of the family, which the referee accepts. See
``docs/environments.md``.

This module stays light (the solver registry imports it): it imports gymnasium, registers
the ids with string entry points and holds the small instance-source helper the three
environments share; numpy, the generators and the referee load with the environments.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

import gymnasium

__all__ = ["InstanceSource", "MAPPING_ID", "MAX_ENV_CELLS", "OFFLOADING_ID", "check_env_size", "register_envs"]

MAPPING_ID = "edgebench/Mapping-v0"
OFFLOADING_ID = "edgebench/Offloading-v0"

#: seeds drawn for the generator lie in [0, SEED_BOUND)
SEED_BOUND = 2**31 - 1
#: numbers in one agent's observation and action mask (issue 28: they grow with the product
#: of the instance's sizes, and gymnasium's spaces hold their bounds as full arrays): beyond,
#: the environment is refused in one line before any space is built
MAX_ENV_CELLS = 10_000_000


def check_env_size(cells: int, how: str, field: str) -> None:
    """InputError naming ``field`` when ``cells`` (computed as ``how``) exceeds MAX_ENV_CELLS."""
    if cells > MAX_ENV_CELLS:
        from edgebench.errors import InputError

        raise InputError(f"instance too large for the environment: {cells:,} numbers per observation and action "
                         f"mask ({how}), limit {MAX_ENV_CELLS:,}", field=field)


class InstanceSource:
    """Where an environment's instances come from: one pinned instance, or a generator spec
    ``(family, preset, params)`` drawn with a fresh seed from the environment's RNG at every
    reset. ``reset(options={"instance": inst})`` overrides both for one episode."""

    def __init__(self, family: str, instance: Any = None, preset: str | None = None,
                 params: Mapping[str, Any] | None = None) -> None:
        self.family = family
        self.preset = preset
        self.params = dict(params or {})
        self.instance = None if instance is None else self.coerce(instance)
        if self.instance is None and preset is None:
            from edgebench.errors import InputError

            raise InputError(f"a {family} environment needs an instance or a generator preset", field="preset")
        self._probe = None

    def coerce(self, instance: Any):
        """An Instance from an Instance, a path to an instance file, or a plain-JSON dict;
        InputError when it is not of this source's family."""
        from edgebench.errors import InputError
        from edgebench.instances import io
        from edgebench.instances.model import Instance

        if isinstance(instance, (str, os.PathLike)):
            instance = io.load_instance(instance)
        elif isinstance(instance, dict):
            instance = io.instance_from_dict(instance)
        if not isinstance(instance, Instance):
            raise InputError(f"expected an Instance, a path or a dict, got {type(instance).__name__}",
                             field="instance")
        if instance.family != self.family:
            raise InputError(f"a {self.family} environment got a {instance.family} instance", field="family")
        return instance

    def probe(self):
        """An instance that fixes the sizes of the spaces: the pinned one, or the generator's
        instance for seed 0 (cached)."""
        if self.instance is not None:
            return self.instance
        if self._probe is None:
            from edgebench.instances.generators import generate

            self._probe = generate(self.family, self.preset, seed=0, **self.params)
        return self._probe

    def draw(self, rng, options: Mapping[str, Any] | None = None):
        """(instance, generator seed or None) for a new episode."""
        if options and options.get("instance") is not None:
            return self.coerce(options["instance"]), None
        if self.instance is not None:
            return self.instance, None
        from edgebench.instances.generators import generate

        seed = int(rng.integers(0, SEED_BOUND))
        return generate(self.family, self.preset, seed=seed, **self.params), seed

    def generator_params(self) -> dict[str, Any]:
        """The resolved generator parameters (from the probe instance's meta), {} for a pinned
        instance."""
        if self.instance is not None:
            return {}
        return dict(self.probe().meta.get("params", {}))


def register_envs() -> None:
    """Register the Gymnasium ids (idempotent)."""
    registry = gymnasium.envs.registration.registry
    if MAPPING_ID not in registry:
        gymnasium.register(id=MAPPING_ID, entry_point="edgebench.learned.envs.mapping:MappingEnv")
    if OFFLOADING_ID not in registry:
        gymnasium.register(id=OFFLOADING_ID, entry_point="edgebench.learned.envs.offloading:OffloadingEnv")


register_envs()
