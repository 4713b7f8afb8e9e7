"""A phase's start in stages with real torch workers on the CPU (issue 41 goal 1):
every stage of a built-in workload's start and stop is recorded, in the order it
happens, for a gated workload and for one that starts on its own, and the
benchmark's breakdown reads them from the exported snapshot."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_xwatch
from tests.helpers.scenarios import tiny_models
from xwatch.testing.starts import breakdown

LOW = "start_delay_s = 0.3\nwarmup = 1"


#: every stage of a stopped, gated built-in workload, in the order it must happen
GATED = ("daemon", "mode", "spawn", "spawned", "python", "torch", "imports", "context", "model",
         "first", "warm", "warm_seen", "gate", "released", "ready", "stop", "bye", "exit",
         "mode_left")


def _ordered(stages: dict[str, float], expected: tuple[str, ...]) -> None:
    missing = [k for k in expected if k not in stages]
    assert not missing, f"stages missing: {missing} in {stages}"
    times = [stages[k] for k in expected]
    bad = [(a, b) for a, b, ta, tb in zip(expected, expected[1:], times, times[1:]) if tb < ta]
    assert not bad, f"stages out of order: {bad} in {stages}"
    assert times[0] >= 0


def test_every_stage_of_a_start_is_recorded_in_order(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    f.write_text(tiny_models("stages", 1, low=LOW))
    out = tmp_path / "out"
    r = run_xwatch("run", str(f), "--headless", "--telemetry", "off", "--export", str(out),
                   timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((out / "snapshot.json").read_text())
    p = doc["phases"][0]
    for name in ("high", "low"):
        st = p["workloads"][name]["stages"]
        _ordered(st, GATED)
        assert list(st) == sorted(st, key=st.__getitem__)  # kept in time order
        assert "stages" not in p["workloads"][name]["hello"]
    lo = p["workloads"]["low"]["stages"]
    assert lo["spawn"] - lo["daemon"] >= 0.3 - 0.05  # its start_delay_s
    # the phase measures from its first ready workload: the gate let both go together
    first = min(w["stages"]["ready"] for w in p["workloads"].values())
    assert abs(first - (p["t_measure"] - p["t_start"])) < 1e-3
    b = breakdown(doc)[0]
    assert b["waited_for"] in ("high", "low")
    assert b["summary"]["phase start -> first measured second"] > 0
    assert b["summary"]["teardown: stop -> last process gone"] > 0


def test_without_the_gate_no_gate_stages(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    # 3 s: LOW (not held for HIGH) loads and ends its 3 requests well before the planned
    # end, however slow its load beside HIGH's (at 1 s a loaded box stopped it first)
    f.write_text(tiny_models("stages", 3, top="start_together = false",
                             low=LOW + "\nrequests = 3"))
    out = tmp_path / "out"
    r = run_xwatch("run", str(f), "--headless", "--telemetry", "off", "--export", str(out),
                   timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    w = json.loads((out / "snapshot.json").read_text())["phases"][0]["workloads"]
    for name in ("high", "low"):
        assert not {"warm_seen", "gate", "released"} & set(w[name]["stages"])
    _ordered(w["high"]["stages"], tuple(k for k in GATED
                                        if k not in ("warm_seen", "gate", "released")))
    # LOW ran its 3 requests and ended by itself: its bye came before any stop
    _ordered(w["low"]["stages"], ("daemon", "mode", "spawn", "spawned", "python", "torch", "imports",
                                  "context", "model", "first", "warm", "ready", "bye", "exit",
                                  "mode_left"))
    lo = w["low"]["stages"]
    assert lo.get("stop", lo["bye"]) >= lo["bye"]
