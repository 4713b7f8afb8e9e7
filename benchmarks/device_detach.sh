#!/usr/bin/env bash
# Runs a long GPU job (an advise race of 20 minutes, say) across several 10-minute calls
# of the lent machine, without losing what it wrote. Usage, from the repo root:
#   bash benchmarks/device_detach.sh start JOBDIR CMD...   # detached (setsid), returns
#   bash benchmarks/device_detach.sh wait JOBDIR [SECONDS]  # up to SECONDS (default 540)
# `wait` returns when the job is done or the time is up, and EVERY time packs JOBDIR
# into $OUT/job.tgz (when $OUT is set), so a machine given back between two calls
# (it goes back 30 s after a call when idle) loses nothing that was already packed.
# JOBDIR/DONE holds the job's exit status once it ended.
set -u
what=${1:?start|wait}; J=${2:?jobdir}; shift 2
mkdir -p "$J"
if [ "$what" = start ]; then
  [ $# -gt 0 ] || { echo "device_detach: start needs a command" >&2; exit 2; }
  rm -f "$J/DONE"
  printf '%q ' "$@" > "$J/command.txt"
  setsid nohup bash -c '"$@" > "$0/job.log" 2>&1; echo $? > "$0/DONE"' "$J" "$@" \
    < /dev/null > /dev/null 2>&1 &
  echo "started in $J: $*"
  exit 0
fi
limit=${1:-540}; t0=$SECONDS
# A machine given back between calls comes back bare: say so at once, not after `limit`.
[ -f "$J/command.txt" ] || { echo "device_detach: no job in $J (a fresh machine? the \
last packed job.tgz is all that is left)" >&2; exit 3; }
while [ ! -f "$J/DONE" ] && [ $((SECONDS - t0)) -lt "$limit" ]; do sleep 5; done
if [ -f "$J/DONE" ]; then echo "done, exit $(cat "$J/DONE")"; else echo "still running"; fi
tail -n 5 "$J/job.log" 2>/dev/null
[ -n "${OUT:-}" ] && tar czf "$OUT/job.tgz" --exclude='*.csv.gz' -C "$(dirname "$J")" \
  "$(basename "$J")" && echo "packed into \$OUT/job.tgz"
exit 0
