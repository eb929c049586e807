"""Checkpoints are data only (edgebench.learned.checkpoint): a crafted checkpoint whose pickle
would run a command is refused with one error line and exit 2 by every solver and training
loop that reads checkpoints, and nothing runs; every other malformed checkpoint (truncated,
not a zip, wrong format, wrong keys, shapes or dtypes, absurd sizes) is one InputError naming
the file and the field; the shipped checkpoints still load."""

from __future__ import annotations

import os
import pickle
import shutil
import zipfile
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from edgebench.cli import main  # noqa: E402
from edgebench.errors import InputError  # noqa: E402
from edgebench.learned import ces_ppo, checkpoint  # noqa: E402
from edgebench.learned import tapfinger as tf  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "tests" / "data" / "good"
TAPFINGER_SHIPPED = tf.CHECKPOINT_DIR / "tapfinger-bc-synthetic-3-multi.pt"


class _Payload:
    """Unpickling this calls os.system("touch MARKER") (with weights_only=False)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch '{self.marker}'",)


class _OpenPayload(_Payload):
    """Unpickling this calls open(MARKER, "w"), which creates the file."""

    def __reduce__(self):
        return open, (str(self.marker), "w")


def _evil_files(tmp: Path, fmt: str) -> dict[str, tuple[Path, Path]]:
    """name -> (checkpoint file, marker file its pickle would create)."""
    out = {}
    for name, cls in (("system", _Payload), ("open", _OpenPayload)):
        marker = tmp / f"pwned-{name}"
        zipped = tmp / f"evil-{name}.pt"  # torch.save's zip, the payload inside a well-formed blob
        torch.save({"format": fmt, "model": cls(marker), "state_dict": cls(marker)}, zipped)
        out[f"zip-{name}"] = (zipped, marker)
        raw = tmp / f"evil-{name}-pickle.pt"  # a bare pickle stream (torch's legacy reader path)
        raw.write_bytes(pickle.dumps(cls(marker)))
        out[f"pickle-{name}"] = (raw, marker)
    return out


def test_the_crafted_files_really_run_code_when_loaded_unsafely(tmp_path):
    """The payloads are real: the old ``weights_only=False`` load would have run them."""
    files = _evil_files(tmp_path, ces_ppo.CHECKPOINT_FORMAT)
    path, marker = files["zip-system"]
    torch.load(path, weights_only=False)
    assert marker.exists()
    marker.unlink()
    path, marker = files["pickle-open"]
    with open(path, "rb") as fh:
        pickle.load(fh).close()
    assert marker.exists()


def _one_line(err: str, file: Path, field: str) -> None:
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert err.startswith(f"edgebench: error: {file}: {field}: "), err


@pytest.mark.parametrize("solver,instance,fmt", [
    ("ces-ppo", "mapping_tiny.json", ces_ppo.CHECKPOINT_FORMAT),
    ("ppo-balance", "mapping_tiny.json", ces_ppo.CHECKPOINT_FORMAT),
    ("tapfinger", "placement_tiny.json", tf.CHECKPOINT_FORMAT),
])
def test_solve_with_a_malicious_checkpoint_runs_nothing(capsys, tmp_path, solver, instance, fmt):
    for name, (path, marker) in _evil_files(tmp_path, fmt).items():
        target = tmp_path / f"sol-{name}.json"
        rc = main(["solve", str(GOOD / instance), "--solver", solver, "--param", f"checkpoint={path}",
                   "-o", str(target)])
        out, err = capsys.readouterr()
        assert rc == 2 and out == "", (name, err)
        _one_line(err, path, "checkpoint")
        assert "data-only loading refuses" in err or "not a checkpoint written by torch.save" in err, err
        assert not marker.exists(), f"{name}: the checkpoint ran code"
        assert not target.exists()


def test_training_resume_from_a_malicious_checkpoint_runs_nothing(capsys, tmp_path):
    for name, (path, marker) in _evil_files(tmp_path, tf.CHECKPOINT_FORMAT).items():
        run = tmp_path / f"run-{name}"
        run.mkdir()
        shutil.copy(path, run / "last.pt")
        rc = main(["train", "tapfinger", "--out", str(run), "--resume", "--steps", "8", "--num-envs", "1",
                   "--rollout-steps", "4", "--set", "num_tasks=6"])
        out, err = capsys.readouterr()
        assert rc == 2, (name, err)
        _one_line(err, run / "last.pt", "resume")
        assert not marker.exists(), f"{name}: the checkpoint ran code"
    # CES-PPO's resume reads OUT/checkpoint.pt through the same loader
    path, marker = _evil_files(tmp_path, ces_ppo.CHECKPOINT_FORMAT)["zip-system"]
    run = tmp_path / "ces"
    run.mkdir()
    shutil.copy(path, run / "checkpoint.pt")
    rc = main(["train", "ces-ppo", "--out", str(run), "--resume", "--steps", "8", "--no-tensorboard"])
    _, err = capsys.readouterr()
    assert rc == 2
    _one_line(err, run / "checkpoint.pt", "checkpoint")
    assert not marker.exists()


# --------------------------------------------------------------------------------------
# malformed checkpoints: one InputError each, naming file and field
# --------------------------------------------------------------------------------------


def _tapfinger_blob() -> dict:
    return checkpoint.load_checkpoint(TAPFINGER_SHIPPED, tf.CHECKPOINT_FORMAT)


def _mutants(tmp: Path) -> dict[str, tuple[Path, str, str]]:
    """name -> (file, field, a piece of the reason)."""
    out: dict[str, tuple[Path, str, str]] = {}

    def put(name, blob, field, reason):
        p = tmp / f"{name}.pt"
        torch.save(blob, p)
        out[name] = (p, field, reason)

    good = _tapfinger_blob()
    put("not_a_dict", [1, 2, 3], "checkpoint", "holds a list")
    put("other_format", {**good, "format": "edgebench-ces-ppo/1"}, "checkpoint", "not a edgebench-tapfinger-v1")
    sd = dict(good["state_dict"])
    first = next(iter(sd))
    put("missing_weight", {**good, "state_dict": {k: v for k, v in sd.items() if k != first}},
        "checkpoint.state_dict", "1 missing")
    put("extra_weight", {**good, "state_dict": {**sd, "evil": torch.zeros(1)}}, "checkpoint.state_dict",
        "1 unexpected, first 'evil'")
    put("wrong_shape", {**good, "state_dict": {**sd, first: torch.zeros(3, 3)}}, "checkpoint.state_dict",
        f"weight {first!r} is torch.float32 (3, 3)")
    put("wrong_dtype", {**good, "state_dict": {**sd, first: sd[first].double()}}, "checkpoint.state_dict",
        "torch.float64")
    put("weight_not_tensor", {**good, "state_dict": {**sd, first: [1.0]}}, "checkpoint.state_dict", "not a tensor")
    put("huge_hidden", {**good, "config": {**good["config"], "hidden": 10**9}}, "checkpoint.config.hidden",
        "outside 1..4096")
    put("many_layers", {**good, "config": {**good["config"], "layers": 10**6}}, "checkpoint.config.layers",
        "outside 0..64")
    put("zero_heads", {**good, "config": {**good["config"], "heads": 0}}, "checkpoint.config.heads", "outside 1..64")
    put("config_wrong_type", {**good, "config": {**good["config"], "hidden": "wide"}}, "checkpoint.config.hidden",
        "valid integer")
    put("config_unknown_key", {**good, "config": {**good["config"], "evil": 1}}, "checkpoint.config.evil",
        "Extra inputs")
    put("layout_huge_rows", {**good, "layout": {**good["layout"], "max_running": 10**12}},
        "checkpoint.layout.max_running", "outside")
    put("layout_missing", {k: v for k, v in good.items() if k != "layout"}, "checkpoint.layout", "must be a dict")
    put("bad_conv", {**good, "config": {**good["config"], "conv": "evil"}}, "checkpoint.state_dict.conv",
        "conv must be")
    raw = TAPFINGER_SHIPPED.read_bytes()
    trunc = tmp / "truncated.pt"
    trunc.write_bytes(raw[: len(raw) // 2])
    out["truncated"] = (trunc, "checkpoint", "not a checkpoint written by torch.save")
    text = tmp / "text.pt"
    text.write_text("hello")
    out["text"] = (text, "checkpoint", "not a zip archive")
    out["missing"] = (tmp / "nope.pt", "checkpoint", "checkpoint file not found")
    deflated = tmp / "deflated.pt"
    with zipfile.ZipFile(TAPFINGER_SHIPPED) as src, zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    out["deflated"] = (deflated, "checkpoint", "compressed zip records")
    return out


def test_malformed_tapfinger_checkpoints_are_input_errors(tmp_path):
    rng_before = torch.get_rng_state()
    for name, (path, field, reason) in _mutants(tmp_path).items():
        with pytest.raises(InputError) as exc:
            tf.load_checkpoint(path)
        err = exc.value
        assert (err.file, err.field) == (str(path), field), (name, err.line())
        assert reason in err.reason and "\n" not in err.line(), (name, err.line())
    assert torch.equal(rng_before, torch.get_rng_state())  # nothing built for real before the checks


def test_malformed_ces_ppo_checkpoints_are_input_errors(tmp_path):
    good = ces_ppo.read_checkpoint(ces_ppo.DEFAULT_CHECKPOINTS["ces-ppo"])
    cases = {
        "sizes": ({**good, "sizes": {**good["sizes"], "max_nodes": 10**12}}, "checkpoint.sizes.max_nodes"),
        "hidden": ({**good, "hidden": -1}, "checkpoint.sizes.hidden"),
        "variant": ({**good, "variant": "evil"}, "checkpoint.variant"),
        "weights": ({**good, "model": {k: v[..., :1] for k, v in good["model"].items()}}, "checkpoint.model"),
        "no_model": ({k: v for k, v in good.items() if k != "model"}, "checkpoint.model"),
        "no_sizes": ({k: v for k, v in good.items() if k != "sizes"}, "checkpoint"),
    }
    for name, (blob, field) in cases.items():
        path = tmp_path / f"{name}.pt"
        torch.save(blob, path)
        with pytest.raises(InputError) as exc:
            ces_ppo.load_policy(path)
        assert (exc.value.file, exc.value.field) == (str(path), field), (name, exc.value.line())


def test_save_refuses_objects_and_writes_atomically(tmp_path):
    import numpy as np

    path = tmp_path / "c.pt"
    with pytest.raises(TypeError, match="ndarray"):
        checkpoint.save_checkpoint(path, {"format": "x", "a": np.zeros(2)})
    with pytest.raises(TypeError, match="_Payload"):
        checkpoint.save_checkpoint(path, {"format": "x", "a": [_Payload(tmp_path / "m")]})
    assert list(tmp_path.iterdir()) == []
    checkpoint.save_checkpoint(path, {"format": "x", "n": np.float64(0.5), "t": torch.ones(2), "s": (1, "a")})
    blob = checkpoint.load_checkpoint(path, "x")
    assert type(blob["n"]) is float and blob["s"] == (1, "a") and torch.equal(blob["t"], torch.ones(2))
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]


@pytest.mark.parametrize("path", sorted(tf.CHECKPOINT_DIR.glob("*.pt")), ids=lambda p: p.name)
def test_every_shipped_checkpoint_is_data_only(path):
    """Loads with weights_only=True and passes the shape checks of its network."""
    if path.name.startswith("ces-ppo"):
        assert ces_ppo.load_policy(path).net is not None
    else:
        model, lay, _ = tf.load_checkpoint(path)
        assert sum(p.numel() for p in model.parameters()) > 0
