#!/usr/bin/env bash
# XSched's xserver aborts when a client leaves while xserver is busy (issue 64 goal 4).
# It needs no xwatch: XSched's own xserver, the small CUDA program beside this script
# (stream_loop.cu), curl and bash.
#
# What it does: it starts `xserver HPF PORT` and BUSY long-running clients (stream_loop
# for an hour, priorities 1 and 0, XSCHED_SCHEDULER=GLB). Their XQueues go ready and
# idle hundreds of times a second, and each change is a batch that xserver's scheduler
# answers with an operation to every client. With POLL_MS > 0, it also polls GET
# /xqueues that often, as a monitor does; each poll is one more batch. Then it runs
# CLIENTS short-lived clients, PAR at a time: stream_loop for SECS seconds, each ending
# through exit() as any program does. Their exit runs XSched's exit path: the
# ProcessDestroyEvent is sent and the client's queue is removed at once.
# Each time xserver dies, the script counts it, keeps its log, and starts xserver and
# the long-running clients again (they die with it: "failed to send event to server").
#
# The race, in XSched bd494cb (docs/gpus-start.md, "A probe's exit and xserver", has it
# line by line): a client removes its queue (sched/src/scheduler/global.cpp:39) right
# after it sent its ProcessDestroyEvent. xserver's receiver forgets the client's channel
# only when it reaches that event in its queue (service/server/src/server.cpp:142-145,
# 163). Until then, every batch of its scheduler sends the client an operation
# (sched/src/scheduler/local.cpp:191, 198-206). One that finds the queue gone fails
# "cannot send operation to client process N" (server.cpp:200), and xserver exits.
# Its static Server then joins its own scheduler thread: "Resource deadlock avoided",
# SIGABRT.
#
# Usage: bash probe_race.sh XSCHED_ROOT OUTDIR
# Environment: CLIENTS (default 300), PAR (4), SECS (0.3), BUSY (2), POLL_MS (20),
# PORT (50000), DEV (the GPU index for CUDA_VISIBLE_DEVICES, default 0), BIN (a
# stream_loop already built; default: build it here with nvcc), QUIET=1 (no
# long-running clients, no polls, one client at a time: the same exits with xserver
# idle).
# Output: OUTDIR/summary.txt ("clients N, xserver aborts A") and, for each abort,
# OUTDIR/xserver-K.log.
set -u
XS=${1:?XSCHED_ROOT}; OUT=${2:?OUTDIR}
CLIENTS=${CLIENTS:-300}; PAR=${PAR:-4}; SECS=${SECS:-0.3}; BUSY=${BUSY:-2}
POLL_MS=${POLL_MS:-20}; PORT=${PORT:-50000}; DEV=${DEV:-0}
if [ "${QUIET:-0}" = 1 ]; then BUSY=0; POLL_MS=0; PAR=1; fi
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${BIN:-$OUT/stream_loop}
if [ ! -x "$BIN" ]; then
  nvcc -O2 -o "$BIN" "$HERE/stream_loop.cu" || { echo "nvcc failed" >&2; exit 2; }
fi
export LD_LIBRARY_PATH=$XS/lib:${LD_LIBRARY_PATH:-} CUDA_VISIBLE_DEVICES=$DEV
export XSCHED_SCHEDULER=GLB XSCHED_AUTO_XQUEUE=ON XSCHED_AUTO_XQUEUE_LEVEL=1
XPID=""; BPIDS=""; PPID_POLL=""; K=0; ABORTS=0
start_all() {
  K=$((K + 1))
  "$XS/bin/xserver" HPF "$PORT" < /dev/null > "$OUT/xserver-$K.log" 2>&1 &
  XPID=$!
  for _ in $(seq 1 100); do  # its HTTP API answers once it is up
    curl -s -m 1 "http://127.0.0.1:$PORT/xqueues" > /dev/null && break
    sleep 0.1
  done
  BPIDS=""
  for b in $(seq 1 "$BUSY"); do
    XSCHED_AUTO_XQUEUE_PRIORITY=$((b % 2)) XSCHED_AUTO_XQUEUE_THRESHOLD=16 \
      XSCHED_AUTO_XQUEUE_BATCH_SIZE=8 "$BIN" 3600 > /dev/null 2>> "$OUT/busy.err" &
    BPIDS="$BPIDS $!"
  done
}
stop_all() {
  for p in $BPIDS; do kill "$p" 2> /dev/null; done
  for p in $BPIDS; do wait "$p" 2> /dev/null; done
  kill -INT "$XPID" 2> /dev/null; wait "$XPID" 2> /dev/null
}
poll() {  # GET /xqueues every POLL_MS, as a monitor does
  while :; do
    curl -s -m 2 "http://127.0.0.1:$PORT/xqueues" > /dev/null
    sleep "$(awk "BEGIN{print $POLL_MS/1000}")"
  done
}
start_all
if [ "$POLL_MS" -gt 0 ]; then poll & PPID_POLL=$!; fi
n=0
while [ "$n" -lt "$CLIENTS" ]; do
  pids=""
  for _ in $(seq 1 "$PAR"); do
    n=$((n + 1))
    XSCHED_AUTO_XQUEUE_PRIORITY=$((n % 2)) XSCHED_AUTO_XQUEUE_THRESHOLD=4 \
      XSCHED_AUTO_XQUEUE_BATCH_SIZE=2 "$BIN" "$SECS" > /dev/null 2>> "$OUT/clients.err" &
    pids="$pids $!"
  done
  for p in $pids; do wait "$p"; done
  if ! kill -0 "$XPID" 2> /dev/null; then
    wait "$XPID"; rc=$?
    ABORTS=$((ABORTS + 1))
    echo "xserver $K died (exit status $rc) after client $n: $(grep -m1 'Assertion failed' \
"$OUT/xserver-$K.log")" | tee -a "$OUT/summary.txt"
    stop_all
    start_all
  fi
done
[ -n "$PPID_POLL" ] && kill "$PPID_POLL" 2> /dev/null
stop_all
for k in $(seq 1 "$K"); do  # the logs of the xservers that lived are not evidence
  grep -q 'Assertion failed' "$OUT/xserver-$k.log" || rm -f "$OUT/xserver-$k.log"
done
echo "clients $n, xserver aborts $ABORTS (busy clients $BUSY, polls every ${POLL_MS} ms," \
  "$PAR at a time, $SECS s each)" | tee -a "$OUT/summary.txt"
