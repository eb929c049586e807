"""Hostile input, round three (issue 44): ``convert stg`` at its server limit and with
oversized numbers (cases 3, 8), ``validate DIR`` refusing paths outside the set exactly as
``run`` does (case 9), and one ``printable()`` for data on its way to a terminal (case 12)."""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from edgebench.cli import main
from edgebench.errors import InputError
from edgebench.instances import io, sets
from edgebench.instances.manifest import read_manifest_file
from edgebench.instances.traces import stg
from edgebench.runner.report import text_table
from edgebench.text import printable

#: address-space cap of the memory case (as tests/test_hostile.py: the interpreter with numpy,
#: scipy and pydantic maps about 0.7 GiB before any work)
MEMORY_LIMIT = 1536 * 2**20
GRAPH = "3\n0 0 0\n1 5 1 0\n2 3 1 1\n3 4 1 1\n4 0 2 2 3\n"


def _cli(*args: str, limit: int | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    def preexec() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run([sys.executable, "-m", "edgebench", *args], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=preexec)


def _one_line(err: str, *pieces: str) -> None:
    assert err.count("\n") == 1 and err.startswith("edgebench: error: ") and "Traceback" not in err, err[-2000:]
    for p in pieces:
        assert p in err, err


# ---- case 3: convert stg --servers at and beyond the limit ------------------------------------

def test_stg_servers_beyond_the_limit_refused_before_any_allocation(tmp_path):
    """Was: --servers 10000 (the format's list limit) on a 3-task graph built a 10^8-entry
    distance matrix: > 9 GB and 150 s, or exit 134 under a 3 GB cap."""
    g = tmp_path / "g.stg"
    g.write_text(GRAPH)
    proc = _cli("convert", "stg", str(g), "--servers", "10000", "-o", str(tmp_path / "o.json"), limit=MEMORY_LIMIT,
                timeout=60)
    assert proc.returncode == 2
    _one_line(proc.stderr, "--servers: must be from 1 to 1000")
    assert not (tmp_path / "o.json").exists()
    with pytest.raises(InputError, match="from 1 to 1000"):
        stg.convert(g, servers=stg.MAX_SERVERS + 1)


def test_stg_at_the_server_limit_converts_under_the_memory_cap(tmp_path):
    g = tmp_path / "g.stg"
    g.write_text(GRAPH)
    out = tmp_path / "o.json"
    proc = _cli("convert", "stg", str(g), "--servers", str(stg.MAX_SERVERS), "-o", str(out), limit=MEMORY_LIMIT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert len(io.load_instance(out).offloading.servers) == stg.MAX_SERVERS == 1000


@pytest.mark.parametrize("text,where", [
    ("3\n0 0 0\n1 " + "9" * 5000 + " 1 0\n2 3 1 1\n3 4 1 1\n4 0 2 2 3\n", "line 3"),
    ("9" * 5000 + "\n", "line 1"),
])
def test_stg_number_of_5000_digits_one_line(tmp_path, capsys, text, where):
    g = tmp_path / "g.stg"
    g.write_text(text)
    assert main(["convert", "stg", str(g), "--servers", "2", "-o", str(tmp_path / "o.json")]) == 2
    _one_line(capsys.readouterr().err, f"g.stg: {where}: a number of 5000 digits (at most 18)")


def test_stg_optimum_table_number_of_5000_digits_one_line(tmp_path, capsys):
    g = tmp_path / "g.stg"
    g.write_text(GRAPH)
    table = tmp_path / "opt.csv"
    table.write_text(f"tmp/g.stg,2,{'7' * 5000}\n")
    assert main(["convert", "stg", str(g), "--servers", "2", "--optima", str(table), "-o", str(tmp_path / "o.json")]) == 2
    _one_line(capsys.readouterr().err, "opt.csv: line 1, optimum: a number of 5000 digits")


# ---- case 9: validate DIR confines paths exactly as run does ----------------------------------

def _set(tmp_path: Path, edit) -> Path:
    folder = tmp_path / "s"
    shutil.copytree(sets.DATA_DIR / "offloading-heft-random-v1", folder)
    m = json.loads((folder / "manifest.json").read_text())
    edit(m)
    (folder / "manifest.json").write_text(json.dumps(m))
    return folder


@pytest.mark.parametrize("edit,field,shown", [
    (lambda m: m["instances"][0].update(file="/etc/passwd"), "instances[0].file", "'/etc/passwd'"),
    (lambda m: m["instances"][1].update(file="../../outside.json"), "instances[1].file", "'../../outside.json'"),
    (lambda m: m["instances"][0]["best_known"].update(solution="../x.json"), "instances[0].best_known.solution",
     "'../x.json'"),
])
def test_validate_dir_refuses_paths_outside_the_set_as_run_does(tmp_path, capsys, edit, field, shown):
    folder = _set(tmp_path, edit)
    assert main(["validate", str(folder)]) == 2
    err = capsys.readouterr().err
    _one_line(err, f"manifest.json: {field}: path {shown} leads outside the folder")
    with pytest.raises(InputError) as run_err:  # the manifest reader of run / report / bestknown
        read_manifest_file(folder / "manifest.json")
    assert err.strip() == f"edgebench: error: {run_err.value.line()}"


@pytest.mark.parametrize("rel", ["/etc/passwd", "../../../../../../etc/passwd", "../recipes/../../pyproject.toml"])
def test_validate_dir_refuses_a_recipe_outside_the_recipes(tmp_path, capsys, rel):
    """Was: the recipe was read from anywhere and parsed as TOML (a line/column error about
    /etc/passwd)."""
    folder = _set(tmp_path, lambda m: m["recipe"].update(file=rel))
    assert main(["validate", str(folder)]) == 2
    err = capsys.readouterr().err
    _one_line(err, "manifest.json: recipe.file: path", "leads outside the folder")
    assert "TOML" not in err and "line 1" not in err


def test_validate_dir_still_accepts_a_shipped_set(tmp_path, capsys):
    folder = _set(tmp_path, lambda m: None)
    assert main(["validate", str(folder)]) == 0
    assert "4 shipped solutions re-scored, recipe checked" in capsys.readouterr().out


# ---- case 12: one printable() --------------------------------------------------------------

@pytest.mark.parametrize("raw,shown", [
    ("plain label 漢字 é", "plain label 漢字 é"),
    ("\x1b[2J\x1b[HOK forged", "\\x1b[2J\\x1b[HOK forged"),
    ("a\nb\rc\td", "a\\nb\\rc\\td"),
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),
    ("x\x7f\x85\x9b", "x\\x7f\\x85\\x9b"),
    ("rtl\u202eexe.json\u2028", "rtl\\u202eexe.json\\u2028"),
])
def test_printable_escapes_what_can_drive_a_terminal(raw, shown):
    assert printable(raw) == shown
    assert printable(shown) == shown  # escaped text stays as it is


def test_file_name_in_an_error_line_is_escaped(tmp_path, capsys):
    bad = tmp_path / "a\x1b[2J\nOK b.json"
    bad.write_text("{")
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    _one_line(err, "a\\x1b[2J\\nOK b.json")
    assert "\x1b" not in err


def test_leaderboard_and_merge_tables_escape_labels():
    table = text_table(["solver", "gap"], [["heft\x1b[2J\nOK fake", "0.1"]])
    assert "\x1b" not in table and table.count("\n") == 1 and "heft\\x1b[2J\\nOK fake" in table
