#!/usr/bin/env bash
# Every GPU sitting, one script: a plan (benchmarks/gpu/plans/PLAN.sh) run into OUTDIR, each
# command recorded with its exit status, time and what it left behind (device_lib.sh).
# Usage, from the repo root:
#   bash benchmarks/gpu/device.sh PLAN OUTDIR [NAME=VALUE ...]         # in the foreground
#   bash benchmarks/gpu/device.sh detach PLAN OUTDIR [NAME=VALUE ...]  # in its own session
#   bash benchmarks/gpu/device.sh wait OUTDIR [SECONDS]                # for a detached plan
#   bash benchmarks/gpu/device.sh list                                 # the plans
# NAME=VALUE sets a plan's parameter (each plan's header names them: XS the XSched
# install, S seconds per phase, N repeats, ...). DRY=1 records the commands without
# running them. `wait` returns when the plan is done or after SECONDS (default 540) and
# packs OUTDIR into $OUT/job.tgz when $OUT is set, so a machine given back between two
# calls loses nothing already packed. OUTDIR/progress.txt says where a plan is;
# OUTDIR/done marks its end. `python -m benchmarks list` shows the plans beside the
# other benchmarks.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
what=${1:?"PLAN, detach, wait or list"}
case "$what" in
  list)
    for f in "$HERE"/plans/*.sh; do
      printf '%-12s %s\n' "$(basename "$f" .sh)" "$(sed -n 's/^# measures: //p' "$f")"
    done
    exit 0 ;;
  wait)
    R=${2:?outdir}; limit=${3:-540}; t0=$SECONDS
    [ -f "$R/command.txt" ] || { echo "device.sh: no detached plan in $R (a fresh machine? \
the last packed job.tgz is all that is left)" >&2; exit 3; }
    while [ ! -f "$R/done" ] && [ $((SECONDS - t0)) -lt "$limit" ]; do sleep 5; done
    if [ -f "$R/done" ]; then echo "done, exit $(cat "$R/done")"; else echo "still running"; fi
    tail -n 5 "$R/progress.txt" 2>/dev/null
    [ -n "${OUT:-}" ] && tar czf "$OUT/job.tgz" --exclude='*.csv.gz' -C "$(dirname "$R")" \
      "$(basename "$R")" && echo "packed into \$OUT/job.tgz"
    exit 0 ;;
  detach)
    shift; R=${2:?outdir}; mkdir -p "$R"; rm -f "$R/done"
    # from a copy outside the repository: a later device call re-sends the tree
    SRC=/tmp/xwatch-src-$$; rm -rf "$SRC"; cp -r "$HERE/../.." "$SRC"
    printf '%q ' bash benchmarks/gpu/device.sh "$@" > "$R/command.txt"
    (cd "$SRC" && setsid nohup bash benchmarks/gpu/device.sh "$@" < /dev/null \
      > "$R/job.log" 2>&1 &)
    echo "started in its own session from $SRC: $*"
    exit 0 ;;
esac
PLAN=$what; R=${2:?outdir}; shift 2
[ -f "$HERE/plans/$PLAN.sh" ] || { echo "device.sh: no plan $PLAN (bash benchmarks/gpu/device.sh \
list)" >&2; exit 2; }
for kv in "$@"; do
  [[ $kv == *=* ]] || { echo "device.sh: $kv is not NAME=VALUE" >&2; exit 2; }
  export "${kv?}"
done
mkdir -p "$R"; R=$(cd "$R" && pwd)
source "$HERE/device_lib.sh"
echo "plan $PLAN $*" >> "$R/commands.txt"
say "plan $PLAN $*"
source "$HERE/plans/$PLAN.sh"
rm -f "$R"/*/events.csv.gz
say "done"
echo 0 > "$R/done"
