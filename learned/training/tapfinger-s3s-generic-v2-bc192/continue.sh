#!/usr/bin/env bash
# The generic BC recipe (../generic-bc.sh) on synthetic-3 single, as ../tapfinger-s3s-generic-v2-bc
# but imitating the expert on training instances of the set's own size: 150 instances of 192 tasks
# (placement-lns at 8 s each, twice the 96-task budget) instead of 96. Issue 42, session 19: more
# 96-task data made the hetero-6 file worse at 384 tasks (session 16, bcx); does training at the
# played size close the gap to placement-synthetic-3-v2's best knowns (21.3 % above them; target
# within 15 %)?
BC_TASKS=192 exec bash "$(dirname "${BASH_SOURCE[0]}")/../generic-bc.sh" tapfinger-s3s-generic-v2-bc192 \
  --preset synthetic-3 --seed 62 --export runs/export/gv2bc192-s3s.pt --bc-time-limit 8.0
