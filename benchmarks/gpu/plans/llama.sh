# measures: llama.cpp's llama-server (built here with CUDA from the carried source bundle) as HIGH beside ResNet-50 training as LOW (benchmarks/gpu/scenarios/serve-llama.toml: the random Llama ~75M of serve-train converted to GGUF by llama.cpp's own converter): compare native/XSched/MPS --repeat 2 (TTFT/TPOT/ITL, the server's own /metrics view, the XSched engagement verdict); what was left behind
# takes: about 8 min at its defaults (S=15, N=2): build 2-3 min on 64 cores, model and GGUF 30 s, compare 4.5 min; SMOKE=1 adds a 10 s run (~40 s)
# params: XS (XSched install; without it native,mps only), LL (the source bundle, default .llama/llama.cpp-src.tar.xz), BUILD (where it is unpacked and built, outside the repository, default /tmp/xwatch-llama), S (seconds a compare phase, default 15), N (repeats, default 2), JOBS (build jobs, default nproc), SMOKE (1: a 10 s run first), STEPS (default build,model,compare)
# The bundle is llama.cpp's source, a subset for llama-server and convert_hf_to_gguf.py
# (README of the bundle: XWATCH_SOURCE.txt; docs/serving.md, "llama.cpp"), never
# committed: the lead carries it (device run's carry: .llama). Built without
# FlashAttention kernels (GGML_CUDA_FA=OFF: most of the CUDA build's time; the server
# then runs without flash attention), for sm_90 alone, no NCCL, no web UI download.
# What to read: commands.txt (exit codes), build.log (the last lines), llama-version.txt
# and llama-ldd.txt (how the binary was built and which CUDA libraries it loads),
# compare.log (per phase: TTFT/TPOT/ITL, the server's own metrics line), compare/report.md
# (the answer; the XSched engagement table: llama-server engaged or not scheduled, and
# why), leftovers.txt (nothing listed).
S=${S:-15}; N=${N:-2}; XS=${XS:-}; LL=${LL:-.llama/llama.cpp-src.tar.xz}
BUILD=${BUILD:-/tmp/xwatch-llama}; JOBS=${JOBS:-$(nproc)}; STEPS=${STEPS:-build,model,compare}
SCEN=benchmarks/gpu/scenarios/serve-llama.toml
MODES=native,mps; XA=()
[ -n "$XS" ] && { MODES=native,xsched,mps; XA=(--xsched "$XS"); }
export XWATCH_LLAMA_CPP="$BUILD/llama.cpp"
export XWATCH_LLAMA_SERVER="$BUILD/llama.cpp/build/bin/llama-server"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# the server's processes too: llama-server and the model's launcher
left() { echo "--- left behind after $1:" >> "$R/leftovers.txt"
         ps -eo pid,stat,args | grep -E "xwatch.core.engine|nvidia-cuda-mps|xserver|llama-server|localmodel" \
           | grep -v grep >> "$R/leftovers.txt"; }
run versions.txt bash -c "nvcc --version | tail -2; cmake --version | head -1; nproc; \
python3 -c 'import torch, transformers, numpy; print(torch.__version__, transformers.__version__, numpy.__version__)'"
case ",$STEPS," in *,build,*)
  run unpack.log bash -c "rm -rf '$BUILD' && mkdir -p '$BUILD' && tar xJf '$LL' -C '$BUILD' \
&& cat '$BUILD/llama.cpp/XWATCH_SOURCE.txt'"
  run configure.log timeout 120 cmake -S "$BUILD/llama.cpp" -B "$BUILD/llama.cpp/build" \
      -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DGGML_CUDA_FA=OFF -DGGML_CUDA_NCCL=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
      -DLLAMA_USE_PREBUILT_UI=OFF
  run build.log timeout 420 cmake --build "$BUILD/llama.cpp/build" --target llama-server \
      -j "$JOBS"
  say "build: $(tail -1 "$R/build.log")"
  run llama-version.txt "$XWATCH_LLAMA_SERVER" --version
  run llama-ldd.txt bash -c "ldd '$XWATCH_LLAMA_SERVER' | grep -Ei 'cuda|cublas|ggml|llama'";; esac
case ",$STEPS," in *,model,*)
  # the model and its GGUF, once (their making apart from the phases)
  run model.log timeout 240 python3 -m xwatch.core.engine.servers.localmodel gguf small
  say "model: $(tail -2 "$R/model.log" | head -1)";; esac
if [ "${SMOKE:-0}" = 1 ]; then
  run smoke.log timeout 150 $X run "$SCEN" --headless --duration 10 --device cuda:0 \
      --telemetry nvml --export "$R/smoke"
  say "smoke: $(tail -1 "$R/smoke.log")"
fi
case ",$STEPS," in *,compare,*)
  run compare.log timeout 480 $X compare "$SCEN" --modes "$MODES" --repeat "$N" \
      --duration "$S" --device cuda:0 --telemetry nvml "${XA[@]}" --export "$R/compare"
  say "compare: $(tail -1 "$R/compare.log")";; esac
