#!/usr/bin/env bash
# Issue "the run is the unit", on a single-GPU NVIDIA machine (MPS as root).
# Usage, from the repo root:
#   bash benchmarks/device_runs.sh repeats OUTDIR [SECONDS] [REPEATS]
#   bash benchmarks/device_runs.sh dashboard OUTDIR [SECONDS]
# repeats:   compare intensive native,mps --repeat N (interleaved); the A/A halves of each
#            mode with benchmarks/aa_check.py; xwatch noise intensive natively (floor in
#            OUTDIR/state).
# dashboard: a one-run compare judged against that floor; the dashboard in tmux at 120x40:
#            native, m, the Compare tab, a (three more A/B runs) - once with the floor
#            recorded and once without - then q; what was left behind after each.
set -u
what=${1:?repeats|dashboard}; R=${2:?outdir}; S=${3:-12}; N=${4:-6}
mkdir -p "$R"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
X="python3 -m xwatch"
left() { echo "--- left behind after $1:" >> "$R/leftovers.txt"
         ps -eo pid,stat,args | grep -E "xwatch.core.engine|nvidia-cuda-mps" \
           | grep -v grep >> "$R/leftovers.txt"; }
run() { local log=$1; shift; echo "\$ $*" >> "$R/commands.txt"; local t0=$SECONDS
        "$@" > "$R/$log" 2>&1; local rc=$?; echo "exit $rc after $((SECONDS - t0)) s" >> "$R/$log"
        echo "  -> exit $rc, $((SECONDS - t0)) s ($log)" >> "$R/commands.txt"; left "$log"; }
nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv > "$R/gpu.txt" 2>&1
if [ "$what" = repeats ]; then
  run compare.log $X compare intensive --modes native,mps --repeat "$N" --duration "$S" \
      --device cuda:0 --telemetry nvml --export "$R/compare"
  python3 benchmarks/aa_check.py "$R/compare/snapshot.json" native > "$R/aa-native.txt" 2>&1
  python3 benchmarks/aa_check.py "$R/compare/snapshot.json" mps > "$R/aa-mps.txt" 2>&1
  run noise.log env XDG_STATE_HOME="$R/state" $X noise intensive --repeat "$N" --duration "$S" \
      --device cuda:0 --telemetry nvml --export "$R/noise"
  rm -f "$R"/*/events.csv.gz
  exit 0
fi
# dashboard: a floor in OUTDIR/state (recorded here first, 4 runs, when there is none)
ls "$R"/state/xwatch/noise/native-*.json >/dev/null 2>&1 || \
  run noise.log env XDG_STATE_HOME="$R/state" $X noise intensive --repeat 4 --duration "$S" \
      --device cuda:0 --telemetry nvml
run compare1.log env XDG_STATE_HOME="$R/state" $X compare intensive --modes native,mps \
    --duration "$S" --device cuda:0 --telemetry nvml --fail-if slower --export "$R/compare1"
for variant in floor nofloor; do
  st="$R/state"; [ "$variant" = nofloor ] && st="$R/empty-state"
  tmux new -d -s xw -x 120 -y 40 "env XDG_STATE_HOME=$st $X run intensive --device cuda:0 \
    --telemetry nvml --duration $S --no-keep --export $R/dash-$variant; echo EXIT=\$? > $R/dash-$variant-exit.txt"
  sleep $((S + 25)); tmux send-keys -t xw m; sleep $((S + 25))
  tmux send-keys -t xw 2; sleep 3; tmux capture-pane -p -t xw > "$R/tmux-$variant-compare.txt"
  if [ "$variant" = floor ]; then
    tmux send-keys -t xw a; sleep $((6 * (S + 17))); tmux send-keys -t xw 2; sleep 3
    tmux capture-pane -p -t xw > "$R/tmux-$variant-after-a.txt"
  fi
  tmux send-keys -t xw s; sleep 5; tmux send-keys -t xw q; sleep 20
  tmux capture-pane -p -t xw > "$R/tmux-$variant-end.txt" 2>/dev/null; tmux kill-server 2>/dev/null
  left "dashboard-$variant"
done
rm -f "$R"/*/events.csv.gz
