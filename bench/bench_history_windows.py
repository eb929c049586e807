"""Speed of ``placement-history-lns``'s enumeration (issue 45, session 27): one window of 12 tasks
consecutive in arrival order, from the middle of a shipped best known, every freed task's histories
listed beside the kept ones (:func:`placement.search.histlns.history_columns`, slack 1), with every
history and with at most one change (``max_changes = 1``). Wall seconds, histories listed and capped
enumerations land in ``benchmark.extra_info``; the two limits run side by side in one session::

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python -m pytest bench/bench_history_windows.py \\
        --benchmark-enable -q --benchmark-json runs/bench_history_windows.json

``test_batched_vs_per_group`` (session 34) times the enumeration of the same window side by side
with the per-group version it replaced, read from git (commit ``BEFORE``; skipped outside a git
checkout): both list the same histories (asserted), alternating three times, best round each, CPU
seconds; the ratio lands in ``extra_info``.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from edgebench.formulations.placement.bounds import histip
from edgebench.formulations.placement.bounds.ladder import cluster_durations
from edgebench.formulations.placement.bounds.lagrange import SCALE
from edgebench.formulations.placement.bounds.trajectory import tasks_of
from edgebench.formulations.placement.search import cglns as CG
from edgebench.formulations.placement.search import histlns as HL
from edgebench.instances import sets
from edgebench.instances.io import content_hash, load_solution

CASES = [("placement-synthetic-3-multi-v2", 0), ("placement-hetero-6-v2", 0), ("placement-testbed-v2", 0)]


def _window(name, index):
    """The benchmark's window: (payload, columns of the shipped best known, tasks, freed tasks,
    kept columns, horizon)."""
    inst = sets.load_set(name)[index]
    p = inst.placement
    cols = CG.decisions_columns(p, load_solution(sets.best_known_solution(content_hash(inst)), inst).placement)
    tasks = {t.j: t for t in tasks_of(p, cluster_durations(p))}
    order = sorted(range(len(cols)), key=lambda j: (p.tasks[j].arrival, j))
    free = order[len(order) // 2:len(order) // 2 + HL.BLOCK]
    freed = set(free)
    kept = [c for c in cols if c.j not in freed]
    return p, cols, tasks, free, kept, max(c.F for c in cols) + 1 + HL.REACH


@pytest.mark.parametrize("changes", [None, 1])
@pytest.mark.parametrize("name,index", CASES)
def test_one_window(benchmark, name, index, changes):
    p, cols, tasks, free, kept, H = _window(name, index)
    out = {"columns": 0, "capped": 0}

    def run():
        out.update(columns=0, capped=0)
        for j in free:
            listed, capped = HL.history_columns(p, tasks[j], cols[j], kept, 1, H, max_changes=changes)
            out["columns"] += len(listed)
            out["capped"] += int(capped)

    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=1)
    benchmark.extra_info.update({"instance": f"{name}[{index}]", "max_changes": changes, **out})
    assert out["columns"] >= len(free)


#: the last commit with the per-group enumeration
BEFORE = "7673ce0"


def _per_group_histip():
    """formulations/placement/bounds/histip.py as of ``BEFORE``, imported under its own name."""
    root = Path(__file__).resolve().parent.parent
    try:
        text = subprocess.run(["git", "show", f"{BEFORE}:formulations/placement/bounds/histip.py"], cwd=root,
                              capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip(f"needs the git history (commit {BEFORE})")
    spec = importlib.util.spec_from_loader("histip_per_group", loader=None)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    exec(compile(text, f"{BEFORE}:histip.py", "exec"), mod.__dict__)
    return mod


@pytest.mark.parametrize("changes", [None, 1])
@pytest.mark.parametrize("name,index", CASES)
def test_batched_vs_per_group(benchmark, name, index, changes):
    old = _per_group_histip()
    p, cols, tasks, free, kept, H = _window(name, index)
    zero = np.zeros((len(p.clusters), 2, H), dtype=np.int64)
    rooms = {(j, n): CG.free_capacity(p, tasks[j], n, kept, H) for j in free for n in tasks[j].opts}

    def enumerate_with(mod):
        listed = []
        for (j, n), (blocked, Mu) in rooms.items():
            try:
                top = (cols[j].F - tasks[j].a + 1) << SCALE
                listed.append(sorted(mod.pair_histories(tasks[j], n, zero, Mu, H, top, p.variant == "single", [0],
                                                        HL.MAX_LABELS, HL.MAX_COLUMNS, None, extra=blocked,
                                                        max_changes=changes)))
            except histip.TooManyColumns:  # both versions raise timip's
                listed.append("capped")
        return listed

    best = {"per group": float("inf"), "batched": float("inf")}
    lists = {}
    for _ in range(3):
        for tag, mod in (("per group", old), ("batched", histip)):
            t0 = time.process_time()
            lists[tag] = enumerate_with(mod)
            best[tag] = min(best[tag], time.process_time() - t0)
    assert lists["batched"] == lists["per group"]
    benchmark.pedantic(lambda: enumerate_with(histip), rounds=1, iterations=1)
    benchmark.extra_info.update({"instance": f"{name}[{index}]", "max_changes": changes,
                                 "per_group_cpu_s": round(best["per group"], 3),
                                 "batched_cpu_s": round(best["batched"], 3),
                                 "ratio": round(best["per group"] / best["batched"], 2),
                                 "capped": sum(x == "capped" for x in lists["batched"])})
