#!/usr/bin/env bash
# Continue (or start) the second like-for-like hetero-6 multi MAPPO fine-tune (issue 42): from the
# shipped file (update 150 of tapfinger-h6m-lfl, its best validation) at a third of that run's
# learning rate (1e-5), because validation drifted up after update 150 at 3e-5; selected on the
# validation seeds (rl_best.pt). State in runs/long/tapfinger-h6m-lfl2.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-h6m-lfl2 \
  --preset hetero-6 --variant multi --steps 8000000 --seed 8 \
  --set num_tasks=96 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --num-envs 16 --rollout-steps 32 --lr 1e-05 --hidden 48 --layers 2 --heads 4 --conv fused --void-rule system \
  --encoder graph --pointer pointer --eval-every 10 --eval-episodes 8 --ent-coef 0.0 --val-episodes 16 \
  --init learned/checkpoints/tapfinger-mappo-hetero-6-multi.pt --epochs 2 --minibatch 128 --target-kl 0.01 \
  --critic-warmup 10 --critic-lr 0.001 --critic-detach --team-reward
