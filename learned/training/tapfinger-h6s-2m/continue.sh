#!/usr/bin/env bash
# The hetero-6 single file trained on (issue 42, session 22): tapfinger-h6s-lfl-v384's recipe and selection
# (MAPPO in the authors' setting: no switching loss, eligibility 1..6, no noise; 96-task training episodes,
# 16 envs; weights chosen on 8 validation seeds of 384 tasks every 20 updates), started from the file it
# shipped (its update 380) with another seed, for 2 M env steps with both rates decayed linearly to 0 at
# 2 M (--anneal-lr). Why: that run's 384-task validation was still falling when it stopped (19.55 at the
# start, 12.4-13.3 at updates 200-300, 11.598 at update 380 of 423), and the certified bounds put the
# target (<= 0.80 of Optimus) well inside reach (bound 0.56, the clairvoyant LNS 0.66; docs/learned-baselines.md).
# Resumable anywhere; about 2.5 CPU hours. State in runs/long/tapfinger-h6s-2m.
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
mkdir -p runs/init
[ -f runs/init/tapfinger-mappo-hetero-6-single-v384.pt ] || git show 301aa25:learned/checkpoints/tapfinger-mappo-hetero-6-single.pt > runs/init/tapfinger-mappo-hetero-6-single-v384.pt
exec bash learned/training/lfl.sh tapfinger-h6s-2m \
  --preset hetero-6 --variant single --steps 2000000 --anneal-lr 2000000 --seed 41 --set num_tasks=96 \
  --set switching_overhead=0 --set max_eligible=6 --set noise=0 --hidden 48 --layers 2 --encoder graph \
  --eval-every 20 --val-episodes 8 --val-set num_tasks=384 --init runs/init/tapfinger-mappo-hetero-6-single-v384.pt "$@"
