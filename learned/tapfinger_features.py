"""Type-free task and allocation features for TapFinger's generic inputs (issue 42, item 4).

A network built with ``ModelConfig(inputs="generic")`` never sees a task-type name: every task
is described by what the instance's performance model says about it on the cluster that shows
it, and every allocation cell by what running the chosen task there would give. So one network
reads any placement instance -- any types, any cluster sizes (96 CPU / 8 GPU, the alibaba
windows), any number of clusters -- as it was trained, not through a mapping
(:mod:`edgebench.learned.tapfinger_generic`).

All run times are noise-free, from progress 0 (:func:`run_steps_grid`): the number of steps a
constant allocation needs, simulated with :func:`edgebench.instances.semantics.increment`'s
per-step gain (the synthetic model's gain depends on the progress; a table's is constant).
Times are read on a log scale, ``log_time(T) = log(1 + T) / log(1 + MAX_RUN_STEPS)`` in [0, 1]
(1: never finishes), and speed-ups as ratios ``T(a) / T(min)`` in [0, 1] (1: no speed-up).

Task features (:data:`TASK_FEATURES`, per task j on cluster n with capacity (C, G); the
minimum allocation (c0, g0) = j's minimum, (1, 0) when that is (0, 0)):

* ``log_time_min``: log_time(T(c0, g0)) -- for a running task instead the remaining steps at its
  current allocation, (1 - progress) / gain(allocation, progress);
* ``ratio_cpu_max``, ``ratio_gpu_max``, ``ratio_half``, ``ratio_full``: T(a) / T(c0, g0) at
  a = (C, g0), (c0, G), (max(c0, C // 2), max(g0, G // 2)), (C, G) -- the speed-up profile;
* ``min_cpu``, ``min_gpu``: the minimum over the capacity, c0 / C and g0 / G (at most 1).

Cell features (:data:`CELL_FEATURES`, per cell (c, g) of the chosen task's cluster grid; cells
beyond the cluster's capacity are 0 and masked): ``cpu`` c / C, ``gpu`` g / G, ``log_time``
log_time(T(c, g)), ``ratio`` T(c, g) / T(c0, g0), ``free_cpu_after`` (free CPU - c) / C and
``free_gpu_after`` (free GPU - g) / G, both clipped to [-1, 1]. These six are the cell features
"v1" (:data:`CELL_FEATURE_SETS`; ``ModelConfig.cell_features``, the default and every checkpoint
before it).

Cell features "v2" (:data:`CELL_FEATURES_V2`: v1's six, then seven more) describe each cell
relative to the **other allowed cells** of the same decision -- the cells (c, g) the action mask
allows task j on cluster n now (at least the minimum, within the free resources, finishing): with
T the noise-free steps of :meth:`TaskFeatures.steps`, T* = min T over the allowed cells (the best
run time reachable now) and (c*, g*) the **cheapest allowed cell reaching T*** (the smallest
c / C + g / G among the allowed cells with T = T*; ties: fewer GPUs, then fewer CPUs):

* ``speed_vs_best``: T* / T(c, g) in (0, 1] (1: the cell reaches the best run time; 0 if T is inf);
* ``cheapest_best``: 1 at (c*, g*), else 0 (one cell per decision);
* ``cpu_vs_cheapest``, ``gpu_vs_cheapest``: (c - c*) / C and (g - g*) / G, in [-1, 1];
* ``dominant``: 1 if no other allowed cell is at most as large in both resources and at most as
  long (Pareto-minimal in (cpu, gpu, T) among the allowed cells, the rule of
  :func:`edgebench.instances.semantics.dominant_options` on the allowed set), else 0;
* ``cpu_of_free``, ``gpu_of_free``: c / free CPU and g / free GPU, in [0, 1] (0 where nothing of
  that resource is free).

Cross-cluster features (:data:`CROSS_FEATURES`, per pending task j shown to cluster n's agent;
only with ``cross_features`` on, issue 42 session 24): what the **other clusters of j's queue** could
do with j now. With B(k) the fewest noise-free steps of j on cluster k at an allocation within k's
free resources now (inf where j's minimum does not fit) and F(k) the same within k's whole
capacity (:meth:`TaskFeatures.best_steps`), over the clusters k of j's queue:

* ``best_now_here``: min_k B(k) / B(n) in [0, 1] (1: no cluster could run j faster if started now;
  0: j cannot start here now);
* ``best_full_here``: min_k F(k) / F(n) (1: n is j's fastest cluster when free);
* ``now_vs_full``: min_k F(k) / min_k B(k) in [0, 1] (1: some cluster can start j now at the best
  speed any cluster of its queue reaches; 0: none can start it now).

They let one agent see the list-scheduling rule's reason to hold a task for a faster cluster
(``placement-lns-window{iterations=0}``, the behaviour-cloning expert ``online-list``), which a
cluster's own observation does not show.

Plan features (:data:`PLAN_FEATURES`, per pending task j shown to cluster n's agent; only with
``plan_features`` on, issue 42 session 25): the step's shared plan of the windows' tasks,
:func:`edgebench.solvers.placement_list_window.window_plan` (each task of the union of the windows, in
arrival order, at the cluster, allocation and start that finish it earliest after the running and
earlier planned tasks). With (k, tau) the cluster and start the plan gives j (:func:`plan_row`):

* ``plan_here``: 1 if k = n, else 0;
* ``plan_now``: 1 if k = n and tau = t (the plan starts j here now), else 0;
* ``plan_wait``: log_time(tau - t) (0: the plan starts j now, on any cluster; 1: j is not planned).

They are a coordination signal the per-cluster agents lack (a per-cluster earliest-finish rule
without the shared plan is about 2x Optimus on hetero-6 single, the plan itself about 0.72x;
docs/learned-baselines.md): a policy that reads them is the variant ``tapfinger-plan``, not the
paper's agents.

So the LNS expert's usual choice (the cheapest cell at the best run time) is the one cell with
``cheapest_best`` 1, and its neighbours differ from it by +-1/C or +-1/G in ``*_vs_cheapest``
-- the generic head no longer has to separate near-equal cells by weight scale (docs/tapfinger.md,
"Behaviour cloning of generic models").
"""

