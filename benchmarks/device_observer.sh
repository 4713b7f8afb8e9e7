#!/usr/bin/env bash
# The observer's cost on a GPU machine (issue "The observer must cost less than what
# it watches"): dashboard CPU on `intensive` natively and in an XSched phase (NVML
# telemetry, /xqueues polled at the scenario's rate), per thread, with cProfile of the
# event loop's thread; ingest vs the bare loop; engagement through the same client.
# Usage, from the repo root: bash benchmarks/device_observer.sh OUTDIR XSCHED_ROOT [SECONDS]
set -u
R=${1:?outdir}; XS=$(realpath "${2:?xsched root}"); S=${3:-30}
mkdir -p "$R"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
run() { local log=$1; shift; echo "\$ $*" >> "$R/commands.txt"; local t0=$SECONDS
        "$@" > "$R/$log" 2>&1; local rc=$?; echo "exit $rc after $((SECONDS - t0)) s" >> "$R/$log"
        echo "  -> exit $rc, $((SECONDS - t0)) s ($log)" >> "$R/commands.txt"; }
D="python3 benchmarks/dashboard_cpu.py --scenario intensive --telemetry nvml --device cuda:0 --seconds $S"
nproc > "$R/machine.txt"; lscpu | grep -E "Model name|MHz" >> "$R/machine.txt"
run dash-native.txt $D
run dash-native-2.txt $D
run dash-xsched.txt $D --mode xsched --xsched "$XS"
run dash-xsched-2.txt $D --mode xsched --xsched "$XS"
run dash-native-profile.txt $D --profile "$R/dash-native.pstats"
run dash-xsched-profile.txt $D --mode xsched --xsched "$XS" --profile "$R/dash-xsched.pstats"
run ingest.txt python3 benchmarks/ingest.py --events 300000
run xsched-run.log python3 -m xwatch run intensive --headless --mode xsched --xsched "$XS" --duration 15 --device cuda:0 --telemetry nvml --export "$R/xsched-run"
ps -eo pid,args | grep -E "xwatch.core.engine|bin/xserver" | grep -v grep > "$R/leftovers.txt"
