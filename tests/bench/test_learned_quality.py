"""bench/learned_quality.py on a tiny subset: one placement cell and one mapping job size, one
held-out instance each, a few solvers (the exact models always run). Checks that the tables
hold the solvers, that every gap is >= 0 and equals the gap recomputed from the runner's store
(best known values), and that a rerun reuses the store (no new run)."""

from __future__ import annotations

import json
import math

import pytest

#: the module's sweep (one placement cell, one mapping size, the exact models) takes about 30 s
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lq(bench_script):
    return bench_script("learned_quality")


ARGS = ["all", "--quick", "--seeds", "1", "--presets", "synthetic-3", "--variants", "multi", "--sizes", "3",
        "--solvers", "tapfinger,optimus,ces-ppo,flexitask,smart,random"]


@pytest.fixture(scope="module")
def result(lq, tmp_path_factory):
    out = tmp_path_factory.mktemp("lq")
    assert lq.main(ARGS + ["--out", str(out)]) == 0
    return out


def _store_gaps(out: Path) -> dict[tuple[str, str], float]:
    """(label, instance hash) -> gap, recomputed from the store's runs and best-known table."""
    from edgebench.runner.bestknown import gap
    from edgebench.runner.store import Store

    with Store.open(out / "results.sqlite", create=False) as st:
        best = {b["instance_hash"]: b for b in st.bestknown()}
        runs = st.runs()
    out_ = {}
    for r in runs:
        if r["feasible"]:
            out_[(r["label"], r["instance_hash"])] = gap(r["primary_value"], best[r["instance_hash"]]["objective"],
                                                         r["sense"])
    return out_


def test_tables_and_gaps(result):
    out = result
    md = (out / "quality.md").read_text()
    q = json.loads((out / "quality.json").read_text())
    for name in ("tapfinger", "optimus", "placement-milp", "ces-ppo", "flexitask", "smart", "random",
                 "mapping-exact"):
        assert f"| {name} |" in md
    assert "target — multi-task TapFinger >= 25 % below Optimus on synthetic-3" in md
    assert "target — CES-PPO mean gap to the exact composite optimum" in md
    gaps = _store_gaps(out)

    # placement: one cell, one instance -> the table's mean gap is that run's gap
    (cell,) = q["placement"]["cells"]
    assert (cell["preset"], cell["variant"], cell["instances"]) == ("synthetic-3", "multi", 1)
    rows = {r["solver"]: r for r in cell["rows"]}
    assert set(rows) == {"tapfinger", "optimus", "random", "placement-milp"}
    (hp,) = _hashes(out, "placement/synthetic-3-multi")
    store_p = {lb: g for (lb, h), g in gaps.items() if h == hp}
    for lb, r in rows.items():
        assert r["ok"] == r["runs"] == 1
        assert r["mean_gap"] >= 0
        assert math.isclose(r["mean_gap"], store_p[lb], rel_tol=1e-9, abs_tol=1e-12)
    if cell["optimal_instances"] == 1:
        assert rows["placement-milp"]["mean_gap"] == 0
    # percentages against Optimus are consistent with the mean completion times
    ct = {lb: r["mean_completion_time"] for lb, r in rows.items()}
    assert math.isclose(rows["tapfinger"]["vs_optimus_pct"], 100 * (ct["tapfinger"] - ct["optimus"]) / ct["optimus"])
    # and the gap with the completion times (total CT = mean CT x tasks, same relative gap)
    assert math.isclose(rows["tapfinger"]["mean_gap"],
                        (ct["tapfinger"] - ct["placement-milp"]) / ct["placement-milp"], rel_tol=1e-9) \
        or cell["optimal_instances"] == 0

    # mapping: size 3 and "all", one instance
    blocks = {b["size"]: b for b in q["mapping"]["sizes"]}
    assert set(blocks) == {3, "all"} or set(blocks) == {"3", "all"}
    rows_m = {r["solver"]: r for r in blocks["all"]["rows"]}
    assert {"ces-ppo", "flexitask", "smart", "random", "mapping-exact"} <= set(rows_m)
    (hm,) = _hashes(out, "mapping/size-3")
    for lb, r in rows_m.items():
        assert r["mean_gap"] >= 0
        assert math.isclose(r["mean_gap"], gaps[(lb, hm)], rel_tol=1e-9, abs_tol=1e-12)
        assert 0 <= r["D_BW"] <= 1 + 1e-9 and r["L"] >= 0
    exact = rows_m["mapping-exact"]
    assert all(r["composite"] <= exact["composite"] + 1e-6 for r in rows_m.values())
    assert (out / "ces-ppo-pareto.png").stat().st_size > 0
    assert (out / "learned-placement.png").stat().st_size > 0


