"""The per-second work the dashboard does on its event loop for N workloads, without
the app, processes or a terminal: one ``Session.snapshot`` (what every tick takes),
the watchdog's stall checks (4 per second) and the ingest of a second of events
(in reads of a quarter second per workload, as the pipe reader delivers them at
these rates).

    python benchmarks/measure/snapshot_cost.py [--workloads 2,4,8,16] [--seconds 120]

The session is fed ``--seconds`` of synthetic requests first (HIGH: 20 req/s,
lognormal around 5 ms; LOW: 2 req/s of 400 ms batches), so the per-second rows and
histograms are as big as a two-minute run's. Times are medians of 20 repetitions of
``time.perf_counter`` around each step, in ms per second of session.

Writing and reading a large snapshot (``--io``): the session above, with two GPUs'
telemetry at 2 Hz, written with ``write_snapshot`` (``snapshot.json`` and the events)
and read back with ``load_snapshot``, each ``--repeat`` times (medians, ms):

    python benchmarks/measure/snapshot_cost.py --io --workloads 16 --seconds 600

``--ab DIR`` runs the same ``--io`` measurement against another checkout of xwatch in
DIR (``git worktree add /tmp/old 90ad4d0``) and this one, alternating, ``--rounds``
times each in fresh interpreters, and prints both side by side.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
if "--tree" in sys.argv:  # measure another checkout (see --ab)
    HERE = os.path.abspath(sys.argv[sys.argv.index("--tree") + 1])
sys.path.insert(0, HERE)

try:
    from xwatch.core.engine.live.session import Session
except ImportError:  # a checkout from before issue 42 (--ab against it)
    from xwatch.core.engine.session import Session  # type: ignore[no-redef]
from xwatch.scenario import parse_scenario  # noqa: E402

try:  # events are typed (issue 66)
    from xwatch.core.model.events import events_of as typed
except ImportError:  # a checkout from before: dicts
    def typed(events: list[dict[str, Any]]) -> Any:  # type: ignore[misc]
        return events


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
        batch: list[dict[str, Any]] = []
        seq = 0
        while t < t_to:
            lat = rng.lognormvariate(1.6, 0.35) if high else rng.lognormvariate(6.0, 0.1)
            batch.append({"seq": seq, "t": t, "latency_ms": lat, "batch": 1 if high else 64})
            seq += 1
            t += step
            if len(batch) >= (5 if high else 1):
                run.on_events(typed(batch))
                batch = []
        if batch:
            run.on_events(typed(batch))


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


class FakeTelemetry:
    """Two GPUs sampled at 2 Hz over ``seconds``: what a sampler exports."""

    def __init__(self, t0: float, seconds: int) -> None:
        self.samples = [
            {"t": round(t0 + i / 2, 4), "device": f"gpu{d}", "name": "NVIDIA H100",
             "bus_id": f"0000:{0x19 + d:02x}:00.0", "ours": True,
             "metrics": {"util_pct": 50.0 + i % 50, "mem_used_mib": 20000.0 + i,
                         "power_w": 300.0 + i % 100, "temp_c": 60.0},
             "procs": {"4242": {"mem_mib": 1000.0, "sm_pct": 40.0}},
             "procs_t": round(t0 + i / 2, 4)}
            for i in range(seconds * 2) for d in range(2)]

        try:  # a checkout with the typed model: samples as the sampler keeps them
            from xwatch.core import model
        except ImportError:  # before it: plain data
            self.model = None
        else:
            self.model = model
            self.samples = [model.Sample(**x) for x in self.samples]  # type: ignore[arg-type]

    def export(self, last: int | None = None) -> Any:
        d = {"backend": "nvml", "reason": "benchmark", "rejected": {}, "interval_s": 0.5,
             "proc_interval_s": 2.0, "utilization_meaning": "", "info": {
                 "driver": "580", "devices": [{"device": f"gpu{d}", "name": "NVIDIA H100",
                                               "bus_id": f"0000:{0x19 + d:02x}:00.0"}
                                              for d in range(2)]},
             "poll_cost_ms": {"polls": 1, "median": 1.0, "p99": 1.0, "max": 1.0},
             "proc_poll_cost_ms": {"polls": 1, "median": 1.0, "p99": 1.0, "max": 1.0},
             "errors": 0, "last_error": None, "samples": []}
        if self.model is None:
            return {**d, "samples": list(self.samples)}
        import msgspec

        return msgspec.structs.replace(msgspec.convert(d, self.model.Telemetry),
                                       samples=list(self.samples))


def measure_io(n: int, seconds: int, reps: int) -> dict[str, float]:
    """ms to write the session's snapshot and to read it back (medians), its size."""
    from xwatch.core.export.snapshot import load_snapshot, write_snapshot

    rng = random.Random(1)
    s, t0 = build(n)
    feed(s, t0, t0 + seconds, rng)
    p = s.current
    assert p is not None
    p.finish()
    s.telemetry = FakeTelemetry(t0, seconds)
    writes, reads = [], []
    with tempfile.TemporaryDirectory() as d:
        for _ in range(reps):
            a = time.perf_counter()
            path = write_snapshot(s, d)
            writes.append(time.perf_counter() - a)
            a = time.perf_counter()
            load_snapshot(path)
            reads.append(time.perf_counter() - a)
        size = os.path.getsize(path)
    s.close()
    return {"write": 1000 * statistics.median(writes), "read": 1000 * statistics.median(reads),
            "mb": size / 2**20}


