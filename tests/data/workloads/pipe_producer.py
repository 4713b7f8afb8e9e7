"""An external workload in plain Python that speaks the event protocol.

argv: RATE [COUNT] [--malformed N] [--crash-after N] [--crash-if-env VAR] [--hang-after N]
      [--service-ms MS] (each request reports this service time: a busy workload)
      [--add-ms-if-env VAR[=VALUE]:MS] (every latency MS longer when VAR is set, or set to
      VALUE: a mode, or one setting of it, that slows it)
      [--rate-from-env VAR:DIV] (when VAR is set, the rate is its value / DIV: a setting that
      speeds or slows a background workload)
      [--llm N] (each request also reports what an LLM client does: ttft_ms, tpot_ms and
      itl_ms, the list of its N-1 inter-token latencies, in whole milliseconds)
      [--pci-by-visible HEX,HEX,...]  (hello reports the PCI bus of the GPU that
      CUDA_VISIBLE_DEVICES selects, as torch would; latency grows with that index)
"""

import json
import os
import sys
import time

args = sys.argv[1:]
rate = float(args[0])
count = int(args[1]) if len(args) > 1 and not args[1].startswith("--") else None
opts = {args[i]: args[i + 1] for i in range(len(args) - 1)}
malformed = int(opts.get("--malformed", 0))
_rate_var, _, _rate_div = opts.get("--rate-from-env", ":1").partition(":")
if _rate_var and os.environ.get(_rate_var):
    rate = float(os.environ[_rate_var]) / float(_rate_div)
crash_after = int(opts.get("--crash-after", 0)) or None
crash_env = opts.get("--crash-if-env")
hang_after = int(opts.get("--hang-after", 0)) or None
pci_buses = opts.get("--pci-by-visible")
service_ms = float(opts["--service-ms"]) if "--service-ms" in opts else None
slow_var, _, slow_ms = opts.get("--add-ms-if-env", ":0").partition(":")
slow_var, _, slow_want = slow_var.partition("=")
slow_got = os.environ.get(slow_var) if slow_var else None
added_ms = float(slow_ms) if slow_got and (not slow_want or slow_got == slow_want) else 0.0
visible = int(os.environ.get("CUDA_VISIBLE_DEVICES", "0") or 0)
fd = int(os.environ["XWATCH_EVENT_FD"])


def emit(obj):
    os.write(fd, (json.dumps(obj) + "\n").encode())


hello = {"type": "hello", "pid": os.getpid(), "model": "external",
         "env": {k: v for k, v in os.environ.items() if k.startswith(("XSCHED_", "LD_"))}}
if pci_buses:
    hello["pci"] = {"domain": 0, "bus": int(pci_buses.split(",")[visible], 16), "device": 0}
    hello["device_name"] = f"Fake GPU {visible}"
emit(hello)
print("producer started", flush=True)
for _ in range(malformed):
    os.write(fd, b"this is not json\n")
t0 = time.monotonic()
emit({"type": "ready", "t0": t0})
def _crash_wanted(spec):
    if not spec:
        return False
    var, _, want = spec.partition("=")
    got = os.environ.get(var)
    return bool(got) and (not want or got == want)


if _crash_wanted(crash_env):
    time.sleep(0.3)
    print("RuntimeError: miopenStatusUnknownError", file=sys.stderr, flush=True)
    sys.exit(3)
i = 0
while count is None or i < count:
    target = t0 + i / rate
    now = time.monotonic()
    if target > now:
        time.sleep(target - now)
    i += 1
    end = time.monotonic()
    extra = (visible * 3.0 if pci_buses else 0.0) + added_ms
    ev = {"seq": i, "t": end, "latency_ms": 1.0 + extra + (i % 10) / 10, "batch": 2}
    if service_ms is not None:
        ev["service_ms"] = service_ms
        ev["latency_ms"] += service_ms
    if "--llm" in opts:
        gaps = [10 + (i + k) % 3 for k in range(int(opts["--llm"]) - 1)]
        ev.update(ttft_ms=40 + i % 5, tpot_ms=sum(gaps) / len(gaps), itl_ms=gaps)
    emit(ev)
    if hang_after and i >= hang_after:  # alive, silent: what a hung GPU looks like
        while True:
            time.sleep(3600)
    if crash_after and i >= crash_after:
        print("CUDA error: an illegal memory access was encountered", file=sys.stderr, flush=True)
        sys.exit(3)
