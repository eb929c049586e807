"""Speed of ``placement-history-lns``'s enumeration (issue 45, session 27): one window of 12 tasks
consecutive in arrival order, from the middle of a shipped best known, every freed task's histories
listed beside the kept ones (:func:`placement.search.histlns.history_columns`, slack 1), with every
history and with at most one change (``max_changes = 1``). Wall seconds, histories listed and capped
enumerations land in ``benchmark.extra_info``; the two limits run side by side in one session::

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python -m pytest bench/bench_history_windows.py \\
        --benchmark-enable -q --benchmark-json runs/bench_history_windows.json
"""

from __future__ import annotations

import pytest

from edgebench.formulations.placement.bounds.ladder import cluster_durations
from edgebench.formulations.placement.bounds.trajectory import tasks_of
from edgebench.formulations.placement.search import cglns as CG
from edgebench.formulations.placement.search import histlns as HL
from edgebench.instances import sets
from edgebench.instances.io import content_hash, load_solution

CASES = [("placement-synthetic-3-multi-v2", 0), ("placement-hetero-6-v2", 0), ("placement-testbed-v2", 0)]


@pytest.mark.parametrize("changes", [None, 1])
@pytest.mark.parametrize("name,index", CASES)
def test_one_window(benchmark, name, index, changes):
    inst = sets.load_set(name)[index]
    p = inst.placement
    cols = CG.decisions_columns(p, load_solution(sets.best_known_solution(content_hash(inst)), inst).placement)
    tasks = {t.j: t for t in tasks_of(p, cluster_durations(p))}
    order = sorted(range(len(cols)), key=lambda j: (p.tasks[j].arrival, j))
    free = order[len(order) // 2:len(order) // 2 + HL.BLOCK]
    freed = set(free)
    kept = [c for c in cols if c.j not in freed]
    H = max(c.F for c in cols) + 1 + HL.REACH
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
