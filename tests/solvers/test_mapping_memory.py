"""The candidate-scoring mapping heuristics (smart, flexitask, greedy-bw, ces-multi) keep no
per-candidate link loads (issue 28): the same decisions as before on every shipped mapping
set and generated instances, and bounded memory on a valid network at the node limit.
``tests/data/mapping_decisions.json`` was written by :func:`main` with the code before the
memory bound (regenerate: ``.venv/bin/python tests/solvers/test_mapping_memory.py``)."""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from edgebench import registry
from edgebench.instances.generators import generate
from edgebench.instances.sets import load_set

SOLVERS = ("smart", "flexitask", "greedy-bw", "ces-multi")
SETS = ("mapping-adversarial-v1", "mapping-thesis-20-v2", "mapping-thesis-queue-v2", "mapping-thesis-v1",
        "mapping-thesis-v2", "mapping-topologies-v1", "mapping-topologies-v2")
GENERATED = ({"preset": "thesis", "seed": 3}, {"preset": "thesis", "seed": 4})
FILE = Path(__file__).resolve().parents[1] / "data" / "mapping_decisions.json"


def instances(sets=SETS):
    for name in sets:
        yield from load_set(name)
    for params in GENERATED:
        yield generate("mapping", **params)


def decisions(instance, solver: str) -> dict:
    """status, then per job: nodes, bandwidths, start (None where the job was not placed)."""
    res = registry.get(solver).fn(instance, time_limit=None, seed=0)
    jobs = None
    dec = res.solution.decisions
    if dec is not None:
        jobs = [[list(j.nodes), [float(v.bandwidth) for v in j.links],
                 None if j.start is None else float(j.start)] for j in dec.jobs]
    return {"status": res.status, "jobs": jobs}


def main() -> None:
    out = {f"{inst.id}/{s}": decisions(inst, s) for inst in instances() for s in SOLVERS}
    fd, tmp = tempfile.mkstemp(dir=FILE.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(out, f, separators=(",", ":"), sort_keys=True)
    os.replace(tmp, FILE)



BEFORE = json.loads(FILE.read_text())


@pytest.fixture(scope="module")
def shipped():
    return list(instances())


@pytest.mark.parametrize("solver", SOLVERS)
def test_same_decisions_as_before_the_memory_bound(shipped, solver):
    """Node maps, statuses and starts exact; bandwidths within 1e-9 relative (the same
    arithmetic; the tolerance only guards against a BLAS or platform difference)."""
    known = [inst for inst in shipped if f"{inst.id}/{solver}" in BEFORE]  # instances added since: not recorded
    assert len(known) >= len(BEFORE) // len(SOLVERS) - 4, "the recorded instances are gone: regenerate the file"
    for inst in known:
        got, want = decisions(inst, solver), BEFORE[f"{inst.id}/{solver}"]
        assert got["status"] == want["status"], inst.id
        assert (got["jobs"] is None) == (want["jobs"] is None), inst.id
        for (nodes, bws, start), (w_nodes, w_bws, w_start) in zip(got["jobs"] or [], want["jobs"] or []):
            assert nodes == w_nodes and start == w_start, inst.id
            assert len(bws) == len(w_bws) and all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
                                                  for a, b in zip(bws, w_bws)), inst.id


#: the runner's memory case: address space 1.5 GiB (the interpreter with numpy, scipy and
#: pydantic maps about 0.7 GiB before any work), as in tests/test_hostile.py
MEMORY_LIMIT = 1536 * 2**20
NODE_LIMIT = 10_000  # the mapping node limit (docs/instance-format.md)
RING = """
import json, resource, sys, time
from edgebench import registry
from edgebench.instances import io
n, tight, limit = int(sys.argv[1]), sys.argv[2] == "tight", float(sys.argv[3])
links = ([{"src": 0, "dst": 1, "bw_min": 60.0, "bw_max": 70.0}, {"src": 1, "dst": 0, "bw_min": 50.0, "bw_max": 70.0}]
         if tight else [{"src": 0, "dst": 1, "bw_min": 1.0, "bw_max": 2.0}])
inst = io.instance_from_dict({"format_version": 1, "family": "mapping", "id": "ring", "mapping": {
    "nodes": [{"cpu": 100.0, "ram": 100.0}] * n,
    "links": [{"src": i, "dst": (i + 1) % n, "bandwidth": 100.0} for i in range(n)],
    "jobs": [{"arrival": 0.0, "duration": 1.0, "tasks": [{"cpu": 10.0, "ram": 10.0}] * 2, "links": links}],
    "objective": {"weights": [0.4, 0.3, 0.3]}}})
for s in sys.argv[4:]:
    t0 = time.perf_counter()
    res = registry.get(s).fn(inst, time_limit=limit, seed=0)
    print(json.dumps([s, res.status, time.perf_counter() - t0,
                      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss]), flush=True)
"""


def ring_run(n: int, kind: str, limit: float, *solvers: str) -> list:
    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    proc = subprocess.run([sys.executable, "-c", RING, str(n), kind, str(limit), *solvers], capture_output=True,
                          text=True, timeout=600, preexec_fn=preexec)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_roomy_ring_at_the_node_limit_fits_the_memory_limit():
    """A valid 10,000-node ring, one job of 2 tasks: every candidate's links have room, so
    no candidate's route is built (before: each candidate's load dictionary kept, over 2.3
    GB, stopped after minutes). Each heuristic finishes with a feasible schedule."""
    for s, status, secs, rss in ring_run(NODE_LIMIT, "roomy", 60.0, *SOLVERS):
        assert status == "feasible", (s, status, secs, rss)


def test_tight_ring_at_the_node_limit_stops_at_its_time_limit():
    """Two task links whose bw_min sum exceeds a link's bandwidth: each candidate's loads
    are summed one at a time (10^4 candidates x 10^4-hop routes); the heuristic stops at
    its time limit with status timeout (or finishes), within the memory limit."""
    for s, status, secs, rss in ring_run(NODE_LIMIT, "tight", 1.0, *SOLVERS):
        assert status in ("timeout", "feasible"), (s, status, secs, rss)  # the job fits: the two routes are disjoint


if __name__ == "__main__":
    main()
