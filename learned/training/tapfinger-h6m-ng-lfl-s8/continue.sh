#!/usr/bin/env bash
# A second training seed (8) of tapfinger-h6m-ng-lfl, the no-graph ablation (issue 42, the ablation target): the same
# command, start file and budget with --seed 8, to tell the full model against its no-graph ablation
# apart from one training seed's luck. The start file is the one tapfinger-h6m-ng-lfl started from (the
# shipped file before it was replaced), restored from git into runs/init/. State in runs/long/tapfinger-h6m-ng-lfl-s8.
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
mkdir -p runs/init
[ -f runs/init/tapfinger-nograph-mappo-hetero-6-multi-597ca854.pt ] || git show 5134f64^:learned/checkpoints/tapfinger-nograph-mappo-hetero-6-multi.pt > runs/init/tapfinger-nograph-mappo-hetero-6-multi-597ca854.pt
exec bash learned/training/resume.sh tapfinger-h6m-ng-lfl-s8 \
  --preset hetero-6 --variant multi --steps 216576 --seed 8 \
  --set num_tasks=96 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --num-envs 16 --rollout-steps 32 --lr 3e-05 --hidden 48 --layers 2 --heads 4 --conv fused --void-rule system \
  --encoder mlp --pointer pointer --eval-every 10 --eval-episodes 8 --ent-coef 0.0 --val-episodes 16 \
  --init runs/init/tapfinger-nograph-mappo-hetero-6-multi-597ca854.pt --epochs 2 --minibatch 128 --target-kl 0.01 \
  --critic-warmup 10 --critic-lr 0.001 --critic-detach --team-reward "$@"
