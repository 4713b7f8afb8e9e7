# measures: the fleet's box agent (issue 68) on a GPU without Ray, the same BoxSession.run the Ray actor calls: compare's runs of native and MPS (and XSched with XS) on one GPU, then on GPUS, each phase named by its box; agent.txt and gpus.txt end with "agent path: PASS" or "FAIL", and say each phase's status and the answer; nothing left behind
# takes: about 3 min
# params: XS (the XSched install: adds xsched), SCEN (default intensive), DEV (default cuda:0), GPUS (default 0,1), N (repeats, default 2), S (seconds a phase, default 10)
SCEN=${SCEN:-intensive}; DEV=${DEV:-cuda:0}; GPUS=${GPUS:-0,1}
MODES=native,mps; XA=""
if [ -n "${XS:-}" ]; then MODES=native,mps,xsched; XA="--xsched $XS"; fi
run python.txt python3 -c "import msgspec, torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpus', torch.cuda.device_count())"
say "one GPU ($DEV): $MODES"
# shellcheck disable=SC2086
run agent.txt python3 benchmarks/measure/fleet_agent.py "$SCEN" --modes "$MODES" --repeat "${N:-2}" --duration "${S:-10}" --device "$DEV" --telemetry nvml --export "$R/agent" $XA
say "GPUs $GPUS: $MODES"
# shellcheck disable=SC2086
run gpus.txt python3 benchmarks/measure/fleet_agent.py "$SCEN" --modes "$MODES" --repeat "${N:-2}" --duration "${S:-10}" --gpus "$GPUS" --telemetry nvml --export "$R/gpus" $XA
