"""The pending rows' plan features (``--plan-features``, generic inputs; issue 42, session 25;
learned/tapfinger_features.py, ``PLAN_FEATURES``): each row's block is what the step's shared plan
of the windows (``placement-list-window``'s ``window_plan``) does with the task; along the list
expert's own episode the task it starts is the one its agent sees as planned here now; a model
behaviour-cloned from ``placement-list-window`` with it trains, exports and plays through the
solver; the shipped file plays through its own solver. That the block only appends and refuses bad
values: test_tapfinger_pending_blocks.py."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from edgebench import registry  # noqa: E402
from edgebench.cli import main  # noqa: E402
from edgebench.instances.generators import generate  # noqa: E402
from edgebench.learned import tapfinger as tf  # noqa: E402
from edgebench.learned.tapfinger_features import PLAN_FEATURES, log_time  # noqa: E402
from edgebench.learned.train_tapfinger import transfer_layout  # noqa: E402
from edgebench.referee import evaluate as evaluate_solution  # noqa: E402
from edgebench.solvers import placement_list_window as lw  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_deterministic")

H6 = dict(variant="single", num_tasks=40, switching_overhead=0, max_eligible=6, noise=0)
CFG = tf.ModelConfig(hidden=16, layers=1, heads=2, pointer_layers=1, inputs="generic")


def _rows(obs, lay):
    P, W = lay.pending_size, lay.pend_width
    return obs["observation"][tf.N_CLUSTER:tf.N_CLUSTER + P * W].reshape(P, W)


def test_plan_features_are_the_step_s_window_plan():
    """Along an episode of drawn actions: every row's block is (planned here, planned here now,
    log_time of the planned wait) of a plan re-made from scratch on the env's simulator."""
    inst = generate("placement", "hetero-6", seed=5, **H6)
    env = tf.make_env(inst, inputs="generic", plan=True)
    lay = tf.generic_layout(env)
    assert lay.plan == len(PLAN_FEATURES) == 3 and lay.cross == 0
    rng = np.random.default_rng(1)
    obs, _ = env.reset(seed=0)
    seen = {"now": 0, "here later": 0, "elsewhere": 0}
    while env.agents:
        sim = env.sim
        plan = lw.window_plan(sim, lw.Planner(inst.placement))
        for a in env.agents:
            n = int(a.split("_")[1])
            rows = _rows(obs[a], lay)
            for slot, j in enumerate(sim.pending(n)[:lay.pending_size]):
                k, tau = plan[j][:2]
                want = [float(k == n), float(k == n and tau == sim.t), float(log_time(tau - sim.t))]
                assert rows[slot, -3:] == pytest.approx(want, abs=1e-7), (a, j)
                seen["now" if want[1] else "here later" if want[0] else "elsewhere"] += 1
            assert not rows[len(sim.pending(n)[:lay.pending_size]):].any()
            assert (rows[:, -2] == 1).sum() <= 1  # single variant: one planned start per cluster and step
        obs, *_ = env.step({a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents})
    assert all(v > 0 for v in seen.values()), seen


@pytest.mark.parametrize("variant", ["single", "multi"])
def test_the_list_expert_starts_what_its_agent_sees_planned_here_now(variant):
    """The expert's replay through the plan env: every start it makes is a task whose row shows
    plan_now = 1 to the starting cluster's agent (the features name the expert's action)."""
    inst = generate("placement", "hetero-6", seed=8, **{**H6, "variant": variant})
    res = registry.solve(inst, lw.SOLVER_NAME)
    start = {i: (d.cluster, d.start, d.cpu, d.gpu) for i, d in enumerate(res.solution.decisions.tasks)}
    env = tf.make_env(inst, inputs="generic", plan=True)
    lay = tf.generic_layout(env)
    obs, _ = env.reset(seed=0)
    starts = 0
    sim = env.sim
    while env.agents:
        acts = {}
        for a in env.agents:
            n = int(a.split("_")[1])
            rows = _rows(obs[a], lay)
            acts[a] = int(np.flatnonzero(obs[a]["action_mask"])[-1])  # the void action (the mask's last)
            for slot, j in enumerate(sim.pending(n)[:lay.pending_size]):
                k, s, c, g = start[j]
                if k == n and s == sim.t:
                    assert rows[slot, -2] == 1.0, (a, j, sim.t)
                    G = (lay.caps[n][0] + 1) * (lay.caps[n][1] + 1)
                    acts[a] = slot * G + c * (lay.caps[n][1] + 1) + g
                    starts += 1
                    break
        obs, *_ = env.step(acts)
    assert starts == len(inst.placement.tasks)  # every start made by the actions above, at its step
    ev = evaluate_solution(inst, res.solution)
    assert ev.feasible and sim.total_completion_time() == ev.objectives["total_completion_time"]


def test_a_plan_model_is_behaviour_cloned_from_the_list_rule(tmp_path, capsys):
    out, exp = tmp_path / "run", tmp_path / "x.pt"
    cli = ["train", "tapfinger", "--preset", "hetero-6", "--variant", "single", "--set", "num_tasks=12",
           "--set", "max_eligible=6", "--set", "switching_overhead=0", "--set", "noise=0", "--seed", "3",
           "--num-envs", "2", "--rollout-steps", "8", "--epochs", "1", "--minibatch", "16", "--eval-every", "0",
           "--eval-episodes", "1", "--device", "cpu", "--hidden", "16", "--layers", "1", "--heads", "2",
           "--inputs", "generic", "--plan-features", "--bc-instances", "2", "--bc-epochs", "1",
           "--expert", "list-window", "--bc-cache", "none", "--out", str(out)]
    assert main(cli + ["--steps", "16", "--export", str(exp)]) == 0
    capsys.readouterr()
    model, lay, blob = tf.load_checkpoint(exp)
    assert lay.plan == 3 and "--plan-features" in blob["extra"]["command"]
    assert "--expert list-window" in blob["extra"]["command"]
    inst = generate("placement", "hetero-6", seed=9, **{**H6, "num_tasks": 20})
    res = registry.solve(inst, "tapfinger", seed=0, checkpoint=str(exp))
    ev = evaluate_solution(inst, res.solution)
    assert res.status in ("feasible", "optimal") and ev.feasible


def test_the_shipped_plan_file_plays_through_its_solver():
    """``tapfinger-plan-bc`` finds its shipped file (hetero-6 single) unasked, plays a held-out
    instance to the referee's value, and its decisions are the model's on a plan env."""
    inst = generate("placement", "hetero-6", seed=10**9 + 3, **{**H6, "num_tasks": 30})
    res = registry.solve(inst, "tapfinger-plan-bc", seed=0)
    ev = evaluate_solution(inst, res.solution)
    assert res.status == "feasible" and ev.feasible
    assert res.solution.stats["checkpoint"] == "tapfinger-plan-bc-hetero-6-single.pt"
    model, lay, blob = tf.load_checkpoint(tf.CHECKPOINT_DIR / "tapfinger-plan-bc-hetero-6-single.pt")
    assert lay.plan == 3 and "--plan-features" in blob["extra"]["command"]
    env = tf.make_env(inst, inputs="generic", plan=True)
    ep = tf.run_episode(model, env, tf.generic_layout(env), seed=0)
    assert ep["mean_ct"] == pytest.approx(ev.objectives["mean_completion_time"], rel=1e-12)
