#!/usr/bin/env bash
# The no-graph twin of tapfinger-h6m-lfl-v384 (issue 42, the ablation target, session 21): the no-graph
# ablation's like-for-like hetero-6 multi fine-tune (tapfinger-h6m-ng-lfl: seed 7, its start file, 96-task
# training episodes, lr 3e-5, 216,576 env steps) with the weights selected as the full model's now are:
# 8 validation seeds of 384 tasks every 20 updates. Identical to tapfinger-h6m-lfl-v384 but for
# --encoder mlp and the start file. State in runs/long/tapfinger-h6m-ng-lfl-v384.
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
mkdir -p runs/init
[ -f runs/init/tapfinger-nograph-mappo-hetero-6-multi-597ca854.pt ] || git show 5134f64^:learned/checkpoints/tapfinger-nograph-mappo-hetero-6-multi.pt > runs/init/tapfinger-nograph-mappo-hetero-6-multi-597ca854.pt
exec bash learned/training/lfl.sh tapfinger-h6m-ng-lfl-v384 \
  --preset hetero-6 --variant multi --steps 216576 --seed 7 --set num_tasks=96 --set switching_overhead=0 \
  --set max_eligible=6 --set noise=0 --hidden 48 --layers 2 --encoder mlp --eval-every 20 --val-episodes 8 \
  --val-set num_tasks=384 --init runs/init/tapfinger-nograph-mappo-hetero-6-multi-597ca854.pt "$@"
