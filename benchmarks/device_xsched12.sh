#!/usr/bin/env bash
# XSched 1.2 (bd494cb) on a single-GPU NVIDIA machine, as a user installs it today.
# Usage, from the repo root (or a `git archive` copy of it):
#   bash benchmarks/device_xsched12.sh OUTDIR ROOT PART
# ROOT: the XSched install. PART 1: doctor; where 1.2's SIGSEGV happens
# (benchmarks/xsched_exit_crash.py, with the small CUDA program built here by nvcc);
# every policy set and read back against the real xserver (benchmarks/xsched_policies.py);
# the graphed decoder beside training in all three modes, then with the trainer at
# level 3 by TSG; intensive in all three modes. PART 2: harvest and the eager llm in all
# three modes; the dashboard in tmux: native, x, the XSched tab, k (the control screen
# with the install's policies; CFS set and read back), q. Every compare runs 3 paired runs.
set -u
R=${1:?outdir}; XS=${2:?xsched root}; PART=${3:-1}
mkdir -p "$R"
source "$(dirname "$0")/device_lib.sh"
S=${S:-15}; N=${N:-3}
XA=(--xsched "$XS")
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', \
transformers.__version__)" > "$R/versions.txt" 2>&1
grep XSched_VERSION "$XS/lib/cmake/XSched/XSchedConfig.cmake" >> "$R/versions.txt"
cmp() { run "$1.log" $X compare "$2" --modes "$3" --repeat "$N" --duration "$S" --device cuda:0 \
          --telemetry nvml "${XA[@]}" --export "$R/$1"; }
if [ "$PART" = 1 ]; then
  run doctor.txt $X doctor --xsched "$XS"
  nvcc -O2 -arch=sm_90 -o /tmp/stream_loop benchmarks/xsched_repro/stream_loop.cu \
    > "$R/nvcc.log" 2>&1
  run exit_crash.txt python3 benchmarks/xsched_exit_crash.py "$XS" "$R/crash" 20 2 /tmp/stream_loop
  run policies.txt python3 benchmarks/xsched_policies.py "$XS" --spup
  cmp llm-graphed benchmarks/scenarios/llm-graphed.toml native,mps,xsched
  cmp llm-graphed-lv3tsg benchmarks/scenarios/llm-graphed-lv3tsg.toml native,xsched
  S=10 cmp intensive intensive native,mps,xsched
else
  ONLY=par run exit_crash_par.txt python3 benchmarks/xsched_exit_crash.py "$XS" "$R/crash-par" 16 2
  cmp harvest harvest native,mps,xsched
  cmp llm llm native,mps,xsched
  tmux new -d -s xw -x 120 -y 40 "$X run intensive --device cuda:0 --telemetry nvml \
    --duration 20 --no-keep --xsched $XS --export $R/dash; echo EXIT=\$? > $R/dash-exit.txt"
  sleep 45; tmux capture-pane -p -t xw > "$R/tmux-native.txt"
  tmux send-keys -t xw x; sleep 60; tmux capture-pane -p -t xw > "$R/tmux-xsched.txt"
  tmux send-keys -t xw 3; sleep 3; tmux capture-pane -p -t xw > "$R/tmux-xsched-tab.txt"
  tmux send-keys -t xw r; sleep 40  # a fresh XSched phase to control live
  tmux send-keys -t xw k; sleep 2; tmux capture-pane -p -t xw > "$R/tmux-k.txt"
  # the policy select is the 8th focusable control: open it, move to CFS, pick, Set policy
  for _ in 1 2 3 4 5 6 7; do tmux send-keys -t xw Tab; sleep 0.3; done
  tmux send-keys -t xw Enter; sleep 1; tmux capture-pane -p -t xw > "$R/tmux-k-select.txt"
  for _ in 1 2 3 4 5 6 7 8; do tmux send-keys -t xw Down; sleep 0.2; done
  tmux send-keys -t xw Enter; sleep 0.5; tmux send-keys -t xw Tab; sleep 0.3
  tmux send-keys -t xw Enter; sleep 3; tmux capture-pane -p -t xw > "$R/tmux-k-set.txt"
  tmux send-keys -t xw 4; sleep 2; tmux capture-pane -p -t xw > "$R/tmux-logs.txt"
  tmux send-keys -t xw s; sleep 5; tmux send-keys -t xw q; sleep 15
  tmux kill-server 2>/dev/null; left dashboard
fi
rm -f "$R"/*/events.csv.gz
echo "part $PART done" >> "$R/commands.txt"
