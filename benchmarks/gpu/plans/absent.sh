# measures: issue 64 goals 2 and 5 seen live. (1) headless run of benchmarks/gpu/scenarios/absent.toml under XSched and under MPS: the "! phase" line naming infer (default stream: not scheduled; its own pipe folder: not an MPS client), train never named, and when the line came by the phase clock of the progress line before it (goal: within 10 s of the first requests; absent.txt); (2) the same under XSched in the dashboard in tmux, a capture every 2 s: the first that names infer on the Live tab, and its clock; (3) serve-train in the dashboard: the table headed TTFT P50 and the chart's "chat TTFT ≤200ms" (serve-*.txt)
# takes: about 6 min
# params: XS (the XSched install, required), S (seconds a phase, default 30), SIZE (tmux size, default 120x40)
# (--no-preflight: the preflight refuses a phase whose workload declares the default stream or its own MPS pipe folder before anything starts, as a 2026-11-29 H200 run showed; what is measured here is the live naming of a program the preflight could not foresee)
XS=${XS:?XS=the XSched install}; S=${S:-30}; SIZE=${SIZE:-120x40}
SC=benchmarks/gpu/scenarios/absent.toml
say "headless: XSched, then MPS"
run run-xsched.txt $X run $SC --mode xsched --xsched "$XS" --headless --no-preflight --device cuda:0 --telemetry nvml --duration "$S" --no-keep --export "$R/run-xsched"
run run-mps.txt $X run $SC --mode mps --headless --no-preflight --device cuda:0 --telemetry nvml --duration "$S" --no-keep --export "$R/run-mps"
say "dashboard under XSched, a capture every 2 s"
tmx new -d -s xw -x "${SIZE%x*}" -y "${SIZE#*x}" "$X run $SC --mode xsched --xsched $XS --no-preflight --device cuda:0 --telemetry nvml --duration $S --no-keep; echo EXIT=\$? > $R/dash-exit.txt"
for k in $(seq -w 1 30); do pause 2; tmx capture-pane -p -t xw > "$R/dash-$k.txt"; done
tmx send-keys -t xw q; pause 10; tmx kill-server 2>/dev/null; left dashboard
say "serve-train in the dashboard"
tmx new -d -s sv -x "${SIZE%x*}" -y "${SIZE#*x}" "$X run serve-train --device cuda:0 --telemetry nvml --duration 60 --no-keep; echo EXIT=\$? > $R/serve-exit.txt"
for k in 1 2 3 4; do pause 30; tmx capture-pane -p -t sv > "$R/serve-$k.txt"; done
tmx send-keys -t sv q; pause 15; tmx kill-server 2>/dev/null; left serve-train
[ -n "${DRY:-}" ] && return 0  # (sourced by device.sh: its end is still written)
python3 - "$R" > "$R/absent.txt" 2>&1 <<'PY'
import glob, re, sys
R = sys.argv[1]
CLOCK = re.compile(r"^\[\s*([\d.]+)s ")
for mode in ("xsched", "mps"):
    clock, first, train = None, None, False
    for line in open(f"{R}/run-{mode}.txt", errors="replace"):
        if (m := CLOCK.match(line)):
            clock = float(m.group(1))
        if line.startswith("! phase") and " infer: " in line and first is None:
            first = (clock, line.strip())
        train = train or (line.startswith("! phase") and " train: " in line)
    ok = first is not None and first[0] is not None and first[0] <= 10.0 and not train
    print(f"{'PASS' if ok else 'FAIL'} headless {mode}: infer named at phase clock "
          f"{first[0] if first else None} s, train named: {train}")
    print(f"    {first[1] if first else '(never named)'}")
seen = None
for f in sorted(glob.glob(f"{R}/dash-*.txt")):
    text = open(f, errors="replace").read()
    if "infer: " in text and "⚠" in text:
        m = re.search(r"(\d+)/\d+s \[running\]", text)
        seen = (f, m.group(1) if m else "loading")
        break
print(f"{'PASS' if seen and seen[1] != 'loading' and int(seen[1]) <= 10 else 'CHECK'} "
      f"dashboard: infer first named in {seen[0] if seen else None} at clock "
      f"{seen[1] if seen else None} s")
serve = [open(f, errors="replace").read() for f in sorted(glob.glob(f"{R}/serve-*.txt"))]
ok = any("TTFT P50" in s and "chat TTFT ≤200ms" in s for s in serve)
print(f"{'PASS' if ok else 'FAIL'} serve-train: a capture with the TTFT P50 columns and "
      "'chat TTFT ≤200ms' on the chart")
PY
say "$(grep -c '^PASS' "$R/absent.txt") PASS, $(grep -c '^FAIL' "$R/absent.txt") FAIL (absent.txt)"
