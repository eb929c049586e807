"""placement-lns warm start and neighbourhood moves (issue 23): a warm-started search never
returns worse than the given schedule, is seeded, stays referee-feasible, and a bad warm-start
file is one line with exit code 2 through the CLI."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from edgebench import registry
from edgebench.cli import main
from edgebench.errors import InputError
from edgebench.formulations import placement as P
from edgebench.formulations.placement.search import lns as L
from edgebench.formulations.placement.search import neighbourhoods as N
from edgebench.instances import sets
from edgebench.instances.io import content_hash, load_instance, write_json
from edgebench.referee.placement import evaluate
from edgebench.registry import make_result

DATA = Path(__file__).resolve().parents[2] / "instances" / "data"
#: 24 tasks, 6 clusters, single variant; shipped best known 80 (placement-milp)
SMALL = DATA / "placement-hetero-6-v1" / "placement-hetero-6-s0-c5bf8a3d.json"
#: objective values are integers in steps
TOL = 1e-9


@pytest.fixture(scope="module")
def inst():
    return load_instance(SMALL)


@pytest.fixture(scope="module")
def greedy_file(inst, tmp_path_factory):
    """A deliberately weak schedule (arrival-order greedy, no resource weighting) as a solution file."""
    data = P.prepare(inst.placement)
    sched = P.greedy_schedule(data, order="arrival", weight=2.0)
    res = make_result(inst, "greedy", status="feasible", decisions=P.to_decisions(sched), seed=0,
                      objective=float(P.schedule_objective(data, sched)))
    path = tmp_path_factory.mktemp("warm") / "greedy.json"
    write_json(path, res.solution)
    return path, P.schedule_objective(data, sched)


def _lns(inst, **params):
    return registry.solve(inst, "placement-lns", time_limit=None, **{"iterations": 6, "block": 6, **params})


def test_best_known_lookup_finds_the_shipped_solution(inst):
    path = sets.best_known_solution(content_hash(inst))
    assert path is not None and path.is_file() and path.parent.name == "solutions"
    assert sets.best_known_solution("0" * 64) is None


def test_warm_start_from_best_known_never_worse_and_skips_the_start_solvers(inst):
    shipped = json.loads(sets.best_known_solution(content_hash(inst)).read_text())["objective"]
    r = _lns(inst, warm_start="best-known", seed=2)
    assert r.solution.status == "feasible"
    ev = evaluate(inst, r.solution.placement)
    assert ev.feasible, ev.violations[:3]
    assert ev.primary_value == pytest.approx(r.solution.objective, abs=TOL)
    assert r.solution.objective <= shipped + TOL
    st = r.solution.stats
    assert st["warm_start"].startswith("warm-start") and list(st["starts"]) == [st["warm_start"]]
    assert st["lns_from"] == st["warm_start"]


@pytest.mark.parametrize("moves", ["adaptive", "classic", "wait", "related"])
def test_warm_start_from_a_file_never_worse_and_seeded(inst, greedy_file, moves):
    path, value = greedy_file
    a = _lns(inst, warm_start=str(path), moves=moves, seed=4)
    b = _lns(inst, warm_start=str(path), moves=moves, seed=4)
    assert a.solution.placement == b.solution.placement and a.solution.objective == b.solution.objective
    assert evaluate(inst, a.solution.placement).feasible
    assert a.solution.stats["lns_start"] == value
    assert a.solution.objective <= value + TOL


def test_unknown_instance_with_best_known_falls_back_to_the_start_solvers(inst):
    """An instance no shipped set lists: the usual starts, said so in the stats."""
    other = inst.model_copy(update={"id": "not-shipped", "description": "changed"})
    assert sets.best_known_solution(content_hash(other)) is None
    r = _lns(other, warm_start="best-known", iterations=1)
    assert r.solution.status == "feasible"
    assert r.solution.stats["warm_start"].startswith("none shipped")
    assert set(r.solution.stats["starts"]) == set(L.STARTS)


def _bad_files(tmp: Path, inst) -> dict[str, tuple[Path, str]]:
    """name -> (file, a piece of the error line)."""
    shipped = json.loads(gzip.decompress(
        (DATA / "placement-synthetic-3-v2" / "solutions" / "placement-synthetic-3-s0.json.gz").read_bytes()))
    own = json.loads(sets.best_known_solution(content_hash(inst)).read_text())
    over = json.loads(json.dumps(own))
    over["placement"]["tasks"][0]["cpu"] = 100  # beyond every cluster's capacity (32 at most)
    out = {"missing": (tmp / "nope.json", "no such solution file"),
           "malformed": (tmp / "malformed.json", "malformed JSON"),
           "not-a-solution": (tmp / "object.json", "required field is missing"),
           "other-instance": (tmp / "other.json", "made for another instance"),
           "infeasible": (tmp / "infeasible.json", "the referee rejects the warm start")}
    out["malformed"][0].write_text("{ not json")
    out["not-a-solution"][0].write_text('{"a": 1}')
    out["other-instance"][0].write_text(json.dumps(shipped))
    out["infeasible"][0].write_text(json.dumps(over))
    return out


def test_bad_warm_start_file_is_one_line_and_exit_2(inst, tmp_path, capsys):
    for name, (path, piece) in _bad_files(tmp_path, inst).items():
        target = tmp_path / f"out-{name}.json"
        rc = main(["solve", str(SMALL), "--solver", "placement-lns", "--param", f"warm_start={path}",
                   "--param", "iterations=1", "-o", str(target)])
        out, err = capsys.readouterr()
        assert rc == 2, name
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("edgebench: error: "), (name, err)
        assert piece in lines[0] and ("warm_start" in lines[0] or path.name in lines[0]), (name, lines[0])
        assert "Traceback" not in err and not target.exists()


def test_bad_warm_start_through_the_api_is_an_input_error(inst, tmp_path):
    files = _bad_files(tmp_path, inst)
    with pytest.raises(InputError, match="no such solution file"):
        registry.solve(inst, "placement-lns", warm_start=str(files["missing"][0]))
    with pytest.raises(InputError, match="made for another instance"):
        registry.solve(inst, "placement-lns", warm_start=str(files["other-instance"][0]))
    with pytest.raises(InputError, match="moves"):
        registry.solve(inst, "placement-lns", moves="sideways")


@pytest.mark.parametrize("kind", N.KINDS)
def test_each_move_frees_block_distinct_tasks_seeded(inst, kind):
    data = P.prepare(inst.placement)
    sched = P.best_greedy(data)
    types = [t.type for t in inst.placement.tasks]
    a = [N.destroy(kind, np.random.default_rng(7), data, sched, 5, types) for _ in range(2)]
    assert a[0] == a[1] and len(a[0]) == 5 and a[0] <= set(range(data.num_tasks))
    with pytest.raises(ValueError, match="unknown neighbourhood kind"):
        N.destroy("sideways", np.random.default_rng(0), data, sched, 5)


def test_wait_move_frees_its_seed_and_the_tasks_across_its_interval():
    """With one waiting task, the seed is that task and every freed task runs across the seed's
    interval on a cluster it may use (when enough do)."""
    inst = load_instance(DATA / "placement-synthetic-3-v2" / "placement-synthetic-3-s4.json.gz")
    data = P.prepare(inst.placement)
    sched = P.greedy_schedule(data)
    waiting = [j for j, (o, s) in enumerate(sched) if s > data.arrivals[j]]
    assert waiting
    j = max(waiting, key=lambda k: sched[k][1] - data.arrivals[k])
    only = [(o, data.arrivals[k]) if k != j else (o, s) for k, (o, s) in enumerate(sched)]  # j alone waits
    free = N.waiting(np.random.default_rng(0), data, only, 4)
    assert j in free
    lo, hi = data.arrivals[j], only[j][1] + only[j][0].steps
    mine = {o.cluster for o in data.options[j]}
    for k in free - {j}:
        o, s = only[k]
        if sum(1 for q, (oo, ss) in enumerate(only) if q != j and oo.cluster in mine
               and ss < hi and ss + oo.steps > lo) >= 3:
            assert o.cluster in mine and s < hi and s + o.steps > lo


def test_adaptive_weights_follow_success():
    ch = N.Adaptive(N.KINDS)
    for _ in range(5):
        ch.update("wait", True)
        ch.update("window", False)
    w = dict(zip(ch.kinds, ch.weights))
    assert w["wait"] > w["cluster"] == 1.0 > w["window"]
    s = ch.summary()
    assert s["wait"] == {"tried": 5, "improved": 5, "weight": pytest.approx(w["wait"], abs=1e-3)}
    picks = [N.Adaptive(N.KINDS).choose(np.random.default_rng(3)) for _ in range(2)]
    assert picks[0] == picks[1]


def test_grow_is_referee_feasible_never_worse_and_turns_back_into_a_fixed_schedule():
    """The re-allocating moves on a testbed schedule (table profiles: growing a running task
    pays there): feasible for the referee, the referee's value is the fixed schedule's minus
    the steps saved, deterministic, and the result turns back into a feasible fixed-allocation
    schedule (so a grown best known can warm-start the search)."""
    from edgebench.formulations.placement.search import grow as G

    inst = load_instance(DATA / "placement-testbed-v2" / "placement-testbed-s0.json.gz")
    data = P.prepare(inst.placement)
    sched = P.best_greedy(data)
    v0 = P.schedule_objective(data, sched)
    lines, info = G.grow(inst.placement, data, sched)
    again, _ = G.grow(inst.placement, data, sched)
    assert lines == again
    ev = evaluate(inst, G.to_decisions(lines))
    assert ev.feasible, ev.violations[:3]
    assert info["grown"] > 0 and ev.primary_value == pytest.approx(v0 - info["grow_saved"], abs=TOL)
    assert ev.primary_value < v0
    back = L.to_schedule(inst.placement, data, G.to_decisions(lines))
    assert back is not None and not P.schedule_violations(data, back)


def test_solve_applies_the_re_allocating_moves_after_the_search():
    inst = load_instance(DATA / "placement-testbed-v2" / "placement-testbed-s0.json.gz")
    shipped = json.loads(gzip.decompress(sets.best_known_solution(content_hash(inst)).read_bytes()))["objective"]
    r = registry.solve(inst, "placement-lns", iterations=0, warm_start="best-known")
    ev = evaluate(inst, r.solution.placement)
    assert ev.feasible and ev.primary_value == pytest.approx(r.solution.objective, abs=TOL)
    assert r.solution.objective <= shipped + TOL and r.solution.stats["grow_passes"] >= 1
    off = registry.solve(inst, "placement-lns", iterations=0, warm_start="best-known", grow=False)
    assert "grow_passes" not in off.solution.stats and off.solution.objective <= shipped + TOL


def test_early_move_respects_single_start_slots():
    """hetero-6-v2 (single variant): the moves that start a waiting task earlier never put two
    first starts on one cluster and step (the referee would reject it)."""
    from edgebench.formulations.placement.search import grow as G

    inst = load_instance(DATA / "placement-hetero-6-v2" / "placement-hetero-6-s0.json.gz")
    data = P.prepare(inst.placement)
    sched = P.greedy_schedule(data)
    lines, info = G.grow(inst.placement, data, sched, passes=1)
    starts = [(n, s) for n, s, _, _ in lines]
    assert len(starts) == len(set(starts))
    ev = evaluate(inst, G.to_decisions(lines))
    assert ev.feasible, ev.violations[:3]
    assert ev.primary_value == pytest.approx(P.schedule_objective(data, sched) - info["grow_saved"], abs=TOL)


def test_a_grown_result_warm_starts_from_the_fixed_schedule_it_recorded(tmp_path):
    """From a greedy testbed schedule (a file), the grow moves improve and the result records
    the fixed schedule; warm-started from that result, the search starts from it."""
    inst = load_instance(DATA / "placement-testbed-v2" / "placement-testbed-s0.json.gz")
    data = P.prepare(inst.placement)
    greedy = P.best_greedy(data)
    start = tmp_path / "greedy.json"
    write_json(start, make_result(inst, "greedy", status="feasible", decisions=P.to_decisions(greedy)).solution)
    first = registry.solve(inst, "placement-lns", iterations=0, warm_start=str(start))
    raw = first.solution.stats.get(L.FIXED_KEY)
    assert raw is not None  # the grow moves improved the greedy schedule and kept its fixed form
    fixed = L.fixed_from_stats(data, raw)
    assert fixed is not None and P.schedule_objective(data, fixed) > first.solution.objective
    path = tmp_path / "grown.json"
    write_json(path, first.solution)
    again = registry.solve(inst, "placement-lns", iterations=0, warm_start=str(path))
    assert again.solution.stats["lns_start"] == P.schedule_objective(data, fixed)
    assert again.solution.objective <= first.solution.objective + TOL
    # a recorded schedule that is not one of this instance's: ignored, never an error
    assert L.fixed_from_stats(data, raw[:-1]) is None
    assert L.fixed_from_stats(data, [[99, 0, 1, 1]] + raw[1:]) is None
