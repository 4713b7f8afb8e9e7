#!/usr/bin/env bash
# Every GPU in the answer, on a two-GPU machine (nvidia-h100-x2): the widths of HIGH's
# P50 and P99 intervals at the same wall time, one GPU against two (issue 51, goal 6).
# Usage, from the repo root:  bash benchmarks/device_gpus_answer.sh OUTDIR [REPEAT]
# Runs `compare intensive --modes native,mps --repeat REPEAT` (default 3) on cuda:0,
# then the same with --gpus 0,1 (each GPU its copies, every copy in the answer), and
# prints the widths, their ratio and the prediction (benchmarks/gpu_width_sim.py).
# Read: OUTDIR/widths.txt (ratio column against 'predicted'; the goal is <= 0.75),
# OUTDIR/one.log and OUTDIR/two.log (the answers: "3 runs x 2 GPUs", any "Finding:"
# line naming a GPU), OUTDIR/leftovers.txt (must list nothing).
set -u
R=${1:?outdir}; K=${2:-3}
mkdir -p "$R"
. benchmarks/device_lib.sh
nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv >> "$R/gpu.txt" 2>&1
say "one GPU"
run one.log $X compare intensive --device cuda:0 --modes native,mps --repeat "$K" --duration "${DURATION:-10}" \
    --telemetry nvml --export "$R/one"
say "two GPUs"
run two.log $X compare intensive --gpus 0,1 --modes native,mps --repeat "$K" --duration "${DURATION:-10}" \
    --telemetry nvml --export "$R/two"
say "widths"
run widths.txt python3 benchmarks/gpu_width_sim.py --measured "$R/one/snapshot.json" \
    "$R/two/snapshot.json"
python3 benchmarks/gpu_width_sim.py --runs "$K" --sims 500 > "$R/predicted.txt" 2>&1
say "done"
