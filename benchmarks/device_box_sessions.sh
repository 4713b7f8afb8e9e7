#!/usr/bin/env bash
# One box, many sessions, on a 2-GPU machine, against a real XSched install the user
# points at (this repository never builds or ships XSched), and NVIDIA MPS.
# Usage, from the repo root:
#   bash benchmarks/device_box_sessions.sh OUTDIR XSCHED_ROOT
# For XSched, then for MPS:
#   session 1: xwatch run intensive --headless --mode M --device cuda:0 --duration 40
#   8 s later, session 2 on cuda:1 without joining: must exit 2 naming session 1's
#     daemon (the xserver's pid / the MPS control daemon's pid);
#   then session 2 joining (--join-xserver / --join-mps, 15 s): must exit 0, its
#     workloads engaged (in-mps), its snapshot naming the joined daemon;
#   session 1 must end exit 0, untouched (its daemon never died, its workloads
#     engaged / in-mps).
# After every step: what was left behind, /proc/sysvipc/msg and the daemons running.
# Verdicts in OUTDIR/checks.txt (PASS/FAIL lines); about 3-4 minutes in all.
# Dry runs without a GPU (fake install and fake MPS tool) may set SCEN, DEV0, DEV1,
# DUR1 (40), DUR2 (15).
set -u
R=${1:?outdir}; XS=$(realpath "${2:?xsched root}")
SCEN=${SCEN:-intensive}; DEV0=${DEV0:-cuda:0}; DEV1=${DEV1:-cuda:1}; DUR1=${DUR1:-40}; DUR2=${DUR2:-15}
mkdir -p "$R"
source "$(dirname "$0")/device_lib.sh"
check() { echo "$1 $2" >> "$R/checks.txt"; }
box() { { echo "--- $1 ($(date +%T))"; cat /proc/sysvipc/msg
          ps -eo pid,user,args | grep -E "bin/xserver|nvidia-cuda-mps" | grep -v grep; } >> "$R/box.txt"; }
judge() {  # judge MODE SNAPSHOT WHAT: WHAT = first | joined PID; prints PASS/FAIL lines
  python3 - "$@" <<'EOF'
import json, sys
mode, path, what = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    ph = json.load(open(path))["phases"][0]
except Exception as e:
    print(f"FAIL {path}: no snapshot ({e})"); sys.exit()
m = ph.get(mode) or {}
ok_status = "engaged" if mode == "xsched" else "in-mps"
st = {n: w.get("status") for n, w in (m.get("workloads") or {}).items()}
print(("PASS" if st and all(s == ok_status for s in st.values()) else "FAIL")
      + f" {mode} {what}: workload statuses {st}")
if what == "first":
    died = m.get("xserver_exit") if mode == "xsched" else (m.get("daemon_exit") or m.get("server_exit"))
    print(("PASS" if not died and "joined" not in m else "FAIL")
          + f" {mode} first: its daemon never died ({died}), not joined")
else:
    j = m.get("joined") or {}
    print(("PASS" if str(j.get("pid")) == sys.argv[4] else "FAIL")
          + f" {mode} joined: pid {j.get('pid')} (session 1's daemon: {sys.argv[4]}), user "
          f"{j.get('user')}, policy change {j.get('policy_change')}")
EOF
}
nvidia-smi --query-gpu=index,name,pci.bus_id,compute_mode --format=csv > "$R/nvidia-smi.txt" 2>&1
box "before"
for mode in xsched mps; do
  if [ $mode = xsched ]; then JOIN=--join-xserver; PAT="bin/xserver"; else JOIN=--join-mps; PAT="nvidia-cuda-mps-control -[df]"; fi
  say "$mode: session 1 starts"
  echo "\$ $X run $SCEN --headless --mode $mode --xsched $XS --device $DEV0 --duration $DUR1 --export $R/$mode-1" >> "$R/commands.txt"
  t1=$SECONDS
  timeout 150 $X run "$SCEN" --headless --mode $mode --xsched "$XS" --device "$DEV0" --duration "$DUR1" --export "$R/$mode-1" > "$R/$mode-1.log" 2>&1 &
  S1=$!
  sleep 8
  box "$mode: 8 s into session 1"
  D=$(pgrep -f "$PAT" | head -1)
  say "$mode: session 1's daemon pid ${D:-none}"
  run "$mode-2-refused.log" timeout 90 $X run "$SCEN" --headless --mode $mode --xsched "$XS" --device "$DEV1" --duration "$DUR2"
  rc=$(tail -1 "$R/$mode-2-refused.log" | awk '{print $2}')
  if [ "$rc" = 2 ] && [ -n "$D" ] && grep -q "pid $D" "$R/$mode-2-refused.log"; then
    check PASS "$mode: session 2 without joining refused (exit 2) naming pid $D"
  else
    check FAIL "$mode: session 2 without joining: exit $rc, daemon pid ${D:-none} named? (see $mode-2-refused.log)"
  fi
  box "$mode: after the refusal"
  run "$mode-2-joined.log" timeout 120 $X run "$SCEN" --headless --mode $mode --xsched "$XS" --device "$DEV1" --duration "$DUR2" $JOIN --export "$R/$mode-2"
  rc=$(tail -1 "$R/$mode-2-joined.log" | awk '{print $2}')
  check "$([ "$rc" = 0 ] && echo PASS || echo FAIL)" "$mode: session 2 joining: exit $rc"
  judge $mode "$R/$mode-2/snapshot.json" joined "${D:-none}" >> "$R/checks.txt"
  if kill -0 "${D:-0}" 2>/dev/null && kill -0 $S1 2>/dev/null; then
    check PASS "$mode: session 1 and its daemon $D still run after session 2 left"
  else
    check FAIL "$mode: after session 2 left, session 1 or its daemon ${D:-none} is gone"
  fi
  wait $S1; rc1=$?
  echo "exit $rc1 after $((SECONDS - t1)) s" >> "$R/$mode-1.log"
  echo "  -> exit $rc1, $((SECONDS - t1)) s ($mode-1.log)" >> "$R/commands.txt"
  left "$mode-1.log"
  check "$([ $rc1 = 0 ] && echo PASS || echo FAIL)" "$mode: session 1 ended exit $rc1"
  judge $mode "$R/$mode-1/snapshot.json" first >> "$R/checks.txt"
  sleep 2
  box "$mode: after session 1"
  OURS=$([ $mode = xsched ] && echo "$XS/bin/xserver" || echo "$PAT")
  if kill -0 "${D:-0}" 2>/dev/null || pgrep -f "$OURS" > /dev/null || pgrep -f xwatch.core.engine > /dev/null; then
    check FAIL "$mode: something left running: daemon ${D:-none}, $OURS or xwatch workers (see leftovers.txt)"
  else
    check PASS "$mode: nothing left running (daemon ${D:-none} gone, no $OURS, no xwatch workers)"
  fi
  say "$mode: done"
done
