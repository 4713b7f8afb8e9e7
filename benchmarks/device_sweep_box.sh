#!/usr/bin/env bash
# A sweep over the box on a 2-GPU NVIDIA machine (nvidia-h100-x2), in about 4 minutes:
#   1. box:  sweep intensive --gpus 0,1 --set low.mps.active_thread_percentage=100,50,25
#            --repeat 2 (settings side by side, one a GPU, rotated; native on both GPUs)
#   2. one:  the same sweep on cuda:0 alone (one setting a phase)
#   3. xs:   (with XSCHED_ROOT) sweep --gpus 0,1 --set low.threshold=2,8 under one xserver
# Usage, from the repo root:
#   bash benchmarks/device_sweep_box.sh OUT [XSCHED_ROOT] ["box one xs"]
# Bounds (environment): DURATION=8 s a phase, REPEAT=2. Each step has a hard time limit
# (timeout, SIGTERM: xwatch stops its workloads and still exports).
# Dry run without GPUs (fake NVML and MPS tool on PYTHONPATH and XWATCH_MPS_CONTROL): TEL=off,
# SCEN naming a small scenario with workloads high and low.
# Output: OUT/summary.txt (read first: each step's phases with their GPUs and settings,
# the answer's rows per setting, wall time), OUT/<step>.log, OUT/<step>/snapshot.json +
# report, OUT/commands.txt (commands, exit codes, seconds), OUT/leftovers.txt.
set -u
R=${1:?outdir}; XS=${2:-}; STEPS=${3:-box one${2:+ xs}}
mkdir -p "$R"
. benchmarks/device_lib.sh
DURATION=${DURATION:-8}; REPEAT=${REPEAT:-2}; TEL=${TEL:-nvml}; SCEN=${SCEN:-intensive}
SET="--set low.mps.active_thread_percentage=100,50,25"
for step in $STEPS; do
  say "start $step"
  case $step in
    box) run box.log timeout -k 20 150 $X sweep "$SCEN" --gpus 0,1 $SET --repeat "$REPEAT" \
           --duration "$DURATION" --telemetry "$TEL" --export "$R/box" ;;
    one) run one.log timeout -k 20 200 $X sweep "$SCEN" --device cuda:0 $SET \
           --repeat "$REPEAT" --duration "$DURATION" --telemetry "$TEL" --export "$R/one" ;;
    xs) run xs.log timeout -k 20 150 $X sweep "$SCEN" --gpus 0,1 --xsched "$XS" \
          --set low.threshold=2,8 --repeat "$REPEAT" --duration "$DURATION" \
          --telemetry "$TEL" --export "$R/xs" ;;
    *) echo "unknown step $step" >> "$R/commands.txt" ;;
  esac
  say "end $step"
done
rm -f "$R"/*/events.csv.gz
python3 - "$R" > "$R/summary.txt" 2>&1 <<'PY'
import json, sys
from pathlib import Path
R = Path(sys.argv[1])
for step in ("box", "one", "xs"):
    f = R / step / "snapshot.json"
    if not (R / f"{step}.log").exists():
        continue
    if not f.exists():
        print(f"== {step}: no snapshot (see {step}.log)")
        continue
    doc = json.loads(f.read_text())
    ph = doc["phases"]
    secs = sum(p.get("duration_s") or 0 for p in ph)
    print(f"== {step}: {len(ph)} phases, {secs:.0f} s measured")
    for p in ph:
        sv = p.get("setting_values") or {}
        where = sorted({w.get("gpu") for w in p["workloads"].values()}, key=str)
        print(f"  {p['name']:<10} {p['mode']:<7} {p['status']:<7} GPUs {where} "
              f"{p.get('setting', '')}" + (f" {sv}" if any('@' in k for k in sv) else ""))
    for a in doc.get("answer", []):
        if a["metric"] in ("P99", "samples/s"):
            print(f"  {a['step']}: {a['workload']} {a['metric']} {a['estimate']} "
                  f"[{a['lo']}, {a['hi']}] {a['way']} ({a['runs']} runs)")
PY
left end
