#!/usr/bin/env bash
# tapfinger-h6s-lfl's command (the like-for-like hetero-6 single MAPPO fine-tune: seed 37, the same start
# file, 96-task training episodes, lr 3e-5) with the weights selected at the held-out scale: 8 validation
# seeds of 384 tasks every 20 updates instead of 16 seeds of 96 tasks every 10 (the same recipe with
# another selection; not tapfinger-h6s-lfl's trajectory: the trainer's code changed since that run). 216,576 env steps.
# Issue 42, session 21. State in runs/long/tapfinger-h6s-lfl-v384.
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
mkdir -p runs/init
[ -f runs/init/tapfinger-mappo-hetero-6-single-f5276d21.pt ] || git show 2fae1b7^:learned/checkpoints/tapfinger-mappo-hetero-6-single.pt > runs/init/tapfinger-mappo-hetero-6-single-f5276d21.pt
exec bash learned/training/resume.sh tapfinger-h6s-lfl-v384 \
  --preset hetero-6 --variant single --steps 216576 --seed 37 \
  --set num_tasks=96 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --num-envs 16 --rollout-steps 32 --lr 3e-05 --hidden 48 --layers 2 --heads 4 --conv fused --void-rule system \
  --encoder graph --pointer pointer --eval-every 20 --eval-episodes 8 --ent-coef 0.0 \
  --val-episodes 8 --val-set num_tasks=384 \
  --init runs/init/tapfinger-mappo-hetero-6-single-f5276d21.pt --epochs 2 --minibatch 128 --target-kl 0.01 \
  --critic-warmup 10 --critic-lr 0.001 --critic-detach --team-reward "$@"
