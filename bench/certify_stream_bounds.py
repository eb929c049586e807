"""Certify the multi-job stream bound of a mapping set with a larger search budget than the
certification's default (``runner/bounds.py:STREAM_BUDGET``).

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python -m bench.certify_stream_bounds \
        mapping-thesis-queue-v2 --set-limit 120 --budget 3600 [--write]

Prints per instance the bound, the sets whose H is still 1, wall and CPU seconds. With
``--write`` the manifest gets the bound through ``edgebench bestknown --refresh-bounds`` (only
improvements; the proof is docs/formulations/mapping.md, "Multi-job streams"), run on a copy
of the set so that no other set is touched, then copied back atomically.
"""

from __future__ import annotations

import argparse
import functools
import shutil
import tempfile
import time
from pathlib import Path

from edgebench.cli import main as cli_main
from edgebench.formulations.mapping_stream import stream_bound
from edgebench.instances import sets
from edgebench.instances.io import write_text_atomic
from edgebench.runner import bounds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("set")
    ap.add_argument("--set-limit", type=float, default=120.0, help="seconds of branch and bound per active set")
    ap.add_argument("--budget", type=float, default=3600.0, help="seconds per instance, all sets together")
    ap.add_argument("--write", action="store_true", help="write improved bounds into the set's manifest")
    a = ap.parse_args(argv)
    search = functools.partial(stream_bound, set_time_limit=a.set_limit)
    for inst in sets.load_set(a.set):
        t, c = time.perf_counter(), time.process_time()
        sb = search(inst, budget=a.budget)
        loose = [A for A, h in sb.set_bounds.items() if h is not None and h >= 1.0]
        print(f"{inst.id}: bound {sb.bound:.6f}  sets at H = 1: {loose}  wall {time.perf_counter() - t:.1f} s  "
              f"CPU {time.process_time() - c:.1f} s", flush=True)
    if not a.write:
        return 0
    bounds.stream_bound = search  # the refresh below recomputes with this budget
    bounds.STREAM_BUDGET = a.budget
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(sets.DATA_DIR / a.set, Path(tmp) / a.set)
        rc = cli_main(["bestknown", "--refresh-bounds", "--data-dir", tmp])
        if rc == 0:
            text = (Path(tmp) / a.set / "manifest.json").read_text()
            write_text_atomic(sets.DATA_DIR / a.set / "manifest.json", text)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
