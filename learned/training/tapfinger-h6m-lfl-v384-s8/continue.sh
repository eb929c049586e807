#!/usr/bin/env bash
# A second training seed (8) of tapfinger-h6m-lfl-v384 (issue 42, session 21: each model ships the training seed
# whose selected weights are best on validation, as in session 20). Otherwise tapfinger-h6m-lfl-v384's command:
# tapfinger-h6m-lfl's command (the like-for-like hetero-6 multi MAPPO fine-tune of the full model: seed 7,
# the same start file, 96-task training episodes, lr 3e-5) with the weights selected at the held-out
# scale: 8 validation seeds of 384 tasks (--val-set num_tasks=384) every 20 updates, instead of 16 seeds
# of 96 tasks every 10 (issue 42, session 21: the margin target is measured on 384-task episodes). Not
# the same trajectory as tapfinger-h6m-lfl (its metrics differ from update 1: the trainer's code changed
# since that run), so this is the same recipe with another selection. 216,576 env steps, the budget of the
# ablation twins. State in runs/long/tapfinger-h6m-lfl-v384-s8.
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
mkdir -p runs/init
[ -f runs/init/tapfinger-mappo-hetero-6-multi-6a4b40fb.pt ] || git show 1e12086^:learned/checkpoints/tapfinger-mappo-hetero-6-multi.pt > runs/init/tapfinger-mappo-hetero-6-multi-6a4b40fb.pt
exec bash learned/training/lfl.sh tapfinger-h6m-lfl-v384-s8 \
  --preset hetero-6 --variant multi --steps 216576 --seed 8 --set num_tasks=96 --set switching_overhead=0 \
  --set max_eligible=6 --set noise=0 --hidden 48 --layers 2 --encoder graph --eval-every 20 \
  --val-episodes 8 --val-set num_tasks=384 --init runs/init/tapfinger-mappo-hetero-6-multi-6a4b40fb.pt "$@"
