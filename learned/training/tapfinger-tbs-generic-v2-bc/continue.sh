#!/usr/bin/env bash
# The generic BC recipe (../generic-bc.sh) on the paper's test-bed preset (3 clusters of 16 CPU /
# 8 GPU, the measured profiles, switching overhead 0.5, no noise: the setting of
# placement-testbed-v2). Issue 42: the hetero-6 file, read generically, lost to Optimus on
# testbed-v2 (2512 against 2136). Ships as tapfinger-generic-bc-testbed-single.pt.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../generic-bc.sh" tapfinger-tbs-generic-v2-bc \
  --preset testbed --seed 59 --export runs/export/gv2bc-tbs.pt
