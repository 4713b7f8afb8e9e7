# measures: XSched phases that survive a probe's exit (issue 64 goal 4). A: XSched's race without xwatch (benchmarks/investigations/xsched/repro/probe_race.sh): CLIENTS short-lived clients leaving beside BUSY long-running ones while /xqueues is polled every 20 ms, xserver aborts counted (busy.txt), then QCLIENTS of the same exits one at a time with xserver idle (quiet.txt). B: the race forced through xwatch: a scenario of W workloads, each with its own XSched settings (so 2W preflight probes), one cold XSched phase per xwatch run, K runs the old way (XWATCH_XSCHED_PROBE_WAIT=0: each probe leaves as its work ends) and K runs the new way (held, let go one at a time while xserver hears nothing else); forced-old.txt and forced-new.txt count xserver deaths (a death = a retried phase or a failed one with xserver_exit). C: M cold XSched phases of `xwatch compare intensive --modes native,xsched --duration S`, every XSched phase with its own xserver and its own probes (XWATCH_PREFLIGHT_CACHE=0), in RUNS xwatch runs; cold.txt counts failed XSched phases, retries and xserver deaths, and how many phases probed afresh and started an xserver of their own (not joined)
# takes: about 17 min: C about 8-10 min with the defaults (M=30, S=3; estimated 16-20 s a native+XSched pair, not measured), A about 4 min, B about 5 min; each `run` stays under 10 min (C is split over RUNS xwatch runs)
# params: XS (the XSched install, required), DEV (default cuda:0), PARTS (default "A B C"), CLIENTS (A, default 300), QCLIENTS (A, idle, default 100), W (B: workloads, default 6), K (B: runs per behaviour, default 4), S (B and C: seconds a phase, default 3), M (C: cold XSched phases, default 30), RUNS (C: xwatch runs M is split over, default 2), PORT (A's xserver, default 50000)
XS=${XS:?XS=the XSched install}; DEV=${DEV:-cuda:0}; PARTS=${PARTS:-A B C}
W=${W:-6}; K=${K:-4}; S=${S:-3}; M=${M:-30}; RUNS=${RUNS:-2}
GPU=${DEV#cuda:}
run versions.txt bash -c "grep XSched_VERSION $XS/lib/cmake/XSched/XSchedConfig.cmake; \
python3 -c 'import torch; print(torch.__version__, torch.cuda.device_count())'; nvcc --version | tail -1"
# deaths SNAPSHOT...: per snapshot, its XSched phases, failed ones, retried ones and
# xserver deaths (a retry is one death; a failed phase with xserver_exit is one more),
# whether each probed afresh (not cached) and whether each had its own xserver
deaths() {
  python3 - "$@" <<'EOF'
import json, sys
total = {"phases": 0, "failed": 0, "retried": 0, "deaths": 0, "probed": 0, "own": 0}
for path in sys.argv[1:]:
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"FAIL {path}: no snapshot ({e})")
        total["failed"] += 1
        continue
    for p in doc["phases"]:
        if p["mode"] != "xsched":
            continue
        total["phases"] += 1
        xs = p.get("xsched") or {}
        died = bool(xs.get("xserver_exit"))
        retried = "retried" in p
        total["failed"] += p["status"] == "failed"
        total["retried"] += retried
        total["deaths"] += retried + died
        vs = (p.get("preflight") or {}).get("verdicts") or []
        total["probed"] += bool(vs) and not any(v.get("cached") for v in vs)
        lv = (p.get("preflight") or {}).get("leave") or {}
        total["own"] += not xs.get("joined") and bool(xs.get("xserver_cmd"))
        why = p.get("error") or (p["retried"]["error"] if retried else "")
        print(f"{'FAIL' if p['status'] == 'failed' else 'ok  '} {path.split('/')[-2]} "
              f"{p['name']}: {p['status']}{' (retried)' if retried else ''}"
              f"{' xserver died' if died else ''}; probes' leave: wait={lv.get('wait')} "
              f"left_s={lv.get('left_s')} listed={lv.get('listed')} {lv.get('note') or ''}"
              f"{'; ' + why[:300] if why else ''}")
print(f"xsched phases {total['phases']}, failed {total['failed']}, retried "
      f"{total['retried']}, xserver deaths {total['deaths']}, probed afresh "
      f"{total['probed']} of {total['phases']}, own xserver {total['own']} of {total['phases']}")
EOF
}
if [[ " $PARTS " == *" A "* ]]; then
  say "A: XSched's own race, no xwatch"
  run nvcc.log nvcc -O2 -arch=sm_90 -o /tmp/stream_loop benchmarks/investigations/xsched/repro/stream_loop.cu
  run busy.txt env BIN=/tmp/stream_loop DEV="$GPU" CLIENTS="${CLIENTS:-300}" PORT="${PORT:-50000}" \
    bash benchmarks/investigations/xsched/repro/probe_race.sh "$XS" "$R/race-busy"
  run quiet.txt env BIN=/tmp/stream_loop DEV="$GPU" CLIENTS="${QCLIENTS:-100}" QUIET=1 \
    PORT="${PORT:-50000}" bash benchmarks/investigations/xsched/repro/probe_race.sh "$XS" "$R/race-quiet"
  [ -z "${DRY:-}" ] && say "A: busy: $(tail -1 "$R/race-busy/summary.txt"); quiet: $(tail -1 "$R/race-quiet/summary.txt")"
