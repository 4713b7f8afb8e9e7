# Shared by the device_*.sh scripts (sourced, with R set to the output folder):
# run LOG CMD... runs CMD into R/LOG, notes the command, its exit status and time in
# R/commands.txt, then what it left behind (workers, MPS daemons, xservers) in
# R/leftovers.txt; left NAME notes the leftovers alone; say TEXT adds a timed line to
# R/progress.txt. Also writes R/gpu.txt.
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
X="python3 -m xwatch"
say() { echo "$(date +%T) $*" >> "$R/progress.txt"; }
left() { echo "--- left behind after $1:" >> "$R/leftovers.txt"
         ps -eo pid,stat,args | grep -E "xwatch.core.engine|nvidia-cuda-mps|xserver" \
           | grep -v grep >> "$R/leftovers.txt"; }
run() { local log=$1; shift; echo "\$ $*" >> "$R/commands.txt"; local t0=$SECONDS
        "$@" > "$R/$log" 2>&1; local rc=$?; echo "exit $rc after $((SECONDS - t0)) s" >> "$R/$log"
        echo "  -> exit $rc, $((SECONDS - t0)) s ($log)" >> "$R/commands.txt"; left "$log"; }
nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv > "$R/gpu.txt" 2>&1
