#!/usr/bin/env bash
# Continue (or start) the type-generic TapFinger run of issue 42 (item 4) on synthetic-3 multi in
# the authors' setting (no switching loss, no noise; 96-task training episodes): MAPPO from scratch
# with `--inputs generic`, selected on the validation seeds. Its weights are the warm start of the
# generic runs on the other presets (a generic network reads any cluster grid and any task type).
# State in runs/long/tapfinger-s3m-generic.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-s3m-generic \
  --preset synthetic-3 --variant multi --steps 8000000 --seed 17 \
  --set num_tasks=96 --set switching_overhead=0 --set noise=0 \
  --inputs generic --sparse-alloc --ent-coef 0.001 --num-envs 16 --rollout-steps 32 --lr 3e-4 --target-kl 0.01 \
  --eval-every 10 --eval-episodes 8 --val-episodes 16 --device cpu
