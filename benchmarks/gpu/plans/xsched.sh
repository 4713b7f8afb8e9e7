# measures: an XSched install as a user has it: doctor, every policy set and read back against the real xserver, where its shim's exit crash happens, the graphed decoder beside training under each mode
# takes: about 8 min
# params: XS (XSched install, required), S (default 15), N (repeats, default 3)
XS=${XS:?XS=the XSched install}; S=${S:-15}; N=${N:-3}
run versions.txt bash -c "grep XSched_VERSION $XS/lib/cmake/XSched/XSchedConfig.cmake"
run doctor.txt $X doctor --xsched "$XS"
run policies.txt python3 benchmarks/investigations/xsched/xsched_policies.py "$XS" --spup
run nvcc.log nvcc -O2 -arch=sm_90 -o /tmp/stream_loop benchmarks/investigations/xsched/repro/stream_loop.cu
run exit_crash.txt python3 benchmarks/investigations/xsched/xsched_exit_crash.py "$XS" "$R/crash" 20 2 /tmp/stream_loop
run llm-graphed.log $X compare benchmarks/gpu/scenarios/llm-graphed.toml --modes native,mps,xsched --repeat "$N" --duration "$S" --device cuda:0 --telemetry nvml --xsched "$XS" --export "$R/llm-graphed"
