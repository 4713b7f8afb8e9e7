# measures: one box, many sessions on two GPUs (XSched, then MPS): session 2 on the other GPU refused naming session 1's daemon (exit 2), then joining it (exit 0); session 1 runs on and says from when it shared its daemon, with HIGH's per-second P50 before and after; nothing left behind. Verdicts in checks.txt (PASS/FAIL/INFO lines), /proc/sysvipc/msg and the daemons in box.txt
# takes: about 2 min a mode (4 min at the defaults)
# params: MODES (default "xsched mps" with XS, else "mps"), XS (the XSched install), SCEN (default intensive), DEV0 (default cuda:0), DEV1 (default cuda:1), DUR1 (session 1's seconds, default 40), DUR2 (session 2's, default 15)
XS=${XS:-}; SCEN=${SCEN:-intensive}; DEV0=${DEV0:-cuda:0}; DEV1=${DEV1:-cuda:1}
DUR1=${DUR1:-40}; DUR2=${DUR2:-15}
check() { echo "$1 $2" >> "$R/checks.txt"; }
box() { { echo "--- $1 ($(date +%T))"; cat /proc/sysvipc/msg
          ps -eo pid,user,args | grep -E "bin/xserver|nvidia-cuda-mps" | grep -v grep; } >> "$R/box.txt"; }
