#!/usr/bin/env bash
# A real batch system on this machine: Debian's SLURM (slurm-wlm, munge) as a one-node cluster on
# localhost, a slice of the paper suite run through it by the dask-jobqueue launcher
# (python -m edgebench.runner.jobqueue slurm ...), and the store it wrote compared with a local
# run of the same slice: same run keys, same statuses and the same referee values (relative 1e-9).
#
#   sudo bash scripts/slurm_localhost.sh [--work DIR] [--keep]
#
# Needs root (apt-get, munged, slurmctld, slurmd) on Debian or Ubuntu with the package mirror
# reachable (or the packages already installed). Everything SLURM writes lives under --work
# (default /tmp/edgebench-slurm): slurm.conf (this host's name, CPUs and memory from `slurmd -C`),
# state, spool, logs, the two stores. Nothing is written to /etc/slurm; clients find the
# configuration through SLURM_CONF. The daemons this script started are stopped at the end
# (--keep leaves them running, e.g. to try `sinfo`, `squeue` by hand).
#
# Exit codes: 0 the stores agree; 1 they differ or a step failed; 77 SLURM cannot be set up here
# (not root, not Debian, packages not installable) -- tests/runner/test_slurm.py skips on 77.
# The transcript of a run is in docs/cluster.md.
set -euo pipefail

WORK=/tmp/edgebench-slurm
KEEP=0
while [ $# -gt 0 ]; do
    case "$1" in
        --work) WORK="$2"; shift 2 ;;
        --keep) KEEP=1; shift ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) echo "slurm_localhost.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"
say() { echo "[slurm_localhost $(date -u +%H:%M:%S)] $*"; }
skip() { echo "SKIP: $*" >&2; exit 77; }

# --- can SLURM be set up here? ---------------------------------------------------------------
[ "$(id -u)" = 0 ] || skip "not root (apt-get and the SLURM daemons need root)"
[ -f /etc/debian_version ] || skip "not a Debian/Ubuntu system (no /etc/debian_version)"
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
    say "installing slurm-wlm and munge (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get install -y --no-install-recommends slurm-wlm munge >/dev/null 2>&1 \
           || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends slurm-wlm munge >/dev/null 2>&1; }; }; then
        skip "apt-get install slurm-wlm munge failed (no package mirror?)"
    fi
fi
"$PY" -c "import dask_jobqueue" 2>/dev/null || skip "dask-jobqueue is not installed for $PY (pip install -e '.[cluster]')"
say "$(slurmctld -V) ; $(munged -V 2>&1 | head -1)"

mkdir -p "$WORK"/{state,spool,log}
rm -f "$WORK"/slurm.sqlite* "$WORK"/local.sqlite*
STARTED=()
cleanup() {
    if [ "$KEEP" = 0 ]; then
        for pidfile in "${STARTED[@]}"; do
            [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
        done
    fi
}
trap cleanup EXIT

# --- munge --------------------------------------------------------------------------------------
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    [ -s /etc/munge/munge.key ] || { mungekey --create 2>/dev/null || /usr/sbin/create-munge-key -f; }
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge /etc/munge/munge.key
    runuser -u munge -- /usr/sbin/munged
    STARTED+=(/run/munge/munged.pid)
    for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
fi
munge -n | unmunge | grep -q 'STATUS: *Success' || { echo "munge does not work" >&2; exit 1; }
say "munged running"

# --- slurm.conf: this host, its CPUs and memory ------------------------------------------------
HOST="$(hostname -s)"
NODE="$(slurmd -C | head -1)"                  # NodeName=vm CPUs=2 ... RealMemory=24105
CPUS="$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$NODE")"
MEM_MB="$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$NODE")"
export SLURM_CONF="$WORK/slurm.conf"
cat > "$SLURM_CONF" <<EOF
# written by scripts/slurm_localhost.sh: a one-node cluster on localhost
ClusterName=edgebench
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd.pid
SlurmctldLogFile=$WORK/log/slurmctld.log
SlurmdLogFile=$WORK/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
$NODE State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
sed -i "s/^NodeName=[^ ]*/NodeName=$HOST/; s/ UpTime=.*//" "$SLURM_CONF"
say "slurm.conf: $(grep '^NodeName' "$SLURM_CONF")"