fi
if [[ " $PARTS " == *" B "* ]]; then
  say "B: the race forced through xwatch: $W workloads, $((2 * W)) probes, $K cold runs a behaviour"
  {
    echo "name = \"probe-race\""
    echo "description = \"$W small workloads, each with its own XSched settings: $((2 * W)) preflight probes\""
    echo "duration_s = $S"
    echo "device = \"$DEV\""
    for k in $(seq 1 "$W"); do
      echo "[[workload]]"; echo "name = \"w$k\""; echo "priority = \"$([ $((k % 2)) = 1 ] && echo high || echo low)\""
      echo "model = \"resnet18\""; echo "batch = $((k % 2 == 1 ? 1 : 64))"; echo "warmup = 50"
      [ $((k % 2)) = 1 ] && echo "rate = 20"
      echo "[workload.xsched]"; echo "threshold = $((k + 2))"; echo "batch_size = 1"
    done
  } > "$R/race.toml"
  for how in old new; do
    SNAPS=""
    for k in $(seq 1 "$K"); do
      PRE=""; [ "$how" = old ] && PRE="env XWATCH_XSCHED_PROBE_WAIT=0"
      # shellcheck disable=SC2086
      run "forced-$how-$k.txt" $PRE $X run "$R/race.toml" --headless --mode xsched --xsched "$XS" \
        --duration "$S" --telemetry nvml --export "$R/forced-$how-$k"
      SNAPS="$SNAPS $R/forced-$how-$k/snapshot.json"
    done
    # shellcheck disable=SC2086
    run "forced-$how.txt" deaths $SNAPS
    [ -z "${DRY:-}" ] && say "B $how: $(tail -1 "$R/forced-$how.txt")"
  done
fi
if [[ " $PARTS " == *" C "* ]]; then
  say "C: $M cold XSched phases of compare intensive, $S s each, in $RUNS runs"
  SNAPS=""
  for k in $(seq 1 "$RUNS"); do
    # each XSched phase starts its own xserver; every phase probes afresh
    run "cold-$k.txt" env XWATCH_PREFLIGHT_CACHE=0 $X compare intensive --modes native,xsched \
      --repeat $(((M + RUNS - 1) / RUNS)) --duration "$S" --device "$DEV" --xsched "$XS" \
      --telemetry nvml --export "$R/cold-$k"
    SNAPS="$SNAPS $R/cold-$k/snapshot.json"
  done
  # shellcheck disable=SC2086
  run cold.txt deaths $SNAPS
  [ -z "${DRY:-}" ] && say "C: $(tail -1 "$R/cold.txt")"
fi
