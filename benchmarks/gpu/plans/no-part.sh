# measures: issue 64 goal 1 on the GPU: two programs of one's own (an inference loop writing JSON lines to the event fd, a training loop whose lines a regex parses) compared native,xsched,mps with --fail-if slower. Case "mixed": infer on PyTorch's default stream (XSched 1.2 does not schedule it), train on a created stream: the XSched line keeps its verdict and says "only train was scheduled by XSched: ... infer ran unscheduled beside it (infer not scheduled ...)", the records carry took_part true, a scope and infer's no_part; MPS both in-mps. Case "default": both on the default stream: "XSched vs native ...: no verdict: XSched took no part: ...", --fail-if exits 3 with "GATE slower: XSched: not judged", every xsched record took_part false; check.txt says PASS/FAIL per claim
# takes: about 4 min at S=15 N=2
# params: XS (the XSched install, required), S (seconds a phase, default 15), N (repeats, default 2), DEV (default cuda:0)
XS=${XS:?XS=the XSched install}; S=${S:-15}; N=${N:-2}; DEV=${DEV:-cuda:0}
mkdir -p "$R/prog"
cat > "$R/prog/infer.py" <<'EOF'
# an inference loop of one's own: JSON lines to xwatch's event fd; STREAM=default|created
import json, os, sys, time
import torch
fd = int(os.environ["XWATCH_EVENT_FD"])
def emit(o): os.write(fd, (json.dumps(o) + "\n").encode())
dev = torch.device(os.environ.get("DEV", "cuda:0"))
x = torch.randn(64, 2048, device=dev)
w = torch.randn(2048, 2048, device=dev)
stream = torch.cuda.Stream(dev) if sys.argv[1] == "created" else torch.cuda.default_stream(dev)
emit({"type": "hello", "pid": os.getpid(), "model": f"my-infer ({sys.argv[1]} stream)"})
t0 = time.monotonic()
emit({"type": "ready", "t0": t0})
i = 0
while True:
    i += 1
    due = t0 + i / 50
    time.sleep(max(0.0, due - time.monotonic()))
    with torch.cuda.stream(stream):
        for _ in range(8):
            y = torch.relu(x @ w)
        stream.synchronize()
    end = time.monotonic()
    emit({"seq": i, "t": end, "latency_ms": (end - due) * 1000})
EOF
cat > "$R/prog/train.py" <<'EOF'
# a training loop of one's own, its progress printed and parsed by a regex; STREAM as above
import os, sys, time
import torch
dev = torch.device(os.environ.get("DEV", "cuda:0"))
m = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 10)).to(dev)
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randn(256, 4096, device=dev)
y = torch.randint(0, 10, (256,), device=dev)
stream = torch.cuda.Stream(dev) if sys.argv[1] == "created" else torch.cuda.default_stream(dev)
step = 0
while True:
    step += 1
    t = time.monotonic()
    with torch.cuda.stream(stream):
        loss = torch.nn.functional.cross_entropy(m(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        stream.synchronize()
    print(f"step {step} took {(time.monotonic() - t) * 1000:.3f} ms, 256 samples", flush=True)
EOF
scen() {  # scen NAME INFER_STREAM TRAIN_STREAM
  cat > "$R/prog/$1.toml" <<EOF
name = "$1"
duration_s = $S
[[workload]]
name = "infer"
priority = "high"
command = ["python3", "$R/prog/infer.py", "$2"]
env = { DEV = "$DEV" }
[[workload]]
name = "train"
priority = "low"
command = ["python3", "$R/prog/train.py", "$3"]
env = { DEV = "$DEV" }
regex = 'took (?P<latency_ms>[0-9.]+) ms, (?P<samples>[0-9]+) samples'
EOF
}
scen mixed default created
scen default default default
for c in mixed default; do
  say "compare $c"
  run "$c.log" python3 -m xwatch compare "$R/prog/$c.toml" --modes native,xsched,mps --repeat "$N" --duration "$S" --telemetry nvml --xsched "$XS" --fail-if slower --export "$R/$c"
done
[ -n "${DRY:-}" ] && return 0  # (sourced by device.sh: its end is still written)
python3 - "$R" > "$R/check.txt" 2>&1 <<'EOF'
import json, sys
R = sys.argv[1]
bad = 0
def claim(ok, what):
    global bad
    bad += not ok
    print(("PASS " if ok else "FAIL ") + what)
for case in ("mixed", "default"):
    doc = json.load(open(f"{R}/{case}/snapshot.json"))
    log = open(f"{R}/{case}.log").read()
    st = {(p["name"], n): w["status"] for p in doc["phases"] if p.get("xsched")
          for n, w in p["xsched"]["workloads"].items()}
    print(f"--- {case}: XSched verdicts {st}")
    xs = [a for a in doc["answer"] if a["step"] == "xsched"]
    mps = [a for a in doc["answer"] if a["step"] == "mps"]
    line = next((ln for ln in log.splitlines() if ln.startswith("XSched vs native")), "")
    print(line)
    if case == "mixed":
        claim(all(a.get("took_part") is True and "only train was scheduled" in a.get("scope", "")
                  for a in xs) and bool(xs), "mixed: XSched records took_part, scope names train")
        claim("only train was scheduled by XSched" in line, "mixed: the console's line says so")
        claim({n["workload"] for a in xs for n in a["no_part"]} == {"infer"},
              "mixed: infer is the one out")
    else:
        claim(bool(xs) and all(a.get("took_part") is False for a in xs),
              "default: every XSched record took_part false")
        claim("no verdict: XSched took no part" in line and "within noise" not in line,
              "default: the line gives no verdict, names who and why")
        claim("GATE slower: XSched: not judged" in log, "default: the gate says not judged")
        claim("exit 3 after" in log, "default: --fail-if exits 3")
    claim(all(a.get("took_part") is True and not a["no_part"] for a in mps) and bool(mps),
          f"{case}: MPS took part, both clients")
print("all PASS" if not bad else f"{bad} FAIL")
EOF
say "check: $(tail -n 1 "$R/check.txt")"
