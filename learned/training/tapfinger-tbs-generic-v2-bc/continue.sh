#!/usr/bin/env bash
# The generic BC recipe of the shipped tapfinger-generic-bc-hetero-6-single.pt (v2 cell features,
# behaviour cloning of placement-lns at 4 s on 150 training instances of 96 tasks, 30 epochs, lr 1e-3),
# on the paper's test-bed preset (3 clusters of 16 CPU / 8 GPU, the measured profiles, switching
# overhead 0.5, no noise: the setting of placement-testbed-v2), selected on 16 validation seeds of
# 192 tasks, the set's size (issue 42: the hetero-6 file, read generically, loses to Optimus on
# testbed-v2, 2512 against 2136). BC only (--steps 0). State in runs/long/tapfinger-tbs-generic-v2-bc.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-tbs-generic-v2-bc \
  --preset testbed --variant single --steps 0 --seed 59 \
  --set num_tasks=96 \
  --inputs generic --cell-features v2 --sparse-alloc --entropy-norm \
  --num-envs 16 --rollout-steps 32 \
  --bc-instances 150 --bc-epochs 30 --bc-time-limit 4.0 --bc-lr 0.001 --bc-eval-every 5 --expert placement-lns \
  --val-episodes 16 --val-set num_tasks=192 --eval-episodes 8 --device cpu \
  --export runs/export/gv2bc-tbs.pt
