# measures: issue 58 goal 4, both halves. (1) XSched phases start as fast as native, at most 8 s on 4 GPUs from a phase's start to its first measured second, the first XSched phase (xserver's start and the preflight) included: phase_start on intensive with native,xsched on GPUS, RUNS separate runs (each its own first XSched phase), start.txt's goal line for xsched; (2) the dashboard's x at most 8 s from the key to the new phase's first measured second: restart.py on XGPU as the dashboard calls it (a native phase, then x T times), x.txt's goal line, the first x into XSched named; then pid by pid (forks.txt): each XSched copy's launch says "fork (fork server pid S)" with S not the native server, the XQueues xserver listed for it carry its own pid and no other, it is engaged with the shim in its maps and "using global scheduler" on its stderr, S itself never had an XQueue, and each preflight probe was forked from that same S and registered on its own pid under the global scheduler, engaged on a created stream (on the legacy default stream XSched 1.2 says not-scheduled however the probe started); PART 2 the same with XWATCH_FORK_SERVER=0 (every copy and probe exec'd, the old way) for the baseline
# takes: about 5 min (PART 2: 5 min; its forks.txt fails by design: nothing is forked)
# params: XS (the XSched install, required), GPUS (default 0,1,2,3), PART (1: forked, default; 2: every copy exec'd), N (repeats a run, default 2), S (seconds a phase, default 5), RUNS (phase_start runs, default 2), XGPU (the GPU of the x measurement, default 0), T (x presses, default 4)
XS=${XS:?XS=the XSched install}; GPUS=${GPUS:-0,1,2,3}; PART=${PART:-1}; RUNS=${RUNS:-2}
run versions.txt bash -c "grep XSched_VERSION $XS/lib/cmake/XSched/XSchedConfig.cmake; python3 -c 'import torch; print(torch.__version__, torch.cuda.device_count())'"
PS="python3 benchmarks/measure/phase_start.py intensive --modes native,xsched --repeat ${N:-2} --duration ${S:-5}"
RS="python3 benchmarks/measure/restart.py intensive --modes native,xsched --xsched $XS --device cuda:${XGPU:-0} --toggles ${T:-4}"
if [ "$PART" = 1 ]; then D=start; PRE=""; say "native and XSched on $GPUS, forked"
else D=exec; PRE="env XWATCH_FORK_SERVER=0"; say "native and XSched on $GPUS, every copy exec'd"
fi
SNAPS=""
for k in $(seq 1 "$RUNS"); do
  # shellcheck disable=SC2086
  run "$D-$k.txt" $PRE $PS --gpus "$GPUS" --export "$R/$D-$k" -- --xsched "$XS" --telemetry nvml
  SNAPS="$SNAPS $R/$D-$k/snapshot.json"
done
# every run's phases together: the goal lines over all of them (each run's first XSched phase)
# shellcheck disable=SC2086
run "$D.txt" python3 benchmarks/measure/phase_start.py --from $SNAPS --json "$R/$D.json"
say "x on GPU ${XGPU:-0}"
# shellcheck disable=SC2086
run "x-$D.txt" $PRE $RS --json "$R/x-$D.json"
[ -n "${DRY:-}" ] && return 0  # (sourced by device.sh: its end is still written)
say "phase start: $(grep '^goal' "$R/$D.txt" | tr '\n' ' ')"
say "x: $(grep '^goal' "$R/x-$D.txt" | tr '\n' ' ')"
# shellcheck disable=SC2086
python3 - $SNAPS > "$R/forks.txt" 2>&1 <<'EOF'
import json, re, sys
FORK = re.compile(r"fork \(fork server pid (\d+)\)")
bad = 0
for path in sys.argv[1:]:
    doc = json.load(open(path))
    print(f"--- {path}")
    native = {m.group(1) for p in doc["phases"] if p["mode"] == "native"
              for w in p["workloads"].values() if (m := FORK.fullmatch(w["launch"]["start"]))}
    servers, all_pids = set(), set()
    for p in doc["phases"]:
        if p["mode"] != "xsched":
            continue
        info = p["xsched"]["workloads"]
        for name, w in p["workloads"].items():
            pid = (w.get("hello") or {}).get("pid")
            m = FORK.fullmatch(w["launch"]["start"])
            q = info.get(name) or {}
            pids = {r.get("pid") for r in q.get("queues") or []}
            libs = [x for x in q.get("libraries") or [] if "libshim" in x]
            ok = bool(m) and pids == {pid} and q.get("status") == "engaged" and bool(libs) \
                and q.get("scheduler") == "global"
            bad += not ok
            if m:
                servers.add(m.group(1))
            all_pids |= pids
            print(f"{'PASS' if ok else 'FAIL'} {p['name']} {name}: pid {pid}, "
                  f"{w['launch']['start']}, XQueues {q.get('stats', {}).get('max_queues')} "
                  f"listed with pids {sorted(x for x in pids if x is not None)}, status "
                  f"{q.get('status')}, scheduler {q.get('scheduler')}, shim {libs[:1]}")
    for p in doc["phases"]:  # the preflight's probes: forked from the copies' server
        for v in (p.get("preflight") or {}).get("verdicts") or []:
            if v.get("cached"):
                continue
            m = FORK.fullmatch(v.get("start") or "")
            # XSched 1.2 does not schedule the legacy default stream: its probe says
            # not-scheduled however it started (informative: the copies use created ones)
            want = ("engaged", "not-scheduled") if v.get("stream") == "default" else ("engaged",)
            ok = bool(m) and m.group(1) in servers and v.get("status") in want \
                and v.get("scheduler") == "global" and (v.get("queues_max") or 0) > 0 \
                and v.get("pid") not in (None, *map(int, servers))
            bad += not ok
            print(f"{'PASS' if ok else 'FAIL'} {p['name']} probe ({v.get('stream')} stream, "
                  f"for {', '.join(v.get('workloads') or [])}): pid {v.get('pid')}, "
                  f"{v.get('start')}, {v.get('status')}, scheduler {v.get('scheduler')}, "
                  f"{v.get('queues_max')} XQueues, {v.get('seconds')} s")
    for s in sorted(servers):
        ok = s not in native and int(s) not in all_pids
        bad += not ok
        print(f"{'PASS' if ok else 'FAIL'} XSched fork server {s}: not the native one "
              f"({sorted(native)}), never listed with an XQueue")
print(f"{'PASS' if not bad else 'FAIL'} {bad} problem(s)")
EOF
say "pid by pid: $(tail -1 "$R/forks.txt")"
