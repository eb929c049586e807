#!/usr/bin/env bash
# Continue (or start) the MAPPO fine-tune of the shipped generic BC file (issue 42): from
# learned/checkpoints/tapfinger-generic-bc-hetero-6-single.pt with the one-hot like-for-like recipe
# (team reward, critic warm-up 10 updates, critic lr 1e-3 detached, lr 3e-5, no entropy bonus),
# hetero-6 single in the authors' setting (96-task episodes, no switching loss, eligibility 1..6,
# no noise), selected on 16 validation seeds. MAPPO at lr 1e-4 with the entropy bonus from the same
# weights made validation worse (tapfinger-h6s-generic-v2-bc: 5.10 -> 5.3-5.6 in 70 updates).
# State in runs/long/tapfinger-h6s-generic-bc-lfl.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-h6s-generic-bc-lfl \
  --preset hetero-6 --variant single --steps 8000000 --seed 53 \
  --set num_tasks=96 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --inputs generic --cell-features v2 --sparse-alloc --entropy-norm \
  --num-envs 16 --rollout-steps 32 --lr 3e-05 --ent-coef 0.0 --epochs 2 --minibatch 128 --target-kl 0.01 \
  --critic-warmup 10 --critic-lr 0.001 --critic-detach --team-reward \
  --init learned/checkpoints/tapfinger-generic-bc-hetero-6-single.pt \
  --eval-every 10 --eval-episodes 8 --val-episodes 16 --device cpu
