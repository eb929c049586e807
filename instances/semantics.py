"""Derived quantities of instances: the one implementation that the referee, the exact
models, the heuristics, the simulators and the learned policies all call.

Placement: progress per step, noise realisation, durations under a fixed allocation, the
allocation options of a task on a cluster.  Mapping: canonical routes.  Offloading: task
demands, execution / image-pull / transfer times.  Choices the sources leave open are
documented in ``docs/instance-format.md``.
"""

from __future__ import annotations

import math
from array import array
from collections import OrderedDict, deque
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from edgebench.instances.model import (
        Capacity,
        Demand,
        MappingPayload,
        OffloadingPayload,
        PlacementPayload,
    )

#: progress counts as complete at 1 - EPS (0.1 added ten times is 0.9999999999999999)
PROGRESS_EPS = 1e-9
#: a fixed-allocation run longer than this many steps is treated as never finishing
MAX_RUN_STEPS = 100_000


# --------------------------------------------------------------------------------------
# Placement
# --------------------------------------------------------------------------------------


def fits(demand: "Demand", capacity: "Capacity") -> bool:
    if demand.cpu > capacity.cpu or demand.gpu > capacity.gpu:
        return False
    if demand.memory is not None and capacity.memory is not None and demand.memory > capacity.memory:
        return False
    return True


def table_seconds(perf, type_name: str, cpu: int, gpu: int) -> float | None:
    """Measured seconds for an allocation: the entry at the largest measured cpu <= cpu and
    gpu <= gpu (resources beyond the measured grid give no further speed-up); None below it."""
    grid = _table_grid(perf, type_name)
    cpus, gpus, table = grid
    ci = _floor_index(cpus, cpu)
    gi = _floor_index(gpus, gpu)
    if ci is None or gi is None:
        return None
    return table[ci][gi]


_TABLE_CACHE: dict[int, tuple] = {}


def _table_grid(perf, type_name: str):
    key = (id(perf), type_name)
    hit = _TABLE_CACHE.get(key)
    if hit is not None and hit[0] is perf:
        return hit[1]
    entries = perf.types[type_name].entries
    cpus = sorted({e.cpu for e in entries})
    gpus = sorted({e.gpu for e in entries})
    table = [[0.0] * len(gpus) for _ in cpus]
    for e in entries:
        table[cpus.index(e.cpu)][gpus.index(e.gpu)] = e.seconds
    grid = (cpus, gpus, table)
    _TABLE_CACHE[key] = (perf, grid)
    return grid


def _floor_index(values: list[int], x: int) -> int | None:
    best = None
    for i, v in enumerate(values):
        if v <= x:
            best = i
    return best


def increment(payload: "PlacementPayload", j: int, cpu: int, gpu: int, progress: float) -> float:
    """Noise-free progress gained in one step by task j at allocation (cpu, gpu)."""
    task = payload.tasks[j]
    if cpu < task.minimum.cpu or gpu < task.minimum.gpu or (cpu <= 0 and gpu <= 0):
        return 0.0
    perf = payload.performance
    if perf.kind == "synthetic":
        t = perf.types[task.type]
        w = 0.0
        if t.gpu_scale is not None:
            g = float(gpu) if t.cpu_per_gpu is None else min(float(gpu), cpu / t.cpu_per_gpu)
            w = math.tanh(g / t.gpu_scale)
        return w * math.sqrt(max(t.curvature - progress, 0.0)) + t.base
    secs = table_seconds(perf, task.type, cpu, gpu)
    if secs is None:
        return 0.0
    return payload.step_seconds / secs


def best_increment(payload: "PlacementPayload", j: int) -> float:
    """Largest first-step progress task j can get on any eligible cluster (0: it can never
    finish). The performance models are monotone in the allocation, so the largest
    allocation of each eligible cluster decides."""
    best = 0.0
    for n in payload.tasks[j].eligible:
        cap = payload.clusters[n].capacity
        best = max(best, increment(payload, j, cap.cpu, cap.gpu, 0.0))
    return best


