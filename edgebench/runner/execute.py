"""Executing a sweep: isolated worker processes with a hard wall-clock kill, locally or on a
Dask cluster; the driver alone writes the store.

Isolation. Each worker slot is a warm "zygote" process (``python -P -m edgebench.runner.zygote``:
nothing is imported from the current folder, nor from an empty ``PYTHONPATH`` entry;
see :mod:`.zygote`) started in its own session, which imports the plan's solver modules once
and forks one child process per run: every run has its own process, started in milliseconds.

* the hard kill — a run still going ``time_limit * 1.2 + kill_grace`` seconds after its
  solver started, or whose start-up (instance load and validation) takes longer than the
  suite's ``startup_allowance``: the run's whole process tree gets SIGKILL, the run is stored
  as ``killed``; the start-up is stored separately (column ``startup``);
* ``memory`` — a MemoryError under the suite's ``memory_limit_mb`` (RLIMIT_AS, set in the
  run's process after the fork), or a run that vanished by SIGKILL we did not send (the
  kernel's OOM killer), or whose log ends in an allocation failure;
* ``crash`` — any other death of the run's process (segfault, abort, ``os._exit``).

Solver exceptions are stored as ``error``. The zygote carries on after every run; it is
replaced only when it dies itself, or does not answer ``SAFETY_SECONDS`` after a run's kill was
due (then the whole worker's tree is killed, as before).

Worker logs (the zygote's stdout and stderr, which every run shares) are temporary files
removed as soon as they are opened: nothing is left in TMPDIR, even when the driver is killed.
At start, logs of the older naming left behind by dead drivers are removed
(:func:`clean_stale_logs`).

Dask (``--dask ADDRESS``): the same runs are submitted to a ``dask.distributed`` cluster;
each Dask worker thread keeps one isolated worker process and returns results to the
driver, which writes them (one writer).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Callable, Iterable

from edgebench.features import features
from edgebench.runner.selection import again
from edgebench.runner.suite import Plan, RunSpec, suite_to_toml
from edgebench.runner.worker import THREAD_VARS, descendants, environment, kill_processes, utcnow, vm_hwm_mb

#: seconds a worker may take to start (import every solver module)
START_TIMEOUT = 300.0
#: seconds the driver waits past a run's own kill (enforced by the zygote) before it kills the
#: whole worker
SAFETY_SECONDS = 10.0
#: worker log names: ``edgebench-worker-<driver pid>-<random>.log``; older versions wrote
#: ``edgebench-worker-<random>.log``
LOG_PREFIX = "edgebench-worker-"
_LOG_NAME = re.compile(r"^edgebench-worker-(?:(\d+)-)?[A-Za-z0-9_]+\.log$")
#: log markers of an allocation failure
MEMORY_MARKERS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory", "out of memory", "Out of memory")


class WorkerStartError(RuntimeError):
    """A worker process could not start (an environment problem, not a run's)."""


def _failure(key: str, status: str, message: str, runtime: float | None = None,
             peak: float | None = None) -> dict[str, Any]:
    now = utcnow()
    return {"type": "result", "key": key, "status": status, "message": message, "runtime": runtime,
            "peak_mem_mb": peak, "feasible": 0, "started": now, "finished": now}


class WorkerProc:
    """One worker process and its pipes; states: dead, starting, idle, busy."""

    def __init__(self, init: dict[str, Any], threads: int = 1, log_dir: str | None = None) -> None:
        self.init = init
        self.threads = threads
        self.log_dir = log_dir or tempfile.gettempdir()
        self.state = "dead"
        self.proc: subprocess.Popen | None = None
        self.rx: Connection | None = None
        self.tx: Connection | None = None
        self.log_fd: int | None = None
        self.env: dict[str, Any] | None = None
        self.env_hash: str | None = None
        self.load_errors: dict[str, str] = {}
        self.task_key: str | None = None
        self.sent_at = 0.0
        self.deadline = 0.0
        self.started_at = 0.0
        self.log_offset = 0
        self.killed_by_us = False

    # ---- life cycle ------------------------------------------------------------------

    def start(self) -> None:
        self.close()
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        env = dict(os.environ)
        for v in THREAD_VARS:
            env[v] = str(self.threads)
        if "PYTHONPATH" in env:  # an empty entry means the current folder (-P covers the implicit one)
            env["PYTHONPATH"] = os.pathsep.join(x for x in env["PYTHONPATH"].split(os.pathsep) if x)
        fd, path = tempfile.mkstemp(prefix=f"{LOG_PREFIX}{os.getpid()}-", suffix=".log", dir=self.log_dir)
        os.unlink(path)  # read through our descriptor only: nothing is left when the driver dies
        self.log_fd = os.dup(fd)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "edgebench.runner.zygote", str(to_r), str(from_w)],
                pass_fds=(to_r, from_w), stdin=subprocess.DEVNULL, stdout=fd, stderr=subprocess.STDOUT,
                start_new_session=True, env=env, close_fds=True)
        finally:
            os.close(fd)
            os.close(to_r)
            os.close(from_w)
        self.tx = Connection(to_w, readable=False)
        self.rx = Connection(from_r, writable=False)
        self.tx.send({**self.init, "ppid": os.getpid()})
        self.state = "starting"
        self.started_at = time.monotonic()
        self.killed_by_us = False

    def close(self) -> None:
        """Stop the process and its whole tree: SIGKILL to its descendants (the worker is a
        subreaper: what a solver leaves behind stays below it, even in a new session) and to
        its process group — also when the worker itself already died, since what it started
        may outlive it. Then release pipes and log."""
        if self.proc is not None:
            tree = descendants(self.proc.pid) if self.proc.poll() is None else []
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            kill_processes(tree)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for c in (self.rx, self.tx):
            if c is not None:
                try:
                    c.close()
                except OSError:
                    pass
        if self.log_fd is not None:
            try:
                os.close(self.log_fd)
            except OSError:
                pass
        self.proc = self.rx = self.tx = None
        self.log_fd = None
        self.state = "dead"

    def _log_tail(self, n: int = 1500) -> str:
        if self.log_fd is None:
            return ""
        try:
            size = os.fstat(self.log_fd).st_size
            start = max(self.log_offset, size - n)
            return os.pread(self.log_fd, size - start, start).decode("utf-8", "replace").strip()
        except OSError:
            return ""

    # ---- runs ------------------------------------------------------------------------

    def assign(self, task: dict[str, Any], kill_after: float) -> None:
        """Send ``task`` to the zygote. It kills the run itself (start-up allowance, then
        ``kill_after`` from the solver's start); the driver's deadline is a safety net over
        the zygote, ``SAFETY_SECONDS`` later."""
        assert self.state == "idle" and self.tx is not None
        try:
            self.log_offset = os.fstat(self.log_fd).st_size if self.log_fd is not None else 0
        except OSError:
            self.log_offset = 0
        task = {**task, "kill_after": kill_after}
        self.task_key = task["key"]
        self.sent_at = time.monotonic()
        self.deadline = self.sent_at + float(task.get("startup_allowance") or 0.0) + kill_after + SAFETY_SECONDS
        self.state = "busy"
        try:
            self.tx.send(task)
        except OSError:
            pass  # the worker died; its EOF is read next

    def on_readable(self) -> dict[str, Any] | None:
        """Read what the worker sent; returns a result when a run finished (or died)."""
        assert self.rx is not None
        try:
            msg = self.rx.recv()
        except (EOFError, OSError):
            return self._died()
        if self.state == "starting":
            if msg.get("type") == "fatal":
                tail = msg.get("message", "")
                self.close()
                raise WorkerStartError(f"a worker failed to start: {tail.strip()}")
            self.env, self.env_hash = msg["env"], msg["env_hash"]
            self.load_errors = msg.get("load_errors", {})
            self.state = "idle"
            return None
        wall = time.monotonic() - self.sent_at
        if msg.get("type") == "died":
            msg = self._run_died(msg, wall)
        msg["wall"] = wall
        msg["env"] = self.env_hash
        self.task_key = None
        self.state = "idle"
        return msg

    def _run_died(self, msg: dict[str, Any], elapsed: float) -> dict[str, Any]:
        """The result of a run whose process ended without one (the zygote reported its exit)."""
        res = _failure(msg.get("key") or self.task_key or "", *self._death(msg.get("code")), msg.get("runtime"))
        res["startup"] = msg.get("startup")
        return res

    def _death(self, code: int | None) -> tuple[str, str]:
        """(status, message) of a process that ended with ``code`` without a result."""
        tail = self._log_tail()
        if code is not None and code < 0:
            try:
                signame = signal.Signals(-code).name
            except ValueError:
                signame = f"signal {-code}"
            how = f"killed by {signame}"
        else:
            how = f"exit code {code}"
        last = tail.splitlines()[-1][:300] if tail else ""
        memory = (code == -signal.SIGKILL) or any(m in tail for m in MEMORY_MARKERS)
        why = " (not sent by the runner: the kernel's OOM killer)" if code == -signal.SIGKILL else ""
        return ("memory" if memory else "crash"), f"{how}{why}" + (f"; last output: {last}" if last else "")

    def _died(self) -> dict[str, Any] | None:
        code = self.proc.wait(timeout=10) if self.proc is not None else None
        tail = self._log_tail()
        if self.state == "starting":
            self.close()
            raise WorkerStartError(f"a worker exited while starting (exit code {code}): {tail[-1000:]}")
        key = self.task_key
        elapsed = time.monotonic() - self.sent_at
        if key is None:
            self.close()
            return None
        status, message = self._death(code)
        self.close()
        res = _failure(key, status, f"worker {message}", elapsed)
        res["wall"] = elapsed
        res["env"] = self.env_hash
        return res

    def kill_for_timeout(self) -> dict[str, Any]:
        key = self.task_key or ""
        peak = vm_hwm_mb(self.proc.pid) if self.proc is not None else None
        elapsed = time.monotonic() - self.sent_at
        env = self.env_hash
        self.killed_by_us = True
        self.close()
        why = f"hard wall-clock kill after {elapsed:.1f} s (the worker did not end the run itself; worker replaced)"
        res = _failure(key, "killed", why, elapsed, round(peak, 3) if peak is not None else None)
        res["wall"] = elapsed
        res["env"] = env
        return res

    def run_blocking(self, task: dict[str, Any], kill_after: float) -> dict[str, Any]:
        """Start if needed, run one task, wait for it (or kill it): the Dask path."""
        if self.state == "dead":
            self.start()
        while self.state == "starting":
            if not self.rx.poll(max(0.0, START_TIMEOUT - (time.monotonic() - self.started_at))):
                self.close()
                raise WorkerStartError(f"a worker did not start within {START_TIMEOUT:.0f} s")
            self.on_readable()
        self.assign(task, kill_after)
        while True:
            left = self.deadline - time.monotonic()
            if left <= 0:
                return self.kill_for_timeout()
            if self.rx.poll(left):
                res = self.on_readable()
                if res is not None:
                    return res


