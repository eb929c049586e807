#!/usr/bin/env bash
# DAgger with the myopic expert, aggregated with the expert data the shipped generic file was cloned
# from (issue 42 item 3, session 17). From the shipped generic BC file: its behaviour-cloning data
# rebuilt (placement-lns on 150 hetero-6 single training instances of 96 tasks, authors' setting;
# 1 s per instance, window repair within 5 %), no initial epochs, then 4 DAgger rounds with the
# myopic expert (--dagger-expert placement-lns-myopic, labels as played) on 96-task episodes, each
# round's states added to that data; value term off; selected on 16 validation seeds of 384 tasks
# (the initial file is a candidate). Why: DAgger on its own window states only
# (tapfinger-h6s-generic-myopic384-played) wrecked the policy in one epoch (validation 11.23 -> 32.8).
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-h6s-generic-bcdagger-played \
  --preset hetero-6 --variant single --steps 0 --seed 47 \
  --set num_tasks=96 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --val-set num_tasks=384 --val-seed-base 2000000000 \
  --inputs generic --cell-features v2 --sparse-alloc --entropy-norm \
  --init learned/checkpoints/tapfinger-generic-bc-hetero-6-single.pt \
  --expert placement-lns --bc-instances 150 --bc-epochs 0 --bc-time-limit 1 --bc-window-repair 0.05 \
  --dagger-rounds 4 --dagger-instances 16 --dagger-cuts 12 --dagger-epochs 3 --dagger-expert placement-lns-myopic \
  --dagger-myopic-labels played \
  --bc-lr 3e-4 --bc-value-coef 0 --bc-eval-every 1 \
  --num-envs 16 --rollout-steps 32 --lr 1e-4 --target-kl 0.02 \
  --eval-every 10 --eval-episodes 8 --val-episodes 16 --device cpu "$@"
