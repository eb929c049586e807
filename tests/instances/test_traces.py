"""Trace readers and ``edgebench convert``: small hand-written files (exact numbers, every
malformed-input path) and, when ../shared/traces is present, the real traces."""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
from pathlib import Path

import pytest

from edgebench.errors import InputError
from edgebench.instances import io, semantics
from edgebench.instances.traces import alibaba, daggen, default_traces_dir, testbed, wfcommons
from edgebench.instances.traces.cli import add_parser, parse_set

TRACES = default_traces_dir()
needs_traces = pytest.mark.skipif(
    TRACES is None, reason="real traces not found: no ../shared/traces beside the checkout and $EDGEBENCH_TRACES unset")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def roundtrip(inst, tmp_path: Path, name: str = "inst.json"):
    out = io.write_json(tmp_path / name, inst)
    back = io.load_instance(out)
    assert io.content_hash(back) == io.content_hash(inst)
    return back


# --------------------------------------------------------------------------------------
# default_traces_dir
# --------------------------------------------------------------------------------------


def test_default_traces_dir_env(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_TRACES", str(tmp_path))
    assert default_traces_dir() == tmp_path
    monkeypatch.setenv("EDGEBENCH_TRACES", str(tmp_path / "missing"))
    assert default_traces_dir() is None


def test_missing_default_file_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGEBENCH_TRACES", str(tmp_path / "missing"))
    with pytest.raises(InputError, match="no traces folder found"):
        testbed.generate_testbed()
    monkeypatch.setenv("EDGEBENCH_TRACES", str(tmp_path))
    with pytest.raises(InputError) as ei:
        testbed.generate_testbed()
    assert ei.value.file == str(tmp_path / testbed.PROFILES_FILE)


# --------------------------------------------------------------------------------------
# Alibaba
# --------------------------------------------------------------------------------------

POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
PODS = [
    "p0,1000,1024,1,1000,,LS,Running,50,500,50",        # before the window
    "p1,1500,2048,1,460,,LS,Running,100,400,110",       # fractional GPU -> 1; 290 s -> 5 steps
    "p2,4000,4096,0,0,,BE,Pending,130,200,",            # never scheduled: skipped
    "p3,10000,1024,0,0,,BE,Running,190,250,200",        # 10 cores: only node b; 50 s -> 1 step
    "p4,2000,1024,2,1000,,LS,Succeeded,250,2000,260",   # 2 GPUs: only node a; 1740 s -> 29 -> capped 5
    "p5,64000,1024,1,1000,,LS,Running,300,900,300",     # 64 cores: fits no node, dropped
    "p6,100,100,0,0,,BE,Failed,400,401,400",            # 1 core, 1 GiB; 1 s -> 1 step
]
NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model"
NODES = [
    "node-a,8000,16384,2,T4",
    "node-c,96000,393216,0,CPU",                        # no GPU: not a usable GPU node
    "node-b,32500,65000,1,V100",
]


def write_alibaba(tmp_path: Path, pods=None, nodes=None) -> tuple[Path, Path]:
    pp, np_ = tmp_path / "pods.csv", tmp_path / "nodes.csv"
    pp.write_text("\n".join([POD_HEADER, *(PODS if pods is None else pods)]) + "\n")
    np_.write_text("\n".join([NODE_HEADER, *(NODES if nodes is None else nodes)]) + "\n")
    return pp, np_


def test_alibaba_small_exact(tmp_path):
    pods, nodes = write_alibaba(tmp_path)
    inst = alibaba.convert(pods, nodes, clusters=2, seed=0, window_start=100, step_seconds=60, max_steps=5)
    pl = inst.placement
    assert [c.capacity.model_dump() for c in pl.clusters] == [
        {"cpu": 8, "gpu": 2, "memory": 16}, {"cpu": 32, "gpu": 1, "memory": 63}]
    assert [c.name for c in pl.clusters] == ["node-a (T4)", "node-b (V100)"]
    assert [t.name for t in pl.tasks] == ["p1", "p3", "p4", "p6"]
    assert [t.arrival for t in pl.tasks] == [0, 1, 2, 5]
    assert [t.type for t in pl.tasks] == ["fixed-5", "fixed-1", "fixed-5", "fixed-1"]
    assert [t.minimum.model_dump() for t in pl.tasks] == [
        {"cpu": 2, "gpu": 1, "memory": 2}, {"cpu": 10, "gpu": 0, "memory": 1},
        {"cpu": 2, "gpu": 2, "memory": 1}, {"cpu": 1, "gpu": 0, "memory": 1}]
    assert [t.eligible for t in pl.tasks] == [(0, 1), (1,), (0,), (0, 1)]
    assert pl.performance.kind == "synthetic"
    assert {k: (v.base, v.gpu_scale) for k, v in pl.performance.types.items()} == {
        "fixed-1": (1.0, None), "fixed-5": (0.2, None)}
    assert pl.step_seconds == 60 and pl.noise == 0 and pl.variant == "single"
    # the synthetic type reproduces the observed duration at the minimum and at any larger allocation
    for j, k in enumerate([5, 1, 5, 1]):
        t = pl.tasks[j]
        assert semantics.fixed_run_steps(pl, j, max(t.minimum.cpu, 1), t.minimum.gpu) == k
        cap = pl.clusters[t.eligible[0]].capacity
        assert semantics.fixed_run_steps(pl, j, cap.cpu, cap.gpu) == k
    m = inst.meta
    assert m["converter"] == "alibaba" and m["seed"] == 0
    assert m["counts"] == {"pods_in_window": 6, "skipped_unscheduled": 1, "skipped_no_deletion": 0,
                           "dropped_no_fit": 1, "durations_capped": 1, "tasks": 4}
    assert m["source"]["files"] == [{"name": "pods.csv", "sha256": sha(pods)},
                                    {"name": "nodes.csv", "sha256": sha(nodes)}]
    assert m["terms"].startswith("research use; cite ") and "Fragmentation" in m["terms"]
    assert m["params"]["window_start"] == 100 and m["params"]["max_tasks"] == 128
    assert m["sampled_nodes"] == ["node-a", "node-b"]
    roundtrip(inst, tmp_path)


def test_alibaba_max_tasks_window_and_seed(tmp_path):
    pods, nodes = write_alibaba(tmp_path)
    two = alibaba.convert(pods, nodes, clusters=2, window_start=100, step_seconds=60, max_tasks=2)
    assert [t.name for t in two.placement.tasks] == ["p1", "p3"]
    short = alibaba.convert(pods, nodes, clusters=2, window_start=100, window_seconds=150, step_seconds=60)
    assert [t.name for t in short.placement.tasks] == ["p1", "p3"]
    a = alibaba.convert(pods, nodes, clusters=1, seed=4, step_seconds=60)
    b = alibaba.convert(pods, nodes, clusters=1, seed=4, step_seconds=60)
    assert io.content_hash(a) == io.content_hash(b)
    assert a.meta["params"]["window_start"] in {50, 100, 190, 250, 300, 400}
    assert a.id != two.id  # non-default parameters are tagged in the id


def test_alibaba_no_task_and_unknown_param(tmp_path):
    pods, nodes = write_alibaba(tmp_path)
    with pytest.raises(InputError) as ei:
        alibaba.convert(pods, nodes, clusters=2, window_start=10_000)
    assert ei.value.field == "params.window_start"
    with pytest.raises(InputError) as ei:
        alibaba.convert(pods, nodes, clusters=2, windw=3)
    assert ei.value.field == "params.windw"
    with pytest.raises(InputError) as ei:
        alibaba.convert(pods, nodes, clusters=3)
    assert "2 usable GPU nodes" in ei.value.reason


@pytest.mark.parametrize("pods, field, reason", [
    (PODS[:2] + ["p9,12x,1024,1,1000,,LS,Running,120,300,120"], "row 4, column cpu_milli", "not a number"),
    (PODS[:2] + ["p9,1000,1024,1.5,1000,,LS,Running,120,300,120"], "row 4, column num_gpu", "not an integer"),
    (PODS[:2] + ["p9,1000,-5,1,1000,,LS,Running,120,300,120"], "row 4, column memory_mib", "negative"),
    (PODS[:2] + ["p9,1000,1024,1,1000,,LS,Running,120,300"], "row 4", "10 values"),
    (PODS[:2] + ["p9,1000,1024,1,1000,,LS,Running,120,100,120"], "row 4, column deletion_time", "before"),
    (PODS[:2] + ["p9,1000,1024,1,1500,,LS,Running,120,300,120"], "row 4, column gpu_milli", "above 1000"),
    (PODS[:2] + ["p9,1000,1024,1,1000,,LS,Running,,300,120"], "row 4, column creation_time", "empty"),
])
def test_alibaba_malformed_pods(tmp_path, pods, field, reason):
    pp, np_ = write_alibaba(tmp_path, pods=pods)
    with pytest.raises(InputError) as ei:
        alibaba.convert(pp, np_, clusters=2)
    assert ei.value.file == str(pp)
    assert ei.value.field == field
    assert reason in ei.value.reason


def test_alibaba_missing_column(tmp_path):
    pp = tmp_path / "pods.csv"
    pp.write_text(POD_HEADER.replace("memory_mib", "mem") + "\n" + PODS[1] + "\n")
    with pytest.raises(InputError) as ei:
        alibaba.read_pods(pp)
    assert (ei.value.file, ei.value.field) == (str(pp), "column memory_mib")
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,gpu\nn,1000,1\n")
    with pytest.raises(InputError) as ei:
        alibaba.read_nodes(nodes)
    assert ei.value.field == "column memory_mib"
    with pytest.raises(InputError, match="not found"):
        alibaba.convert(tmp_path / "nope.csv", nodes)


# --------------------------------------------------------------------------------------
# TapFinger test-bed profiles
# --------------------------------------------------------------------------------------

PROFILE_ROWS = [
    'a,1,1,100.0,"(10.0, 2.5)","(20.0, 2.0)"',
    'a,1,1,110.0,"(11.0, 2.5)","(21.0, 2.0)"',
    'a,1,2,60.0,"(6.0, 2.5)"',
    'a,2,1,80.0,"(8.0, 2.5)"',
    'a,2,2,40.0,"(4.0, 2.5)"',
    "b,1,1,30.0",
    "b,1,2,20.0",
    "b,2,1,25.0",
    "b,2,2,12.0",
]


def write_profiles(tmp_path: Path, rows=None) -> Path:
    p = tmp_path / "profiles.csv"
    p.write_bytes(("\r\n".join(PROFILE_ROWS if rows is None else rows) + "\r\n").encode())
    return p


def test_read_profiles_exact(tmp_path):
    perf = testbed.read_profiles(write_profiles(tmp_path))
    assert perf == {"kind": "table", "types": {
        "a": {"entries": [{"cpu": 1, "gpu": 1, "seconds": 105.0}, {"cpu": 1, "gpu": 2, "seconds": 60.0},
                          {"cpu": 2, "gpu": 1, "seconds": 80.0}, {"cpu": 2, "gpu": 2, "seconds": 40.0}]},
        "b": {"entries": [{"cpu": 1, "gpu": 1, "seconds": 30.0}, {"cpu": 1, "gpu": 2, "seconds": 20.0},
                          {"cpu": 2, "gpu": 1, "seconds": 25.0}, {"cpu": 2, "gpu": 2, "seconds": 12.0}]}}}
    runs = testbed.read_runs(write_profiles(tmp_path))
    assert runs[0]["epochs"] == [(10.0, 2.5), (20.0, 2.0)] and runs[5]["epochs"] == []


@pytest.mark.parametrize("rows, field, reason", [
    (PROFILE_ROWS[:4] + PROFILE_ROWS[5:], "type a, cpu 2, gpu 2", "no run at cpu 2 x gpu 2"),
    (["a,one,1,100.0"], "row 1, column cpu", "not a number"),
    (["a,1,1,100.0", "a,1,2,0"], "row 2, column completion_seconds", "positive"),
    (['a,1,1,100.0,"(10.0; 2.5)"'], "row 1, column epoch 1", "elapsed_seconds, loss"),
    (["a,1,1"], "row 1, column completion_seconds", "3 values"),
])
def test_read_profiles_malformed(tmp_path, rows, field, reason):
    p = write_profiles(tmp_path, rows)
    with pytest.raises(InputError) as ei:
        testbed.read_profiles(p)
    assert ei.value.file == str(p) and ei.value.field == field and reason in ei.value.reason


def test_generate_testbed_small(tmp_path):
    prof = write_profiles(tmp_path)
    inst = testbed.generate_testbed(seed=5, profiles=prof, clusters=2, num_tasks=12)
    pl = inst.placement
    assert inst.id == "placement-testbed-s5" and inst.family == "placement"
    assert len(pl.clusters) == 2 and all(c.capacity.model_dump() == {"cpu": 16, "gpu": 8, "memory": None}
                                         for c in pl.clusters)
    assert len(pl.tasks) == 12
    arr = [t.arrival for t in pl.tasks]
    assert arr == sorted(arr) and arr[0] >= 0
    assert {t.type for t in pl.tasks} <= {"a", "b"}
    assert all(t.minimum.cpu == 2 and t.minimum.gpu == 1 for t in pl.tasks)
    assert all(1 <= len(t.eligible) <= 2 and list(t.eligible) == sorted(t.eligible) for t in pl.tasks)
    assert pl.performance.kind == "table"
    assert (pl.step_seconds, pl.switching_overhead, pl.noise, pl.pending_size) == (10.0, 0.5, 0.0, 10)
    # seconds of cell (2, 1) of type a: 80 s = 8 steps of 10 s
    j = next(j for j, t in enumerate(pl.tasks) if t.type == "a")
    assert semantics.fixed_run_steps(pl, j, 2, 1) == 8
    m = inst.meta
    assert (m["preset"], m["seed"], m["params"]["rate"], m["params"]["num_tasks"]) == ("testbed", 5, 1.0, 12)
    assert m["source"]["files"] == [{"name": "profiles.csv", "sha256": sha(prof)}]
    assert m["terms"].startswith("research use; cite ")
    again = testbed.generate_testbed(seed=5, profiles=prof, clusters=2, num_tasks=12)
    assert io.content_hash(again) == io.content_hash(inst)
    other = testbed.generate_testbed(seed=6, profiles=prof, clusters=2, num_tasks=12)
    assert io.content_hash(other) != io.content_hash(inst)
    roundtrip(inst, tmp_path)


def test_generate_testbed_overrides(tmp_path):
    prof = write_profiles(tmp_path)
    inst = testbed.generate_testbed(profiles=prof, clusters=3, num_tasks=5, capacity=[[4, 2], [8, 4], [2, 1]],
                                    types=["b"], variant="multi")
    assert [c.capacity.cpu for c in inst.placement.clusters] == [4, 8, 2]
    assert {t.type for t in inst.placement.tasks} == {"b"} and list(inst.placement.performance.types) == ["b"]
    with pytest.raises(InputError) as ei:
        testbed.generate_testbed(profiles=prof, bogus=1)
    assert ei.value.field == "params.bogus" and "bogus" in ei.value.reason
    with pytest.raises(InputError) as ei:
        testbed.generate_testbed(profiles=prof, types=["zz"])
    assert ei.value.field == "params.types"
    with pytest.raises(InputError) as ei:
        testbed.generate_testbed(profiles=prof, capacity={"cpu": 0, "gpu": 1})
    assert ei.value.field == "params.capacity"


def test_poisson_arrivals():
    import numpy as np

    arr = testbed.poisson_arrivals(np.random.default_rng(0), 1.5, 3000)
    assert len(arr) == 3000 and arr == sorted(arr)
    assert 1.35 < 3000 / (arr[-1] + 1) < 1.65


# --------------------------------------------------------------------------------------
# daggen
# --------------------------------------------------------------------------------------

DOT = """// DAG automatically generated by daggen at Tue Aug  6 16:21:19 2019
// ./daggen --dot -n 3 --ccr 0.3
digraph G {
  1 [size="2000000000", alpha="0.17", expect_size="5000000"]
  1 -> 2 [size ="5000000"]
  1 -> 3 [size ="5000000"]
  1 -> 3 [size ="5000000"]
  2 [size="500000000", alpha="0.07", expect_size="7000000"]
  2 -> 3 [size ="7000000"]
  3 [size="1000000000", alpha="0.06", expect_size="0"]
}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_daggen_small_exact(tmp_path):
    f = write(tmp_path, "tiny.gv", DOT)
    inst = daggen.convert(f, seed=3, cloud=True)
    off = inst.offloading
    assert len(off.workflows) == 1
    wf = off.workflows[0]
    assert [t.name for t in wf.tasks] == ["1", "2", "3"]
    assert [t.functions[0].exec_time for t in wf.tasks] == [2.0, 0.5, 1.0]
    assert all((t.functions[0].cpu, t.functions[0].mem) == (1.0, 1.0) for t in wf.tasks)
    assert [(e.src, e.dst, e.data) for e in wf.edges] == [(0, 1, 5.0), (0, 2, 5.0), (1, 2, 7.0)]
    assert {t.functions[0].image for t in wf.tasks} <= {f"image{k}" for k in range(4)}
    assert (wf.arrival, wf.source < 4) == (0.0, True)
    assert len(off.servers) == 5 and off.servers[-1].is_cloud and off.servers[-1].speed == 4.0
    for s in off.servers[:4]:
        assert 1.0 <= s.speed <= 2.0 and s.cpu in {4, 5, 6, 7, 8} and s.mem in {4, 5, 6, 7, 8}
        assert set(s.images) <= {f"image{k}" for k in range(4)} and s.images
    assert all(off.distance[i][4] == 10.0 and off.distance[4][i] == 10.0 for i in range(4))
    for i in range(4):
        for j in range(4):
            assert off.distance[i][j] == off.distance[j][i] and (i == j) == (off.distance[i][j] == 0)
            assert off.distance[i][j] <= math.sqrt(2) + 1e-9
    assert (off.bandwidth, off.image_pull_delay) == (100.0, 0.5)
    # exec time on a server = work / speed (semantics), transfer = MB x distance / 100 MB/s
    assert semantics.exec_time(off, 0, 0, 4) == 0.5
    assert semantics.transfer_time(off, 0, 2, 0, 4) == pytest.approx(7.0 * 10 / 100)
    m = inst.meta
    assert m["daggen"] == [{"file": "tiny.gv", "command": "./daggen --dot -n 3 --ccr 0.3", "duplicate_edges_merged": 1}]
    assert m["source"]["files"] == [{"name": "tiny.gv", "sha256": sha(f)}]
    assert m["terms"].startswith("research use; cite ")
    assert io.content_hash(daggen.convert(f, seed=3, cloud=True)) == io.content_hash(inst)
    roundtrip(inst, tmp_path)


def test_daggen_parameters_and_combine(tmp_path):
    f = write(tmp_path, "tiny.gv", DOT)
    g = write(tmp_path, "tiny2.gv", DOT)
    inst = daggen.convert(f, servers=2, cloud=False, flops_per_second=1e8, images=1, bandwidth=10.0)
    off = inst.offloading
    assert len(off.servers) == 2 and not any(s.is_cloud for s in off.servers)
    assert [t.functions[0].exec_time for t in off.workflows[0].tasks] == [20.0, 5.0, 10.0]
    assert {t.functions[0].image for t in off.workflows[0].tasks} == {"image0"}
    both = daggen.convert([f, g], seed=1, arrival_rate=2.0)
    arr = [w.arrival for w in both.offloading.workflows]
    assert len(arr) == 2 and arr[0] == 0.0 and arr[1] > 0
    assert both.id != inst.id


@pytest.mark.parametrize("text, field, reason", [
    ("digraph G {\n  1 [size=\"3\"]\n  1 -> }\n", "line 3", "malformed DOT"),
    ("not a graph at all", "line 1, column 1", "malformed DOT"),
    ("digraph G {\n 1 [alpha=\"0.1\"]\n}\n", "node 1, attribute size", "missing attribute"),
    ("digraph G {\n 1 [size=\"abc\"]\n}\n", "node 1, attribute size", "not a number"),
    ("digraph G {\n 1 [size=\"1\"]\n 2 [size=\"1\"]\n 1 -> 2\n}\n", "edge 1 -> 2, attribute size", "missing"),
    ("digraph G {\n 1 [size=\"1\"]\n 2 [size=\"1\"]\n 1 -> 2 [size=\"1\"]\n 2 -> 1 [size=\"1\"]\n}\n", "edges",
     "cyclic"),
    ("graph G {\n 1 [size=\"1\"]\n}\n", None, "expected a digraph"),
])
def test_daggen_malformed(tmp_path, text, field, reason):
    f = write(tmp_path, "bad.gv", text)
    with pytest.raises(InputError) as ei:
        daggen.convert(f)
    assert ei.value.file == str(f) and reason in ei.value.reason
    if field is not None:
        assert ei.value.field is not None and ei.value.field.startswith(field)


# --------------------------------------------------------------------------------------
# WfCommons
# --------------------------------------------------------------------------------------


def wf15(parents_b=("ID1",)) -> dict:
    return {
        "name": "tiny-1.5", "schemaVersion": "1.5",
        "workflow": {
            "specification": {
                "tasks": [
                    {"name": "split_ID1", "id": "ID1", "parents": [], "children": ["ID2", "ID3"],
                     "inputFiles": ["in.txt"], "outputFiles": ["c1", "c2"]},
                    {"name": "analyze_ID2", "id": "ID2", "parents": list(parents_b), "children": ["ID3"],
                     "inputFiles": ["c1", "c2"], "outputFiles": ["r2"]},
                    {"name": "merge", "id": "ID3", "parents": ["ID1"], "children": [],
                     "inputFiles": ["c2", "r2"], "outputFiles": ["out"]},
                ],
                "files": [{"id": "in.txt", "sizeInBytes": 4_000_000}, {"id": "c1", "sizeInBytes": 1_000_000},
                          {"id": "c2", "sizeInBytes": 2_000_000}, {"id": "r2", "sizeInBytes": 500_000},
                          {"id": "out", "sizeInBytes": 10}],
            },
            "execution": {
                "makespanInSeconds": 20, "executedAt": "2024-01-01T00:00:00Z",
                "tasks": [
                    {"id": "ID1", "runtimeInSeconds": 4.5, "coreCount": 2, "memoryInBytes": 3_000_000_000},
                    {"id": "ID2", "runtimeInSeconds": 10.0},
                    {"id": "ID3", "runtimeInSeconds": 1.25, "coreCount": 1.5},
                ],
            },
        },
    }


def check_tiny_workflow(inst):
    wf = inst.offloading.workflows[0]
    assert [t.name for t in wf.tasks] == ["ID1", "ID2", "ID3"] or [t.name for t in wf.tasks] == [
        "split_ID1", "analyze_ID2", "merge"]
    fns = [t.functions[0] for t in wf.tasks]
    assert [f.exec_time for f in fns] == [4.5, 10.0, 1.25]
    assert [f.cpu for f in fns] == [2.0, 1.0, 1.5]
    assert [f.mem for f in fns] == [3.0, 1.0, 1.0]
    assert [f.image for f in fns] == ["split", "analyze", "merge"]
    assert [(e.src, e.dst, e.data) for e in wf.edges] == [(0, 1, 3.0), (0, 2, 2.0), (1, 2, 0.5)]
    assert [t.input_data for t in wf.tasks] == [4.0, 0.0, 0.0]
    imgs = {"split", "analyze", "merge"}
    assert all(set(s.images) <= imgs for s in inst.offloading.servers)


def test_wfcommons_15_exact(tmp_path):
    f = write(tmp_path, "tiny.json", json.dumps(wf15()))
    inst = wfcommons.convert(f, seed=2)
    check_tiny_workflow(inst)
    assert inst.offloading.workflows[0].name == "tiny-1.5"
    m = inst.meta
    assert m["workflows"][0]["layout"] == "1.5" and m["source"]["files"] == [{"name": "tiny.json", "sha256": sha(f)}]
    assert m["terms"].startswith("research use; cite ")
    roundtrip(inst, tmp_path)
    gz = tmp_path / "tiny.json.gz"
    gz.write_bytes(gzip.compress(f.read_bytes()))
    assert wfcommons.convert(gz, seed=2).offloading == inst.offloading


def test_wfcommons_old_layouts(tmp_path):
    wf14 = {"name": "tiny-1.4", "schemaVersion": "1.4", "workflow": {"executedAt": "x", "makespanInSeconds": 1, "tasks": [
        {"name": "split_ID1", "id": "ID1", "category": "split", "parents": [], "runtimeInSeconds": 4.5, "cores": 2,
         "memoryInBytes": 3_000_000_000,
         "files": [{"link": "input", "name": "in.txt", "sizeInBytes": 4_000_000},
                   {"link": "output", "name": "c1", "sizeInBytes": 1_000_000},
                   {"link": "output", "name": "c2", "sizeInBytes": 2_000_000}]},
        {"name": "analyze_ID2", "id": "ID2", "parents": ["split_ID1"], "runtimeInSeconds": 10.0,
         "files": [{"link": "input", "name": "c1", "sizeInBytes": 1_000_000},
                   {"link": "input", "name": "c2", "sizeInBytes": 2_000_000},
                   {"link": "output", "name": "r2", "sizeInBytes": 500_000}]},
        {"name": "merge", "id": "ID3", "parents": ["ID1", "analyze_ID2"], "runtimeInSeconds": 1.25, "cores": 1.5,
         "files": [{"link": "input", "name": "c2", "sizeInBytes": 2_000_000},
                   {"link": "input", "name": "r2", "sizeInBytes": 500_000}]},
    ]}}
    check_tiny_workflow(wfcommons.convert(write(tmp_path, "w14.json", json.dumps(wf14))))
    # 1.3: runtime, memory in KB, file size
    wf13 = json.loads(json.dumps(wf14))
    wf13["schemaVersion"] = "1.3"
    for t in wf13["workflow"]["tasks"]:
        t["runtime"] = t.pop("runtimeInSeconds")
        if "memoryInBytes" in t:
            t["memory"] = t.pop("memoryInBytes") / 1000
        for fl in t["files"]:
            fl["size"] = fl.pop("sizeInBytes")
    check_tiny_workflow(wfcommons.convert(write(tmp_path, "w13.json", json.dumps(wf13))))


def test_wfcommons_malformed(tmp_path):
    f = write(tmp_path, "cyc.json", json.dumps(wf15(parents_b=("ID1", "ID3"))))
    with pytest.raises(InputError) as ei:
        wfcommons.convert(f)
    assert ei.value.file == str(f) and "cyclic" in ei.value.reason
    assert ei.value.field == "workflow.specification.tasks"
    bad = wf15(parents_b=("ID9",))
    f = write(tmp_path, "unknown.json", json.dumps(bad))
    with pytest.raises(InputError) as ei:
        wfcommons.convert(f)
    assert ei.value.field == "workflow.specification.tasks[1].parents[0]" and "ID9" in ei.value.reason
    bad = wf15()
    bad["workflow"]["execution"]["tasks"][1]["runtimeInSeconds"] = "slow"
    f = write(tmp_path, "runtime.json", json.dumps(bad))
    with pytest.raises(InputError) as ei:
        wfcommons.convert(f)
    assert ei.value.field == "workflow.execution.tasks[1].runtimeInSeconds"
    bad = wf15()
    del bad["workflow"]["specification"]["files"][1]
    f = write(tmp_path, "nofile.json", json.dumps(bad))
    with pytest.raises(InputError) as ei:
        wfcommons.convert(f)
    assert ei.value.field == "workflow.specification.tasks[0].outputFiles[0]"
    f = write(tmp_path, "broken.json", '{"workflow": ')
    with pytest.raises(InputError, match="malformed JSON") as ei:
        wfcommons.convert(f)
    assert ei.value.file == str(f)
    f = write(tmp_path, "empty.json", '{"name": "x"}')
    with pytest.raises(InputError) as ei:
        wfcommons.convert(f)
    assert ei.value.field == "workflow"


# --------------------------------------------------------------------------------------
# edgebench convert
# --------------------------------------------------------------------------------------


def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="edgebench")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_parse_set():
    assert parse_set(["a=1", "b=true", "c=hello", 'd={"cpu": 3, "gpu": 2}', "e=[1,2]", "f=a=b", "g=null"]) == {
        "a": 1, "b": True, "c": "hello", "d": {"cpu": 3, "gpu": 2}, "e": [1, 2], "f": "a=b", "g": None}
    with pytest.raises(InputError) as ei:
        parse_set(["novalue"])
    assert ei.value.field == "--set"


def test_cli_convert(tmp_path, capsys):
    pods, nodes = write_alibaba(tmp_path)
    out = tmp_path / "out" / "ali.json"
    assert run_cli(["convert", "alibaba", "--pods", str(pods), "--nodes", str(nodes), "--clusters", "2",
                    "--set", "window_start=100", "--set", "step_seconds=60", "--set", "max_steps=5", "-o", str(out)]) == 0
    direct = alibaba.convert(pods, nodes, clusters=2, window_start=100, step_seconds=60, max_steps=5)
    assert io.content_hash(io.load_instance(out)) == io.content_hash(direct)
    assert "wrote" in capsys.readouterr().out

    several = tmp_path / "several"
    assert run_cli(["convert", "testbed", "--profiles", str(write_profiles(tmp_path)), "--count", "3",
                    "--set", "num_tasks=4", "-o", str(several)]) == 0
    names = sorted(p.name for p in several.iterdir())
    assert names == [f"placement-testbed-s{s}.json" for s in range(3)]

    dags = tmp_path / "dags"
    dags.mkdir()
    write(dags, "a.gv", DOT)
    write(dags, "b.gv", DOT)
    assert run_cli(["convert", "daggen", str(dags), "--seed", "1", "-o", str(tmp_path / "dout/")]) == 0
    assert sorted(p.name for p in (tmp_path / "dout").iterdir()) == [
        "offloading-daggen-a-s1.json", "offloading-daggen-b-s1.json"]
    assert run_cli(["convert", "daggen", str(dags), "--combine", "-o", str(tmp_path / "both.json.gz")]) == 0
    assert len(io.load_instance(tmp_path / "both.json.gz").offloading.workflows) == 2
    with pytest.raises(InputError) as ei:
        run_cli(["convert", "daggen", str(dags), "-o", str(tmp_path / "x.json")])
    assert ei.value.field == "-o"
    with pytest.raises(InputError) as ei:
        run_cli(["convert", "daggen", str(dags / "a.gv"), "--set", "servers=zero", "-o", str(tmp_path / "x.json")])
    assert ei.value.field == "params.servers"

    wfj = write(tmp_path, "wf.json", json.dumps(wf15()))
    assert run_cli(["convert", "wfcommons", str(wfj), "-o", str(tmp_path / "wf_out.json")]) == 0
    check_tiny_workflow(io.load_instance(tmp_path / "wf_out.json"))


def test_cli_help_has_examples(capsys):
    with pytest.raises(SystemExit) as ei:
        run_cli(["convert", "alibaba", "--help"])
    assert ei.value.code == 0
    assert "examples:" in capsys.readouterr().out


# --------------------------------------------------------------------------------------
# Real traces (../shared/traces)
# --------------------------------------------------------------------------------------


@needs_traces
def test_real_alibaba(tmp_path):
    inst = alibaba.convert(seed=0)
    pl = inst.placement
    assert inst.id == "placement-alibaba-c3-s0" and len(pl.clusters) == 3 and len(pl.tasks) == 192
    assert {f["name"] for f in inst.meta["source"]["files"]} == {alibaba.PODS_FILE, alibaba.NODES_FILE}
    assert all(t.type.startswith("fixed-") and 1 <= int(t.type[6:]) <= 50 for t in pl.tasks)
    roundtrip(inst, tmp_path)
    six = alibaba.convert(seed=1, clusters=6, step_seconds=120, max_tasks=100)
    assert len(six.placement.clusters) == 6 and len(six.placement.tasks) == 100


@needs_traces
def test_real_testbed(tmp_path):
    perf = testbed.read_profiles(TRACES / testbed.PROFILES_FILE)
    assert sorted(perf["types"]) == ["audio", "lm", "mnist"]
    for t in perf["types"].values():
        assert len(t["entries"]) == 16 * 8
        assert {(e["cpu"], e["gpu"]) for e in t["entries"]} == {(c, g) for c in range(1, 17) for g in range(1, 9)}
    assert testbed.profile_repeats(TRACES / testbed.PROFILES_FILE) == {"audio": 2, "lm": 2, "mnist": 2}
    inst = testbed.generate_testbed(seed=0)
    assert len(inst.placement.tasks) == 192 and inst.meta["params"]["rate"] == 1.5
    roundtrip(inst, tmp_path)
    six = testbed.generate_testbed(seed=0, clusters=6)
    assert len(six.placement.tasks) == 384 and six.meta["params"]["rate"] == 3.0


@needs_traces
def test_real_daggen(tmp_path):
    files = sorted((TRACES / "daggen_dags").glob("*.gv"))
    assert len(files) == 45
    # the smallest, one with duplicated edges, and the largest kinds
    for name in ("random.10.0.gv", "random.40.3.gv", "random.50.4.gv"):
        f = TRACES / "daggen_dags" / name
        inst = daggen.convert(f, seed=0)
        n = int(name.split(".")[1])
        assert len(inst.offloading.workflows[0].tasks) == n
        assert inst.meta["daggen"][0]["command"].startswith("./daggen --dot -n ")
        roundtrip(inst, tmp_path, name + ".json")
