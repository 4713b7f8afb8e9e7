# measures: several GPUs: intensive copied onto GPUS per mode with /metrics scraped mid-run; the dashboard at 200x60 and 80x24 (roll-up, g, e); on one GPU, sixteen workloads (benchmarks/gpu/scenarios/sixteen-on-one.toml) with the dashboard's CPU and screenshots
# takes: about 1 min a mode, 2 min of dashboard, 4 min for sixteen-on-one
# params: GPUS (default 0,1; "" skips the per-mode runs), MODES (default "native mps"; xsched needs XS), XS, SIXTEEN (1: the sixteen-on-one part, default 1)
XS=${XS:-}; GPUS=${GPUS-0,1}
if [ -n "$GPUS" ]; then
  for mode in ${MODES:-native mps}; do
    bg "$mode.log" $X run intensive --headless --gpus "$GPUS" --mode "$mode" ${XS:+--xsched "$XS"} --duration 25 --telemetry nvml --metrics-port 9400 --export "$R/$mode"
    pause 20; scrape 9400 "$mode-scrape.txt"
    [ -n "${BG:-}" ] && wait "$BG"; left "$mode"
  done
  tmx new -d -s xw -x 200 -y 60 "$X run intensive --gpus $GPUS --telemetry nvml --duration 0 --no-keep"
  pause 45; tmx capture-pane -p -t xw > "$R/tmux-200x60.txt"
  tmx resize-window -t xw -x 80 -y 24; pause 3; tmx capture-pane -p -t xw > "$R/tmux-80x24.txt"
  tmx send-keys -t xw g g; pause 5; tmx capture-pane -p -t xw > "$R/tmux-80x24-gpu1.txt"
  tmx resize-window -t xw -x 200 -y 60; tmx send-keys -t xw g e; pause 5
  tmx capture-pane -p -t xw > "$R/tmux-200x60-expanded.txt"
  tmx send-keys -t xw q; pause 15; tmx kill-server 2>/dev/null; left dashboard
fi
if [ "${SIXTEEN:-1}" = 1 ]; then
  SX=benchmarks/gpu/scenarios/sixteen-on-one.toml
  run sixteen-cpu.txt python3 benchmarks/measure/dashboard_cpu.py --scenario $SX --telemetry nvml --settle 90 --seconds 30
  run sixteen-200x60.txt python3 benchmarks/measure/dashboard_screenshot.py $SX "$R/sixteen-200x60.svg" --size 200x60 --telemetry nvml --seconds 50
  run sixteen-80x24.txt python3 benchmarks/measure/dashboard_screenshot.py $SX "$R/sixteen-80x24.svg" --size 80x24 --telemetry nvml --seconds 35
fi
