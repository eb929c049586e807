#!/usr/bin/env bash
# Continue (or start) a generic TapFinger run in the SINGLE variant (issue 42 items 3-4): the generic
# multi-variant file (tapfinger-s3m48-generic-entnorm, update 740) beats Optimus on every multi set
# but was never trained on single-task placement, where the one-hot files lose to Optimus (testbed,
# sjf-ablation, alibaba; hetero-6 single +61.7 %). From those weights, hetero-6 single in the
# authors' setting (no switching loss, eligibility 1..6, no noise), 96-task episodes,
# `--sparse-alloc --entropy-norm`, lr 2e-4, selected on the validation seeds.
# State in runs/long/tapfinger-h6s-generic-entnorm.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-h6s-generic-entnorm \
  --preset hetero-6 --variant single --steps 8000000 --seed 31 \
  --set num_tasks=96 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --inputs generic --sparse-alloc --entropy-norm --num-envs 16 --rollout-steps 32 --lr 2e-4 --target-kl 0.02 \
  --init learned/training/tapfinger-s3m48-generic-entnorm/rl_best.pt \
  --eval-every 10 --eval-episodes 8 --val-episodes 16 --device cpu
