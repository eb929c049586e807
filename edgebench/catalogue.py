"""Writes and checks the solver catalogue (:mod:`edgebench.solver_catalogue`).

The catalogue is what ``edgebench solvers`` and the registry list without importing a solver
module: per built-in solver its name, module, kind, families, documented parameters, choices,
bounds, parameter types (as text), default time limit, whether it proves optimality, what its bound bounds, its
description, whether it has a parameter check / an ``applies`` hook, and how to read its
checkpoints' provenance without importing it. It is generated from the ``register(...)``
calls themselves::

    python -m edgebench.catalogue          # rewrite edgebench/solver_catalogue.py
    python -m edgebench.catalogue --check  # exit 1 when it differs from the registrations

``tests/test_startup.py`` runs the check, so the catalogue cannot drift from the code.
"""

from __future__ import annotations

import functools
import pprint
import sys
from pathlib import Path
from typing import Any, Sequence

from edgebench import registry

PATH = Path(__file__).resolve().parent / "solver_catalogue.py"
HEADER = '''"""The built-in solvers, as their modules register them (generated: do not edit).

Written by ``python -m edgebench.catalogue`` from the ``register(...)`` calls of
edgebench.solvers / formulations / learned; tests/test_startup.py checks that it is current.
The registry lists solvers from here and imports a solver's module only when it is needed.
"""

'''


def _provenance(hook: Any) -> Any:
    """None, ["MODULE:FUNCTION", [args]] (a partial of a module-level function with plain
    arguments: callable without importing the solver) or "module" (the solver's own)."""
    if hook is None:
        return None
    if (isinstance(hook, functools.partial) and not hook.keywords
            and all(isinstance(a, (str, int, float, bool)) for a in hook.args)
            and getattr(hook.func, "__qualname__", "").isidentifier()):
        return [f"{hook.func.__module__}:{hook.func.__qualname__}", list(hook.args)]
    return "module"


def _type_name(ann: Any) -> str:
    return ann.__name__ if isinstance(ann, type) else str(ann).replace("typing.", "")


def record(info: registry.SolverInfo) -> dict[str, Any]:
    """The catalogue's record of one registered solver."""
    return {"name": info.name, "module": info.fn.__module__, "kind": info.kind,
            "families": list(info.families), "description": info.description, "params": dict(info.params),
            "types": {k: _type_name(v) for k, v in info.types.items()},
            "choices": {k: list(v) for k, v in info.choices.items()},
            "bounds": {k: list(v) for k, v in info.bounds.items()},
            "default_time_limit": info.default_time_limit, "proves": info.proves,
            "open_params": info.open_params, "check": info.check is not None,
            "applies": info.applies is not None, "provenance": _provenance(info.provenance),
            "bound": info.bound}


def records() -> list[dict[str, Any]]:
    """Records of every built-in solver, from the modules' registrations (imports them all)."""
    errors = registry.load_all()
    if errors:
        raise RuntimeError("solver modules failed to import: "
                           + "; ".join(f"{m}: {e}" for m, e in sorted(errors.items())))
    return [record(info) for _, info in sorted(registry._BUILTIN.items())]


def render(recs: list[dict[str, Any]]) -> str:
    return HEADER + "SOLVERS = " + pprint.pformat(recs, width=110, sort_dicts=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    text = render(records())
    if argv == ["--check"]:
        if PATH.read_text() != text:
            print(f"{PATH} is stale: run python -m edgebench.catalogue", file=sys.stderr)
            return 1
        print(f"{PATH} is current")
        return 0
    if argv:
        print("usage: python -m edgebench.catalogue [--check]", file=sys.stderr)
        return 2
    tmp = PATH.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(PATH)
    print(PATH)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
