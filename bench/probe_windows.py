"""One-off probe of issue 45, session 26: the first K tasks by arrival as an instance of their own; its bound,
placement-cg-lns (SECONDS, seed 0), then bound (7) at U = the search value.  Kept in history only.  Usage:
    python bench/probe_windows.py SET FILE K SECONDS"""
import sys, time
from edgebench.instances.io import read_json, instance_from_dict, write_json
from edgebench import registry
from edgebench.formulations.placement.bounds.ladder import reallocating_bound
from edgebench.formulations.placement.bounds.histip import histip_bound
s,f,k,T=sys.argv[1],sys.argv[2],int(sys.argv[3]),float(sys.argv[4])
d=read_json(f"instances/data/{s}/{f}.json.gz")
pl=d['placement']; pl['tasks']=sorted(pl['tasks'], key=lambda t:t['arrival'])[:k]
d['id']=d['id']+f'-first{k}'
inst=instance_from_dict(d)
b=reallocating_bound(inst.placement)
r=registry.solve(inst,"placement-cg-lns",time_limit=T,seed=0)
U=int(r.solution.objective)
t=time.perf_counter()
h=histip_bound(inst, U, time_limit=300, max_columns=100000)
print(f"{s} {f} first {k}: bound {b[0]} ({b[1][:40]}), cg-lns {T:.0f}s {U}, (7) at U={U}: {h.bound} ({h.reason}) schedule {h.schedule[0] if h.schedule else None} cols {h.stats.get('columns')} {time.perf_counter()-t:.0f}s", flush=True)
