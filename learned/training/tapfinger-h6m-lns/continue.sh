#!/usr/bin/env bash
# Continue (or start) the staged hetero-6 multi run of issue 42, item 3: behaviour cloning of the
# LNS expert (placement-lns, 4 s per 96-task training instance) from the shipped MAPPO file, two
# DAgger rounds (the exact model's continuations), then MAPPO at a low learning rate; every stage
# selected on the validation seeds. State in runs/long/tapfinger-h6m-lns.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-h6m-lns \
  --preset hetero-6 --variant multi --steps 4000000 --seed 11 \
  --set num_tasks=96 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --num-envs 16 --rollout-steps 32 --lr 1e-05 --hidden 48 --layers 2 --heads 4 --conv fused --void-rule system \
  --encoder graph --pointer pointer --eval-every 10 --eval-episodes 8 --ent-coef 0.0 --val-episodes 16 \
  --init learned/checkpoints/tapfinger-mappo-hetero-6-multi.pt --epochs 2 --minibatch 128 --target-kl 0.01 \
  --critic-warmup 10 --critic-lr 0.001 --critic-detach --team-reward \
  --expert placement-lns --bc-instances 300 --bc-time-limit 4 --bc-epochs 8 --bc-lr 3e-4 --bc-eval-every 1 \
  --dagger-rounds 2 --dagger-instances 60 --dagger-cuts 3 --dagger-epochs 3
