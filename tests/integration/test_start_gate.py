"""The start gate, with real torch workers on the CPU: built-in workloads start
measuring at once even when one loads seconds after the other (so no workload's
numbers include time when the others were not running yet); ``start_together =
false`` lets each start when it is warm (start_delay_s then staggers arrival)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_xwatch

SCEN = """name = "gate"
duration_s = {dur}
device = "cpu"
{top}
[[workload]]
name = "high"
priority = "high"
model = "resnet18"
input = [3, 32, 32]
rate = 20
warmup = 2
threads = 1

[[workload]]
name = "low"
priority = "low"
model = "resnet18"
input = [3, 32, 32]
batch = 2
start_delay_s = 2.5
warmup = 2
threads = 1
"""


@pytest.mark.parametrize("together", [True, False])
def test_built_in_workloads_start_measuring_together(tmp_path: Path, together: bool) -> None:
    f = tmp_path / "gate.toml"
    f.write_text(SCEN.format(top="" if together else "start_together = false",
                             dur=3 if together else 7))
    out = tmp_path / "out"
    r = run_xwatch("run", str(f), "--headless", "--telemetry", "off", "--export", str(out),
                   timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((out / "snapshot.json").read_text())
    w = doc["phases"][0]["workloads"]
    hi, lo = w["high"]["measured_s"], w["low"]["measured_s"]
    logs = json.dumps(doc)
    if together:  # the same window for both: within a fraction of a second
        assert abs(hi - lo) < 0.8, (hi, lo)
        assert "start gate: high, low start measuring together" in logs
        assert w["high"]["count"] <= 20 * 3 + 2  # HIGH was not measured while LOW loaded
    else:  # HIGH measured from its own warm-up, alone while LOW was still loading
        assert hi - lo > 1.5, (hi, lo)
        assert "start gate" not in logs


def test_a_workload_that_never_gets_warm_holds_no_one_back(tmp_path: Path) -> None:
    """LOW's interpreter exits at once: HIGH, warm and waiting, is let go and measured
    (the phase fails, naming LOW)."""
    f = tmp_path / "gate.toml"
    f.write_text(SCEN.format(top="", dur=2).replace(
        "start_delay_s = 2.5\n", 'start_delay_s = 2.5\npython = "/bin/false"\n'))
    out = tmp_path / "out"
    r = run_xwatch("run", str(f), "--headless", "--telemetry", "off", "--export", str(out),
                   timeout=180)
    assert r.returncode != 0
    doc = json.loads((out / "snapshot.json").read_text())
    w = doc["phases"][0]["workloads"]
    assert w["high"]["count"] >= 20, r.stdout + r.stderr  # ~2 s at 20/s
    assert w["low"]["count"] == 0 and w["low"]["exit"]["reason"] == "failed"
