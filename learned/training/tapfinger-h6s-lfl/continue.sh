#!/usr/bin/env bash
# Continue (or start) the like-for-like hetero-6 SINGLE fine-tune (issue 42, target <= 0.80): the
# recipe that took hetero-6 multi from ratio 1.11 to 0.683 (tapfinger-h6m-lfl), applied to the
# shipped single file, which was trained with the generator's default switching loss and
# eligibility (+61.7 % against Optimus in the authors' setting). MAPPO from
# learned/checkpoints/tapfinger-mappo-hetero-6-single.pt in the authors' setting (no switching
# loss, eligibility 1..6, no noise), 96-task episodes, team reward, selected on the validation seeds.
# State in runs/long/tapfinger-h6s-lfl.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-h6s-lfl \
  --preset hetero-6 --variant single --steps 8000000 --seed 37 \
  --set num_tasks=96 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --num-envs 16 --rollout-steps 32 --lr 3e-05 --hidden 48 --layers 2 --heads 4 --conv fused --void-rule system \
  --encoder graph --pointer pointer --eval-every 10 --eval-episodes 8 --ent-coef 0.0 --val-episodes 16 \
  --init learned/checkpoints/tapfinger-mappo-hetero-6-single.pt --epochs 2 --minibatch 128 --target-kl 0.01 \
  --critic-warmup 10 --critic-lr 0.001 --critic-detach --team-reward