# ======================================================================================
# local pool
# ======================================================================================


def make_task(spec: RunSpec, texts: dict[str, str]) -> dict[str, Any]:
    text = texts.get(spec.inst.hash)
    if text is None:
        from edgebench.instances.io import canonical_json

        text = texts[spec.inst.hash] = canonical_json(spec.inst.instance)
    return {"key": spec.key, "instance": text, "instance_hash": spec.inst.hash, "solver": spec.solver,
            "params": spec.params, "seed": spec.seed, "time_limit": spec.time_limit,
            "memory_limit_mb": spec.memory_limit_mb, "startup_allowance": spec.startup_allowance}


def worker_init(plugins: list[str], solvers: Iterable[str] | None = None,
                specs: Iterable[RunSpec] = ()) -> dict[str, Any]:
    """The zygote's set-up: the driver's import path, the plugins, the solvers whose modules
    it imports before the first run (None: every registered solver) and, from ``specs``, the
    smallest instance of each family (parsed once there, to warm the models)."""
    from edgebench.instances.io import canonical_json

    smallest: dict[str, tuple[int, str]] = {}
    for spec in specs:
        if spec.inst.family not in smallest or spec.inst.size < smallest[spec.inst.family][0]:
            smallest[spec.inst.family] = (spec.inst.size, spec.inst.hash)
    warm = {h for _, h in smallest.values()}
    texts = {s.inst.hash: canonical_json(s.inst.instance) for s in specs if s.inst.hash in warm}
    return {"sys_path": [p for p in sys.path if p], "plugins": list(plugins),
            "solvers": None if solvers is None else sorted(set(solvers)), "warm_instances": sorted(texts.values())}


