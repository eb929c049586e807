#!/usr/bin/env bash
# Continue (or start) the type-generic TapFinger run of issue 42 (item 4): MAPPO from scratch with
# `--inputs generic` (task features from the performance model, an allocation head over any grid)
# on hetero-6 multi in the authors' setting (no switching loss, eligibility 1..6, no noise;
# 96-task training episodes), selected on the validation seeds. State in runs/long/tapfinger-h6m-generic.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-h6m-generic \
  --preset hetero-6 --variant multi --steps 8000000 --seed 13 \
  --set num_tasks=96 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --inputs generic --num-envs 16 --rollout-steps 32 --lr 5e-4 --target-kl 0.02 \
  --eval-every 10 --eval-episodes 8 --val-episodes 16 --device cpu
