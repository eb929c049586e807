"""Derived quantities: the paper's progress model, noise, options, routes, transfer times."""

import math

import pytest

from edgebench.instances import semantics as S
from edgebench.instances.io import instance_from_dict

from test_model import mapping_dict, offloading_dict, placement_dict


def test_insensitive_type_takes_four_steps_at_its_minimum():
    p = instance_from_dict(placement_dict()).placement
    assert S.fixed_run_steps(p, 0, 2, 1) == 4
    assert S.fixed_run_steps(p, 0, 8, 4) == 4  # no gain from more resources


def test_sensitive_type_speeds_up_with_gpus_like_the_authors_simulator():
    d = placement_dict()
    d["placement"]["clusters"] = [{"capacity": {"cpu": 16, "gpu": 16}}]
    d["placement"]["tasks"][1]["eligible"] = [0]
    d["placement"]["tasks"][0]["eligible"] = [0]
    p = instance_from_dict(d).placement
    steps = [S.fixed_run_steps(p, 1, 16, g) for g in (1, 2, 4, 8, 16)]
    assert steps == sorted(steps, reverse=True)
    assert steps[-1] == 2  # about 2 steps at 16 GPUs
    # progress per step: tanh(g/16) * sqrt(1.2 - progress)
    assert S.increment(p, 1, 16, 16, 0.0) == pytest.approx(math.tanh(1.0) * math.sqrt(1.2))
    assert S.increment(p, 1, 1, 16, 0.0) == 0.0  # below the 2-CPU minimum: no progress


def test_cpu_bottleneck():
    d = placement_dict()
    d["placement"]["clusters"] = [{"capacity": {"cpu": 16, "gpu": 16}}]
    for t in d["placement"]["tasks"]:
        t["eligible"] = [0]
    d["placement"]["performance"]["types"]["lm"]["cpu_per_gpu"] = 0.5
    p = instance_from_dict(d).placement
    # 2 CPUs feed at most 4 GPUs: 2 cpu + 8 gpu is no faster than 2 cpu + 4 gpu, slower than 4 + 8
    assert S.increment(p, 1, 2, 8, 0.0) == S.increment(p, 1, 2, 4, 0.0)
    assert S.increment(p, 1, 4, 8, 0.0) > S.increment(p, 1, 2, 8, 0.0)


def test_noise_is_seeded_bounded_and_multiplicative():
    d = placement_dict()
    d["placement"]["noise"] = 0.1
    d["placement"]["noise_seed"] = 7
    p = instance_from_dict(d).placement
    f = [S.noise_factor(p, 0, k) for k in range(600)]
    assert all(0.9 <= x <= 1.1 for x in f)
    assert f == [S.noise_factor(p, 0, k) for k in range(600)]
    assert f != [S.noise_factor(p, 1, k) for k in range(600)]
    d["placement"]["noise_seed"] = 8
    q = instance_from_dict(d).placement
    assert f[:10] != [S.noise_factor(q, 0, k) for k in range(10)]


def test_ten_tenths_finish_in_ten_steps():
    d = placement_dict()
    d["placement"]["performance"]["types"]["ic"] = {"base": 0.1}
    p = instance_from_dict(d).placement
    assert S.fixed_run_steps(p, 0, 2, 1) == 10


def test_dominant_options_are_pareto_minimal():
    p = instance_from_dict(placement_dict()).placement
    opts = S.dominant_options(p, 0, 0)
    assert opts == [(2, 1, 4)]  # insensitive: only the minimum is worth giving
    all_opts = S.allocation_options(p, 0, 0)
    assert (2, 1) in all_opts and (8, 4) in all_opts and (1, 1) not in all_opts


def test_table_model_floors_to_the_measured_grid():
    d = placement_dict()
    d["placement"]["performance"] = {"kind": "table", "types": {
        t: {"entries": [{"cpu": c, "gpu": g, "seconds": 100.0 / (c + g)} for c in (2, 4) for g in (1, 2)]}
        for t in ("ic", "lm")}}
    p = instance_from_dict(d).placement
    assert S.table_seconds(p.performance, "ic", 3, 1) == pytest.approx(100 / 3)
    assert S.table_seconds(p.performance, "ic", 16, 16) == pytest.approx(100 / 6)
    assert S.table_seconds(p.performance, "ic", 1, 1) is None
    assert S.fixed_run_steps(p, 0, 2, 1) == math.ceil((100 / 3) / 10)


def test_canonical_route_is_fewest_hops_lowest_index():
    d = mapping_dict()
    d["mapping"]["nodes"] = [{"cpu": 10, "ram": 10}] * 4
    d["mapping"]["links"] = [
        {"src": 0, "dst": 2, "bandwidth": 1}, {"src": 0, "dst": 1, "bandwidth": 1},
        {"src": 1, "dst": 3, "bandwidth": 1}, {"src": 2, "dst": 3, "bandwidth": 1},
    ]
    d["mapping"]["jobs"][0]["tasks"] = [{"cpu": 1, "ram": 1}] * 2
    m = instance_from_dict(d).mapping
    assert S.canonical_route(m, 0, 3) == (1, 2)  # via node 1 (lower index than 2)
    assert S.canonical_route(m, 0, 0) == ()
    assert S.canonical_route(m, 3, 0) is None
    assert S.bandwidth_level(10, 50, 2, 5) == 30


