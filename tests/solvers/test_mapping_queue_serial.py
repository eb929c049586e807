"""fifo's ``max_running``: one job at a time gives segments with exactly one active job, in
arrival order, deterministically; a bad value is one clear InputError."""

from __future__ import annotations

import pytest

from edgebench.errors import InputError
from edgebench.instances import sets
from edgebench.referee import evaluate
from edgebench.registry import solve


def test_fifo_one_job_at_a_time_is_serial_and_seeded():
    inst = sets.load_set("mapping-thesis-queue-v2")[0]
    a = solve(inst, "fifo", seed=0, max_running=1).solution
    b = solve(inst, "fifo", seed=0, max_running=1).solution
    assert a.mapping == b.mapping
    ev = evaluate(inst, a)
    assert ev.feasible
    jobs = inst.mapping.jobs
    spans = sorted((d.start, d.start + jobs[k].duration) for k, d in enumerate(a.mapping.jobs))
    assert all(e <= s2 + 1e-9 for (_, e), (s2, _) in zip(spans, spans[1:]))  # never two at once
    order = sorted(range(len(jobs)), key=lambda k: a.mapping.jobs[k].start)
    assert order == sorted(range(len(jobs)), key=lambda k: (jobs[k].arrival, k))


def test_fifo_max_running_rejects_bad_values():
    inst = sets.load_set("mapping-thesis-queue-v2")[0]
    with pytest.raises(InputError, match="max_running"):
        solve(inst, "fifo", max_running=0)
