#!/usr/bin/env bash
# Generic TapFinger BC selected at the held-out scale (session 16): the recipe and the 400 training
# instances of tapfinger-h6s-generic-v2-bcx (exact replays only; hetero-6 single, authors' setting,
# 96-task training episodes), but the BC epochs are selected on 16 validation seeds of 384 tasks
# (--val-set num_tasks=384, every 2 epochs): at 96 tasks bcx validated at 5.24 yet was +14.4 %
# against Optimus on the 384-task held-out seeds, where the shipped BC file is -4.5 %.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-h6s-generic-v2-bcv \
  --preset hetero-6 --variant single --steps 0 --seed 47 \
  --set num_tasks=96 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --inputs generic --cell-features v2 --sparse-alloc --entropy-norm \
  --bc-instances 400 --expert placement-lns --bc-time-limit 4 \
  --bc-epochs 30 --bc-lr 1e-3 --bc-eval-every 2 \
  --num-envs 16 --rollout-steps 32 --lr 1e-4 --target-kl 0.02 \
  --eval-every 10 --eval-episodes 8 --val-episodes 16 --val-set num_tasks=384 --device cpu "$@"
