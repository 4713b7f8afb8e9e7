# measures: every GPU busy in every race phase (issue 58 goal 1): box (advise SCEN --gpus ALL, each phase's candidates spread over every GPU, native beside MPS and XSched in split phases) against one (the same race on cuda:0 alone), each with the same short budget; summary.txt has each race's rounds, runs, phases, runs per minute and every phase's GPUs, and the ratio box/one (target >= 3 on 4 GPUs)
# takes: about 2 x (BUDGET + 1.5) min: 4 min at the defaults
# params: XS (the XSched install: XSched candidates too, as in the issue), SCEN (default benchmarks/gpu/scenarios/llm-graphed-itl.toml), D (seconds a run, default 10), BUDGET (minutes each race, default 1), BUDGET_ONE (minutes of the one-GPU race, default BUDGET: its runs a minute need no decision), STEPS (default "box one"), TEL (default nvml); dry runs on fake GPUs: GPUS_N, TEL=off and SCEN a small scenario with an [slo] and workloads high and low (SETS then names their keys)
XS=${XS:-}; STEPS=${STEPS:-box one}; TEL=${TEL:-nvml}; D=${D:-10}; BUDGET=${BUDGET:-1}; BUDGET_ONE=${BUDGET_ONE:-$BUDGET}
SCEN=${SCEN:-benchmarks/gpu/scenarios/llm-graphed-itl.toml}; LOW=${LOW:-trainer}
NG=${GPUS_N:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
ALL=$(seq -s, 0 $(( (NG > 0 ? NG : 1) - 1 )))
MODES=native,mps${XS:+,xsched}
SETS=(--set "$LOW.mps.active_thread_percentage=100,50")
[ -n "$XS" ] && SETS+=(--set "$LOW.threshold=2,8" --set "$LOW.batch_size=1,4")
echo "gpus: $NG ($ALL); modes $MODES; $D s runs; $BUDGET min each; xsched: ${XS:-none}" \
  > "$R/setup.txt"
LIM=$((BUDGET * 60 + 120))
for step in $STEPS; do
  say "start $step"
  case $step in
    box) run box.log timeout -k 20 $LIM $X advise "$SCEN" --gpus "$ALL" --modes "$MODES" \
           "${SETS[@]}" ${XS:+--xsched "$XS"} --duration "$D" --budget "$BUDGET" \
           --telemetry "$TEL" --export "$R/box" ;;
    one) run one.log timeout -k 20 $((BUDGET_ONE * 60 + 120)) $X advise "$SCEN" --device cuda:0 \
           --modes "$MODES" "${SETS[@]}" ${XS:+--xsched "$XS"} --duration "$D" --budget "$BUDGET_ONE" \
           --telemetry "$TEL" --export "$R/one" ;;
    *) echo "unknown step $step" >> "$R/commands.txt" ;;
  esac
  say "end $step"
done
rm -f "$R"/*/events.csv.gz
python3 - "$R" > "$R/summary.txt" 2>&1 <<'PY'
import json, sys
from pathlib import Path
R = Path(sys.argv[1])
rate = {}
for step in ("box", "one"):
    f = R / step / "snapshot.json"
    if not f.exists():
        print(f"{step}: no snapshot (see {step}.log)")
        continue
    doc = json.loads(f.read_text())
    a = doc.get("advice") or {}
    mins = (a.get("seconds") or 0) / 60
    runs = a.get("runs") or 0
    rate[step] = runs / mins if mins else 0.0
    print(f"{step}: decided={a.get('decided')} rounds={a.get('rounds')} runs={runs} "
          f"phases={len(doc.get('phases', []))} minutes={mins:.2f} runs/min={rate[step]:.2f}")
    for p in doc.get("phases", []):
        gpus = sorted({w.get("gpu") for w in p.get("workloads", {}).values()} - {None})
        print(f"   {p['name']:<22} {p['status']:<7} GPUs {gpus} {p.get('candidate', '')}")
if rate.get("one"):
    print(f"runs/min box {rate.get('box', 0):.2f} vs one GPU {rate['one']:.2f}: "
          f"{rate.get('box', 0) / rate['one']:.2f}x (target >= 3 on 4 GPUs)")
PY
