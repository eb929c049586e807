"""A test-only solver for the warm-worker tests, loaded as a suite plugin by the driver and
every worker; never imported by the package itself.

``test-pid`` appends "PID PPID" of the process it runs in to ``log`` and returns the random
baseline's solution; by ``mode`` it then misbehaves: ``abort`` (SIGABRT), ``leak`` (keeps a
module-level list growing by ``leak_mb`` MiB and chdir's to ``/``: what would poison a reused
process), ``spawn-hang`` (starts ``sleep 300`` in a new session, writes its pid to ``pidfile``,
then hangs).
"""

import os
import subprocess
import time

from edgebench.registry import get, make_result, register

_LEAKED: list[bytearray] = []


@register("test-pid", families=("placement", "mapping", "offloading"), kind="heuristic",
          description="test only: logs its process ids; may abort, leak or hang with a grandchild",
          choices={"mode": ("ok", "abort", "leak", "spawn-hang")})
def solve(instance, *, time_limit=None, seed=0, log: str = "", mode: str = "ok", leak_mb: int = 50,
          pidfile: str = ""):
    t0 = time.perf_counter()
    with open(log, "a") as fh:
        fh.write(f"{os.getpid()} {os.getppid()} {len(_LEAKED)} {os.getcwd()}\n")
    if mode == "abort":
        os.abort()
    if mode == "leak":
        _LEAKED.append(bytearray(leak_mb * 2 ** 20))
        os.chdir("/")
    if mode == "spawn-hang":
        p = subprocess.Popen(["sleep", "300"], start_new_session=True)
        with open(pidfile, "w") as fh:
            fh.write(str(p.pid))
        while True:
            time.sleep(1.0)
    base = get("random").fn(instance, seed=seed).solution
    return make_result(instance, "test-pid", status=base.status, decisions=base.decisions, seed=seed,
                       params={"mode": mode}, objective=base.objective, started=t0)