from __future__ import annotations

import math

import numpy as np

from edgebench.instances import semantics

__all__ = ["TASK_FEATURES", "CELL_FEATURES", "CELL_FEATURES_V2", "CELL_FEATURE_SETS", "CROSS_FEATURES",
           "PLAN_FEATURES", "TaskFeatures", "run_steps_grid", "log_time", "relative_cells", "plan_row"]

TASK_FEATURES = ("log_time_min", "ratio_cpu_max", "ratio_gpu_max", "ratio_half", "ratio_full", "min_cpu", "min_gpu")
CELL_FEATURES = ("cpu", "gpu", "log_time", "ratio", "free_cpu_after", "free_gpu_after")
CELL_FEATURES_V2 = CELL_FEATURES + ("speed_vs_best", "cheapest_best", "cpu_vs_cheapest", "gpu_vs_cheapest",
                                    "dominant", "cpu_of_free", "gpu_of_free")
#: the cell feature sets by name (``ModelConfig.cell_features``)
CELL_FEATURE_SETS = {"v1": CELL_FEATURES, "v2": CELL_FEATURES_V2}
CROSS_FEATURES = ("best_now_here", "best_full_here", "now_vs_full")
PLAN_FEATURES = ("plan_here", "plan_now", "plan_wait")
_LOG_MAX = math.log1p(semantics.MAX_RUN_STEPS)


def log_time(steps) -> np.ndarray:
    """log(1 + T) / log(1 + MAX_RUN_STEPS), 1 where T is inf (never finishes)."""
    t = np.minimum(np.asarray(steps, dtype=float), semantics.MAX_RUN_STEPS)
    return np.log1p(t) / _LOG_MAX


