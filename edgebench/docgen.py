"""Reference pages of the documentation site, generated from the code (never copied by hand).

* :func:`cli_reference` walks the ``argparse`` parser of ``edgebench`` (:func:`edgebench.cli.build_parser`):
  one section per command and sub-command with its usage, description, arguments and examples.
* :func:`solver_catalogue` reads the registry: every solver's kind, families, description, and
  per parameter its documentation, type, default, choices and bounds, plus the default time limit
  and whether its ``optimal`` may count as a proof.
* :func:`schemas_page` prints the JSON Schemas of the instance and solution formats.

``scripts/mkdocs_hooks.py`` adds them to the site as ``reference/cli.md``,
``reference/solvers.md`` and ``reference/schemas.md``; ``python -m edgebench.docgen DIR``
writes the same three files to DIR.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from pathlib import Path
from typing import Any

#: generated page (relative to the docs folder) -> function that returns its Markdown
PAGES = {
    "reference/cli.md": "cli_reference",
    "reference/solvers.md": "solver_catalogue",
    "reference/schemas.md": "schemas_page",
}


def _esc(text: Any) -> str:
    """Text safe inside a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")


def _subparsers(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:  # argparse keeps sub-parsers in its private action list
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices.items())
    return []


def _arg_rows(parser: argparse.ArgumentParser) -> list[list[str]]:
    rows = []
    for a in parser._actions:
        if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if a.option_strings:
            name = ", ".join(a.option_strings)
            if a.nargs != 0:
                name += f" {a.metavar or a.dest.upper()}"
        else:
            name = str(a.metavar or a.dest)
        default = "" if a.default in (None, False, argparse.SUPPRESS) or not a.option_strings else f"`{a.default}`"
        choices = ", ".join(f"`{c}`" for c in a.choices) if a.choices else ""
        rows.append([f"`{_esc(name)}`", _esc(a.help or ""), choices, default])
    return rows


def _command_section(path: str, parser: argparse.ArgumentParser, depth: int) -> list[str]:
    out = [f"{'#' * depth} `{path}`", ""]
    if parser.description:
        out += [parser.description.strip(), ""]
    usage = parser.format_usage().strip()
    out += ["```text", usage.removeprefix("usage: "), "```", ""]
    rows = _arg_rows(parser)
    if rows:
        out += ["| argument | meaning | choices | default |", "| --- | --- | --- | --- |"]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        out.append("")
    if parser.epilog:
        out += ["```text", parser.epilog.strip(), "```", ""]
    for name, sub in _subparsers(parser):
        out += _command_section(f"{path} {name}", sub, min(depth + 1, 4))
    return out


def cli_reference(parser: argparse.ArgumentParser | None = None) -> str:
    """Markdown reference of every ``edgebench`` command, from the parser itself."""
    if parser is None:
        from edgebench.cli import build_parser

        parser = build_parser()
    subs = _subparsers(parser)
    out = ["# Command-line reference", "",
           "Generated from the `argparse` parser of `edgebench` when the site is built "
           "(`edgebench/docgen.py`); `edgebench COMMAND --help` prints the same. Conventions "
           "(error lines, exit codes, atomic outputs): [cli.md](../cli.md).", "",
           "| command | what it does |", "| --- | --- |"]
    helps = {}
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in a._choices_actions}
    out += [f"| [`{n}`](#edgebench-{n}) | {_esc(helps.get(n, ''))} |" for n, _ in subs]
    out.append("")
    for name, sub in subs:
        out += _command_section(f"edgebench {name}", sub, 2)
    return "\n".join(out) + "\n"


def _param_table(info: Any) -> list[str]:
    from edgebench.registry import _param_fields

    try:
        fields = _param_fields(info)
    except Exception as exc:  # a plugin's odd signature: say so rather than hide the solver
        return [f"*parameters could not be read: {_esc(exc)}*", ""]
    sig = inspect.signature(info.fn).parameters
    names = list(dict.fromkeys([*info.params, *fields]))
    if not names:
        return ["No parameters besides `time_limit` and `seed`.", ""]
    out = ["| parameter | meaning | default | choices / bounds |", "| --- | --- | --- | --- |"]
    for n in names:
        p = sig.get(n)
        # a **params solver documents its defaults in the parameter's line only
        default = (f"`{p.default!r}`" if p is not None and p.default is not inspect.Parameter.empty
                   else "see meaning")
        extra = []
        if n in info.choices:
            extra.append(", ".join(f"`{c!r}`" for c in info.choices[n]))
        if n in info.bounds:
            lo, hi = info.bounds[n]
            extra.append(f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]")
        out.append(f"| `{n}` | {_esc(info.params.get(n, ''))} | {_esc(default)} | {_esc('; '.join(extra))} |")
    return out + [""]


def solver_catalogue() -> str:
    """Markdown catalogue of every registered solver, from the registry."""
    from edgebench import registry

    infos = registry.solvers()
    out = ["# Solver catalogue", "",
           "Generated from the solver registry when the site is built (`edgebench solvers --json` "
           "prints the same data). Every solver is called as `solve(instance, *, time_limit, seed, "
           "**params)`; the parameters below go in `--param KEY=VALUE` (CLI) or a suite's `params` "
           "table and are checked against the declared types, choices and bounds before anything runs.",
           "", "| solver | kind | families | proves optimality | default time limit (s) |",
           "| --- | --- | --- | --- | --- |"]
    for s in infos:
        limit = s.default_time_limit if s.default_time_limit is not None else registry.DEFAULT_TIME_LIMITS.get(s.kind)
        tl = "none" if limit is None else f"{limit:g}"
        out.append(f"| [`{s.name}`](#{s.name}) | {s.kind} | {', '.join(s.families)} | "
                   f"{'yes' if s.proves else 'no'} | {tl} |")
    out.append("")
    for s in infos:
        out += [f"## {s.name}", "", f"**{s.kind}** · {', '.join(s.families)} · origin: {s.origin}", "",
                _esc(s.description), ""]
        out += _param_table(s)
    return "\n".join(out) + "\n"


def schemas_page() -> str:
    """Markdown page with the JSON Schemas of the instance and solution formats."""
    from edgebench.cli import schema

    out = ["# JSON Schemas", "",
           "Generated from the pydantic models when the site is built; `edgebench schema instance` and "
           "`edgebench schema solution` print the same. The fields and their meaning: "
           "[instance-format.md](../instance-format.md).", ""]
    for kind in ("instance", "solution"):
        out += [f"## {kind.capitalize()}", "", "```json", json.dumps(schema(kind), indent=2, sort_keys=True),
                "```", ""]
    return "\n".join(out)


def generate() -> dict[str, str]:
    """Generated page path -> Markdown text."""
    mod = sys.modules[__name__]
    return {path: getattr(mod, fn)() for path, fn in PAGES.items()}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m edgebench.docgen DIR", file=sys.stderr)
        return 2
    for rel, text in generate().items():
        path = Path(args[0]) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
