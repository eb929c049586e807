#!/usr/bin/env bash
# tapfinger-h6s-onlinelist-bc384 (behaviour cloning of the online list expert on hetero-6 single, 150
# training instances of 384 tasks) with the pending rows' cross-cluster features (--cross-features,
# issue 42 session 24). Why: that run fitted its expert's choices at 66 % training accuracy and played
# at 1.185 of Optimus held out, against the expert's 0.766: the list rule holds a task for a faster
# cluster, which one cluster's observation does not show. The same expert schedules (cached under
# runs/tapfinger-expert), the same recipe; only the observation differs.
# State in runs/long/tapfinger-h6s-onlinelist-cross-bc384.
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
BC_TASKS=384 BC_VAL_TASKS=384 exec bash learned/training/generic-bc.sh tapfinger-h6s-onlinelist-cross-bc384 \
  --preset hetero-6 --seed 47 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --expert online-list --bc-time-limit 120 --bc-value-coef 0 --val-episodes 8 --cross-features \
  --export runs/export/h6s-onlinelist-cross-bc384.pt "$@"
