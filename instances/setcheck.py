"""``edgebench validate DIR`` (or ``DIR/manifest.json``): check a whole instance set.

A set folder holds ``manifest.json``, the instance files it lists and, where best known values
are recorded, their solutions (``solutions/``). :func:`check_set` reuses the checks the rest of
edgebench applies to sets, it adds no second checker:

1. the manifest: JSON object, ``manifest_version`` known, ``name`` / ``family`` / ``instances``
   present, file names and ids unique, and the shape and path checks ``run`` applies
   (:func:`edgebench.instances.manifest.check_manifest`: every ``file`` and best-known
   ``solution`` stays inside the set folder); a recipe named by ``recipe.file`` stays inside
   ``instances/recipes/``;
2. every instance: it loads (the instance model's validation), its family is the set's, its id
   is the entry's, its content hash is the entry's (as :func:`edgebench.instances.sets.load_set`);
3. every shipped best-known solution: re-scored by the referee, for the right instance, with
   exactly the recorded objective (:func:`edgebench.runner.bestknown.verify_entry`);
4. the recipe: a shipped set's recipe (``instances/recipes/NAME.toml``) parses and agrees on
   name, family, version and generator; a set made by a generator preset (``edgebench generate``
   or a preset recipe) is regenerated from each entry's seed and parameters and must give the
   same content hash (a converter set — daggen, Alibaba — needs its raw traces and is not rebuilt
   here: ``edgebench sets build NAME`` does that).

The first problem is an InputError naming the file and field (exit 2); a good set returns one
summary line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgebench.errors import InputError
from edgebench.instances.io import content_hash, load_instance, read_json
from edgebench.instances.manifest import check_manifest, confined
from edgebench.instances.sets import MANIFEST_VERSION, RECIPES_DIR, read_recipe
from edgebench.runner.bestknown import verify_entry

MANIFEST = "manifest.json"


def is_manifest(path: str | Path) -> bool:
    """Is ``path`` a set folder or a set manifest (rather than an instance or solution file)?"""
    p = Path(path)
    if p.is_dir():
        return True
    if p.name != MANIFEST or not p.is_file():
        return False
    data = read_json(p)
    return isinstance(data, dict) and "manifest_version" in data


def _manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    if not path.is_file():
        raise InputError("not an instance set folder (no manifest.json)", file=str(folder))
    data = read_json(path)
    f = str(path)
    if not isinstance(data, dict):
        raise InputError("a manifest is a JSON object", file=f)
    if data.get("manifest_version") != MANIFEST_VERSION:
        raise InputError(f"unsupported manifest_version {data.get('manifest_version')!r} (this edgebench reads "
                         f"{MANIFEST_VERSION})", file=f, field="manifest_version")
    for key, typ in (("name", str), ("family", str), ("instances", list)):
        if not isinstance(data.get(key), typ):
            raise InputError(f"missing or not a {typ.__name__}", file=f, field=key)
    check_manifest(data, path)  # the check `run` applies: every path stays inside the set folder (issue 44)
    for key in ("file", "id"):
        seen: set[str] = set()
        for i, e in enumerate(data["instances"]):
            if not isinstance(e, dict) or not isinstance(e.get(key), str) or not isinstance(e.get("hash"), str):
                raise InputError("an entry needs file, id and hash (strings)", file=f, field=f"instances[{i}]")
            if e[key] in seen:
                raise InputError(f"{key} {e[key]!r} listed twice", file=f, field=f"instances[{i}].{key}")
            seen.add(e[key])
    return data


def _check_recipe(folder: Path, m: dict[str, Any], instances: list) -> str:
    f = str(folder / MANIFEST)
    rec = m.get("recipe")
    if isinstance(rec, dict):
        path = confined(RECIPES_DIR, rec.get("file"), file=f, field="recipe.file")
        if not path.is_file():
            raise InputError(f"recipe {rec.get('file')!r} not found in {RECIPES_DIR}", file=f, field="recipe.file")
        recipe = read_recipe(path)
        for key, want in (("name", recipe.name), ("family", recipe.family)):
            if m[key] != want:
                raise InputError(f"{m[key]!r} but its recipe says {want!r}", file=f, field=key)
        if rec.get("version") != recipe.version:
            raise InputError(f"{rec.get('version')!r} but the recipe is version {recipe.version}", file=f,
                             field="recipe.version")
    gen = m.get("generator") or {}
    preset = gen.get("preset") if isinstance(gen, dict) else None
    if preset is None:
        return "recipe checked" if isinstance(rec, dict) else "no recipe or generator to check"
    from edgebench.instances.generators import generate

    for i, (e, inst) in enumerate(zip(m["instances"], instances)):
        try:
            again = generate(m["family"], preset, seed=e.get("seed", 0), **(e.get("params") or {}))
        except (InputError, TypeError, ValueError) as exc:
            reason = exc.reason if isinstance(exc, InputError) else str(exc)
            raise InputError(f"cannot regenerate from preset {preset!r}: {reason}", file=f,
                             field=f"instances[{i}].params") from None
        if content_hash(again) != e["hash"]:
            raise InputError(f"preset {preset!r} with seed {e.get('seed')} and these params gives hash "
                             f"{content_hash(again)[:12]}..., not the manifest's {e['hash'][:12]}...", file=f,
                             field=f"instances[{i}]")
    return f"{'recipe checked, ' if isinstance(rec, dict) else ''}{len(instances)} regenerated from preset {preset}"


def check_set(path: str | Path) -> str:
    """Check the set at ``path`` (its folder or its manifest); InputError at the first problem,
    else one summary line."""
    p = Path(path)
    folder = p.parent if p.name == MANIFEST and p.is_file() else p
    m = _manifest(folder)
    instances, solutions = [], 0
    for i, e in enumerate(m["instances"]):
        file = folder / e["file"]  # inside the folder: _manifest checked it
        if not file.is_file():
            raise InputError(f"instance file {e['file']!r} not found", file=str(folder / MANIFEST),
                             field=f"instances[{i}].file")
        inst = load_instance(file)
        for key, have in (("family", inst.family), ("id", inst.id), ("hash", content_hash(inst))):
            want = m["family"] if key == "family" else e[key]
            if have != want:
                raise InputError(f"the file has {key} {have!r}, the manifest says {want!r}", file=str(file),
                                 field=key)
        verify_entry(folder, e, inst)
        solutions += bool((e.get("best_known") or {}).get("solution"))
        instances.append(inst)
    recipe = _check_recipe(folder, m, instances)
    return (f"OK {folder} set {m['name']} {m['family']}: {len(instances)} instances (id, hash), "
            f"{solutions} shipped solutions re-scored, {recipe}")
