#!/usr/bin/env bash
# Issue 42, session 39: self-imitation (expert iteration) of the shipped hetero-6 single MAPPO file on its own
# sampling decode (--dagger-expert self-best: per round, 64 training instances of 384 tasks in the authors'
# setting, the best of the greedy and 16 sampled episodes at T = 0.25, its own decisions as labels; 2 epochs on
# the last two rounds' states at lr 1e-4, value head left alone; selected greedily on 16 validation seeds of 384
# tasks).
# The DAgger rounds are one stage: a stopped run starts the stage again (it is ~1 hour on one core).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
exec bash learned/training/resume.sh tapfinger-h6s-selfbest \
  --preset hetero-6 --variant single --steps 0 --seed 39 --set num_tasks=384 --set switching_overhead=0 \
  --set max_eligible=6 --set noise=0 --hidden 48 --layers 2 --heads 4 --conv fused --void-rule system \
  --encoder graph --pointer pointer --init learned/checkpoints/tapfinger-mappo-hetero-6-single.pt \
  --dagger-rounds 10 --dagger-instances 64 --dagger-window 2 --dagger-expert self-best --dagger-samples 16 \
  --dagger-temperature 0.25 \
  --dagger-epochs 2 --bc-value-coef 0 --bc-lr 1e-4 --minibatch 128 --val-episodes 16 --eval-episodes 8 \
  --export runs/long/tapfinger-h6s-selfbest/export.pt "$@"
