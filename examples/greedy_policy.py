"""A worked example of an online policy (docs/policies.md): one decision at each event, read
from the environments' observations, for all three families. Load it as a plugin:

    edgebench solve INSTANCE --plugin examples/greedy_policy.py --solver greedy-policy -o sol.json
    edgebench run --plugin examples/greedy_policy.py --instances mapping-thesis-v1 --solvers greedy-policy,random

The rules (deliberately simple; every action the mask allows keeps the episode feasible):

* mapping, map phase: the allowed physical node with the most free CPU + RAM (spread);
  bandwidth phase: the highest allowed bandwidth level;
* offloading: the allowed server where the task's input delay plus duration is smallest,
  plus a penalty for the tasks already queued there;
* placement: the last allowed start — the highest pending slot at the largest allowed
  allocation (action = slot x G + cpu x (cap_gpu + 1) + gpu) — else wait (the void action).
"""

import numpy as np

from edgebench.learned.envs.mapping import DECISION_FEATURES
from edgebench.learned.envs.offloading import SERVER_FEATURES
from edgebench.policy import Observation, policy_solver

PHASE = DECISION_FEATURES.index("phase")
T_TRANS, T_EXEC, LOAD = (SERVER_FEATURES.index(k) for k in ("t_trans", "t_exec", "load"))


def best_allowed(scores: np.ndarray, mask: np.ndarray) -> int:
    """The allowed action of highest score (ties: the lowest index)."""
    scores = np.where(mask[: len(scores)] == 1, scores, -np.inf)
    return int(np.argmax(scores))


@policy_solver("greedy-policy", kind="heuristic",
               description="example online policy (examples/greedy_policy.py): spread / fastest server / largest start")
def policy(obs: Observation) -> int:
    mask = obs["action_mask"]
    if "decision" in obs:  # mapping
        if obs["decision"][PHASE] == 0:
            free = obs["nodes"][:, 0] + obs["nodes"][:, 1]
            return best_allowed(free, mask)
        return int(np.flatnonzero(mask)[-1])  # highest allowed bandwidth level
    if "servers" in obs:  # offloading
        s = obs["servers"]
        return best_allowed(-(s[:, T_TRANS] + s[:, T_EXEC] + s[:, LOAD]), mask)
    starts = np.flatnonzero(mask[:-1])  # placement: the last action is the void action (wait)
    return int(starts[-1]) if starts.size else len(mask) - 1
