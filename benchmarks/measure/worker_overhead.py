"""Per-request cost of recording and sending an event in the worker loop:
the same loop (clock reads, bookkeeping) with and without EventWriter.request,
writing to a pipe drained by another process.

    python benchmarks/measure/worker_overhead.py [--n 300000]

Goal (issue 2): a few microseconds per request.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from xwatch.core.engine.protocol import EventWriter


def loop(n: int, writer: EventWriter | None) -> float:
    mono = time.monotonic
    t0 = time.perf_counter()
    for seq in range(1, n + 1):
        start = t_sched = mono()
        end = mono()
        if writer is not None:
            delay = start - t_sched
            writer.request(seq, end, (end - t_sched) * 1e3, (end - start) * 1e3, delay * 1e3,
                           delay > 0.001, 1, end)
    if writer is not None:
        writer.flush()
    return (time.perf_counter() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=300_000)
    a = ap.parse_args()
    r, w = os.pipe()
    drain = subprocess.Popen([sys.executable, "-c",
                              "import os,sys\nfd=int(sys.argv[1])\nwhile os.read(fd,1<<16): pass",
                              str(r)], pass_fds=(r,))
    os.close(r)
    base = min(loop(a.n, None) for _ in range(3))
    with_ev = min(loop(a.n, EventWriter(w)) for _ in range(3))
    os.close(w)
    drain.wait()
    print(f"loop without events : {base * 1e6:6.2f} us/request")
    print(f"loop with events    : {with_ev * 1e6:6.2f} us/request")
    print(f"added per request   : {(with_ev - base) * 1e6:6.2f} us")


if __name__ == "__main__":
    main()
