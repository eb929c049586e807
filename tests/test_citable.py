"""LICENSE, CITATION.cff and CHANGELOG.md agree with pyproject.toml (licence and version)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_license_is_the_declared_mit_licence():
    assert PROJECT["license"] == {"text": "MIT"}
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Permission is hereby granted, free of charge" in text


def test_citation_cff_names_this_version():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0"
    for key in ("message", "title", "authors"):
        assert cff[key]
    assert str(cff["version"]) == PROJECT["version"] and cff["license"] == "MIT"


def test_changelog_has_this_version_and_the_readme_points_to_everything():
    assert f"## [{PROJECT['version']}]" in (ROOT / "CHANGELOG.md").read_text()
    readme = (ROOT / "README.md").read_text()
    for target in ("LICENSE", "CITATION.cff", "CHANGELOG.md", "docs/tutorial.md"):
        assert f"]({target})" in readme
