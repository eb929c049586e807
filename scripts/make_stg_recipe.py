"""Write instances/recipes/offloading-stg[-100]-v2.toml from the STG files in the traces folder.

    .venv/bin/python scripts/make_stg_recipe.py 50    # -> offloading-stg-v2.toml
    .venv/bin/python scripts/make_stg_recipe.py 100 4 # -> offloading-stg-100-v2.toml

Every graph of the size (or every k-th: rand0000, rand000k, ...) on 2, 4, 8 and 16 servers, each
with its optimum table; the sha256 of every source file used goes into [source]
(docs/generators.md, "The STG sets").
"""

from __future__ import annotations

import sys
from pathlib import Path

from edgebench.instances.sets import RECIPES_DIR
from edgebench.instances.traces import default_traces_dir, file_sha256
from edgebench.instances.traces.stg import TERMS

SERVERS = (2, 4, 8, 16)


def recipe_text(size: int, traces: Path, every: int = 1) -> str:
    name = "offloading-stg-v2" if size == 50 else f"offloading-stg-{size}-v2"
    graphs = sorted((traces / "stg" / str(size)).glob("rand*.stg"))[::every]
    which = (f"{len(graphs)} of the 180 random {size}-task graphs (every {every}th)" if every > 1
             else f"{len(graphs)} random {size}-task graphs")
    tables = [traces / "stg" / "optimal" / f"Case{size}_{m}_OPT.csv" for m in SERVERS]
    rel = lambda p: p.relative_to(traces).as_posix()  # noqa: E731
    lines = [
        "# edgebench instance-set recipe (format: docs/generators.md, \"Recipes\"); written by",
        f"# scripts/make_stg_recipe.py {size}" + (f" {every}" if every > 1 else ""),
        f'name = "{name}"',
        "version = 1",
        'family = "offloading"',
        'converter = "stg"',
        f'description = "The Standard Task Graph Set\'s {which} (Tobita and Kasahara 2002) on 2, 4, 8 and 16 identical servers: P|prec|Cmax as offloading (unit servers, one image, no cloud, '
        f'no transfers); the published optimum or [lower, upper] is kept per instance as a reference"',
        "gzip = true",
        "",
        "instances = [",
    ]
    for g in graphs:
        for m, t in zip(SERVERS, tables):
            lines.append(f'  {{ seed = 0, params = {{ servers = {m} }}, files = ["{rel(g)}", "{rel(t)}"] }},')
    lines += [
        "]",
        "",
        "[source]",
        f'terms = "{TERMS}"',
        'reference = "STG archive, Kasahara Laboratory, Waseda University (public CC0 mirror): '
        'random task graphs and optimal schedule length tables"',
        "files = [",
    ]
    for p in graphs + tables:
        lines.append(f'  {{ name = "{rel(p)}", sha256 = "{file_sha256(p)}" }},')
    lines.append("]")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    size = int(argv[0]) if argv else 50
    every = int(argv[1]) if len(argv) > 1 else 1
    traces = default_traces_dir()
    if traces is None:
        print("no traces folder", file=sys.stderr)
        return 2
    name = "offloading-stg-v2" if size == 50 else f"offloading-stg-{size}-v2"
    out = RECIPES_DIR / f"{name}.toml"
    out.write_text(recipe_text(size, traces, every))
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
