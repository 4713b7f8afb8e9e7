"""A paced synthetic workload, run as a program (``python xwatch/testing/fleet/paced.py RATE
MS [--batch N]``; the fleet's speed benchmark runs it): it speaks the event protocol,
sends RATE requests a second whose latency is drawn, not spent on a core (log-normal
around MS, times a run-level factor drawn once per process: runs differ as real runs
do), and sleeps between them, so that many copies on a 2-core machine do not compete for
its cores."""

from __future__ import annotations

import json
import os
import random
import sys
import time


def main(argv: list[str]) -> None:
    rate, ms = float(argv[0]), float(argv[1])
    batch = int(argv[argv.index("--batch") + 1]) if "--batch" in argv else 1
    fd = int(os.environ["XWATCH_EVENT_FD"])
    rng = random.Random()
    run_factor = rng.lognormvariate(0.0, 0.05)  # this run's own speed: 5% run to run

    def emit(obj: dict[str, object]) -> None:
        os.write(fd, (json.dumps(obj) + "\n").encode())

    emit({"type": "hello", "pid": os.getpid(), "model": "external", "env": {}})
    t0 = time.monotonic()
    emit({"type": "ready", "t0": t0})
    i = 0
    while True:
        target = t0 + i / rate
        now = time.monotonic()
        if target > now:
            time.sleep(target - now)
        i += 1
        lat = ms * run_factor * rng.lognormvariate(0.0, 0.2)
        emit({"seq": i, "t": time.monotonic(), "latency_ms": lat, "batch": batch})


if __name__ == "__main__":
    main(sys.argv[1:])
