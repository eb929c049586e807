"""``edgebench validate DIR`` / ``validate DIR/manifest.json``: a whole instance set is checked
(manifest, every instance's id and hash, shipped solutions re-scored, recipe / generator)."""

from __future__ import annotations

import json
import shutil

from edgebench.cli import main
from edgebench.instances import sets


def _generate(tmp_path, capsys):
    out = tmp_path / "my-set"
    assert main(["generate", "offloading", "--preset", "heft-random", "--seed", "0", "--count", "2", "-o", str(out)]) == 0
    capsys.readouterr()
    return out


def _one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("edgebench: error: ") and "Traceback" not in err[0], err
    return err[0]


def test_generated_set_validates_as_folder_and_manifest(tmp_path, capsys):
    folder = _generate(tmp_path, capsys)
    for arg in (str(folder), str(folder) + "/", str(folder / "manifest.json")):
        assert main(["validate", arg]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"OK {folder} set my-set offloading: 2 instances") and "2 regenerated" in out


def test_tampered_generated_set_is_one_error_line(tmp_path, capsys):
    folder = _generate(tmp_path, capsys)
    m = json.loads((folder / "manifest.json").read_text())
    m["instances"][1]["seed"] = 7  # the preset no longer gives this instance
    (folder / "manifest.json").write_text(json.dumps(m))
    assert main(["validate", str(folder)]) == 2
    assert "instances[1]" in _one_error(capsys)
    m["instances"][1]["seed"] = 1
    m["instances"][0]["hash"] = "0" * 64
    (folder / "manifest.json").write_text(json.dumps(m))
    assert main(["validate", str(folder / "manifest.json")]) == 2
    line = _one_error(capsys)
    assert "hash" in line and "offloading-heft-random-s0" in line
    m["manifest_version"] = 99
    (folder / "manifest.json").write_text(json.dumps(m))
    assert main(["validate", str(folder)]) == 2
    assert "manifest_version" in _one_error(capsys)
    assert main(["validate", str(tmp_path)]) == 2  # a folder without a manifest
    assert "no manifest.json" in _one_error(capsys)


def test_shipped_set_validates_and_a_wrong_objective_is_caught(tmp_path, capsys):
    name = "offloading-patent-example-v1"
    assert main(["validate", str(sets.DATA_DIR / name)]) == 0
    out = capsys.readouterr().out
    assert "1 shipped solutions re-scored" in out and "recipe checked" in out
    copy = tmp_path / name
    shutil.copytree(sets.DATA_DIR / name, copy)
    m = json.loads((copy / "manifest.json").read_text())
    m["instances"][0]["best_known"]["objective"] *= 0.5
    (copy / "manifest.json").write_text(json.dumps(m))
    assert main(["validate", str(copy)]) == 2
    err = _one_error(capsys)  # the halved objective is caught (below its bound, or re-scored differently)
    assert "best_known.objective" in err or "best_known.bound" in err
    m["instances"][0]["best_known"]["objective"] *= 2
    m["recipe"]["version"] = 99
    (copy / "manifest.json").write_text(json.dumps(m))
    assert main(["validate", str(copy)]) == 2
    assert "recipe.version" in _one_error(capsys)