def clean_stale_logs(folder: str | None = None) -> int:
    """Remove worker logs that drivers killed before they could (SIGKILL) left in ``folder``
    (TMPDIR): ``edgebench-worker-<pid>-*.log`` of a driver pid that is no longer running, and
    empty logs of the older naming (no pid). Only this user's files; returns how many."""
    folder = folder or tempfile.gettempdir()
    n = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        m = _LOG_NAME.match(name)
        if m is None:
            continue
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
            if st.st_uid != os.getuid() or not os.path.isfile(path) or os.path.islink(path):
                continue
            if m.group(1) is not None:
                if int(m.group(1)) == os.getpid() or _alive(int(m.group(1))):
                    continue
            elif st.st_size:
                continue
            os.unlink(path)
            n += 1
        except (OSError, ValueError):
            pass
    return n


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _next_claimed(queue: deque, claim: Callable[[RunSpec], bool] | None) -> RunSpec | None:
    """The next run of ``queue`` that ``claim`` grants (runs claimed elsewhere are dropped)."""
    while queue:
        spec = queue.popleft()
        if claim is None or claim(spec):
            return spec
    return None


def run_local(specs: list[RunSpec], on_result: Callable[[RunSpec, dict[str, Any]], None], *, workers: int,
              init: dict[str, Any], threads: int = 1, on_ready: Callable[[WorkerProc], None] | None = None,
              claim: Callable[[RunSpec], bool] | None = None) -> None:
    """Run ``specs`` on ``workers`` local worker processes; ``on_result(spec, result)`` is
    called in the driver for every finished run, in completion order. ``claim(spec)`` is asked
    just before a run starts (False: another runner has it; it is skipped)."""
    if not specs:
        return
    clean_stale_logs()
    texts: dict[str, str] = {}
    queue = deque(specs)
    slots = [WorkerProc(init, threads) for _ in range(max(1, min(workers, len(specs))))]
    running: dict[int, RunSpec] = {}
    try:
        for s in slots:
            s.start()
        while queue or running:
            for i, s in enumerate(slots):
                if s.state == "idle" and s.proc is not None and s.proc.poll() is not None:
                    s.close()  # died between runs: never hand it the next run
                if s.state == "dead" and queue:
                    s.start()
                if s.state == "idle" and queue and i not in running:
                    spec = _next_claimed(queue, claim)
                    if spec is None:
                        continue
                    running[i] = spec
                    s.assign(make_task(spec, texts), spec.kill_after)
            now = time.monotonic()
            conns = [s.rx for s in slots if s.state in ("starting", "busy") and s.rx is not None]
            deadlines = [s.deadline for s in slots if s.state == "busy"]
            timeout = 0.5 if not deadlines else max(0.0, min(0.5, min(deadlines) - now))
            ready = set(map(id, wait(conns, timeout))) if conns else set()
            if not conns:
                time.sleep(timeout)
            for i, s in enumerate(slots):
                if s.rx is not None and id(s.rx) in ready:
                    was_starting = s.state == "starting"
                    res = s.on_readable()
                    if was_starting and s.state == "idle" and on_ready is not None:
                        on_ready(s)
                    if res is not None and i in running:
                        on_result(running.pop(i), res)
                    elif i in running and s.state == "dead":  # died between runs
                        pass
            now = time.monotonic()
            for i, s in enumerate(slots):
                if s.state == "busy" and now >= s.deadline and i in running:
                    on_result(running.pop(i), s.kill_for_timeout())
                elif s.state == "starting" and now - s.started_at > START_TIMEOUT:
                    s.close()
                    raise WorkerStartError(f"a worker did not start within {START_TIMEOUT:.0f} s")
    finally:
        for s in slots:
            s.close()


