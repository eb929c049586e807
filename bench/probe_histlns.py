"""One-off probe of issue 45, session 26 (docs/formulations/placement.md, History, "Which side holds the
multi-task gaps"); kept in history only.  Usage, from the repository root:
    python bench/probe_histlns.py SET FILE SECONDS BLOCK SLACK [WARM_SOLUTION] [SEED]
e.g. python bench/probe_histlns.py placement-synthetic-3-multi-v3 placement-synthetic-3-s2-92836ee5 270 12 1
Writes /tmp/hlns-FILE.json (the referee-checked schedule)."""
import sys, time, numpy as np, highspy
from edgebench.instances.io import load_instance, load_solution, write_json
from edgebench.formulations.placement.bounds.ladder import cluster_durations
from edgebench.formulations.placement.bounds.trajectory import tasks_of
from edgebench.formulations.placement.bounds.histip import _pair_columns, TooManyColumns
from edgebench.formulations.placement.search.cglns import decisions_columns, usage_column, to_decisions
from edgebench.referee import evaluate
from edgebench.registry import make_result
SCALE = 20
s, f, T, B, slack = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
inst = load_instance(f"instances/data/{s}/{f}.json.gz"); p = inst.placement
sol = load_solution(sys.argv[6] if len(sys.argv) > 6 else f"instances/data/{s}/solutions/{f}.json.gz", inst)
cur = {c.j: c for c in decisions_columns(p, sol.decisions)}
dur = cluster_durations(p); tasks = {t.j: t for t in tasks_of(p, dur)}
N = len(p.clusters); caps = [(c.capacity.cpu, c.capacity.gpu) for c in p.clusters]
a = [t.arrival for t in p.tasks]
def total(): return sum(c.F - a[c.j] for c in cur.values())
print("start", total(), flush=True)
order = sorted(cur, key=lambda j: (a[j], j))
rng = np.random.default_rng(int(sys.argv[7]) if len(sys.argv) > 7 else 0)
t0 = time.time(); it = 0
while time.time() - t0 < T:
    st = int(rng.integers(0, max(1, len(order) - B)))
    free = order[st:st + B]
    H = max(c.F for c in cur.values()) + 10
    used = np.zeros((N, 2, H + 50), dtype=np.int64)
    for j, c in cur.items():
        if j in free: continue
        for (tt, cc, gg) in c.use: used[c.n, 0, tt] += cc; used[c.n, 1, tt] += gg
    cols = {}
    ok = True
    for j in free:
        task = tasks[j]; lst = [cur[j]]
        top = ((cur[j].F - a[j] + slack) << SCALE)
        for n in task.opts:
            Lam = np.zeros((N, 2, H), dtype=np.int64)
            try:
                res = _pair_columns(task, n, Lam, None, H, top, False, [0], 200000, 20000, None)
            except TooManyColumns:
                ok = False; break
            opt = task.opts[n]
            for s0, F, hist, cost in res:
                amounts = []
                for k, o in enumerate(hist):
                    if o >= 0:
                        amounts += [(task.a + k, 0, int(opt.cpu[o])), (task.a + k, 1, int(opt.gpu[o]))]
                col = usage_column(p, j, n, amounts)
                if col is not None and col.F - a[j] <= cur[j].F - a[j] + slack:
                    lst.append(col)
        if not ok: break
        cols[j] = list(dict.fromkeys(lst))
    if not ok: continue
    # MIP
    h = highspy.Highs(); h.setOptionValue("output_flag", False); h.setOptionValue("threads", 1); h.setOptionValue("time_limit", 20.0)
    allc = [(j, c) for j in free for c in cols[j]]
    nc = len(allc)
    h.addVars(nc, np.zeros(nc), np.ones(nc))
    h.changeColsCost(nc, np.arange(nc, dtype=np.int32), np.array([c.F - a[j] for j, c in allc], dtype=float))
    h.changeColsIntegrality(nc, np.arange(nc, dtype=np.int32), np.array([highspy.HighsVarType.kInteger] * nc))
    for j in free:
        idx = [i for i, (jj, _) in enumerate(allc) if jj == j]
        h.addRow(1.0, 1.0, len(idx), np.array(idx, dtype=np.int32), np.ones(len(idx)))
    rows = {}
    for i, (j, c) in enumerate(allc):
        for (tt, cc, gg) in c.use:
            rows.setdefault((c.n, 0, tt), []).append((i, cc)); rows.setdefault((c.n, 1, tt), []).append((i, gg))
    for (n, r, tt), ent in rows.items():
        cap = caps[n][r] - (used[n, r, tt] if tt < used.shape[2] else 0)
        h.addRow(-highspy.kHighsInf, float(cap), len(ent), np.array([e[0] for e in ent], dtype=np.int32), np.array([float(e[1]) for e in ent]))
    x0 = np.zeros(nc); 
    for i, (j, c) in enumerate(allc):
        if c is cur[j]: x0[i] = 1
    hs = highspy.HighsSolution(); hs.col_value = list(x0); h.setSolution(hs)
    h.run()
    xv = np.array(h.getSolution().col_value)
    before = total()
    for i, (j, c) in enumerate(allc):
        if xv[i] > 0.5: cur[j] = c
    it += 1
    if total() < before:
        print(f"{time.time()-t0:.0f}s it {it} window {st} ncols {nc} {before} -> {total()}", flush=True)
dec = to_decisions([cur[j] for j in sorted(cur)])
ev = evaluate(inst, make_result(inst, "probe", status="feasible", decisions=dec, seed=0, started=time.perf_counter()).solution)
print("final", total(), "referee", ev.feasible, ev.objectives["total_completion_time"], "iterations", it)
write_json(f"/tmp/hlns-{f}.json", make_result(inst, "probe", status="feasible", decisions=dec, seed=0, started=time.perf_counter()).solution)
