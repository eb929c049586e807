#!/usr/bin/env bash
# DAgger at the held-out scale with the LNS as the expert (issue 42 item 3, session 16): from the
# shipped generic BC file (tapfinger-generic-bc-hetero-6-single.pt), the student plays 384-task
# training instances of hetero-6 single in the authors' setting; at 2 of its start steps per episode
# placement-lns improves the student's own continuation with the started tasks frozen
# (--dagger-expert placement-lns, 8 s, one thread); the continuations (window-repaired within 5 %
# where the exact replay fails) are aggregated over rounds and imitated; the weights are selected
# on 16 validation seeds of 384 tasks (the initial file is a candidate). Why: at 384 tasks the LNS
# is at ~0.66-0.75 of Optimus (3 validation seeds, 16 s / 4 s), the BC student at ~0.98.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-h6s-generic-dagger384 \
  --preset hetero-6 --variant single --steps 0 --seed 48 \
  --set num_tasks=384 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --inputs generic --cell-features v2 --sparse-alloc --entropy-norm \
  --init learned/checkpoints/tapfinger-generic-bc-hetero-6-single.pt \
  --dagger-rounds 4 --dagger-instances 12 --dagger-cuts 2 --dagger-epochs 3 --dagger-expert placement-lns \
  --bc-time-limit 8 --bc-window-repair 0.05 --bc-lr 5e-4 --bc-value-coef 0 --bc-eval-every 1 \
  --num-envs 16 --rollout-steps 32 --lr 1e-4 --target-kl 0.02 \
  --eval-every 10 --eval-episodes 8 --val-episodes 16 --device cpu "$@"
