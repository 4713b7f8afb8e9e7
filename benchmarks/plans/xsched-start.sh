# measures: XSched phases start as fast as native (issue 58 goal 4: at most 8 s on 4 GPUs, from the phase's start to its first measured second): phase_start on intensive with native,xsched on GPUS, every XSched copy forked from XSched's own fork server (the shim's environment less XSCHED_*, each child switching to the global scheduler itself); then pid by pid (forks.txt): each XSched copy's launch says "fork (fork server pid S)" with S not the native server, the XQueues xserver listed for it carry its own pid and no other, it is engaged with the shim in its maps and "using global scheduler" on its stderr, and S itself never had an XQueue; PART 2 the same with XWATCH_FORK_SERVER=0 (every copy exec'd, the old way) for the baseline
# takes: about 4 min (PART 2: 3 min)
# params: XS (the XSched install, required), GPUS (default 0,1,2,3), PART (1: forked, default; 2: every copy exec'd), N (repeats, default 3), S (seconds a run, default 5)
XS=${XS:?XS=the XSched install}; GPUS=${GPUS:-0,1,2,3}; PART=${PART:-1}
run versions.txt bash -c "grep XSched_VERSION $XS/lib/cmake/XSched/XSchedConfig.cmake; python3 -c 'import torch; print(torch.__version__, torch.cuda.device_count())'"
PS="python3 benchmarks/phase_start.py intensive --modes native,xsched --repeat ${N:-3} --duration ${S:-5}"
if [ "$PART" = 1 ]; then
  say "native and XSched on $GPUS, forked"
  # shellcheck disable=SC2086
  run start.txt $PS --gpus "$GPUS" --export "$R/start" --json "$R/start.json" -- --xsched "$XS" --telemetry nvml
  OUTSNAP="$R/start/snapshot.json"
else
  say "native and XSched on $GPUS, every copy exec'd"
  # shellcheck disable=SC2086
  run exec.txt env XWATCH_FORK_SERVER=0 $PS --gpus "$GPUS" --export "$R/exec" --json "$R/exec.json" -- --xsched "$XS" --telemetry nvml
  OUTSNAP="$R/exec/snapshot.json"
fi
[ -n "${DRY:-}" ] && return 0  # (sourced by device.sh: its end is still written)
python3 - "$OUTSNAP" > "$R/forks.txt" 2>&1 <<'EOF'
import json, re, sys
doc = json.load(open(sys.argv[1]))
FORK = re.compile(r"fork \(fork server pid (\d+)\)")
native = {m.group(1) for p in doc["phases"] if p["mode"] == "native"
          for w in p["workloads"].values() if (m := FORK.fullmatch(w["launch"]["start"]))}
servers, all_pids, bad = set(), set(), 0
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
for s in sorted(servers):
    ok = s not in native and int(s) not in all_pids
    bad += not ok
    print(f"{'PASS' if ok else 'FAIL'} XSched fork server {s}: not the native one "
          f"({sorted(native)}), never listed with an XQueue")
print(f"{'PASS' if not bad else 'FAIL'} {bad} problem(s)")
EOF
say "pid by pid: $(tail -1 "$R/forks.txt")"
