#!/usr/bin/env bash
# MAPPO from the plan-feature BC file (learned/checkpoints/tapfinger-plan-bc-hetero-6-single.pt) on hetero-6 single (issue 42, session 25): can reinforcement learning
# improve on the shared list plan the agents read? The BC file (learned/training/tapfinger-h6s-listwindow-
# plan-bc384) plays placement-list-window's decisions (pointer accuracy 1.000); this run fine-tunes it by the
# like-for-like recipe (learned/training/lfl.sh: 16 envs x 32 steps, team reward, critic warm-up, no entropy
# bonus) with the generic inputs and plan features, 96-task training episodes in the authors' setting,
# selected on 8 validation seeds of 384 tasks every 20 updates, both rates decayed linearly to 0 at 2 M env
# steps. Actor lr 1e-4 and an entropy bonus of 0.05 (normalised entropies) instead of the recipe's 3e-5 and 0:
# a first start with the recipe's rates left the BC file's validation at 9.141 through update 60 (entropy
# 0.008-0.012: the imitated policy is near-deterministic and does not explore), a second with lr 1e-4 and
# 0.005 through update 80 (entropy still ~0.01). Resumable anywhere.
# State in runs/long/tapfinger-h6s-plan-mappo.
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
mkdir -p runs/init
[ -f runs/init/h6s-listwindow-plan-bc384.pt ] || cp learned/checkpoints/tapfinger-plan-bc-hetero-6-single.pt runs/init/h6s-listwindow-plan-bc384.pt
exec bash learned/training/lfl.sh tapfinger-h6s-plan-mappo \
  --preset hetero-6 --variant single --steps 2000000 --anneal-lr 2000000 --seed 51 --set num_tasks=96 \
  --set switching_overhead=0 --set max_eligible=6 --set noise=0 --hidden 64 --layers 2 --encoder graph \
  --inputs generic --cell-features v2 --sparse-alloc --entropy-norm --plan-features \
  --eval-every 20 --val-episodes 8 --val-set num_tasks=384 --device cpu \
  --lr 1e-4 --ent-coef 0.05 --init runs/init/h6s-listwindow-plan-bc384.pt "$@"
