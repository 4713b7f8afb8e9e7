# measures: XSched when processes come and go (issue 58 goal 5): part A, session 1 on DEV0 for DUR1 s, session 2 joins its xserver on DEV1 for DUR2 s and its copies exit; part B, one session whose LOW leaves mid-phase (intensive with LOW `requests = 40`). Throughout, a prober polls GET /xqueues every 0.2 s with a 30 s timeout (poll.csv: t, latency, XQueues, pids) and stalls.txt lists every poll over 0.5 s with the pids that had just left; checks.txt says whether session 1 survived (exit 0, its xserver never called hung), its HIGH's per-second P50 before/while/after the joiner, and any "xserver stalled N s after pid X left" xwatch named
# takes: about 4 min
# params: XS (the XSched install, required), DEV0 (default cuda:0), DEV1 (default cuda:1), DUR1 (default 60), DUR2 (default 15), PORT (xserver's, default 50000), PARTS (default "A B"; C: one session whose LOW is killed with SIGKILL 20 s into a 40 s phase, the process with the most GPU memory: no polite leave is possible), LEAVE (0: every worker ends without telling xserver it leaves, XWATCH_XSCHED_LEAVE=0, the old exit, which stalled xserver; default: xwatch's own, which leaves first)
XS=${XS:?XS=the XSched install}; DEV0=${DEV0:-cuda:0}; DEV1=${DEV1:-cuda:1}
[ -n "${LEAVE:-}" ] && export XWATCH_XSCHED_LEAVE=$LEAVE
DUR1=${DUR1:-60}; DUR2=${DUR2:-15}; PORT=${PORT:-50000}; PARTS=${PARTS:-A B}
check() { echo "$1 $2" >> "$R/checks.txt"; }
probe() {  # probe OUT.csv: /xqueues latency until the file $R/stop-probe exists
  python3 - "$1" "$PORT" "$R/stop-probe" <<'EOF' &
import json, os, sys, time, urllib.request
out, port, stop = sys.argv[1], sys.argv[2], sys.argv[3]
t0 = time.monotonic()
def xserver_port(default):
    """the port of the xserver running now (its last argument), else the default"""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"xserver") and len(argv) >= 3 and argv[-2].isdigit():
            return argv[-2].decode()
    return default
with open(out, "w") as f:
    f.write("t,latency_s,xqueues,pids,error\n")
    while not os.path.exists(stop):
        t = time.monotonic()
        port = xserver_port(port)
        try:
            d = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/xqueues", timeout=30))
            qs = d.get("xqueues") or []
            pids = sorted({q.get("pid") for q in qs})
            f.write(f"{t - t0:.2f},{time.monotonic() - t:.3f},{len(qs)},{' '.join(map(str, pids))},\n")
        except Exception as e:
            f.write(f"{t - t0:.2f},{time.monotonic() - t:.3f},,,{type(e).__name__}\n")
        f.flush()
        time.sleep(max(0.0, 0.2 - (time.monotonic() - t)))
