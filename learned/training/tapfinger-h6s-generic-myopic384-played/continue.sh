#!/usr/bin/env bash
# DAgger at the held-out scale with the non-clairvoyant LNS expert, labels as the agents can play
# them (issue 42 item 3, session 17): as tapfinger-h6s-generic-myopic384, plus
# --dagger-myopic-labels played (a plan whose starts fall outside an agent's 10-task pending window
# is kept as its window-repaired replay instead of being skipped) and 4 rounds; the same seed, instances
# and cuts, so its first round's plans are those of that run (cached under runs/tapfinger-expert).
# Why: in tapfinger-h6s-generic-myopic384, 120-142 of 192 plans per round were skipped and ~125
# states per round were too few to learn from.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-h6s-generic-myopic384-played \
  --preset hetero-6 --variant single --steps 0 --seed 49 \
  --set num_tasks=384 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --inputs generic --cell-features v2 --sparse-alloc --entropy-norm \
  --init learned/checkpoints/tapfinger-generic-bc-hetero-6-single.pt \
  --dagger-rounds 4 --dagger-instances 8 --dagger-cuts 24 --dagger-epochs 3 --dagger-expert placement-lns-myopic \
  --dagger-myopic-labels played \
  --bc-time-limit 2 --bc-lr 3e-4 --bc-value-coef 0 --bc-eval-every 1 \
  --num-envs 16 --rollout-steps 32 --lr 1e-4 --target-kl 0.02 \
  --eval-every 10 --eval-episodes 8 --val-episodes 16 --device cpu "$@"
