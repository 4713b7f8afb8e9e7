# measures: the observer effect with intervals: HIGH's latency under xwatch (telemetry off and NVML) against an independent yardstick written without xwatch code, interleaved; and LOW out of GPU memory (the fault matrix's GPU row)
# takes: about N * (3 * S + 40) s
# params: S (default 15), N (repeats, default 3)
S=${S:-15}; N=${N:-3}
Y="$X run benchmarks/gpu/scenarios/intensive-normal-stream.toml --headless --device cuda:0 --duration $S"
for i in $(seq 1 "$N"); do  # interleaved: drift hits every variant alike
  run "yard-$i.txt" python3 benchmarks/measure/yardstick.py --with-low --seconds "$S" --out "$R/yard-$i.json"
  run "off-$i.log" $Y --telemetry off --export "$R/off-$i"
  run "nvml-$i.log" $Y --telemetry nvml --export "$R/nvml-$i"
done
run observer-effect.txt python3 benchmarks/measure/observer_effect.py "$R"
run oom.log $X run benchmarks/gpu/scenarios/low-oom.toml --headless --device cuda:0 --telemetry nvml --export "$R/oom"
