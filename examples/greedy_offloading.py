#!/usr/bin/env python3
"""An external offloading solver that imports nothing from edgebench: plain Python reading
an instance file (instance format v1, offloading family) and writing a solution file
(solution format v1). Any language can do the same; see docs/tutorial.md.

    python3 greedy_offloading.py INSTANCE SOLUTION [--time-limit S] [--seed N]

The rule: earliest finish time list scheduling. Workflows in arrival order, tasks in
topological order; each task goes to the server, among those with room for it, where it
would finish first; an edge server runs one task at a time (so its capacity always holds),
the cloud runs any number. Deterministic (the seed is accepted and unused).

The solution carries the instance's content hash (sha256 of the canonical JSON: keys
sorted, no whitespace) so that ``edgebench import`` can match it to its instance.
"""

import argparse
import gzip
import hashlib
import json
import os
import tempfile


def read_json(path):
    with open(path, "rb") as fh:
        raw = fh.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def content_hash(data):
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def topological_order(n, edges):
    preds = [0] * n
    succ = [[] for _ in range(n)]
    for e in edges:
        succ[e["src"]].append(e["dst"])
        preds[e["dst"]] += 1
    ready = sorted(v for v in range(n) if preds[v] == 0)
    order = []
    while ready:
        v = ready.pop(0)
        order.append(v)
        for u in succ[v]:
            preds[u] -= 1
            if preds[u] == 0:
                ready.append(u)
        ready.sort()
    return order


def schedule(off):
    servers = off["servers"]
    free_at = [0.0] * len(servers)  # edge servers run one task at a time
    out = []
    plan = [None] * len(off["workflows"])
    for w in sorted(range(len(off["workflows"])), key=lambda k: (off["workflows"][k]["arrival"], k)):
        wf = off["workflows"][w]
        tasks, edges = wf["tasks"], wf["edges"]
        server_of, start, finish = {}, {}, {}
        for t in topological_order(len(tasks), edges):
            fns = tasks[t]["functions"]
            cpu, mem = sum(f["cpu"] for f in fns), sum(f["mem"] for f in fns)
            images = {f["image"] for f in fns}
            best = None
            for s, srv in enumerate(servers):
                if not srv["is_cloud"] and (cpu > srv["cpu"] + 1e-9 or mem > srv["mem"] + 1e-9):
                    continue
                if wf.get("exec_times") is not None:
                    exe = float(wf["exec_times"][t][s])
                else:
                    exe = sum(f["exec_time"] for f in fns) / srv["speed"]
                pulls = 0.0 if srv["is_cloud"] else off["image_pull_delay"] * len(images - set(srv["images"]))
                ready = wf["arrival"]
                if tasks[t]["input_data"] > 0:
                    ready += tasks[t]["input_data"] * off["distance"][wf["source"]][s] / off["bandwidth"]
                for e in edges:
                    if e["dst"] == t:
                        a = server_of[e["src"]]
                        delay = 0.0 if a == s else (e["cost"] if e.get("cost") is not None
                                                    else e["data"] * off["distance"][a][s] / off["bandwidth"])
                        ready = max(ready, finish[e["src"]] + delay)
                begin = ready if srv["is_cloud"] else max(ready, free_at[s])
                end = begin + pulls + exe
                if best is None or end < best[0] - 1e-12:
                    best = (end, s, begin)
            end, s, begin = best
            server_of[t], start[t], finish[t] = s, begin, end
            if not servers[s]["is_cloud"]:
                free_at[s] = end
        plan[w] = {"tasks": [{"server": server_of[t], "start": start[t]} for t in range(len(tasks))]}
        out.append(max(finish.values()) - wf["arrival"])
    return plan, sum(out) / len(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("instance")
    ap.add_argument("solution")
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    inst = read_json(args.instance)
    if inst.get("family") != "offloading":
        raise SystemExit(f"greedy_offloading: {args.instance} is a {inst.get('family')} instance, not offloading")
    plan, mean_makespan = schedule(inst["offloading"])
    solution = {
        "format_version": 1, "family": "offloading", "instance_id": inst["id"],
        "instance_hash": content_hash(inst), "solver": "greedy-eft (examples/greedy_offloading.py)",
        "params": {}, "seed": args.seed, "status": "feasible",
        "offloading": {"workflows": plan}, "objective": mean_makespan,
    }
    folder = os.path.dirname(os.path.abspath(args.solution))
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")  # write, then rename: never half a file
    with os.fdopen(fd, "w") as fh:
        json.dump(solution, fh, indent=1)
    os.replace(tmp, args.solution)


if __name__ == "__main__":
    main()
