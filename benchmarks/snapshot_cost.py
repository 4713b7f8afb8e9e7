"""The per-second work the dashboard does on its event loop for N workloads, without
the app, processes or a terminal: one ``Session.snapshot`` (what every tick takes),
the watchdog's stall checks (4 per second) and the ingest of a second of events
(in reads of a quarter second per workload, as the pipe reader delivers them at
these rates).

    python benchmarks/snapshot_cost.py [--workloads 2,4,8,16] [--seconds 120]

The session is fed ``--seconds`` of synthetic requests first (HIGH: 20 req/s,
lognormal around 5 ms; LOW: 2 req/s of 400 ms batches), so the per-second rows and
histograms are as big as a two-minute run's. Times are medians of 20 repetitions of
``time.perf_counter`` around each step, in ms per second of session.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from xwatch.core.engine.live.session import Session
from xwatch.scenario import parse_scenario


def build(n: int) -> tuple[Session, float]:
    gpus = n // 2
    raw = {"name": "fleet", "duration_s": 600, "gpus": list(range(gpus)) if gpus > 1 else [],
           "workload": [{"name": "high", "priority": "high", "command": ["true"], "rate": 20},
                        {"name": "low", "priority": "low", "command": ["true"], "batch": 64}]}
    scen = parse_scenario(raw, "<fleet>")
    s = Session(scen, spool_max_mb=None)
    p = s.new_phase("native")
    t0 = time.monotonic() - 10_000.0
    p.t_start = p.t_measure = t0
    for run in p.runs.values():
        run.state = "running"
        run.ready_t0 = t0
        run.rec.t0 = t0
    return s, t0


def feed(s: Session, t_from: float, t_to: float, rng: random.Random) -> None:
    """Requests ending in [t_from, t_to), delivered per workload in 0.25 s reads."""
    p = s.current
    assert p is not None
    for run in p.runs.values():
        high = run.spec.priority_value > 0
        step = 0.05 if high else 0.5
        t = t_from
        batch: list[dict[str, object]] = []
        seq = 0
        while t < t_to:
            lat = rng.lognormvariate(1.6, 0.35) if high else rng.lognormvariate(6.0, 0.1)
            batch.append({"seq": seq, "t": t, "latency_ms": lat, "batch": 1 if high else 64})
            seq += 1
            t += step
            if len(batch) >= (5 if high else 1):
                run.on_events(batch)
                batch = []
        if batch:
            run.on_events(batch)


def measure(n: int, seconds: int, reps: int = 20) -> dict[str, float]:
    rng = random.Random(1)
    s, t0 = build(n)
    feed(s, t0, t0 + seconds, rng)
    now = t0 + seconds
    p = s.current
    assert p is not None
    snaps, stalls, ingest = [], [], []
    for _ in range(reps):
        a = time.perf_counter()
        s.snapshot(now=now)
        snaps.append(time.perf_counter() - a)
        a = time.perf_counter()
        for _ in range(4):
            p.check_stalls(now)
        stalls.append(time.perf_counter() - a)
        a = time.perf_counter()
        feed(s, now, now + 1.0, rng)
        ingest.append(time.perf_counter() - a)
        now += 1.0
    s.close()
    return {k: 1000 * statistics.median(v)
            for k, v in (("snapshot", snaps), ("stalls", stalls), ("ingest", ingest))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", default="2,4,8,16")
    ap.add_argument("--seconds", type=int, default=120)
    a = ap.parse_args()
    print(f"{'workloads':>9} {'snapshot':>9} {'stalls x4':>10} {'ingest 1 s':>11}   ms per second")
    for n in (int(x) for x in a.workloads.split(",")):
        r = measure(n, a.seconds)
        print(f"{n:9d} {r['snapshot']:9.2f} {r['stalls']:10.2f} {r['ingest']:11.2f}")


if __name__ == "__main__":
    main()
