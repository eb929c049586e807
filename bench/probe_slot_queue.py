"""Where a single-task placement schedule waits: per cluster, and what re-assigning the rest can
still gain (docs/formulations/placement.md, "hetero-6-v2: where its gap sits").

For the shipped best-known schedule of one instance (variant single) it prints, per cluster, the
tasks, their waiting (first executed step - arrival), their running (finish - first executed
step), the shortest-duration sum of the same tasks, and how many steps between the cluster's
first and last start have a start (a cluster that starts a task in every step is held by the
one-start-per-cluster-and-step rule, not by its capacity). With ``--keep K`` it also prints the
least total flow time of any schedule that keeps the tasks on the clusters K exactly as they
are, with the capacities of the other clusters dropped: an exact assignment of the other tasks
to (cluster not in K, step >= arrival) start slots at cost ``step - arrival + shortest
duration`` (the start-slot bound's assignment). Valid because a task's finish is at least its
first executed step plus its shortest duration on that cluster (bound (1)) and, in variant
single, two tasks never have the same first step on one cluster. It is a statement about the
schedules near this one, not a bound of the instance (the kept tasks could move too).

    .venv/bin/python bench/probe_slot_queue.py placement-hetero-6-v2 0 --keep 0,1

Not a pytest module; one instance per call.
"""

from __future__ import annotations

import argparse
import sys

from edgebench.errors import InputError
from edgebench.formulations.placement_bound import cluster_durations, start_slot_bound
from edgebench.formulations.placement_cglns import decisions_columns
from edgebench.instances import sets
from edgebench.instances.io import content_hash, load_solution


def reassigned(p, dur, sched, keep: set[int]) -> tuple[int, int]:
    """(kept flow time, least flow time of the other tasks on start slots outside ``keep``):
    bound (1)'s start-slot assignment (``start_slot_bound``) over the tasks not on ``keep``,
    each with its shortest durations on the clusters outside ``keep``."""
    kept = sum(f - p.tasks[j].arrival for j, (n, _, f) in enumerate(sched) if n in keep)
    rows = [{} if n in keep else {m: d for m, d in dur[j].items() if m not in keep}
            for j, (n, _, _) in enumerate(sched)]
    return kept, start_slot_bound(p, rows)


def _fail(message: str) -> None:
    print(f"probe_slot_queue: {message}", file=sys.stderr)
    sys.exit(2)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("set")
    ap.add_argument("index", type=int)
    ap.add_argument("--keep", default="", help="clusters whose tasks stay as they are, e.g. 0,1")
    a = ap.parse_args(argv)
    try:
        keep = {int(x) for x in a.keep.split(",")} if a.keep else set()
        inst = sets.load_set(a.set)[a.index]
    except (InputError, ValueError, IndexError) as e:
        _fail(f"{a.set}[{a.index}] --keep {a.keep!r}: {e}")
    p = inst.placement
    if p is None or p.variant != "single":
        _fail(f"{a.set}[{a.index}]: not a single-task placement instance (no start-slot rule to probe)")
    path = sets.best_known_solution(content_hash(inst))
    if path is None:
        _fail(f"{a.set}[{a.index}] ships no best-known solution")
    # (cluster, first executed step, finish by the referee's simulation) per task
    sched = [(c.n, c.s, c.F) for c in decisions_columns(p, load_solution(path, inst).placement)]
    dur = cluster_durations(p)
    total = sum(f - t.arrival for (_, _, f), t in zip(sched, p.tasks))
    print(f"{a.set}[{a.index}]: {len(p.tasks)} tasks, best known {total}")
    for n, cl in enumerate(p.clusters):
        mine = [j for j, s in enumerate(sched) if s[0] == n]
        starts = sorted({sched[j][1] for j in mine})
        wait = sum(sched[j][1] - p.tasks[j].arrival for j in mine)
        run = sum(sched[j][2] - sched[j][1] for j in mine)
        short = sum(dur[j][n] for j in mine)
        span = starts[-1] - starts[0] + 1 if starts else 0
        print(f"  cluster {n} ({cl.capacity.cpu} cpu, {cl.capacity.gpu} gpu): {len(mine)} tasks, "
              f"waiting {wait}, running {run} (shortest {short}), starts in {len(starts)} of {span} steps")
    if keep:
        kept, rest = reassigned(p, dur, sched, keep)
        print(f"keeping clusters {sorted(keep)} ({kept}): the others re-assigned on start slots at their "
              f"shortest durations {rest}, total {kept + rest} ({total - kept - rest} below the best known)")


if __name__ == "__main__":
    main()
