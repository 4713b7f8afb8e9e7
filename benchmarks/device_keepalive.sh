#!/usr/bin/env bash
# Issue 41 goal 5: does a kept-alive /xqueues poll read the real xserver as a fresh
# connection does, and what does it save? On a single-GPU NVIDIA machine.
# Usage, from the repo root:  bash benchmarks/device_keepalive.sh OUTDIR ROOT
# ROOT: the XSched install. Both steps run benchmarks/keepalive_probe.py beside
# `xwatch run intensive --mode xsched` (fresh connections, xwatch's default):
#   1. from the moment the xserver appears (through the preflight), every path
#      (fresh, kept, http.client);
#   2. 30 s into a 60 s phase (the workloads' queues), fresh against kept only.
# OUTDIR/progress.txt says where it is; OUTDIR/done marks the end.
set -u
R=${1:?outdir}; XS=${2:?xsched root}
mkdir -p "$R"
source "$(dirname "$0")/device_lib.sh"
STEPS=${STEPS:-12}
if [[ $STEPS == *1* ]]; then
say "1: every path, from the xserver's start"
$X run intensive --headless --mode xsched --duration 45 --device cuda:0 --telemetry nvml \
  --xsched "$XS" > "$R/probe-load.log" 2>&1 &
LOAD=$!
run probe.txt python3 benchmarks/keepalive_probe.py --seconds 40 --wait 90
wait $LOAD; echo "exit $?" >> "$R/probe-load.log"
fi
if [[ $STEPS == *2* ]]; then
say "2: fresh against kept, 30 s into a phase"
$X run intensive --headless --mode xsched --duration 60 --device cuda:0 --telemetry nvml \
  --xsched "$XS" --export "$R/probe2-run" > "$R/probe2-load.log" 2>&1 &
LOAD=$!
run probe2.txt python3 benchmarks/keepalive_probe.py --paths fresh,kept --delay 30 \
  --seconds 35 --wait 60
wait $LOAD; echo "exit $?" >> "$R/probe2-load.log"
gzip -f "$R"/probe2-run/snapshot.json 2>/dev/null
fi
say "done"
touch "$R/done"
