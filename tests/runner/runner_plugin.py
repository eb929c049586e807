"""A test-only solver for the runner's tests, loaded as a suite plugin (``plugins = [...]``)
by the driver and every worker; never imported by the package itself.

``test-sleep`` sleeps ``sleep`` seconds and then returns the Random baseline's solution; its
``mode`` makes it misbehave on purpose: ``hang`` (never returns: the hard kill), ``crash``
(abort: SIGABRT), ``memory`` (allocates ``alloc_mb`` MiB: a MemoryError under the suite's
memory limit), ``raise`` (a Python exception).
"""

import os
import time

from edgebench.registry import get, make_result, register


@register("test-sleep", families=("placement", "mapping", "offloading"), kind="heuristic",
          description="test only: sleep, then the random baseline; or hang / crash / exhaust memory / raise")
def solve(instance, *, time_limit=None, seed=0, sleep=0.0, mode="ok", alloc_mb=4096):
    t0 = time.perf_counter()
    if mode == "hang":
        while True:
            time.sleep(1.0)
    if mode == "crash":
        os.abort()
    if mode == "memory":
        blob = bytearray(alloc_mb * 1024 * 1024)
        blob[-1] = 1
    if mode == "raise":
        raise RuntimeError("test-sleep was told to raise")
    time.sleep(float(sleep))
    base = get("random").fn(instance, seed=seed).solution
    return make_result(instance, "test-sleep", status=base.status, decisions=base.decisions, seed=seed,
                       params={"sleep": sleep, "mode": mode}, objective=base.objective, started=t0,
                       stats={"trace": [[0.001, 1, base.objective], [0.002, 2, base.objective]]}
                       if base.objective is not None else {})
