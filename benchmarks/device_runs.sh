#!/usr/bin/env bash
# Issue "the run is the unit", on a single-GPU NVIDIA machine (MPS as root).
# Usage, from the repo root:
#   bash benchmarks/device_runs.sh repeats OUTDIR [SECONDS] [REPEATS]
#   bash benchmarks/device_runs.sh dashboard OUTDIR [SECONDS]
#   bash benchmarks/device_runs.sh xsched OUTDIR SECONDS REPEATS XSCHED_ROOT
# repeats:   compare intensive native,mps --repeat N (interleaved); the A/A halves of each
#            mode with benchmarks/aa_check.py; xwatch noise intensive natively (floor in
#            OUTDIR/state).
# dashboard: a one-run compare judged against that floor; the dashboard in tmux at 120x40:
#            native, m, the Compare tab, a (three more A/B runs) - once with the floor
#            recorded and once without - then q; what was left behind after each.
# xsched:    the same with XSched as the third mode: doctor; compare native,mps,xsched
#            --repeat N and the A/A halves of each mode; a native floor (noise x3); the
#            dashboard's Compare tab after x, with the floor and without it.
set -u
what=${1:?repeats|dashboard|xsched}; R=${2:?outdir}; S=${3:-12}; N=${4:-6}; XS=${5:-}
mkdir -p "$R"
source "$(dirname "$0")/device_lib.sh"
MODES=native,mps; KEY=m; XARG=()
if [ "$what" = xsched ]; then
  MODES=native,mps,xsched; KEY=x; XARG=(--xsched "${XS:?xsched root}")
  run doctor.log $X doctor --xsched "$XS"
fi
if [ "$what" = repeats ] || [ "$what" = xsched ]; then
  run compare.log $X compare intensive --modes "$MODES" --repeat "$N" --duration "$S" \
      --device cuda:0 --telemetry nvml "${XARG[@]}" --export "$R/compare"
  for m in ${MODES//,/ }; do
    python3 benchmarks/aa_check.py "$R/compare/snapshot.json" "$m" > "$R/aa-$m.txt" 2>&1
  done
fi
if [ "$what" = repeats ]; then
  run noise.log env XDG_STATE_HOME="$R/state" $X noise intensive --repeat "$N" --duration "$S" \
      --device cuda:0 --telemetry nvml --export "$R/noise"
  rm -f "$R"/*/events.csv.gz
  exit 0
fi
# dashboard: a floor in OUTDIR/state (recorded here first, when there is none)
FR=4; [ "$what" = xsched ] && FR=3
ls "$R"/state/xwatch/noise/native-*.json >/dev/null 2>&1 || \
  run noise.log env XDG_STATE_HOME="$R/state" $X noise intensive --repeat "$FR" --duration "$S" \
      --device cuda:0 --telemetry nvml
[ "$what" = xsched ] || run compare1.log env XDG_STATE_HOME="$R/state" $X compare intensive \
    --modes native,mps --duration "$S" --device cuda:0 --telemetry nvml --fail-if slower \
    --export "$R/compare1"
for variant in floor nofloor; do
  st="$R/state"; [ "$variant" = nofloor ] && st="$R/empty-state"
  tmux new -d -s xw -x 120 -y 40 "env XDG_STATE_HOME=$st $X run intensive --device cuda:0 \
    --telemetry nvml --duration $S --no-keep ${XARG[*]} --export $R/dash-$variant; echo EXIT=\$? > $R/dash-$variant-exit.txt"
  sleep $((S + 25)); tmux send-keys -t xw "$KEY"; sleep $((S + 40))
  tmux send-keys -t xw 2; sleep 3; tmux capture-pane -p -t xw > "$R/tmux-$variant-compare.txt"
  if [ "$variant" = floor ] && [ "$what" = dashboard ]; then
    tmux send-keys -t xw a; sleep $((6 * (S + 17))); tmux send-keys -t xw 2; sleep 3
    tmux capture-pane -p -t xw > "$R/tmux-$variant-after-a.txt"
  fi
  tmux send-keys -t xw s; sleep 5; tmux send-keys -t xw q; sleep 20
  tmux capture-pane -p -t xw > "$R/tmux-$variant-end.txt" 2>/dev/null; tmux kill-server 2>/dev/null
  left "dashboard-$variant"
done
rm -f "$R"/*/events.csv.gz
