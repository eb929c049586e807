#!/usr/bin/env bash
# The synthetic-3 multi file towards the paper's budget (issue 42: "the two tapfinger multi files trained
# with >= 8 M env steps"): MAPPO from the shipped file in the authors' setting (no switching loss, no
# noise; 192-task episodes), the paper's 32 parallel environments, the shipped file's recipe (team reward,
# lr 3e-5, critic warm-up, critic lr 1e-3, target KL 0.01) with both rates decayed linearly to 0 at
# 8 M env steps (--anneal-lr: the long runs at constant rates drifted, learned/training/README.md),
# selected on 16 validation seeds every 25 updates (25,600 env steps). Resumable anywhere; about
# 6 CPU hours on one shared core, over several working sessions. State in runs/long/tapfinger-s3m-8m.
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
mkdir -p runs/init
[ -f runs/init/tapfinger-mappo-synthetic-3-multi-cf0fd319.pt ] || git show 30b8d13:learned/checkpoints/tapfinger-mappo-synthetic-3-multi.pt > runs/init/tapfinger-mappo-synthetic-3-multi-cf0fd319.pt
exec bash learned/training/resume.sh tapfinger-s3m-8m \
  --preset synthetic-3 --variant multi --steps 8000000 --anneal-lr 8000000 --seed 11 \
  --set switching_overhead=0 --set noise=0 \
  --num-envs 32 --rollout-steps 32 --lr 3e-05 --hidden 64 --layers 2 --heads 4 --conv fused --void-rule system \
  --encoder graph --pointer pointer --eval-every 25 --eval-episodes 8 --ent-coef 0.0 --val-episodes 16 \
  --init runs/init/tapfinger-mappo-synthetic-3-multi-cf0fd319.pt --epochs 2 --minibatch 256 --target-kl 0.01 \
  --critic-warmup 10 --critic-lr 0.001 --critic-detach --team-reward "$@"
