#!/usr/bin/env bash
# tapfinger-h6s-lfl's command (the like-for-like hetero-6 single MAPPO fine-tune: seed 37, the same start
# file, 96-task training episodes, lr 3e-5) with the weights selected at the held-out scale: 8 validation
# seeds of 384 tasks every 20 updates instead of 16 seeds of 96 tasks every 10 (the same recipe with
# another selection; not tapfinger-h6s-lfl's trajectory: the trainer's code changed since that run). 216,576 env steps.
# Issue 42, session 21. State in runs/long/tapfinger-h6s-lfl-v384.
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
mkdir -p runs/init
[ -f runs/init/tapfinger-mappo-hetero-6-single-f5276d21.pt ] || git show 2fae1b7^:learned/checkpoints/tapfinger-mappo-hetero-6-single.pt > runs/init/tapfinger-mappo-hetero-6-single-f5276d21.pt
exec bash learned/training/lfl.sh tapfinger-h6s-lfl-v384 \
  --preset hetero-6 --variant single --steps 216576 --seed 37 --set num_tasks=96 --set switching_overhead=0 \
  --set max_eligible=6 --set noise=0 --hidden 48 --layers 2 --encoder graph --eval-every 20 \
  --val-episodes 8 --val-set num_tasks=384 --init runs/init/tapfinger-mappo-hetero-6-single-f5276d21.pt "$@"
