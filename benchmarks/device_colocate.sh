#!/usr/bin/env bash
# The co-located workloads (harvest, llm, multi-model) on a single-GPU NVIDIA machine.
# Usage, from the repo root:
#   bash benchmarks/device_colocate.sh OUTDIR [SECONDS] [REPEATS] [XSCHED_ROOT] [SCENARIOS]
# SCENARIOS (default "harvest llm"; names or .toml paths) through compare (native, MPS,
# and XSched when a root is given), interleaved with repeats, except *-alone-* scenarios,
# which run once headless (the decoder alone: benchmarks/scenarios/llm-alone-eager.toml
# and -graphed.toml side by side); then DASH (default multi-model; "none": no dashboard)
# in the dashboard in tmux at 120x40, one phase natively, then m (MPS), then x (XSched,
# when a root is given), each captured after its phase; what was left behind after each
# step. Usage: ... [SCENARIOS] [DASH]. E.g. for the LLM:
#   bash benchmarks/device_colocate.sh OUT 20 3 ROOT "benchmarks/scenarios/llm-alone-eager.toml
#     benchmarks/scenarios/llm-alone-graphed.toml llm benchmarks/scenarios/llm-graphed.toml"
set -u
R=${1:?outdir}; S=${2:-15}; N=${3:-2}; XS=${4:-}; SCS=${5:-harvest llm}; DASH=${6:-multi-model}
mkdir -p "$R"
source "$(dirname "$0")/device_lib.sh"
MODES=native,mps; XARG=()
[ -n "$XS" ] && { MODES=native,mps,xsched; XARG=(--xsched "$XS"); }
python3 -c "import transformers, torch; print('transformers', transformers.__version__, \
'torch', torch.__version__)" > "$R/versions.txt" 2>&1
for sc in $SCS; do
  name=$(basename "$sc" .toml)
  case "$name" in
    *-alone-*) run "$name.log" $X run "$sc" --headless --duration "$S" --device cuda:0 \
                   --telemetry nvml --export "$R/$name" ;;
    *) run "$name.log" $X compare "$sc" --modes "$MODES" --repeat "$N" --duration "$S" \
           --device cuda:0 --telemetry nvml "${XARG[@]}" --export "$R/$name" ;;
  esac
done
if [ "$DASH" != none ]; then
  # One phase per mode in one dashboard: native, then m (MPS), then x (XSched, from MPS),
  # each captured at the end of its phase; then s (snapshot) and q.
  dn=$(basename "$DASH" .toml)
  tmux new -d -s xw -x 120 -y 40 "$X run $DASH --device cuda:0 --telemetry nvml \
    --duration $S --no-keep ${XS:+--xsched $XS} --export $R/dash-$dn; \
    echo EXIT=\$? > $R/dash-$dn-exit.txt"
  sleep $((S + 30)); tmux capture-pane -p -t xw > "$R/tmux-$dn-native.txt"
  tmux send-keys -t xw m; sleep $((S + 35)); tmux capture-pane -p -t xw > "$R/tmux-$dn-mps.txt"
  if [ -n "$XS" ]; then
    tmux send-keys -t xw x; sleep $((S + 40))
    tmux capture-pane -p -t xw > "$R/tmux-$dn-xsched.txt"
  fi
  tmux send-keys -t xw 2; sleep 2; tmux capture-pane -p -t xw > "$R/tmux-$dn-compare.txt"
  tmux send-keys -t xw s; sleep 5; tmux send-keys -t xw q; sleep 15
  tmux kill-server 2>/dev/null; left "dashboard-$dn"
fi
rm -f "$R"/*/events.csv.gz
