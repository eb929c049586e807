"""Fast from the first keystroke (issue 43 items 1 and 3, issue 44 case 6): light commands import
no solver module and no heavy library; the solver catalogue equals the registrations; numba's
kernels import and run from a read-only install."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from edgebench import catalogue, cli, kernels, registry

ROOT = Path(__file__).resolve().parents[1]
GOOD = ROOT / "tests" / "data" / "good"
HEAVY = ("torch", "numba", "scipy", "ortools", "pyomo", "pulp", "matplotlib", "dask", "pandas", "pyarrow",
         "highspy", "deap", "gymnasium", "torch_geometric", "networkx")
#: run one command in a fresh interpreter, then print the heavy packages and solver modules it imported
PROBE = """
import contextlib, io, json, sys
from edgebench.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(sys.argv[1:])
heavy = sorted({m.split('.')[0] for m in sys.modules} & set(%r))
solver_modules = sorted(m for m in sys.modules if m.split('.')[:2] in
                        (['edgebench', 'solvers'], ['edgebench', 'formulations'], ['edgebench', 'learned']))
print(json.dumps({"rc": rc, "heavy": heavy, "solver_modules": solver_modules}))
""" % (HEAVY,)


def _imports(*argv: str, cwd: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=cwd,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [
    ("--version",), ("--help",), ("solvers",), ("solvers", "--json"), ("solvers", "--family", "placement"),
    ("sets",), ("info", str(GOOD / "placement_tiny.json")), ("validate", str(GOOD / "mapping_tiny.json")),
    ("evaluate", str(GOOD / "placement_tiny.json"), str(GOOD / "placement_tiny.random.json")),
    ("run", "--help"), ("merge", "--help"),
], ids=lambda a: " ".join(a[:2]).replace(str(GOOD) + "/", ""))
def test_light_commands_import_no_heavy_module_and_no_solver(argv, tmp_path):
    got = _imports(*argv, cwd=tmp_path)
    assert got["rc"] == 0
    assert got["heavy"] == [], f"{' '.join(argv)} imported {got['heavy']}"
    assert got["solver_modules"] == [] or argv == ("solvers", "--json") and set(got["solver_modules"]) <= {
        "edgebench.learned", "edgebench.learned.provenance"}, got["solver_modules"]


def test_solve_random_imports_only_what_random_needs(tmp_path):
    got = _imports("solve", str(GOOD / "placement_tiny.json"), "--solver", "random", "-o", str(tmp_path / "s.json"),
                   cwd=tmp_path)
    assert got["rc"] == 0 and (tmp_path / "s.json").is_file()
    assert got["heavy"] == []
    assert "edgebench.solvers.random_baseline" in got["solver_modules"]
    assert not [m for m in got["solver_modules"] if m.startswith(("edgebench.formulations", "edgebench.learned"))]


def test_the_catalogue_equals_the_registrations():
    """edgebench/solver_catalogue.py is what `python -m edgebench.catalogue` writes from the
    modules' register(...) calls today (rerun it after changing a registration)."""
    assert catalogue.render(catalogue.records()) == catalogue.PATH.read_text(), \
        "stale solver catalogue: run python -m edgebench.catalogue"


def test_catalogue_entries_answer_like_the_loaded_solvers():
    registry.load_all()
    for name, entry in registry._CATALOGUE.items():
        info = registry._BUILTIN[name]
        fresh = registry.CatalogueEntry(entry.record)
        assert fresh.as_dict() == info.as_dict(), name  # checkpoints from the sidecars, without torch
        assert (fresh.families, fresh.kind, fresh.default_time_limit, fresh.proves, fresh.choices, fresh.bounds) \
            == (info.families, info.kind, info.default_time_limit, info.proves, info.choices, info.bounds), name


def test_the_command_stubs_say_what_the_parsers_say():
    """`edgebench --help` lists one-line stubs (COMMANDS); each equals its real parser's help."""
    full = cli.build_parser()
    sub = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
    real = {a.dest: a.help for a in sub._choices_actions}
    assert real == {name: help_ for name, help_, _ in cli.COMMANDS}


def test_a_command_builds_only_its_own_parser():
    parser = cli.build_parser("solvers")
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert sub.choices["solvers"]._actions and len(sub.choices["run"]._actions) == 1  # run: a stub (-h only)


