"""The noise floor and the gate, end to end with real processes: ``xwatch noise``
records the floor in the state folder; a one-run ``compare`` finds it, judges
against it and says so; without it, ``--fail-if`` with one run is refused before
anything starts; with runs, a mode that makes HIGH slower trips the gate (exit 3)
and the snapshot's ``answer`` says why."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema

from tests.conftest import DATA, run_xwatch
from tests.helpers import scenarios
from tests.helpers.fake_mps import make_tool
from xwatch.core.export.document.schema import SCHEMA_PATH

FAKE_NVML = str(DATA / "fake_nvml")
SCHEMA = json.loads(SCHEMA_PATH.read_text())


def _env(tmp_path: Path, state: str = "state") -> dict[str, str]:
    tool = make_tool(tmp_path / "bin")
    return {"XWATCH_MPS_CONTROL": str(tool), "XDG_STATE_HOME": str(tmp_path / state),
            "PYTHONPATH": FAKE_NVML + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_noise_records_the_floor_and_a_one_run_compare_is_judged_against_it(
        tmp_path: Path) -> None:
    env = _env(tmp_path)
    f = scenarios.two(tmp_path, 2)
    r = run_xwatch("noise", str(f), "--repeat", "2", "--duration", "2", "--telemetry", "off",
                   env=env, timeout=200)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "=== noise floor: s, native, 2 runs of" in r.stdout
    assert any(ln.startswith("high") and "P99" in ln for ln in r.stdout.splitlines())
    floors = list((tmp_path / "state" / "xwatch" / "noise").glob("native-*.json"))
    assert len(floors) == 1, r.stdout
    rec = json.loads(floors[0].read_text())
    assert rec["runs"] == 2 and "high/P99" in rec["splits"] and "low/samples/s" in rec["splits"]

    out = tmp_path / "out"
    r = run_xwatch("compare", str(f), "--modes", "native,mps", "--duration", "2",
                   "--telemetry", "off", "--fail-if", "slower", "--export", str(out),
                   env=env, timeout=200)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "noise floor: noise floor of" in r.stdout
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("MPS vs native"))
    assert "(one run each)" in line and "against the noise floor of" in line
    assert "gate --fail-if slower: passed" in r.stdout
    doc = json.loads((out / "snapshot.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    assert {a["basis"] for a in doc["answer"]} == {"floor"}
    assert "native" in doc["extra"]["noise_floors"]


def test_gate_refuses_one_run_without_a_floor_and_trips_on_a_real_slowdown(
        tmp_path: Path) -> None:
    env = _env(tmp_path, "empty-state")
    # 80 req/s: a 2 s run's ~160 requests resolve its P99 (at 40 req/s it was the
    # maximum of 80, and the answer rightly pooled them into "within noise")
    f = scenarios.two(tmp_path, 2, hi=scenarios.producer(
        80, "--add-ms-if-env", "CUDA_MPS_CLIENT_PRIORITY:3"))
    r = run_xwatch("compare", str(f), "--modes", "native,mps", "--duration", "2",
                   "--telemetry", "off", "--fail-if", "slower", env=env, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "GATE CANNOT BE JUDGED" in r.stderr and "xwatch noise" in r.stderr
    assert "--- " not in r.stdout  # nothing ran

    out = tmp_path / "out"
    r = run_xwatch("compare", str(f), "--modes", "native,mps", "--repeat", "2", "--duration",
                   "2", "--telemetry", "off", "--fail-if", "slower", "--export", str(out),
                   env=env, timeout=240)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "GATE slower: MPS: high P99 +3.00 ms" in r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("MPS vs native"))
    assert "(2 runs each, paired)" in line
    doc = json.loads((out / "snapshot.json").read_text())
    p99 = next(a for a in doc["answer"] if a["workload"] == "high" and a["metric"] == "P99")
    assert p99["way"] == "slower" and p99["runs"] == 2 and p99["basis"] == "runs"
    assert abs(p99["estimate"] - 3.0) < 0.03  # 0.5% histogram buckets


def test_a_phase_stopped_by_sigterm_is_cut_short_not_a_run(tmp_path: Path) -> None:
    """A sweep or compare stopped mid-phase: that phase is `stopped` with how much it
    measured, and no answer counts it as a run of its setting."""
    import signal
    import subprocess
    import time

    from tests.conftest import PY

    env = {**os.environ, **_env(tmp_path)}
    out = tmp_path / "out"
    f = scenarios.two(tmp_path, 30)
    proc = subprocess.Popen([PY, "-m", "xwatch", "compare", str(f), "--modes", "native,mps",
                             "--telemetry", "off", "--export", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    end = time.monotonic() + 30
    for line in proc.stdout:  # the first progress line with requests: measuring
        if "high running n=" in line or time.monotonic() > end:
            break
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM
    doc = json.loads((out / "snapshot.json").read_text())
    ph = doc["phases"][0]
    assert ph["status"] == "stopped" and ph["cut_short"].startswith("stopped after ")
    assert doc["answer"] == []
