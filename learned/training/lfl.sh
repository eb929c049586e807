#!/usr/bin/env bash
# The like-for-like MAPPO fine-tune recipe of the shipped one-hot TapFinger files (issue 42; the recipe of
# tapfinger-h6m-lfl, the hetero-6 multi file's fine-tune in the authors' setting): 16 envs x 32 steps per
# update, 2 epochs x minibatch 128, target KL 0.01, lr 3e-5 with the critic's own 1e-3 and a 10-update
# critic warm-up, the value loss detached from the shared encoder, team reward, no entropy bonus, 4 heads,
# the fused graph layer, 8 held-out evaluation episodes.
#   lfl.sh NAME [train options]
# The run adds its own preset, setting, seed, network size, start file and selection; an option given again
# overrides the recipe's (the parser keeps the last). State in runs/long/NAME (through resume.sh: one
# thread, nice 15).
NAME=$1
shift
exec bash "$(dirname "${BASH_SOURCE[0]}")/resume.sh" "$NAME" \
  --num-envs 16 --rollout-steps 32 --epochs 2 --minibatch 128 --target-kl 0.01 \
  --lr 3e-05 --critic-lr 0.001 --critic-warmup 10 --critic-detach --team-reward --ent-coef 0.0 \
  --heads 4 --conv fused --void-rule system --pointer pointer --eval-episodes 8 "$@"
