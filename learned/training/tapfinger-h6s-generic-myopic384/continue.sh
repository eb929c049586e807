#!/usr/bin/env bash
# DAgger at the held-out scale with the non-clairvoyant LNS expert (issue 42 item 3, session 16):
# from the shipped generic BC file, the student plays 384-task training instances of hetero-6
# single (authors' setting); at 24 of its start steps per episode placement-lns plans on the tasks
# known at that step only (--dagger-expert placement-lns-myopic, 2 s, one thread), and the states
# up to the next arrival are labelled with its plan; aggregated over rounds, value term off,
# selected on 16 validation seeds of 384 tasks (the initial file is a candidate). Why: the
# clairvoyant LNS continuations of tapfinger-h6s-generic-dagger384 were nearly unlearnable
# (pointer accuracy 0.34) and made the file worse.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../resume.sh" tapfinger-h6s-generic-myopic384 \
  --preset hetero-6 --variant single --steps 0 --seed 49 \
  --set num_tasks=384 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --inputs generic --cell-features v2 --sparse-alloc --entropy-norm \
  --init learned/checkpoints/tapfinger-generic-bc-hetero-6-single.pt \
  --dagger-rounds 3 --dagger-instances 8 --dagger-cuts 24 --dagger-epochs 3 --dagger-expert placement-lns-myopic \
  --bc-time-limit 2 --bc-lr 3e-4 --bc-value-coef 0 --bc-eval-every 1 \
  --num-envs 16 --rollout-steps 32 --lr 1e-4 --target-kl 0.02 \
  --eval-every 10 --eval-episodes 8 --val-episodes 16 --device cpu "$@"
