"""The ``alibaba`` placement preset (issue 42): openb windows for training that never overlap
the windows of the shipped set placement-alibaba-v2. Needs the real traces (../shared/traces
or $EDGEBENCH_TRACES); skipped without them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgebench.cli import main
from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.generators import generate
from edgebench.instances.traces import alibaba, default_traces_dir
from edgebench.instances.traces.alibaba_preset import allowed_starts, held_windows

TRACES = default_traces_dir()
needs_traces = pytest.mark.skipif(
    TRACES is None or not (TRACES / alibaba.PODS_FILE).is_file(),
    reason="real traces not found: no ../shared/traces beside the checkout and $EDGEBENCH_TRACES unset")
SET_DIR = Path(__file__).resolve().parents[2] / "instances" / "data" / "placement-alibaba-v2"


def _shipped():
    return sorted((io.load_instance(f) for f in SET_DIR.glob("placement-alibaba-c3-s*.json.gz")),
                  key=lambda inst: inst.meta["seed"])


def _creation() -> dict[str, int]:
    return {pd.name: pd.creation for pd in alibaba.load_pods(TRACES / alibaba.PODS_FILE)}


@needs_traces
def test_held_windows_are_the_shipped_sets_windows():
    """The windows the preset avoids, recomputed by the converter from the set's recipe, are
    those of the shipped files: same start and last creation, and every shipped task's pod is
    created inside its instance's window."""
    shipped = _shipped()
    assert [s.meta["seed"] for s in shipped] == [0, 1, 2, 3]
    held = held_windows()
    assert held == tuple((s.meta["window"]["start"], s.meta["window"]["last_task_created"]) for s in shipped)
    created = _creation()
    for (lo, hi), inst in zip(held, shipped):
        assert len(inst.placement.tasks) == 192
        assert all(lo <= created[t.name] <= hi for t in inst.placement.tasks)


@needs_traces
def test_windows_of_many_seeds_never_overlap_the_set():
    """Training (k), held-out (1e9+k) and validation (2e9+k) seeds: no window shares a pod or a
    creation-time interval with a window of placement-alibaba-v2."""
    held = held_windows()
    set_pods = {t.name for inst in _shipped() for t in inst.placement.tasks}
    created = _creation()
    seeds = [*range(70), *(10**9 + k for k in range(65)), *(2 * 10**9 + k for k in range(65))]
    starts = set()
    for seed in seeds:
        inst = generate("placement", "alibaba", seed=seed, num_tasks=96)
        names = [t.name for t in inst.placement.tasks]
        assert len(names) == 96 and not set_pods & set(names), seed
        lo, hi = min(created[n] for n in names), max(created[n] for n in names)
        assert all(hi < a or lo > b for a, b in held), (seed, lo, hi)
        starts.add(inst.meta["window"]["start"])
    assert len(starts) > 150  # the draw spreads over the trace


@needs_traces
def test_the_exclusion_binds():
    """Without the rule, windows overlapping the set would be drawable: the excluded starts are
    those of windows that meet a held interval."""
    pods = alibaba.time_ordered(alibaba.load_pods(TRACES / alibaba.PODS_FILE))
    nodes = alibaba.usable_nodes(alibaba.load_nodes(TRACES / alibaba.NODES_FILE))
    caps = [alibaba.node_capacity(nd) for nd in alibaba.sample_nodes(nodes, 3, np.random.default_rng(5))]
    held = held_windows()
    every, every_end = allowed_starts(pods, caps, 96, ())
    kept, _ = allowed_starts(pods, caps, 96, held)
    dropped = np.setdiff1d(every, kept)
    assert len(dropped) > 100 and set(kept) < set(every)
    ends = dict(zip(every.tolist(), every_end.tolist()))
    assert all(any(not (ends[s] < a or s > b) for a, b in held) for s in dropped.tolist())


