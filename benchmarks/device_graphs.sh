#!/usr/bin/env bash
# CUDA graphs under XSched, on a single-GPU NVIDIA machine. Usage, from the repo root:
#   bash benchmarks/device_graphs.sh OUTDIR XSCHED_ROOT [SECONDS]
# 1. `xwatch doctor` (its preflight now includes a captured-and-replayed CUDA graph);
# 2. the graphed LLM decoder beside training, native then XSched, with the preflight
#    (expected: the graph probe fails the XSched phase before the models load);
# 3. the same with --no-preflight (what the real workloads do under XSched).
# What was left behind after each step goes to OUTDIR/leftovers.txt.
set -u
R=${1:?outdir}; XS=${2:?xsched root}; S=${3:-15}
mkdir -p "$R"
source "$(dirname "$0")/device_lib.sh"
SC=benchmarks/scenarios/llm-graphed.toml
run doctor.log $X doctor --xsched "$XS"
run graphed-preflight.log timeout 400 $X compare "$SC" --modes native,xsched --repeat 1 \
  --duration "$S" --device cuda:0 --telemetry nvml --xsched "$XS" --export "$R/graphed-preflight"
run graphed-no-preflight.log timeout 400 $X compare "$SC" --modes native,xsched --repeat 1 \
  --duration "$S" --device cuda:0 --telemetry nvml --xsched "$XS" --no-preflight \
  --export "$R/graphed-no-preflight"
rm -f "$R"/*/events.csv.gz "$R"/*/report.html
