#!/usr/bin/env bash
# Continue (or start) generic TapFinger with behaviour cloning (issue 42 items 3-4, session 15):
# generic inputs with the v2 cell features (each allowed cell relative to the best run time and the
# cheapest best-time cell), so that the allocation head can imitate the expert; BC of placement-lns
# (4 s, one thread, 150 training instances) on hetero-6 single in the authors' setting (no switching
# loss, eligibility 1..6, no noise), 96-task episodes, selected on 16 validation seeds; then MAPPO
# at lr 1e-4 with the normalised entropy bonus. From scratch (the generic MAPPO-only single run
# tapfinger-h6s-generic-entnorm did not learn). State in runs/long/tapfinger-h6s-generic-v2-bc;
# the expert schedules are cached in runs/tapfinger-expert (rebuilt on a fresh machine).
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-h6s-generic-v2-bc \
  --preset hetero-6 --variant single --steps 8000000 --seed 47 \
  --set num_tasks=96 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --inputs generic --cell-features v2 --sparse-alloc --entropy-norm \
  --bc-instances 150 --expert placement-lns --bc-time-limit 4 --bc-epochs 30 --bc-lr 1e-3 --bc-eval-every 5 \
  --num-envs 16 --rollout-steps 32 --lr 1e-4 --target-kl 0.02 \
  --eval-every 10 --eval-episodes 8 --val-episodes 16 --device cpu
