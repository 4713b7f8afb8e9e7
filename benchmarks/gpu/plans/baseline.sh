# measures: a first look at a GPU machine: doctor, intensive, HIGH alone, the default stream, standard, bert; a telemetry poll and the worker's per-request cost
# takes: about 6 min
# params: S (seconds a run, default 30)
S=${S:-30}
run versions.txt python3 -c "import torch,torchvision,transformers;print(torch.__version__,torchvision.__version__,transformers.__version__)"
run doctor.txt $X doctor
run intensive.log $X run intensive --headless --duration "$S" --device cuda:0 --export "$R/intensive"
run high-alone.log $X run benchmarks/gpu/scenarios/high-alone.toml --headless --duration "$S" --device cuda:0 --export "$R/high-alone"
run default-stream.log $X run benchmarks/gpu/scenarios/intensive-default-stream.toml --headless --duration "$S" --device cuda:0 --export "$R/default-stream"
run standard.log $X run standard --headless --duration "$S" --device cuda:0 --export "$R/standard"
run bert.log $X run bert --headless --duration "$S" --device cuda:0 --export "$R/bert"
run nvml_poll.txt python3 benchmarks/measure/telemetry_poll.py --backend nvml --gpu-load
run worker_overhead.txt python3 benchmarks/measure/worker_overhead.py
