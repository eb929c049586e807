"""The one step rule (issue 45): :func:`placement.problem.step_progress` is the referee's
semantics of one executed step; the models call it, and its vectorised mirrors (trajectory
pricing's numpy / numba step, the energy front's relaxation) are checked against it here."""

from __future__ import annotations

import numpy as np
import pytest

from edgebench.formulations.placement.bounds.trajectory import Options
from edgebench.formulations.placement.problem import is_done, step_progress
from edgebench.instances import semantics
from edgebench.instances.generators import generate
from edgebench.referee.placement import task_finish


def _finish(p, j, start, changes):
    """Task j's finish by the step rule alone (the referee's timeline: the allocation in force
    from each change on; a step below the minimum or paused executes nothing)."""
    cur, it, prog, k, prev = (0, 0), 0, 0.0, 0, None
    changes = sorted(changes)
    mn = p.tasks[j].minimum
    for t in range(start, start + 400):
        while it < len(changes) and changes[it][0] <= t:
            cur = changes[it][1:]
            it += 1
        if cur[0] >= mn.cpu and cur[1] >= mn.gpu and (cur[0] > 0 or cur[1] > 0):
            prog = step_progress(p, j, cur, prog, k, prev, first=(t == start))
            k += 1
            if is_done(prog):
                return t + 1
        prev = cur
    return None


@pytest.mark.parametrize("preset,noise_model", [("synthetic-3", "multiplicative"), ("hetero-6", "multiplicative"),
                                                 ("synthetic-3", "additive")])
def test_step_rule_reproduces_the_referees_finish(preset, noise_model):
    """Random allocation histories (re-allocations, pauses) of every task: the step rule's finish
    equals the referee's own simulation (an independent implementation)."""
    inst = generate("placement", preset, seed=1, num_tasks=6)
    p = inst.placement
    if noise_model == "additive":
        p = p.model_copy(update={"noise_model": "additive", "noise": 0.05})
    rng = np.random.default_rng(0)
    checked = 0
    for j, task in enumerate(p.tasks):
        n = task.eligible[0]
        opts = semantics.allocation_options(p, j, n)
        for _ in range(20):
            start = int(task.arrival) + int(rng.integers(0, 3))
            changes = []
            for s in sorted(rng.choice(np.arange(start, start + 30), size=4, replace=False)):
                c, g = opts[int(rng.integers(len(opts)))] if rng.random() > 0.2 else (0, 0)
                changes.append((int(s), int(c), int(g)))
            changes[0] = (start, *opts[-1])
            assert _finish(p, j, start, changes) == task_finish(p, j, start, changes)
            checked += 1
    assert checked == 120


def test_trajectory_step_mirrors_the_step_rule():
    """Trajectory pricing's vectorised step (the compiled kernel's) gives the step rule's
    progress at every (progress, allocation) pair, with and without the switching loss."""
    inst = generate("placement", "synthetic-3", seed=2, num_tasks=4)
    p = inst.placement
    for j, task in enumerate(p.tasks):
        n = task.eligible[0]
        opt = Options(p, j, n)
        prog = np.array([0.0, 0.13, 0.5, 0.91])
        for k in (0, 3):
            for lossy in (False, True):
                got = opt.step(prog, opt.param, k, np.array(lossy))
                for r, q in enumerate(prog):
                    for c in range(len(opt.param)):
                        a = (int(opt.cpu[c]), int(opt.gpu[c]))
                        want = step_progress(p, j, a, float(q), k, (-1, -1) if lossy else a, first=False)
                        assert got[r, c] == pytest.approx(want, rel=1e-12, abs=1e-15)


def test_energy_front_relaxation_is_the_step_rule_without_loss():
    """bounds.lagrange.energy_front advances progress by ``increment * noise_factor`` (no
    switching loss): the step rule's first step (no loss), float for float."""
    inst = generate("placement", "synthetic-3", seed=0, num_tasks=3)
    p = inst.placement
    for j in range(len(p.tasks)):
        for c, g in semantics.allocation_options(p, j, p.tasks[j].eligible[0])[:5]:
            for prog in (0.0, 0.4):
                for k in (0, 5):
                    front = prog + semantics.increment(p, j, c, g, prog) * semantics.noise_factor(p, j, k)
                    assert step_progress(p, j, (c, g), prog, k, (0, 0), first=True) == front
