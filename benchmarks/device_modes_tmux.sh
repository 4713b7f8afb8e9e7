#!/usr/bin/env bash
# The three modes on a single-GPU machine with this sitting's code, headless and as a
# user sees the dashboard (tmux), against an XSched install the user points at.
# Usage, from the repo root:  bash benchmarks/device_modes_tmux.sh OUTDIR XSCHED_ROOT
# 1. compare intensive --modes native,xsched,mps (15 s each): engagement, numbers;
# 2. the dashboard in tmux at 80x24: native, then x (XSched), then m (MPS), then q,
#    a capture after each; what was left behind.
set -u
R=${1:?outdir}; XS=$(realpath "${2:?xsched root}"); mkdir -p "$R"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
X="python3 -m xwatch"
leftovers() { ps -eo pid,args | grep -E "xwatch.core.engine|bin/xserver|nvidia-cuda-mps" | grep -v grep; }
$X compare intensive --modes native,xsched,mps --duration 15 --device cuda:0 --telemetry nvml \
  --xsched "$XS" --export "$R/compare" > "$R/compare.log" 2>&1
echo "exit $?" >> "$R/compare.log"
echo "left behind after compare:" >> "$R/leftovers.txt"; leftovers >> "$R/leftovers.txt"
tmux new -d -s xw -x 80 -y 24 "$X run intensive --device cuda:0 --telemetry nvml --xsched $XS --duration 0 --no-keep; echo EXIT=\$? > $R/dashboard-exit.txt"
sleep 40; tmux capture-pane -p -t xw > "$R/tmux-native.txt"
tmux send-keys -t xw x; sleep 50; tmux capture-pane -p -t xw > "$R/tmux-xsched.txt"
tmux send-keys -t xw m; sleep 40; tmux capture-pane -p -t xw > "$R/tmux-mps.txt"
tmux send-keys -t xw q; sleep 20; tmux kill-server 2>/dev/null
echo "left behind after the dashboard:" >> "$R/leftovers.txt"; leftovers >> "$R/leftovers.txt"
