"""Measurements behind the frontier table (docs/formulations/frontier.md): one exact solve per
case in a fresh process (so the peak memory is the case's own), one JSON line per case.

Run one case (prints one JSON line: status, objective, bound, gap, wall seconds, peak RSS)::

    .venv/bin/python bench/bench_exact_frontier.py case offloading heft-random 50 3 --limit 120

Run a list of cases one after the other, appending to a JSON-lines file (use ``nice -n 10``
on a shared machine)::

    nice -n 10 .venv/bin/python bench/bench_exact_frontier.py grid offloading --limit 120 \\
        --out runs/frontier-offloading.jsonl

Cases: ``offloading GEN TASKS SERVERS`` (offloading-cpsat, one thread, seed-0 instance of
preset GEN); ``mapping NODES TASK_NODES SEED BACKEND`` (mapping-exact, composite objective; grids
``mapping-<backend>`` run 10 x 4 / 6 / 8 on seeds 0-2, ``mapping-bnb`` 20 x 10 on seeds 0-2);
``placement PRESET TASKS VARIANT`` (placement-milp, threads from --threads).
Not a pytest module: the speed tables of bench_exact_*.py stay with pytest-benchmark.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

GRIDS = {
    "offloading": [["offloading", g, str(n), str(s)] for g in ("heft-random", "daggen") for n in (50, 100)
                   for s in (3, 4, 8)],
    "mapping": [["mapping", "20", "10", str(seed), "bnb"] for seed in range(3)]
               + [["mapping", "10", str(k), "0", "ortools-highs"] for k in (4, 6)],
    # issue 17 item 3: every MILP backend on the thesis sizes (10 nodes x 4 / 6 / 8 task nodes, seeds 0-2)
    **{f"mapping-{be}": [["mapping", "10", str(k), str(seed), be] for k in (4, 6, 8) for seed in range(3)]
       for be in ("ortools-highs", "ortools-scip", "ortools-cbc", "pulp-cbc", "pulp-highs", "pyomo-highs")},
    "mapping-bnb": [["mapping", "20", "10", str(seed), "bnb"] for seed in range(3)],
    # issue 17 item 3 (lumpiness cuts): the hard thesis sizes, and 10 x 8 on two more backends
    "mapping-milp-68": [["mapping", "10", str(k), str(seed), "ortools-highs"] for k in (6, 8) for seed in range(3)],
    "mapping-milp-8-others": [["mapping", "10", "8", str(seed), be] for be in ("pyomo-highs", "ortools-scip")
                              for seed in range(3)],
    # the joint-bound table (run once plain and once with --bnb-separate)
    "mapping-bnb-joint": [["mapping", "10", "8", str(seed), "bnb"] for seed in range(3)]
                         + [["mapping", "20", "8", "0", "bnb"]]
                         + [["mapping", "20", "10", str(seed), "bnb"] for seed in range(3)],
    "mapping-milp-others": [["mapping", "10", str(k), "0", be] for k in (4, 6)
                            for be in ("pyomo-highs", "ortools-scip", "pulp-highs", "ortools-cbc", "pulp-cbc")],
    "offloading-heft": [["offloading", "heft-random", str(n), str(s)] for n in (50, 100) for s in (3, 4, 8)],
    "offloading-daggen": [["offloading", "daggen", str(n), str(s)] for n in (50, 100) for s in (3, 4, 8)],
    "placement": [["placement", "hetero-6", "96", v] for v in ("single", "multi")],
    # the whole-episode target: run with --limit 600 --threads 2
    "placement-episodes": [["placement", "hetero-6", str(n), v] for n in (192, 384) for v in ("single", "multi")],
}


def run_case(args: list[str], limit: float, threads: int) -> dict:
    from edgebench import registry
    from edgebench.instances.generators import generate

    fam = args[0]
    if fam == "offloading":
        gen, n, s = args[1], int(args[2]), int(args[3])
        inst = generate("offloading", gen, seed=0, tasks=n, servers=s)
        solver, params = "offloading-cpsat", {"threads": threads}
    elif fam == "mapping":
        nodes, k, seed, be = int(args[1]), int(args[2]), int(args[3]), args[4]
        inst = generate("mapping", "thesis", seed=seed, nodes=nodes, task_nodes=k)
        solver, params = "mapping-exact", {"backend": be, "threads": threads}
    elif fam == "placement":
        preset, n, variant = args[1], int(args[2]), args[3]
        inst = generate("placement", preset, seed=0, num_tasks=n, variant=variant)
        solver, params = "placement-milp", {"threads": threads}
    else:
        raise SystemExit(f"unknown family {fam!r}")
    t0 = time.perf_counter()
    c0 = time.process_time()
    res = registry.solve(inst, solver, time_limit=limit, seed=0, **params)
    wall = time.perf_counter() - t0
    out = {"case": args, "solver": solver, "params": params, "time_limit": limit, "status": res.status,
           "objective": res.solution.objective, "bound": res.solution.bound, "gap": res.stats.get("mip_gap"),
           "wall_s": round(wall, 2), "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
           "message": str(res.stats.get("message", ""))[:300]} | _placement_phases(fam, res)
    if fam in ("mapping", "offloading"):  # the machine is shared: CPU seconds beside the wall time
        out["cpu_s"] = round(time.process_time() - c0, 2)
    if fam == "mapping":
        out.update(rounds=res.stats.get("rounds"),
                   warm_start=res.stats.get("warm_start"))
        if be == "bnb":
            from edgebench.formulations import mapping_bnb

            out.update(nodes=res.stats.get("nodes"), depth_nodes=res.stats.get("depth_nodes"),
                       bnb_joint=mapping_bnb.JOINT)
    if fam == "offloading":  # where the bound and the incumbent come from
        out["detail"] = {k: res.stats.get(k) for k in ("combinatorial_bound", "ceiled_bound", "cpsat_objective", "lns",
                                                      "probe", "resumed_cpsat")}
    return out


def _placement_phases(fam: str, res) -> dict:
    """For placement: where the time and the bound came from (local search, LP widening, MILP rounds)."""
    if fam != "placement":
        return {}
    st = res.stats
    its = [{k: it.get(k) for k in ("status", "objective", "bound", "build_time", "solve_time", "size", "late")}
           for it in st.get("iterations", [])]
    return {"phases": {"local_search": st.get("local_search"), "lp_widen": st.get("lp_widen"),
                       "lp_bound": st.get("lp_bound"), "incumbent_source": st.get("incumbent_source"),
                       "iterations": its}}


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("case", "grid"))
    ap.add_argument("rest", nargs="+")
    ap.add_argument("--limit", type=float, default=120.0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out")
    ap.add_argument("--bnb-separate", action="store_true",
                    help="mapping bnb: the separate bound only (mapping_bnb.JOINT = False), for old-vs-new tables")
    a = ap.parse_args(argv)
    if a.bnb_separate:
        from edgebench.formulations import mapping_bnb

        mapping_bnb.JOINT = False
    if a.mode == "case":
        print(json.dumps(run_case(a.rest, a.limit, a.threads)), flush=True)
        return
    for case in GRIDS[a.rest[0]]:
        cmd = [sys.executable, __file__, "case", *case, "--limit", str(a.limit), "--threads", str(a.threads)] \
            + (["--bnb-separate"] if a.bnb_separate else [])
        out = subprocess.run(cmd, capture_output=True, text=True)
        line = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else json.dumps(
            {"case": case, "error": out.stderr[-500:]})
        print(line, flush=True)
        if a.out:
            with open(a.out, "a") as fh:
                fh.write(line + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
