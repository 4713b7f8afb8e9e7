#!/usr/bin/env bash
# Issue 41 goal 5 on a single-GPU NVIDIA machine: the observer's CPU per mode, this
# code against an older copy, alternating on one machine instance, then where it goes.
# Usage, from the repo root:  bash benchmarks/device_observer_ab.sh OUTDIR ROOT OLDSRC
# ROOT: the XSched install; OLDSRC: a copy of the code before, with this
# benchmarks/dashboard_cpu.py copied in (so both print alike). In order:
#   1. benchmarks/poll_costs.py beside a running `intensive` (NVML calls taken apart);
#   2. benchmarks/dashboard_cpu.py (intensive, NVML, 20 s) per mode: old, new, old,
#      new (XSched after WARM_XSCHED s); natively once more with per-process GPU queries
#      every 2 s (the old default; PROC2=0 leaves it out);
#   3. benchmarks/dashboard_breakdown.py in an XSched and an MPS phase.
# STEPS=23 leaves step 1 out, and so on; ROUNDS of step 2 (default 2); SECS sets the measured window (default 20 s;
# CPU times tick at 10 ms: 20 s resolves 0.05% of a core, 40 s 0.025%).
# OUTDIR/progress.txt says where it is; OUTDIR/done marks the end.
set -u
R=${1:?outdir}; XS=${2:?xsched root}; OLD=${3:?old source}
mkdir -p "$R"
source "$(dirname "$0")/device_lib.sh"
STEPS=${STEPS:-123}
D="python3 benchmarks/dashboard_cpu.py --scenario intensive --telemetry nvml --device cuda:0 --seconds ${SECS:-20}"
if [[ $STEPS == *1* ]]; then
say "1: poll costs beside a running intensive"
$X run intensive --headless --duration 40 --device cuda:0 --telemetry off > "$R/load.log" 2>&1 &
LOAD=$!
sleep 25
run polls-busy.txt python3 benchmarks/poll_costs.py --nvml --polls 300
wait $LOAD
fi
if [[ $STEPS == *2* ]]; then
say "2: old against new, per mode"
for i in $(seq 1 ${ROUNDS:-2}); do
  for m in native mps xsched; do
    # an XSched phase polls at its fast pace for the measurement's first 20 s: measured
    # after WARM_XSCHED s (default 25), the settled pace; the same for old and new
    extra=""; [ $m = xsched ] && extra="--xsched $XS --warm ${WARM_XSCHED:-25}"
    (cd "$OLD" && PYTHONPATH=$OLD:${PYTHONPATH#*:} run "dash-$m-old-$i.txt" $D --mode $m $extra)
    run "dash-$m-new-$i.txt" $D --mode $m $extra
  done
done
[ "${PROC2:-1}" = 1 ] && run dash-native-new-proc2.txt $D --proc-interval 2
fi
if [[ $STEPS == *3* ]]; then
say "3: breakdowns"
run breakdown-xsched.txt python3 benchmarks/dashboard_breakdown.py intensive --seconds 30 \
  --telemetry nvml --device cuda:0 --xsched "$XS" --warm ${WARM_XSCHED:-25}
run breakdown-mps.txt python3 benchmarks/dashboard_breakdown.py intensive --seconds 30 \
  --telemetry nvml --device cuda:0 --mode mps
run breakdown-native.txt python3 benchmarks/dashboard_breakdown.py intensive --seconds 30 \
  --telemetry nvml --device cuda:0
fi
say "done"
touch "$R/done"
