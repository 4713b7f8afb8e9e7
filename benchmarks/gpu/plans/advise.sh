# measures: xwatch advise end to end: which mechanism and setting it chooses, in how many runs and minutes, once per seed (a race longer than one device call: run it with `device.sh detach`)
# takes: BUDGET minutes per seed (default 15)
# params: SCENARIO (default intensive), MODES (default native,mps; xsched needs XS), DUR (seconds a run, default 20), BUDGET (minutes, default 15), SEEDS (default 0), XS, SET (extra arguments, e.g. "--set trainer.threshold=1 --slo chat.itl_ms:P99=6")
SC=${SCENARIO:-intensive}; XS=${XS:-}
for seed in ${SEEDS:-0}; do
  say "advise $SC seed $seed"
  # shellcheck disable=SC2086
  run "advise-$seed.log" $X advise "$SC" --modes "${MODES:-native,mps}" ${XS:+--xsched "$XS"} --duration "${DUR:-20}" --budget "${BUDGET:-15}" --seed "$seed" --device cuda:0 --telemetry nvml ${SET:-} --export "$R/advise-$seed"
done
