"""A test-only learned solver for ``edgebench run --rerun stale`` (issue 46 item 1), loaded as a
suite plugin by the driver and every worker; never imported by the package itself.

``test-learned`` "loads" the checkpoint file named by ``$EDGEBENCH_TEST_CHECKPOINT`` (its
provenance, as the registry lists it, is that one file with its sha256) and returns the Random
baseline's solution, reporting the file's sha256 as the learned solvers do
(``stats["checkpoint_sha256"]``).
"""

import os
import time
from pathlib import Path

from edgebench.learned.provenance import sha256_file
from edgebench.registry import get, make_result, register


def checkpoint_file() -> Path:
    return Path(os.environ["EDGEBENCH_TEST_CHECKPOINT"])


def provenance():
    p = checkpoint_file()
    return [{"file": p.name, "preset": "tiny", "variant": "single", "algorithm": "bc", "env_steps": 0,
             "sha256": sha256_file(p)}]


@register("test-learned", families=("placement", "mapping", "offloading"), kind="learned",
          description="test only: the random baseline, reporting the sha256 of $EDGEBENCH_TEST_CHECKPOINT",
          provenance=provenance)
def solve(instance, *, time_limit=None, seed=0):
    t0 = time.perf_counter()
    base = get("random").fn(instance, seed=seed).solution
    return make_result(instance, "test-learned", status=base.status, decisions=base.decisions, seed=seed,
                       objective=base.objective, started=t0,
                       stats={"checkpoint_sha256": sha256_file(checkpoint_file())})
