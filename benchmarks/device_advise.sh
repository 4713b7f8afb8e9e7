#!/usr/bin/env bash
# xwatch advise on a single-GPU NVIDIA machine, once per seed (default: seeds 0 and 1, in
# a row), with what was left behind after each. Usage, from the repo root:
#   bash benchmarks/device_advise.sh OUTDIR [SECONDS] [BUDGET_MIN] [MODES] [XSCHED_ROOT] [SEEDS]
# A 20-minute race of all three mechanisms takes a machine's call budget on its own: run
# one seed per machine, detached (benchmarks/device_detach.sh), e.g.
#   bash benchmarks/device_detach.sh start /tmp/job bash benchmarks/device_advise.sh \
#     /tmp/job/advise 10 20 native,mps,xsched ROOT 0
set -u
R=${1:?outdir}; S=${2:-10}; B=${3:-4.5}; M=${4:-native,mps}; XS=${5:-}; SEEDS=${6:-0 1}
mkdir -p "$R"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
X="python3 -m xwatch"
nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv > "$R/gpu.txt" 2>&1
for seed in $SEEDS; do
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
