# measures: issue 64's "bring your own program" on one GPU: the how-to's two example programs (examples/own: infer.py writing JSON lines to the event fd on a created stream, train.py read by a regex) compared in three modes, then the same with infer.py on the default stream (own-default-stream.toml), which XSched 1.2 does not schedule: look for every XSched workload engaged in own/, infer not-scheduled in default/ and the answer giving XSched no verdict there ("took no part"), never "within noise"
# takes: about 6 min at S=15 N=2
# params: XS (the XSched install, required), S (seconds a phase, default 15), N (repeats, default 2), GPUS (a copy of each program on each of these GPUs, e.g. 0,1; default: one GPU), ONLY (own or own-default-stream: that one alone)
XS=${XS:?XS=the XSched install}; S=${S:-15}; N=${N:-2}; GPUS=${GPUS:-}
SCS=${ONLY:-own own-default-stream}
run versions.txt python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
for sc in $SCS; do
  say "compare $sc${GPUS:+ on GPUs $GPUS}"
  # shellcheck disable=SC2086
  run "$sc.log" $X compare "examples/own/$sc.toml" --modes native,xsched,mps --repeat "$N" \
    ${GPUS:+--gpus "$GPUS"} --duration "$S" --telemetry nvml --xsched "$XS" --fail-if slower --export "$R/$sc"
done
[ -n "${DRY:-}" ] && return 0
for sc in $SCS; do
  python3 - "$R/$sc/snapshot.json" > "$R/$sc-verdicts.txt" 2>&1 <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for p in doc["phases"]:
    xs = (p.get("xsched") or {}).get("workloads") or {}
    mp = (p.get("mps") or {}).get("workloads") or {}
    for name in p["workloads"]:
        v = (xs.get(name) or mp.get(name) or {}).get("status", "-")
        print(p["name"], name, v)
for a in doc.get("answer") or []:
    print("answer", json.dumps(a)[:300])
PY
  say "$sc: $(grep -c engaged "$R/$sc-verdicts.txt") engaged, $(grep -c not-scheduled "$R/$sc-verdicts.txt") not-scheduled"
done