def run_steps_grid(payload, type_name: str, cap_c: int, cap_g: int) -> np.ndarray:
    """Noise-free steps from progress 0 to the end of a run of a ``type_name`` task at every
    allocation 0..cap_c x 0..cap_g (float array; inf where it makes no progress), ignoring the
    task's minimum (the caller masks it)."""
    perf = payload.performance
    cpu = np.arange(cap_c + 1, dtype=float)[:, None]
    gpu = np.arange(cap_g + 1, dtype=float)[None, :]
    shape = (cap_c + 1, cap_g + 1)
    done = 1.0 - semantics.PROGRESS_EPS
    if perf.kind == "synthetic":
        t = perf.types[type_name]
        if t.gpu_scale is None:
            w = np.zeros(shape)
        else:
            g = np.broadcast_to(gpu, shape) if t.cpu_per_gpu is None else np.minimum(gpu, cpu / t.cpu_per_gpu)
            w = np.tanh(g / t.gpu_scale)
        uniq, inv = np.unique(w, return_inverse=True)
        steps = np.full(uniq.size, np.inf)
        p = np.zeros(uniq.size)
        active = np.flatnonzero(uniq * math.sqrt(t.curvature) + t.base > 0)
        for k in range(semantics.MAX_RUN_STEPS):
            if active.size == 0:
                break
            p[active] += uniq[active] * np.sqrt(np.maximum(t.curvature - p[active], 0.0)) + t.base
            fin = p[active] >= done
            steps[active[fin]] = k + 1
            moving = uniq[active] * np.sqrt(np.maximum(t.curvature - p[active], 0.0)) + t.base > 0
            active = active[~fin & moving]
        out = steps[inv.reshape(shape)]
    else:
        secs = np.array([[semantics.table_seconds(perf, type_name, c, g) or np.inf for g in range(cap_g + 1)]
                         for c in range(cap_c + 1)], dtype=float)
        out = np.ceil(done * secs / payload.step_seconds)
    out = np.array(out, dtype=float)
    out[0, 0] = np.inf  # the empty allocation never runs
    return out


