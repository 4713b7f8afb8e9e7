#!/usr/bin/env bash
# Issue 41 goal 5 on a single-GPU NVIDIA machine: what each of the observer's polls
# costs there, taken apart, and whether XSched 1.2's xserver serves /xqueues correctly
# over a kept-alive connection. Start it in its own session and collect OUTDIR.
# Usage, from the repo root:  bash benchmarks/device_polls.sh OUTDIR ROOT
# ROOT: the XSched install. In order:
#   1. the kernel (is it sandboxed: dearer system calls) and benchmarks/poll_costs.py,
#      idle, then beside a running `intensive` (real workers on the GPU);
#   2. two headless XSched phases of `intensive`, fresh connections per /xqueues poll
#      (the default) and one kept-alive connection (XWATCH_XSERVER_KEEPALIVE=1), and
#      what each saw: polls, samples, ready and suspended polls per workload.
# OUTDIR/progress.txt says where it is; OUTDIR/done marks the end.
set -u
R=${1:?outdir}; XS=${2:?xsched root}
mkdir -p "$R"
source "$(dirname "$0")/device_lib.sh"
say "1: poll costs"
{ uname -a; cat /proc/version; dmesg 2>/dev/null | head -5; nproc
  lscpu | grep -E "Model name|MHz|Hypervisor"; } > "$R/machine.txt" 2>&1
run polls-idle.txt python3 benchmarks/poll_costs.py --nvml --spawn nvidia-cuda-mps-control
$X run intensive --headless --duration 45 --device cuda:0 --telemetry off \
  > "$R/load.log" 2>&1 &
LOAD=$!
sleep 25
run polls-busy.txt python3 benchmarks/poll_costs.py --nvml --polls 300
wait $LOAD
say "2: kept-alive /xqueues against XSched's xserver"
for ka in 0 1; do
  XWATCH_XSERVER_KEEPALIVE=$ka run "keepalive-$ka.log" $X run intensive --headless \
    --mode xsched --duration 15 --device cuda:0 --telemetry nvml --xsched "$XS" \
    --export "$R/keepalive-$ka"
  python3 - "$R/keepalive-$ka/snapshot.json" >> "$R/keepalive.txt" 2>&1 <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for p in d["phases"]:
    xs = p.get("xsched") or {}
    for name, w in (xs.get("workloads") or {}).items():
        s = w.get("stats") or {}
        print(sys.argv[1].split("/")[-2], p["name"], name, w.get("status"),
              {k: s.get(k) for k in ("polls", "samples", "ready", "suspended", "max_queues")})
EOF
done
gzip -f "$R"/*/snapshot.json 2>/dev/null
say "done"
touch "$R/done"
