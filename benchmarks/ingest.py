"""Event ingest throughput: a fast producer process -> pipe -> parser -> session
statistics (+ the CSV spool), against a bare readline + json.loads loop over the
same pipe in the same run.

    python benchmarks/ingest.py [--events 400000]

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
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from xwatch.core.engine.protocol import LineParser
    from xwatch.core.engine.session import Session
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=400_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    b = [bare(a.events) for _ in range(a.repeat)]
    x = [xwatch_path(a.events) for _ in range(a.repeat)]
    bb, xb = max(b), max(x)
    print(f"bare readline+json.loads : {bb:>10,.0f} events/s (best of {a.repeat})")
    print(f"xwatch parse+stats+spool : {xb:>10,.0f} events/s (best of {a.repeat})")
    print(f"ratio                    : {xb / bb:.2f}")


if __name__ == "__main__":
    main()
