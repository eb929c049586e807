"""``ga``: a random-key genetic algorithm on DEAP for all three families.

The genome is the family's random-key vector (:mod:`edgebench.solvers.meta_common`); the
family's :class:`~edgebench.solvers.meta_common.Problem` decodes it into feasible decisions
and scores a whole population at once.  The algorithm is generational with elitism:

* **elitism**: a DEAP :class:`~deap.tools.HallOfFame` of the ``elite`` best distinct genomes
  ever evaluated is copied unchanged into every generation;
* **selection**: tournaments of size ``tournament`` on the current population;
* **crossover** (probability ``crossover`` per child): biased uniform crossover of two
  tournament winners, each key taken from the better parent with probability ``bias`` (as
  in biased random-key GAs); a child without crossover copies the better parent;
* **mutation**: each key with probability ``mutation`` (default 1 / dim) is either redrawn
  uniformly (probability ``reset``) or moved by a Gaussian step of deviation ``sigma``
  (reflected into [0, 1));
* **immigrants**: a fraction ``immigrants`` of each generation is fresh random genomes.

DEAP supplies the fitness and individual classes (``creator``), the toolbox through which
the operators are called, and the hall of fame. DEAP's stock operators draw from Python's
global ``random`` module; the suite never uses global random state, so the operators
registered in the toolbox are population-vectorised NumPy versions drawing from one
``numpy.random.default_rng(seed)``: the same seed gives the same result whenever the run is
bounded by evaluations (a time limit makes the stopping point depend on the machine).

Budget: ``time_limit`` (seconds) and ``max_evaluations``; without a time limit the default
evaluation budget is :data:`~edgebench.solvers.meta_common.DEFAULT_EVALUATIONS`.  The best
genome is decoded and re-scored by the referee; ``stats`` holds the anytime trace
(``[seconds, evaluations, best]`` at each improvement), ``evaluations`` and
``generations``.
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

NAME = "ga"


@dataclass(frozen=True)
class GAParams:
    """Parameters of ``ga`` (validated: a bad value raises InputError naming it)."""

    population: int = 100
    max_evaluations: int | None = None
    elite: int = 2
    tournament: int = 3
    crossover: float = 0.9
    bias: float = 0.7
    mutation: float | None = None
    reset: float = 0.5
    sigma: float = 0.1
    immigrants: float = 0.05
    stall: int | None = None
    warm_start: str | None = None

    def __post_init__(self) -> None:
        mc.check_int("population", self.population, 2, 1_000_000)
        mc.check_int("max_evaluations", self.max_evaluations, 1, optional=True)
        mc.check_int("elite", self.elite, 0, self.population - 1)
        mc.check_int("tournament", self.tournament, 1, 1000)
        mc.check_float("crossover", self.crossover, 0.0, 1.0)
        mc.check_float("bias", self.bias, 0.0, 1.0)
        mc.check_float("mutation", self.mutation, 0.0, 1.0, optional=True)
        mc.check_float("reset", self.reset, 0.0, 1.0)
        mc.check_float("sigma", self.sigma, 0.0, 1.0)
        mc.check_float("immigrants", self.immigrants, 0.0, 0.5)
        mc.check_int("stall", self.stall, 1, optional=True)
        mc.check_warm_start(self.warm_start)
        if self.elite + round(self.immigrants * self.population) >= self.population:
            raise mc.InputError("elite plus immigrants leave no room for offspring", field="params.elite")


PARAM_DOCS = mc.param_docs(GAParams, {
    "population": "int >= 2: genomes per generation",
    "max_evaluations": "int >= 1 or null: evaluation budget (null: "
                       f"{mc.DEFAULT_EVALUATIONS} without a time limit, unlimited with one)",
    "elite": "int in [0, population - 1]: best distinct genomes kept (DEAP hall of fame)",
    "tournament": "int >= 1: tournament size of the parent selection",
    "crossover": "float in [0, 1]: probability that a child comes from crossover",
    "bias": "float in [0, 1]: biased uniform crossover, probability of the better parent's key",
    "mutation": "float in [0, 1] or null: per-key mutation probability (null: 1 / dim)",
    "reset": "float in [0, 1]: probability that a mutated key is redrawn (else a Gaussian step)",
    "sigma": "float in [0, 1]: deviation of the Gaussian mutation step",
    "immigrants": "float in [0, 0.5]: fraction of each generation that is fresh random genomes",
    "stall": "int >= 1 or null: stop after this many generations without improvement",
    "warm_start": "registered heuristic solver name or null: its solution seeds the population",
})


def _deap_classes(sense: str):
    """DEAP's creator classes for the sense (created once per process)."""
    from deap import base, creator

    tag = "Max" if sense == "max" else "Min"
    fit_name, ind_name = f"EdgebenchFitness{tag}", f"EdgebenchGenome{tag}"
    if not hasattr(creator, fit_name):
        creator.create(fit_name, base.Fitness, weights=(1.0 if sense == "max" else -1.0,))
    if not hasattr(creator, ind_name):
        creator.create(ind_name, np.ndarray, fitness=getattr(creator, fit_name))
    return getattr(creator, ind_name)


# ---- population-vectorised operators (registered in the DEAP toolbox) -------------------


def tournament_select(rng: np.random.Generator, cost: np.ndarray, n: int, size: int) -> np.ndarray:
    """Indices of ``n`` tournament winners (lowest cost among ``size`` drawn with replacement)."""
    cand = rng.integers(0, len(cost), size=(n, size))
    return cand[np.arange(n), np.argmin(cost[cand], axis=1)]


