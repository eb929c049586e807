#!/usr/bin/env bash
# The control of tapfinger-h6m-lfl-v384 (issue 42, session 21): the same seed-7 run on the current code with
# tapfinger-h6m-lfl's own selection (16 validation seeds of 96 tasks every 10 updates), to separate the gain
# of the 384-task selection from that of the re-run's trajectory. State in runs/long/tapfinger-h6m-lfl-v96.
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
mkdir -p runs/init
[ -f runs/init/tapfinger-mappo-hetero-6-multi-6a4b40fb.pt ] || git show 1e12086^:learned/checkpoints/tapfinger-mappo-hetero-6-multi.pt > runs/init/tapfinger-mappo-hetero-6-multi-6a4b40fb.pt
exec bash learned/training/lfl.sh tapfinger-h6m-lfl-v96 \
  --preset hetero-6 --variant multi --steps 216576 --seed 7 --set num_tasks=96 --set switching_overhead=0 \
  --set max_eligible=6 --set noise=0 --hidden 48 --layers 2 --encoder graph --eval-every 10 --val-episodes 16 \
  --init runs/init/tapfinger-mappo-hetero-6-multi-6a4b40fb.pt "$@"
