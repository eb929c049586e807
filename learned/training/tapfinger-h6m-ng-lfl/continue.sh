#!/usr/bin/env bash
# Continue (or start) the no-graph ablation's like-for-like hetero-6 multi MAPPO fine-tune (issue 42,
# the ablation target): tapfinger-h6m-lfl's recipe exactly (same options, seed and step budget), with
# only --encoder mlp and the no-graph file as the start, so that the full model and its no-graph
# ablation get the same training in the authors' setting. State in runs/long/tapfinger-h6m-ng-lfl.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-h6m-ng-lfl \
  --preset hetero-6 --variant multi --steps 216576 --seed 7 \
  --set num_tasks=96 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --num-envs 16 --rollout-steps 32 --lr 3e-05 --hidden 48 --layers 2 --heads 4 --conv fused --void-rule system \
  --encoder mlp --pointer pointer --eval-every 10 --eval-episodes 8 --ent-coef 0.0 --val-episodes 16 \
  --init learned/checkpoints/tapfinger-nograph-mappo-hetero-6-multi.pt --epochs 2 --minibatch 128 --target-kl 0.01 \
  --critic-warmup 10 --critic-lr 0.001 --critic-detach --team-reward "$@"
