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
exec bash learned/training/lfl.sh tapfinger-s3m-8m \
  --preset synthetic-3 --variant multi --steps 8000000 --anneal-lr 8000000 --seed 11 \
  --set switching_overhead=0 --set noise=0 --num-envs 32 --hidden 64 --layers 2 --encoder graph \
  --eval-every 25 --val-episodes 16 --init runs/init/tapfinger-mappo-synthetic-3-multi-cf0fd319.pt \
  --minibatch 256 "$@"
