#!/usr/bin/env bash
# The generic BC recipe of the shipped tapfinger-generic-bc files (issue 42): v2 cell features,
# behaviour cloning of placement-lns at 4 s on 150 training instances of 96 tasks, 30 epochs at lr
# 1e-3, selected on 16 validation seeds of 192 tasks; BC only (--steps 0), single variant.
#   [BC_TASKS=N] generic-bc.sh NAME --preset P --seed S --export PATH [more train options]
# BC_TASKS (default 96): the training instances' task count (--set num_tasks=N).
# BC_VAL_TASKS (default 192): the validation episodes' task count (--val-set num_tasks=N).
# State in runs/long/NAME (through resume.sh: one thread, nice 15).
NAME=$1
shift
exec bash "$(dirname "${BASH_SOURCE[0]}")/resume.sh" "$NAME" \
  --variant single --steps 0 --set num_tasks="${BC_TASKS:-96}" \
  --inputs generic --cell-features v2 --sparse-alloc --entropy-norm \
  --num-envs 16 --rollout-steps 32 \
  --bc-instances 150 --bc-epochs 30 --bc-time-limit 4.0 --bc-lr 0.001 --bc-eval-every 5 --expert placement-lns \
  --val-episodes 16 --val-set num_tasks="${BC_VAL_TASKS:-192}" --eval-episodes 8 --device cpu "$@"
