#!/usr/bin/env bash
# A real inference server as HIGH on one NVIDIA GPU (nvidia-h100-x1): `transformers serve`
# on the random-weight Llama-shaped model of the built-in scenario serve-train (made here
# on first use, no downloads, HF_HUB_OFFLINE=1), driven by xwatch's load generator at
# 4 req/s, beside ResNet-50 training as LOW. Natively, under MPS and under XSched,
# `compare --repeat 3`; then, if ADVISE_MIN > 0, `advise` with the SLO on TTFT P99.
# Usage, from the repo root (the serving extras installed: fastapi, uvicorn, openai,
# pydantic, starlette, aiohttp ...):
#   bash benchmarks/device_serving.sh OUT XSCHED_ROOT [SECONDS=15] [ADVISE_MIN=0] [STEPS]
# STEPS: smoke,compare (the default, ~8 minutes) or advise (alone, a call of its own:
# e.g. ADVISE_MIN=7 STEPS=advise). Bounded: the smoke run 120 s, the compare 420 s
# (9 phases of SECONDS + each start), the advise ADVISE_MIN minutes + 60 s. What to read: OUT/commands.txt (exit codes),
# OUT/compare.log (TTFT/TPOT/ITL per mode, engagement), OUT/compare/report.md,
# OUT/leftovers.txt (must list nothing), OUT/versions.txt, OUT/model.log.
set -u
R=${1:?outdir}; XS=${2:?xsched root}; S=${3:-15}; A=${4:-0}; STEPS=${5:-smoke,compare}
mkdir -p "$R"
source "$(dirname "$0")/device_lib.sh"
left() { echo "--- left behind after $1:" >> "$R/leftovers.txt"
         ps -eo pid,stat,args | grep -E "xwatch.core.engine|nvidia-cuda-mps|xserver|transformers|localmodel" \
           | grep -v grep >> "$R/leftovers.txt"; }
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
python3 - > "$R/versions.txt" 2>&1 <<'EOF'
import importlib
for m in ("torch", "transformers", "tokenizers", "aiohttp", "fastapi", "uvicorn", "openai",
          "pydantic", "starlette", "textual", "msgspec"):
    try:
        print(m, importlib.import_module(m).__version__)
    except Exception as e:
        print(m, "MISSING", e)
EOF
say "versions: $(tr '\n' ' ' < "$R/versions.txt")"
# the model, once (its build time apart from the phases)
run model.log python3 -m xwatch.core.engine.serve.localmodel path small
say "model: $(tail -2 "$R/model.log" | head -1)"
# one short native run: the server starts, is ready, streams; the trainer beside it
case ",$STEPS," in *,smoke,*)
run smoke.log timeout 120 $X run serve-train --headless --duration 10 --telemetry nvml \
    --export "$R/smoke"
say "smoke: $(tail -1 "$R/smoke.log")";; esac
case ",$STEPS," in *,compare,*)
run compare.log timeout 420 $X compare serve-train --modes native,mps,xsched --repeat 3 \
    --xsched "$XS" --duration "$S" --telemetry nvml --export "$R/compare"
say "compare: $(tail -1 "$R/compare.log")";; esac
if [ "$A" != 0 ] && [[ ",$STEPS," == *,advise,* ]]; then
  run advise.log timeout $((A * 60 + 60)) $X advise serve-train --modes native,mps,xsched \
      --xsched "$XS" --duration "$S" --budget "$A" --slo chat.ttft_ms:P99=200 \
      --telemetry nvml --export "$R/advise"
  say "advise: $(tail -1 "$R/advise.log")"
fi
rm -f "$R"/*/events.csv.gz
