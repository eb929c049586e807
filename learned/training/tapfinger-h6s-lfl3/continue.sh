#!/usr/bin/env bash
# Continue (or start) the third like-for-like hetero-6 SINGLE fine-tune (issue 42, target <= 0.80):
# from the best weights of tapfinger-h6s-lfl (update 110; 384-task held-out +20.3 % +- 6.7 against
# Optimus, shipped file +59.0 %) at lr 1e-5 on 96-task episodes, where tapfinger-h6s-lfl improved
# (tapfinger-h6s-lfl2 on 384-task episodes did not: validation 13.76 -> 14.1-14.6 in 138 updates,
# value loss ~2e4). Authors' setting (no switching loss, eligibility 1..6, no noise), team reward,
# selected on 16 validation seeds of 96 tasks. State in runs/long/tapfinger-h6s-lfl3.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-h6s-lfl3 \
  --preset hetero-6 --variant single --steps 8000000 --seed 43 \
  --set num_tasks=96 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --num-envs 16 --rollout-steps 32 --lr 1e-05 --hidden 48 --layers 2 --heads 4 --conv fused --void-rule system \
  --encoder graph --pointer pointer --eval-every 10 --eval-episodes 8 --ent-coef 0.0 --val-episodes 16 \
  --init learned/training/tapfinger-h6s-lfl/rl_best.pt --epochs 2 --minibatch 128 --target-kl 0.01 \
  --critic-warmup 10 --critic-lr 0.001 --critic-detach --team-reward
