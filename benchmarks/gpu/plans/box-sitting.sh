# measures: one sitting on a 4-GPU box for issues 57 and 58, each part its own plan into its own folder (R/NAME), in order of what matters most, llama.cpp's CUDA build in the background from the start: serving (serving-box: serve-train with nothing set by hand, compare over 4 GPUs with a server per GPU, the dashboard with x and m), llama (llama: llama-server as HIGH in three modes), shot (the home page's dashboard SVGs on 2 GPUs under XSched), start (xsched-start: XSched copies forked, phase start by mode), join (join-stall: a joiner's exit and a LOW that leaves), split (split: the A/A and the widths split against replicate), race (race-box: a race over every GPU)
# takes: about 26 min on 4 GPUs at its defaults; run it detached (device.sh detach, then wait, again and again)
# params: XS (the XSched install, required), PARTS (default "llamabuild serving llama shot start join split race"; llamabuild: llama.cpp's build in the background, which llama waits for; llama alone reuses an earlier build), S (seconds a phase where a part takes it, default 10)
# Each part's folder has the part's own commands.txt, progress.txt and leftovers.txt;
# R/progress.txt says which part runs. A part that fails does not stop the others.
XS=${XS:?"XS=the XSched install"}; [ -d "$XS" ] && XS=$(cd "$XS" && pwd)
PARTS=${PARTS:-"llamabuild serving llama shot start join split race"}; S=${S:-10}
D="bash benchmarks/gpu/device.sh"
part() { local name=$1; shift; say "part $name: $*"; echo "\$ $D $*" >> "$R/commands.txt"
         local t0=$SECONDS; $D "$@" > "$R/$name.log" 2>&1
         echo "  -> exit $?, $((SECONDS - t0)) s ($name.log)" >> "$R/commands.txt"
         left "part $name"; }
has() { case " $PARTS " in *" $1 "*) return 0;; esac; return 1; }
if has llamabuild; then  # the CUDA build on the host's cores while the GPUs serve
  bg llama-build.log $D llama "$R/llama-build" STEPS=build JOBS=40 XS="$XS"; LLB=${BG:-}
fi
has serving && part serving serving-box "$R/serving" XS="$XS" GPUS=0,1,2,3 DGPUS=0,1 S="$S" N=2 WAIT=25
if has llama; then
  [ -n "${LLB:-}" ] && wait "$LLB"
  part llama llama "$R/llama" STEPS=model,compare S="$S" N=2 XS="$XS"
fi
if has shot; then
  mkdir -p "$R/shot"
  run shot/shot.log timeout 240 python3 benchmarks/measure/dashboard_screenshot.py intensive \
    "$R/shot/screenshot-gpus.svg" --gpus 0,1 --mode xsched --xsched "$XS" --telemetry nvml \
    --seconds 60 --size 160x50 --tab-shot "3:$R/shot/screenshot-gpus-xsched.svg"
fi
has start && part start xsched-start "$R/start" XS="$XS" GPUS=0,1,2,3 N=2
has join && part join join-stall "$R/join" XS="$XS" DUR1=45 DUR2=12
has split && part split split "$R/split" STEPS="aa rep split" R_AA=4 N=2 S=8 GPUS=0,1,2,3
has race && part race race-box "$R/race" XS="$XS" STEPS=box BUDGET=2
true
