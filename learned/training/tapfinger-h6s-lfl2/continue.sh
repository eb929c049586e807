#!/usr/bin/env bash
# Continue (or start) the second like-for-like hetero-6 SINGLE fine-tune (issue 42, target <= 0.80):
# from the best weights of tapfinger-h6s-lfl (update 110: validation 5.70 at 96 tasks; whole
# 384-task held-out episodes +20.3 % +- 6.7 against Optimus, from +59.0 % for the shipped file),
# which drifted after that point at lr 3e-5. Here lr 1e-5 and 384-task training episodes (the
# target's episode length), authors' setting (no switching loss, eligibility 1..6, no noise), team
# reward, selected on 16 validation seeds of 384 tasks. State in runs/long/tapfinger-h6s-lfl2.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-h6s-lfl2 \
  --preset hetero-6 --variant single --steps 8000000 --seed 41 \
  --set num_tasks=384 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --num-envs 16 --rollout-steps 32 --lr 1e-05 --hidden 48 --layers 2 --heads 4 --conv fused --void-rule system \
  --encoder graph --pointer pointer --eval-every 10 --eval-episodes 8 --ent-coef 0.0 --val-episodes 16 \
  --init learned/training/tapfinger-h6s-lfl/rl_best.pt --epochs 2 --minibatch 128 --target-kl 0.01 \
  --critic-warmup 10 --critic-lr 0.001 --critic-detach --team-reward
