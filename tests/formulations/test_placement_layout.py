"""The placement sub-package's layout (issue 45 item 1): old flat paths are deprecated shims
that re-export the new modules' public names; no private name crosses a module boundary inside
the sub-package; its map (the package docstring) names every module."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import edgebench.formulations.placement as placement

PKG_DIR = Path(placement.__file__).parent
OLD = {
    "placement_deadline": "deadline", "placement_highs": "highs", "placement_exact": "exact",
    "placement_enum": "enum", "placement_bound": "bounds.ladder", "placement_bound_additive": "bounds.additive",
    "placement_lagrange": "bounds.lagrange", "placement_trajectory": "bounds.trajectory",
    "placement_labelling": "bounds.labelling", "placement_rounding": "bounds.rounding",
    "placement_histip": "bounds.histip", "placement_timip": "bounds.timip", "placement_residual": "bounds.residual",
    "placement_lns": "search.lns", "placement_cglns": "search.cglns",
    "placement_neighbourhoods": "search.neighbourhoods", "placement_grow": "search.grow",
    "placement_lagrange_list": "search.lagrange_list",
}


@pytest.mark.parametrize("old,new", sorted(OLD.items()))
def test_old_paths_warn_and_reexport(old, new):
    name = f"edgebench.formulations.{old}"
    sys.modules.pop(name, None)
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated"):
        shim = importlib.import_module(name)
    mod = importlib.import_module(f"edgebench.formulations.placement.{new}")
    public = [k for k in vars(mod) if not k.startswith("_")]
    assert public and all(getattr(shim, k) is getattr(mod, k) for k in public)


def test_the_package_keeps_the_old_module_names():
    """``edgebench.formulations.placement`` was a module: its public names stay importable from
    the package, without a warning."""
    for name in ("prepare", "solve", "best_greedy", "greedy_schedule", "schedule_objective", "to_decisions",
                 "PlacementData", "Schedule", "Option", "build_model", "finish_bounds", "SOLVER_NAME"):
        assert hasattr(placement, name), name
    assert placement.solve.__module__ == "edgebench.formulations.placement.milp"


def test_new_paths_import_without_deprecation_warnings():
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            "import importlib, pkgutil, edgebench.formulations.placement as p\n"
            "for m in pkgutil.walk_packages(p.__path__, p.__name__ + '.'): importlib.import_module(m.name)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def _modules():
    return sorted(p for p in PKG_DIR.rglob("*.py") if "__pycache__" not in p.parts)


def test_no_private_name_crosses_a_module_boundary():
    bad = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("edgebench"):
                bad += [f"{path.name}: {a.name}" for a in node.names if a.name.startswith("_") and a.name != "__future__"]
    assert not bad, bad


def test_no_import_inside_a_function_within_the_package():
    """Inside the sub-package every import is at module level (optional heavy libraries
    excepted: OR-Tools' CP-SAT)."""
    bad = []
    for path in _modules():
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("edgebench.formulations"):
                        bad.append(f"{path.name}:{node.lineno} {node.module}")
    assert not bad, bad


def test_the_map_names_every_module():
    doc = placement.__doc__
    for path in _modules():
        if path.name != "__init__.py":
            assert path.name in doc, path.name
