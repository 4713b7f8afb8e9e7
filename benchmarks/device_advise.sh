#!/usr/bin/env bash
# xwatch advise on a single-GPU NVIDIA machine, twice in a row (seeds 0 and 1), with
# what was left behind after each. Usage, from the repo root:
#   bash benchmarks/device_advise.sh OUTDIR [SECONDS] [BUDGET_MIN] [MODES] [XSCHED_ROOT]
set -u
R=${1:?outdir}; S=${2:-10}; B=${3:-4.5}; M=${4:-native,mps}; XS=${5:-}
mkdir -p "$R"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
X="python3 -m xwatch"
nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv > "$R/gpu.txt" 2>&1
for seed in 0 1; do
  t0=$SECONDS
  $X advise intensive --modes "$M" ${XS:+--xsched "$XS"} --duration "$S" --budget "$B" \
     --seed $seed --device cuda:0 --telemetry nvml --export "$R/advise-$seed" \
     > "$R/advise-$seed.log" 2>&1
  echo "exit $? after $((SECONDS - t0)) s" >> "$R/advise-$seed.log"
  echo "--- left behind after advise seed $seed:" >> "$R/leftovers.txt"
  ps -eo pid,stat,args | grep -E "xwatch.core.engine|nvidia-cuda-mps" | grep -v grep \
    >> "$R/leftovers.txt"
done
rm -f "$R"/*/events.csv.gz
