"""Event ingest throughput, two ways.

In process: a fast producer process -> pipe -> parser -> session statistics (+ the
CSV spool), against a bare readline + json.loads loop over the same pipe.

Whole process (``--whole``): the same writer as a command workload of a real
``xwatch run --headless``; the writer times its own writes (what it waits for
xwatch), against the same writer under a bare reader process
(``for line in pipe: json.loads(line)``). Marginal events/s = events / writer time.

    python benchmarks/measure/ingest.py [--events 400000] [--whole]

Goal (issue 2): >= 100k events/s on a 2-core machine, and at least half the
bare loop's rate.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

PRODUCER = r"""
import os, sys
fd = int(sys.argv[1]); n = int(sys.argv[2])
line = '{"seq":%d,"t":%.6f,"latency_ms":%.4f,"service_ms":1.0,"sched_delay_ms":0.01,"late":false,"batch":1}\n'
buf = []
import time
t = time.monotonic()
for i in range(n):
    buf.append(line % (i, t + i * 1e-6, 1.0 + (i % 100) / 10))
    if len(buf) == 256:
        os.write(fd, "".join(buf).encode()); buf.clear()
os.write(fd, "".join(buf).encode())
"""


def produce(n: int) -> tuple[int, subprocess.Popen[bytes]]:
    r, w = os.pipe()
    p = subprocess.Popen([sys.executable, "-c", PRODUCER, str(w), str(n)], pass_fds=(w,))
    os.close(w)
    return r, p


def bare(n: int) -> float:
    r, p = produce(n)
    f = os.fdopen(r, "rb", buffering=1 << 16)
    t0 = time.perf_counter()
    count = 0
    for line in f:
        json.loads(line)
        count += 1
    dt = time.perf_counter() - t0
    p.wait()
    assert count == n, count
    return n / dt


def xwatch_path(n: int) -> float:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
    from xwatch.core.engine.live.session import Session
    from xwatch.core.engine.protocol import LineParser
    from xwatch.scenario import parse_scenario

    scen = parse_scenario({"workload": [{"name": "w", "priority": "high",
                                         "command": ["x"]}]})
    s = Session(scen)
    ph = s.new_phase("native")
    run = ph.runs["w"]
    run.state = "running"
    parser = LineParser()
    r, p = produce(n)
    t0 = time.perf_counter()
    while True:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        res = parser.feed(chunk)
        run.on_events(res.events)
    dt = time.perf_counter() - t0
    p.wait()
    assert run.rec.count == n, run.rec.count
    s.close()
    return n / dt


WRITER = r"""
import json, os, sys, time
fd = int(os.environ["XWATCH_EVENT_FD"]); n = int(sys.argv[1]); out = sys.argv[2]
os.write(fd, (json.dumps({"type": "hello", "pid": os.getpid(), "model": "writer"}) + "\n").encode())
os.write(fd, (json.dumps({"type": "ready", "t0": time.monotonic()}) + "\n").encode())
line = '{"seq":%d,"t":%.6f,"latency_ms":%.4f,"service_ms":1.0,"sched_delay_ms":0.01,"late":false,"batch":1}\n'
t0 = time.perf_counter()
buf = []
for i in range(n):
    buf.append(line % (i + 1, time.monotonic(), 1.0 + (i % 100) / 10))
    if len(buf) == 256:
        os.write(fd, "".join(buf).encode()); buf.clear()
os.write(fd, "".join(buf).encode())
dt = time.perf_counter() - t0
with open(out, "w") as f:
    f.write(str(dt))
time.sleep(1.0)  # stay until xwatch has read everything (its phase ends with us)
"""

BARE_READER = r"""
import json, os, subprocess, sys
r, w = os.pipe()
env = dict(os.environ, XWATCH_EVENT_FD=str(w))
p = subprocess.Popen([sys.executable, sys.argv[1], sys.argv[2], sys.argv[3]], pass_fds=(w,), env=env)
os.close(w)
n = 0
for line in os.fdopen(r, "rb", buffering=1 << 16):
    json.loads(line)
    n += 1
p.wait()
"""


def whole(n: int, repeat: int) -> None:
    import tempfile

    root = os.path.join(os.path.dirname(__file__), "..", "..")
    tmp = tempfile.mkdtemp(prefix="xwatch-ingest-")
    writer = os.path.join(tmp, "writer.py")
    with open(writer, "w") as f:
        f.write(WRITER)
    scen = os.path.join(tmp, "w.toml")
    res = os.path.join(tmp, "t.txt")
    with open(scen, "w") as f:
        f.write(f'duration_s = 600\n[[workload]]\nname = "w"\npriority = "high"\n'
                f'command = ["{sys.executable}", "{writer}", "{n}", "{res}"]\n'
                f'stall_s = false\nstdout = "pipe"\n')
    bare_t, xw_t = [], []
    for _ in range(repeat):  # interleaved: drift hits both alike
        subprocess.run([sys.executable, "-c", BARE_READER, writer, str(n), res], check=True)
        bare_t.append(float(open(res).read()))
        subprocess.run([sys.executable, "-m", "xwatch", "run", scen, "--headless",
                        "--telemetry", "off", "--spool-max-mb", "4096"], cwd=root,
                       check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        xw_t.append(float(open(res).read()))
    b, x = min(bare_t), min(xw_t)
    print(f"whole process, {n:,} events, best of {repeat} (all: bare "
          f"{', '.join(f'{v:.2f}' for v in bare_t)} s; xwatch {', '.join(f'{v:.2f}' for v in xw_t)} s)")
    print(f"writer's time under a bare reader : {b:6.2f} s  ({n / b:>10,.0f} events/s)")
    print(f"writer's time under xwatch        : {x:6.2f} s  ({n / x:>10,.0f} events/s)")
    print(f"xwatch / bare                     : {x / b:.2f}x the writer's wait (goal <= 1.5x)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=400_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--whole", action="store_true",
                    help="measure the whole process (xwatch run --headless) instead")
    a = ap.parse_args()
    if a.whole:
        whole(a.events, a.repeat)
        return
    b = [bare(a.events) for _ in range(a.repeat)]
    x = [xwatch_path(a.events) for _ in range(a.repeat)]
    bb, xb = max(b), max(x)
    print(f"bare readline+json.loads : {bb:>10,.0f} events/s (best of {a.repeat})")
    print(f"xwatch parse+stats+spool : {xb:>10,.0f} events/s (best of {a.repeat})")
    print(f"ratio                    : {xb / bb:.2f}")


if __name__ == "__main__":
    main()