def test_offloading_times():
    o = instance_from_dict(offloading_dict()).offloading
    assert S.exec_time(o, 0, 0, 1) == pytest.approx(0.5)  # cloud speed 4
    assert S.pull_delay(o, 0, 1, 0) == 0.0  # pull delay 0 by default
    assert S.transfer_time(o, 0, 0, 0, 1) == pytest.approx(5 * 10 / 1)
    assert S.transfer_time(o, 0, 0, 1, 1) == 0.0
    assert S.task_demand(o, 0, 0) == (1, 1)


# --------------------------------------------------------------------------------------
# dominant_options: the vectorised version against the pairwise definition
# --------------------------------------------------------------------------------------


def _reference_dominant_options(payload, j, n):
    """The definition, as dominant_options computed it before it was vectorised: every
    allocation simulated one by one, then a pairwise dominance test."""
    opts = []
    for c, g in S.allocation_options(payload, j, n):
        d = S.fixed_run_steps(payload, j, c, g)
        if d is not None:
            opts.append((c, g, d))
    return [(c, g, d) for c, g, d in opts
            if not any(c2 <= c and g2 <= g and d2 <= d and (c2, g2, d2) != (c, g, d) for c2, g2, d2 in opts)]


def _edge_case_payloads():
    """Hand-made instances reaching the corners: noise, a CPU bottleneck with zero-CPU
    allocations that never finish, a table model with cells below its grid (never finish)
    and with noise, a zero minimum (the empty allocation is not an option)."""
    d = placement_dict()
    d["placement"]["clusters"] = [{"capacity": {"cpu": 12, "gpu": 9}}, {"capacity": {"cpu": 5, "gpu": 16}}]
    d["placement"]["tasks"] = [
        {"arrival": 0, "type": "lm", "minimum": {"cpu": 0, "gpu": 1}, "eligible": [0, 1]},
        {"arrival": 0, "type": "ic", "minimum": {"cpu": 0, "gpu": 0}, "eligible": [0, 1]},
        {"arrival": 2, "type": "lm", "minimum": {"cpu": 0, "gpu": 0}, "eligible": [1]},
    ]
    d["placement"]["performance"]["types"] = {"ic": {"base": 0.05, "gpu_scale": 3.0, "curvature": 1.05},
                                             "lm": {"gpu_scale": 5.0, "cpu_per_gpu": 0.75}}
    d["placement"]["noise"] = 0.2
    d["placement"]["noise_seed"] = 11
    synthetic = instance_from_dict(d).placement
    d["placement"]["performance"] = {"kind": "table", "types": {
        t: {"entries": [{"cpu": c, "gpu": g, "seconds": 300.0 / (c + k * g) + 7.0} for c in (1, 3, 6) for g in (1, 2, 5)]}
        for k, t in ((1, "ic"), (3, "lm"))}}
    table = instance_from_dict(d).placement
    return [synthetic, table]


def _preset_payloads():
    from edgebench.instances.generators import generate

    out = [generate("placement", "hetero-6", seed=s, num_tasks=16).placement for s in (0, 1)]
    out.append(generate("placement", "hetero-6", seed=2, num_tasks=12, variant="multi").placement)
    out.append(generate("placement", "synthetic-3", seed=3, num_tasks=24).placement)
    out.append(generate("placement", "sjf-ablation", seed=0, num_tasks=16).placement)
    try:
        out.append(generate("placement", "testbed", seed=1, num_tasks=24).placement)  # the measured table model
    except Exception:  # the trace file is not on every machine
        pass
    return out


@pytest.mark.parametrize("source", ["edge-cases", "presets"])
def test_dominant_options_equal_the_pairwise_definition(source):
    payloads = _edge_case_payloads() if source == "edge-cases" else _preset_payloads()
    for p in payloads:
        for j, task in enumerate(p.tasks):
            for n in task.eligible:
                assert S.dominant_options(p, j, n) == _reference_dominant_options(p, j, n), (j, n)


def test_grid_steps_equal_fixed_run_steps_cell_by_cell():
    for p in _edge_case_payloads() + _preset_payloads()[:1]:
        for j, task in enumerate(p.tasks[:8]):
            for n in task.eligible:
                cap = p.clusters[n].capacity
                lo_c, lo_g = task.minimum.cpu, task.minimum.gpu
                grid = S._grid_steps(p, j, lo_c, lo_g, cap.cpu, cap.gpu)
                want = [[-1 if c + g == 0 or (d := S.fixed_run_steps(p, j, c, g)) is None else d
                         for g in range(lo_g, cap.gpu + 1)] for c in range(lo_c, cap.cpu + 1)]
                got = grid.tolist()
                if lo_c == 0 and lo_g == 0:
                    got[0][0] = -1
                assert got == want, (j, n)
    # the corners are really reached: never-finishing cells and options on both sides
    syn, table = _edge_case_payloads()
    assert S._grid_steps(syn, 0, 0, 1, 12, 9)[0].tolist() == [-1] * 9  # no cpu: the CPU bottleneck stops it
    assert S._grid_steps(table, 2, 0, 0, 5, 16)[0].tolist() == [-1] * 17  # below the table's cpu grid
