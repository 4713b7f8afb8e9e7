#!/usr/bin/env bash
# XSched explained, on a GPU machine, against a real XSched install the user points
# at (this repository never builds or ships XSched). See docs/results/.
# Usage, from the repo root (paths absolute or relative to the repo root):
#   bash benchmarks/device_explain.sh PART OUTDIR XSCHED_UPSTREAM XSCHED_WORKING [EXAMPLE_APP]
# PART 1: doctor, preflight on upstream, yardstick vs xwatch, calibrate, default stream
# PART 2: compare, sweep, xserver killed mid-phase, live controls, XSched's example app
set -u
PART=${1:?part}; R=${2:?outdir}; UP=$(realpath "${3:?upstream root}")
PA=$(realpath "${4:?working root}"); APP=${5:+$(realpath "$5")}
mkdir -p "$R"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
X="python3 -m xwatch"
run() { local log=$1; shift; echo "\$ $*" >> "$R/commands.txt"; local t0=$SECONDS
        "$@" > "$R/$log" 2>&1; local rc=$?; echo "exit $rc after $((SECONDS - t0)) s" >> "$R/$log"
        echo "  -> exit $rc, $((SECONDS - t0)) s ($log)" >> "$R/commands.txt"; }
leftovers() { ps -eo pid,args | grep -E "xwatch.core.engine|bin/xserver|/app( |$)" | grep -v grep; }
if [ "$PART" = 1 ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv > "$R/nvidia-smi.txt" 2>&1
  python3 -c "import torch,torchvision;print(torch.__version__,torchvision.__version__,torch.version.cuda)" > "$R/versions.txt" 2>&1
  [ -n "${SKIP_UPSTREAM:-}" ] || run doctor-upstream.txt $X doctor --xsched "$UP"
  run doctor-working.txt $X doctor --xsched "$PA"
  [ -n "${SKIP_UPSTREAM:-}" ] || run upstream-preflight.log $X run intensive --headless --mode xsched --xsched "$UP" --duration 30 --device cuda:0 --export "$R/upstream-preflight"
  run yardstick-alone.log python3 benchmarks/yardstick.py --seconds 30
  run xwatch-alone.log $X run benchmarks/scenarios/high-alone.toml --headless --duration 30 --device cuda:0 --export "$R/xwatch-alone"
  run calibrate.log $X calibrate intensive --xsched "$PA" --duration 25 --device cuda:0 --export "$R/calibrate"
  run default-stream.log $X run benchmarks/scenarios/intensive-default-stream.toml --headless --mode xsched --xsched "$PA" --duration 20 --device cuda:0 --export "$R/default-stream"
else
  run compare.log $X compare intensive --xsched "$PA" --duration 25 --device cuda:0 --export "$R/compare"
  run sweep.log $X sweep intensive --xsched "$PA" --set low.threshold=1,4 --set low.batch_size=1,2 --duration 20 --device cuda:0 --export "$R/sweep"
  # xserver killed (SIGKILL) 25 s into an XSched phase planned for 60 s
  ( $X run intensive --headless --mode xsched --xsched "$PA" --duration 60 --device cuda:0 --export "$R/xserver-kill" > "$R/xserver-kill.log" 2>&1; echo "exit $?" >> "$R/xserver-kill.log" ) &
  XW=$!
  for _ in $(seq 1 600); do P=$(pgrep -f "$PA/bin/xserver" | head -1); [ -n "$P" ] && break; sleep 0.2; done
  # wait until both workloads report requests, then 10 s more
  for _ in $(seq 1 300); do grep -q "low running n=" "$R/xserver-kill.log" 2>/dev/null && break; sleep 0.5; done
  sleep 10; echo "killing xserver pid $P at $(date +%T.%N)" >> "$R/xserver-kill.txt"; kill -9 "$P"
  wait $XW; echo "xwatch exited $(date +%T.%N)" >> "$R/xserver-kill.txt"
  sleep 1; echo "left behind:" >> "$R/xserver-kill.txt"; leftovers >> "$R/xserver-kill.txt"
  run live-controls.log python3 benchmarks/live_controls.py intensive --xsched "$PA" --device cuda:0
  if [ -n "$APP" ]; then
    cat > "$R/xsched-example.toml" <<TOML
name = "xsched-example"
description = "XSched's examples/Linux/1_transparent_sched app (vector adds, printf), twice"
duration_s = 20
[[workload]]
name = "high"
priority = "high"
command = ["$APP"]
regex = 'completed in (?P<latency_ms>\\d+) ms'
[[workload]]
name = "low"
priority = "low"
command = ["$APP"]
regex = 'completed in (?P<latency_ms>\\d+) ms'
TOML
    sed 's/^regex = /stdout = "pipe"\nregex = /' "$R/xsched-example.toml" > "$R/xsched-example-pipe.toml"
    run example-upstream.log $X compare "$R/xsched-example.toml" --xsched "$UP" --export "$R/example-upstream"
    run example-pipe.log $X run "$R/xsched-example-pipe.toml" --headless --export "$R/example-pipe-native"
  fi
fi
echo "left behind after part $PART:" > "$R/leftovers-$PART.txt"; leftovers >> "$R/leftovers-$PART.txt"