class TaskFeatures:
    """The features of one instance's tasks (see the module docstring), cached per (type,
    minimum, cluster capacity): built once per performance model and cluster list."""

    def __init__(self, payload) -> None:
        self.payload = payload
        self.caps = [(c.capacity.cpu, c.capacity.gpu) for c in payload.clusters]
        self._grids: dict[tuple, np.ndarray] = {}
        self._task: dict[tuple, np.ndarray] = {}
        self._static: dict[tuple, np.ndarray] = {}
        self._best: dict[tuple, np.ndarray] = {}

    def reset(self, payload) -> None:
        """A new episode's instance with the same performance model and clusters: the grids and
        the features (per type, minimum and cluster) stay."""
        self.payload = payload

    def _key(self, j: int, n: int) -> tuple:
        """The cache key of task j on cluster n: (type, minimum cpu, minimum gpu, cluster), the only
        things its run times and features depend on."""
        task = self.payload.tasks[j]
        return task.type, task.minimum.cpu, task.minimum.gpu, n

    def steps(self, j: int, n: int) -> np.ndarray:
        """T(c, g) of task j on cluster n's grid (inf below the minimum)."""
        task = self.payload.tasks[j]
        mn = task.minimum
        key = self._key(j, n)
        hit = self._grids.get(key)
        if hit is None:
            cap_c, cap_g = self.caps[n]
            gkey = (task.type, cap_c, cap_g)
            base = self._grids.get(gkey)
            if base is None:
                base = self._grids[gkey] = run_steps_grid(self.payload, task.type, cap_c, cap_g)
            hit = base.copy()
            hit[:mn.cpu, :] = np.inf
            hit[:, :mn.gpu] = np.inf
            self._grids[key] = hit
        return hit

    def best_steps(self, j: int, n: int, cpu: int, gpu: int) -> float:
        """The fewest noise-free steps of task j on cluster n at an allocation (c, g) with
        c <= cpu and g <= gpu (inf where j's minimum does not fit): a lookup in the running minimum
        of :meth:`steps` over both axes, cached like it."""
        key = self._key(j, n)
        best = self._best.get(key)
        if best is None:
            best = self._best[key] = np.minimum.accumulate(np.minimum.accumulate(self.steps(j, n), 0), 1)
        cap_c, cap_g = self.caps[n]
        return float(best[min(cpu, cap_c), min(gpu, cap_g)])

    def cross(self, j: int, n: int, queue, free) -> np.ndarray:
        """Task j's :data:`CROSS_FEATURES` as shown to cluster n (float32): ``queue`` the clusters
        j may run on (n among them), ``free[k]`` cluster k's free (cpu, gpu) now."""
        now = {k: self.best_steps(j, k, *free[k]) for k in queue}
        full = {k: self.best_steps(j, k, *self.caps[k]) for k in queue}
        b, f = min(now.values()), min(full.values())
        out = np.zeros(len(CROSS_FEATURES), dtype=np.float32)
        if math.isfinite(now[n]):
            out[0] = b / now[n]
        if math.isfinite(full[n]):
            out[1] = f / full[n]
        if math.isfinite(b):
            out[2] = f / b
        return out

    def _reference(self, j: int, n: int) -> tuple[int, int]:
        mn = self.payload.tasks[j].minimum
        cap_c, cap_g = self.caps[n]
        return min(mn.cpu if (mn.cpu or mn.gpu) else 1, cap_c), min(mn.gpu, cap_g)

    def task(self, j: int, n: int) -> np.ndarray:
        """Task j's :data:`TASK_FEATURES` on cluster n (float32; cached per (type, minimum,
        cluster), the only things they depend on, so the next episode's tasks reuse them)."""
        key = self._key(j, n)
        hit = self._task.get(key)
        if hit is not None:
            return hit
        cap_c, cap_g = self.caps[n]
        mn = self.payload.tasks[j].minimum
        T = self.steps(j, n)
        c0, g0 = self._reference(j, n)
        t0 = T[c0, g0]
        cells = [(cap_c, g0), (c0, cap_g), (max(c0, cap_c // 2), max(g0, cap_g // 2)), (cap_c, cap_g)]
        ratios = [_ratio(T[c, g], t0) for c, g in cells]
        hit = np.array([log_time(t0), *ratios, min(mn.cpu / cap_c, 1.0), min(mn.gpu / cap_g, 1.0)], dtype=np.float32)
        self._task[key] = hit
        return hit

    def running(self, j: int, n: int, cpu: int, gpu: int, progress: float) -> np.ndarray:
        """Task j's features while it runs on cluster n at (cpu, gpu) with ``progress``: the first
        entry is the remaining steps' log_time at that allocation."""
        out = self.task(j, n).copy()
        gain = semantics.increment(self.payload, j, cpu, gpu, progress)
        out[0] = log_time(max(1.0 - progress, 0.0) / gain if gain > 0 else np.inf)
        return out

    def static_cells(self, j: int, n: int) -> np.ndarray:
        """The cell features of task j on cluster n that do not depend on the free resources:
        ``cpu``, ``gpu``, ``log_time``, ``ratio`` of every cell of n's own grid (float64
        (cap_c + 1, cap_g + 1, 4)); cached per (type, minimum, cluster) like :meth:`steps`, so
        one instance's tasks of one type share one array and the next episode reuses it."""
        key = self._key(j, n)
        hit = self._static.get(key)
        if hit is not None:
            return hit
        cap_c, cap_g = self.caps[n]
        T = self.steps(j, n)
        t0 = T[self._reference(j, n)]
        c = np.arange(cap_c + 1, dtype=float)[:, None]
        g = np.arange(cap_g + 1, dtype=float)[None, :]
        shape = T.shape
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(np.isfinite(T), np.clip(T / t0, 0.0, 1.0), 1.0) if np.isfinite(t0) else \
                np.where(np.isfinite(T), 0.0, 1.0)
        hit = np.stack([np.broadcast_to(c / cap_c, shape), np.broadcast_to(g / cap_g, shape), log_time(T), ratio], -1)
        self._static[key] = hit
        return hit

    def cells(self, j: int, n: int, free_cpu: int, free_gpu: int, max_cpu: int, max_gpu: int, *,
              version: str = "v1", allowed: np.ndarray | None = None) -> np.ndarray:
        """The cell features ``version`` (:data:`CELL_FEATURE_SETS`) of every cell (c, g) of the
        (max_cpu + 1) x (max_gpu + 1) grid for task j on cluster n with the given free resources
        (float32 (max_cpu+1, max_gpu+1, F); cells beyond the cluster's capacity 0). "v2" needs
        ``allowed`` (bool (cap_c + 1, cap_g + 1): the allowed cells, the reference set of the
        relative features); its allowed cells get the values :meth:`cells_at` gives them, the
        other cells their v1 features and the relative ones against the same reference."""
        names = CELL_FEATURE_SETS[version]
        cap_c, cap_g = self.caps[n]
        out = np.zeros((max_cpu + 1, max_gpu + 1, len(names)), dtype=np.float32)
        c, g = np.meshgrid(np.arange(cap_c + 1), np.arange(cap_g + 1), indexing="ij")
        c, g = c.ravel(), g.ravel()
        if version == "v1":
            vals = self.cells_at(j, n, free_cpu, free_gpu, c, g)
        else:
            if allowed is None:
                raise ValueError("cell features v2 need the allowed cells")
            vals = self._cells_v1(j, n, free_cpu, free_gpu, c, g)
            ac, ag = np.nonzero(allowed)
            vals = np.concatenate([vals, relative_cells(self.steps(j, n), (cap_c, cap_g), free_cpu, free_gpu, c, g,
                                                        ref=(ac, ag))], 1)
        out[:cap_c + 1, :cap_g + 1] = vals.reshape(cap_c + 1, cap_g + 1, -1)
        return out

    def cells_at(self, j: int, n: int, free_cpu: int, free_gpu: int, c: np.ndarray, g: np.ndarray, *,
                 version: str = "v1") -> np.ndarray:
        """The cell features ``version`` (:data:`CELL_FEATURE_SETS`) of the cells (c[k], g[k])
        (int arrays within cluster n's capacity) for task j on cluster n with the given free
        resources: float32 (K, F), the values :meth:`cells` gives those cells (the allocation
        head reads only the allowed cells, :func:`edgebench.learned.tapfinger.winner_cells`).
        "v2": the cells given are the allowed cells, the reference set of the relative features
        (:func:`relative_cells`)."""
        if version == "v1":
            return self._cells_v1(j, n, free_cpu, free_gpu, c, g)
        if version != "v2":
            raise ValueError(f"unknown cell features {version!r}")
        rel = relative_cells(self.steps(j, n), self.caps[n], free_cpu, free_gpu, c, g)
        return np.concatenate([self._cells_v1(j, n, free_cpu, free_gpu, c, g), rel], 1)

    def _cells_v1(self, j: int, n: int, free_cpu: int, free_gpu: int, c: np.ndarray, g: np.ndarray) -> np.ndarray:
        cap_c, cap_g = self.caps[n]
        out = np.empty((len(c), len(CELL_FEATURES)), dtype=np.float32)
        out[:, :4] = self.static_cells(j, n)[c, g]
        out[:, 4] = np.clip((free_cpu - c.astype(float)) / cap_c, -1, 1)
        out[:, 5] = np.clip((free_gpu - g.astype(float)) / cap_g, -1, 1)
        return out


def relative_cells(T: np.ndarray, cap: tuple[int, int], free_cpu: int, free_gpu: int, c: np.ndarray,
                   g: np.ndarray, ref: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """The seven relative cell features of "v2" (:data:`CELL_FEATURES_V2` after the first six;
    module docstring) of the cells (c[k], g[k]) on a cluster of capacity ``cap`` = (C, G), from
    the steps grid ``T`` (cap_c + 1, cap_g + 1; inf: never finishes) and the free resources,
    against the reference set ``ref`` (cpu, gpu index arrays; default: the cells given, which
    then are the allowed ones). An empty or never-finishing reference set gives T* = inf:
    ``speed_vs_best`` 0, no ``cheapest_best``, the ``*_vs_cheapest`` of (c*, g*) = (0, 0).
    float32 (K, 7)."""
    cap_c, cap_g = cap
    c = np.asarray(c, dtype=np.int64)
    g = np.asarray(g, dtype=np.int64)
    rc, rg = (c, g) if ref is None else (np.asarray(ref[0], dtype=np.int64), np.asarray(ref[1], dtype=np.int64))
    t = T[c, g]
    tr = T[rc, rg]
    best = float(tr.min()) if tr.size else math.inf
    out = np.zeros((len(c), 7), dtype=np.float32)
    cs = gs = 0
    if np.isfinite(best):
        out[:, 0] = np.clip(np.where(np.isfinite(t), best / np.where(np.isfinite(t), t, 1.0), 0.0), 0.0, 1.0)
        at = np.flatnonzero(tr == best)
        use = rc[at] / cap_c + rg[at] / cap_g
        k = at[np.lexsort((rc[at], rg[at], use))[0]]  # the smallest use, then fewer GPUs, then fewer CPUs
        cs, gs = int(rc[k]), int(rg[k])
        out[:, 1] = (c == cs) & (g == gs)
    out[:, 2] = np.clip((c - cs) / cap_c, -1, 1)
    out[:, 3] = np.clip((g - gs) / cap_g, -1, 1)
    # Pareto-minimal among the reference cells: no other one at most as large in both and at most as long
    grid = np.full((cap_c + 1, cap_g + 1), np.inf)
    grid[rc, rg] = tr
    low = np.minimum.accumulate(np.minimum.accumulate(grid, axis=0), axis=1)
    below = np.full_like(grid, np.inf)
    below[1:, :] = low[:-1, :]
    below[:, 1:] = np.minimum(below[:, 1:], low[:, :-1])
    member = np.zeros(grid.shape, dtype=bool)
    member[rc, rg] = True
    out[:, 4] = member[c, g] & np.isfinite(t) & (below[c, g] > t)
    out[:, 5] = c / free_cpu if free_cpu > 0 else 0.0
    out[:, 6] = g / free_gpu if free_gpu > 0 else 0.0
    out[:, 5:7] = np.clip(out[:, 5:7], 0.0, 1.0)
    return out


def plan_row(plan: dict, j: int, n: int, t: int) -> np.ndarray:
    """Task j's :data:`PLAN_FEATURES` as shown to cluster n in step t (float32), from ``plan``
    (task -> (cluster, start, cpu, gpu), the step's window plan)."""
    out = np.zeros(len(PLAN_FEATURES), dtype=np.float32)
    entry = plan.get(j)
    if entry is None:
        out[2] = 1.0
        return out
    k, tau = entry[0], entry[1]
    out[0] = float(k == n)
    out[1] = float(k == n and tau == t)
    out[2] = log_time(max(tau - t, 0))
    return out


def _ratio(t: float, t0: float) -> float:
    """T(a) / T(min) in [0, 1]: 1 when a never finishes, 0 when a finishes and the minimum never does."""
    if not np.isfinite(t):
        return 1.0
    if not np.isfinite(t0):
        return 0.0
    return float(min(max(t / t0, 0.0), 1.0))
