"""Builds the deterministic two-phase snapshot used by report goldens and UI
snapshots: native (both run to the end) and xsched (HIGH better, LOW crashed
with miopenStatusUnknownError, as in the seed study). Regenerate with
``python -m tests.helpers.fixture_snapshot`` (writes tests/data/)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import msgspec

from xwatch.core import model as M
from xwatch.core.engine.live.session import Session
from xwatch.core.export.snapshot import encode_document, snapshot_document
from xwatch.core.model.events import events_of
from xwatch.scenario import load_scenario

DATA = Path(__file__).resolve().parent.parent / "data"


def build() -> dict:  # type: ignore[type-arg]
    scen = load_scenario(str(DATA / "scenarios" / "fixture.toml"))
    s = Session(scen)
    rng = random.Random(7)
    for mode, hi_scale, low_fails in (("native", 1.0, False), ("xsched", 0.55, True)):
        ph = s.new_phase(mode)
        t0 = ph.t_start = 1000.0 if mode == "native" else 1100.0
        ph.started_at = "2026-11-21T10:00:00.000+00:00" if mode == "native" \
            else "2026-11-21T10:01:40.000+00:00"
        for r in ph.runs.values():
            r.rec.t0 = t0
            r.pid = 4242 if r.spec.name == "high" else 4343
            r.hello = {"pid": r.pid, "device_name": "AMD Instinct MI308X", "torch": "2.9.0+rocm6.4",
                       "model": r.spec.model, "stream": "created"}
        hi, lo = ph.runs["high"], ph.runs["low"]
        hi.on_events(events_of([{"type": "ready", "t0": t0}]))
        lo.on_events(events_of([{"type": "ready", "t0": t0 + 1.0}]))
        hi.state = lo.state = "running"
        ev_hi = []
        for k in range(600):  # 30 s at 20/s
            lat = (6.0 + rng.lognormvariate(0.3, 0.5) * 2.0) * hi_scale
            ev_hi.append({"seq": k + 1, "t": t0 + k * 0.05 + lat / 1e3, "latency_ms": lat,
                          "late": lat > 50, "batch": 1})
        hi.on_events(events_of(ev_hi))
        n_low = 59 if not low_fails else 20
        lo.on_events(events_of([{"seq": k + 1, "t": t0 + 1.0 + (k + 1) * 0.5, "latency_ms": 500.0 + k % 7,
                       "batch": 1024} for k in range(n_low)]))
        ph.t_measure = t0
        ph.t_stop = t0 + 30.0
        if low_fails:
            lo.stderr.extend(["MIOpen Error: Failed to launch kernel: invalid device ordinal",
                              "RuntimeError: miopenStatusUnknownError"])
            lo.error = "RuntimeError: miopenStatusUnknownError"
            lo.launch = M.Launch(argv=["python", "-m", "xwatch.core.engine.worker"], env={
                "XSCHED_SCHEDULER": "GLB", "XSCHED_AUTO_XQUEUE": "ON",
                "LD_PRELOAD": "/opt/xsched/lib/libshimhip.so"})
            lo.on_exit(1, None, planned_end=False)
            lo.end_t = t0 + 11.0
            hi.stop_requested = True
            hi.on_exit(0, None, planned_end=True)
            hi.end_t = t0 + 30.2
            ph.xsched = msgspec.convert({
                "root": "/opt/xsched", "policy": "HPF", "xserver_cmd": ["/opt/xsched/bin/xserver",
                                                                        "HPF", "50000"],
                "env": {"high": {"XSCHED_SCHEDULER": "GLB", "XSCHED_AUTO_XQUEUE_PRIORITY": "1"},
                        "low": {"XSCHED_SCHEDULER": "GLB", "XSCHED_AUTO_XQUEUE_PRIORITY": "0"}},
                "workloads": {
                    "high": {"status": "engaged", "scheduler": "global", "warnings": [],
                             "stats": {"queues": 2, "ready": 5, "suspended": 0, "polls": 30},
                             "queues": [{"handle": 48879, "level": 1, "threshold": 16,
                                         "batch_size": 8, "ready": False, "suspended": False}],
                             "lane": [[i, "running" if i % 6 == 0 else "idle"] for i in range(30)]},
                    "low": {"status": "engaged", "scheduler": "global", "warnings": [],
                            "stats": {"queues": 2, "ready": 9, "suspended": 4, "polls": 10},
                            "queues": [], "lane": [[i, "suspended" if i % 3 == 0 else "running"]
                                                   for i in range(10)]}},
                "samples": [], "changes": [], "port": 50000,
                "log_tail": ["[INFO @ T1 @ 10:01:40.000000] xserver started"]}, M.Xsched)
        else:
            for r in (hi, lo):
                r.stop_requested = True
                r.on_exit(0, None, planned_end=True)
                r.end_t = t0 + 30.2
        ph.finish()
        ph.t_end = t0 + 30.5
        ph.ended_at = ph.started_at[:14] + "00:31.000+00:00"
    snap = s.snapshot(now=1200.0, telemetry_last=None)
    doc = json.loads(encode_document(snapshot_document(snap)))
    doc["created_at"] = "2026-11-21T10:00:00.000+00:00"
    doc["environment"] = {"host": "mi308x-box", "os": "Linux 6.8", "machine": "x86_64",
                          "cpus": 128, "python": "3.11.7", "xwatch": "0.1.0",
                          "argv": ["xwatch", "compare", "tests/data/scenarios/fixture.toml",
                                   "--xsched", "/opt/xsched"], "env": {}}
    doc["messages"] = [{"t": 0.0, "level": "info", "text": "phase native-1 started"}]
    doc["telemetry"] = {"backend": "amdsmi", "reason": "auto: first working backend",
                        "rejected": {}, "interval_s": 0.5, "info": {"driver": "6.4"},
                        "poll_cost_ms": {"polls": 3, "median": 0.9, "p99": 1.2, "max": 1.2},
                        "samples": [{"t": 1000.0 + i, "device": "gpu0", "name": "MI308X",
                                     "bus_id": "0000:19:00.0", "ours": True,
                                     "metrics": {"util_pct": 80.0 + i % 5, "mem_used_mib": 1000.0,
                                                 "mem_total_mib": 196000.0}, "procs": {}}
                                    for i in range(30)]}
    doc["scenario"]["source"] = "tests/data/scenarios/fixture.toml"
    s.close()
    return doc


if __name__ == "__main__":
    (DATA / "snapshot_two_phases.json").write_text(json.dumps(build(), indent=1) + "\n")
    print("wrote", DATA / "snapshot_two_phases.json")


def workload_snapshot(name: str, priority: int, summary: object, count: int, sps: float,
                      slowest: tuple[tuple[float, float], ...] = ()) -> object:
    """A minimal WorkloadSnapshot for pure analysis tests."""

    from xwatch.core.engine.snapshot import WorkloadSnapshot
    from xwatch.core.engine.stats import EMPTY

    return WorkloadSnapshot(
        name=name, priority=priority, priority_label="high" if priority else "low",
        description="", state="stopped", pid=None, phase=summary, window=EMPTY,  # type: ignore[arg-type]
        service_mean_ms=None, count=count, errors=0, late=0, samples=count, malformed=0,
        target_rate=None, throughput=M.Throughput(requests_per_s=0.0, samples_per_s=sps,
                                                  window_requests_per_s=0.0,
                                                  window_samples_per_s=0.0),
        measured_s=10.0, goodput=None, series=(), cdf=(), exit=None,
        error=None, stderr_tail=(), stdout_tail=(), hello={}, launch=M.Launch(), inflight_s=0.0,
        slowest=slowest)


def latency_hist(m: object, integral: bool = False) -> M.Hist:
    """``m``'s (a ``stats.Moments``) fine histogram as a snapshot carries it."""
    from xwatch.core.engine.stats import RELATIVE_WIDTH, Moments

    assert isinstance(m, Moments)
    return M.Hist(relative_width=RELATIVE_WIDTH, buckets=list(m.hist.items()), integral=integral)