@lru_cache(maxsize=65536)
def _noise_block(seed: int, j: int, block: int, amplitude: float) -> np.ndarray:
    rng = np.random.default_rng([seed, j, block])
    return rng.uniform(-amplitude, amplitude, size=256)


def noise_draw(payload: "PlacementPayload", j: int, k: int) -> float:
    """The noise draw eps ~ U[-noise, +noise] of task j's k-th executed step (k >= 0); 0 when
    the instance is noise-free. One realisation for both noise models."""
    if payload.noise <= 0:
        return 0.0
    block, off = divmod(k, 256)
    return float(_noise_block(payload.noise_seed, j, block, float(payload.noise))[off])


def noisy_gain(payload: "PlacementPayload", j: int, k: int, inc: float) -> float:
    """Progress of task j's k-th executed step whose noise-free gain is ``inc``
    (:func:`increment`), before any switching loss: the one noise semantics of the suite.

    ``noise_model = "multiplicative"``: ``inc * (1 + eps)``. ``"additive"`` (the TapFinger
    authors' ``+ (U - 0.5) * progress_noise``, clipped at 0): ``max(inc + eps, 0)``; a step
    with no noise-free gain (``inc <= 0``) gains nothing under either model."""
    if payload.noise <= 0 or inc <= 0:
        return inc
    eps = noise_draw(payload, j, k)
    if payload.noise_model == "additive":
        return max(inc + eps, 0.0)
    return inc * (1.0 + eps)


def worst_gain(payload: "PlacementPayload", inc: float) -> float:
    """The smallest progress any noise draw leaves of a noise-free gain ``inc`` > 0 (before
    switching loss): ``inc * (1 - noise)`` (multiplicative) or ``max(inc - noise, 0)``
    (additive)."""
    if payload.noise_model == "additive":
        return max(inc - payload.noise, 0.0)
    return inc * (1.0 - payload.noise)


def noise_factor(payload: "PlacementPayload", j: int, k: int) -> float:
    """Multiplicative noise (1 + eps) on task j's gain in its k-th executed step (k >= 0).
    Only defined for the multiplicative model: callers that may see an additive instance use
    :func:`noisy_gain`."""
    if payload.noise_model != "multiplicative":
        raise ValueError("noise_factor is the multiplicative model's factor; use noisy_gain")
    return 1.0 + noise_draw(payload, j, k)


def fixed_run_steps(payload: "PlacementPayload", j: int, cpu: int, gpu: int) -> int | None:
    """Steps task j needs from start to finish at a constant allocation (noise included,
    no switching); None if it never finishes."""
    p = 0.0
    for k in range(MAX_RUN_STEPS):
        gain = increment(payload, j, cpu, gpu, p)
        if gain <= 0:
            return None
        p += noisy_gain(payload, j, k, gain)
        if p >= 1.0 - PROGRESS_EPS:
            return k + 1
    return None


def allocation_options(payload: "PlacementPayload", j: int, n: int) -> list[tuple[int, int]]:
    """Every (cpu, gpu) that task j may be given on cluster n: minimum <= x <= capacity."""
    task = payload.tasks[j]
    cap = payload.clusters[n].capacity
    if not fits(task.minimum, cap):
        return []
    lo_c = max(task.minimum.cpu, 0)
    lo_g = max(task.minimum.gpu, 0)
    return [(c, g) for c in range(lo_c, cap.cpu + 1) for g in range(lo_g, cap.gpu + 1) if c + g > 0]


