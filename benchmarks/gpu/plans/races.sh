# measures: races over the box on two GPUs: llm-box (advise llm-graphed-itl --gpus 0,1, candidates side by side, rotated) against llm-one (the same race on cuda:0 alone) in time to decision, runs and rounds per minute; int-box (advise intensive, every mode on every GPU, xsched with XS): decided, or exactly why not; aa (benchmarks/stats/neighbours_aa.py: intensive on GPU 0 alone vs beside a busy GPU 1). Read summary.txt first, then setup.txt (the bounds in force)
# takes: about 12 min (15 with XS): run it with `device.sh detach`
# params: XS (the XSched install: int-box races xsched too), STEPS (default "llm-box llm-one int-box aa"), LLM_DURATION (default 10), LLM_BUDGET (minutes, default 2), INT_DURATION (default 20: raised to what advise accepts), INT_BUDGET (minutes, default: two rounds' estimate), AA_ROUNDS (default 4), AA_DURATION (default 8), TEL (default nvml); dry runs on fake GPUs: GPUS_N, LLM_SCEN, INT_SCEN, AA_SCEN
XS=${XS:-}; STEPS=${STEPS:-llm-box llm-one int-box aa}; TEL=${TEL:-nvml}
LLM=${LLM_SCEN:-benchmarks/gpu/scenarios/llm-graphed-itl.toml}; INT=${INT_SCEN:-intensive}
AA=${AA_SCEN:-intensive}  # (the *_SCEN overrides: dry runs on fake GPUs)
NG=${GPUS_N:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
ALL=$(seq -s, 0 $(( (NG > 0 ? NG : 1) - 1 )))
INT_MODES=native,mps${XS:+,xsched}
# advise refuses runs too short for its SLO percentile to have an upper bound ("RUNS TOO
# SHORT TO DECIDE"; intensive: HIGH at 20/s needs 368 requests for P99, so 20 s): each
# race's run length is raised to the shortest advise's own check accepts
shortest() {  # shortest SCENARIO SECONDS: SECONDS, or the shortest accepted if longer
  local got
  got=$(python3 - "$1" 2>/dev/null <<'EOF'
import dataclasses, sys
from xwatch.core.plans.advise import check_runs_can_bound, objective
from xwatch.errors import XwatchError
from xwatch.scenario import load_scenario
s = load_scenario(sys.argv[1])
o = objective(s, None)
for d in range(1, 3601):
    try:
        check_runs_can_bound(dataclasses.replace(s, duration_s=float(d)), o)
    except XwatchError:
        continue
    print(d)
    break
EOF
)
  if [ -n "$got" ] && [ "$got" -gt "$2" ]; then
    echo "$1: $2 s runs are too short for advise; raised to $got s (its own check)" >> "$R/setup.txt"
    echo "$got"
  else
    echo "$2"
  fi
}
echo "gpus: $NG ($ALL); steps: $STEPS; xsched: ${XS:-none}" > "$R/setup.txt"
LLM_DURATION=$(shortest "$LLM" "${LLM_DURATION:-10}"); LLM_BUDGET=${LLM_BUDGET:-2}
INT_DURATION=$(shortest "$INT" "${INT_DURATION:-20}")
# a decision needs two runs of each candidate (race.MIN_RUNS): two rounds of intensive's
# box phases (native 1, MPS's 4 settings 2, XSched's 5 settings 3 on two GPUs), each its
# run plus about 15 s of load and stop
PHASES=3; [ -n "$XS" ] && PHASES=6
EST=$(( (2 * PHASES * (INT_DURATION + 15) + 59) / 60 + 1 ))
INT_BUDGET=${INT_BUDGET:-$EST}
[ "$INT_BUDGET" -lt "$EST" ] && echo "int-box: a budget of $INT_BUDGET min is under two \
rounds' estimate ($EST min): it cannot decide" >> "$R/setup.txt"
AA_ROUNDS=${AA_ROUNDS:-4}; AA_DURATION=${AA_DURATION:-8}
echo "llm: $LLM_DURATION s runs, $LLM_BUDGET min; int-box: $INT_DURATION s runs, $INT_BUDGET min \
($PHASES phases a round); aa: $AA_ROUNDS rounds of $AA_DURATION s" >> "$R/setup.txt"
for step in $STEPS; do
  say "start $step"
  case $step in
    llm-box) run llm-box.log timeout -k 20 $((LLM_BUDGET * 60 + 90)) $X advise "$LLM" --gpus 0,1 \
               --modes native,mps --duration "$LLM_DURATION" --budget "$LLM_BUDGET" \
               --telemetry "$TEL" --export "$R/llm-box" ;;
    llm-one) run llm-one.log timeout -k 20 $((LLM_BUDGET * 60 + 90)) $X advise "$LLM" --device cuda:0 \
               --modes native,mps --duration "$LLM_DURATION" --budget "$LLM_BUDGET" \
               --telemetry "$TEL" --export "$R/llm-one" ;;
    int-box) run int-box.log timeout -k 20 $((INT_BUDGET * 60 + 120)) $X advise "$INT" --gpus "$ALL" \
               --modes "$INT_MODES" ${XS:+--xsched "$XS"} --duration "$INT_DURATION" \
               --budget "$INT_BUDGET" --telemetry "$TEL" --export "$R/int-box" ;;
    aa) run aa.log timeout -k 20 $((AA_ROUNDS * 2 * (AA_DURATION + 15) + 60)) python3 \
          benchmarks/stats/neighbours_aa.py "$R/aa" "$AA" --gpus 0,1 --rounds "$AA_ROUNDS" \
          --duration "$AA_DURATION" --telemetry "$TEL" ;;
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
