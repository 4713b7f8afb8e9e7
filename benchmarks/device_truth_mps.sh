#!/usr/bin/env bash
# Issues "numbers you can act on" and "MPS beside native and XSched", on a GPU machine.
# Usage, from the repo root:
#   bash benchmarks/device_truth_mps.sh compare OUTDIR XSCHED_ROOT [SECONDS] [REPEATS]
#   bash benchmarks/device_truth_mps.sh faults  OUTDIR XSCHED_ROOT
# compare: `xwatch compare intensive --modes native,mps,xsched --repeat N`, interleaved.
# faults:  the leak run (XSched's lib on the user's LD_LIBRARY_PATH, XSCHED_* set) must
#          give a clean native phase; a workload that forces the shim into a native
#          phase must fail it; the MPS control daemon SIGKILLed mid-phase must fail the
#          phase (exit 1); xwatch SIGKILLed mid MPS phase must leave nothing behind.
# After every run: `ps` for workers, xservers and MPS daemons/servers left behind.
set -u
what=${1:?compare|faults}; R=${2:?outdir}; XS=$(realpath "${3:?xsched root}")
S=${4:-15}; N=${5:-3}
mkdir -p "$R"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
X="python3 -m xwatch"
left() { echo "--- left behind after $1:" >> "$R/leftovers.txt"
         ps -eo pid,args | grep -E "xwatch.core.engine|bin/xserver|nvidia-cuda-mps" \
           | grep -v grep >> "$R/leftovers.txt"; }
run() { local log=$1; shift; echo "\$ $*" >> "$R/commands.txt"; local t0=$SECONDS
        "$@" > "$R/$log" 2>&1; local rc=$?; echo "exit $rc after $((SECONDS - t0)) s" >> "$R/$log"
        echo "  -> exit $rc, $((SECONDS - t0)) s ($log)" >> "$R/commands.txt"; left "$log"; }
nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv > "$R/gpu.txt" 2>&1
if [ "$what" = compare ]; then
  run compare.log $X compare intensive --modes native,mps,xsched --repeat "$N" \
      --duration "$S" --device cuda:0 --telemetry nvml --xsched "$XS" --export "$R/compare"
  python3 benchmarks/aa_check.py "$R/compare/snapshot.json" > "$R/aa-native.txt" 2>&1
  rm -f "$R/compare/events.csv.gz"
  exit 0
fi
# 1. the leak: XSched's lib on LD_LIBRARY_PATH, as XSched's README tells users to do
run leak.log env LD_LIBRARY_PATH="$XS/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    XSCHED_SCHEDULER=GLB XSCHED_AUTO_XQUEUE=ON \
    $X run intensive --headless --duration "$S" --device cuda:0 --telemetry nvml --export "$R/leak"
# 2. a workload that forces the shim in (its own LD_PRELOAD): the native phase must fail
sed "s#@SHIM@#$XS/lib/libshimcuda.so#" benchmarks/scenarios/forced-shim.toml > "$R/forced-shim.toml"
run forced.log $X run "$R/forced-shim.toml" --headless --duration "$S" --device cuda:0 \
    --telemetry nvml --export "$R/forced"
# 3. the MPS control daemon SIGKILLed mid-phase
( $X run intensive --headless --mode mps --duration 60 --device cuda:0 --telemetry nvml \
    --export "$R/mps-kill" > "$R/mps-kill.log" 2>&1; echo "exit $?" >> "$R/mps-kill.log" ) &
for i in $(seq 1 90); do sleep 1; grep -q "n=" "$R/mps-kill.log" 2>/dev/null && break; done
sleep 5; ps -eo pid,args | grep -E "nvidia-cuda-mps" | grep -v grep > "$R/mps-kill-before.txt"
pkill -9 -f "nvidia-cuda-mps-control -f"; wait; left mps-kill
# 4. xwatch itself SIGKILLed mid MPS phase
( exec $X run intensive --headless --mode mps --duration 60 --device cuda:0 --telemetry nvml \
    > "$R/mps-sigkill.log" 2>&1 ) & XP=$!
for i in $(seq 1 90); do sleep 1; grep -q "n=" "$R/mps-sigkill.log" 2>/dev/null && break; done
sleep 3; kill -9 $XP; wait $XP 2>/dev/null; sleep 5; left "xwatch SIGKILL in an MPS phase"
# 5. a short MPS run with the default client priorities, for the verdicts
run mps.log $X run intensive --headless --mode mps --duration "$S" --device cuda:0 \
    --telemetry nvml --export "$R/mps"
for d in leak forced mps-kill mps; do rm -f "$R/$d/events.csv.gz"; done