# ======================================================================================
# Dask
# ======================================================================================

_slots_lock = threading.Lock()
_slots: dict[int, WorkerProc] = {}


def _thread_slot(init: dict[str, Any], threads: int) -> WorkerProc:
    tid = threading.get_ident()
    with _slots_lock:
        slot = _slots.get(tid)
        if slot is None or slot.init != init or slot.threads != threads:
            if slot is not None:
                slot.close()
            slot = _slots[tid] = WorkerProc(init, threads)
    return slot


def close_slots() -> int:
    """Stop the worker processes of this process's Dask threads (``client.run`` target)."""
    with _slots_lock:
        n = len(_slots)
        for s in _slots.values():
            s.close()
        _slots.clear()
    return n


def dask_execute(task: dict[str, Any], init: dict[str, Any], threads: int, kill_after: float) -> dict[str, Any]:
    """The function a Dask worker runs for one task: an isolated worker process per Dask
    thread, the same hard kill as locally."""
    slot = _thread_slot(init, threads)
    try:
        res = slot.run_blocking(task, kill_after)
    except WorkerStartError as exc:
        res = _failure(task["key"], "crash", str(exc)[:2000])
    res["env_data"] = slot.env
    return res


def run_dask(specs: list[RunSpec], on_result: Callable[[RunSpec, dict[str, Any]], None], *, address: Any,
             init: dict[str, Any], threads: int = 1, claim: Callable[[RunSpec], bool] | None = None) -> None:
    """Send ``specs`` to the Dask cluster at ``address`` (a scheduler address, or a
    ``distributed.Client``); results come back to this process, which calls ``on_result``."""
    if not specs:
        return
    from distributed import Client, as_completed

    own = not isinstance(address, Client)
    client = Client(address, timeout="30s") if own else address
    try:
        nthreads = max(1, sum(client.nthreads().values()))
        texts: dict[str, str] = {}
        queue = deque(specs)
        pending: dict[str, RunSpec] = {}
        ac = as_completed()

        def submit() -> bool:
            spec = _next_claimed(queue, claim)
            if spec is None:
                return False
            fut = client.submit(dask_execute, make_task(spec, texts), init, threads, spec.kill_after, pure=False)
            pending[fut.key] = spec
            ac.add(fut)
            return True

        for _ in range(2 * nthreads):
            if not submit():
                break
        for fut in ac:
            spec = pending.pop(fut.key)
            try:
                res = fut.result()
            except Exception as exc:  # the Dask worker itself failed
                res = _failure(spec.key, "crash", f"Dask task failed: {type(exc).__name__}: {exc}")
            on_result(spec, res)
            submit()
        try:
            client.run(close_slots)
        except Exception:  # a worker that left the cluster
            pass
    finally:
        if own:
            client.close()


