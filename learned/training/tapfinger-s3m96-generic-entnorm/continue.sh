#!/usr/bin/env bash
# Continue (or start) the second generic TapFinger run with the normalised entropy bonus (issue 42
# item 4): from the best weights of tapfinger-s3m48-generic-entnorm (update 740, validation 3.77 at
# 48 tasks), at 96-task episodes and a lower learning rate (2e-4; the 48-task run became unstable at
# 5e-4 after its peak), synthetic-3 multi in the authors' setting, selected on the validation seeds.
# State in runs/long/tapfinger-s3m96-generic-entnorm.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-s3m96-generic-entnorm \
  --preset synthetic-3 --variant multi --steps 8000000 --seed 29 \
  --set num_tasks=96 --set switching_overhead=0 --set noise=0 \
  --inputs generic --sparse-alloc --entropy-norm --num-envs 16 --rollout-steps 32 --lr 2e-4 --target-kl 0.02 \
  --init learned/training/tapfinger-s3m48-generic-entnorm/rl_best.pt \
  --eval-every 10 --eval-episodes 8 --val-episodes 16 --device cpu
