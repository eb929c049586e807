#!/usr/bin/env bash
# The variant tapfinger-plan on hetero-6 single (issue 42, session 25): behaviour cloning of
# placement-list-window (the windows' list plan, re-made every step, played by the agents' rules) on
# 150 training instances of 384 tasks, with the pending rows' plan features (--plan-features: what
# that step's shared plan does with each task). Why: the per-cluster agents cannot coordinate the
# list rule's choices (BC of the online list expert: pointer accuracy 0.63-0.66, 1.134-1.185 of
# Optimus held out, against the expert's 0.766); a per-cluster earliest-finish rule without the plan
# plays at about 2x Optimus, the shared plan at about 0.72x. The generic BC recipe otherwise
# (learned/training/generic-bc.sh; value weight 0 at 384 tasks), 10 epochs: the pointer fits its labels
# exactly from the second (a first start with 30 stopped at epoch 9, accuracy 1.000 from epoch 2,
# validation 9.141 at epoch 5). State in runs/long/<name>.
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
BC_TASKS=384 BC_VAL_TASKS=384 exec bash learned/training/generic-bc.sh tapfinger-h6s-listwindow-plan-bc384 \
  --preset hetero-6 --seed 47 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --expert list-window --bc-value-coef 0 --val-episodes 8 --plan-features --bc-epochs 10 \
  --export runs/export/h6s-listwindow-plan-bc384.pt "$@"