@needs_traces
def test_same_seed_same_instance_and_meta(tmp_path):
    a = generate("placement", "alibaba", seed=7, num_tasks=24)
    b = generate("placement", "alibaba", seed=7, num_tasks=24)
    assert io.write_json(tmp_path / "a.json", a).read_bytes() == io.write_json(tmp_path / "b.json", b).read_bytes()
    assert generate("placement", "alibaba", seed=8, num_tasks=24).placement != a.placement
    m = a.meta
    assert m["preset"] == "alibaba" and m["converter"] == "alibaba" and m["seed"] == 7
    assert m["generator"] == "edgebench.instances.traces.alibaba_preset:generate_alibaba"
    assert m["params"]["num_tasks"] == 24 and "max_tasks" not in m["params"]
    assert m["params"]["window_start"] == m["window"]["start"]
    assert m["held_out"]["set"] == "placement-alibaba-v2" and len(m["held_out"]["windows"]) == 4
    # the instance is the converter's at the recorded parameters (nodes from the seed)
    params = dict(m["params"])
    params["max_tasks"] = params.pop("num_tasks")
    assert params.pop("node_seed") == 7
    conv = alibaba.convert(seed=7, **params)
    assert conv.placement == a.placement


@needs_traces
def test_a_fixed_node_seed_keeps_the_clusters_and_still_avoids_the_set():
    """``node_seed``: the same sampled nodes for every seed (the trainer's environment needs
    one set of clusters), windows still drawn per seed outside the set's."""
    held = held_windows()
    insts = [generate("placement", "alibaba", seed=s, num_tasks=96, node_seed=0) for s in (0, 1, 2, 10**9, 2 * 10**9)]
    clusters = {json.dumps([c.model_dump(mode="json") for c in i.placement.clusters]) for i in insts}
    assert len(clusters) == 1 and len({i.meta["window"]["start"] for i in insts}) == 5
    assert insts[0].meta["sampled_nodes"] == alibaba.convert(seed=0).meta["sampled_nodes"]
    for inst in insts:
        w = inst.meta["window"]
        assert all(w["last_task_created"] < a or w["start"] > b for a, b in held)
        assert inst.meta["params"]["node_seed"] == 0 and len(inst.placement.tasks) == 96


@needs_traces
@pytest.mark.parametrize("params,tasks", [({"num_tasks": 96}, 96), ({"max_tasks": 32}, 32), ({}, 192),
                                          ({"num_tasks": 60, "clusters": 4, "variant": "multi"}, 60)])
def test_num_tasks_is_the_window_size(params, tasks):
    inst = generate("placement", "alibaba", seed=3, **params)
    assert len(inst.placement.tasks) == tasks
    assert len(inst.placement.clusters) == params.get("clusters", 3)
    assert inst.placement.variant == params.get("variant", "single")


@needs_traces
@pytest.mark.parametrize("params,field,reason", [
    ({"num_tasks": 24, "max_tasks": 24}, "params.num_tasks", "not both"),
    ({"window_start": 10131649}, "params.window_start", "draws the window start itself"),
    ({"num_tasks": 0}, "params.num_tasks", "at least 1"),
    ({"num_tasks": 9000}, "params.num_tasks", "no window of 9000 tasks"),
    ({"windw": 3}, "params.windw", "unknown parameter"),
    ({"num_tasks": 5000, "clusters": 200}, "--set", "beyond the joint limit"),
])
def test_bad_parameters_are_input_errors(params, field, reason):
    with pytest.raises(InputError, match=reason) as ei:
        generate("placement", "alibaba", seed=0, **params)
    assert ei.value.field == field


def test_missing_traces_folder_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EDGEBENCH_TRACES", str(tmp_path / "nonexistent"))
    with pytest.raises(InputError, match="no traces folder found"):
        generate("placement", "alibaba", seed=0)
    assert main(["generate", "placement", "--preset", "alibaba", "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no traces folder found" in err[0] and "Traceback" not in err[0]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@needs_traces
def test_parsed_traces_are_cached_per_file_state(tmp_path):
    """Parsing the openb pod list once per (path, size, mtime): a changed file is read again."""
    src = TRACES / alibaba.PODS_FILE
    copy = tmp_path / alibaba.PODS_FILE
    copy.write_bytes(src.read_bytes())
    first = alibaba.load_pods(copy)
    assert alibaba.load_pods(copy) is first
    lines = copy.read_text().splitlines(keepends=True)
    copy.write_text("".join(lines[:-1]))
    again = alibaba.load_pods(copy)
    assert again is not first and len(again) == len(first) - 1
    assert json.dumps([p.name for p in again]) == json.dumps([p.name for p in first[:-1]])