def ab(old: str, workloads: str, seconds: int, reps: int, rounds: int) -> None:
    """This checkout and ``old``, alternating, each run in a fresh interpreter."""
    got: dict[str, list[str]] = {old: [], HERE: []}
    for r in range(rounds):
        for tree in ((old, HERE) if r % 2 == 0 else (HERE, old)):
            out = subprocess.run([sys.executable, __file__, "--io", "--tree", tree,
                                  "--workloads", workloads, "--seconds", str(seconds),
                                  "--repeat", str(reps)], capture_output=True, text=True,
                                 check=True).stdout
            got[tree] += [ln for ln in out.splitlines()[1:] if ln.strip()]
    for tree, rows in got.items():
        print(f"{'old' if tree == old else 'new'}: {tree}")
        print(f"{'workloads':>9} {'write ms':>9} {'read ms':>9} {'MiB':>6}")
        print("\n".join(rows))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", default="2,4,8,16")
    ap.add_argument("--seconds", type=int, default=120)
    ap.add_argument("--io", action="store_true", help="write and read a large snapshot")
    ap.add_argument("--repeat", type=int, default=5, help="--io: writes and reads per run")
    ap.add_argument("--tree", help="measure the xwatch checkout in this folder")
    ap.add_argument("--ab", metavar="DIR", help="--io, this checkout against the one in DIR")
    ap.add_argument("--rounds", type=int, default=3, help="--ab: runs of each")
    a = ap.parse_args()
    if a.ab:
        ab(os.path.abspath(a.ab), a.workloads, a.seconds, a.repeat, a.rounds)
        return
    if a.io:
        print(f"{'workloads':>9} {'write ms':>9} {'read ms':>9} {'MiB':>6}")
        for n in (int(x) for x in a.workloads.split(",")):
            r = measure_io(n, a.seconds, a.repeat)
            print(f"{n:9d} {r['write']:9.1f} {r['read']:9.1f} {r['mb']:6.1f}")
        return
    print(f"{'workloads':>9} {'snapshot':>9} {'stalls x4':>10} {'ingest 1 s':>11}   ms per second")
    for n in (int(x) for x in a.workloads.split(",")):
        r = measure(n, a.seconds)
        print(f"{n:9d} {r['snapshot']:9.2f} {r['stalls']:10.2f} {r['ingest']:11.2f}")


if __name__ == "__main__":
    main()