def _hashes(out: Path, folder: str) -> list[str]:
    from edgebench.instances import io

    return [io.content_hash(io.load_instance(p)) for p in sorted((out / folder).glob("*.json"))]


def test_rerun_reuses_the_store(lq, result):
    from edgebench.runner.store import Store

    with Store.open(result / "results.sqlite", create=False) as st:
        before = st.count()
    assert lq.main(ARGS + ["--out", str(result), "--no-pareto"]) == 0
    with Store.open(result / "results.sqlite", create=False) as st:
        assert st.count() == before


def test_replace_section(lq):
    text = "# doc\n\nintro\n"
    once = lq.replace_section(text, "placement", "table A")
    assert "table A" in once and once.startswith("# doc")
    twice = lq.replace_section(once + "\nafter\n", "placement", "table B")
    assert "table B" in twice and "table A" not in twice and twice.rstrip().endswith("after")
    both = lq.replace_section(twice, "mapping", "table M")
    assert "table B" in both and "table M" in both


def test_bad_arguments(lq):
    with pytest.raises(SystemExit):
        lq.parse_args(["mapping", "--sizes", "9"])
    with pytest.raises(SystemExit):
        lq.parse_args(["placement", "--presets", "nope"])


def test_changed_checkpoints_rerun_only_the_learned_runs(lq, result):
    from datetime import datetime, timezone

    from edgebench.runner.store import Store

    with Store.open(result / "results.sqlite", create=False) as st:
        before = {r["key"]: r for r in st.runs()}
    rec = json.loads((result / "checkpoints.json").read_text())
    assert rec["mapping"] == lq.checkpoint_fingerprint("mapping")
    rec["mapping"] = {"ces-ppo-thesis.pt": "000000000000"}  # as if the checkpoint had changed
    (result / "checkpoints.json").write_text(json.dumps(rec))
    t0 = datetime.now(timezone.utc).isoformat(timespec="seconds")
    args = [a for a in ARGS if a != "all"]
    assert lq.main(["mapping"] + args[:] + ["--out", str(result), "--no-pareto"]) == 0
    with Store.open(result / "results.sqlite", create=False) as st:
        after = {r["key"]: r for r in st.runs()}
    assert set(after) == set(before)
    for k, r in after.items():
        if r["kind"] == "learned" and r["family"] == "mapping":
            assert r["started"] >= t0  # run again
        else:
            assert r["started"] == before[k]["started"]  # kept
    assert json.loads((result / "checkpoints.json").read_text())["mapping"] == lq.checkpoint_fingerprint("mapping")


def _run(label, h, *, ok=True, ct=None, gap=None, bound_gap=None, best=None, bound=None, optimal=True,
         status="feasible", objectives=None):
    return {"key": f"{label}-{h}", "label": label, "solver": label, "instance_hash": h, "instance_id": h,
            "status": status, "ok": ok, "objectives": objectives if objectives is not None else
            ({"mean_completion_time": ct} if ok else {}), "primary_value": None, "gap": gap, "bound_gap": bound_gap,
            "best_known": best, "best_bound": bound, "optimal": optimal, "runtime": 0.1, "pareto": None,
            "message": None if ok else "InputError: no checkpoint"}


