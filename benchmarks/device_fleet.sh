#!/usr/bin/env bash
# Sixteen real workloads on the one GPU a single-GPU machine has (a machine with eight
# GPUs runs device_multigpu.sh with GPUS=0,...,7 instead). Usage, from the repo root:
#   bash benchmarks/device_fleet.sh OUTDIR
# 1. the dashboard on benchmarks/scenarios/sixteen-on-one.toml (8x ResNet-18 b1 at
#    20 req/s + 8x ResNet-50 b64 back to back), NVML: its own CPU once every workload
#    runs (benchmarks/dashboard_cpu.py), and SVG screenshots at 200x60 and 80x24
#    (benchmarks/dashboard_screenshot.py);
# 2. the same headless for 20 s with /metrics scraped mid-run;
# 3. what was left behind after each.
set -u
R=${1:?outdir}; mkdir -p "$R"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
S=benchmarks/scenarios/sixteen-on-one.toml
leftovers() { ps -eo pid,args | grep -E "xwatch.core.engine|bin/xserver|nvidia-cuda-mps" | grep -v grep; }
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv > "$R/nvidia-smi.txt" 2>&1
python3 benchmarks/dashboard_cpu.py --scenario $S --telemetry nvml --settle 90 --seconds 30 > "$R/dashboard-cpu.txt" 2>&1
echo "left behind after dashboard_cpu:" >> "$R/leftovers.txt"; leftovers >> "$R/leftovers.txt"
python3 benchmarks/dashboard_screenshot.py $S "$R/sixteen-200x60.svg" --size 200x60 --telemetry nvml --seconds 50 > "$R/dashboard-200x60.txt" 2>&1
echo "left behind after the dashboard (200x60):" >> "$R/leftovers.txt"; leftovers >> "$R/leftovers.txt"
python3 benchmarks/dashboard_screenshot.py $S "$R/sixteen-80x24.svg" --size 80x24 --telemetry nvml --seconds 35 > "$R/dashboard-80x24.txt" 2>&1
echo "left behind after the dashboard (80x24):" >> "$R/leftovers.txt"; leftovers >> "$R/leftovers.txt"
( sleep 25; python3 -c "import urllib.request,sys;sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:9400/metrics',timeout=3).read().decode())" > "$R/scrape.txt" 2>&1 ) &
python3 -m xwatch run $S --headless --duration 20 --telemetry nvml --metrics-port 9400 --no-keep --export "$R/headless" > "$R/headless.log" 2>&1
echo "exit $?" >> "$R/headless.log"
wait
sleep 1; echo "left behind after headless:" >> "$R/leftovers.txt"; leftovers >> "$R/leftovers.txt"
