#!/usr/bin/env bash
# Behaviour cloning of the ONLINE LNS on hetero-6 single (issue 42, session 22): the shipped generic file's
# recipe (learned/training/generic-bc.sh: v2 cell features, 150 training instances of 96 tasks, 30 epochs at
# lr 1e-3; the authors' setting: no switching loss, eligibility 1..6, no noise) with the expert
# placement-lns-online instead of the clairvoyant placement-lns, selected on 8 validation seeds of 384 tasks.
# Why: on 10 held-out 384-task seeds the online LNS is at 0.696 of Optimus, 31 % below the shipped file,
# and its choice at a state never depends on a task that has not arrived (the clairvoyant expert's
# labels were found unlearnable at 384 tasks). Expert schedules cached in runs/tapfinger-expert.
# State in runs/long/tapfinger-h6s-online-bc.
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
BC_VAL_TASKS=384 exec bash learned/training/generic-bc.sh tapfinger-h6s-online-bc \
  --preset hetero-6 --seed 47 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --expert placement-lns-online --bc-time-limit 120 --val-episodes 8 \
  --export runs/export/h6s-online-bc.pt "$@"
