# Shared by benchmarks/gpu/device.sh and its plans (sourced, with R set to the output folder):
# run LOG CMD... runs CMD into R/LOG, notes the command, its exit status and time in
# R/commands.txt, then what it left behind (workers, MPS daemons, xservers) in
# R/leftovers.txt; left NAME notes the leftovers alone; say TEXT adds a timed line to
# R/progress.txt. Also writes R/gpu.txt. With DRY=1 nothing runs: R/commands.txt lists
# what would have (a plan's dry run, on a machine without a GPU).
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
X="python3 -m xwatch"
say() { echo "$(date +%T) $*" >> "$R/progress.txt"; }
left() { echo "--- left behind after $1:" >> "$R/leftovers.txt"
         ps -eo pid,stat,args | grep -E "xwatch.core.engine|nvidia-cuda-mps|xserver" \
           | grep -v grep >> "$R/leftovers.txt"; }
if [ -n "${DRY:-}" ]; then
  run() { shift; echo "\$ $*" >> "$R/commands.txt"; }
  bg() { shift; echo "\$ $* &" >> "$R/commands.txt"; }
  pause() { echo "# sleep $1" >> "$R/commands.txt"; }
  tmx() { echo "\$ tmux $*" >> "$R/commands.txt"; }
else
  run() { local log=$1; shift; echo "\$ $*" >> "$R/commands.txt"; local t0=$SECONDS
          "$@" > "$R/$log" 2>&1; local rc=$?; echo "exit $rc after $((SECONDS - t0)) s" >> "$R/$log"
          echo "  -> exit $rc, $((SECONDS - t0)) s ($log)" >> "$R/commands.txt"; left "$log"; }
  # bg LOG CMD...: CMD in the background into R/LOG (BG holds its pid)
  bg() { local log=$1; shift; echo "\$ $* &" >> "$R/commands.txt"; "$@" > "$R/$log" 2>&1 & BG=$!; }
  pause() { sleep "$1"; }
  tmx() { tmux "$@"; }
fi
# scrape PORT FILE: one Prometheus scrape of a running xwatch
scrape() { run "$2" python3 -c "import urllib.request,sys;sys.stdout.write(urllib.request.urlopen(\
'http://127.0.0.1:$1/metrics',timeout=3).read().decode())"; }
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total,compute_mode \
    --format=csv > "$R/gpu.txt" 2>&1
else
  echo "no nvidia-smi on this machine" > "$R/gpu.txt"
fi
