#!/usr/bin/env bash
# Generic TapFinger BC, the control of tapfinger-h6s-generic-v2-bcr (session 16): the same 400
# training instances and recipe without the window repair (only the schedules replayed exactly are
# imitated), to separate "more instances" from "repaired schedules". BC only (--steps 0).
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-h6s-generic-v2-bcx \
  --preset hetero-6 --variant single --steps 0 --seed 47 \
  --set num_tasks=96 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --inputs generic --cell-features v2 --sparse-alloc --entropy-norm \
  --bc-instances 400 --expert placement-lns --bc-time-limit 4 \
  --bc-epochs 30 --bc-lr 1e-3 --bc-eval-every 5 \
  --num-envs 16 --rollout-steps 32 --lr 1e-4 --target-kl 0.02 \
  --eval-every 10 --eval-episodes 8 --val-episodes 16 --device cpu "$@"
