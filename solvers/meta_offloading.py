"""Random-key encoding of the offloading family (patent) for the metaheuristics.

The tasks of all workflows are numbered globally in (workflow, task) order, G in all. A
genome is a float vector in [0, 1)^(2G), in two blocks of G keys:

* ``keys[0:G]`` — **server**: ``floor(key * h)`` indexes the servers that can host the task
  (``semantics.can_host``; every server when none can, which the instance model rules out),
  in increasing server index;
* ``keys[G:2G]`` — **priority**: among the tasks whose predecessors are all scheduled, the
  one with the smallest key is scheduled next (ties: global index).

Decoder: insertion-based *list scheduling*. Every task is scheduled once all its
predecessors are, on its chosen server, at the earliest time that is

* at or after its ready time ``max(arrival + semantics.input_time, max over incoming edges of
  (predecessor finish + semantics.transfer_time))`` (the referee's precedence rule), and
* at which its CPU and memory demand (``semantics.task_demand``) fits the server's profile
  of the tasks already scheduled there during its whole run ``semantics.task_duration`` —
  possibly in an idle gap before later reservations (insertion). The cloud is unbounded and
  a zero-duration task occupies nothing (as in the referee): both start when ready.

The profiles are the suite's one timeline (:class:`edgebench.instances.timeline.Timeline`,
shared with the list schedulers, ``random``, the exact models' warm starts and the patent
generator; one capacity tolerance, docs/referee.md).

Every regular schedule is reached: encoding a feasible schedule by its servers and its start
order (see :meth:`OffloadingProblem.encode`) decodes to a schedule in which every task starts
no later, so the encoding contains the optimum of ``offloading-cpsat``.

Evaluation: the referee's mean makespan — each decoded schedule is scored by
:func:`edgebench.referee.evaluate_decisions`, never by a copy of its formula; values are
memoised by choices (servers and priority ranks: the decoder is skipped) and by decoded
schedule (servers and start times: the referee is skipped).
"""

from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np

from edgebench.instances import semantics
from edgebench.instances.model import Instance
from edgebench.instances.timeline import Timeline, server_caps
from edgebench.solution import OffloadingDecisions, TaskSchedule, WorkflowDecision
from edgebench.solvers.meta_common import clip_keys, index_to_key

FAMILY = "offloading"
DEFAULT_CACHE_SIZE = 200_000