def biased_crossover(rng: np.random.Generator, pop: np.ndarray, cost: np.ndarray, pa: np.ndarray,
                     pb: np.ndarray, prob: float, bias: float) -> np.ndarray:
    """Children of parent pairs (pa[i], pb[i]): biased uniform crossover with probability
    ``prob``, else a copy of the better parent."""
    swap = cost[pb] < cost[pa]
    better = np.where(swap, pb, pa)
    worse = np.where(swap, pa, pb)
    a, b = pop[better], pop[worse]
    cross = rng.random(len(pa)) < prob
    take_a = rng.random(a.shape) < bias
    take_a |= ~cross[:, None]
    return np.where(take_a, a, b)


def mutate(rng: np.random.Generator, kids: np.ndarray, prob: float, reset: float, sigma: float) -> np.ndarray:
    """Per-key mutation: redraw (probability ``reset``) or a reflected Gaussian step."""
    hit = rng.random(kids.shape) < prob
    rows, cols = np.nonzero(hit)
    k = len(rows)
    if not k:
        return kids
    old = kids[rows, cols]
    step = np.abs(old + sigma * rng.standard_normal(k))
    step = np.where(step >= 1.0, 2.0 - step, step)
    new = np.where(rng.random(k) < reset, rng.random(k), step)
    out = kids.copy()
    out[rows, cols] = new
    return mc.clip_keys(out)


def immigrants(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    return rng.random((n, dim))


# ---- the solver ---------------------------------------------------------------------------


def run(problem: mc.Problem, params: GAParams, budget: mc.Budget, *, seed: int,
        warm: np.ndarray | None = None, started: float | None = None) -> tuple[mc.Evaluator, int]:
    """Run the GA on ``problem``; returns the evaluator (best genome, trace, count) and the
    number of generations."""
    from deap import base, tools

    Individual = _deap_classes(problem.sense)
    rng = np.random.default_rng(seed)
    ev = mc.Evaluator(problem, budget, started=started)
    dim, P = problem.dim, params.population
    n_imm = int(round(params.immigrants * P))
    n_elite = params.elite
    n_kids = P - n_elite - n_imm
    mut = params.mutation if params.mutation is not None else 1.0 / max(dim, 1)

    tb = base.Toolbox()
    tb.register("select", tournament_select, rng, size=params.tournament)
    tb.register("mate", biased_crossover, rng, prob=params.crossover, bias=params.bias)
    tb.register("mutate", mutate, rng, prob=mut, reset=params.reset, sigma=params.sigma)
    tb.register("immigrants", immigrants, rng, dim=dim)
    tb.register("evaluate", ev)
    hof = tools.HallOfFame(max(n_elite, 1), similar=np.array_equal)

    def to_hof(genomes: np.ndarray, values: np.ndarray) -> None:
        # only the candidates that can enter the hall of fame become DEAP individuals
        k = min(hof.maxsize, len(values))
        cost = mc.to_cost(values, problem.sense)
        best = np.argsort(cost, kind="stable")[:k]
        if len(hof) >= hof.maxsize:
            worst = float(mc.to_cost(np.array([hof[-1].fitness.values[0]]), problem.sense)[0])
            best = best[cost[best] < worst]
        inds = []
        for i in best:
            ind = Individual(genomes[i])
            ind.fitness.values = (float(values[i]),)
            inds.append(ind)
        if inds:
            hof.update(inds)

    pop = rng.random((P, dim))
    if warm is not None:
        pop[0] = warm
    fit = tb.evaluate(pop)
    to_hof(pop, fit)
    gens = 0
    best_seen = ev.best_value
    since = 0
    while not ev.exhausted():
        gens += 1
        cost = mc.to_cost(fit, problem.sense)
        winners = tb.select(cost, 2 * n_kids)
        kids = tb.mutate(tb.mate(pop, cost, winners[:n_kids], winners[n_kids:]))
        fresh = np.vstack([kids, tb.immigrants(n_imm)]) if n_imm else kids
        fresh_fit = tb.evaluate(fresh)
        to_hof(fresh, fresh_fit)
        if n_elite:
            elites = np.array([np.asarray(h) for h in hof[:n_elite]])
            elite_fit = np.array([h.fitness.values[0] for h in hof[:n_elite]])
            pop = np.vstack([elites, fresh])
            fit = np.concatenate([elite_fit, fresh_fit])
        else:
            pop, fit = fresh, fresh_fit
        if mc.better(ev.best_value, best_seen, problem.sense):
            best_seen, since = ev.best_value, 0
        else:
            since += 1
            if params.stall is not None and since >= params.stall:
                break
    return ev, gens


@register(NAME, families=("placement", "mapping", "offloading"), kind="metaheuristic",
          description="Random-key genetic algorithm on DEAP (elitism, tournaments, biased uniform crossover, "
                      "reset/Gaussian mutation, immigrants) over the family's decoder; anytime trace",
          params=PARAM_DOCS, check=lambda p: mc.params_from_dict(GAParams, p, NAME))
def solve(instance: Instance, *, time_limit: float | None = None, seed: int = 0, **params: Any) -> Result:
    """Random-key GA (see the module docstring)."""
    started = time.perf_counter()
    p = mc.params_from_dict(GAParams, params, NAME)
    seed = mc.check_seed(seed)
    budget = mc.make_budget(time_limit, p.max_evaluations)
    problem = mc.make_problem(instance)
    warm, wstats = mc.warm_start_keys(instance, problem, p.warm_start, seed=seed, time_limit=time_limit)
    ev, gens = run(problem, p, budget, seed=seed, warm=warm, started=started)
    stats = {"generations": gens, "algorithm": "ga", "dim": problem.dim, **wstats}
    return mc.finish(instance, problem, NAME, ev, seed=seed, params=dataclasses.asdict(p), started=started,
                     stats=stats)


__all__ = ["GAParams", "run", "solve", "tournament_select", "biased_crossover", "mutate"]