def test_cli_names_the_reason_a_solver_cannot_load(monkeypatch, capsys, tmp_path):
    """Issue 44 case 6: "placement-exact: could not load: ..." with exit 2, never "unknown solver"."""
    record = {**registry._CATALOGUE["placement-exact"].record, "module": "edgebench_missing_module_for_test"}
    monkeypatch.setitem(registry._CATALOGUE, "placement-exact", registry.CatalogueEntry(record))
    monkeypatch.delitem(registry._REGISTRY, "placement-exact", raising=False)
    monkeypatch.setattr(registry, "LOAD_ERRORS", {})
    rc = cli.main(["solve", str(GOOD / "placement_tiny.json"), "--solver", "placement-exact", "-o",
                   str(tmp_path / "x.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert "placement-exact: could not load: ModuleNotFoundError" in err[0] and "unknown solver" not in err[0]


# ---------------------------------------------------------------------------------------------
# numba's cache: writable, per user, set before numba is imported (issue 43 item 3, 44 case 6)
# ---------------------------------------------------------------------------------------------

KERNEL = """
import os
import edgebench.formulations.placement.bounds.labelling as LB
print(repr(float(LB.envelope(0.5, 0.3, 0.1, 1.0, 1.0, 0.0, False))))
print(os.environ["NUMBA_CACHE_DIR"])
"""


def _read_only_copy(tmp_path: Path) -> Path:
    """The package laid out as installed (edgebench/ with formulations/ inside), read-only: no file
    may be written, and numba's in-tree cache folder cannot be made (a file is in its place,
    which stops root too)."""
    site = tmp_path / "site"
    pkg = site / "edgebench"
    shutil.copytree(ROOT / "edgebench", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "formulations", pkg / "formulations", ignore=shutil.ignore_patterns("__pycache__"))
    for d in (pkg, pkg / "formulations"):
        (d / "__pycache__").write_text("not a folder\n")
    for p in sorted(site.rglob("*"), reverse=True):
        p.chmod(0o444 if p.is_file() else 0o555)
    site.chmod(0o555)
    return site


def _run_kernel(site: Path, tmp_path: Path, **env: str) -> tuple[float, Path]:
    base = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH")}
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir(exist_ok=True)
    # HOME is not a folder: numba's user-wide fallback (~/.cache/numba) cannot be made either
    full = {**base, "PYTHONPATH": str(site), "HOME": "/dev/null", "TMPDIR": str(tmpdir), **env}
    out = subprocess.run([sys.executable, "-c", KERNEL], capture_output=True, text=True, cwd=tmp_path, env=full,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    value, cache = out.stdout.split()
    return float(value), Path(cache)


def test_read_only_install_imports_and_runs_the_kernel(tmp_path):
    site = _read_only_copy(tmp_path)
    try:
        value, cache = _run_kernel(site, tmp_path)
        # the kernel's own arithmetic (table gain): p + sig * max(par + eps, 0) + 1e-12
        assert value == pytest.approx(0.5 + 1.0 * (0.3 + 0.1) + 1e-12, abs=1e-12)
        assert cache == tmp_path / "tmp" / f"edgebench-numba-{os.getuid()}"
        assert list(cache.rglob("*envelope*.nbi")), "no compiled code cached"
        # a writable per-user cache (XDG_CACHE_HOME) is used when there is one
        value2, cache2 = _run_kernel(site, tmp_path, XDG_CACHE_HOME=str(tmp_path / "xdg"))
        assert value2 == value and cache2 == tmp_path / "xdg" / "edgebench" / "numba"
        assert list(cache2.rglob("*envelope*.nbi"))
    finally:
        for p in [tmp_path / "site", *(tmp_path / "site").rglob("*")]:
            p.chmod(0o755)


def test_cache_dir_prefers_a_writable_user_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert kernels.cache_dir() == tmp_path / "mine"
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/dev/null/not-a-folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert kernels.cache_dir() == tmp_path / "xdg" / "edgebench" / "numba"


def test_warm_compiles_every_kernel(capsys):
    assert cli.main(["warm"]) == 0
    out = capsys.readouterr().out
    assert "numba kernels ready" in out
    for k in ("label", "walk_back", "step_grid", "envelope_grid"):
        assert f"labelling.{k}" in out
    assert f"cache: {kernels.cache_dir()}" in out


def test_is_warm_follows_the_stamp_and_the_cache(tmp_path, monkeypatch):
    """warm_kernels() without force is a no-op only when the stamp matches today's kernels and
    versions and the cache holds their compiled code."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert not kernels.is_warm()  # empty cache
    stamp = tmp_path / "edgebench-warm.json"
    stamp.write_text(json.dumps(kernels.fingerprint()))
    assert not kernels.is_warm()  # a stamp but no compiled code
    (tmp_path / "formulations_x").mkdir()
    (tmp_path / "formulations_x" / "labelling.label-126.py311.nbi").write_bytes(b"")
    assert not kernels.is_warm()  # one kernel module compiled, not every one (sgs: placement-lahc)
    for m in kernels.KERNEL_MODULES:
        (tmp_path / "formulations_x" / f"{m.rsplit('.', 1)[-1]}.k-1.py311.nbi").write_bytes(b"")
    assert kernels.is_warm()
    stamp.write_text(json.dumps({**kernels.fingerprint(), "numba": "0.0"}))  # another numba: recompile
    assert not kernels.is_warm()


def test_solve_readies_the_kernels_before_the_solver_s_clock(capsys, tmp_path, monkeypatch):
    """A solver whose module uses compiled kernels: `solve` warms them before calling it."""
    calls = []
    info = registry.get("random")

    def solver(instance, **kw):
        calls.append("solver")
        return info.fn(instance, **kw)

    monkeypatch.setitem(registry._REGISTRY, "random", registry.SolverInfo(
        info.name, info.families, info.kind, info.description, solver, info.params))
    monkeypatch.setattr(kernels, "loaded", lambda: True)
    monkeypatch.setattr(kernels, "warm_kernels", lambda force=False: calls.append("warm") or {"seconds": 0.0})
    rc = cli.main(["solve", str(GOOD / "placement_tiny.json"), "--solver", "random", "-o", str(tmp_path / "s.json")])
    assert rc == 0 and calls == ["warm", "solver"], capsys.readouterr().err


def test_cache_dir_skips_a_home_we_cannot_even_look_into(tmp_path, monkeypatch):
    """A HOME of another user's (stat raises EACCES, as /root for uid 65534) is not writable:
    the cache falls back instead of raising at ``import edgebench``."""
    from pathlib import Path as _P

    from edgebench import kernels

    real_exists = _P.exists

    def exists(self):
        if str(self).startswith(str(tmp_path / "locked")):
            raise PermissionError(13, "Permission denied", str(self))
        return real_exists(self)

    monkeypatch.setattr(_P, "exists", exists)
    assert kernels._writable(tmp_path / "locked" / ".cache" / "edgebench" / "numba") is False
