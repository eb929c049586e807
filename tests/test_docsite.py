"""The documentation site (mkdocs.yml) builds with warnings as errors, offline, and its generated
reference pages cover every command of the parser and every solver of the registry."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("mkdocs", reason="the site build needs the docs extras (pip install -e '.[docs]')")


def _commands(parser: argparse.ArgumentParser, prefix: str = "edgebench") -> list[str]:
    out = []
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                out.append(f"{prefix} {name}")
                out += _commands(sub, f"{prefix} {name}")
    return out


def test_cli_reference_lists_every_command_and_option():
    from edgebench import docgen
    from edgebench.cli import build_parser

    parser = build_parser()
    text = docgen.cli_reference(parser)
    cmds = _commands(parser)
    assert {"edgebench merge", "edgebench run", "edgebench train tapfinger"} <= set(cmds)
    for c in cmds:
        assert f"`{c}`" in text, c
    assert "--estimate-workers" in text and "--retry-failed" in text


def test_solver_catalogue_lists_every_solver_with_parameters():
    from edgebench import docgen, registry

    text = docgen.solver_catalogue()
    for s in registry.solvers():
        assert f"## {s.name}\n" in text and f"[`{s.name}`](#{s.name})" in text
    ga = text.split("## ga\n")[1].split("\n## ")[0]
    assert "`max_evaluations`" in ga and "`population`" in ga and "default 100" in ga  # parameter, default
    # bounds declared at registration appear as an interval
    declared = [s for s in registry.solvers() if s.bounds]
    if declared:
        s = declared[0]
        section = text.split(f"## {s.name}\n")[1].split("\n## ")[0]
        lo, hi = next(iter(s.bounds.values()))
        assert f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]" in section


def test_readme_links_resolve():
    import re

    text = (ROOT / "README.md").read_text()
    links = [m for m in re.findall(r"\]\(([^)#\s]+)", text) if "://" not in m]
    assert "docs/index.md" in links and "docs/getting-started.md" in links
    for link in links:
        assert (ROOT / link).exists(), link


def test_hook_rewrites_links_to_repository_files_only(tmp_path):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import mkdocs_hooks
    finally:
        sys.path.pop(0)
    page = SimpleNamespace(file=SimpleNamespace(src_uri="howto/x.md"))
    config = {"docs_dir": str(ROOT / "docs")}
    md = ("[a](../../examples/greedy_policy.py) [b](../../no/such/file.py) [c](../cli.md) "
          "[d](https://example.org/x)")
    out = mkdocs_hooks.on_page_markdown(md, page, config, None)
    assert "a (`examples/greedy_policy.py`)" in out
    assert "[b](../../no/such/file.py)" in out  # left alone: the strict build reports it
    assert "[c](../cli.md)" in out and "[d](https://example.org/x)" in out


@pytest.mark.slow  # mkdocs build of the whole site: about 15 s
def test_site_builds_strict_and_offline(tmp_path):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", OMP_NUM_THREADS="1")
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(site)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    warnings = [line for line in (proc.stdout + proc.stderr).splitlines() if "WARNING" in line or "ERROR" in line]
    assert proc.returncode == 0 and not warnings, "\n".join(warnings or [proc.stderr[-3000:]])
    for page in ("index.html", "getting-started.html", "cluster.html", "reference/cli.html",
                 "reference/solvers.html", "reference/schemas.html", "api.html", "tutorial.html",
                 "notes/tapfinger-experiments.html", "search/search_index.json"):
        assert (site / page).is_file(), page
    assert "merge_stores" in (site / "api.html").read_text()
    # the results page, generated from the newest export under results/ (issue 46): all three families
    results = (site / "results.html").read_text()
    for fam in ("placement", "mapping", "offloading"):
        assert f"<b>{fam}</b>: closest to optimal" in results, fam
        assert (site / "img" / "results" / f"profile-{fam}.png").is_file(), fam
    for html in site.rglob("*.html"):
        text = html.read_text()
        assert "fonts.googleapis" not in text and "fonts.gstatic" not in text, html
