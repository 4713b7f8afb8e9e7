# measures: issue 67 run 3, XSched cold starts with copies on several GPUs: N separate `compare intensive --gpus GPUS --modes native,xsched` runs, each a fresh process with its own xserver start and preflight (a cold start), then every phase's status counted over all of them (cold.txt: "K of M XSched phases failed", each failure's error)
# takes: about 30 s a run at S=5; LIMIT (seconds) stops starting runs past it
# params: XS (the XSched install, required), GPUS (default 0,1,2,3), N (runs, default 20), S (seconds a phase, default 5), LIMIT (seconds, default 0: none)
XS=${XS:?XS=the XSched install}; GPUS=${GPUS:-0,1,2,3}; N=${N:-20}; S=${S:-5}; LIMIT=${LIMIT:-0}
t_start=$SECONDS
for k in $(seq 1 "$N"); do
  if [ "$LIMIT" -gt 0 ] && [ $((SECONDS - t_start)) -ge "$LIMIT" ]; then
    say "stopped before run $k: LIMIT $LIMIT s reached"; break
  fi
  say "cold start $k of $N on $GPUS"
  run "c$k.log" $X compare intensive --gpus "$GPUS" --modes native,xsched --repeat 1 \
    --duration "$S" --xsched "$XS" --telemetry nvml --export "$R/c$k"
done
[ -n "${DRY:-}" ] && return 0
python3 - "$R" > "$R/cold.txt" 2>&1 <<'PY'
import glob, json, os, sys
runs = sorted(glob.glob(os.path.join(sys.argv[1], "c*/snapshot.json")))
xs = bad = 0
for path in runs:
    doc = json.load(open(path))
    for p in doc["phases"]:
        if p["mode"] != "xsched":
            continue
        xs += 1
        if p.get("status") != "done":
            bad += 1
            print(f"FAILED {path}: {p['name']} {p.get('status')}: {(p.get('error') or '')[:300]}")
        else:
            eng = (p.get("xsched") or {}).get("workloads") or {}
            st = sorted({v.get("status", "-") for v in eng.values()})
            print(f"done   {path}: {p['name']} copies {len(p['workloads'])}, XSched {st}")
print(f"{len(runs)} cold runs, {bad} of {xs} XSched phases failed")
PY
say "$(tail -n 1 "$R/cold.txt")"
