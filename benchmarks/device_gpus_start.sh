#!/usr/bin/env bash
# Issue 51 goal 5 on a machine with two or more NVIDIA GPUs: a phase on N GPUs starts as
# fast as on one (<= 5 s natively, <= 8 s under MPS, from the phase's start to its first
# measured second), with every copy forked where one GPU's copy would be.
# Usage, from the repo root (nvidia-h100-x2):
#   bash benchmarks/device_gpus_start.sh OUTDIR [PART] [GPUS]
# PART 1 (default): benchmarks/phase_start.py on intensive, native and MPS, 4 repeats of
# 5 s, on GPUS (default 0,1: a copy of every workload per GPU), then the one-GPU
# baseline (--device cuda:0) in the same call, on the same machine.
# PART 2: the same on GPUS with the fork server off (XWATCH_FORK_SERVER=0: every copy
# exec'd; what a phase on several GPUs cost before, when the gate waited for the copies
# of GPUs 1..N, which were exec'd).
# Read OUTDIR/two.txt and one.txt (PART 2: exec.txt): per mode, "copies started",
# "after each run's first phase: K of K copies forked", the GPUs line (each copy ran on
# the GPU it was pinned to) and the "goal:" line; commands.txt (exit codes) and
# leftovers.txt (nothing may be listed).
set -u
R=${1:?outdir}; PART=${2:-1}; GPUS=${3:-0,1}
mkdir -p "$R"
source "$(dirname "$0")/device_lib.sh"
nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv > "$R/nvidia-smi.txt" 2>&1
python3 -c "import msgspec, torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
  'gpus', torch.cuda.device_count())" > "$R/python.txt" 2>&1
PS="python3 benchmarks/phase_start.py intensive --modes native,mps --repeat 4 --duration 5"
if [ "$PART" = 1 ]; then
  say "two GPUs ($GPUS)"
  run two.txt $PS --gpus "$GPUS" --export "$R/two" --json "$R/two.json" -- --telemetry nvml
  say "one GPU"
  run one.txt $PS --device cuda:0 --export "$R/one" --json "$R/one.json" -- --telemetry nvml
else
  say "two GPUs ($GPUS), fork server off"
  run exec.txt env XWATCH_FORK_SERVER=0 $PS --gpus "$GPUS" --export "$R/exec" \
    --json "$R/exec.json" -- --telemetry nvml
fi
say done
