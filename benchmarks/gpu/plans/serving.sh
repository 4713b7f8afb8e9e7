# measures: a real inference server as HIGH (transformers serve, continuous batching, the random Llama ~75M of serve-train, made here, no downloads) beside ResNet-50 training as LOW: a smoke run, compare native/MPS/XSched --repeat 3 (TTFT/TPOT/ITL, saturation, engagement), optionally advise with an SLO on TTFT P99, and the dashboard in tmux with x and m; what was left behind
# takes: about 8.5 min at its defaults (S=12, N=3, no advise): model 15 s, smoke 30 s, compare 5 min, dashboard 2.5 min; advise adds ADVISE_MIN + 1 min
# params: XS (XSched install; without it native,mps and no x in the dashboard), S (seconds a compare phase, default 12), N (repeats, default 3), ADVISE_MIN (advise's budget in minutes, default 0: no advise), SLO_MS (the TTFT P99 bound advise aims at, default 200), STEPS (default smoke,compare,dashboard), WAIT (seconds before each dashboard capture, default 40)
# Needs the serving extras (fastapi, uvicorn, openai, pydantic, starlette) beside
# transformers 5 with `transformers serve --continuous-batching` (serve-help.txt records
# the flags this machine's transformers has), textual and msgspec for the dashboard, and
# tmux. Every step is bounded by `timeout`; what each left behind goes to leftovers.txt.
# What to read: commands.txt (exit codes), compare.log (per phase: TTFT/TPOT/ITL, errors
# by cause, a "the server is saturated" line if it was), compare/report.md (the answer,
# the XSched engagement table: the server engaged or not scheduled, and why),
# tmux-*.txt (the dashboard at 120x40), leftovers.txt (nothing listed).
S=${S:-12}; N=${N:-3}; XS=${XS:-}; A=${ADVISE_MIN:-0}; SLO_MS=${SLO_MS:-200}
STEPS=${STEPS:-smoke,compare,dashboard}; WAIT=${WAIT:-40}
MODES=native,mps; XA=()
[ -n "$XS" ] && { MODES=native,mps,xsched; XA=(--xsched "$XS"); }
# a server's processes too: transformers serve and the model's launcher
left() { echo "--- left behind after $1:" >> "$R/leftovers.txt"
         ps -eo pid,stat,args | grep -E "xwatch.core.engine|nvidia-cuda-mps|xserver|transformers|localmodel" \
           | grep -v grep >> "$R/leftovers.txt"; }
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
run versions.txt python3 -c "
import importlib
for m in ('torch', 'transformers', 'tokenizers', 'aiohttp', 'fastapi', 'uvicorn', 'openai',
          'pydantic', 'starlette', 'textual', 'msgspec'):
    try:
        print(m, importlib.import_module(m).__version__)
    except Exception as e:
        print(m, 'MISSING', e)"
run serve-help.txt timeout 60 python3 -m transformers.cli.transformers serve --help
# the model, once (its build time apart from the phases)
run model.log timeout 120 python3 -m xwatch.core.engine.servers.localmodel path small
say "model: $(tail -2 "$R/model.log" | head -1)"
case ",$STEPS," in *,smoke,*)
  run smoke.log timeout 120 $X run serve-train --headless --duration 10 --telemetry nvml \
      --export "$R/smoke"
  say "smoke: $(tail -1 "$R/smoke.log")";; esac
case ",$STEPS," in *,compare,*)
  run compare.log timeout 420 $X compare serve-train --modes "$MODES" --repeat "$N" \
      --duration "$S" --telemetry nvml "${XA[@]}" --export "$R/compare"
  say "compare: $(tail -1 "$R/compare.log")";; esac
if [ "$A" != 0 ]; then
  run advise.log timeout $((A * 60 + 60)) $X advise serve-train --modes "$MODES" \
      --duration "$S" --budget "$A" --slo "chat.ttft_ms:P99=$SLO_MS" --telemetry nvml \
      "${XA[@]}" --export "$R/advise"
  say "advise: $(tail -1 "$R/advise.log")"
fi
case ",$STEPS," in *,dashboard,*)
  # 120x40: native, then x (XSched, given XS), then m (MPS); each capture WAIT s after
  # its key (a phase of serve-train starts its server in ~20 s); q; bounded by timeout
  tmx new -d -s xw -x 120 -y 40 "timeout $((4 * WAIT + 60)) $X run serve-train --telemetry nvml --duration 600 --no-keep ${XS:+--xsched $XS} --export $R/dash; echo EXIT=\$? > $R/dash-exit.txt"
  pause "$WAIT"; tmx capture-pane -p -t xw > "$R/tmux-native.txt"; left tmux-native
  if [ -n "$XS" ]; then
    tmx send-keys -t xw x; pause "$WAIT"; tmx capture-pane -p -t xw > "$R/tmux-xsched.txt"
    left tmux-xsched
  fi
  tmx send-keys -t xw m; pause "$WAIT"; tmx capture-pane -p -t xw > "$R/tmux-mps.txt"
  left tmux-mps
  tmx send-keys -t xw q; pause 15
  tmx capture-pane -p -t xw > "$R/tmux-after-q.txt" 2>/dev/null
  tmx kill-server 2>/dev/null; pause 2; left dashboard
  say "dashboard: $(cat "$R/dash-exit.txt" 2>/dev/null || echo 'no exit recorded')";; esac
