"""Process-tree primitives shared by the runner's workers (:mod:`edgebench.runner.zygote`,
:mod:`edgebench.runner.worker`) and the external programs' watchdog (:mod:`edgebench.watchdog`):
one implementation of each, Linux first, portable where Linux's ``/proc`` or ``prctl`` are
missing.

* :func:`prctl` — Linux ``prctl(2)`` through ctypes (libc loaded once per process, so a forked
  child finds it ready); False where it is not available;
* :func:`die_with_parent` — a ``preexec_fn``: the child is SIGKILLed when its parent dies
  (``PR_SET_PDEATHSIG``);
* :func:`become_subreaper` — orphans of this process's descendants (double forks, ``setsid``,
  ``cmd &`` of a shell that exited) become its children, so they stay findable
  (``PR_SET_CHILD_SUBREAPER``);
* :func:`children` and :func:`tree` — a process's children / every process below it, from
  ``/proc/PID/task/*/children`` (psutil's scan of the process table where the kernel lacks it);
* :func:`kill_tree` — SIGKILL a process and everything below it.
"""

from __future__ import annotations

import os
import signal
from typing import Any

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

_LIBC: list[Any] = []


def prctl(option: int, arg: int) -> bool:
    """``prctl(option, arg)``; True on success, False where it failed or is unavailable."""
    try:
        if not _LIBC:
            import ctypes

            _LIBC.append(ctypes.CDLL(None, use_errno=True))
        return _LIBC[0].prctl(option, arg, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux
        return False


def die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """``preexec_fn``: SIGKILL this (child) process when the process that started it dies."""
    prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))


def become_subreaper() -> bool:
    """Make orphaned descendants of this process its children (Linux; False elsewhere)."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1)


def children(pid: int) -> list[int] | None:
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


def tree(pid: int) -> list[int]:
    """The pids below ``pid``, parents before children (fast path: ``/proc``; else psutil's
    scan of the process table)."""
    out: list[int] = []
    todo = [pid]
    while todo:
        kids = children(todo.pop(0))
        if kids is None:
            import psutil

            try:
                return [p.pid for p in psutil.Process(pid).children(recursive=True)]
            except psutil.Error:
                return []
        kids = [k for k in kids if k not in out]
        out += kids
        todo += kids
    return out


def kill_tree(pid: int, *, include_root: bool = True) -> int:
    """SIGKILL ``pid`` (unless ``include_root`` is False) and every process below it; returns
    how many were signalled. (Not reaped here: the killed processes' parents do that — this
    process, for its children and, as a subreaper, for the orphans it inherits.)"""
    import psutil

    n = 0
    for q in ([pid] if include_root else []) + tree(pid):
        try:
            psutil.Process(q).kill()  # psutil checks the process is still the same one (no pid reuse)
            n += 1
        except psutil.Error:
            pass
    return n
