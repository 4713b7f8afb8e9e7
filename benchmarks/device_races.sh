#!/usr/bin/env bash
# Races over the box on a 2-GPU NVIDIA machine (nvidia-h100-x2), in about 9 minutes:
#   1. llm-box:  advise llm-graphed-itl --gpus 0,1 (candidates side by side, rotated)
#   2. llm-one:  the same race on cuda:0 alone (one candidate a phase): time to decision,
#                runs and rounds per minute against step 1
#   3. int-box:  advise intensive --modes native,mps,xsched on every GPU (xsched only
#                with XSCHED_ROOT): decided, or exactly why not
#   4. aa:       the neighbour A/A (benchmarks/neighbours_aa.py): intensive natively on
#                GPU 0 alone vs beside a busy GPU 1, interleaved rounds
# Usage, from the repo root:
#   bash benchmarks/device_races.sh OUT [XSCHED_ROOT] ["llm-box llm-one int-box aa"]
# Bounds (environment, defaults fit ~9 min): LLM_DURATION=10 s runs and LLM_BUDGET=2
# min for steps 1-2 (native and MPS only: 5 candidates), INT_DURATION=5 s and
# INT_BUDGET=2 min for step 3, AA_ROUNDS=4 rounds of AA_DURATION=8 s for step 4. Each
# step also has a hard time limit (timeout, SIGTERM: xwatch stops its workloads and
# still exports). What the bounds cost: a 2-minute race seldom decides (the issue's
# one-GPU race ran 7.7 min undecided); steps 1-2 then compare rounds, runs and
# interval widths reached in the same budget, and OUT/summary.txt says which.
# Dry run without GPUs (fake NVML and MPS tool, command workloads): GPUS_N=2 TEL=off and
# LLM_SCEN / INT_SCEN / AA_SCEN naming small scenarios (see docs/gpus-races.md).
# Output: OUT/summary.txt (read first), OUT/*.log, OUT/<step>/snapshot.json + report,
# OUT/aa/aa.txt, OUT/commands.txt (commands, exit codes, seconds), OUT/leftovers.txt.
set -u
R=${1:?outdir}; XS=${2:-}; STEPS=${3:-llm-box llm-one int-box aa}
mkdir -p "$R"
. benchmarks/device_lib.sh
LLM_DURATION=${LLM_DURATION:-10}; LLM_BUDGET=${LLM_BUDGET:-2}
INT_DURATION=${INT_DURATION:-5}; INT_BUDGET=${INT_BUDGET:-2}
AA_ROUNDS=${AA_ROUNDS:-4}; AA_DURATION=${AA_DURATION:-8}; TEL=${TEL:-nvml}
N=${GPUS_N:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
ALL=$(seq -s, 0 $(( (N > 0 ? N : 1) - 1 )))
echo "gpus: $N ($ALL); steps: $STEPS; xsched: ${XS:-none}" > "$R/setup.txt"
LLM=${LLM_SCEN:-benchmarks/scenarios/llm-graphed-itl.toml}; INT=${INT_SCEN:-intensive}
AA=${AA_SCEN:-intensive}  # (the *_SCEN overrides: dry runs on fake GPUs)
INT_MODES=native,mps${XS:+,xsched}
for step in $STEPS; do
  say "start $step"
  case $step in
    llm-box) run llm-box.log timeout -k 20 170 $X advise $LLM --gpus 0,1 --modes native,mps \
               --duration "$LLM_DURATION" --budget "$LLM_BUDGET" --telemetry "$TEL" \
               --export "$R/llm-box" ;;
    llm-one) run llm-one.log timeout -k 20 170 $X advise $LLM --device cuda:0 \
               --modes native,mps --duration "$LLM_DURATION" --budget "$LLM_BUDGET" \
               --telemetry "$TEL" --export "$R/llm-one" ;;
    int-box) run int-box.log timeout -k 20 170 $X advise "$INT" --gpus "$ALL" \
               --modes "$INT_MODES" ${XS:+--xsched "$XS"} --duration "$INT_DURATION" \
               --budget "$INT_BUDGET" --telemetry "$TEL" --export "$R/int-box" ;;
    aa) run aa.log timeout -k 20 120 python3 benchmarks/neighbours_aa.py "$R/aa" "$AA" \
          --gpus 0,1 --rounds "$AA_ROUNDS" --duration "$AA_DURATION" --telemetry "$TEL" ;;
    *) echo "unknown step $step" >> "$R/commands.txt" ;;
  esac
  say "end $step"
done
rm -f "$R"/*/events.csv.gz
python3 - "$R" > "$R/summary.txt" 2>&1 <<'EOF'
import json, sys
from pathlib import Path
R = Path(sys.argv[1])
seen = {}
for step in ("llm-box", "llm-one", "int-box"):
    f = R / step / "snapshot.json"
    if not f.exists():
        print(f"{step}: no snapshot (see {step}.log)")
        continue
    doc = json.loads(f.read_text())
    a = doc.get("advice") or {}
    phases = len(doc.get("phases", []))
    mins = (a.get("seconds") or 0) / 60
    runs = a.get("runs") or 0
    seen[step] = (a, mins, runs)
    print(f"{step}: decided={a.get('decided')} met={a.get('met')} "
          f"choice={(a.get('choice') or {}).get('label')} rounds={a.get('rounds')} "
          f"runs={runs} phases={phases} minutes={mins:.2f} "
          f"runs/min={runs / mins if mins else 0:.2f}")
    for c in a.get("candidates", []):
        s = c.get("slo_metric", {})
        print(f"   {c['label']:<28} runs={c['runs']} gpus={c.get('gpus')} "
              f"slo={s.get('estimate')} [{s.get('lo')}, {s.get('hi')}] {c['status']}")
    if a.get("undecided"):
        print(f"   {a['undecided']}")
if "llm-box" in seen and "llm-one" in seen:
    (ab, mb, rb), (ao, mo, ro) = seen["llm-box"], seen["llm-one"]
    if ab.get("decided") and ao.get("decided"):
        print(f"time to decision: box {mb:.2f} min vs one GPU {mo:.2f} min "
              f"(ratio {mb / mo:.2f}; goal <= 0.60)")
    else:
        print("time to decision: not both decided within the budget; runs per minute "
              f"box {rb / mb if mb else 0:.2f} vs one GPU {ro / mo if mo else 0:.2f}")
aa = R / "aa" / "aa.txt"
print(aa.read_text() if aa.exists() else "aa: no result (see aa.log)")
EOF
cat "$R/summary.txt"
