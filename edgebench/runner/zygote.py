"""The worker process: ``python -m edgebench.runner.zygote IN_FD OUT_FD``, a warm "zygote".

Started by :mod:`edgebench.runner.execute` (locally, or inside a Dask worker) in its own
session / process group. It imports once what the sweep's runs need (the solver modules the
plan names, the suite's plugins, torch for learned solvers, the compiled kernels when a planned
solver calls them) and then forks ONE CHILD PER RUN: each run has its own process (a crash, a
leak, closed files or a changed working directory end with it), yet starts in milliseconds,
with every module already imported. The child is forked ahead (:class:`Spare`, while the
previous run's solver runs): the fork of a large process (tens of milliseconds to
copy its page tables) is on no run's path. What a run's process does — solve, score with the
referee, measure — is :func:`edgebench.runner.worker.run_task`. Messages (pickled) on
``IN_FD`` / ``OUT_FD``:

1. ``init`` -> ``{"type": "ready", "env": ..., "env_hash": ..., "load_errors": ...}``;
2. a task -> its result (:func:`~edgebench.runner.worker.run_task`), or ``{"type": "died"}``
   with the exit code of a run's process that ended without a result (the driver names the
   cause).

Time limits, end to end. The child measures its start-up (from receiving its task to the
solver's call: setting the memory limit, parsing and validating the instance, looking up the
solver) and tells the zygote when the solver's clock starts. The zygote kills the child's whole
tree when the start-up exceeds the task's ``startup_allowance``, or ``kill_after`` seconds after
the solver started (status ``killed``): the hard kill counts from the solver's start, and
start-up is bounded separately. The driver keeps a safety net over the zygote itself.

Fences: the memory limit (RLIMIT_AS) is set in the child when its task arrives, so the child
and every process it starts inherit it; the zygote is a child subreaper
(``PR_SET_CHILD_SUBREAPER``), so processes a solver leaves behind — even double-forked, in a new
session — become its children and are killed when the run ends; a child dies with the zygote
(``PR_SET_PDEATHSIG``). The zygote's stdout and stderr (and so every child's) go to a log file
(solver logs never reach the terminal). When the driver dies (its pipe closes, or the zygote is
re-parented), the zygote kills its process group and every descendant: a killed sweep leaves no
solver running.
"""

from __future__ import annotations

import gc
import importlib
import json
import math
import os
import signal
import sys
import time
import traceback
from multiprocessing.connection import Connection, wait
from typing import Any

from edgebench.processes import PR_SET_PDEATHSIG, become_subreaper, prctl
from edgebench.runner.worker import (descendants, env_hash, environment, kill_processes, run_task, utcnow,
                                     vm_hwm_mb)

#: seconds the zygote waits for a run's process that sent its result (or was killed) to exit
REAP_SECONDS = 10.0


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
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))  # this run dies with its zygote
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
        once this one's solver runs, enforce the start-up allowance and the hard kill, kill what the
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
        started: float | None = None
        result: dict[str, Any] | None = None
        killed: str | None = None
        peak = None
        try:
            while result is None:
                now = time.monotonic()
                deadline = t_fork + allowance if started is None else started + kill_after
                ready = wait([conn, self.rx], max(0.0, min(0.5, deadline - now)))
                if self.rx in ready or os.getppid() != self.ppid:  # the driver closed its pipe or died
                    _die_with_group()
                if conn in ready:  # messages first: a deadline is checked only with none pending
                    try:
                        msg = conn.recv()
                    except (EOFError, OSError):
                        break  # the child ended without a result
                    if msg.get("type") == "started":
                        started = float(msg["at"])
                        if self.spare is None:  # the next run's process, while this one's solver runs
                            self.spare = Spare(self.guard)
                    else:
                        result = msg
                    continue
                now = time.monotonic()
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
        if self.spare is None:  # the run ended before its solver started
            self.spare = Spare(self.guard)
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
