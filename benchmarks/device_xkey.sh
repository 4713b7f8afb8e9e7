#!/usr/bin/env bash
# Issue 41 on a single-GPU NVIDIA machine: the x key (native -> XSched) with the XSched
# preflight beside the load, old against new on one instance, and a spaced /xqueues
# poll taken apart. Start it in its own session and collect OUTDIR while it runs.
# Usage, from the repo root:
#   bash benchmarks/device_xkey.sh OUTDIR ROOT [OLDSRC]
# ROOT: the XSched install; OLDSRC: a copy of the code before (its runs alternate with
# this one's). In order (STEPS picks):
#   1. benchmarks/restart.py intensive --modes native,xsched --toggles 3 (new: the
#      second x finds the preflight cached), and
#      --toggles 1 from OLDSRC, alternating, twice;
#   2. benchmarks/poll_costs.py --gap 0.1 --nvml (a spaced poll, step by step).
# OUTDIR/progress.txt says where it is; OUTDIR/done marks the end.
set -u
R=${1:?outdir}; XS=${2:?xsched root}; OLD=${3:-}
mkdir -p "$R"
source "$(dirname "$0")/device_lib.sh"
STEPS=${STEPS:-12}
K="python3 benchmarks/restart.py intensive --modes native,xsched --device cuda:0 --xsched $XS"
if [[ $STEPS == *1* ]]; then
  say "1: the x key"
  for i in 1 2; do
    run "xkey-new-$i.txt" $K --toggles 3 --json "$R/xkey-new-$i.json"
    if [ -n "$OLD" ]; then
      (cd "$OLD" && PYTHONPATH=$OLD:${PYTHONPATH#*:} run "xkey-old-$i.txt" $K --toggles 1 \
        --json "$R/xkey-old-$i.json")
    fi
  done
fi
if [[ $STEPS == *2* ]]; then
  say "2: a spaced poll"
  run polls-spaced.txt python3 benchmarks/poll_costs.py --polls 300 --gap 0.1 --nvml
fi
say "done"
touch "$R/done"