# ======================================================================================
# sweeps
# ======================================================================================


@dataclass
class SweepResult:
    store: str
    sweep: int
    planned: int
    skipped: int
    done: int
    statuses: Counter = field(default_factory=Counter)
    keys: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: runs left to another runner working on the same store
    elsewhere: int = 0


def make_row(spec: RunSpec, res: dict[str, Any], *, sweep: int | None, suite: str | None) -> dict[str, Any]:
    """The store row of a finished run."""
    from edgebench.referee.common import PRIMARY, SENSE

    fam = spec.family
    feasible = int(bool(res.get("feasible")))
    units_ok = int(bool(res.get("units_ok")))
    claimed = res.get("claimed") or res.get("status") or "error"
    status, proven, why = proven_status(spec, res)
    message = res.get("message")
    if why:
        message = f"{why}" + (f"; {message}" if message else "")
    return {
        "key": spec.key, "sweep": sweep, "suite": suite, "instance_id": spec.inst.id,
        "instance_hash": spec.inst.hash, "instance_set": spec.inst.set, "family": fam, "size": spec.inst.size,
        "solver": spec.solver, "label": spec.label, "kind": spec.kind,
        "params": json.dumps(spec.params, sort_keys=True), "params_hash": spec.params_hash, "seed": spec.seed,
        "time_limit": spec.time_limit, "memory_limit_mb": spec.memory_limit_mb, "status": status,
        "claimed_status": claimed if claimed != status else None,
        "feasible": feasible, "proven": proven, "units_ok": units_ok,
        "primary_name": PRIMARY[fam], "sense": SENSE[fam], "primary_value": res.get("primary_value"),
        "objectives": res.get("objectives"), "violations": res.get("violations"),
        "reported_objective": res.get("reported_objective"), "bound": res.get("bound"),
        "runtime": res.get("runtime"), "solver_wall": res.get("solver_wall"), "wall": res.get("wall"),
        "startup": res.get("startup"),
        "peak_mem_mb": res.get("peak_mem_mb"), "message": message, "trace": res.get("trace"),
        "pareto": res.get("pareto"), "env": res.get("env"), "checkpoint": res.get("checkpoint"),
        "started": res.get("started"),
        "finished": res.get("finished"), "solution": res.get("solution"),
    }