class OffloadingProblem:
    """The offloading instance as a random-key problem (see the module docstring)."""

    family = FAMILY
    sense = "min"

    def __init__(self, instance: Instance, *, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        if instance.family != FAMILY:
            raise ValueError(f"OffloadingProblem needs an offloading instance, got {instance.family!r}")
        o = instance.offloading
        assert o is not None
        self.instance = instance
        self.payload = o
        S = len(o.servers)
        self.num_servers = S
        self.caps = server_caps(o)
        #: global index g -> (workflow, task); offsets[w] = global index of task 0 of w
        self.tasks: list[tuple[int, int]] = []
        self.offsets: list[int] = []
        for w, wf in enumerate(o.workflows):
            self.offsets.append(len(self.tasks))
            self.tasks.extend((w, t) for t in range(len(wf.tasks)))
        G = self.num_tasks = len(self.tasks)
        self.dim = 2 * G
        self.hosts: list[tuple[int, ...]] = []
        self.demand: list[tuple[float, float]] = []
        self.duration: list[dict[int, float]] = []
        self.earliest_at: list[dict[int, float]] = []  # arrival + input_time per host
        for w, t in self.tasks:
            hosts = tuple(s for s in range(S) if semantics.can_host(o, w, t, s)) or tuple(range(S))
            self.hosts.append(hosts)
            self.demand.append(semantics.task_demand(o, w, t))
            self.duration.append({s: semantics.task_duration(o, w, t, s) for s in hosts})
            arr = float(o.workflows[w].arrival)
            self.earliest_at.append({s: arr + semantics.input_time(o, w, t, s) for s in hosts})
        self.n_hosts = np.array([len(h) for h in self.hosts], dtype=np.int64)
        #: per global task: incoming (global predecessor, transfer-time matrix [S][S])
        self.preds: list[list[tuple[int, list[list[float]]]]] = [[] for _ in range(G)]
        self.succs: list[list[int]] = [[] for _ in range(G)]
        for w, wf in enumerate(o.workflows):
            off = self.offsets[w]
            for e, edge in enumerate(wf.edges):
                a, b = off + edge.src, off + edge.dst
                tt = [[semantics.transfer_time(o, w, e, x, y) for y in range(S)] for x in range(S)]
                self.preds[b].append((a, tt))
                self.succs[a].append(b)
        self.indeg = [len(p) for p in self.preds]
        self.topo = semantics.topological_order(G, ((a, b) for a in range(G) for b in self.succs[a]))
        self.cache_size = int(cache_size)
        #: memo of referee values: by decoded schedule, and by the choices that fix it
        self._cache: dict[tuple, float] = {}
        self._choice_cache: dict[tuple, float] = {}
        self.cache_hits = 0
        self.referee_calls = 0

    # ---- decoding ---------------------------------------------------------------------

    def _choices(self, keys: list[float]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """What a genome (a list of floats already in [0, 1)) chooses: the server of every
        task and the rank of every task in priority order. They alone fix the decoding."""
        G = self.num_tasks
        servers = []
        for g in range(G):
            hosts = self.hosts[g]
            h = int(keys[g] * len(hosts))
            servers.append(hosts[h if h < len(hosts) else len(hosts) - 1])
        order = sorted(range(G), key=keys[G:].__getitem__)  # stable: ties by global index
        rank = [0] * G
        for r, g in enumerate(order):
            rank[g] = r
        return tuple(servers), tuple(rank)

    def _decode_list(self, keys: list[float]) -> tuple[list[int], list[float]]:
        """The decoder on one genome given as a list of floats already in [0, 1): (server,
        start) per global task."""
        return self._build(*self._choices(keys))

    def _build(self, chosen: tuple[int, ...], rank: tuple[int, ...]) -> tuple[list[int], list[float]]:
        """List scheduling for the given choices (see :meth:`_choices`)."""
        G = self.num_tasks
        server = [0] * G
        start = [0.0] * G
        fin = [0.0] * G
        timeline = Timeline(self.caps)
        indeg = list(self.indeg)
        ready = [(rank[g], g) for g in range(G) if indeg[g] == 0]
        heapq.heapify(ready)
        while ready:
            _, g = heapq.heappop(ready)
            s = chosen[g]
            est = self.earliest_at[g][s]
            for u, tt in self.preds[g]:
                r = fin[u] + tt[server[u]][s]
                if r > est:
                    est = r
            dur = self.duration[g][s]
            x = timeline.place(s, est, dur, *self.demand[g])
            server[g], start[g], fin[g] = s, x, x + dur
            for v in self.succs[g]:
                indeg[v] -= 1
                if indeg[v] == 0:
                    heapq.heappush(ready, (rank[v], v))
        return server, start

    def decode_arrays(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One genome [dim] -> (server [G] int, start [G] float) per global task."""
        keys = clip_keys(np.asarray(keys, dtype=float).reshape(self.dim))
        server, start = self._decode_list(keys.tolist())
        return np.array(server, dtype=np.int64), np.array(start, dtype=float)

    def _decisions(self, sv: list[int], st: list[float]) -> OffloadingDecisions:
        wfs = []
        for w, wf in enumerate(self.payload.workflows):
            off = self.offsets[w]
            wfs.append(WorkflowDecision(tasks=tuple(TaskSchedule(server=sv[off + t], start=st[off + t])
                                                    for t in range(len(wf.tasks)))))
        return OffloadingDecisions(workflows=tuple(wfs))

    def decisions_from_arrays(self, server: np.ndarray, start: np.ndarray) -> OffloadingDecisions:
        return self._decisions([int(s) for s in server], [float(x) for x in start])

    def decode(self, keys: np.ndarray) -> OffloadingDecisions:
        """One genome [dim] -> feasible OffloadingDecisions (server and start of every task)."""
        return self.decisions_from_arrays(*self.decode_arrays(keys))

    # ---- evaluation -------------------------------------------------------------------

    def _score(self, server: list[int], start: list[float]) -> float:
        key = (tuple(server), tuple(start))
        hit = self._cache.get(key)
        if hit is not None:
            self.cache_hits += 1
            return hit
        from edgebench.referee import evaluate_decisions

        self.referee_calls += 1
        ev = evaluate_decisions(self.instance, self._decisions(server, start))
        value = ev.primary_value if ev.feasible else math.inf
        if len(self._cache) >= self.cache_size:
            self._cache.clear()
        self._cache[key] = value
        return value

    def _value(self, keys: list[float]) -> float:
        choice = self._choices(keys)
        hit = self._choice_cache.get(choice)
        if hit is not None:
            self.cache_hits += 1
            return hit
        value = self._score(*self._build(*choice))
        if len(self._choice_cache) >= self.cache_size:
            self._choice_cache.clear()
        self._choice_cache[choice] = value
        return value

    def evaluate(self, pop: np.ndarray) -> np.ndarray:
        """Population [P, dim] -> [P] referee mean makespan of the decodings."""
        rows = clip_keys(np.atleast_2d(np.asarray(pop, dtype=float)).reshape(-1, self.dim)).tolist()
        return np.array([self._value(r) for r in rows], dtype=float)

    # ---- encoding (warm start) --------------------------------------------------------

    def encode(self, decisions: Any) -> np.ndarray | None:
        """A genome whose decoding is at least as good as a feasible ``decisions``: server
        key = the centre of the task's server among its hosts; priority = rank of the start
        time (ties: topological position). Returns None when the decisions are for another
        instance shape or put a task on a server that cannot host it."""
        if isinstance(decisions, dict):
            from edgebench.instances.io import validate_model

            decisions = validate_model(OffloadingDecisions, decisions)
        if not isinstance(decisions, OffloadingDecisions) or len(decisions.workflows) != len(self.offsets):
            return None
        G = self.num_tasks
        keys = np.zeros(self.dim)
        starts = np.zeros(G)
        for w, wd in enumerate(decisions.workflows):
            off = self.offsets[w]
            n = len(self.payload.workflows[w].tasks)
            if len(wd.tasks) != n:
                return None
            for t, ts in enumerate(wd.tasks):
                g = off + t
                if ts.server not in self.hosts[g]:
                    return None
                keys[g] = index_to_key(self.hosts[g].index(ts.server), len(self.hosts[g]))
                starts[g] = ts.start
        pos = np.empty(G, dtype=np.int64)
        pos[np.array(self.topo, dtype=np.int64)] = np.arange(G)
        rank = np.empty(G, dtype=np.int64)
        rank[np.lexsort((pos, starts))] = np.arange(G)
        keys[G:] = index_to_key(rank, G)
        return clip_keys(keys)


__all__ = ["OffloadingProblem"]
