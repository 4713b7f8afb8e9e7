# measures: issue 65 goal 5: xwatch capacity on one GPU, native, MPS and XSched: intensive (ResNet-18 HIGH beside ResNet-50 training) should decide every knee to within 10% in 12 minutes or less, serve-train (transformers serve beside training, on the ITL) in 20 or less; each run's minutes, exit status (0 decided, 3 not within the budget), partial rounds (the part of a round that fit the budget), brackets and shares land in goal.txt
# takes: up to 35 minutes (12 + 20 and the starts): run it with `device.sh detach`, or ONLY=intensive and ONLY=serve-train in two sittings
# params: XS (the XSched install; without it MODES defaults to native,mps), MODES (default native,mps,xsched), GPU (default 0), GPUS (I,J,...: the box's GPUs, --gpus, instead of GPU), ID (intensive's seconds a run, default 15), IR (intensive's --rates, default 25:800), IB (its budget, default 12), SD (serve-train's seconds a run, default 20), SR (its --rates, default 20:80: a TTFT P99 needs 368 requests a run), SLO (its objective, default chat.ttft_ms:P99=200: beside training native's ITL P99 is already 44 ms at 1 req/s, so ITL < 50 ms has no knee to find, docs/results/h200x2-2026-11-29b.md), SB (its budget, default 20), ONLY (intensive or serve-train: that one alone), XA (more capacity arguments for both, e.g. "--set trainer.threshold=4")
XS=${XS:-}; MODES=${MODES:-$([ -n "$XS" ] && echo native,mps,xsched || echo native,mps)}
GPU=${GPU:-0}; GPUS=${GPUS:-}
WHERE="--device cuda:$GPU"; [ -n "$GPUS" ] && WHERE="--gpus $GPUS"
: > "$R/goal.txt"
one() {  # NAME GOAL_MIN ARGS...: a capacity run, its minutes and what it decided
  local name=$1 goal=$2; shift 2
  say "capacity $name ($MODES, $WHERE), goal $goal min"
  local t0=$SECONDS
  # shellcheck disable=SC2086
  run "$name.log" $X capacity "$name" --modes "$MODES" ${XS:+--xsched "$XS"} \
    $WHERE --telemetry nvml --export "$R/$name" "$@" ${XA:-}
  [ -n "${DRY:-}" ] && return 0
  local took=$(( (SECONDS - t0 + 59) / 60 )) rc
  rc=$(sed -n 's/^exit \([0-9]*\) after.*/\1/p' "$R/$name.log" | tail -n 1)
  {
    echo "goal: $name decided within ${goal} min: exit $rc after $took min ($([ "$rc" = 0 ] \
&& [ "$took" -le "$goal" ] && echo met || echo NOT met))"
    grep -h 'a partial round:' "$R/$name.log" || true
    sed -n '/^=== capacity =/,/^snapshot:/p' "$R/$name.log"
  } >> "$R/goal.txt"
}
if [ "${ONLY:-intensive}" = intensive ]; then
  one intensive 12 --duration "${ID:-15}" --rates "${IR:-25:800}" --budget "${IB:-12}"
fi
if [ "${ONLY:-serve-train}" = serve-train ]; then
  one serve-train 20 --duration "${SD:-20}" --rates "${SR:-20:80}" --slo "${SLO:-chat.ttft_ms:P99=200}" \
    --budget "${SB:-20}"
fi
[ -n "${DRY:-}" ] && return 0
say "$(grep '^goal' "$R/goal.txt" | tr '\n' ' ')"
