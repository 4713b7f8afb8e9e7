#!/usr/bin/env bash
# Everything run on the lent H100 in one call (see docs/results/h100.md).
# Usage on the GPU machine, from the repo root: bash benchmarks/device_run.sh OUTDIR
set -u
R=${1:?outdir}
mkdir -p "$R"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
run() { echo "\$ $*" ; "$@"; echo "exit $?"; }
nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv > "$R/nvidia-smi.txt" 2>&1
python3 -c "import torch,torchvision,transformers,psutil,pynvml;print(torch.__version__,torchvision.__version__,transformers.__version__)" > "$R/versions.txt" 2>&1
run python3 -m xwatch doctor > "$R/doctor.txt" 2>&1
run python3 -m xwatch run intensive --headless --duration 60 --device cuda:0 --export "$R/intensive" > "$R/intensive.log" 2>&1
run python3 -m xwatch run benchmarks/scenarios/high-alone.toml --headless --duration 30 --device cuda:0 --export "$R/high-alone" > "$R/high-alone.log" 2>&1
run python3 -m xwatch run benchmarks/scenarios/intensive-default-stream.toml --headless --duration 30 --device cuda:0 --export "$R/default-stream" > "$R/default-stream.log" 2>&1
run python3 -m xwatch run standard --headless --duration 30 --device cuda:0 --export "$R/standard" > "$R/standard.log" 2>&1
run python3 -m xwatch run bert --headless --device cuda:0 --export "$R/bert" > "$R/bert.log" 2>&1
run python3 benchmarks/telemetry_poll.py --backend nvml --gpu-load > "$R/nvml_poll.txt" 2>&1
run python3 benchmarks/worker_overhead.py > "$R/worker_overhead.txt" 2>&1
ps -ef | grep -c "[x]watch.core.worker" > "$R/leftover_workers.txt"
