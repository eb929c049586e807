"""Solvers in any language: an external program run through the shell.

``edgebench solve INSTANCE --command CMD`` and a suite entry ``[[solvers]] name = ".."
command = ".."`` both run :func:`solve_command` — an ordinary solver function, so that in the
runner it runs inside the worker like any other solver and inherits the worker's isolation,
wall-clock kill and memory limit (resource limits are inherited by child processes).

The protocol (docs/cli.md, "External solvers"):

1. edgebench writes the instance (instance format v1, every field present) to a fresh
   temporary folder and substitutes, in CMD, ``{instance}`` and ``{solution}`` (the two file
   paths, shell-quoted), ``{time_limit}`` (seconds, ``inf`` without a limit) and ``{seed}``;
   no other braces are touched.
2. The program runs through ``/bin/sh`` under a watchdog process (:mod:`edgebench.watchdog`)
   that ends its whole process tree when it exits, at ``time_limit`` plus a grace of 10 %
   (at least 1 s; status ``timeout``), and when edgebench dies (even by SIGKILL: then the
   temporary folder is removed too).
3. The program writes the solution file (solution format v1, docs/instance-format.md). The
   envelope fields it leaves out (``family``, ``instance_id``, ``instance_hash``, ``status``)
   are filled in — ``status`` defaults to ``feasible`` when the decisions are present — and
   the ones it gives are checked (a solution for another instance is an error). ``solver``,
   ``params`` and ``seed`` are always edgebench's. The referee scores the decisions; the
   program's reported objective is kept for the record, never trusted.

Failures are results, never crashes: a non-zero exit status, a missing or invalid solution
file or a timeout give a solution with status ``error`` / ``timeout``, no decisions, and the
reason (with the tail of the program's output) in ``stats["message"]``.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from edgebench import watchdog
from edgebench.registry import FAMILIES, Result, declare, make_result
from edgebench.processes import become_subreaper, kill_tree

#: the solver name under which external programs run (``MODULE:FUNCTION``, resolved on demand)
SOLVER = "edgebench.external:solve_command"
PLACEHOLDERS = ("instance", "solution", "time_limit", "seed")
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")
#: characters of the program's output kept in the message
OUTPUT_TAIL = 1500
#: bytes of the program's output kept at most (its tail; issue 28: the output was unbounded)
OUTPUT_KEEP = 64 * 1024


def substitute(command: str, values: dict[str, str]) -> str:
    """Replace ``{instance}``, ``{solution}``, ``{time_limit}``, ``{seed}`` (each value
    shell-quoted); other braces (``${HOME}``, awk programs) are left alone."""
    return _PLACEHOLDER.sub(lambda m: shlex.quote(values[m.group(1)]), command)


def grace(time_limit: float) -> float:
    return max(1.0, 0.1 * time_limit)


def _descendants() -> set[int]:
    import psutil

    try:
        return {p.pid for p in psutil.Process().children(recursive=True)}
    except psutil.Error:
        return set()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def contained_children():
    """Every process started inside the block — and everything they started — is SIGKILLed
    when the block ends, also by an exception, Ctrl-C, SIGTERM or SIGHUP (both turned into
    KeyboardInterrupt while the block runs in the main thread; issue 28: ``solve`` killed by
    SIGTERM left the program's children, and by SIGINT left ``cbc``, running). A SIGKILL
    ends the block without it: external programs are covered by their watchdog
    (:func:`run_program`)."""
    become_subreaper()
    before = _descendants()
    old: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            old[sig] = signal.signal(sig, _interrupt)
    try:
        yield
    finally:
        for pid in sorted(_descendants() - before):
            kill_tree(pid)
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _drain(fd: int, tail: bytearray, total: list[int]) -> None:
    """Read the program's output to its end, keeping the last :data:`OUTPUT_KEEP` bytes."""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return
        if not chunk:
            return
        total[0] += len(chunk)
        tail += chunk
        if len(tail) > 2 * OUTPUT_KEEP:
            del tail[:-OUTPUT_KEEP]


def _exit_status(fd: int) -> int | None:
    """The exit status the watchdog wrote to its status pipe (None: it wrote none)."""
    data = b""
    while chunk := os.read(fd, 64):
        data += chunk
    try:
        return int(data.split()[0])
    except (IndexError, ValueError):
        return None


def run_program(command: str, *, cwd: str, log: Path, timeout: float | None,
                remove: str | None = None) -> tuple[int | None, float]:
    """Run ``command`` through the shell, stdout and stderr to ``log`` (its last
    :data:`OUTPUT_KEEP` bytes: the output is read to its end but not kept); at ``timeout``
    (and in any case at the end, or on a signal) kill its process tree. Returns (exit status,
    or None when it was killed for time, seconds).

    The shell runs under a watchdog process (:mod:`edgebench.watchdog`): its parent, in a
    session of its own, which kills the program's whole tree — ``setsid`` and background
    children included — when the program ends, when this function says so, and when this
    process dies, even by SIGKILL (then it also removes the folder ``remove``; issue 44
    case 10). A runner worker's hard kill ends the worker; its watchdog then ends the program."""
    t0 = time.perf_counter()
    tail, total = bytearray(), [0]
    with contained_children():
        r, w = os.pipe()
        st_r, st_w = os.pipe()
        try:
            proc = watchdog.spawn(["/bin/sh", "-c", command], status_fd=st_w, remove=[remove] if remove else [],
                                  cwd=cwd, stdout=w, stderr=subprocess.STDOUT)
        except BaseException:
            os.close(r)
            os.close(st_r)
            raise
        finally:
            os.close(w)
            os.close(st_w)
        reader = threading.Thread(target=_drain, args=(r, tail, total), daemon=True)
        reader.start()
        killed = True
        try:
            proc.wait(timeout=timeout)
            killed = False
        except subprocess.TimeoutExpired:
            pass
        finally:  # whatever happened (a timeout, an interrupt), nothing of the program outlives it
            watchdog.stop(proc)
        code = None if killed else _exit_status(st_r)
        if code is None and not killed:  # the watchdog itself was killed before it could say
            code = -int(signal.SIGKILL)
        os.close(st_r)
    reader.join(timeout=5)
    if not reader.is_alive():
        os.close(r)
    head = b"" if total[0] <= OUTPUT_KEEP else f"[{total[0] - OUTPUT_KEEP} bytes of output dropped]\n".encode()
    log.write_bytes(head + bytes(tail[-OUTPUT_KEEP:]))
    return code, time.perf_counter() - t0


def _tail(log: Path) -> str:
    try:
        text = log.read_bytes()[-OUTPUT_TAIL:].decode("utf-8", "replace").strip()
    except OSError:
        return ""
    return f"; output: {text}" if text else ""


def read_program_solution(path: Path, instance) -> Any:
    """The program's solution file, its missing envelope fields filled in, validated against
    ``instance`` (InputError naming the file and field when it is not a solution of it)."""
    from edgebench.errors import InputError
    from edgebench.instances import io

    data = io.read_json(path)
    if not isinstance(data, dict):
        raise InputError("a solution is a JSON object", file=str(path))
    data.setdefault("family", instance.family)
    data.setdefault("instance_id", instance.id)
    data.setdefault("instance_hash", io.content_hash(instance))
    data.setdefault("status", "feasible" if data.get(data["family"]) is not None else "error")
    data.update(solver=SOLVER, params={}, seed=None)
    return io.solution_from_dict(data, file=str(path), instance=instance)


@declare(families=FAMILIES, kind="heuristic",
         description="an external program (any language) that reads the instance file and writes a solution file")
def solve_command(instance, *, time_limit: float | None = None, seed: int = 0, command: str) -> Result:
    """Run the external program ``command`` on ``instance`` (see the module's protocol)."""
    from edgebench.errors import InputError
    from edgebench.instances import io

    if not isinstance(command, str) or not command.strip():
        raise InputError("an external solver needs a non-empty command", field="command")
    t0 = time.perf_counter()
    params = {"command": command}
    with tempfile.TemporaryDirectory(prefix="edgebench-external-") as tmp:
        folder = Path(tmp)
        inst_path = io.write_json(folder / "instance.json", instance)
        sol_path = folder / "solution.json"
        log = folder / "output.log"
        tl = "inf" if time_limit is None else repr(float(time_limit))
        cmd = substitute(command, {"instance": str(inst_path), "solution": str(sol_path), "time_limit": tl,
                                   "seed": str(int(seed))})
        timeout = None if time_limit is None or not math.isfinite(time_limit) else time_limit + grace(time_limit)
        code, seconds = run_program(cmd, cwd=os.getcwd(), log=log, timeout=timeout, remove=tmp)

        def failed(status: str, message: str) -> Result:
            return make_result(instance, SOLVER, status=status, seed=seed, params=params, started=t0,
                               stats={"message": (message + _tail(log))[:2000], "program_seconds": seconds})

        if code is None:
            return failed("timeout", f"external program killed after {timeout:.3g} s (time limit {tl} s)")
        if code != 0:
            what = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
            return failed("error", f"external program failed ({what})")
        if not sol_path.exists():
            return failed("error", "external program wrote no solution file")
        try:
            sol = read_program_solution(sol_path, instance)
        except InputError as err:
            return failed("error", f"invalid solution file: {err.field}: {err.reason}")
    stats = dict(sol.stats)
    stats["program_seconds"] = seconds
    return make_result(instance, SOLVER, status=sol.status, decisions=sol.decisions, seed=seed, params=params,
                       objective=sol.objective, bound=sol.bound, started=t0, stats=stats)
