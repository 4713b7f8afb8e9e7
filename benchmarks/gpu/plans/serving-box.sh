# measures: servers over the box (issue 57 goals 1-3): serve-train with nothing set by hand (its server pinned to GPU 0), then one server per GPU with --gpus (chat@0 ..., each its own port and GPU) beside ResNet-50 training, compare native/XSched/MPS, every server copy in the answer; the dashboard on two GPUs with x and m; what was left behind
# takes: about 11 min at its defaults (4 GPUs, S=15, N=2): model 15 s, one-GPU smoke 40 s, compare 6 phases x ~60 s, dashboard 3 x WAIT + 1 min; run it detached (device.sh detach, then wait)
# params: XS (XSched install; without it native,mps and no x in the dashboard), GPUS (the compare's GPUs, default 0,1,2,3), DGPUS (the dashboard's, default 0,1), S (seconds a phase, default 15), N (repeats, default 2), STEPS (default smoke,compare,dashboard), WAIT (seconds before each dashboard capture, default 45)
# What to read: commands.txt (exit codes: 0 each), copies.txt (per phase, each chat@G:
# its port, its CUDA_VISIBLE_DEVICES, its requests; every GPU's copy in every phase),
# compare.log (the answer: "N runs x M GPUs"; no "Expected all tensors to be on the same
# device"), compare/report.md, tmux-*.txt (the dashboard at 120x40, chat@0 and chat@1),
# leftovers.txt (nothing listed after any step: no server, xserver or MPS daemon).
S=${S:-15}; N=${N:-2}; XS=${XS:-}; GPUS=${GPUS:-0,1,2,3}; DGPUS=${DGPUS:-0,1}
STEPS=${STEPS:-smoke,compare,dashboard}; WAIT=${WAIT:-45}
MODES=native,mps; XA=()
[ -n "$XS" ] && { MODES=native,xsched,mps; XA=(--xsched "$XS"); }
left() { echo "--- left behind after $1:" >> "$R/leftovers.txt"
         ps -eo pid,stat,args | grep -E "xwatch.core.engine|nvidia-cuda-mps|xserver|transformers|localmodel" \
           | grep -v grep >> "$R/leftovers.txt"; }
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
unset CUDA_VISIBLE_DEVICES HIP_VISIBLE_DEVICES  # nothing set by hand
# each server copy of a snapshot: its port (from its hello), its pinning, its requests
copies() { run "$2" python3 -c "
import json, sys
doc = json.load(open(sys.argv[1]))
for p in doc['phases']:
    for name, w in sorted(p['workloads'].items()):
        if not name.startswith('chat'):
            continue
        env = (w.get('launch') or {}).get('env', {})
        print(p['name'], name, (w.get('hello') or {}).get('url', 'no hello'),
              'CUDA_VISIBLE_DEVICES=' + env.get('CUDA_VISIBLE_DEVICES', '?'),
              'requests', w.get('count'), 'errors', w.get('errors'))" "$1"; }
run model.log timeout 120 python3 -m xwatch.core.engine.servers.localmodel path small
say "model: $(tail -2 "$R/model.log" | head -1)"
case ",$STEPS," in *,smoke,*)
  # goal 1: one GPU, nothing set by hand (today: 'Expected all tensors to be on the same
  # device ... cuda:1 ... cuda:0' on a 4-GPU machine)
  run smoke.log timeout 180 $X run serve-train --headless --duration 10 --telemetry nvml \
      --export "$R/smoke"
  copies "$R/smoke/snapshot.json" smoke-copies.txt
  say "smoke: $(tail -1 "$R/smoke.log")";; esac
case ",$STEPS," in *,compare,*)
  run compare.log timeout 900 $X compare serve-train --gpus "$GPUS" --modes "$MODES" \
      --repeat "$N" --duration "$S" --telemetry nvml "${XA[@]}" --export "$R/compare"
  copies "$R/compare/snapshot.json" copies.txt
  say "compare: $(tail -1 "$R/compare.log")";; esac
case ",$STEPS," in *,dashboard,*)
  # 120x40 on DGPUS: native, then x (XSched, given XS), then m (MPS); q; the app runs with
  # timeout --foreground (without it the TUI is stopped for reading the terminal)
  tmx new -d -s xw -x 120 -y 40 "timeout --foreground $((4 * WAIT + 90)) $X run serve-train --gpus $DGPUS --telemetry nvml --duration 600 --no-keep ${XS:+--xsched $XS} --export $R/dash; echo EXIT=\$? > $R/dash-exit.txt"
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
