"""The worker process: ``python -m edgebench.runner.worker IN_FD OUT_FD``, a warm "zygote".

Started by :mod:`edgebench.runner.execute` (locally, or inside a Dask worker) in its own
session / process group. It imports once what the sweep's runs need (the solver modules the
plan names, the suite's plugins, the compiled kernels when a planned solver calls them) and
then forks ONE CHILD PER RUN: each run has its own process (a crash, a leak, closed files or a
changed working directory end with it), yet starts in milliseconds, with every module already
imported. The child is forked ahead (:class:`Spare`, while the zygote waits for the task): the
fork of a large process (tens of milliseconds to copy its page tables) is on no run's path.
Messages (pickled) on ``IN_FD`` / ``OUT_FD``:

1. ``init`` -> ``{"type": "ready", "env": ..., "env_hash": ..., "load_errors": ...}``;
2. a task -> its result: the solver's run, scored by the referee, with runtime, start-up, peak
   memory, anytime trace, Pareto front and the compressed solution; or ``{"type": "died"}``
   with the exit code of a child that ended without a result (the driver names the cause).

Time limits, end to end. The child measures its start-up (from receiving its task to the solver's
call: setting the memory limit, parsing and validating the instance, looking up the solver;
the process itself was forked before) and tells the zygote
when the solver's clock starts. The zygote kills the child's whole tree when the start-up
exceeds the task's ``startup_allowance``, or ``kill_after`` seconds after the solver started
(status ``killed``): the hard kill counts from the solver's start, and start-up is bounded
separately. The driver keeps a safety net over the zygote itself.

Fences: the memory limit (RLIMIT_AS) is set in the child when its task arrives, so the child and
every process it starts inherit it; the zygote is a child subreaper (``PR_SET_CHILD_SUBREAPER``),
so processes a solver leaves behind — even double-forked, in a new session — become its
children and are killed when the run ends; a child dies with the zygote (``PR_SET_PDEATHSIG``).
The zygote's stdout and stderr (and so every child's) go to a log file (solver logs never reach
the terminal). When the driver dies (its pipe closes, or the zygote is re-parented), the zygote
kills its process group and every descendant: a killed sweep leaves no solver running.
"""

from __future__ import annotations

import gc
import hashlib
import importlib
import json
import math
import os
import platform
import resource
import signal
import sys
import time
import traceback
import zlib
from datetime import datetime, timezone
from multiprocessing.connection import Connection, wait
from typing import Any

from edgebench.errors import InputError

#: package versions recorded with every run
PACKAGES = ("edgebench", "numpy", "scipy", "pydantic", "networkx", "ortools", "highspy", "pulp", "pyomo", "torch",
            "deap", "gymnasium")
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS")
#: at most this many points of an anytime trace are kept (evenly thinned, last point kept)
TRACE_POINTS = 200
#: seconds the zygote waits for a child that sent its result (or was killed) to exit
REAP_SECONDS = 10.0


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


# ---- fencing runs ---------------------------------------------------------------------


def become_subreaper() -> bool:
    """Make orphaned descendants of this process its children (Linux; False elsewhere)."""
    return _prctl(36, 1)  # PR_SET_CHILD_SUBREAPER


