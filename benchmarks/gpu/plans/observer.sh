# measures: the observer's own CPU per mode (the dashboard on intensive with NVML), optionally against an older tree alternating on one instance, then where it goes per component
# takes: about 1 min a measurement at SECS=20: 3 modes x ROUNDS (x2 with OLD), plus 3 breakdowns
# params: XS (XSched install; without it native and MPS), OLD (a copy of the code before, with this benchmarks/measure/dashboard_cpu.py copied in), ROUNDS (default 2), SECS (measured window, default 20), WARM_XSCHED (default 25: XSched measured at its settled pace)
XS=${XS:-}; OLD=${OLD:-}
D="python3 benchmarks/measure/dashboard_cpu.py --scenario intensive --telemetry nvml --device cuda:0 --seconds ${SECS:-20}"
MODES="native mps"; [ -n "$XS" ] && MODES="native mps xsched"
for i in $(seq 1 "${ROUNDS:-2}"); do
  for m in $MODES; do
    extra=""; [ "$m" = xsched ] && extra="--xsched $XS --warm ${WARM_XSCHED:-25}"
    if [ -n "$OLD" ]; then
      (cd "$OLD" && PYTHONPATH=$OLD:${PYTHONPATH#*:} run "dash-$m-old-$i.txt" $D --mode "$m" $extra)
    fi
    run "dash-$m-$i.txt" $D --mode "$m" $extra
  done
done
for m in $MODES; do
  extra=""; [ "$m" = xsched ] && extra="--xsched $XS --warm ${WARM_XSCHED:-25}"
  run "breakdown-$m.txt" python3 benchmarks/measure/dashboard_breakdown.py intensive --seconds 30 --telemetry nvml --device cuda:0 --mode "$m" $extra
done
