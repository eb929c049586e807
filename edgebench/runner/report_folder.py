"""``edgebench report``'s folder: the tables computed once (:mod:`.report`), the plots
(:mod:`.plots`) and the pages (:mod:`.layout`, :mod:`.page`), written into one folder with the
CSV / Parquet exports. It stands above the modules it joins, so that none of them imports another
to reach it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np

from edgebench.errors import InputError
from edgebench.runner import layout
from edgebench.runner import report as R
from edgebench.runner.page import markdown, page
from edgebench.runner.store import Store


@dataclass
class ReportFiles:
    folder: Path
    markdown: Path
    html: Path
    plots: list[Path]
    csv: list[Path]
    parquet: list[Path]
    suites: list[Path]
    #: the SVG twin of every PNG plot
    svg: list[Path] = field(default_factory=list)


def build_report(store_path: str | Path, out_dir: str | Path, *, keys: Iterable[str] | None = None) -> ReportFiles:
    """Write the report of the store at ``store_path`` into ``out_dir`` (created): the tables
    (computed here, once), the plots (:mod:`.plots`) and the pages (:mod:`.layout`)."""
    out = Path(out_dir)
    for q in (out, *out.parents):
        if q.exists():
            if not q.is_dir():
                raise InputError(f"{q} exists and is not a folder", file="<command line>", field="-o")
            break
    with Store.open(store_path, create=False, readonly=True) as store:
        data = R.load(store, keys)
    (out / "plots").mkdir(parents=True, exist_ok=True)
    runs = data.runs
    # the big export (C++ in pyarrow, the GIL released) runs beside the plots
    pool = ThreadPoolExecutor(max_workers=1)
    runs_export = pool.submit(R.write_tables, out, "runs", {c: runs[c] for c in (*R.EXPORT_COLUMNS, "variant")})
    pi = R.per_instance(runs)
    tables = layout.Tables(summary=R.summarize(data, pi), leaderboard=R.leaderboard(runs),
                           instances=R.instance_rows(data))
    tables.kinds = R.kind_labels(tables.summary)
    blocks, plots, suites = layout.compose(data, pi, tables, out, str(store_path))

    csv_files, pq_files = [], []
    c_path, p_path = runs_export.result()
    pool.shutdown()
    csv_files.append(c_path)
    if p_path is not None:
        pq_files.append(p_path)
    for name, rows, cols, floats in (
            ("summary", tables.summary, _SUMMARY_COLUMNS, _SUMMARY_FLOATS),
            ("leaderboard", tables.leaderboard, _LEADERBOARD_COLUMNS, _LEADERBOARD_FLOATS),
            ("bestknown", [data.best[r["instance_hash"]] | {"variant": r["variant"], "status": r["status"]}
                           for r in tables.instances], _BK_COLUMNS, _BK_FLOATS)):
        columns = {c: np.asarray([r.get(c) if r.get(c) is not None else (np.nan if c in floats else None)
                                  for r in rows], dtype=float if c in floats else object) for c in cols}
        c_path, p_path = R.write_tables(out, name, columns)
        csv_files.append(c_path)
        if p_path is not None:
            pq_files.append(p_path)
    blocks += layout.files_section(bool(pq_files))
    md = R.write_text(out / "report.md", markdown(blocks))
    ht = R.write_text(out / "report.html", page(blocks, "edgebench report"))
    pngs = [p for p in plots if p.suffix == ".png"]
    return ReportFiles(folder=out, markdown=md, html=ht, plots=pngs, csv=csv_files, parquet=pq_files, suites=suites,
                       svg=[p for p in plots if p.suffix == ".svg"])


_SUMMARY_COLUMNS = ("family", "variant", "label", "solver", "kind", "runs", "instances", "feasible", "feasible_share",
                    "proven", "proven_share", "mean_gap", "median_gap", "mean_bound_gap", "sgm_runtime", "wins",
                    "failed")
_SUMMARY_FLOATS = ("runs", "instances", "feasible", "feasible_share", "proven", "proven_share", "mean_gap",
                   "median_gap", "mean_bound_gap", "sgm_runtime", "wins", "failed")
_LEADERBOARD_COLUMNS = ("family", "instance_set", "variant", "rank", "label", "solver", "kind", "runs", "instances",
                        "seeds", "feasible_share", "closed_share", "mean_gap", "geo_gap", "mean_bound_gap",
                        "seed_mean", "ci_low", "ci_high", "sgm_runtime")
_LEADERBOARD_FLOATS = ("rank", "runs", "instances", "seeds", "feasible_share", "closed_share", "mean_gap", "geo_gap",
                       "mean_bound_gap", "seed_mean", "ci_low", "ci_high", "sgm_runtime")
_BK_COLUMNS = ("instance_hash", "instance_id", "instance_set", "family", "variant", "size", "primary_name", "sense",
               "objective", "obj_solver", "obj_run", "obj_date", "bound", "bound_solver", "bound_run", "bound_date",
               "optimal", "status", "conflict")
_BK_FLOATS = ("size", "objective", "bound", "optimal")
