"""``pso``: particle swarm optimisation over random keys, for all three families.

Variant: **continuous PSO over the random keys, with decoding** (not a discrete or set-based
PSO). Each particle is a point of [0, 1)^dim, the same genome as the GA's, and is scored by
decoding it with the family's decoder (:mod:`edgebench.solvers.meta_common`); the GA and
PSO therefore share every encoding and decoder.

Update (inertia-weight PSO, Shi & Eberhart; defaults are Clerc's constriction values
w = 0.7298, c1 = c2 = 1.49618)::

    v <- w v + c1 r1 (pbest - x) + c2 r2 (nbest - x)      r1, r2 ~ U[0, 1)^dim per particle
    v <- clip(v, -vmax, vmax);  x <- x + v

``nbest`` is the best personal best of the particle's neighbourhood: the whole swarm
(``topology="global"``) or the ring of the ``neighbours`` particles on each side
(``topology="ring"``, the default: slower to converge, less prone to stagnate on the
plateaus that decoding creates). Walls are absorbing: a key leaving [0, 1) is put back on
the wall and that velocity component is zeroed.  A swarm whose best has not improved for
``restart`` iterations is re-scattered (new random positions and velocities; the personal
bests, hence the best so far, are kept) — the decoders map large regions of key space to
the same solution, where velocities otherwise die out.

Budget, warm start, determinism, final re-scoring and ``stats`` are as for ``ga``.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgebench.instances.model import Instance
from edgebench.registry import Result, register
from edgebench.solvers import meta_common as mc

NAME = "pso"


@dataclass(frozen=True)
class PSOParams:
    """Parameters of ``pso`` (validated: a bad value raises InputError naming it)."""

    particles: int = 100
    max_evaluations: int | None = None
    inertia: float = 0.7298
    cognitive: float = 1.49618
    social: float = 1.49618
    vmax: float = 0.2
    topology: str = "ring"
    neighbours: int = 2
    restart: int | None = 30
    stall: int | None = None
    warm_start: str | None = None

    def __post_init__(self) -> None:
        mc.check_int("particles", self.particles, 2, 1_000_000)
        mc.check_int("max_evaluations", self.max_evaluations, 1, optional=True)
        mc.check_float("inertia", self.inertia, 0.0, 1.0)
        mc.check_float("cognitive", self.cognitive, 0.0, 4.0)
        mc.check_float("social", self.social, 0.0, 4.0)
        mc.check_float("vmax", self.vmax, 0.0, 1.0, lo_open=True)
        mc.check_choice("topology", self.topology, ("global", "ring"))
        mc.check_int("neighbours", self.neighbours, 1, max(1, (self.particles - 1) // 2))
        mc.check_int("restart", self.restart, 1, optional=True)
        mc.check_int("stall", self.stall, 1, optional=True)
        mc.check_warm_start(self.warm_start)


PARAM_DOCS = mc.param_docs(PSOParams, {
    "particles": "int >= 2: swarm size",
    "max_evaluations": "int >= 1 or null: evaluation budget (null: "
                       f"{mc.DEFAULT_EVALUATIONS} without a time limit, unlimited with one)",
    "inertia": "float in [0, 1]: inertia weight w",
    "cognitive": "float in [0, 4]: c1, pull towards the particle's best",
    "social": "float in [0, 4]: c2, pull towards the neighbourhood's best",
    "vmax": "float in (0, 1]: velocity clamp per key",
    "topology": "global | ring: neighbourhood of the social term",
    "neighbours": "int >= 1: ring topology, particles on each side",
    "restart": "int >= 1 or null: re-scatter the swarm after this many iterations without improvement",
    "stall": "int >= 1 or null: stop after this many iterations without improvement",
    "warm_start": "registered heuristic solver name or null: its solution becomes one particle",
})


def neighbourhood_best(pbest_cost: np.ndarray, topology: str, k: int) -> np.ndarray:
    """Index of the best personal best in each particle's neighbourhood."""
    n = len(pbest_cost)
    if topology == "global":
        return np.full(n, int(np.argmin(pbest_cost)))
    offsets = np.arange(-k, k + 1)
    cand = (np.arange(n)[:, None] + offsets[None, :]) % n
    return cand[np.arange(n), np.argmin(pbest_cost[cand], axis=1)]


def run(problem: mc.Problem, params: PSOParams, budget: mc.Budget, *, seed: int,
        warm: np.ndarray | None = None, started: float | None = None) -> tuple[mc.Evaluator, int]:
    """Run the swarm on ``problem``; returns the evaluator and the number of iterations."""
    rng = np.random.default_rng(seed)
    ev = mc.Evaluator(problem, budget, started=started)
    dim, S = problem.dim, params.particles
    vmax = params.vmax
    x = rng.random((S, dim))
    if warm is not None:
        x[0] = warm
    v = rng.uniform(-vmax, vmax, (S, dim))
    fit = ev(x)
    pbest, pbest_cost = x.copy(), mc.to_cost(fit, problem.sense)
    iters = 0
    best_seen = ev.best_value
    since_improve = since_restart = 0
    while not ev.exhausted():
        iters += 1
        nb = neighbourhood_best(pbest_cost, params.topology, params.neighbours)
        r1 = rng.random((S, dim))
        r2 = rng.random((S, dim))
        v = params.inertia * v + params.cognitive * r1 * (pbest - x) + params.social * r2 * (pbest[nb] - x)
        v = np.minimum(np.maximum(v, -vmax), vmax)
        x = x + v
        wall = (x < 0.0) | (x > mc.KEY_MAX)
        x = mc.clip_keys(x)
        v = np.where(wall, 0.0, v)
        cost = mc.to_cost(ev(x), problem.sense)
        improved = cost < pbest_cost
        pbest = np.where(improved[:, None], x, pbest)
        pbest_cost = np.where(improved, cost, pbest_cost)
        if mc.better(ev.best_value, best_seen, problem.sense):
            best_seen, since_improve, since_restart = ev.best_value, 0, 0
        else:
            since_improve += 1
            since_restart += 1
            if params.stall is not None and since_improve >= params.stall:
                break
            if params.restart is not None and since_restart >= params.restart:
                x = rng.random((S, dim))
                v = rng.uniform(-vmax, vmax, (S, dim))
                since_restart = 0
    return ev, iters


@register(NAME, families=("placement", "mapping", "offloading"), kind="metaheuristic",
          description="Particle swarm over random keys (continuous PSO with decoding; ring or global topology, "
                      "re-scatter on stagnation) sharing the GA's decoders; anytime trace",
          params=PARAM_DOCS, check=lambda p: mc.params_from_dict(PSOParams, p, NAME))
def solve(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    """Random-key PSO (see the module docstring)."""
    started = time.perf_counter()
    p = mc.params_from_dict(PSOParams, params, NAME)
    seed = mc.check_seed(seed)
    budget = mc.make_budget(time_limit, p.max_evaluations)
    problem = mc.make_problem(instance)
    warm, wstats = mc.warm_start_keys(instance, problem, p.warm_start, seed=seed, time_limit=time_limit)
    ev, iters = run(problem, p, budget, seed=seed, warm=warm, started=started)
    stats = {"generations": iters, "algorithm": "pso", "dim": problem.dim, **wstats}
    return mc.finish(instance, problem, NAME, ev, seed=seed, params=dataclasses.asdict(p), started=started,
                     stats=stats)


__all__ = ["PSOParams", "neighbourhood_best", "run", "solve"]
