"""Nothing a solver starts outlives the process that started it — not even a SIGKILL of it.

One implementation for every external program — ``edgebench solve --command``, ``edgebench
adversary --target-command`` and a suite's ``command`` solvers in the runner's workers
(issue 44 case 10: a SIGKILLed ``solve --command 'sleep 311 & sleep 312'`` or ``adversary
search --target-command ...`` left both sleeps and the ``edgebench-external-*`` folder; a
killed ``run`` driver left a ``setsid`` child of a suite command running):

* :func:`die_with_parent` (from :mod:`edgebench.processes`, like the next two) — a ``preexec_fn``: the child is SIGKILLed when its parent dies
  (Linux ``prctl(PR_SET_PDEATHSIG)``);
* :func:`become_subreaper` — orphans of this process's descendants (double forks, ``setsid``,
  ``cmd &`` of a shell that exited) become its children, so they stay findable;
* :func:`kill_tree` — SIGKILL a process and everything below it;
* :func:`spawn` and ``python -m edgebench.watchdog`` — a process that sits between the caller
  and a program. It runs in its own session (a ``killpg`` of the caller's group, a terminal's
  hang-up, the runner's hard kill of a worker do not reach it), is the program's parent and
  a child subreaper (every process the program starts stays its descendant), and reads its
  stdin, a pipe from the caller: ``k`` — kill the program's tree now (a time limit, an
  interrupt); end of file without ``k`` — the caller died, even by SIGKILL: kill the tree and
  remove the ``--remove`` folders (the caller's temporary folder). When the program exits, the
  watchdog kills whatever it left running and writes its exit status (negative: the signal)
  to ``--status-fd``. Its cost: one small Python start (tens of milliseconds).
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from typing import Sequence

from edgebench.processes import become_subreaper, die_with_parent, kill_tree, tree

#: seconds between checks of the parent
POLL = 0.2
#: what the caller writes to the watchdog's stdin to have the program's tree killed
KILL = b"k"


def _reap_children(seconds: float) -> None:
    """Wait for every child of this process (killed ones, and orphans re-parented to it as
    a subreaper) for at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.01)


def spawn(argv: Sequence[str], *, status_fd: int, remove: Sequence[str] = (), **popen) -> subprocess.Popen:
    """Start ``argv`` under a watchdog process (module docstring). The returned Popen is the
    watchdog's (its ``stdin`` the control pipe: write :data:`KILL` to end the program);
    ``status_fd`` is the write end of a pipe the program's exit status is written to;
    ``popen`` goes to :class:`subprocess.Popen` (``stdout``, ``stderr``, ``cwd``)."""
    # -P: the working folder (the program's, often the user's) is not on sys.path, so that a
    # psutil.py or edgebench/ there is never imported (as the runner's workers, issue 28)
    cmd = [sys.executable, "-P", "-m", "edgebench.watchdog", "--status-fd", str(status_fd)]
    for folder in remove:
        cmd += ["--remove", str(folder)]
    return subprocess.Popen([*cmd, "--", *argv], stdin=subprocess.PIPE, pass_fds=(status_fd,),
                            start_new_session=True, **popen)


def stop(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Have the watchdog ``proc`` kill its program's tree, and wait for it (SIGKILL it and
    its tree if it does not answer)."""
    if proc.stdin is not None and not proc.stdin.closed:
        try:
            if proc.poll() is None:
                proc.stdin.write(KILL)
                proc.stdin.flush()
        except (OSError, ValueError):  # it has just exited
            pass
        try:
            proc.stdin.close()
        except (OSError, ValueError):
            pass
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        proc.wait()


def _supervise(argv: list[str], status_fd: int, remove: list[str]) -> int:
    import psutil  # noqa: F401 - imported now: a kill must not wait for it

    become_subreaper()
    ppid = os.getppid()
    try:
        prog = subprocess.Popen(argv, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
    except OSError as exc:
        print(f"edgebench watchdog: cannot start {argv[0]!r}: {exc}", file=sys.stderr, flush=True)
        os.write(status_fd, b"127\n")
        return 0
    orphaned = False
    code: int | None = None
    while code is None:
        ready, _, _ = select.select([0], [], [], POLL)  # stdin: the caller's control pipe
        if ready:
            data = os.read(0, 64)
            if KILL in data:
                break
            if not data:  # end of file: the caller is gone
                orphaned = True
                break
        if os.getppid() != ppid:
            orphaned = True
            break
        code = prog.poll()
    kill_tree(os.getpid(), include_root=False)  # the program if still running, and all it left
    if code is None:
        code = prog.wait()
    _reap_children(5.0)
    if orphaned:
        for folder in remove:
            shutil.rmtree(folder, ignore_errors=True)
        return 0
    try:
        os.write(status_fd, f"{code}\n".encode())
    except OSError:
        pass
    return 0


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    cut = args.index("--") if "--" in args else len(args)
    p = argparse.ArgumentParser(prog="python -m edgebench.watchdog")
    p.add_argument("--status-fd", type=int, required=True)
    p.add_argument("--remove", action="append", default=[])
    opts = p.parse_args(args[:cut])
    program = args[cut + 1:]
    if not program:
        p.error("no program after --")
    return _supervise(program, opts.status_fd, opts.remove)


if __name__ == "__main__":
    sys.exit(main())
