#!/usr/bin/env bash
# Continue (or start) the generic TapFinger run with the normalised entropy bonus (issue 42 item 4;
# docs/tapfinger.md "the greedy gap"): MAPPO from scratch, `--inputs generic --sparse-alloc
# --entropy-norm`, synthetic-3 multi in the authors' setting at 48 tasks (where the 48-task smoke
# learned), selected on the validation seeds. State in runs/long/tapfinger-s3m48-generic-entnorm.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-s3m48-generic-entnorm \
  --preset synthetic-3 --variant multi --steps 8000000 --seed 19 \
  --set num_tasks=48 --set switching_overhead=0 --set noise=0 \
  --inputs generic --sparse-alloc --entropy-norm --num-envs 16 --rollout-steps 32 --lr 5e-4 --target-kl 0.02 \
  --eval-every 10 --eval-episodes 8 --val-episodes 16 --device cpu
