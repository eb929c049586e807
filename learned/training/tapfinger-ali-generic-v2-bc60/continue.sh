#!/usr/bin/env bash
# 30 more BC epochs (lr 5e-4) for ../tapfinger-ali-generic-v2-bc, whose validation was still falling
# at its epoch 30 (10.00 -> 9.66): the same seed and expert data (cached schedules), initialised
# from its selected weights (runs/export/gv2bc-ali.pt), selected on the same 16 validation seeds.
BC_TASKS=192 exec bash "$(dirname "${BASH_SOURCE[0]}")/../generic-bc.sh" tapfinger-ali-generic-v2-bc60 \
  --preset alibaba --set node_seed=0 --seed 63 --export runs/export/gv2bc60-ali.pt --bc-time-limit 8.0 \
  --init runs/export/gv2bc-ali.pt --bc-lr 0.0005
