# measures: the sweep over the box against one GPU: box (sweep intensive --gpus 0,1 --set low.mps.active_thread_percentage=100,50,25 --repeat N: the settings side by side, one a GPU, rotated; native on both GPUs), one (the same sweep on cuda:0 alone, one setting a phase), xs (with XS: sweep --gpus 0,1 --set low.threshold=2,8 under one xserver). Read summary.txt first: each step's phases with their GPUs and per-copy settings, each setting's P99 and samples/s against native, the seconds measured
# takes: about 4 min at the defaults; each step is capped at N x its phases (box 3, one 4, xs 2 a repeat) x (S + 15 s) plus a margin
# params: XS (the XSched install: the xs step), STEPS (default "box one", and xs with XS), S (seconds a phase, default 8), N (repeats, default 2), SCEN (default intensive), TEL (default nvml); dry runs on fake GPUs: TEL=off and SCEN a small scenario with workloads high and low
XS=${XS:-}; STEPS=${STEPS:-box one${XS:+ xs}}; S=${S:-8}; N=${N:-2}
SCEN=${SCEN:-intensive}; TEL=${TEL:-nvml}
case " $STEPS " in *" xs "*) : "${XS:?XS=the XSched install (the xs step needs it)}" ;; esac
SET=(--set low.mps.active_thread_percentage=100,50,25)
ARGS=(--repeat "$N" --duration "$S" --telemetry "$TEL")
# each step has a hard time limit (timeout's SIGTERM: xwatch stops its workloads and
# still exports); a repeat is native plus the settings' phases (n settings on k GPUs in
# ceil(n/k) phases)
for step in $STEPS; do
  say "start $step"
  case $step in
    box) run box.log timeout -k 20 $((N * 3 * (S + 15) + 20)) $X sweep "$SCEN" --gpus 0,1 \
           "${SET[@]}" "${ARGS[@]}" --export "$R/box" ;;
    one) run one.log timeout -k 20 $((N * 4 * (S + 15) + 20)) $X sweep "$SCEN" --device cuda:0 \
           "${SET[@]}" "${ARGS[@]}" --export "$R/one" ;;
    xs) run xs.log timeout -k 20 $((N * 2 * (S + 15) + 60)) $X sweep "$SCEN" --gpus 0,1 \
          --xsched "$XS" --set low.threshold=2,8 \
          "${ARGS[@]}" --export "$R/xs" ;;
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