def proven_status(spec: RunSpec, res: dict[str, Any]) -> tuple[str, int, str | None]:
    """(stored status, proven, why the claim was not taken). An ``optimal`` status is a proof
    only from a solver that can prove (kind exact / mdp, or ``register(proves=True)``) whose
    solution the referee finds feasible, whose reported objective is the referee's primary
    value and whose bound agrees with it (tolerance of :func:`.bestknown.close`). Otherwise the
    run is stored as ``feasible`` (``error`` when the referee rejects the solution) and the
    claim is kept in ``claimed_status``."""
    from edgebench.runner.bestknown import close

    status = res.get("status") or "error"
    if status != "optimal":
        return status, 0, None
    value, bound = res.get("primary_value"), res.get("bound")
    if not res.get("feasible"):
        return "error", 0, "claimed optimal, but the referee found the solution infeasible"
    if res.get("restricted"):  # first: the more precise reason (placement-milp declares bound="restriction")
        why = ("claimed optimal, not counted: optimal for the model's restriction of the problem only "
               "(docs/bks.md, 'Bounds computed from the instance')")
    elif not getattr(spec, "proves", False):
        why = f"claimed optimal, not counted: a {spec.kind} solver cannot prove optimality"
    elif not res.get("units_ok"):
        why = "claimed optimal, not counted: its reported objective is not the referee's value"
    elif bound is None or value is None or not close(float(bound), float(value)):
        why = f"claimed optimal, not counted: its bound {bound!r} does not match the referee's value {value!r}"
    else:
        return "optimal", 1, None
    return "feasible", 0, why


def _progress(total: int, enabled: bool | None):
    from tqdm import tqdm

    tty = sys.stderr.isatty()
    if enabled is None:
        enabled = True
    return tqdm(total=total, unit="run", file=sys.stderr, disable=not enabled, dynamic_ncols=True,
                mininterval=0.5 if tty else 15.0, smoothing=0.1,
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]{postfix}")


