#!/usr/bin/env bash
# The observer effect with intervals (issue "numbers you can act on"), and LOW out of
# GPU memory (the fault matrix's GPU row). From the repo root:
#   bash benchmarks/device_observer_effect.sh OUTDIR [SECONDS] [REPEATS]
set -u
R=${1:?outdir}; S=${2:-15}; N=${3:-3}
mkdir -p "$R"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
X="python3 -m xwatch run benchmarks/scenarios/intensive-normal-stream.toml --headless --device cuda:0 --duration $S"
for i in $(seq 1 "$N"); do  # interleaved: drift hits every variant alike
  python3 benchmarks/yardstick.py --with-low --seconds "$S" --out "$R/yard-$i.json" >> "$R/yardstick.txt" 2>&1
  $X --telemetry off --export "$R/off-$i" > "$R/off-$i.log" 2>&1
  $X --telemetry nvml --export "$R/nvml-$i" > "$R/nvml-$i.log" 2>&1
  rm -f "$R"/off-$i/events.csv.gz "$R"/nvml-$i/events.csv.gz "$R"/*-$i/report.html
done
python3 benchmarks/observer_effect.py "$R" > "$R/observer-effect.txt" 2>&1
python3 -m xwatch run benchmarks/scenarios/low-oom.toml --headless --device cuda:0 \
    --telemetry nvml --export "$R/oom" > "$R/oom.log" 2>&1; echo "exit $?" >> "$R/oom.log"
rm -f "$R/oom/events.csv.gz" "$R/oom/report.html"
ps -eo pid,args | grep -E "xwatch.core.engine|yardstick" | grep -v grep > "$R/leftovers.txt"
