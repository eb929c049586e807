"""The placement timestep simulator: the referee's progress model, the pending-set rules,
the API's checks, and the metrics."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgebench.instances import io, semantics
from edgebench.instances.generators import generate
from edgebench.referee import evaluate_decisions
from edgebench.solvers.placement_sim import PlacementSim, SimError, Stalled, run_policy

GOOD = Path(__file__).resolve().parents[1] / "data" / "good"


def _tiny_dict() -> dict:
    return json.loads((GOOD / "placement_tiny.json").read_text())


class ChaosPolicy:
    """Random starts plus random re-allocations and pauses of running tasks (test only)."""

    def __init__(self, seed: int, p_change: float = 0.3, p_pause: float = 0.25):
        self.rng = np.random.default_rng(seed)
        self.p_change = p_change
        self.p_pause = p_pause

    def reset(self, sim):
        pass

    def act(self, sim) -> bool:
        rng = self.rng
        for n in rng.permutation(sim.num_clusters):
            n = int(n)
            # re-allocate / pause / resume running tasks (not those started in this step)
            for j in sim.running(n):
                if sim.start_step(j) == sim.t or rng.random() > self.p_change:
                    continue
                c0, g0 = sim.allocation(j)
                fc, fg, fm = sim.free(n)
                if (c0, g0) != (0, 0) and rng.random() < self.p_pause:
                    sim.reallocate(j, 0, 0)
                    continue
                hi_c, hi_g = c0 + fc, g0 + fg
                if (c0, g0) == (0, 0) and fm is not None and sim.min_mem[j] is not None and sim.min_mem[j] > fm:
                    continue
                if hi_c < sim.min_cpu[j] or hi_g < sim.min_gpu[j]:
                    continue
                c = int(rng.integers(sim.min_cpu[j], hi_c + 1))
                g = int(rng.integers(sim.min_gpu[j], hi_g + 1))
                sim.reallocate(j, c, g)
            # at most one start per cluster (several rounds in variant multi)
            for _ in range(3 if sim.multi else 1):
                cands = sim.pending(n)
                rng.shuffle(cands)
                for j in cands:
                    fc, fg, _ = sim.free(n)
                    if fc < sim.min_cpu[j] or fg < sim.min_gpu[j]:
                        continue
                    c = int(rng.integers(sim.min_cpu[j], fc + 1))
                    g = int(rng.integers(sim.min_gpu[j], fg + 1))
                    if sim.fits(j, n, c, g) and sim.run_steps(j, c, g) is not None:
                        sim.start(j, n, c, g)
                        break
        return False


def _resume_if_all_paused(sim) -> None:
    for n in range(sim.num_clusters):
        for j in sim.running(n):
            if sim.allocation(j) == (0, 0):
                fc, fg, _ = sim.free(n)
                if fc >= sim.min_cpu[j] and fg >= sim.min_gpu[j]:
                    sim.reallocate(j, sim.min_cpu[j], sim.min_gpu[j])


def _run_chaos(inst, seed: int) -> PlacementSim:
    sim = PlacementSim(inst)
    pol = ChaosPolicy(seed)
    pol.reset(sim)
    while not sim.done:
        pol.act(sim)
        if all(sim.allocation(j) == (0, 0) for n in range(sim.num_clusters) for j in sim.running(n)):
            _resume_if_all_paused(sim)
        if sim.t > 5000:
            raise AssertionError("chaos episode did not end")
        if not any(sim.running(n) for n in range(sim.num_clusters)) and not any(
                sim.pending(n) for n in range(sim.num_clusters)):
            sim.skip_idle()
        else:
            sim.step()
    return sim


CASES = [
    ("synthetic-3", {"num_tasks": 40}),
    ("synthetic-3", {"num_tasks": 40, "variant": "multi"}),
    ("synthetic-3", {"num_tasks": 30, "switching_overhead": 0.0, "pending_size": 2}),
    ("hetero-6", {"num_tasks": 40}),
    ("sjf-ablation", {"num_tasks": 30}),
]


@pytest.mark.parametrize("preset,overrides", CASES, ids=[f"{p}-{i}" for i, (p, _) in enumerate(CASES)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reallocating_and_pausing_policy_matches_the_referee(preset, overrides, seed):
    inst = generate("placement", preset, seed=seed, **overrides)
    sim = _run_chaos(inst, seed)
    dec = sim.decisions()
    assert any(d.history is not None for d in dec.tasks), "the policy re-allocated something"
    assert any(any(h.cpu == 0 and h.gpu == 0 for h in d.history or ()) for d in dec.tasks), "and paused"
    ev = evaluate_decisions(inst, dec)
    assert ev.feasible, [v.message for v in ev.violations[:5]]
    assert ev.details["finish"] == [sim.finish_step(j) for j in range(sim.num_tasks)]
    total = sim.total_completion_time()
    assert total == ev.objectives["total_completion_time"]
    m = sim.metrics
    # the TapFinger reward identity: total completion time = sum over steps of tasks in system
    assert int(m["in_system"].sum()) == total
    assert m["in_system"].tolist() == ev.details["in_system"]
    assert float(m["cpu_util"].mean()) == pytest.approx(ev.objectives["cpu_utilisation"])
    assert float(m["gpu_util"].mean()) == pytest.approx(ev.objectives["gpu_utilisation"])
    assert (m["running"] + m["paused"] + m["waiting"] == m["in_system"]).all()
    assert m["paused"].max() > 0


def test_tiny_instance_with_memory_matches_the_referee():
    d = _tiny_dict()
    d["placement"]["noise"] = 0.1
    for c in d["placement"]["clusters"]:
        c["capacity"]["memory"] = 10
    for t in d["placement"]["tasks"]:
        t["minimum"]["memory"] = 4
    inst = io.instance_from_dict(d)
    for seed in range(5):
        sim = _run_chaos(inst, seed)
        ev = evaluate_decisions(inst, sim.decisions())
        assert ev.feasible, [v.message for v in ev.violations[:5]]
        assert ev.details["finish"] == [sim.finish_step(j) for j in range(sim.num_tasks)]


def test_run_steps_is_fixed_run_steps():
    inst = generate("placement", "synthetic-3", seed=3, num_tasks=12)
    sim = PlacementSim(inst)
    for j in range(12):
        for c, g in [(2, 1), (4, 4), (8, 16), (16, 16), (3, 7)]:
            assert sim.run_steps(j, c, g) == semantics.fixed_run_steps(inst.placement, j, c, g)
    assert sim.run_steps(0, 1, 1) is None  # below the minimum
    assert sim.probe(0, 2, 1, k=3) == pytest.approx(
        semantics.increment(inst.placement, 0, 2, 1, 0.0) * semantics.noise_factor(inst.placement, 0, 3))


def test_progress_counters_and_attained_service():
    inst = io.instance_from_dict(_tiny_dict())  # no noise; lm: tanh(min(g, c/2)/4) sqrt(1.2 - p)
    p = inst.placement
    sim = PlacementSim(inst)
    assert sim.t == 0 and sim.pending(0) == [0] and sim.pending(1) == [0, 1]
    sim.start(0, 0, 2, 1)
    assert sim.pending(1) == [1], "a started task leaves every pending set"
    sim.start(1, 1, 2, 1)
    sim.step()
    inc0 = semantics.increment(p, 0, 2, 1, 0.0)
    assert sim.progress(0) == pytest.approx(inc0) and sim.executed_steps(0) == 1 and sim.attained_gpu(0) == 1
    sim.reallocate(0, 0, 0)  # pause
    sim.step()
    sim.step()
    assert sim.progress(0) == pytest.approx(inc0) and sim.executed_steps(0) == 1 and sim.attained_gpu(0) == 1
    sim.reallocate(0, 4, 2)  # resume: a change, the step's gain is halved
    sim.step()
    inc1 = semantics.increment(p, 0, 4, 2, inc0) * (1 - p.switching_overhead)
    assert sim.progress(0) == pytest.approx(inc0 + inc1)
    assert sim.executed_steps(0) == 2 and sim.attained_gpu(0) == 3
    assert sim.elapsed(0) == 4 and sim.elapsed(2) == 0
    assert sim.in_system() == 6 - sum(sim.is_finished(j) for j in range(6))  # all six arrived by step 4
    hist = sim.decisions().tasks[0].history
    assert [(h.step, h.cpu, h.gpu) for h in hist] == [(0, 2, 1), (1, 0, 0), (3, 4, 2)]
    assert sim.decisions().tasks[1].history is None and sim.decisions().tasks[1].cpu == 2


def test_reallocation_back_in_the_same_step_is_no_change():
    inst = io.instance_from_dict(_tiny_dict())
    sim = PlacementSim(inst)
    sim.start(0, 0, 2, 1)
    sim.step()
    sim.reallocate(0, 4, 2)
    sim.reallocate(0, 2, 1)  # back to the allocation of the previous step
    assert sim.decisions().tasks[0].history is None
    sim.reallocate(0, 3, 1)
    sim.reallocate(0, 0, 0)
    assert [(h.step, h.cpu, h.gpu) for h in sim.decisions().tasks[0].history] == [(0, 2, 1), (1, 0, 0)]


def test_pending_set_is_taken_at_the_beginning_of_the_step():
    d = _tiny_dict()
    d["placement"]["pending_size"] = 1
    d["placement"]["variant"] = "multi"
    inst = io.instance_from_dict(d)
    sim = PlacementSim(inst)
    assert sim.pending(1) == [0]
    sim.start(0, 0, 2, 1)
    assert sim.pending(1) == [], "not refilled within the step"
    assert sim.waiting(1) == [1]
    with pytest.raises(SimError, match="pending set"):
        sim.start(1, 1, 2, 1)
    sim.step()
    assert sim.pending(1) == [1]


def test_api_checks():
    inst = io.instance_from_dict(_tiny_dict())
    sim = PlacementSim(inst)
    with pytest.raises(SimError, match="pending set"):
        sim.start(2, 0, 2, 1)  # arrives at step 1
    with pytest.raises(SimError, match="minimum"):
        sim.start(0, 0, 1, 1)
    with pytest.raises(SimError, match="free resources"):
        sim.start(0, 0, 5, 1)  # cluster 0 has 4 cpu
    sim.start(0, 0, 4, 4)
    assert sim.free(0) == (0, 0, None)
    with pytest.raises(SimError, match="cannot be paused in its start step"):
        sim.reallocate(0, 0, 0)
    sim.reallocate(0, 2, 2)  # still the start step: replaces the start allocation
    assert sim.decisions().tasks[0].cpu == 2 and sim.decisions().tasks[0].history is None
    sim.start(1, 1, 2, 1)
    sim.step()
    assert sim.pending(0) == [2, 3]
    sim.start(3, 0, 2, 2)
    with pytest.raises(SimError, match="variant 'single'"):
        sim.start(2, 0, 2, 1)
    with pytest.raises(SimError, match="below its minimum"):
        sim.reallocate(0, 2, 0)
    with pytest.raises(SimError, match="capacity"):
        sim.set_allocations(0, {0: (4, 4)})  # task 3 holds (2, 2) of cluster 0 now
    sim.set_allocations(0, {0: (2, 1), 3: (2, 3)})  # one shrinks while the other grows
    assert sim.free(0) == (0, 0, None)


def test_single_variant_one_start_per_cluster_and_step():
    inst = io.instance_from_dict(_tiny_dict())
    sim = PlacementSim(inst)
    sim.start(1, 1, 2, 1)
    with pytest.raises(SimError, match="variant 'single'"):
        sim.start(0, 1, 2, 1)
    sim.start(0, 0, 2, 1)  # another cluster may


def test_skip_idle_equals_stepping():
    inst = generate("placement", "synthetic-3", seed=5, num_tasks=30)

    class Greedy:
        def reset(self, sim):
            pass

        def act(self, sim):
            started = False
            for n in range(sim.num_clusters):
                for j in sim.pending(n):
                    if sim.fits(j, n, sim.min_cpu[j], sim.min_gpu[j]):
                        sim.start(j, n, sim.min_cpu[j], sim.min_gpu[j])
                        started = True
                        break
            return not started

    fast = run_policy(PlacementSim(inst), Greedy())

    class NoSkip(Greedy):
        def act(self, sim):
            super().act(sim)
            return False

    slow = run_policy(PlacementSim(inst), NoSkip())
    assert fast.decisions() == slow.decisions()
    for key in ("in_system", "running", "waiting", "cpu_used", "gpu_used"):
        assert np.array_equal(fast.metrics[key], slow.metrics[key]), key


def test_stalled_when_every_task_is_paused():
    inst = io.instance_from_dict(_tiny_dict())
    sim = PlacementSim(inst)
    sim.start(0, 0, 2, 1)
    sim.step()
    sim.reallocate(0, 0, 0)
    for _ in range(6):
        sim.step()
    with pytest.raises(Stalled):
        sim.skip_idle()

    class Idle:
        def reset(self, sim):
            pass

        def act(self, sim):
            return False

    with pytest.raises(Stalled):
        run_policy(PlacementSim(inst), Idle(), max_idle_steps=50)


def test_decisions_of_an_unfinished_episode_mark_unplaced_tasks():
    inst = io.instance_from_dict(_tiny_dict())
    sim = PlacementSim(inst)
    sim.start(0, 0, 2, 1)
    dec = sim.decisions()
    assert dec.tasks[0].cluster == 0 and dec.tasks[1].cluster is None
    assert not sim.done and sim.finish_step(0) is None and sim.completion_times()[1] is None
