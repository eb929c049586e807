"""What runs in a run's own process, and the process-tree helpers of the runner.

:func:`run_task` is the body of a run (in the process the worker's zygote,
:mod:`edgebench.runner.zygote`, forked for it): set the memory limit (RLIMIT_AS, inherited by
every process the solver starts), parse and validate the instance, call the solver, score its
solution with the referee, measure runtime, start-up (task hand-over to the solver's call) and
peak memory, and fill the result (:func:`record_solution`: reported values, compressed
solution, anytime trace, Pareto front re-scored by the referee). Also here: the environment
record of every run (:func:`environment`), and finding and killing a process tree
(:func:`descendants`, :func:`kill_processes`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import re
import resource
import time
import traceback
import zlib
from datetime import datetime, timezone
from typing import Any

from edgebench.errors import InputError
from edgebench.processes import children

#: package versions recorded with every run
PACKAGES = ("edgebench", "numpy", "scipy", "pydantic", "networkx", "ortools", "highspy", "pulp", "pyomo", "torch",
            "deap", "gymnasium")
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS")
#: at most this many points of an anytime trace are kept (evenly thinned, last point kept)
TRACE_POINTS = 200
#: a checkpoint's sha256 as a learned solver reports it (stats["checkpoint_sha256"])
SHA256 = re.compile(r"[0-9a-f]{64}")


def utcnow() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def environment() -> dict[str, Any]:
    """Package and solver-library versions, host and thread settings of this process."""
    from importlib.metadata import PackageNotFoundError, version

    versions: dict[str, str | None] = {"python": platform.python_version()}
    for p in PACKAGES:
        try:
            versions[p] = version(p)
        except PackageNotFoundError:
            versions[p] = None
    host = {"node": platform.node(), "cpus": os.cpu_count(), "platform": platform.platform(),
            "machine": platform.machine(), "cpu": _cpu_model()}
    threads = {k: os.environ.get(k) for k in THREAD_VARS}
    return {"versions": versions, "host": host, "threads": threads}


def env_hash(env: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(env, sort_keys=True).encode()).hexdigest()[:16]


# ---- memory ---------------------------------------------------------------------------


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # resets the peak resident set size (VmHWM) of this process
        return True
    except OSError:
        return False


def vm_hwm_mb(pid: int | str = "self") -> float | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return None


def _peak_mb(children_before: float) -> float | None:
    own = vm_hwm_mb()
    if own is None:  # no /proc: the process's lifetime peak
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    if kids > children_before:  # a solver subprocess (CBC) finished during this run
        own = max(own, kids)
    return round(own, 3)


# ---- results --------------------------------------------------------------------------


def _num(x: Any) -> float | None:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def close(a: float, b: float) -> bool:
    from edgebench.referee.common import ATOL, RTOL

    return abs(a - b) <= ATOL + RTOL * max(abs(a), abs(b))


def normalize_trace(stats: dict[str, Any]) -> list[list[float]] | None:
    """``stats["trace"]`` ([seconds, evaluations, best objective] rows) or
    ``stats["incumbent_trace"]`` ([seconds, objective] rows) -> [[seconds, objective], ...]."""
    raw = stats.get("trace")
    if raw is None:
        raw = stats.get("incumbent_trace")
    if not isinstance(raw, (list, tuple)) or not raw:
        return None
    pts = []
    for item in raw:
        if not isinstance(item, (list, tuple)) or len(item) < 2:
            continue
        t, v = _num(item[0]), _num(item[-1])
        if t is not None and v is not None:
            pts.append([round(t, 6), v])
    if not pts:
        return None
    if len(pts) > TRACE_POINTS:
        step = (len(pts) - 1) / (TRACE_POINTS - 1)
        pts = [pts[round(i * step)] for i in range(TRACE_POINTS)]
    return pts


def normalize_pareto(stats: dict[str, Any]) -> list[dict[str, float]] | None:
    """``stats["pareto"]``: a list of points (dicts of objective values; other keys, such as
    each point's solution, are dropped)."""
    raw = stats.get("pareto")
    if not isinstance(raw, (list, tuple)) or not raw:
        return None
    out = []
    for p in raw:
        if isinstance(p, dict):
            pt = {k: _num(v) for k, v in p.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            pt = {k: v for k, v in pt.items() if v is not None}
            if pt:
                out.append(pt)
    return out or None


#: Pareto points re-scored per run at most (mapping-pareto records 5 by default)
MAX_PARETO_POINTS = 100


def referee_pareto(stats: dict[str, Any], instance: Any) -> list[dict[str, float]] | None:
    """``stats["pareto"]`` re-scored by the referee (issue 28: a claimed front was shown as
    given): only points that carry their ``solution``, made for ``instance`` and feasible,
    are kept, with the referee's objective values in place of the claimed ones."""
    from edgebench.instances.io import solution_from_dict
    from edgebench.referee import evaluate

    raw = stats.get("pareto")
    if instance is None or not isinstance(raw, (list, tuple)):
        return None
    out = []
    for p in raw[:MAX_PARETO_POINTS]:
        if not isinstance(p, dict) or not isinstance(p.get("solution"), dict):
            continue
        try:
            ev = evaluate(instance, solution_from_dict(p["solution"], instance=instance))
        except InputError:
            continue
        if ev.feasible:
            pt = {k: _num(v) for k, v in ev.objectives.items()}
            out.append({k: v for k, v in pt.items() if v is not None})
    return normalize_pareto({"pareto": out})


def _set_memory_limit(mb: float | None) -> None:
    if not mb:
        return
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    limit = int(mb * 1024 * 1024)
    if hard != resource.RLIM_INFINITY and limit > hard:
        limit = hard
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def run_task(task: dict[str, Any], t_fork: float, on_start: Any = None) -> dict[str, Any]:
    """Run one task in this process (a run's own child of the zygote): set the memory limit,
    load the instance, solve, score with the referee, measure. ``t_fork`` (``time.monotonic``)
    is when the zygote forked this process: ``startup`` is the time from there to the solver's
    call; ``on_start(monotonic)`` is called just before the solver starts."""
    from edgebench import registry
    from edgebench.instances.io import instance_from_dict
    from edgebench.referee import evaluate

    out: dict[str, Any] = {"type": "result", "key": task["key"], "started": utcnow(), "status": "error",
                           "feasible": 0, "message": None}
    _set_memory_limit(task.get("memory_limit_mb"))  # also bounds the instance's parsing
    inst = instance_from_dict(json.loads(task["instance"]))
    info = registry.get(task["solver"])
    fn = info.fn
    _reset_peak()
    sol = None
    ev = None
    t_start = time.monotonic()
    out["startup"] = t_start - t_fork
    if on_start is not None:
        on_start(t_start)
    t0 = time.perf_counter()
    try:
        res = fn(inst, time_limit=task["time_limit"], seed=task["seed"], **task["params"])
        out["runtime"] = time.perf_counter() - t0
        sol = res.solution
        out["solver_wall"] = _num(res.runtime)
        out["status"] = sol.status
    except MemoryError:
        out.update(status="memory", message="MemoryError (memory limit reached)")
    except Exception as exc:  # a solver bug is a result, not the end of the sweep
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" at {tb[-1].filename}:{tb[-1].lineno}" if tb else ""
        out.update(status="error", message=f"{type(exc).__name__}: {exc}{where}"[:2000])
    if sol is not None:
        try:
            ev = evaluate(inst, sol)
        except MemoryError:
            out.update(status="memory", message="MemoryError in the referee (memory limit reached)")
        except InputError as err:
            out.update(status="error", message=f"the solver's solution does not fit the instance: {err}")
    out.setdefault("runtime", time.perf_counter() - t0)
    out["peak_mem_mb"] = _peak_mb(0.0)
    if sol is not None:
        record_solution(out, sol, ev, inst)
    out["finished"] = utcnow()
    return out


def record_solution(out: dict[str, Any], sol: Any, ev: Any, instance: Any = None) -> None:
    """Fill a result with a solution's reported values, its compressed JSON and the referee's
    verdict ``ev`` (None when the referee could not score it).

    A solver's bound is stored only where an exact model's bound is a bound of the referee's
    problem on this instance (:func:`edgebench.runner.bounds.solver_bound_applies`): the
    placement MILP's bound holds for fixed-allocation schedules only, the mapping model's for
    simultaneously active jobs only. Elsewhere the bound is dropped and ``restricted`` set, so
    that an ``optimal`` claim is kept as ``claimed_status`` and never counted as a proof."""
    from edgebench.instances.io import canonical_json
    from edgebench.runner.bounds import solver_bound_applies

    out["reported_objective"] = _num(sol.objective)
    out["bound"] = _num(sol.bound)
    if instance is not None and not solver_bound_applies(instance, getattr(sol, "solver", None)):
        out["restricted"] = True
        out["bound"] = None
    msg = sol.stats.get("message")
    if out["message"] is None and isinstance(msg, str):
        out["message"] = msg[:500]
    ck = sol.stats.get("checkpoint_sha256")  # a learned solver's checkpoint file (the store's checkpoint column)
    out["checkpoint"] = ck if isinstance(ck, str) and SHA256.fullmatch(ck) else None
    try:
        out["solution"] = zlib.compress(canonical_json(sol).encode("utf-8"), 6)
    except (TypeError, ValueError) as exc:  # stats that are not JSON data
        out["solution"] = None
        out["message"] = f"solution not stored: {exc}"
    if ev is not None:
        value = ev.objectives.get(ev.primary)
        out.update(feasible=int(bool(ev.feasible)), primary_value=_num(value),
                   objectives=json.dumps({k: _num(v) for k, v in ev.objectives.items()}, sort_keys=True),
                   violations=len(ev.violations))
        rep = out["reported_objective"]
        units_ok = bool(ev.feasible and rep is not None and out["primary_value"] is not None
                        and close(rep, out["primary_value"]))
        out["units_ok"] = int(units_ok)
        if units_ok:
            trace = normalize_trace(sol.stats)
            out["trace"] = json.dumps(trace) if trace else None
        pareto = referee_pareto(sol.stats, instance)
        out["pareto"] = json.dumps(pareto) if pareto else None


# ---- process trees ---------------------------------------------------------------------


def descendants(pid: int | None = None, *, group: bool = True) -> list:
    """psutil processes below ``pid`` (this process by default) and, with ``group`` and when
    ``pid`` leads its process group (a worker does), every other member of that group — what
    escaped the tree without a subreaper. Fast path: ``/proc/PID/task/*/children``."""
    import psutil

    root_pid = os.getpid() if pid is None else pid
    pids: set[int] = set()
    todo = [root_pid]
    while todo:
        kids = children(todo.pop())
        if kids is None:  # no /proc children files: psutil scans the process table
            try:
                pids = {p.pid for p in psutil.Process(root_pid).children(recursive=True)}
            except psutil.Error:
                pids = set()
            break
        todo += [k for k in kids if k not in pids]
        pids.update(kids)
    if group:
        try:
            pgid = os.getpgid(root_pid)
        except OSError:
            pgid = None
        if pgid == root_pid:  # a group leader (not: the group is someone else's, a shell's)
            for q in psutil.pids():
                try:
                    if q != root_pid and q not in pids and os.getpgid(q) == pgid:
                        pids.add(q)
                except OSError:
                    pass
    out = []
    for q in pids:
        try:
            out.append(psutil.Process(q))
        except psutil.Error:
            pass
    return out


def kill_processes(procs: list) -> int:
    """SIGKILL ``procs`` and reap them; returns how many were still running."""
    import psutil

    n = 0
    for p in procs:
        try:
            running = p.status() != psutil.STATUS_ZOMBIE  # an exited child not yet reaped
            p.kill()
            n += running
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=5)
    return n
