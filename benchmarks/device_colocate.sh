#!/usr/bin/env bash
# The co-located workloads (harvest, llm, multi-model) on a single-GPU NVIDIA machine.
# Usage, from the repo root:
#   bash benchmarks/device_colocate.sh OUTDIR [SECONDS] [REPEATS] [XSCHED_ROOT] [SCENARIOS]
# SCENARIOS (default "harvest llm"; names or .toml paths) through compare (native, MPS,
# and XSched when a root is given), interleaved with repeats, except *-alone-* scenarios,
# which run once headless (the decoder alone: benchmarks/scenarios/llm-alone-eager.toml
# and -graphed.toml side by side); multi-model in the dashboard in tmux at 120x40
# (captured after its phase); what was left behind after each step. E.g. for the LLM:
#   bash benchmarks/device_colocate.sh OUT 20 3 ROOT "benchmarks/scenarios/llm-alone-eager.toml
#     benchmarks/scenarios/llm-alone-graphed.toml llm benchmarks/scenarios/llm-graphed.toml"
set -u
R=${1:?outdir}; S=${2:-15}; N=${3:-2}; XS=${4:-}; SCS=${5:-harvest llm}
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
tmux new -d -s xw -x 120 -y 40 "$X run multi-model --device cuda:0 --telemetry nvml \
  --duration $S --no-keep --export $R/dash-multi; echo EXIT=\$? > $R/dash-multi-exit.txt"
sleep $((S + 30)); tmux capture-pane -p -t xw > "$R/tmux-multi.txt"
tmux send-keys -t xw s; sleep 5; tmux send-keys -t xw q; sleep 15
tmux kill-server 2>/dev/null; left dashboard-multi
rm -f "$R"/*/events.csv.gz
