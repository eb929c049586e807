#!/usr/bin/env bash
# The hetero-6 multi file towards the paper's budget (issue 42: "the two tapfinger multi files trained with
# >= 8 M env steps"): MAPPO from the file shipped in session 21 (update 120 of tapfinger-h6m-lfl-v384) in the
# authors' setting (no switching loss, eligibility 1..6, no noise; 96-task training episodes), the paper's
# 32 parallel environments, the shipped file's recipe (team reward, lr 3e-5, critic warm-up, critic lr 1e-3,
# target KL 0.01) with both rates decayed linearly to 0 at 8 M env steps (--anneal-lr), selected as that file
# was: on 8 validation seeds of 384 tasks, here every 25 updates (25,600 env steps). Prepared in session 21,
# to start when a core is free (tapfinger-s3m-8m holds the other); about 12 CPU hours on one shared core.
# State in runs/long/tapfinger-h6m-8m.
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
mkdir -p runs/init
[ -f runs/init/tapfinger-mappo-hetero-6-multi-v384.pt ] || git show 8588134:learned/checkpoints/tapfinger-mappo-hetero-6-multi.pt > runs/init/tapfinger-mappo-hetero-6-multi-v384.pt
exec bash learned/training/lfl.sh tapfinger-h6m-8m \
  --preset hetero-6 --variant multi --steps 8000000 --anneal-lr 8000000 --seed 11 --set num_tasks=96 \
  --set switching_overhead=0 --set max_eligible=6 --set noise=0 --num-envs 32 --hidden 48 --layers 2 \
  --encoder graph --eval-every 25 --val-episodes 8 --val-set num_tasks=384 \
  --init runs/init/tapfinger-mappo-hetero-6-multi-v384.pt --minibatch 256 "$@"