judge() {  # judge MODE SNAPSHOT first|joined [PID | JOINER_SNAPSHOT]: PASS/FAIL/INFO lines
  python3 - "$@" <<'EOF'
import json, statistics, sys
mode, path, what, other = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
try:
    ph = json.load(open(path))["phases"][0]
except Exception as e:
    print(f"FAIL {path}: no snapshot ({e})"); sys.exit()
m = ph.get(mode) or {}
ok_status = "engaged" if mode == "xsched" else "in-mps"
st = {n: w.get("status") for n, w in (m.get("workloads") or {}).items()}
print(("PASS" if st and all(s == ok_status for s in st.values()) else "FAIL")
      + f" {mode} {what}: workload statuses {st}")
if what == "joined":
    j = m.get("joined") or {}
    print(("PASS" if str(j.get("pid")) == other else "FAIL")
          + f" {mode} joined: pid {j.get('pid')} (session 1's daemon: {other}), user "
          f"{j.get('user')}, policy change {j.get('policy_change')}")
    sys.exit()
died = m.get("xserver_exit") if mode == "xsched" else (m.get("daemon_exit") or m.get("server_exit"))
print(("PASS" if not died and "joined" not in m else "FAIL")
      + f" {mode} first: its daemon never died ({died}), not joined")
try:  # the joiner's workloads: session 1 must have noticed them
    theirs = {w["pid"] for w in json.load(open(other))["phases"][0]["workloads"].values()}
except Exception as e:
    theirs = set()
    print(f"FAIL {mode} first: no joiner snapshot to compare with ({e})")
sh = m.get("shared") or {}
seen = set(sh.get("pids") or [])
print(("PASS" if theirs and theirs <= seen else "FAIL")
      + f" {mode} first: said it shared its daemon from t={sh.get('t')} s "
      f"({sh.get('t_measured')} s measured) with pids {sorted(seen)} (the joiner's workloads: "
      f"{sorted(theirs)}), XQueues {sh.get('queues')}, devices "
      f"{[hex(d) for d in sh.get('devices') or []]}, servers {sh.get('servers')}")
rows = (ph.get("workloads", {}).get("high") or {}).get("series") or []
if sh.get("t") is not None and rows:
    t = sh["t"]
    before = [r[5] for r in rows if r[0] < t and r[1] and r[5] is not None]
    after = [r[5] for r in rows if r[0] >= t and r[1] and r[5] is not None]
    med = lambda xs: f"{statistics.median(xs):.2f}" if xs else "-"
    print(f"INFO {mode} first: HIGH's per-second P50, median of the seconds before t={t} s: "
          f"{med(before)} ms ({len(before)} s), from then on: {med(after)} ms ({len(after)} s)")
EOF
}
box "before"
for mode in ${MODES:-${XS:+xsched }mps}; do
  if [ "$mode" = xsched ]; then
    JOIN=--join-xserver; PAT="bin/xserver"; XA="--xsched ${XS:?XS=the XSched install}"
  else
    JOIN=--join-mps; PAT="nvidia-cuda-mps-control -[df]"; XA=""
  fi
  say "$mode: session 1 starts"
  t1=$SECONDS
  # shellcheck disable=SC2086
  bg "$mode-1.log" timeout 150 $X run "$SCEN" --headless --mode "$mode" $XA --device "$DEV0" --duration "$DUR1" --export "$R/$mode-1"
  S1=${BG:-}
  pause 8
  box "$mode: 8 s into session 1"
  D=$( [ -n "${DRY:-}" ] || pgrep -f "$PAT" | head -1)
  say "$mode: session 1's daemon pid ${D:-none}"
  # shellcheck disable=SC2086
  run "$mode-2-refused.log" timeout 90 $X run "$SCEN" --headless --mode "$mode" $XA --device "$DEV1" --duration "$DUR2"
  box "$mode: after the refusal"
  # shellcheck disable=SC2086
  run "$mode-2-joined.log" timeout 120 $X run "$SCEN" --headless --mode "$mode" $XA --device "$DEV1" --duration "$DUR2" $JOIN --export "$R/$mode-2"
  [ -n "${DRY:-}" ] && continue
  rc=$(tail -1 "$R/$mode-2-refused.log" | awk '{print $2}')
  if [ "$rc" = 2 ] && [ -n "$D" ] && grep -q "pid $D" "$R/$mode-2-refused.log"; then
    check PASS "$mode: session 2 without joining refused (exit 2) naming pid $D"
  else
    check FAIL "$mode: session 2 without joining: exit $rc, daemon pid ${D:-none} named? (see $mode-2-refused.log)"
  fi
  rc=$(tail -1 "$R/$mode-2-joined.log" | awk '{print $2}')
  check "$([ "$rc" = 0 ] && echo PASS || echo FAIL)" "$mode: session 2 joining: exit $rc"
  judge "$mode" "$R/$mode-2/snapshot.json" joined "${D:-none}" >> "$R/checks.txt"
  if kill -0 "${D:-0}" 2>/dev/null && kill -0 "$S1" 2>/dev/null; then
    check PASS "$mode: session 1 and its daemon $D still run after session 2 left"
  else
    check FAIL "$mode: after session 2 left, session 1 or its daemon ${D:-none} is gone"
  fi
  wait "$S1"; rc1=$?
  echo "exit $rc1 after $((SECONDS - t1)) s" >> "$R/$mode-1.log"
  echo "  -> exit $rc1, $((SECONDS - t1)) s ($mode-1.log)" >> "$R/commands.txt"
  left "$mode-1.log"
  check "$([ $rc1 = 0 ] && echo PASS || echo FAIL)" "$mode: session 1 ended exit $rc1"
  judge "$mode" "$R/$mode-1/snapshot.json" first "$R/$mode-2/snapshot.json" >> "$R/checks.txt"
  sleep 2
  box "$mode: after session 1"
  OURS=$([ "$mode" = xsched ] && echo "$XS/bin/xserver" || echo "$PAT")
  if kill -0 "${D:-0}" 2>/dev/null || pgrep -f "$OURS" > /dev/null || pgrep -f xwatch.core.engine > /dev/null; then
    check FAIL "$mode: something left running: daemon ${D:-none}, $OURS or xwatch workers (see leftovers.txt)"
  else
    check PASS "$mode: nothing left running (daemon ${D:-none} gone, no $OURS, no xwatch workers)"
  fi
  say "$mode: done"
done
