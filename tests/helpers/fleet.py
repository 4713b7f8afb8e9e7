"""A deterministic eight-GPU session for the UI and console tests: HIGH (20 req/s)
and LOW (2 batches/s of 64) copied onto each of ``gpus`` GPUs, fed seeded latencies
on a fixed clock through the real ``Session``, with NVML-shaped telemetry for every
device, then written and read back through the snapshot format (what ``xwatch
replay`` shows). GPU k's HIGH is a little slower than GPU k-1's; GPU 5's is the
worst by far, and GPU 6's LOW failed with an exit code and a stderr line."""

from __future__ import annotations

import json
import random

import msgspec

from xwatch.core import model as M
from xwatch.core.engine.live.session import Session
from xwatch.core.engine.snapshot import RUNNING, SessionSnapshot
from xwatch.core.export.snapshot import encode_document, snapshot_document, snapshot_from_dict
from xwatch.core.model.events import events_of
from xwatch.scenario import parse_scenario

T0 = 1000.0  # the phase's start on the fake monotonic clock


class _Telemetry:
    """What ``Session.snapshot`` reads from a ``TelemetrySampler``."""

    def __init__(self, gpus: int, seconds: int) -> None:
        self.samples = []
        for i in range(seconds * 2):
            for g in range(gpus):
                self.samples.append({
                    "t": T0 + i * 0.5, "device": f"gpu{g}", "name": "NVIDIA H100 80GB HBM3",
                    "bus_id": f"00000000:{0x18 + 0x10 * g:02X}:00.0", "ours": True,
                    "metrics": {"util_pct": float(60 + 4 * g + i % 3), "mem_util_pct": 30.0,
                                "mem_used_mib": 20480.0 + 512 * g, "mem_total_mib": 81559.0,
                                "power_w": 400.0 + g, "temp_c": 50.0 + g, "clock_mhz": 1980.0},
                    "procs": {}, "procs_t": None})

    def export(self, last: int | None = None) -> M.Telemetry:
        return msgspec.convert({"backend": "nvml", "reason": "asked for nvml", "rejected": {},
                "interval_s": 0.5, "proc_interval_s": 2.0, "info": {},
                "poll_cost_ms": {"polls": 60, "median": 0.21, "p99": 0.4, "max": 0.5},
                "proc_poll_cost_ms": {"polls": 15, "median": 3.1, "p99": 4.0, "max": 4.2},
                "errors": 0, "last_error": None,
                "samples": self.samples[-last:] if last else list(self.samples)}, M.Telemetry)


def fleet_session(gpus: int = 8, seconds: int = 30, ended: bool = False,
                  xsched: bool = False) -> Session:
    """The live ``Session`` (its phase running, or ``ended``); ``xsched``: an XSched
    phase whose every copy is engaged, with a scheduler lane each (HIGH running,
    LOW suspended every third poll)."""
    raw = {"name": "fleet", "duration_s": 60, "gpus": list(range(gpus)),
           "workload": [{"name": "high", "priority": "high", "command": ["true"], "rate": 20},
                        {"name": "low", "priority": "low", "command": ["true"], "batch": 64}]}
    s = Session(parse_scenario(raw, "<fleet>"), spool_max_mb=None)
    s.telemetry = _Telemetry(gpus, seconds)
    p = s.new_phase("xsched" if xsched else "native")
    p.t_start = p.t_measure = T0
    rng = random.Random(7)
    for run in p.runs.values():
        g = run.spec.gpu or 0
        high = run.spec.priority_value > 0
        run.state, run.ready_t0, run.rec.t0 = RUNNING, T0, T0
        run.pid = 4000 + len(run.phase.runs) * g + high
        run.hello = {"pci": {"domain": 0, "bus": 0x18 + 0x10 * g, "device": 0},
                     "device_name": "NVIDIA H100 80GB HBM3"}
        step = 0.05 if high else 0.5
        scale = (4.0 + 0.1 * g) * (3.0 if g == 5 else 1.0) if high else 380.0 + 5 * g
        n = int(seconds / step)
        if not high and g == 6:
            n //= 3  # LOW on GPU 6 died a third of the way in
        events = [{"seq": k + 1, "t": T0 + (k + 1) * step,
                   "latency_ms": scale * rng.lognormvariate(0.0, 0.25),
                   "batch": 1 if high else 64} for k in range(n)]
        for k in range(0, len(events), 5):
            run.on_events(events_of(events[k:k + 5]))
        if not high and g == 6:
            run.on_output("stderr", "torch.OutOfMemoryError: CUDA out of memory. Tried to "
                                    "allocate 2.00 GiB")
            run.on_exit(1, None, planned_end=False)
    if xsched:
        p.xsched = msgspec.convert({"root": "/opt/xsched", "policy": "HPF",
                             "xserver_cmd": ["xserver", "HPF", "50000"],
                             "workloads": {
            name: {"status": "engaged", "scheduler": "GLB",
                   "stats": {"queues": 2, "polls": 40, "ready": 30, "suspended": 10},
                   "lane": [(T0 + i * 0.5, "running" if run.spec.priority_value > 0 or i % 3
                             else "suspended") for i in range(2 * seconds)]}
            for name, run in p.runs.items()}}, M.Xsched)
    if ended:
        p.t_stop = T0 + seconds
        p.finish()
    return s


def fleet_snapshot(gpus: int = 8, seconds: int = 30, ended: bool = False,
                   xsched: bool = False) -> SessionSnapshot:
    """``fleet_session``'s snapshot at its last second, through the snapshot format."""
    s = fleet_session(gpus, seconds, ended, xsched)
    try:
        snap = s.snapshot(now=T0 + seconds)
        doc = json.loads(encode_document(snapshot_document(snap)))
    finally:
        s.close()
    doc["created_at"] = "2026-11-23T12:00:00+00:00"
    return snapshot_from_dict(doc, "<fleet>")
