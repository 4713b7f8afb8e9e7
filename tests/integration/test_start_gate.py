"""The start gate, with real torch workers on the CPU: built-in workloads start
measuring at once even when one loads seconds after the other (so no workload's
numbers include time when the others were not running yet), a workload that never
gets warm holds no one back, and ``start_together = false`` lets each start when it
is warm (start_delay_s then staggers arrival)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_xwatch
from tests.helpers.scenarios import tiny_models

BROKEN = """
[[workload]]
name = "broken"
priority = 0
model = "resnet18"
python = "/bin/false"
"""


@pytest.mark.parametrize("together", [True, False])
def test_built_in_workloads_start_measuring_together(tmp_path: Path, together: bool) -> None:
    f = tmp_path / "gate.toml"
    text = tiny_models("gate", 3 if together else 7,
                       top="" if together else "start_together = false",
                       low="batch = 2\nstart_delay_s = 2.5\nwarmup = 2")
    f.write_text(text + (BROKEN if together else ""))
    out = tmp_path / "out"
    # exec'd workers, as the load order here assumes: with the fork server ready before
    # LOW's start_delay_s ends, LOW would be forked and warm before HIGH had imported
    r = run_xwatch("run", str(f), "--headless", "--telemetry", "off", "--export", str(out),
                   timeout=180, env={"XWATCH_FORK_SERVER": "0"})
    doc = json.loads((out / "snapshot.json").read_text())
    w = doc["phases"][0]["workloads"]
    hi, lo = w["high"]["measured_s"], w["low"]["measured_s"]
    logs = json.dumps(doc)
    if together:
        # "broken" exits at once (the phase fails, naming it) and holds no one back;
        # HIGH and LOW measure the same window, within a fraction of a second
        assert r.returncode != 0 and w["broken"]["exit"]["reason"] == "failed"
        assert w["broken"]["count"] == 0
        assert abs(hi - lo) < 0.8, (hi, lo)
        assert "start gate: high, low start measuring together" in logs
        assert 0 < w["high"]["count"] <= 20 * 3 + 2  # not measured while LOW loaded
    else:  # HIGH measured from its own warm-up, alone while LOW was still loading
        assert r.returncode == 0, r.stdout + r.stderr
        sh, sl = w["high"]["stages"], w["low"]["stages"]
        # neither was held at a gate: each measured from its own ready, so the windows
        # differ by exactly their readies' gap (LOW started 2.5 s later; how much later
        # it was ready depends on how busy the machine is, which the test does not judge)
        assert "gate" not in sh and "gate" not in sl, (sh, sl)
        assert abs((hi - lo) - (sl["ready"] - sh["ready"])) < 0.3, (hi, lo, sh, sl)
        assert sl["spawn"] - sh["spawn"] >= 2.5, (sh, sl)
        assert "start gate" not in logs
