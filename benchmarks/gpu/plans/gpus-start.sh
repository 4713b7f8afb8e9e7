# measures: a phase on several GPUs starts as fast as on one (issue 51 goal 5: <= 5 s natively, <= 8 s under MPS, from the phase's start to its first measured second), every copy forked where one GPU's copy would be: phase_start on intensive, native and MPS, on GPUS, then on cuda:0 alone in the same sitting; per mode two.txt and one.txt say "copies started", "K of K copies forked", each copy's GPU and the "goal:" line
# takes: about 4 min (PART 2: 2 min)
# params: GPUS (default 0,1), PART (1: GPUS then one GPU, default; 2: GPUS with the fork server off, every copy exec'd, into exec.txt), N (repeats, default 4), S (seconds a run, default 5)
GPUS=${GPUS:-0,1}; PART=${PART:-1}
run python.txt python3 -c "import msgspec, torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpus', torch.cuda.device_count())"
PS="python3 benchmarks/measure/phase_start.py intensive --modes native,mps --repeat ${N:-4} --duration ${S:-5}"
if [ "$PART" = 1 ]; then
  say "two GPUs ($GPUS)"
  # shellcheck disable=SC2086
  run two.txt $PS --gpus "$GPUS" --export "$R/two" --json "$R/two.json" -- --telemetry nvml
  say "one GPU"
  # shellcheck disable=SC2086
  run one.txt $PS --device cuda:0 --export "$R/one" --json "$R/one.json" -- --telemetry nvml
else
  say "two GPUs ($GPUS), fork server off"
  # shellcheck disable=SC2086
  run exec.txt env XWATCH_FORK_SERVER=0 $PS --gpus "$GPUS" --export "$R/exec" --json "$R/exec.json" -- --telemetry nvml
fi