def dominant_options(payload: "PlacementPayload", j: int, n: int) -> list[tuple[int, int, int]]:
    """Pareto-minimal (cpu, gpu, steps) options of task j on cluster n: an option is kept
    only if no other option is at most as large in both resources and at most as long.

    Same list, in the same order (cpu, then gpu, increasing), as filtering
    :func:`allocation_options` by :func:`fixed_run_steps` pairwise; computed on the whole
    allocation grid at once: the durations of all allocations with the same per-step gain
    parameter are simulated together (:func:`_grid_steps`, bit-identical float operations),
    and the dominance test is a two-dimensional prefix minimum."""
    task = payload.tasks[j]
    cap = payload.clusters[n].capacity
    if not fits(task.minimum, cap):
        return []
    lo_c, lo_g = max(task.minimum.cpu, 0), max(task.minimum.gpu, 0)
    steps = _grid_steps(payload, j, lo_c, lo_g, cap.cpu, cap.gpu).astype(float)
    steps[steps < 0] = np.inf  # never finishes: not an option
    if lo_c == 0 and lo_g == 0:
        steps[0, 0] = np.inf  # the empty allocation is not an option
    # best[c, g] = shortest duration with at most c cpu and g gpu (prefix minimum); an option is
    # dominated iff an option strictly below it in cpu or in gpu is at most as long
    best = np.minimum.accumulate(np.minimum.accumulate(steps, axis=0), axis=1)
    below = np.full_like(steps, np.inf)
    below[1:, :] = best[:-1, :]
    below[:, 1:] = np.minimum(below[:, 1:], best[:, :-1])
    keep = np.isfinite(steps) & (below > steps)
    return [(lo_c + int(c), lo_g + int(g), int(steps[c, g])) for c, g in zip(*np.nonzero(keep))]


def _grid_steps(payload: "PlacementPayload", j: int, lo_c: int, lo_g: int, hi_c: int, hi_g: int) -> np.ndarray:
    """fixed_run_steps(payload, j, c, g) for every lo_c <= c <= hi_c, lo_g <= g <= hi_g as an
    int array indexed [c - lo_c, g - lo_g]; -1 where the task never finishes."""
    task = payload.tasks[j]
    perf = payload.performance
    cpu = np.arange(lo_c, hi_c + 1, dtype=float)[:, None]
    gpu = np.arange(lo_g, hi_g + 1, dtype=float)[None, :]
    shape = (cpu.size, gpu.size)
    if perf.kind == "synthetic":
        t = perf.types[task.type]
        if t.gpu_scale is None:
            param = np.zeros(shape)
        else:
            g = np.broadcast_to(gpu, shape) if t.cpu_per_gpu is None else np.minimum(gpu, cpu / t.cpu_per_gpu)
            uniq, inv = np.unique(g / t.gpu_scale, return_inverse=True)
            # math.tanh, as increment(): numpy's tanh may differ from libm in the last bit
            param = np.array([math.tanh(x) for x in uniq.tolist()])[inv.reshape(shape)]
        model = ("synthetic", float(t.curvature), float(t.base))
    else:
        param = np.array([[0.0 if (s := table_seconds(perf, task.type, c, g)) is None else payload.step_seconds / s
                           for g in range(lo_g, hi_g + 1)] for c in range(lo_c, hi_c + 1)], dtype=float)
        model = ("table", 0.0, 0.0)
    uniq, inv = np.unique(param, return_inverse=True)
    noise = (payload.noise_seed, j, float(payload.noise), payload.noise_model) if payload.noise > 0 else None
    return np.asarray(_run_steps(model, tuple(uniq.tolist()), noise))[inv.reshape(shape)]