EOF
  PROBE=$!
}
stalls() {  # stalls CSV: every slow poll and the pids listed before it that were gone after
  python3 - "$1" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
prev, n = [], 0
for i, r in enumerate(rows):
    lat = float(r["latency_s"])
    if lat > 0.5 or r["error"]:
        n += 1
        after = next((x["pids"].split() for x in rows[i + 1:] if x["pids"]), [])
        left = sorted(set(prev) - set(after))
        print(f"t={r['t']} s: /xqueues took {lat:.2f} s {r['error']} (pids that left around it: {left})")
    if r["pids"]:
        prev = r["pids"].split()
lats = sorted(float(r["latency_s"]) for r in rows)
print(f"{len(rows)} polls, {n} over 0.5 s, max {lats[-1] if lats else 0:.2f} s, "
      f"median {lats[len(lats) // 2] if lats else 0:.3f} s")
EOF
}
judge() {  # judge SNAPSHOT JOINER_SNAPSHOT|-
  python3 - "$@" <<'EOF'
import json, statistics, sys
ph = json.load(open(sys.argv[1]))["phases"][0]
xs = ph.get("xsched") or {}
died = xs.get("xserver_exit")
print(("PASS" if not died else "FAIL") + f" session 1's xserver never called hung or dead ({died})")
for a in ph.get("annotations") or []:
    if a.get("kind") in ("stall", "failure", "shared"):
        print(f"INFO annotation t={a['t']} s [{a['kind']}]: {a['text']}")
rows = (ph.get("workloads", {}).get("high") or {}).get("series") or []
sh = xs.get("shared") or {}
t = sh.get("t")
if t is not None and rows:
    med = lambda v: f"{statistics.median(v):.2f}" if v else "-"
    before = [r[5] for r in rows if r[0] < t and r[1] and r[5] is not None]
    during = [r[5] for r in rows if t <= r[0] < t + 20 and r[1] and r[5] is not None]
    after = [r[5] for r in rows if r[0] >= t + 20 and r[1] and r[5] is not None]
    print(f"INFO HIGH per-second P50: before the joiner {med(before)} ms ({len(before)} s), "
          f"its first 20 s {med(during)} ms, after {med(after)} ms ({len(after)} s)")
EOF
}
rm -f "$R/stop-probe"
if [[ " $PARTS " == *" A "* ]]; then
say "A: session 1 on $DEV0 (${DUR1} s), a joiner on $DEV1 (${DUR2} s)"
t1=$SECONDS
bg A-1.log timeout $((DUR1 + 120)) $X run intensive --headless --mode xsched --xsched "$XS" --device "$DEV0" --duration "$DUR1" --export "$R/A-1"
S1=${BG:-}
pause 5
[ -z "${DRY:-}" ] && probe "$R/A-poll.csv"
pause 15
run A-2.log timeout 150 $X run intensive --headless --mode xsched --xsched "$XS" --device "$DEV1" --duration "$DUR2" --join-xserver --export "$R/A-2"
[ -z "${DRY:-}" ] && { wait "$S1"; rc1=$?; echo "exit $rc1 after $((SECONDS - t1)) s" >> "$R/A-1.log"; left A-1.log
  touch "$R/stop-probe"; wait "$PROBE"; rm -f "$R/stop-probe"
  check "$([ $rc1 = 0 ] && echo PASS || echo FAIL)" "A: session 1 ended exit $rc1"
  judge "$R/A-1/snapshot.json" >> "$R/checks.txt"
  stalls "$R/A-poll.csv" > "$R/A-stalls.txt"; echo "INFO A /xqueues: $(tail -1 "$R/A-stalls.txt")" >> "$R/checks.txt"; }
sleep 3
fi
if [[ " $PARTS " == *" B "* ]]; then
say "B: one session, LOW leaves after 40 requests"
sed 's/^warmup = 3$/warmup = 3\nrequests = 40/' xwatch/scenarios/intensive.toml > "$R/low-leaves.toml"
[ -z "${DRY:-}" ] && probe "$R/B-poll.csv"
run B.log timeout 200 $X run "$R/low-leaves.toml" --headless --mode xsched --xsched "$XS" --device "$DEV0" --duration 40 --export "$R/B"
[ -z "${DRY:-}" ] && { touch "$R/stop-probe"; wait "$PROBE"; rm -f "$R/stop-probe"
  rc=$(tail -1 "$R/B.log" | awk '{print $2}')
  check "$([ "$rc" = 0 ] && echo PASS || echo FAIL)" "B: the session whose LOW left ended exit $rc"
  judge "$R/B/snapshot.json" >> "$R/checks.txt"
  stalls "$R/B-poll.csv" > "$R/B-stalls.txt"; echo "INFO B /xqueues: $(tail -1 "$R/B-stalls.txt")" >> "$R/checks.txt"; }
fi
if [[ " $PARTS " == *" C "* ]]; then
say "C: one session, LOW killed with SIGKILL mid-phase"
[ -z "${DRY:-}" ] && probe "$R/C-poll.csv"
bg C.log timeout 200 $X run intensive --headless --mode xsched --xsched "$XS" --device "$DEV0" --duration 40 --export "$R/C"
SC=${BG:-}
pause 30
if [ -z "${DRY:-}" ]; then
  victim=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null \
    | sort -t, -k2 -n -r | head -1 | cut -d, -f1 | tr -d ' ')
  echo "killed pid ${victim:-none} (most GPU memory) at $(date +%T.%N)" >> "$R/C-kill.txt"
  [ -n "$victim" ] && kill -KILL "$victim"
  wait "$SC"; rc=$?; echo "exit $rc" >> "$R/C.log"
  touch "$R/stop-probe"; wait "$PROBE"; rm -f "$R/stop-probe"
  check INFO "C: the session whose LOW was killed ended exit $rc"
  judge "$R/C/snapshot.json" >> "$R/checks.txt"
  stalls "$R/C-poll.csv" > "$R/C-stalls.txt"; echo "INFO C /xqueues: $(tail -1 "$R/C-stalls.txt")" >> "$R/checks.txt"
fi
fi
say "done: $(grep -c PASS "$R/checks.txt" 2>/dev/null) PASS, $(grep -c FAIL "$R/checks.txt" 2>/dev/null) FAIL"