def _proc_children(pid: int) -> list[int] | None:
    """Direct children from ``/proc/PID/task/*/children`` (None where the kernel lacks it)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    out: list[int] = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                out += [int(x) for x in fh.read().split()]
        except FileNotFoundError:
            if tid == str(pid):
                return None  # no children file at all (CONFIG_PROC_CHILDREN off)
        except OSError:
            pass
    return out


def descendants(pid: int | None = None, *, group: bool = True) -> list:
    """psutil processes below ``pid`` (this process by default) and, with ``group`` and when
    ``pid`` leads its process group (a worker does), every other member of that group — what
    escaped the tree without a subreaper. Fast path: ``/proc/PID/task/*/children``."""
    import psutil

    root_pid = os.getpid() if pid is None else pid
    pids: set[int] = set()
    todo = [root_pid]
    while todo:
        kids = _proc_children(todo.pop())
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


_LIBC: list[Any] = []


def _prctl(option: int, arg: int) -> bool:
    try:
        if not _LIBC:  # loaded once, in the zygote: a run's process finds it ready
            import ctypes

            _LIBC.append(ctypes.CDLL(None, use_errno=True))
        return _LIBC[0].prctl(option, arg, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _die_with_group() -> None:
    """The driver is gone: end this zygote, its run and whatever they started."""
    try:
        kill_processes(descendants(group=False))
        os.killpg(os.getpgrp(), signal.SIGKILL)
    finally:
        os._exit(3)


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass


# ---- the zygote ------------------------------------------------------------------------


def preload(init: dict[str, Any]) -> None:
    """Import what the runs need before any run starts: the modules every run uses
    (:data:`RUN_MODULES`), the plugins, one small instance per family (``warm_instances``:
    texts the driver has already parsed, so that a run's process does not pay the models'
    first-use costs), the plan's solver modules (``solvers``; None: every registered solver) and,
    when one of them calls compiled kernels (:data:`KERNEL_SOLVERS`),
    :func:`edgebench.kernels.warm_kernels` (compiled or
    loaded from numba's cache here, before any solver's clock). A solver that fails to import is
    left to its runs, which report it (``error``, with the registry's reason)."""
    from edgebench import registry
    from edgebench.instances.io import instance_from_dict
    from edgebench.runner.suite import load_plugin

    for mod in RUN_MODULES:
        importlib.import_module(mod)
    for path in init.get("plugins", []):
        load_plugin(path)
    for text in init.get("warm_instances", []):
        try:
            instance_from_dict(json.loads(text))
        except Exception:  # noqa: BLE001 - the run itself reports it
            pass
    names = init.get("solvers")
    if names is None:
        names = [s.name for s in registry.solvers()]
    kinds = set()
    for name in names:
        try:
            info = registry.get(name)
            info.fn  # noqa: B018 - imports the solver's module
            kinds.add(info.kind)
        except Exception:  # noqa: BLE001 - the run itself reports an unknown or broken solver
            pass
    learn_imports(m for k in sorted(kinds) for m in PRELOAD_BY_KIND.get(k, ()))
    from edgebench import kernels

    if any(n in KERNEL_SOLVERS for n in names):
        try:
            kernels.warm_kernels()
        except Exception as exc:  # noqa: BLE001 - then compiled at the first call, as before
            print(f"edgebench worker: warm_kernels failed ({type(exc).__name__}: {exc}); the kernels compile "
                  "at their first call", file=sys.stderr)


#: modules every run uses besides its solver's (instance parsing, the referee, the bounds
#: check of record_solution, process-tree clean-up): imported once, in the zygote
RUN_MODULES = ("edgebench.instances.io", "edgebench.referee", "edgebench.runner.bounds", "psutil")
#: libraries that solvers of a kind import inside their functions (not at module import: light
#: commands stay light), imported by the zygote when the plan has such a solver
PRELOAD_BY_KIND = {"learned": ("torch",)}
#: top-level packages whose modules a run imported are imported by the zygote after the run
#: (:func:`learn_imports`), so that later runs find them imported; libraries known to start no
#: thread at import (a zygote forks: it must stay single-threaded)
LEARNABLE = ("torch", "scipy", "sklearn", "networkx", "highspy", "pulp", "pyomo", "deap", "gymnasium", "numba",
             "llvmlite", "pandas", "pyarrow")
#: solvers whose runs call the compiled (numba) kernels of :mod:`edgebench.kernels`
KERNEL_SOLVERS = ("placement-exact", "placement-cg-lns")


class Spare:
    """A run's process forked ahead of its task (while the zygote is idle): it waits for one
    task on ``tasks``, answers on ``results``, then ends. Forking a large zygote costs tens of
    milliseconds (page tables); done ahead, that is not on any run's path."""

    def __init__(self, guard: tuple[int, ...]) -> None:
        task_r, task_w = os.pipe()
        res_r, res_w = os.pipe()
        _flush_streams()
        zygote = os.getpid()
        pid = os.fork()
        if pid == 0:  # the run's process
            os.close(task_w)
            os.close(res_r)
            _child(task_r, res_w, zygote, guard)
        os.close(task_r)
        os.close(res_w)
        self.pid = pid
        self.tasks = Connection(task_w, readable=False)
        self.results = Connection(res_r, writable=False)

    def hand_over(self, task: dict[str, Any]) -> float | None:
        """Send ``task``; the time it was sent (the run's start-up counts from there), None
        when this process is gone."""
        t = time.monotonic()
        try:
            self.tasks.send((task, t))
        except OSError:
            return None
        finally:
            self.tasks.close()
        return t

    def discard(self) -> None:
        for c in (self.tasks, self.results):
            c.close()
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _reap(self.pid, REAP_SECONDS)


def _child(task_fd: int, res_fd: int, zygote: int, guard: tuple[int, ...]) -> None:
    """The body of a run's process (never returns): wait for the task, run it, send the result.
    ``guard``: the zygote's pipes to the driver, pointed at /dev/null here, so that a run can
    neither read its neighbours' tasks nor write to the driver (closing them stays harmless)."""
    code = 0
    try:
        _prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: this run dies with its zygote
        if os.getppid() != zygote:  # it died before the line above
            os._exit(0)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in guard:
            os.dup2(null, fd, inheritable=False)
        os.close(null)
        try:
            task, t_handover = Connection(task_fd, writable=False).recv()
        except (EOFError, OSError):  # the zygote is done with this spare
            os._exit(0)
        conn = Connection(res_fd, readable=False)
        before = set(sys.modules)
        try:
            out = run_task(task, t_handover, on_start=lambda t: conn.send({"type": "started", "at": t}))
        except MemoryError:
            out = {"type": "result", "key": task.get("key"), "status": "memory",
                   "message": "MemoryError outside the solver (memory limit reached)", "started": utcnow(),
                   "finished": utcnow()}
        except Exception as exc:  # the instance or the registry failed, not the solver
            out = {"type": "result", "key": task.get("key"), "status": "error",
                   "message": f"{type(exc).__name__}: {exc}"[:2000], "started": utcnow(), "finished": utcnow()}
        out.setdefault("startup", time.monotonic() - t_handover)
        out["imported"] = [m for m in sys.modules if m not in before and m.split(".")[0] in LEARNABLE]
        _flush_streams()
        conn.send(out)
    except BaseException:  # noqa: BLE001 - reported as this run's crash by the zygote
        code = 70
        try:
            traceback.print_exc()
            _flush_streams()
        except BaseException:  # noqa: BLE001
            pass
    os._exit(code)


def learn_imports(modules: Any) -> bool:
    """Import ``modules`` (names) of :data:`LEARNABLE` packages here, in the zygote: a solver
    that imports a library inside its function paid that import in the first run only, as in
    a reused process. Failures are ignored (the run that needs the module reports them).
    Whether anything was imported."""
    new = False
    for name in modules:
        if not isinstance(name, str) or name in sys.modules or name.split(".")[0] not in LEARNABLE:
            continue
        try:
            importlib.import_module(name)
            new = True
        except Exception:  # noqa: BLE001
            pass
    return new


def _reap(pid: int, seconds: float) -> int | None:
    """Wait up to ``seconds`` for child ``pid``; SIGKILL it after that. Its wait status as a
    return code (negative: the signal), None when it could not be reaped."""
    end = time.monotonic() + seconds
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() >= end:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            end = time.monotonic() + seconds
        time.sleep(0.002)


class Zygote:
    """The serving loop's state: the pipes to the driver, the run process forked ahead
    (:class:`Spare`), the processes of finished runs that are still exiting."""

    def __init__(self, rx: Connection, tx: Connection, ppid: int) -> None:
        self.rx, self.tx, self.ppid = rx, tx, ppid
        self.reaper = become_subreaper()  # then every orphan of a run is a descendant: no group scan
        self.guard = (rx.fileno(), tx.fileno())
        self.spare: Spare | None = None
        #: pid of a finished run's process -> when to SIGKILL it if it has not exited
        self.exiting: dict[int, float] = {}

    def take_spare(self) -> Spare:
        spare, self.spare = self.spare, None
        return spare if spare is not None else Spare(self.guard)

    def reap_exiting(self) -> None:
        """Reap finished runs' processes that have exited (never waits)."""
        now = time.monotonic()
        for pid, due in list(self.exiting.items()):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                del self.exiting[pid]
            elif now >= due:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def kill_leftovers(self) -> int:
        """SIGKILL every process below this zygote but the spare and the finished runs'
        processes that are exiting; how many were running."""
        keep = set(self.exiting) | ({self.spare.pid} if self.spare is not None else set())
        return kill_processes([q for q in descendants(group=not self.reaper) if q.pid not in keep])

    def run(self, task: dict[str, Any]) -> dict[str, Any]:
        """Run ``task`` in its own process (forked ahead, or now), fork the next run's process
        while this one runs, enforce the start-up allowance and the hard kill, kill what the
        run leaves running; returns the message for the driver (its process may still be
        exiting: it is reaped later, the driver does not wait for it)."""
        kill_after = float(task.get("kill_after") or math.inf)
        allowance = float(task.get("startup_allowance") or math.inf)
        spare = self.take_spare()
        t_fork = spare.hand_over(task)
        if t_fork is None:  # it died while waiting: fork one now
            spare.discard()
            spare = Spare(self.guard)
            t_fork = spare.hand_over(task)
            if t_fork is None:
                t_fork = time.monotonic()  # it died at once: its end is read below
        pid, conn = spare.pid, spare.results
        self.spare = Spare(self.guard)  # the next run's process, while this one starts
        started: float | None = None
        result: dict[str, Any] | None = None
        killed: str | None = None
        peak = None
        try:
            while result is None:
                now = time.monotonic()
                deadline = t_fork + allowance if started is None else started + kill_after
                if now >= deadline:
                    peak = vm_hwm_mb(pid)
                    if started is None:
                        killed = (f"hard wall-clock kill: the start-up (instance load and validation) took longer "
                                  f"than its allowance of {allowance:g} s")
                    else:
                        killed = (f"hard wall-clock kill after {now - started:.1f} s of solver time "
                                  f"(start-up {started - t_fork:.2f} s before it)")
                    kill_processes([*descendants(pid, group=False), *_proc(pid)])
                    break
                ready = wait([conn, self.rx], min(0.5, deadline - now))
                if self.rx in ready or os.getppid() != self.ppid:  # the driver closed its pipe or died
                    _die_with_group()
                if conn in ready:
                    try:
                        msg = conn.recv()
                    except (EOFError, OSError):
                        break  # the child ended without a result
                    if msg.get("type") == "started":
                        started = float(msg["at"])
                    else:
                        result = msg
        finally:
            conn.close()
        end = time.monotonic()
        if result is not None:  # the solver is done and its process exiting: whatever else runs below
            # this zygote (the run's subprocesses, and orphans of it re-parented here) is left over
            self.exiting[pid] = end + REAP_SECONDS
            left = self.kill_leftovers()
        else:
            code = _reap(pid, REAP_SECONDS)
            left = self.kill_leftovers()
        startup = (started - t_fork) if started is not None else None
        if killed is not None:
            result = {"type": "result", "key": task["key"], "status": "killed", "message": killed, "feasible": 0,
                      "runtime": (end - started) if started is not None else None, "startup": startup,
                      "peak_mem_mb": round(peak, 3) if peak is not None else None, "started": utcnow(),
                      "finished": utcnow()}
        elif result is None:
            result = {"type": "died", "key": task["key"], "code": code, "startup": startup,
                      "runtime": (end - started) if started is not None else None}
        if left:
            result["message"] = (f"{left} process(es) the solver left running were killed"
                                 + (f"; {result['message']}" if result.get("message") else ""))
        return result

    def serve(self) -> int:
        self.spare = Spare(self.guard)
        while True:
            if os.getppid() != self.ppid:
                _die_with_group()
            self.reap_exiting()
            if not self.rx.poll(0.5):
                continue
            try:
                task = self.rx.recv()
            except (EOFError, OSError):  # the driver is gone
                _die_with_group()
            if task is None:
                if self.spare is not None:
                    self.spare.discard()
                return 0
            result = self.run(task)
            imported = result.pop("imported", None) or ()
            _flush_streams()
            self.tx.send(result)
            if learn_imports(imported) and self.spare is not None:  # the next run should find them
                self.spare.discard()
                self.spare = Spare(self.guard)


def _proc(pid: int) -> list:
    import psutil

    try:
        return [psutil.Process(pid)]
    except psutil.Error:
        return []


def serve(rx: Connection, tx: Connection, init: dict[str, Any]) -> int:
    for p in reversed(init.get("sys_path", [])):
        if p not in sys.path:
            sys.path.insert(0, p)
    ppid = init.get("ppid", os.getppid())
    try:
        from edgebench import registry

        preload(init)
        env = environment()
        gc.freeze()  # what is imported now stays shared with every run's process (no copy-on-write by the GC)
        tx.send({"type": "ready", "pid": os.getpid(), "env": env, "env_hash": env_hash(env),
                 "load_errors": dict(registry.LOAD_ERRORS)})
    except BaseException as exc:  # noqa: BLE001 - reported to the driver, which stops the sweep
        tx.send({"type": "fatal", "message": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"})
        return 1
    return Zygote(rx, tx, ppid).serve()


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    rx = Connection(int(args[0]), writable=False)
    tx = Connection(int(args[1]), readable=False)
    try:
        init = rx.recv()
    except (EOFError, OSError):
        return 1
    return serve(rx, tx, init)


if __name__ == "__main__":
    sys.exit(main())
