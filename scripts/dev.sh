#!/usr/bin/env bash
# edgebench developer entry point. Every sub-command first does all set-up, idempotently:
#   bash scripts/dev.sh setup   create .venv, install torch 2.13.0 (CPU) first, then edgebench[test]
#   bash scripts/dev.sh run     set-up, then the main job: `edgebench run`, the default benchmark suite
#   bash scripts/dev.sh test    set-up, then the test suite (2 worker processes)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
TORCH_VERSION="2.13.0"

pick_python() {
    for c in python3.11 python3 python; do
        if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
            echo "$c"; return 0
        fi
    done
    echo "edgebench: Python >= 3.11 is required" >&2; return 1
}

setup() {
    if [ ! -x "$VENV/bin/python" ]; then
        echo "[setup] creating $VENV" >&2
        "$(pick_python)" -m venv "$VENV"
    fi
    local py="$VENV/bin/python"
    # The stamp records what was installed; set-up is skipped when nothing changed.
    local want
    want="$(cat pyproject.toml scripts/dev.sh | "$py" -c 'import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')"
    if [ -f "$VENV/.edgebench-stamp" ] && [ "$(cat "$VENV/.edgebench-stamp")" = "$want" ] \
        && "$py" -c 'import edgebench' >/dev/null 2>&1; then
        return 0
    fi
    echo "[setup] installing dependencies into $VENV (first run takes a few minutes)" >&2
    "$py" -m pip install -qq --upgrade pip setuptools wheel
    # torch first, pinned: the CPU build ships as a local file; an unpinned torch pulls CUDA wheels.
    if ! "$py" -c "import torch, sys; sys.exit(0 if torch.__version__.split('+')[0] == '$TORCH_VERSION' else 1)" >/dev/null 2>&1; then
        "$py" -m pip install -qq "torch==$TORCH_VERSION"
    fi
    "$py" -m pip install -qq -e ".[test]"
    # OR-Tools and highspy both carry HiGHS: check they import side by side.
    "$py" -c 'import ortools.linear_solver.pywraplp, highspy, pulp, pyomo.environ, torch; print("[setup] imports ok: torch", torch.__version__)' >&2
    # compile the numba kernels into the per-user cache now, so no solver pays it inside its time limit
    "$VENV/bin/edgebench" warm >&2
    echo "$want" > "$VENV/.edgebench-stamp"
}

cmd="${1:-test}"
shift || true
case "$cmd" in
    setup) setup ;;
    run) setup; exec "$VENV/bin/edgebench" run "$@" ;;
    # the suite on both cores (pytest-xdist); a file's tests stay on one worker (module fixtures
    # are built once); EDGEBENCH_TEST_WORKERS=0 runs it in one process
    test) setup; exec "$VENV/bin/python" -m pytest -q -n "${EDGEBENCH_TEST_WORKERS:-2}" --dist loadfile "$@" ;;
    *) echo "usage: bash scripts/dev.sh {setup|run|test} [args...]" >&2; exit 2 ;;
esac
