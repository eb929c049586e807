"""The STG reader (``edgebench convert stg``): format, optimum tables, the P|prec|Cmax mapping."""

from __future__ import annotations

import pytest

from edgebench.cli import main
from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.traces import default_traces_dir, stg
from edgebench.referee import evaluate
from edgebench.registry import solve

TRACES = default_traces_dir()
needs_traces = pytest.mark.skipif(
    TRACES is None or not (TRACES / "stg").is_dir(),
    reason="STG traces not found: no ../shared/traces/stg beside the checkout and $EDGEBENCH_TRACES unset")

# 4 real tasks: 1 -> 3, 2 -> 3, 1 -> 4; dummies 0 and 5
SMALL = """\
          4
          0          0          0
          1          3          1          0
          2          2          1          0
          3          4          2          1          2
          4          5          1          1
          5          0          2          3          4
# a comment
"""


def _write(tmp_path, text, name="rand0000.stg", size="4"):
    d = tmp_path / "stg" / size
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    p.write_text(text)
    return p


def test_read_small_drops_dummies(tmp_path):
    times, edges = stg.read_stg(_write(tmp_path, SMALL))
    assert times == [3, 2, 4, 5]
    assert edges == [(0, 2), (0, 3), (1, 2)]


@pytest.mark.parametrize("text, where, reason", [
    ("", None, "empty file"),
    ("4\n0 0 0\n", None, "expected 6 task lines"),
    (SMALL.replace("1          3          1          0", "1          3          2          0"), "line 3",
     "says 2 predecessors but lists 1"),
    (SMALL.replace("3          4          2          1          2", "3          4          2          1          4"),
     "line 5", "does not come before"),
    (SMALL.replace("2          2          1          0", "2          x          1          0"), "line 4",
     "expected non-negative integers"),
    (SMALL.replace("5          0          2", "5          7          2"), "line 7", "dummy exit"),
    (SMALL.replace("2          2          1          0", "2          0          1          0"), "line 4",
     "must be positive"),
    (SMALL.replace("4          5          1          1", "9          5          1          1"), "line 6",
     "task ids must run"),
])
def test_bad_stg_is_one_clear_error(tmp_path, text, where, reason):
    with pytest.raises(InputError) as e:
        stg.read_stg(_write(tmp_path, text))
    assert reason in e.value.reason
    assert e.value.field == where
    assert e.value.file.endswith("rand0000.stg")