def test_placement_targets_from_synthetic_runs(lq):
    cells = {"a": {"preset": "synthetic-3", "variant": "multi", "k": 0, "tasks": 24},
             "b": {"preset": "synthetic-3", "variant": "multi", "k": 1, "tasks": 24},
             "L": {"preset": "synthetic-3", "variant": "multi", "k": 0, "tasks": 192}}
    runs = []
    for h, scale in (("a", 1.0), ("b", 2.0)):
        runs += [_run("tapfinger", h, ct=7.0 * scale, gap=0.4), _run("optimus", h, ct=10.0 * scale, gap=1.0),
                 _run("optimus-np", h, ct=8.0 * scale, gap=0.6), _run("tiresias", h, ct=20.0 * scale, gap=3.0),
                 _run("tapfinger-nopointer", h, ct=6.0 * scale, gap=0.2),
                 _run("tapfinger-nograph", h, ok=False, status="error"),
                 _run("placement-milp", h, ct=5.0 * scale, gap=0.0, status="optimal")]
    runs += [_run("tapfinger", "L", ct=9.0, bound_gap=1.0, optimal=False, bound=4.5 * 192),
             _run("optimus", "L", ct=6.0, bound_gap=1 / 3, optimal=False, bound=4.5 * 192),
             _run("placement-milp", "L", ct=5.0, bound_gap=0.1, optimal=False, bound=4.5 * 192, status="timeout")]
    t = lq.placement_tables(runs, cells)
    (cell,) = t["cells"]
    rows = {r["solver"]: r for r in cell["rows"]}
    assert cell["best_paper_baseline"] == "optimus" and cell["best_baseline"] == "optimus-np"
    assert rows["tapfinger"]["mean_completion_time"] == 10.5
    assert abs(rows["tapfinger"]["vs_optimus_pct"] - (-30.0)) < 1e-9
    assert abs(rows["tapfinger"]["vs_best_baseline_pct"] - (-12.5)) < 1e-9
    targets = {tg["target"]: tg for tg in cell["targets"]}
    assert targets["multi-task TapFinger >= 25 % below Optimus on synthetic-3"]["met"] is True
    assert targets["ablation tapfinger-nopointer worse than tapfinger"]["met"] is False
    assert targets["ablation tapfinger-nograph worse than tapfinger"]["met"] is None  # failed: not measured
    lg = t["large"]
    assert abs(lg["bound_mean_ct"] - 4.5) < 1e-9 and lg["optimal_mean_ct"] is None
    assert {r["solver"]: r["vs_optimus_pct"] for r in lg["rows"]}["tapfinger"] == 50.0
    md = lq.placement_markdown(t)
    assert "**met** (-30.0 %)" in md and "**not measured**" in md and "192 tasks" in md


def test_mapping_targets_from_synthetic_runs(lq):
    cells = {"a": {"size": 3, "k": 0}, "b": {"size": 4, "k": 0}}
    runs = []
    vals = {"ces-ppo": (0.92, 1.0, 0.16, 0.01), "ces-ppo-noheur": (0.90, 1.0, 0.2, 0.03),
            "flexitask": (0.91, 0.99, 0.17, 0.02), "smart": (0.88, 0.9, 0.14, 0.05),
            "random": (0.5, 0.2, 0.2, 0.45), "ppo-balance": (0.85, 0.8, 0.1, 0.08),
            "mapping-exact": (0.93, 1.0, 0.14, 0.0)}
    for h in ("a", "b"):
        for lb, (c, d, L, g) in vals.items():
            runs.append(_run(lb, h, gap=g, objectives={"composite": c, "D_BW": d, "L": L}))
    t = lq.mapping_tables(runs, cells)
    assert [b["size"] for b in t["sizes"]] == [3, 4, "all"]
    met = {tg["target"]: tg["met"] for tg in t["targets"]}
    assert all(v for k, v in met.items() if k.startswith("CES-PPO composite >="))
    assert met["CES-PPO D_BW the best of flexitask, smart, random, ppo-balance at every size"] is True
    assert met["CES-PPO mean gap to the exact composite optimum <= 3 %"] is True
    runs[0]["objectives"]["composite"] = 0.80  # ces-ppo on size 3 now below FlexiTask there
    t = lq.mapping_tables(runs, cells)
    bad = {tg["target"]: tg for tg in t["targets"]}["CES-PPO composite >= flexitask at every size"]
    assert bad["met"] is False and bad["detail"] == "sizes failing: 3"
