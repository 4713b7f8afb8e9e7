# measures: issue 65, whether a shorter run judges the same percentile (could a capacity probe at a higher load run shorter?): `noise` of intensive with HIGH at 200 req/s (benchmarks/gpu/scenarios/intensive-r200.toml) in MODE on GPUS, RUNS runs of each length in LENGTHS; spread.txt gives each length's run-to-run SD of HIGH's log P99 and P50 (per GPU, pooled) and the ratio to the longest's, against the 1/length a wholly averaging run-to-run effect would give
# takes: about RUNS x (length + 4 s) per length: 3 min at the defaults
# params: MODE (default native), GPUS (default 0,1), RUNS (default 6), LENGTHS (seconds, default "5 15")
MODE=${MODE:-native}; GPUS=${GPUS:-0,1}; RUNS=${RUNS:-6}
SC=benchmarks/gpu/scenarios/intensive-r200.toml
for d in ${LENGTHS:-5 15}; do
  say "noise $MODE, $d s runs on $GPUS"
  run "noise-$d.log" $X noise "$SC" --mode "$MODE" --repeat "$RUNS" --duration "$d" --gpus "$GPUS" \
    --telemetry nvml --export "$R/n$d"
done
[ -n "${DRY:-}" ] && return 0
run spread.txt python3 benchmarks/measure/run_spread.py "$R"/n*/snapshot.json
say "$(tail -n 2 "$R/spread.txt" | tr '\n' ' ')"
