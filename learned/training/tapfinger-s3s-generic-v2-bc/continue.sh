#!/usr/bin/env bash
# The generic BC recipe (../generic-bc.sh) on the synthetic-3 preset in the setting of
# placement-synthetic-3-v2 (the preset's defaults: 3 clusters of 16/16, noise 0.1, switching
# overhead 0.5, eligibility 1..3). Issue 42: the hetero-6 file read generically was 23.7 % above
# the best knowns of synthetic-3-v2 (target within 15 %). Ships as
# tapfinger-generic-bc-synthetic-3-single.pt.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../generic-bc.sh" tapfinger-s3s-generic-v2-bc \
  --preset synthetic-3 --seed 61 --export runs/export/gv2bc-s3s.pt
