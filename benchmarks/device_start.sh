#!/usr/bin/env bash
# Issue 41 goals 1 and 6 on a single-GPU NVIDIA machine: how fast a phase starts, and
# what that buys compare and advise.
# Usage, from the repo root (or a `git archive` copy of it):
#   bash benchmarks/device_start.sh OUTDIR ROOT PART
# ROOT: the XSched install. PART 1: the phase-start breakdown of intensive, native and
# MPS, 3 runs of 5 s (benchmarks/phase_start.py); compare intensive --modes native,mps
# --repeat 6 --duration 10 (its wall time) and the A/A halves of each mode
# (benchmarks/aa_check.py); the dashboard's CPU in each mode (benchmarks/dashboard_cpu.py);
# the dashboard's m and x keys (benchmarks/restart.py). DASH=0 leaves the dashboard's CPU out.
# PART 2: advise intensive --modes native,mps,xsched --duration 20 --budget 15 (DUR and
# BUDGET set them; 10 s runs cannot bound HIGH's P99: advise refuses them), started
# in its own session (it outlasts one device command); PART 3 waits for it.
set -u
R=${1:?outdir}; XS=${2:?xsched root}; PART=${3:-1}
mkdir -p "$R"
source "$(dirname "$0")/device_lib.sh"
if [ "$PART" = 1 ]; then
  run phase-start.md python3 benchmarks/phase_start.py intensive --modes native,mps \
    --repeat 3 --duration 5 --export "$R/ps" --json "$R/phase-start.json" --markdown
  run compare.log $X compare intensive --modes native,mps --repeat 6 --duration 10 \
    --device cuda:0 --telemetry nvml --export "$R/compare"
  for m in native mps; do
    run "aa-$m.txt" python3 benchmarks/aa_check.py "$R/compare/snapshot.json" "$m"
  done
  [ "${DASH:-1}" = 1 ] && for m in native mps xsched; do  # the observer's CPU (goal 5)
    run "dash-$m.txt" python3 benchmarks/dashboard_cpu.py --scenario intensive --telemetry nvml \
      --device cuda:0 --seconds 20 --mode "$m" --xsched "$XS"
  done
  run restart-mps.txt python3 benchmarks/restart.py intensive --modes native,mps \
    --toggles 4 --device cuda:0 --json "$R/restart-mps.json"
  run restart-xsched.txt python3 benchmarks/restart.py intensive --modes native,xsched \
    --toggles 2 --device cuda:0 --xsched "$XS" --json "$R/restart-xsched.json"
elif [ "$PART" = 2 ]; then
  # run it from a copy outside the repository: a later device call re-sends the tree
  rm -rf /tmp/xwatch-src && cp -r . /tmp/xwatch-src && cd /tmp/xwatch-src || exit 1
  setsid bash -c "R=$R; source benchmarks/device_lib.sh; run advise.log $X advise intensive \
    --modes native,mps,xsched --duration ${DUR:-20} --budget ${BUDGET:-15} --device cuda:0 --telemetry nvml \
    --xsched $XS --export $R/advise; touch $R/done" > /dev/null 2>&1 < /dev/null &
  echo "advise started in its own session; PART 3 waits for $R/done"
else
  end=$((SECONDS + ${WAIT:-560}))
  while [ ! -e "$R/done" ] && [ $SECONDS -lt $end ]; do sleep 5; done
  [ -e "$R/done" ] && echo "advise done" || { echo "advise still running"; tail -5 "$R/advise.log"; }
fi
