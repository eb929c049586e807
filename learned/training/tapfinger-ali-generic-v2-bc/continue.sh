#!/usr/bin/env bash
# The generic BC recipe (../generic-bc.sh) on the alibaba preset: windows of the Alibaba openb
# trace (3 GPU nodes as clusters, 300 s steps, the converter's defaults: the setting of
# placement-alibaba-v2), drawn disjoint from that set's four windows. Training windows of the
# set's own size (192 pods; placement-lns at 8 s each). Issue 42, session 19: the hetero-6 file,
# read generically, lost to Optimus on alibaba-v2 (2226 against 1976, +11.8 %), the one
# paper-scale set without a preset to train on. node_seed=0: every training window on the set's
# seed-0 nodes (three 96-CPU / 8-GPU nodes; the trainer's one environment needs fixed clusters).
BC_TASKS=192 exec bash "$(dirname "${BASH_SOURCE[0]}")/../generic-bc.sh" tapfinger-ali-generic-v2-bc \
  --preset alibaba --set node_seed=0 --seed 63 --export runs/export/gv2bc-ali.pt --bc-time-limit 8.0
