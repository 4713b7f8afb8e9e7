#!/usr/bin/env bash
# Issue 41 goal 5 on a single-GPU NVIDIA machine: the observer's CPU per mode, this
# code against an older copy, alternating on one machine instance, then where it goes.
# Usage, from the repo root:  bash benchmarks/device_observer_ab.sh OUTDIR ROOT OLDSRC
# ROOT: the XSched install; OLDSRC: a copy of the code before, with this
# benchmarks/dashboard_cpu.py copied in (so both print alike). In order:
#   1. benchmarks/poll_costs.py beside a running `intensive` (NVML calls taken apart);
#   2. benchmarks/dashboard_cpu.py (intensive, NVML, 20 s) per mode: old, new, old,
#      new; natively once more with per-process GPU queries every 5 s;
#   3. benchmarks/dashboard_breakdown.py in an XSched and an MPS phase.
# OUTDIR/progress.txt says where it is; OUTDIR/done marks the end.
set -u
R=${1:?outdir}; XS=${2:?xsched root}; OLD=${3:?old source}
mkdir -p "$R"
source "$(dirname "$0")/device_lib.sh"
say() { echo "$(date +%T) $*" >> "$R/progress.txt"; }
D="python3 benchmarks/dashboard_cpu.py --scenario intensive --telemetry nvml --device cuda:0 --seconds 20"
say "1: poll costs beside a running intensive"
$X run intensive --headless --duration 40 --device cuda:0 --telemetry off > "$R/load.log" 2>&1 &
LOAD=$!
sleep 25
run polls-busy.txt python3 benchmarks/poll_costs.py --nvml --polls 300
wait $LOAD
say "2: old against new, per mode"
for i in 1 2; do
  for m in native mps xsched; do
    extra=""; [ $m = xsched ] && extra="--xsched $XS"
    (cd "$OLD" && PYTHONPATH=$OLD:${PYTHONPATH#*:} run "dash-$m-old-$i.txt" $D --mode $m $extra)
    run "dash-$m-new-$i.txt" $D --mode $m $extra
  done
done
run dash-native-new-proc5.txt $D --proc-interval 5
say "3: breakdowns"
run breakdown-xsched.txt python3 benchmarks/dashboard_breakdown.py intensive --seconds 30 \
  --telemetry nvml --device cuda:0 --xsched "$XS"
run breakdown-mps.txt python3 benchmarks/dashboard_breakdown.py intensive --seconds 30 \
  --telemetry nvml --device cuda:0 --mode mps
say "done"
touch "$R/done"
