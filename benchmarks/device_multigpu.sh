#!/usr/bin/env bash
# Several GPUs and the Prometheus exporter, on a multi-GPU machine, against a real
# XSched install the user points at (this repository never builds or ships XSched).
# Usage, from the repo root:
#   bash benchmarks/device_multigpu.sh OUTDIR XSCHED_ROOT [GPUS] ["native xsched mps"]
# Runs intensive replicated onto GPUS (default 0,1) natively, then under XSched (one
# xserver for every copy), then under MPS, scraping /metrics during each run; where
# tmux is installed, the dashboard on every GPU captured at 200x60 and at 80x24 (the
# roll-up, then GPU 1 after `g`, then every GPU expanded after `e`); then the
# dashboard's own CPU on intensive under XSched with NVML (benchmarks/dashboard_cpu.py).
# After every step, what was left behind (workers, xserver, MPS daemons).
set -u
R=${1:?outdir}; XS=$(realpath "${2:?xsched root}"); GPUS=${3:-0,1}; MODES=${4:-native xsched}
mkdir -p "$R"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
X="python3 -m xwatch"
leftovers() { ps -eo pid,args | grep -E "xwatch.core.engine|bin/xserver|nvidia-cuda-mps" | grep -v grep; }
scrape() {  # scrape PORT every 5 s while xwatch runs; keep each scrape
  local port=$1 tag=$2 i=0
  sleep 3
  while pgrep -f "metrics-port $port" > /dev/null; do
    python3 -c "import urllib.request,sys;sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$port/metrics',timeout=3).read().decode())" > "$R/$tag-scrape-$i.txt" 2>/dev/null || rm -f "$R/$tag-scrape-$i.txt"
    i=$((i+1)); sleep 5
  done
}
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv > "$R/nvidia-smi.txt" 2>&1
for mode in $MODES; do
  port=$([ $mode = native ] && echo 9400 || echo 9401)
  scrape $port $mode &
  S=$!
  echo "\$ xwatch run intensive --headless --gpus $GPUS --mode $mode --xsched $XS --duration 25 --telemetry nvml --metrics-port $port --export $R/$mode" >> "$R/commands.txt"
  t0=$SECONDS
  $X run intensive --headless --gpus "$GPUS" --mode $mode --xsched "$XS" --duration 25 --telemetry nvml --metrics-port $port --export "$R/$mode" > "$R/$mode.log" 2>&1
  echo "exit $? after $((SECONDS - t0)) s" >> "$R/$mode.log"
  wait $S
  sleep 1; echo "left behind after $mode:" >> "$R/leftovers.txt"; leftovers >> "$R/leftovers.txt"
done
if command -v tmux > /dev/null && python3 -c "import textual" 2>/dev/null; then
  # the dashboard as a user sees it: 200x60, then 80x24, keys g (GPU 1) and e (expand)
  tmux new -d -s xw -x 200 -y 60 "$X run intensive --gpus $GPUS --telemetry nvml --duration 0 --no-keep"
  sleep 45; tmux capture-pane -p -t xw > "$R/tmux-200x60.txt"
  tmux resize-window -t xw -x 80 -y 24; sleep 3; tmux capture-pane -p -t xw > "$R/tmux-80x24.txt"
  tmux send-keys -t xw g g; sleep 5; tmux capture-pane -p -t xw > "$R/tmux-80x24-gpu1.txt"
  tmux resize-window -t xw -x 200 -y 60; tmux send-keys -t xw g e; sleep 5
  tmux capture-pane -p -t xw > "$R/tmux-200x60-expanded.txt"
  tmux send-keys -t xw q; sleep 15; tmux kill-server 2>/dev/null
  echo "left behind after the dashboard:" >> "$R/leftovers.txt"; leftovers >> "$R/leftovers.txt"
fi
if python3 -c "import textual" 2>/dev/null; then
  python3 benchmarks/dashboard_cpu.py --scenario intensive --telemetry nvml --xsched "$XS" --mode xsched --device cuda:0 --settle 40 --seconds 30 > "$R/dashboard-cpu-xsched.txt" 2>&1
  python3 benchmarks/dashboard_cpu.py --scenario intensive --telemetry nvml --device cuda:0 --settle 25 --seconds 30 > "$R/dashboard-cpu-native.txt" 2>&1
fi
echo "left behind at the end:" >> "$R/leftovers.txt"; leftovers >> "$R/leftovers.txt"
