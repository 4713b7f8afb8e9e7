"""A phase's start in stages (issue 41 goal 1): what the session keeps of the worker's
``stages`` and of its own stamps, in which order, through the snapshot and back, and
the benchmark's breakdown of them."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from xwatch.core.engine.live.session import Session
from xwatch.core.engine.snapshot import STAGES
from xwatch.core.export.document.schema import SCHEMA_PATH
from xwatch.core.export.snapshot import load_snapshot, write_snapshot
from xwatch.core.model.events import events_of
from xwatch.scenario import load_scenario
from xwatch.testing.starts import breakdown, render

DATA = Path(__file__).resolve().parent.parent / "data"
SCHEMA = json.loads(SCHEMA_PATH.read_text())
WORKER = ("python", "torch", "imports", "context", "model", "first", "warm")


def _phase(s: Session) -> object:
    ph = s.new_phase("native")
    t = ph.t_start
    ph.stages["mode"] = t + 0.01
    for i, name in enumerate(("high", "low")):
        r = ph.runs[name]
        r.stage("spawn", t + 0.02 + i)
        r.stage("spawned", t + 0.03 + i)
        ws = {k: t + 0.1 * (j + 1) + i for j, k in enumerate(WORKER)}
        r.on_events(events_of([{"type": "hello", "stages": {k: ws[k] for k in WORKER[:5]}},
                     {"type": "warm", "stages": {**ws, "bad": "x", "nan": float("nan")}}]))
    return ph


def test_stages_are_kept_in_order_relative_to_the_phase_start(tmp_path: Path) -> None:
    s = Session(load_scenario("demo"))
    ph = _phase(s)
    hi, lo = ph.runs["high"], ph.runs["low"]  # type: ignore[attr-defined]
    assert "stages" not in hi.hello  # its own field, not in the hello
    assert "gate" in hi.stages and "gate" in lo.stages  # both warm: the gate let them go
    t = ph.t_start  # type: ignore[attr-defined]
    for r in (hi, lo):
        r.on_events(events_of([{"type": "ready", "t0": t + 3.0, "stages": {"released": t + 2.9}}]))
        r.on_events(events_of([{"latency_ms": 1.0, "t": t + 3.1, "seq": 1}]))
        r.stage("stop", t + 4.0)
        r.on_events(events_of([{"type": "bye", "stopped": True, "t": t + 4.1}]))
        r.on_exit(0, None, planned_end=True)
    ph.stages["mode_left"] = t + 9.0  # type: ignore[attr-defined]
    ph.finish()  # type: ignore[attr-defined]
    w = ph.snapshot(t + 10).workload("high")  # type: ignore[attr-defined]
    assert w is not None
    got = w.stages
    assert "bad" not in got and "nan" not in got
    assert list(got) == sorted(got, key=got.__getitem__)  # time order
    assert set(got) <= set(STAGES)
    assert got["mode"] == 0.01 and got["spawn"] == 0.02 and got["ready"] == 3.0
    assert got["released"] == 2.9 and got["stop"] == 4.0 and got["bye"] == 4.1
    assert got["mode_left"] == 9.0 and "exit" in got
    # through the snapshot file and back, validated by the schema
    path = write_snapshot(s, tmp_path / "out")
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, SCHEMA)
    assert doc["phases"][0]["workloads"]["low"]["stages"]["spawn"] == 1.02
    back = load_snapshot(path).phases[0].workload("high")
    assert back is not None and back.stages == got
    s.close()


def test_snapshots_without_stages_still_load() -> None:
    snap = load_snapshot(DATA / "snapshot_two_phases.json")
    assert all(w.stages == {} for p in snap.phases for w in p.workloads)


def test_breakdown_names_the_workload_the_gate_waited_for() -> None:
    def wl(spawn: float, warm: float) -> dict[str, object]:
        return {"stages": {"mode": 0.5, "spawn": spawn, "spawned": spawn + 0.01,
                           "python": spawn + 0.05, "torch": spawn + 1, "imports": spawn + 2,
                           "context": spawn + 3, "model": spawn + 4, "first": warm - 0.5,
                           "warm": warm, "warm_seen": warm + 0.2, "gate": 9.3,
                           "released": 9.31, "ready": 9.32, "stop": 20.0, "bye": 20.1,
                           "exit": 21.0 + spawn, "mode_left": 23.0}}
    doc = {"phases": [{"name": "mps-1", "mode": "mps", "status": "done", "t_start": 100.0,
                       "t_measure": 109.32, "mps": {"preflight": {"seconds": 0.4}},
                       "workloads": {"high": wl(0.6, 7.0), "low": wl(1.6, 9.1)}},
                      {"name": "mps-2", "mode": "mps", "status": "done", "t_start": 125.0,
                       "workloads": {}}]}
    p = breakdown(doc)[0]
    assert p["waited_for"] == "low"
    sm = p["summary"]
    assert abs(sm["phase start -> spawn (mode, start delay)"] - 1.6) < 1e-9
    assert abs(sm["spawn -> imports (process, interpreter, imports)"] - 2.0) < 1e-9
    assert abs(sm["warm -> first measured (start gate, ready)"] - 0.22) < 1e-9
    assert abs(sm["  of which the start gate"] - 0.21) < 1e-9
    assert abs(sm["phase start -> first measured second"] - 9.32) < 1e-9
    assert abs(sm["teardown: stop -> last process gone"] - 2.6) < 1e-9
    assert p["phase"]["preflight (in mode ready)"] == 0.4
    assert abs(p["phase"]["mode left -> next phase's start"] - 2.0) < 1e-9
    hi = p["workloads"]["high"]
    assert abs(hi["  warm_seen -> gate (the others)"] - 2.1) < 1e-9
    text = render(breakdown(doc))
    assert "mps: 2 phase(s)" in text and "the last warm" in text
    assert "| workload high | median s |" in render(breakdown(doc), md=True)
