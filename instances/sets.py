"""Embedded default instance sets, versioned with the package (``<family>-<preset>-v<N>``).

Each set is a folder under ``instances/data/`` with a ``manifest.json`` and the instance
files. The manifest records how every file was made (generator family, preset, parameters,
seed), its file name, id and content hash, and JobShopLib-style best-known fields
(objective, bound, provenance) that later work fills in. Because generators are seeded and
byte-stable, ``build_set`` regenerates a set exactly; a test checks the shipped files against
their recipes, so a generator change that alters an embedded set cannot pass unnoticed.

To add or bump a set: add a recipe to ``RECIPES`` (a new name for a new version) and run
``python -m edgebench.instances.sets build NAME``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebench.errors import InputError
from edgebench.instances.io import content_hash, load_instance, read_json, write_json, write_text_atomic
from edgebench.instances.model import Instance

DATA_DIR = Path(__file__).resolve().parent / "data"
MANIFEST_VERSION = 1


@dataclass(frozen=True)
class Recipe:
    name: str
    family: str
    preset: str
    description: str
    seeds: tuple[int, ...]
    params: dict[str, Any] = field(default_factory=dict)
    #: per-seed parameter overrides (e.g. a size sweep)
    per_seed: dict[int, dict[str, Any]] = field(default_factory=dict)


RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in [
        Recipe("placement-synthetic-3-v1", "placement", "synthetic-3",
               "TapFinger synthetic-3 setting (3 clusters of 16 CPU / 16 GPU, Poisson rate 2), cut to 12 tasks so "
               "that exact models close; single-task variant", seeds=(0, 1, 2, 3),
               params={"num_tasks": 12}),
        Recipe("placement-hetero-6-v1", "placement", "hetero-6",
               "TapFinger heterogeneous 6-cluster setting ((4,4)..(32,32), rate 6), 24 tasks, multi-task variant",
               seeds=(0, 1), params={"num_tasks": 24, "variant": "multi"}),
        Recipe("mapping-thesis-v1", "mapping", "thesis",
               "CES thesis simulation setting (10 physical nodes), one job per instance, 3..8 task nodes, random "
               "topology", seeds=(0, 1, 2, 3, 4, 5),
               per_seed={s: {"task_nodes": 3 + s} for s in range(6)}),
        Recipe("mapping-topologies-v1", "mapping", "thesis",
               "CES real-deployment topologies (ring all-reduce, star, E-tree, gossip) with 5 task nodes",
               seeds=(0, 1, 2, 3),
               per_seed={0: {"task_nodes": 5, "topology": "ring"}, 1: {"task_nodes": 5, "topology": "star"},
                         2: {"task_nodes": 5, "topology": "tree"}, 3: {"task_nodes": 5, "topology": "gossip"}}),
        Recipe("offloading-heft-random-v1", "offloading", "heft-random",
               "Topcuoglu et al. random DAGs, 10 tasks on 3 heterogeneous processors (classic form)",
               seeds=(0, 1, 2, 3), params={"v": 10, "servers": 3}),
        Recipe("offloading-patent-example-v1", "offloading", "patent-example",
               "The patent's worked example (6 tasks, 3 edge servers; published completion 2.8 s)", seeds=(0,)),
    ]
}


def _recipe_params(r: Recipe, seed: int) -> dict[str, Any]:
    return {**r.params, **r.per_seed.get(seed, {})}


def build_set(name: str, out_dir: Path | None = None) -> Path:
    """(Re)generate set ``name`` from its recipe; keeps best-known fields already recorded."""
    from edgebench.instances.generators import generate

    r = RECIPES[name]
    folder = (out_dir or DATA_DIR) / name
    old = {}
    if (folder / "manifest.json").exists():
        old = {e["id"]: e for e in read_json(folder / "manifest.json").get("instances", [])}
    entries = []
    for seed in r.seeds:
        params = _recipe_params(r, seed)
        inst = generate(r.family, r.preset, seed=seed, **params)
        fname = f"{inst.id}.json"
        write_json(folder / fname, inst)
        prev = old.get(inst.id, {})
        entries.append({
            "file": fname, "id": inst.id, "hash": content_hash(inst), "seed": seed, "params": params,
            "best_known": prev.get("best_known", {"objective": None, "bound": None, "optimal": False,
                                                 "solver": None, "run": None, "date": None}),
        })
    manifest = {
        "manifest_version": MANIFEST_VERSION, "name": name, "family": r.family, "description": r.description,
        "generator": {"family": r.family, "preset": r.preset}, "instances": entries,
    }
    write_text_atomic(folder / "manifest.json", json.dumps(manifest, indent=1) + "\n")
    return folder


def list_sets(data_dir: Path | None = None) -> list[str]:
    d = data_dir or DATA_DIR
    return sorted(p.parent.name for p in d.glob("*/manifest.json"))


def read_manifest(name: str, data_dir: Path | None = None) -> dict[str, Any]:
    path = (data_dir or DATA_DIR) / name / "manifest.json"
    if not path.exists():
        raise InputError(f"unknown instance set {name!r} (known: {', '.join(list_sets(data_dir))})", field="set")
    return read_json(path)


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
