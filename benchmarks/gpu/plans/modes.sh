# measures: native against MPS (and XSched, given XS) per scenario, paired runs interleaved, with the A/A halves of each mode and this machine's noise floor
# takes: about 2 min a scenario at S=15 N=3 (three modes), plus the floor
# params: SCENARIOS (names or .toml paths, default "intensive harvest llm"), S (default 15), N (repeats, default 3), XS (XSched install; without it native,mps), FLOOR (1: record the native noise floor first, default 1)
S=${S:-15}; N=${N:-3}; XS=${XS:-}; FLOOR=${FLOOR:-1}
MODES=native,mps; XA=()
[ -n "$XS" ] && { MODES=native,mps,xsched; XA=(--xsched "$XS"); }
export XDG_STATE_HOME="$R/state"   # the floor recorded here is the one these compares read
run versions.txt python3 -c "import torch,transformers;print('torch',torch.__version__,'transformers',transformers.__version__)"
[ -n "$XS" ] && run doctor.txt $X doctor --xsched "$XS"
[ "$FLOOR" = 1 ] && run noise.log $X noise intensive --repeat 6 --duration "$S" --device cuda:0 --telemetry nvml
for sc in ${SCENARIOS:-intensive harvest llm}; do
  name=$(basename "$sc" .toml)
  say "compare $name"
  run "$name.log" $X compare "$sc" --modes "$MODES" --repeat "$N" --duration "$S" --device cuda:0 --telemetry nvml "${XA[@]}" --export "$R/$name"
  for m in ${MODES//,/ }; do
    run "aa-$name-$m.txt" python3 benchmarks/stats/aa_check.py "$R/$name/snapshot.json" "$m"
  done
done
