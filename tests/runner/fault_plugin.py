"""Test-only misbehaving solvers for the runner's fault-injection test, loaded as a suite
plugin by the driver and every worker; never imported by the package itself.

``test-fault`` (kind heuristic) misbehaves by ``mode``: ``ok`` (the random baseline),
``raise``, ``hang``, ``exit`` (``os._exit``), ``alloc`` (asks for ``alloc_gb`` GiB at once),
``closefds`` (closes the worker's stdin and its task pipe, then returns a good solution),
``child`` / ``child-hang`` (leaves a grandchild in a new session that sleeps, writing its pid to
``pidfile``; then returns / hangs), ``liar`` (claims ``optimal`` with a matching bound).
``test-fault-exact`` (kind exact) claims ``optimal`` with a NaN objective and bound.
``test-count`` appends one line per run to ``log`` (to count runs across runners).
"""

import math
import os
import subprocess
import sys
import time

from edgebench.registry import get, make_result, register


def _base(instance, seed):
    return get("random").fn(instance, seed=seed).solution


@register("test-fault", families=("placement", "mapping", "offloading"), kind="heuristic",
          description="test only: a solver that misbehaves on purpose",
          choices={"mode": ("ok", "raise", "hang", "exit", "alloc", "closefds", "child", "child-hang", "liar")})
def solve(instance, *, time_limit=None, seed=0, mode: str = "ok", alloc_gb: float = 30.0, pidfile: str = ""):
    t0 = time.perf_counter()
    if mode == "raise":
        raise RuntimeError("test-fault was told to raise")
    if mode == "hang":
        while True:
            time.sleep(1.0)
    if mode == "exit":
        os._exit(7)
    if mode == "alloc":
        blob = bytearray(int(alloc_gb * 2 ** 30))
        blob[-1] = 1
    if mode in ("child", "child-hang"):
        # a grandchild in its own session (double fork through the shell), outliving the solver
        subprocess.run(["/bin/sh", "-c", f"setsid sleep 300 & echo $! > {pidfile}"], check=True)
        if mode == "child-hang":
            while True:
                time.sleep(1.0)
    if mode == "closefds":
        os.close(0)
        os.close(int(sys.argv[1]))  # the worker's task pipe (python -m edgebench.runner.zygote IN OUT)
    base = _base(instance, seed)
    status, bound = base.status, None
    if mode == "liar":
        status, bound = "optimal", base.objective
    return make_result(instance, "test-fault", status=status, decisions=base.decisions, seed=seed,
                       params={"mode": mode}, objective=base.objective, bound=bound, started=t0)


@register("test-fault-exact", families=("placement", "mapping", "offloading"), kind="exact", time_limit=None,
          description="test only: claims optimal with a NaN objective and bound")
def solve_nan(instance, *, time_limit=None, seed=0):
    t0 = time.perf_counter()
    base = _base(instance, seed)
    return make_result(instance, "test-fault-exact", status="optimal", decisions=base.decisions, seed=seed,
                       objective=math.nan, bound=math.nan, started=t0)


@register("test-count", families=("placement", "mapping", "offloading"), kind="heuristic",
          description="test only: the random baseline, logging each run to a file")
def solve_count(instance, *, time_limit=None, seed=0, log: str = "", sleep: float = 0.0):
    t0 = time.perf_counter()
    with open(log, "a") as fh:
        fh.write(f"{instance.id} {seed} {os.getppid()}\n")
    time.sleep(sleep)
    base = _base(instance, seed)
    return make_result(instance, "test-count", status=base.status, decisions=base.decisions, seed=seed,
                       objective=base.objective, started=t0)
