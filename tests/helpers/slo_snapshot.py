"""A deterministic one-phase snapshot of a server whose SLO is on a named metric: HIGH
``chat`` reports ttft_ms (60-180 ms), tpot_ms and itl_ms with each of its requests,
whose whole latency is ~1.2 s; LOW ``trainer`` steps at ~300 ms. The SLO (P99 TTFT <
200 ms) judges TTFT, not the 1.2 s (issue 64 goal 5). Built in memory, no clock."""

from __future__ import annotations

import json
import random
from pathlib import Path

from xwatch.core.engine.live.session import Session
from xwatch.core.engine.snapshot import SessionSnapshot
from xwatch.core.export.snapshot import encode_document, snapshot_document, snapshot_from_dict
from xwatch.core.model.events import events_of
from xwatch.scenario import load_scenario

SCENARIO = Path(__file__).resolve().parent.parent / "data" / "scenarios" / "serve-slo.toml"


def slo_snapshot() -> SessionSnapshot:
    s = Session(load_scenario(str(SCENARIO)))
    rng = random.Random(11)
    ph = s.new_phase("native")
    t0 = ph.t_start = 1000.0
    ph.started_at = "2026-11-21T10:00:00.000+00:00"
    for r in ph.runs.values():
        r.rec.t0 = t0
        r.pid = 4242 if r.spec.name == "chat" else 4343
        r.hello = {"pid": r.pid, "device_name": "NVIDIA H200", "stream": "created"}
        r.on_events(events_of([{"type": "ready", "t0": t0}]))
        r.state = "running"
    chat, trainer = ph.runs["chat"], ph.runs["trainer"]
    ev = []
    for k in range(120):  # 30 s at 4/s
        ttft = 60.0 + rng.random() * 120.0
        tpot = 33.0 + rng.random() * 4.0
        ev.append({"seq": k + 1, "t": t0 + k * 0.25 + 1.2, "latency_ms": ttft + 31 * tpot,
                   "ttft_ms": ttft, "tpot_ms": tpot, "itl_ms": tpot + rng.random(), "batch": 1})
    chat.on_events(events_of(ev))
    trainer.on_events(events_of([{"seq": k + 1, "t": t0 + (k + 1) * 0.3, "latency_ms": 295.0 + k % 9,
                        "batch": 64} for k in range(99)]))
    ph.t_measure = t0
    ph.t_stop = t0 + 30.0
    for r in (chat, trainer):
        r.stop_requested = True
        r.on_exit(0, None, planned_end=True)
        r.end_t = t0 + 30.2
    ph.finish()
    ph.t_end = t0 + 30.5
    ph.ended_at = "2026-11-21T10:00:31.000+00:00"
    doc = json.loads(encode_document(snapshot_document(s.snapshot(now=1031.0,
                                                                  telemetry_last=None))))
    s.close()
    doc["created_at"] = "2026-11-21T10:00:00.000+00:00"
    doc["environment"] = {"host": "h200-box", "os": "Linux 6.8", "machine": "x86_64",
                          "cpus": 16, "python": "3.11.7", "xwatch": "0.1.0",
                          "argv": ["xwatch", "run", "serve-slo.toml"], "env": {}}
    doc["messages"] = [{"t": 0.0, "level": "info", "text": "phase native-1 started"}]
    doc["scenario"]["source"] = "tests/data/scenarios/serve-slo.toml"
    return snapshot_from_dict(doc)