def test_optima_table(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("4/rand0000.stg,2,8\n4/rand0001.stg,2,10,12\n")
    assert stg.read_optima(p) == {("4/rand0000.stg", 2): {"optimum": 8},
                                  ("4/rand0001.stg", 2): {"lower": 10, "upper": 12}}
    p.write_text("4/rand0000.stg,2,13,12\n")
    with pytest.raises(InputError, match="lower 13 above upper 12"):
        stg.read_optima(p)
    p.write_text("4/rand0000.stg,2\n")
    with pytest.raises(InputError, match="columns"):
        stg.read_optima(p)


def test_convert_maps_onto_p_prec_cmax(tmp_path):
    f = _write(tmp_path, SMALL)
    opt = tmp_path / "stg" / "optimal"
    opt.mkdir()
    (opt / "Case4_2_OPT.csv").write_text("4/rand0000.stg,2,8\n")
    inst = stg.convert(f, servers=2)
    assert inst.id == "offloading-stg-4-rand0000-m2"
    pl = inst.payload
    assert [(s.cpu, s.mem, s.speed, s.is_cloud) for s in pl.servers] == [(1.0, 1.0, 1.0, False)] * 2
    assert len(pl.workflows) == 1 and [t.functions[0].exec_time for t in pl.workflows[0].tasks] == [3, 2, 4, 5]
    assert inst.meta["stg"]["published"]["optimum"] == 8
    assert [x["name"] for x in inst.meta["source"]["files"]] == ["rand0000.stg", "Case4_2_OPT.csv"]
    # the exact model reproduces the hand optimum: 1 (0-3) | 2 (0-2); 4 on p1 (3-8), 3 on p0 (3-7) -> 8
    r = solve(inst, "offloading-cpsat", time_limit=10)
    assert r.status == "optimal"
    assert evaluate(inst, r.solution).objectives["makespan"] == pytest.approx(8.0, abs=1e-9)
    # no table beside the file: no reference, and the instance is otherwise the same
    assert stg.convert(f, servers=3).meta["stg"]["published"] is None
    with pytest.raises(InputError, match="no row"):
        stg.convert(_write(tmp_path, SMALL, "rand0001.stg"), servers=2, optima=opt / "Case4_2_OPT.csv")


def test_cli_writes_and_rejects(tmp_path, capsys):
    f = _write(tmp_path, SMALL)
    out = tmp_path / "out"
    assert main(["convert", "stg", str(f), "--servers", "2", "3", "-o", str(out) + "/"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["offloading-stg-4-rand0000-m2.json",
                                                      "offloading-stg-4-rand0000-m3.json"]
    assert io.load_instance(out / "offloading-stg-4-rand0000-m2.json").meta["converter"] == "stg"
    bad = _write(tmp_path, SMALL.replace("1          3 ", "1          y "), "bad.stg")
    target = tmp_path / "bad.json"
    assert main(["convert", "stg", str(bad), "--servers", "2", "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert "bad.stg: line 3" in err and "Traceback" not in err
    assert not target.exists()
    assert main(["convert", "stg", str(f), "--servers", "0", "-o", str(target)]) == 2


@needs_traces
@pytest.mark.parametrize("name, m", [("rand0000", 4), ("rand0001", 16), ("rand0003", 2)])
def test_exact_model_matches_published_optimum(name, m):
    """The mapping is exact: CP-SAT's proven optimum equals the published one (integers: tolerance 1e-9)."""
    inst = stg.convert(TRACES / "stg" / "50" / f"{name}.stg", servers=m)
    ref = inst.meta["stg"]["published"]
    r = solve(inst, "offloading-cpsat", time_limit=30)
    assert r.status == "optimal"
    assert evaluate(inst, r.solution).objectives["makespan"] == pytest.approx(ref["optimum"], abs=1e-9)


def _brute_force_cmax(times, edges, m):
    """P|prec|Cmax optimum by enumeration: every global task order and every processor assignment
    gives processor sequences; the earliest-start (semi-active) schedule of those sequences is
    the best schedule with them, and some order and assignment give an optimal schedule's."""
    import itertools

    n = len(times)
    preds = [[a for a, b in edges if b == j] for j in range(n)]
    best = float("inf")
    for order in itertools.permutations(range(n)):
        if any(order.index(a) > order.index(b) for a, b in edges):
            continue  # a topological order suffices: some optimal schedule's start order is one
        for assign in itertools.product(range(m), repeat=n):
            free, finish = [0] * m, [0] * n
            for j in order:
                start = max([free[assign[j]]] + [finish[p] for p in preds[j]])
                finish[j] = free[assign[j]] = start + times[j]
            best = min(best, max(finish))
    return best


@pytest.mark.parametrize("seed", range(4))
def test_exact_model_matches_brute_force_on_tiny_graphs(tmp_path, seed):
    """Random 6-task STG files: CP-SAT's proven optimum of the converted instance = the brute-force
    P|prec|Cmax optimum (the mapping is exact), on 2 and 3 servers."""
    import random

    rng = random.Random(seed)
    n = 6
    times = [rng.randint(1, 9) for _ in range(n)]
    preds = {k: sorted(rng.sample(range(1, k), rng.randint(0, min(2, k - 1)))) for k in range(1, n + 1)}
    lines = [str(n), "0 0 0"]
    for k in range(1, n + 1):
        ps = preds[k] or [0]
        lines.append(" ".join(map(str, [k, times[k - 1], len(ps), *ps])))
    sinks = [k for k in range(1, n + 1) if all(k not in preds[j] for j in range(1, n + 1))]
    lines.append(" ".join(map(str, [n + 1, 0, len(sinks), *sinks])))
    f = _write(tmp_path, "\n".join(lines) + "\n")
    t, edges = stg.read_stg(f)
    assert t == times and edges == sorted((q - 1, k - 1) for k in preds for q in preds[k])
    for m in (2, 3):
        inst = stg.convert(f, servers=m)
        r = solve(inst, "offloading-cpsat", time_limit=20)
        assert r.status == "optimal"
        value = evaluate(inst, r.solution).objectives["makespan"]
        assert value == pytest.approx(_brute_force_cmax(times, edges, m), abs=1e-9)
        assert r.solution.bound == pytest.approx(value, abs=1e-9)
