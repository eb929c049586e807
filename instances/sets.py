"""Instance sets, versioned with the package (``<family>-<preset>-v<N>``), built from recipes.

Each set is a folder under ``instances/data/`` with a ``manifest.json``, the instance files
and (once certified) ``solutions/<instance id>.json``. Each set is described by a **recipe**,
a TOML file ``instances/recipes/<name>.toml`` (format: ``docs/generators.md``, "Recipes"):
the generator preset or trace converter, its parameters, the seeds (or one ``[[instances]]``
entry per instance), and for trace-derived sets the source files with their sha256 and terms
of use. Generators and converters are seeded and byte-stable, so ``build_set`` rebuilds a
set exactly; a test rebuilds every shipped set and compares the bytes.

Build: ``edgebench sets build NAME|RECIPE.toml [-o DIR]`` (or ``python -m
edgebench.instances.sets build NAME``). The manifest's ``best_known`` fields are filled by
``edgebench bestknown --write-manifests``; a rebuild keeps them for unchanged instances.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from edgebench.argtypes import CMDLINE
from edgebench.errors import InputError
from edgebench.instances.io import content_hash, load_instance, read_json, read_toml, validate_model, write_json, write_text_atomic
from edgebench.instances.manifest import confined, read_manifest_file
from edgebench.instances.model import Instance

DATA_DIR = Path(__file__).resolve().parent / "data"
RECIPES_DIR = Path(__file__).resolve().parent / "recipes"
MANIFEST_VERSION = 1
CONVERTERS = ("alibaba", "daggen", "adversary", "stg")
#: certificate folders of the adversarial sets (the `adversary` converter's source files)
ADVERSARIAL_DIR = Path(__file__).resolve().parent / "adversarial"
EMPTY_BEST_KNOWN = {"objective": None, "bound": None, "optimal": False, "solver": None, "run": None, "date": None}


class SourceFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class Source(BaseModel):
    """Trace files a converted set is made from (names relative to the traces folder)."""
    model_config = ConfigDict(extra="forbid")
    files: list[SourceFile] = Field(min_length=1)
    terms: str = Field(min_length=1)
    reference: str = ""


class Item(BaseModel):
    """One instance: its seed, parameter overrides (on top of the recipe's) and trace files."""
    model_config = ConfigDict(extra="forbid")
    seed: int = Field(ge=0)
    params: dict[str, Any] = Field(default_factory=dict)
    files: list[str] = Field(default_factory=list)


class Recipe(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*-v[0-9]+$")
    version: int = Field(ge=1)
    family: str
    description: str = Field(min_length=1)
    preset: str | None = None
    converter: str | None = None
    seeds: list[int] = Field(default_factory=list)
    params: dict[str, Any] = Field(default_factory=dict)
    instances: list[Item] = Field(default_factory=list)
    gzip: bool = False
    source: Source | None = None

    @model_validator(mode="after")
    def _check(self) -> "Recipe":
        if (self.preset is None) == (self.converter is None):
            raise ValueError("give exactly one of 'preset' (a generator) or 'converter' (a trace converter)")
        if self.converter is not None and self.converter not in CONVERTERS:
            raise ValueError(f"unknown converter {self.converter!r} (known: {', '.join(CONVERTERS)})")
        if bool(self.seeds) == bool(self.instances):
            raise ValueError("give exactly one of 'seeds' or '[[instances]]'")
        if self.converter is not None and self.source is None:
            raise ValueError("a converted set needs a [source] table (trace files, sha256, terms)")
        listed = {f.name for f in self.source.files} if self.source is not None else set()
        for item in self.instances:
            for f in item.files:
                if f not in listed:
                    raise ValueError(f"instance file {f!r} is not listed (with its sha256) in [source] files")
        return self

    def items(self) -> list[Item]:
        return self.instances or [Item(seed=s) for s in self.seeds]


def read_recipe(path: str | Path) -> Recipe:
    p = Path(path)
    data = read_toml(p, "recipe")
    recipe = validate_model(Recipe, data, file=str(p))
    if p.suffix == ".toml" and p.stem != recipe.name:
        raise InputError(f"the recipe file must be named after its set ({recipe.name}.toml)", file=str(p),
                         field="name")
    return recipe


def recipe_path(name_or_path: str | Path) -> Path:
    """A recipe file: a path to a ``.toml`` file, or the name of a shipped set."""
    p = Path(name_or_path)
    if p.suffix == ".toml":
        return p
    q = RECIPES_DIR / f"{p.name}.toml"
    if not q.is_file():
        known = ", ".join(sorted(x.stem for x in RECIPES_DIR.glob("*.toml")))
        raise InputError(f"unknown recipe {str(name_or_path)!r} (known: {known})", file=CMDLINE, field="RECIPE")
    return q


def _load_recipes() -> dict[str, Recipe]:
    return {r.name: r for r in (read_recipe(p) for p in sorted(RECIPES_DIR.glob("*.toml")))}


RECIPES: dict[str, Recipe] = _load_recipes()


def _trace_dir(recipe: Recipe, file: str) -> Path:
    """The traces folder, with every source file's sha256 checked against the recipe's."""
    from edgebench.instances.traces import default_traces_dir, file_sha256

    base = ADVERSARIAL_DIR if recipe.converter == "adversary" else default_traces_dir()
    if base is None:
        raise InputError("no traces folder found (set $EDGEBENCH_TRACES or use ../shared/traces)", file=file,
                         field="source")
    for i, f in enumerate(recipe.source.files):
        path = confined(base, f.name, file=file, field=f"source.files[{i}].name")
        if not path.is_file():
            raise InputError(f"trace file not found in {base}", file=file, field=f"source.files[{i}].name")
        got = file_sha256(path)
        if got != f.sha256:
            raise InputError(f"sha256 {got[:12]}... of {path} differs from the recipe's {f.sha256[:12]}...",
                             file=file, field=f"source.files[{i}].sha256")
    return base


def _make(recipe: Recipe, item: Item, params: dict[str, Any], traces: Path | None) -> Instance:
    if recipe.converter == "daggen":
        from edgebench.instances.traces import daggen

        return daggen.convert([traces / f for f in item.files], seed=item.seed, **params)
    if recipe.converter == "adversary":
        from edgebench.adversary.found import convert

        return convert([traces / f for f in item.files], seed=item.seed, **params)
    if recipe.converter == "stg":
        from edgebench.instances.traces import stg

        graphs = [f for f in item.files if f.endswith(".stg")]
        tables = [f for f in item.files if f.endswith(".csv")]
        if len(graphs) != 1 or len(tables) > 1:
            raise InputError("an STG instance lists one .stg file and at most one optimum table (.csv)",
                             field="files")
        return stg.convert(traces / graphs[0], seed=item.seed, optima=traces / tables[0] if tables else None,
                           **params)
    if recipe.converter == "alibaba":
        from edgebench.instances.traces import alibaba

        return alibaba.convert(seed=item.seed, **params)
    from edgebench.instances.generators import generate

    return generate(recipe.family, recipe.preset, seed=item.seed, **params)


def make_instances(recipe: Recipe, file: str,
                   only: list[int] | None = None) -> list[tuple[Item, dict[str, Any], Instance]]:
    """Every instance of ``recipe`` (or those at the indices ``only``; nothing is written);
    InputError naming the recipe field."""
    from edgebench.instances.generators import presets

    if recipe.preset is not None and (recipe.family, recipe.preset) not in presets(recipe.family):
        known = ", ".join(sorted(p for f, p in presets(recipe.family) if f == recipe.family)) or "none"
        raise InputError(f"unknown preset {recipe.preset!r} for family {recipe.family!r} (known: {known})",
                         file=file, field="preset")
    traces = _trace_dir(recipe, file) if recipe.source is not None else None
    out = []
    for i, item in enumerate(recipe.items()):
        if only is not None and i not in only:
            continue
        params = {**recipe.params, **item.params}
        where = "params" if not recipe.instances else f"instances[{i}].params"
        try:
            inst = _make(recipe, item, params, traces)
        except InputError as err:
            if err.file is not None and err.file != file:
                raise
            key = (err.field or "").removeprefix("params.")
            raise InputError(err.reason, file=file, field=f"{where}.{key}" if key else where) from None
        except (TypeError, ValueError) as exc:
            raise InputError(f"bad parameter value: {exc}", file=file, field=where) from None
        if inst.family != recipe.family:
            raise InputError(f"makes {inst.family} instances", file=file, field="family")
        out.append((item, params, inst))
    return out


def manifest_entry(fname: str, inst: Instance, seed: int, params: dict[str, Any],
                   old: dict[str, Any] | None = None) -> dict[str, Any]:
    h = content_hash(inst)
    prev = old if old and old.get("hash") == h else {}
    return {"file": fname, "id": inst.id, "hash": h, "seed": seed, "params": params,
            "best_known": prev.get("best_known", dict(EMPTY_BEST_KNOWN))}


def build_set(name: str | Path, out_dir: Path | None = None, only: list[int] | None = None) -> Path:
    """(Re)build a set from its recipe (a shipped set's name or a recipe file) into
    ``out_dir/<name>`` (default: the embedded data folder). Every instance is made before
    anything is written; best-known fields already recorded for unchanged instances are kept.
    ``only`` (indices into the recipe's instances) builds part of a set, for quick checks."""
    path = recipe_path(name)
    recipe = read_recipe(path)
    made = make_instances(recipe, str(path), only)
    folder = (out_dir or DATA_DIR) / recipe.name
    old, cert = {}, None
    if (folder / "manifest.json").exists():
        prev = read_json(folder / "manifest.json")
        old = {e["id"]: e for e in prev.get("instances", [])}
        cert = prev.get("certification")
    ids = [inst.id for _, _, inst in made]
    if len(set(ids)) != len(ids):
        raise InputError("two instances get the same id", file=str(path), field="instances")
    suffix = ".json.gz" if recipe.gzip else ".json"
    entries = []
    for item, params, inst in made:
        fname = f"{inst.id}{suffix}"
        write_json(folder / fname, inst)
        entries.append(manifest_entry(fname, inst, item.seed, params, old.get(inst.id)))
        if item.files:
            entries[-1]["files"] = item.files
        published = (inst.meta.get("stg") or {}).get("published")
        if published:  # a published optimum / [lower, upper], kept beside our certificate (docs/bks.md)
            entries[-1]["reference"] = published
    manifest: dict[str, Any] = {
        "manifest_version": MANIFEST_VERSION, "name": recipe.name, "family": recipe.family,
        "description": recipe.description,
        "generator": ({"family": recipe.family, "preset": recipe.preset} if recipe.preset is not None
                      else {"family": recipe.family, "converter": recipe.converter}),
        "recipe": {"file": f"{recipe.name}.toml", "version": recipe.version},
    }
    if recipe.source is not None:
        manifest["source"] = recipe.source.model_dump()
    manifest["instances"] = entries
    if cert is not None:
        manifest["certification"] = cert
    write_text_atomic(folder / "manifest.json", json.dumps(manifest, indent=1) + "\n")
    return folder


def check_generated_folder(folder: Path, family: str) -> None:
    """A folder holds one set of one family: ``generate`` into a folder whose manifest is of
    another family is refused before anything is written (issue 28: the later family's
    manifest replaced the earlier one, leaving its files unlisted)."""
    path = folder / "manifest.json"
    if path.is_file():
        old = read_manifest_file(path)
        if old.get("family") not in (None, family):
            raise InputError(f"the folder holds a {ascii(old.get('family'))[:40]} set; generate {family} instances "
                             "into another folder", file=str(path), field="family")


def write_generated_manifest(folder: Path, family: str, preset: str, params: dict[str, Any],
                             written: list[tuple[Path, Instance, int]]) -> Path:
    """``manifest.json`` for a folder written by ``edgebench generate`` (so that ``run``,
    ``report`` and ``bestknown`` read it as a set named after the folder): the generator, its
    parameter overrides, and per file its id, seed and content hash. Entries of an earlier
    manifest of the same family are kept for files that still exist and were not rewritten."""
    from edgebench import __version__

    path = folder / "manifest.json"
    names = {p.name for p, _, _ in written}
    kept = []
    if path.is_file():
        try:
            old = read_manifest_file(path)
            if old.get("family") == family:  # one family per set: another family starts a new manifest
                kept = [e for e in old.get("instances", [])
                        if e.get("file") not in names and (folder / str(e.get("file"))).is_file()]
        except (InputError, AttributeError):
            kept = []
    entries = kept + [manifest_entry(p.name, inst, seed, dict(params)) for p, inst, seed in written]
    manifest = {"manifest_version": MANIFEST_VERSION, "name": folder.name, "family": family,
                "description": f"edgebench generate {family} --preset {preset}"
                               + "".join(f" --set {k}={json.dumps(v)}" for k, v in params.items()),
                "generator": {"family": family, "preset": preset},
                "edgebench_version": __version__, "instances": entries}
    write_text_atomic(path, json.dumps(manifest, indent=1) + "\n")
    return path


def list_sets(data_dir: Path | None = None) -> list[str]:
    d = data_dir or DATA_DIR
    return sorted(p.parent.name for p in d.glob("*/manifest.json"))


def read_manifest(name: str, data_dir: Path | None = None) -> dict[str, Any]:
    path = (data_dir or DATA_DIR) / name / "manifest.json"
    if not path.exists():
        raise InputError(f"unknown instance set {name!r} (known: {', '.join(list_sets(data_dir))})", field="set")
    return read_manifest_file(path)


def set_files(name: str, data_dir: Path | None = None) -> list[Path]:
    """The instance files of a set, in manifest order (the order of :func:`load_set`)."""
    folder = (data_dir or DATA_DIR) / name
    return [folder / e["file"] for e in read_manifest(name, data_dir)["instances"]]


def best_known_solution(instance_hash: str, data_dir: Path | None = None) -> Path | None:
    """The shipped best-known solution file of the instance with this content hash (the
    ``best_known.solution`` of the manifest entry listing it), or None when no set ships one."""
    root = data_dir or DATA_DIR
    for name in list_sets(root):
        if instance_hash not in (root / name / "manifest.json").read_text(encoding="utf-8"):
            continue  # the full check (every path of the set resolved) only for the set that lists it
        for e in read_manifest(name, root)["instances"]:
            sol = (e.get("best_known") or {}).get("solution") if e.get("hash") == instance_hash else None
            if sol:
                return confined(root / name, sol, file=str(root / name / "manifest.json"),
                                field=f"instances[{e['id']}].best_known.solution")
    return None


def load_set(name: str, data_dir: Path | None = None) -> list[Instance]:
    """Load every instance of a set, checking each file against its manifest hash."""
    folder = (data_dir or DATA_DIR) / name
    out = []
    for e in read_manifest(name, data_dir)["instances"]:
        inst = load_instance(folder / e["file"])
        if content_hash(inst) != e["hash"]:
            raise InputError(f"content hash {content_hash(inst)[:12]}... differs from the manifest's "
                             f"{e['hash'][:12]}...", file=str(folder / e["file"]), field="hash")
        out.append(inst)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) >= 1 and argv[0] == "build":
        for name in argv[1:] or list(RECIPES):
            print(build_set(name))
        return 0
    for name in list_sets():
        print(name)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
