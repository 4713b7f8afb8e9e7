# measures: compare --layout split before it could be a default (issue 58 goal 2): aa (benchmarks/stats/split_aa.py: native against native, the GPUs cut into the split layout's halves, swapped every round), naa (benchmarks/stats/neighbours_aa.py --neighbours NB: native on GPU A beside native neighbours against beside NB neighbours in one split phase; NB xsched with XS, else mps), and the widths at equal wall time: rep (compare intensive --gpus GPUS --modes native,mps --repeat N: one phase per mode) and split (the same with --layout split --repeat 2N: both modes in every phase, rotated), with XS also xrep/xsplit (native,xsched); widths.txt has each HIGH interval's width and the split/replicate ratio (target P50 <= 0.6 on 4 GPUs), predicted.txt the simulation's; read the logs for each phase's GPUs and any failed proof
# takes: about (R_AA + 2 R_AA + 4N) x (S + 15 s): 10 min at the defaults (run it detached), 13 with XS
# params: XS (the XSched install: the xrep/xsplit steps, naa's xsched neighbours), STEPS (default "aa naa rep split", and "xrep xsplit" with XS), R_AA (A/A rounds, default 6), GPUS (default 0,1,2,3), N (replicate's repeats, default 3), S (seconds a phase, default 10), SCEN (default intensive), TEL (default nvml); dry runs on fake GPUs: TEL=off GPUS=0,1 and SCEN a small scenario
XS=${XS:-}; STEPS=${STEPS:-aa naa rep split${XS:+ xrep xsplit}}; R_AA=${R_AA:-6}; S=${S:-10}; N=${N:-3}
GPUS=${GPUS:-0,1,2,3}; SCEN=${SCEN:-intensive}; TEL=${TEL:-nvml}
case " $STEPS " in *" xrep "*|*" xsplit "*) : "${XS:?XS=the XSched install (the x steps need it)}" ;; esac
ARGS=(--gpus "$GPUS" --duration "$S" --telemetry "$TEL")
LIM=$((2 * N * (S + 15) + 60))
NB=${XS:+xsched}; NB=${NB:-mps}
for step in $STEPS; do
  say "start $step"
  case $step in
    aa) run aa.log timeout -k 20 $((R_AA * (S + 15) + 60)) python3 benchmarks/stats/split_aa.py \
          "$R/aa" "$SCEN" --gpus "$GPUS" --rounds "$R_AA" --duration "$S" --telemetry "$TEL" ;;
    naa) run naa.log timeout -k 20 $((2 * R_AA * (S + 15) + 60)) python3 \
           benchmarks/stats/neighbours_aa.py "$R/naa" "$SCEN" --gpus "$GPUS" --mode native \
           --neighbours "$NB" ${XS:+--xsched "$XS"} --rounds "$R_AA" --duration "$S" \
           --telemetry "$TEL" ;;
    rep) run rep.log timeout -k 20 $LIM $X compare "$SCEN" --modes native,mps \
           --repeat "$N" "${ARGS[@]}" --export "$R/rep" ;;
    split) run split.log timeout -k 20 $LIM $X compare "$SCEN" --modes native,mps \
             --layout split --repeat $((2 * N)) "${ARGS[@]}" --export "$R/split" ;;
    xrep) run xrep.log timeout -k 20 $((LIM + 60)) $X compare "$SCEN" --modes native,xsched \
            --xsched "$XS" --repeat "$N" "${ARGS[@]}" --export "$R/xrep" ;;
    xsplit) run xsplit.log timeout -k 20 $((LIM + 60)) $X compare "$SCEN" --modes native,xsched \
              --xsched "$XS" --layout split --repeat $((2 * N)) "${ARGS[@]}" --export "$R/xsplit" ;;
    *) echo "unknown step $step" >> "$R/commands.txt" ;;
  esac
  say "end $step"
done
rm -f "$R"/*/events.csv.gz
G=$(echo "$GPUS" | tr ',' '\n' | wc -l)
{ for pair in "rep split" "xrep xsplit"; do
    set -- $pair
    [ -f "$R/$1/snapshot.json" ] && [ -f "$R/$2/snapshot.json" ] || continue
    echo "== $1 against $2"
    python3 benchmarks/stats/split_width_sim.py --measured "$R/$1/snapshot.json" "$R/$2/snapshot.json"
  done; } > "$R/widths.txt" 2>&1
run predicted.txt python3 benchmarks/stats/split_width_sim.py --gpus "$G" --rounds "$N" --sims 500