@lru_cache(maxsize=4096)
def _run_steps(model: tuple, params: tuple[float, ...], noise: tuple | None) -> tuple[int, ...]:
    """Steps from start to finish of constant-allocation runs, one per per-step gain parameter
    (synthetic: w, the gain being w * sqrt(max(curvature - p, 0)) + base; table: the constant
    gain), under the noise realisation ``noise`` = (seed, task, amplitude, noise model) or
    None; -1: never. The same float operations in the same order as :func:`fixed_run_steps`
    (:func:`noisy_gain`), on arrays."""
    kind, curvature, base = model
    x = np.array(params, dtype=float)
    out = np.full(x.size, -1, dtype=np.int64)
    p = np.zeros(x.size)
    active = np.arange(x.size)
    draws = np.zeros(0)
    additive = noise is not None and noise[3] == "additive"
    for k in range(MAX_RUN_STEPS):
        if active.size == 0:
            break
        if noise is not None and k >= draws.size:
            seed, task, amp = noise[:3]
            draws = np.concatenate([draws, _noise_block(seed, task, k // 256, amp)])
        pa = p[active]
        gain = x[active] * np.sqrt(np.maximum(curvature - pa, 0.0)) + base if kind == "synthetic" else x[active]
        moving = gain > 0
        if noise is None:
            pa = pa + gain
        elif additive:
            pa = pa + np.maximum(gain + draws[k], 0.0)
        else:
            pa = pa + gain * (1.0 + draws[k])
        done = moving & (pa >= 1.0 - PROGRESS_EPS)
        out[active[done]] = k + 1
        p[active] = pa
        active = active[moving & ~done]
    return tuple(out.tolist())


# --------------------------------------------------------------------------------------
# Mapping
# --------------------------------------------------------------------------------------


def out_links(payload: "MappingPayload") -> list[list[tuple[int, int]]]:
    """For each physical node, its outgoing (dst, link index) sorted by dst then index."""
    out: list[list[tuple[int, int]]] = [[] for _ in payload.nodes]
    for k, link in enumerate(payload.links):
        out[link.src].append((link.dst, k))
    for row in out:
        row.sort()
    return out


def canonical_route(payload: "MappingPayload", a: int, b: int) -> tuple[int, ...] | None:
    """The thesis's routing rule made deterministic: the fewest-hop directed path from a to
    b, ties broken by breadth-first search visiting neighbours in increasing node index.
    Returns the link indices; () when a == b; None when b is unreachable."""
    return route_table(payload)[a][b]


#: link indices of built routes kept per network (about 80 MB); beyond, routes are rebuilt
ROUTE_CACHE_HOPS = 2_000_000
#: node entries of the sources' search trees kept per network (12 bytes each: 48 MB); beyond,
#: the least recently used source is searched again when it is used again
ROUTE_CACHE_NODES = 4_000_000


class RouteRow:
    """The canonical routes from one source: one breadth-first search (O(nodes + links)
    memory), each route built and kept only when it is asked for."""

    __slots__ = ("a", "up", "via", "hops", "max_hops", "_paths", "_kept", "_shared")

    def __init__(self, out: list[list[tuple[int, int]]], a: int, shared: list[int] | None = None) -> None:
        n = len(out)
        up = array("i", [-1]) * n  # the node before each node on its route (-1: unreached)
        via = array("i", [-1]) * n  # the link into each node on its route
        hops = array("i", [0]) * n
        up[a] = a
        queue = deque([a])
        while queue:
            u = queue.popleft()
            for v, k in out[u]:
                if up[v] < 0:
                    up[v] = u
                    via[v] = k
                    hops[v] = hops[u] + 1
                    queue.append(v)
        self.a = a
        self.up = up
        self.via = via
        self.hops = hops  # fewest hops from a to each node (0 where unreached)
        self.max_hops = max(hops) if n else 0
        self._paths: dict[int, tuple[int, ...] | None] = {}
        self._kept = 0  # link indices held by _paths
        self._shared = shared if shared is not None else [0]  # ... and by every row of the table

    def reachable(self, b: int) -> bool:
        return self.up[b] >= 0

    def __len__(self) -> int:
        return len(self.up)

    def __iter__(self):
        return (self[b] for b in range(len(self.up)))

    def __getitem__(self, b: int) -> tuple[int, ...] | None:
        if b < 0 or b >= len(self.up):
            raise IndexError(b)
        hit = self._paths.get(b, False)
        if hit is not False:
            return hit  # type: ignore[return-value]
        if b == self.a:
            path: tuple[int, ...] | None = ()
        elif self.up[b] < 0:
            path = None
        else:
            rev = []
            v = b
            while v != self.a:
                rev.append(self.via[v])
                v = self.up[v]
            path = tuple(reversed(rev))
        size = len(path or ())
        if self._shared[0] + size <= ROUTE_CACHE_HOPS:  # beyond: rebuilt on each use, memory stays flat
            self._paths[b] = path
            self._kept += size
            self._shared[0] += size
        return path


class RouteTable:
    """``table[a][b]`` = :func:`canonical_route` (a, b), computed lazily: a source's search
    runs on its first use, a route is built on its first use (issue 28: the eager P x P table
    of a 2,000-node ring held 4 * 10^9 link indices). Memory: O(nodes + links) per source used
    plus the length of each route used, both capped (``ROUTE_CACHE_NODES``,
    ``ROUTE_CACHE_HOPS``: beyond, searches and routes are redone on use)."""

    def __init__(self, payload: "MappingPayload") -> None:
        self._out = out_links(payload)
        self._rows: OrderedDict[int, RouteRow] = OrderedDict()  # least recently used first
        self._max_rows = max(1, ROUTE_CACHE_NODES // max(len(self._out), 1))
        self._kept = [0]
        self._back: list[list[tuple[int, int]]] | None = None
        self._into: OrderedDict[int, RouteRow] = OrderedDict()  # reverse searches, same cap

    def __len__(self) -> int:
        return len(self._out)

    def __iter__(self):
        return (self[a] for a in range(len(self._out)))

    def __getitem__(self, a: int) -> RouteRow:
        if a < 0 or a >= len(self._out):
            raise IndexError(a)
        row = self._rows.get(a)
        if row is not None:
            self._rows.move_to_end(a)
            return row
        row = self._rows[a] = RouteRow(self._out, a, self._kept)
        while len(self._rows) > self._max_rows:
            _, old = self._rows.popitem(last=False)
            self._kept[0] -= old._kept
        return row

    def hops_into(self, b: int) -> RouteRow:
        """A search on the reversed links from b: ``row.reachable(a)`` and ``row.hops[a]``
        are whether a reaches b and the hops of the canonical route a -> b (the fewest-hop
        count does not depend on tie-breaking), for every a, in one search instead of one per
        source. Rows kept least recently used first under ``_max_rows``."""
        row = self._into.get(b)
        if row is not None:
            self._into.move_to_end(b)
            return row
        row = self._into[b] = RouteRow(self._reversed(), b)
        while len(self._into) > self._max_rows:
            self._into.popitem(last=False)
        return row

    def _reversed(self) -> list[list[tuple[int, int]]]:
        """Incoming (src, link index) of each node, built once."""
        if self._back is None:
            self._back = [[] for _ in self._out]
            for u, links in enumerate(self._out):
                for v, k in links:
                    self._back[v].append((u, k))
        return self._back

    def max_hops(self) -> int:
        """The longest canonical route (hops), one search per source, nothing kept:
        O(nodes * (nodes + links)) time, O(nodes + links) memory."""
        return max((self._rows[a].max_hops if a in self._rows else RouteRow(self._out, a).max_hops
                    for a in range(len(self._out))), default=0)

    def strongly_connected(self) -> bool:
        """Every node reaches every other: node 0 reaches all, and all reach node 0 (two
        searches, O(nodes + links))."""
        n = len(self._out)
        if n <= 1:
            return True
        if not all(self[0].reachable(b) for b in range(n)):
            return False
        rev = RouteRow(self._reversed(), 0)
        return all(rev.reachable(b) for b in range(n))


#: the route tables of the last few payloads, keyed by identity (the payload is kept and
#: checked with ``is``, so a recycled id never returns a stale table)
_ROUTE_CACHE: dict[int, tuple] = {}
_ROUTE_CACHE_SIZE = 16


def route_table(payload: "MappingPayload") -> RouteTable:
    """The lazy canonical-route table of ``payload`` (cached by identity)."""
    hit = _ROUTE_CACHE.get(id(payload))
    if hit is not None and hit[0] is payload:
        return hit[1]
    table = RouteTable(payload)
    if len(_ROUTE_CACHE) >= _ROUTE_CACHE_SIZE:
        _ROUTE_CACHE.pop(next(iter(_ROUTE_CACHE)))
    _ROUTE_CACHE[id(payload)] = (payload, table)
    return table


def bandwidth_level(bw_min: float, bw_max: float, a: int, levels: int) -> float:
    """Bandwidth of level a in 0..levels-1: B = bw_min + a / (levels - 1) * (bw_max - bw_min)."""
    return bw_min + a / (levels - 1) * (bw_max - bw_min)


# --------------------------------------------------------------------------------------
# Offloading
# --------------------------------------------------------------------------------------


def topological_order(n: int, arcs) -> list[int]:
    """The lexicographically smallest topological order of nodes ``0..n-1`` under ``arcs``
    (pairs ``(src, dst)``): among the ready nodes the smallest index goes first, so the order is
    unique. The graphs are acyclic by validation (instances/model.py)."""
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(arcs)
    return list(nx.lexicographical_topological_sort(g))


def task_demand(payload: "OffloadingPayload", w: int, t: int) -> tuple[float, float]:
    fns = payload.workflows[w].tasks[t].functions
    return sum(f.cpu for f in fns), sum(f.mem for f in fns)


def task_images(payload: "OffloadingPayload", w: int, t: int) -> tuple[str, ...]:
    return tuple(sorted({f.image for f in payload.workflows[w].tasks[t].functions}))


def exec_time(payload: "OffloadingPayload", w: int, t: int, s: int) -> float:
    wf = payload.workflows[w]
    if wf.exec_times is not None:
        return float(wf.exec_times[t][s])
    return sum(f.exec_time for f in wf.tasks[t].functions) / payload.servers[s].speed


def pull_delay(payload: "OffloadingPayload", w: int, t: int, s: int) -> float:
    """Image-pull delay: image_pull_delay per image of the task that server s lacks (the
    cloud holds every image). Pulled images are not cached for later tasks."""
    srv = payload.servers[s]
    if srv.is_cloud:
        return 0.0
    missing = [img for img in task_images(payload, w, t) if img not in srv.images]
    return payload.image_pull_delay * len(missing)


def task_duration(payload: "OffloadingPayload", w: int, t: int, s: int) -> float:
    """Time task t occupies server s: image pulls, then execution."""
    return pull_delay(payload, w, t, s) + exec_time(payload, w, t, s)


def can_host(payload: "OffloadingPayload", w: int, t: int, s: int) -> bool:
    srv = payload.servers[s]
    if srv.is_cloud:
        return True
    cpu, mem = task_demand(payload, w, t)
    return cpu <= srv.cpu + 1e-9 and mem <= srv.mem + 1e-9


def transfer_time(payload: "OffloadingPayload", w: int, e: int, a: int, b: int) -> float:
    """Delay between the end of edge e's source task on server a and the start of its
    destination task on server b: 0 on the same server; the edge's cost if the instance
    gives one; else data x distance[a][b] / bandwidth (the patent's lost formula, as chosen)."""
    if a == b:
        return 0.0
    edge = payload.workflows[w].edges[e]
    if edge.cost is not None:
        return float(edge.cost)
    return edge.data * payload.distance[a][b] / payload.bandwidth


def input_time(payload: "OffloadingPayload", w: int, t: int, s: int) -> float:
    """Delay to fetch task t's input data from the workflow's source server to server s."""
    wf = payload.workflows[w]
    data = wf.tasks[t].input_data
    if data <= 0:
        return 0.0
    return data * payload.distance[wf.source][s] / payload.bandwidth
