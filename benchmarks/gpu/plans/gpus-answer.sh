# measures: every GPU in the answer (issue 51 goal 6): the widths of HIGH's P50 and P99 intervals at the same wall time, compare on cuda:0 against compare on GPUS (each GPU its copies, every copy in the answer), their ratio (goal <= 0.75) against the prediction of benchmarks/stats/gpu_width_sim.py; read widths.txt, predicted.txt, one.log and two.log ("N runs x 2 GPUs", any "Finding:" line naming a GPU)
# takes: about 2 x N x 2 modes x (S + 15 s): 5 min at the defaults
# params: N (runs per mode, default 3), S (seconds a run, default 10), GPUS (default 0,1)
K=${N:-3}; DUR=${S:-10}; GPUS=${GPUS:-0,1}; MODES=native,mps
say "one GPU"
run one.log $X compare intensive --device cuda:0 --modes "$MODES" --repeat "$K" --duration "$DUR" --telemetry nvml --export "$R/one"
say "GPUs $GPUS"
run two.log $X compare intensive --gpus "$GPUS" --modes "$MODES" --repeat "$K" --duration "$DUR" --telemetry nvml --export "$R/two"
say "widths"
run widths.txt python3 benchmarks/stats/gpu_width_sim.py --measured "$R/one/snapshot.json" "$R/two/snapshot.json"
run predicted.txt python3 benchmarks/stats/gpu_width_sim.py --runs "$K" --sims 500
