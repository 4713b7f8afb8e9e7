# measures: what each of the observer's polls costs this machine (NVML, /xqueues, the MPS control tool), idle and beside a running intensive; one NVML poll with and without the per-process queries
# takes: about 2 min
# params: none
run machine.txt bash -c "uname -a; nproc; lscpu | grep -E 'Model name|MHz|Hypervisor'"
run polls-idle.txt python3 benchmarks/measure/poll_costs.py --nvml --spawn nvidia-cuda-mps-control
bg load.log $X run intensive --headless --duration 45 --device cuda:0 --telemetry off
pause 25
run polls-busy.txt python3 benchmarks/measure/poll_costs.py --nvml --polls 300
[ -n "${BG:-}" ] && wait "$BG"
run nvml_poll.txt python3 benchmarks/measure/telemetry_poll.py --backend nvml --gpu-load
