#!/usr/bin/env bash
# The like-for-like hetero-6 multi MAPPO fine-tune of the full model trained at the played size: the
# shipped file's recipe (tapfinger-h6m-lfl: team reward, lr 3e-5, critic warm-up, seed 7, the same start
# file) on 384-task training episodes instead of 96 (the held-out scale), with a longer critic warm-up
# (20 updates: the returns of a 384-task episode are about 4x longer) and the weights selected on 8
# validation seeds of 384 tasks every 20 updates. 216,576 env steps. Issue 42, session 21.
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
mkdir -p runs/init
[ -f runs/init/tapfinger-mappo-hetero-6-multi-6a4b40fb.pt ] || git show 1e12086^:learned/checkpoints/tapfinger-mappo-hetero-6-multi.pt > runs/init/tapfinger-mappo-hetero-6-multi-6a4b40fb.pt
exec bash learned/training/lfl.sh tapfinger-h6m-384-v384 \
  --preset hetero-6 --variant multi --steps 216576 --seed 7 --set num_tasks=384 --set switching_overhead=0 \
  --set max_eligible=6 --set noise=0 --hidden 48 --layers 2 --encoder graph --eval-every 20 \
  --val-episodes 8 --val-set num_tasks=384 --init runs/init/tapfinger-mappo-hetero-6-multi-6a4b40fb.pt \
  --critic-warmup 20 "$@"
