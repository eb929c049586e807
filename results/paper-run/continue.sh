#!/usr/bin/env bash
# Start or continue the paper suite (`edgebench run paper`, docs/results.md "Running the paper suite
# across sessions") into runs/paper/results.sqlite: one worker, one thread, nice 15.
#
#   nohup results/paper-run/continue.sh > runs/paper-run.log 2>&1 &     # kill it any time; run again to resume
#
# First, the snapshot committed here (results/paper-run/results.sqlite, written by checkpoint.sh)
# joins the local store: copied when there is none (a fresh machine), merged in (edgebench merge,
# every run re-scored by the referee) when it holds runs the local store lacks. `edgebench run`
# then runs only the planned runs neither holds, and (--rerun stale) runs again the learned rows
# whose checkpoint file changed since they ran. Extra arguments go to `edgebench run` (e.g.
# --only kind=learned). EDGEBENCH_PAPER_DB, EDGEBENCH_PAPER_SNAPSHOT and EDGEBENCH_PAPER_SUITE override
# the store, the snapshot and the suite (the tests run these scripts on a toy suite).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
DB=${EDGEBENCH_PAPER_DB:-runs/paper/results.sqlite}
SNAP=${EDGEBENCH_PAPER_SNAPSHOT:-results/paper-run/results.sqlite}
SUITE=${EDGEBENCH_PAPER_SUITE:-paper}
PY=.venv/bin/python
EB=.venv/bin/edgebench
if [ -f "$SNAP" ]; then
  if [ ! -f "$DB" ]; then
    mkdir -p "$(dirname "$DB")"
    cp "$SNAP" "$DB.tmp.$$" && mv "$DB.tmp.$$" "$DB"
    echo "continue.sh: started $DB from the snapshot $SNAP"
  else
    NEW=$("$PY" - "$SNAP" "$DB" <<'PYEOF'
import sqlite3, sys
from pathlib import Path
keys = lambda p: {r[0] for r in sqlite3.connect(Path(p).resolve().as_uri() + "?mode=ro", uri=True).execute("SELECT key FROM runs")}
print(len(keys(sys.argv[1]) - keys(sys.argv[2])))
PYEOF
)
    if [ "$NEW" != 0 ]; then
      echo "continue.sh: the snapshot holds $NEW runs that $DB lacks: merging it in"
      nice -n 15 "$EB" merge -o "$DB" "$SNAP"
    fi
  fi
fi
exec nice -n 15 "$EB" run "$SUITE" --workers 1 --db "$DB" --no-report --rerun stale "$@"
