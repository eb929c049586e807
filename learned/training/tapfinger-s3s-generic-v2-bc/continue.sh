#!/usr/bin/env bash
# The generic BC recipe of the shipped tapfinger-generic-bc files (v2 cell features, behaviour
# cloning of placement-lns at 4 s on 150 training instances of 96 tasks, 30 epochs, lr 1e-3) on the
# synthetic-3 preset in the setting of placement-synthetic-3-v2 (the preset's defaults: 3 clusters of
# 16/16, noise 0.1, switching overhead 0.5, eligibility 1..3), single variant, selected on 16
# validation seeds of 192 tasks, the set's size (issue 42: the hetero-6 file read generically is
# 23.7 % above the best knowns of synthetic-3-v2; target within 15 %). BC only (--steps 0).
# State in runs/long/tapfinger-s3s-generic-v2-bc.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-s3s-generic-v2-bc \
  --preset synthetic-3 --variant single --steps 0 --seed 61 \
  --set num_tasks=96 \
  --inputs generic --cell-features v2 --sparse-alloc --entropy-norm \
  --num-envs 16 --rollout-steps 32 \
  --bc-instances 150 --bc-epochs 30 --bc-time-limit 4.0 --bc-lr 0.001 --bc-eval-every 5 --expert placement-lns \
  --val-episodes 16 --val-set num_tasks=192 --eval-episodes 8 --device cpu \
  --export runs/export/gv2bc-s3s.pt