def run_sweep(plan: Plan, store_path: str | Path, *, workers: int | None = None, dask: Any = None,
              retry_failed: bool = False, progress: bool | None = None, argv: list[str] | None = None,
              log: Callable[[str], None] | None = None, rerun: str | None = None) -> SweepResult:
    """Run every planned run that the store does not hold yet; each finished run is written
    in its own transaction. ``dask``: a scheduler address or a ``distributed.Client``.
    ``rerun`` ("stale" / "all", :mod:`.selection`): stored runs to run again and replace."""
    from edgebench.runner.store import FAILED_STATUSES, Store, owner_id

    say = log or (lambda s: print(s, file=sys.stderr))
    t0 = time.monotonic()
    store = Store.open(store_path, create=True)
    try:
        have = store.keys()
        if retry_failed:
            have -= store.keys(FAILED_STATUSES)
        redo = again(store, plan.runs, rerun)
        have -= redo
        since = utcnow()  # a run to run again that finishes after this was run again by another runner
        todo = [r for r in plan.runs if r.key not in have]
        skipped = len(plan.runs) - len(todo)
        # best known values recorded in instance-set manifests
        store.seed_bestknown([
            {"instance_hash": i.hash, "instance_id": i.id, "instance_set": i.set, "family": i.family,
             "size": i.size, "primary_name": _primary(i.family)[0], "sense": _primary(i.family)[1],
             "best_known": i.best_known}
            for i in plan.instances if i.best_known])
        store.add_features((i.hash, i.family, features(i.instance)) for i in plan.instances)
        # longest time limit first: a better makespan on several workers
        todo.sort(key=lambda r: -r.time_limit)
        host = environment()
        sweep = store.begin_sweep(suite=plan.suite.name, suite_toml=suite_to_toml(plan.suite),
                                  argv=list(argv if argv is not None else sys.argv), host=host,
                                  planned=len(plan.runs), skipped=skipped)
        result = SweepResult(store=str(store_path), sweep=sweep, planned=len(plan.runs), skipped=skipped, done=0,
                             keys=[r.key for r in plan.runs], notes=list(plan.notes))
        envs: dict[str, dict[str, Any]] = {}
        bar = _progress(len(todo), progress if todo else False)

        def on_ready(w: WorkerProc) -> None:
            if w.env_hash:
                envs[w.env_hash] = w.env
            for m, e in sorted(w.load_errors.items()):
                note = f"warning: solver module {m} failed to import in a worker ({e})"
                if note not in result.notes and not any(m in n for n in result.notes):
                    result.notes.append(note)
                    bar.write(note, file=sys.stderr)

        def on_result(spec: RunSpec, res: dict[str, Any]) -> None:
            env_data = res.pop("env_data", None)
            if env_data is not None and res.get("env"):
                envs[res["env"]] = env_data
            row = make_row(spec, res, sweep=sweep, suite=plan.suite.name)
            store.add_run(row, envs.get(row["env"]) if row.get("env") else None, replace=retry_failed,
                          force=spec.key in redo)
            result.done += 1
            result.statuses[row["status"]] += 1
            bar.set_postfix_str(" ".join(f"{k}={v}" for k, v in sorted(result.statuses.items())), refresh=False)
            bar.update(1)

        init = worker_init(plan.plugins, {r.solver for r in todo}, todo)
        n_workers = workers or plan.suite.workers or 1
        owner = owner_id()
        elsewhere: list[str] = []

        def claim(spec: RunSpec) -> bool:
            # another runner on this store may have stored or started the run since we planned
            if store.claim(spec.key, owner, retry_failed=retry_failed, again=spec.key in redo, since=since):
                return True
            elsewhere.append(spec.key)
            bar.update(1)
            return False

        try:
            if dask is not None:
                run_dask(todo, on_result, address=dask, init=init, threads=plan.suite.threads, claim=claim)
            else:
                run_local(todo, on_result, workers=n_workers, init=init, threads=plan.suite.threads,
                          on_ready=on_ready, claim=claim)
        finally:
            bar.close()
            store.release_claims(owner)
        if elsewhere:
            result.elsewhere = len(elsewhere)
            result.notes.append(f"note: {len(elsewhere)} runs were left to another runner on {store_path} "
                                f"(stored or being run by it)")
        store.end_sweep(sweep, result.done)
        result.seconds = time.monotonic() - t0
        return result
    finally:
        store.close()


def _primary(family: str) -> tuple[str, str]:
    from edgebench.referee.common import PRIMARY, SENSE

    return PRIMARY[family], SENSE[family]


def estimate_seconds(specs: Iterable[RunSpec], workers: int) -> float:
    """The time-limit budget of ``specs`` on ``workers`` (runs usually stop sooner)."""
    return sum(s.time_limit for s in specs) / max(1, workers)
