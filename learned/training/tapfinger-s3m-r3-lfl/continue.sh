#!/usr/bin/env bash
# Continue (or start) the like-for-like fine-tune of the full synthetic-3 multi file at the authors'
# arrival rate 3 (issue 42; docs/calibration.md item 5: their multi-task run used rate 3, no switching
# loss, no progress noise): tapfinger-s3m-lfl's command (tapfinger-h6m-lfl's recipe: lr 3e-5, team
# reward, critic warm-up, 216,576 env steps, seed 7) with --set rate=3. State in runs/long/tapfinger-s3m-r3-lfl.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-s3m-r3-lfl \
  --preset synthetic-3 --variant multi --steps 216576 --seed 7 \
  --set rate=3 --set switching_overhead=0 --set noise=0 \
  --num-envs 16 --rollout-steps 32 --lr 3e-05 --hidden 64 --layers 2 --heads 4 --conv fused --void-rule system \
  --encoder graph --pointer pointer --eval-every 10 --eval-episodes 8 --ent-coef 0.0 --val-episodes 16 \
  --init learned/checkpoints/tapfinger-mappo-synthetic-3-multi.pt --epochs 2 --minibatch 128 --target-kl 0.01 \
  --critic-warmup 10 --critic-lr 0.001 --critic-detach --team-reward "$@"
