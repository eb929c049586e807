"""Moves of the adversarial search: one small random change of an instance, per family.

Every move edits a plain-JSON copy of the instance inside the family's **realistic ranges**
(:data:`RANGES`, the generators' ranges, documented in ``docs/adversary.md``, "Moves") and the
new instance is rebuilt through the one validated constructor
(:func:`edgebench.instances.io.instance_from_dict`): a move that the format rejects is
discarded and another is drawn, so every instance the search visits is a valid instance.
The size (tasks, clusters, servers, physical nodes, task nodes) never changes: it is a
parameter of the search.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import networkx as nx
import numpy as np

from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.generators import r4
from edgebench.instances.model import Instance

#: the realistic ranges each family's moves stay inside (docs/adversary.md, "Moves")
RANGES: dict[str, dict[str, Any]] = {
    "placement": {
        # arrival step in 0 .. arrival_per_task x tasks (a Poisson rate of 0.5 per step, below
        # the presets' 2..6, spreads n tasks over ~2n steps)
        "arrival_per_task": 2,
        # cluster capacities (cpu = gpu units): the hetero-6 preset's values
        "capacities": (4, 8, 12, 16, 24, 32),
        # a task is visible to 1 .. max_eligible clusters (the generators' default)
        "max_eligible": 3,
    },
    "offloading": {
        # classic form (Topcuoglu et al.): exec_times[t][s] = w (1 +- beta / 2), w in [0, 2 w_dag],
        # beta <= 2, w_dag = 20; edge costs in [0, 2 CCR w_dag] with CCR <= 10 (the paper's set)
        "exec_time": (0.0, 80.0),
        "edge_cost": (0.0, 400.0),
        "max_out_degree": 6,
        # data form (daggen-style presets): per-function execution at speed 1, edge data (MB),
        # server speeds, edge server CPU / memory
        "func_exec": (0.25, 2.5),
        "edge_data": (0.0, 50.0),
        "speed": (1.0, 2.0),
        "server_cpu": (4.0, 8.0),
        "server_mem": (4.0, 8.0),
    },
    "mapping": {
        # the thesis preset's ranges
        "node_cpu": (50.0, 100.0),
        "node_ram": (50.0, 100.0),
        "background": (0.1, 0.5),
        "link_bw": (100.0, 1000.0),
        "task_cpu": (10.0, 50.0),
        "task_ram": (10.0, 50.0),
        "bw_min": (10.0, 50.0),
        "bw_max": (50.0, 100.0),
    },
}

Move = Callable[[dict[str, Any], np.random.Generator], str | None]


def _uniform(rng: np.random.Generator, lo_hi: tuple[float, float]) -> float:
    return r4(rng.uniform(lo_hi[0], lo_hi[1]))


def _jitter(rng: np.random.Generator, x: float, lo_hi: tuple[float, float]) -> float:
    """x scaled by exp(N(0, 0.5)), clipped into the range: local steps next to the uniform
    redraws, so that the annealing can refine as well as jump."""
    lo, hi = lo_hi
    y = x * float(np.exp(rng.normal(0.0, 0.5))) if x > 0 else rng.uniform(lo, hi) * 0.1
    return r4(min(hi, max(lo, y)))


def _value(rng: np.random.Generator, x: float, lo_hi: tuple[float, float]) -> float:
    return _uniform(rng, lo_hi) if rng.random() < 0.5 else _jitter(rng, x, lo_hi)


# ---- placement ------------------------------------------------------------------------------


def _p_arrival(d: dict, rng: np.random.Generator) -> str:
    tasks = d["placement"]["tasks"]
    j = int(rng.integers(len(tasks)))
    hi = RANGES["placement"]["arrival_per_task"] * len(tasks)
    tasks[j]["arrival"] = int(rng.integers(0, hi + 1))
    return f"task {j} arrives at step {tasks[j]['arrival']}"


def _p_type(d: dict, rng: np.random.Generator) -> str | None:
    p = d["placement"]
    types = sorted(p["performance"]["types"])
    if len(types) < 2:
        return None
    j = int(rng.integers(len(p["tasks"])))
    p["tasks"][j]["type"] = types[int(rng.integers(len(types)))]
    return f"task {j} becomes {p['tasks'][j]['type']}"


def _p_eligible(d: dict, rng: np.random.Generator) -> str:
    p = d["placement"]
    j = int(rng.integers(len(p["tasks"])))
    n = len(p["clusters"])
    k = int(rng.integers(1, min(RANGES["placement"]["max_eligible"], n) + 1))
    p["tasks"][j]["eligible"] = sorted(int(c) for c in rng.choice(n, size=k, replace=False))
    return f"task {j} eligible on {p['tasks'][j]['eligible']}"


def _p_capacity(d: dict, rng: np.random.Generator) -> str:
    p = d["placement"]
    c = int(rng.integers(len(p["clusters"])))
    caps = RANGES["placement"]["capacities"]
    v = int(caps[int(rng.integers(len(caps)))])
    p["clusters"][c]["capacity"].update({"cpu": v, "gpu": v})
    return f"cluster {c} capacity {v}"


# ---- offloading -----------------------------------------------------------------------------


def _wf(d: dict, rng: np.random.Generator) -> tuple[int, dict]:
    wfs = d["offloading"]["workflows"]
    w = int(rng.integers(len(wfs)))
    return w, wfs[w]


def _o_exec(d: dict, rng: np.random.Generator) -> str:
    w, wf = _wf(d, rng)
    t = int(rng.integers(len(wf["tasks"])))
    if wf.get("exec_times") is not None:
        row = wf["exec_times"][t]
        s = int(rng.integers(len(row)))
        row[s] = _value(rng, row[s], RANGES["offloading"]["exec_time"])
        wf["tasks"][t]["functions"][0]["exec_time"] = r4(float(np.mean(row)))
        return f"workflow {w} task {t} takes {row[s]} on server {s}"
    fns = wf["tasks"][t]["functions"]
    f = int(rng.integers(len(fns)))
    fns[f]["exec_time"] = _value(rng, fns[f]["exec_time"], RANGES["offloading"]["func_exec"])
    return f"workflow {w} task {t} function {f} takes {fns[f]['exec_time']}"


def _o_edge_weight(d: dict, rng: np.random.Generator) -> str | None:
    w, wf = _wf(d, rng)
    if not wf["edges"]:
        return None
    k = int(rng.integers(len(wf["edges"])))
    e = wf["edges"][k]
    if e.get("cost") is not None:
        e["cost"] = _value(rng, e["cost"], RANGES["offloading"]["edge_cost"])
        return f"workflow {w} edge {e['src']}->{e['dst']} costs {e['cost']}"
    e["data"] = _value(rng, e["data"], RANGES["offloading"]["edge_data"])
    return f"workflow {w} edge {e['src']}->{e['dst']} carries {e['data']}"


def _o_toggle_edge(d: dict, rng: np.random.Generator) -> str | None:
    """Add or remove one edge; added edges go from a lower to a higher task index (acyclic
    whatever the other edges are, as in the generators) within the out-degree limit."""
    w, wf = _wf(d, rng)
    n = len(wf["tasks"])
    if n < 2:
        return None
    a, b = sorted(int(x) for x in rng.choice(n, size=2, replace=False))
    edges = wf["edges"]
    for k, e in enumerate(edges):
        if {e["src"], e["dst"]} == {a, b}:
            del edges[k]
            return f"workflow {w} edge {e['src']}->{e['dst']} removed"
    if sum(1 for e in edges if e["src"] == a) >= RANGES["offloading"]["max_out_degree"]:
        return None
    classic = any(e.get("cost") is not None for e in edges) or wf.get("exec_times") is not None
    new = {"src": a, "dst": b, "data": 0.0, "cost": _uniform(rng, RANGES["offloading"]["edge_cost"])} if classic \
        else {"src": a, "dst": b, "data": _uniform(rng, RANGES["offloading"]["edge_data"]), "cost": None}
    edges.append(new)
    edges.sort(key=lambda e: (e["src"], e["dst"]))
    return f"workflow {w} edge {a}->{b} added"


def _o_server(d: dict, rng: np.random.Generator) -> str | None:
    """Data form only (the classic form's servers are identical unit processors): an edge
    server's speed, CPU or memory."""
    o = d["offloading"]
    if any(wf.get("exec_times") is not None for wf in o["workflows"]):
        return None
    edge = [i for i, s in enumerate(o["servers"]) if not s["is_cloud"]]
    if not edge:
        return None
    i = edge[int(rng.integers(len(edge)))]
    key = ("speed", "cpu", "mem")[int(rng.integers(3))]
    rkey = {"speed": "speed", "cpu": "server_cpu", "mem": "server_mem"}[key]
    o["servers"][i][key] = _uniform(rng, RANGES["offloading"][rkey])
    return f"server {i} {key} {o['servers'][i][key]}"


def _o_image(d: dict, rng: np.random.Generator) -> str | None:
    """Data form: an edge server caches or drops one image (where tasks run without a pull)."""
    o = d["offloading"]
    if any(wf.get("exec_times") is not None for wf in o["workflows"]):
        return None
    images = sorted({f["image"] for wf in o["workflows"] for t in wf["tasks"] for f in t["functions"]})
    edge = [i for i, s in enumerate(o["servers"]) if not s["is_cloud"]]
    if not images or not edge:
        return None
    i = edge[int(rng.integers(len(edge)))]
    img = images[int(rng.integers(len(images)))]
    have = list(o["servers"][i]["images"])
    o["servers"][i]["images"] = sorted(set(have) ^ {img})
    return f"server {i} {'drops' if img in have else 'caches'} {img}"


# ---- mapping --------------------------------------------------------------------------------


def _m_node(d: dict, rng: np.random.Generator) -> str:
    m, R = d["mapping"], RANGES["mapping"]
    i = int(rng.integers(len(m["nodes"])))
    nd = m["nodes"][i]
    res = ("cpu", "ram")[int(rng.integers(2))]
    frac = nd[f"bg_{res}"] / nd[res]
    if rng.random() < 0.5:
        nd[res] = _value(rng, nd[res], R[f"node_{res}"])
    else:
        frac = float(rng.uniform(*R["background"]))
    nd[f"bg_{res}"] = r4(min(max(frac, R["background"][0]), R["background"][1]) * nd[res])
    return f"node {i} {res} {nd[res]} (background {nd[f'bg_{res}']})"


def _m_link_bw(d: dict, rng: np.random.Generator) -> str | None:
    links = d["mapping"]["links"]
    if not links:
        return None
    k = int(rng.integers(len(links)))
    a, b = links[k]["src"], links[k]["dst"]
    bw = _value(rng, links[k]["bandwidth"], RANGES["mapping"]["link_bw"])
    for link in links:  # both directions of the physical link
        if {link["src"], link["dst"]} == {a, b}:
            link["bandwidth"] = bw
    return f"link {a}-{b} bandwidth {bw}"


def _m_toggle_link(d: dict, rng: np.random.Generator) -> str | None:
    """Add or remove a physical link (both directions); the network stays connected."""
    m = d["mapping"]
    n = len(m["nodes"])
    if n < 2:
        return None
    a, b = sorted(int(x) for x in rng.choice(n, size=2, replace=False))
    links = m["links"]
    rest = [link for link in links if {link["src"], link["dst"]} != {a, b}]
    if len(rest) < len(links):
        g = nx.Graph()
        g.add_nodes_from(range(n))
        g.add_edges_from((link["src"], link["dst"]) for link in rest)
        if not nx.is_connected(g):
            return None
        m["links"] = rest
        return f"link {a}-{b} removed"
    bw = _uniform(rng, RANGES["mapping"]["link_bw"])
    links += [{"src": a, "dst": b, "bandwidth": bw}, {"src": b, "dst": a, "bandwidth": bw}]
    links.sort(key=lambda link: (link["src"], link["dst"]))
    return f"link {a}-{b} added ({bw})"


def _m_task(d: dict, rng: np.random.Generator) -> str:
    m, R = d["mapping"], RANGES["mapping"]
    j = int(rng.integers(len(m["jobs"])))
    tasks = m["jobs"][j]["tasks"]
    t = int(rng.integers(len(tasks)))
    res = ("cpu", "ram")[int(rng.integers(2))]
    tasks[t][res] = _value(rng, tasks[t][res], R[f"task_{res}"])
    return f"job {j} task {t} {res} {tasks[t][res]}"


def _m_task_link(d: dict, rng: np.random.Generator) -> str | None:
    m, R = d["mapping"], RANGES["mapping"]
    j = int(rng.integers(len(m["jobs"])))
    links = m["jobs"][j]["links"]
    if not links:
        return None
    k = int(rng.integers(len(links)))
    lo = _value(rng, links[k]["bw_min"], R["bw_min"])
    hi = max(lo, _value(rng, links[k]["bw_max"], R["bw_max"]))
    links[k].update({"bw_min": lo, "bw_max": hi})
    return f"job {j} task link {links[k]['src']}->{links[k]['dst']} needs {lo}..{hi}"


def _m_toggle_task_link(d: dict, rng: np.random.Generator) -> str | None:
    m, R = d["mapping"], RANGES["mapping"]
    j = int(rng.integers(len(m["jobs"])))
    job = m["jobs"][j]
    n = len(job["tasks"])
    if n < 2:
        return None
    a, b = (int(x) for x in rng.choice(n, size=2, replace=False))
    links = job["links"]
    for k, link in enumerate(links):
        if (link["src"], link["dst"]) == (a, b):
            del links[k]
            return f"job {j} task link {a}->{b} removed"
    lo = _uniform(rng, R["bw_min"])
    links.append({"src": a, "dst": b, "bw_min": lo, "bw_max": max(lo, _uniform(rng, R["bw_max"]))})
    links.sort(key=lambda link: (link["src"], link["dst"]))
    return f"job {j} task link {a}->{b} added"


MOVES: dict[str, tuple[Move, ...]] = {
    "placement": (_p_arrival, _p_type, _p_eligible, _p_capacity),
    "offloading": (_o_exec, _o_exec, _o_edge_weight, _o_toggle_edge, _o_server, _o_image),
    "mapping": (_m_node, _m_link_bw, _m_toggle_link, _m_task, _m_task, _m_task_link, _m_toggle_task_link),
}

#: drawn moves before a proposal gives up (each rejected by the format or not applicable)
MAX_TRIES = 50


def propose(instance: Instance, rng: np.random.Generator, *, moves: int = 1) -> tuple[Instance, list[str]]:
    """A neighbour of ``instance``: ``moves`` random moves of its family, each kept only when
    the result validates. Returns the new instance (same id) and what each move did."""
    fam = instance.family
    data = instance.model_dump(mode="json")
    done: list[str] = []
    current = instance
    tries = 0
    while len(done) < moves and tries < MAX_TRIES:
        tries += 1
        cand = copy.deepcopy(data)
        table = MOVES[fam]
        what = table[int(rng.integers(len(table)))](cand, rng)
        if what is None:
            continue
        try:
            current = io.instance_from_dict(cand)
        except InputError:
            continue
        data = cand
        done.append(what)
    return current, done