# --- slurmctld, slurmd ------------------------------------------------------------------------
if scontrol ping 2>/dev/null | grep -q UP; then
    say "slurmctld already running"
else
    slurmctld -c -f "$SLURM_CONF"; STARTED+=("$WORK/slurmctld.pid")
fi
if [ ! -f "$WORK/slurmd.pid" ] || ! kill -0 "$(cat "$WORK/slurmd.pid")" 2>/dev/null; then
    slurmd -f "$SLURM_CONF"; STARTED+=("$WORK/slurmd.pid")
fi
for _ in $(seq 60); do
    state="$(sinfo -h -N -o '%T' 2>/dev/null | head -1)"
    case "$state" in idle|mixed|allocated) break ;; esac
    sleep 1
done
sinfo -N -l
case "$state" in idle|mixed|allocated) ;; *) echo "node not up (state '$state'); see $WORK/log" >&2; exit 1 ;; esac

# --- the slice: the paper suite's time limits, deterministic solvers of the three families ----
SLICE=(paper --instances placement-synthetic-3-v1 mapping-topologies-v1 offloading-heft-random-v1
       --solvers optimus,tiresias,sjf,flexitask,greedy-bw,smart,heft,cpop,peft --no-report --no-progress)
JOB_MEM_MB=$(( MEM_MB * 8 / 10 < 8192 ? MEM_MB * 8 / 10 : 8192 ))
LOG_BEFORE=$(wc -l < "$WORK/log/slurmctld.log" 2>/dev/null || echo 0)
cd "$WORK"                                     # the batch jobs' slurm-N.out files land here
say "SLURM run: python -m edgebench.runner.jobqueue slurm --jobs 1 --cores $CPUS --memory ${JOB_MEM_MB}MB"
OMP_NUM_THREADS=1 "$PY" -m edgebench.runner.jobqueue slurm --jobs 1 --cores "$CPUS" --memory "${JOB_MEM_MB}MB" \
    --walltime 00:15:00 --queue debug -- "${SLICE[@]}" --db "$WORK/slurm.sqlite"
say "batch jobs seen by slurmctld: $(tail -n +$((LOG_BEFORE + 1)) "$WORK/log/slurmctld.log" | grep -c 'sched: Allocate JobId' || true)"
sed -n 's/.*\(sched: Allocate JobId=[^ ]* NodeList=[^ ]* #CPUs=[0-9]*\).*/  slurmctld: \1/p' "$WORK/log/slurmctld.log" | tail -n 1
say "local run of the same slice"
OMP_NUM_THREADS=1 "$PY" -m edgebench run "${SLICE[@]}" --workers 1 --db "$WORK/local.sqlite" >/dev/null

# --- same runs, same referee values -----------------------------------------------------------
"$PY" - "$WORK/slurm.sqlite" "$WORK/local.sqlite" <<'EOF'
import math
import sys

from edgebench.runner.store import Store

cols = ("key", "instance_id", "label", "status", "feasible", "primary_value")
a, b = ({r["key"]: r for r in Store.open(p, create=False, readonly=True).runs(cols)} for p in sys.argv[1:3])
bad = sorted(set(a) ^ set(b))
for k in sorted(set(a) & set(b)):
    x, y = a[k], b[k]
    same_value = (x["primary_value"] is None and y["primary_value"] is None) or (
        x["primary_value"] is not None and y["primary_value"] is not None
        and math.isclose(x["primary_value"], y["primary_value"], rel_tol=1e-9, abs_tol=1e-12))
    if x["status"] != y["status"] or x["feasible"] != y["feasible"] or not same_value:
        bad.append(k)
        print(f"DIFFER {x['instance_id']} {x['label']}: slurm {x['status']} {x['primary_value']} "
              f"local {y['status']} {y['primary_value']}")
print(f"slurm store {len(a)} runs, local store {len(b)} runs, {len(set(a) & set(b))} common keys, "
      f"{len(bad)} differing")
sys.exit(1 if bad or not a else 0)
EOF
say "OK: the SLURM store equals the local run"
