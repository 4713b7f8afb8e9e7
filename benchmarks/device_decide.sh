#!/usr/bin/env bash
# Issue 41 goals 5 and 6 on a single-GPU NVIDIA machine, as one chain that outlasts a
# device command: start it in its own session and collect OUTDIR while it runs.
# Usage, from the repo root (or a `git archive` copy of it):
#   bash benchmarks/device_decide.sh OUTDIR ROOT [OLDSRC]
# ROOT: the XSched install; OLDSRC: a copy of the code before (its native dashboard
# runs alternate with this one's, on the same machine instance). In order:
#   1. the observer's CPU (benchmarks/dashboard_cpu.py, intensive, NVML): native twice
#      (alternating with OLDSRC), MPS, XSched; where it goes, per component
#      (benchmarks/dashboard_breakdown.py), natively and in an XSched phase;
#   2. exec'd against forked runs on one instance: compare intensive --modes native,mps
#      --repeat 4 --duration 10 with XWATCH_FORK_SERVER=0, then with the fork server,
#      and the A/A halves of each (benchmarks/aa_check.py);
#   3. advise llm-graphed-itl, objective ITL P99 < 6 ms, native against XSched settings
#      of the trainer, --duration 15 --budget 8;
#   4. advise intensive --modes native,mps,xsched --duration 20 --budget 15 (ADVISE2=0
#      leaves it out).
# Steps 1-2 set STEPS=34 to skip them, and so on. OUTDIR/progress.txt says where it is;
# OUTDIR/done marks the end.
set -u
R=${1:?outdir}; XS=${2:?xsched root}; OLD=${3:-}
mkdir -p "$R"
source "$(dirname "$0")/device_lib.sh"
STEPS=${STEPS:-1234}
D="python3 benchmarks/dashboard_cpu.py --scenario intensive --telemetry nvml --device cuda:0 --seconds 20"
if [[ $STEPS == *1* ]]; then
  say "1: the observer"
  nproc > "$R/machine.txt"; lscpu | grep -E "Model name|MHz" >> "$R/machine.txt"
  for i in 1 2; do
    if [ -n "$OLD" ]; then
      (cd "$OLD" && PYTHONPATH=$OLD:${PYTHONPATH#*:} run "dash-native-old-$i.txt" $D)
    fi
    run "dash-native-$i.txt" $D
  done
  run dash-mps.txt $D --mode mps
  run dash-xsched.txt $D --mode xsched --xsched "$XS"
  run breakdown-native.txt python3 benchmarks/dashboard_breakdown.py intensive --seconds 30 \
    --telemetry nvml --device cuda:0
  run breakdown-xsched.txt python3 benchmarks/dashboard_breakdown.py intensive --seconds 30 \
    --telemetry nvml --device cuda:0 --xsched "$XS"
fi
if [[ $STEPS == *2* ]]; then
  say "2: exec'd against forked runs"
  for how in exec fork; do
    v=1; [ $how = exec ] && v=0
    XWATCH_FORK_SERVER=$v run "compare-$how.log" $X compare intensive --modes native,mps \
      --repeat 4 --duration 10 --device cuda:0 --telemetry nvml --export "$R/compare-$how"
    for m in native mps; do
      run "aa-$how-$m.txt" python3 benchmarks/aa_check.py "$R/compare-$how/snapshot.json" "$m"
    done
  done
fi
if [[ $STEPS == *3* ]]; then
  say "3: advise llm-graphed-itl"
  run advise-llm.log $X advise benchmarks/scenarios/llm-graphed-itl.toml --modes native,xsched \
    --set trainer.threshold=1,16 --set trainer.batch_size=1,8 --slo chat.itl_ms:P99=6 \
    --duration 15 --budget 8 --device cuda:0 --telemetry nvml --xsched "$XS" \
    --export "$R/advise-llm"
fi
if [[ $STEPS == *4* ]] && [ "${ADVISE2:-1}" = 1 ]; then
  say "4: advise intensive"
  run advise-intensive.log $X advise intensive --modes native,mps,xsched --duration 20 \
    --budget 15 --device cuda:0 --telemetry nvml --xsched "$XS" --export "$R/advise-intensive"
fi
gzip -f "$R"/*/snapshot.json 2>/dev/null
say "done"
touch "$R/done"
