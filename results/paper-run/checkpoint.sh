#!/usr/bin/env bash
# Write the paper run's progress into the repository (docs/results.md "Running the paper suite across
# sessions"): results/paper-run/results.sqlite, a compact copy of runs/paper/results.sqlite (every run;
# no claims; one file; replaced, never accumulated), and progress.json beside it. Safe while
# continue.sh runs. With --commit, also commits those two files (and nothing else).
# EDGEBENCH_PAPER_DB / EDGEBENCH_PAPER_SNAPSHOT override the two paths.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
DB=${EDGEBENCH_PAPER_DB:-runs/paper/results.sqlite}
SNAP=${EDGEBENCH_PAPER_SNAPSHOT:-results/paper-run/results.sqlite}
OUT=$(dirname "$SNAP")
LINE=$(nice -n 15 .venv/bin/edgebench results snapshot --db "$DB" -o "$SNAP")
echo "$LINE"
if [ "${1:-}" = "--commit" ]; then
  git add "$SNAP" "$OUT/progress.json"
  git commit -q -m "results/paper-run: paper suite store snapshot, ${LINE#*: }" -- "$SNAP" "$OUT/progress.json"
  git log -1 --oneline
fi
