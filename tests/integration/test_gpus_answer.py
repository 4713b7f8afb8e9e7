"""Every GPU in the answer, end to end with real processes on three (fake NVML) GPUs:
``compare --gpus 0,1,2 --repeat 2`` whose HIGH copies get slower with their GPU's index
(the producer adds 3 ms per index) and 3 ms slower under MPS. The answer is about
``high`` over its three copies ("2 runs x 3 GPUs"), the ``--fail-if`` gate trips on it,
GPU 2 is named as a finding, and the snapshot records both."""

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


def test_compare_on_three_gpus_counts_every_copy_and_names_the_slow_gpu(tmp_path: Path
                                                                        ) -> None:
    tool = make_tool(tmp_path / "bin")
    env = {"XWATCH_MPS_CONTROL": str(tool), "XDG_STATE_HOME": str(tmp_path / "state"),
           "FAKE_NVML_GPUS": "3",
           "PYTHONPATH": FAKE_NVML + os.pathsep + os.environ.get("PYTHONPATH", "")}
    f = scenarios.two(tmp_path, 2, hi=scenarios.producer(
        80, "--add-ms-if-env", "CUDA_MPS_CLIENT_PRIORITY:3", "--pci-by-visible", "3b,19,5e"))
    out = tmp_path / "out"
    r = run_xwatch("compare", str(f), "--gpus", "0,1,2", "--modes", "native,mps",
                   "--repeat", "2", "--duration", "2", "--telemetry", "off",
                   "--fail-if", "slower", "--export", str(out), env=env, timeout=300)
    assert r.returncode == 3, r.stdout + r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("MPS vs native"))
    assert "(2 runs x 3 GPUs each, paired)" in line, line
    assert "high P99 +" in line and "high@" not in line, line
    assert "low samples/s" in line and "low@" not in line, line
    assert "GATE slower: MPS: high P99 +" in r.stderr
    assert "Finding: GPU 2's high P50 is +" in r.stdout, r.stdout
    doc = json.loads((out / "snapshot.json").read_text())
    jsonschema.validate(doc, json.loads(SCHEMA_PATH.read_text()))
    p99 = next(a for a in doc["answer"] if a["workload"] == "high" and a["metric"] == "P99")
    assert p99["gpus"] == 3 and p99["runs"] == 2 and p99["way"] == "slower"
    # the geometric mean of the copies' P99s (1.9, 4.9, 7.9 ms natively; +3 under MPS)
    assert abs(p99["base"] - (1.9 * 4.9 * 7.9) ** (1 / 3)) < 0.1, p99
    assert any(g["gpu"] == 2 and g["metric"] == "P50" and g["relative"] > 0
               for g in doc["gpu_findings"]), doc["gpu_findings"]
