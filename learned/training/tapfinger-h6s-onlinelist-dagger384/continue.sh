#!/usr/bin/env bash
# DAgger with the window-playable list expert on hetero-6 single at 384 tasks (issue 42, session 23).
# tapfinger-h6s-onlinelist-bc384's behaviour cloning (the same 150 cached online-list schedules of 384
# tasks, value weight 0) for 10 epochs (its validation was 13.795 at epoch 10 and 13.778 at 30), then 4
# DAgger rounds: 16 student episodes of 384 tasks, 12 cut states each, relabelled by --dagger-expert
# online-list (the list-scheduling plan of the tasks known at the student's state, imitated until the
# next arrival; labels as the agents can play them), 3 epochs on the aggregate per round (BC lr 1e-3).
# Why: BC reached a pointer accuracy of only 0.66 and held out at 1.185 of Optimus, while the expert is
# at 0.766; the student's own states, relabelled, are what BC never showed it. Selected on 8 validation
# seeds of 384 tasks. State in runs/long/tapfinger-h6s-onlinelist-dagger384.
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
BC_TASKS=384 BC_VAL_TASKS=384 exec bash learned/training/generic-bc.sh tapfinger-h6s-onlinelist-dagger384 \
  --preset hetero-6 --seed 47 --set switching_overhead=0 --set max_eligible=6 --set noise=0 \
  --expert online-list --bc-time-limit 120 --bc-value-coef 0 --val-episodes 8 --bc-epochs 10 \
  --dagger-rounds 4 --dagger-instances 16 --dagger-cuts 12 --dagger-epochs 3 --dagger-expert online-list \
  --dagger-myopic-labels played \
  --export runs/export/h6s-onlinelist-dagger384.pt "$@"
