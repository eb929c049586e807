#!/usr/bin/env bash
# Start or resume a long TapFinger training run: resume.sh NAME TRAIN-OPTIONS...
# State in runs/long/NAME (`--resume` once its last.pt exists), one thread, nice 15.
# Each run's continue.sh calls this with the run's own options.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
NAME=$1
shift
OUT=runs/long/$NAME
RES=()
[ -f "$OUT/last.pt" ] && RES=(--resume)
exec nice -n 15 .venv/bin/edgebench train tapfinger --out "$OUT" --threads 1 "$@" "${RES[@]}"
