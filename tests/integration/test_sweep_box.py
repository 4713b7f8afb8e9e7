"""``xwatch sweep --gpus 0,1`` end to end with real processes, the fake NVML (two GPUs)
and the fake MPS control tool (and the fake xserver): the settings run side by side,
one a GPU, rotated every repeat, native in phases of its own on every GPU; each
setting's numbers (the answer, the ``--fail-if`` gate, the frontier) come from its own
copies: a slow copy planted on one setting moves that setting alone."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import DATA, run_xwatch
from tests.helpers import scenarios
from tests.helpers.fake_mps import make_tool
from xwatch.core.export.document.schema import SCHEMA_PATH

FAKE_NVML = str(DATA / "fake_nvml")
SCHEMA = json.loads(SCHEMA_PATH.read_text())
SM = "mps.active_thread_percentage"


def _env(tmp_path: Path) -> dict[str, str]:
    return {"XWATCH_MPS_CONTROL": str(make_tool(tmp_path / "bin")),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "PYTHONPATH": FAKE_NVML + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _label(pct: int) -> str:
    return f"high.{SM}={pct}, low.{SM}={pct}"


def test_sweep_on_two_gpus_side_by_side_rotated_each_setting_its_own_copies(
        tmp_path: Path) -> None:
    """Three MPS settings on GPUs 0,1, two repeats: per repeat native (both GPUs), then
    two settings in one phase and the third alone on both GPUs (no GPU idles: its run
    is the mean over its two copies); HIGH is 5 ms slower only where its
    own SM share is 50 (a slow copy planted on one setting); LOW's rate is its own share
    / 2. Only the 50% setting is slower in the answer and trips the gate; the 100%
    setting, which shared its phases with it, stays within noise of native; each
    setting's LOW throughput is its own copy's."""
    hi = scenarios.producer(60, "--add-ms-if-env", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50:5")
    lo = scenarios.producer(20, "--rate-from-env", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE:2")
    f = scenarios.two(tmp_path, 2.0, hi=hi, lo=lo)
    out = tmp_path / "out"
    r = run_xwatch("sweep", str(f), "--gpus", "0,1", "--set", f"high.{SM}=100,50,25",
                   "--set", f"low.{SM}=100,50,25", "--repeat", "2", "--telemetry", "off",
                   "--fail-if", "slower", "--export", str(out), env=_env(tmp_path),
                   timeout=300)
    assert r.returncode == 3, r.stdout + r.stderr  # the gate tripped
    gate = [ln for ln in r.stderr.splitlines() if ln.startswith("GATE slower:")]
    assert len(gate) == 1 and _label(50) in gate[0], r.stderr
    doc = json.loads((out / "snapshot.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    phases = doc["phases"]
    assert [p["mode"] for p in phases] == ["native", "mps", "mps"] * 2
    assert all(p["status"] == "done" for p in phases)
    for p in phases[0::3]:  # native: its own phase, replicated onto every GPU
        assert sorted(p["workloads"]) == ["high@0", "high@1", "low@0", "low@1"]
        assert "setting" not in p
    on: dict[str, list[int]] = {}  # each setting's GPU, repeat by repeat
    for p in phases:
        if p["mode"] != "mps":
            continue
        share = {n: int(e["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"])
                 for n, e in p["mps"]["env"].items()}
        gpus = sorted({int(n.split("@")[1]) for n in p["workloads"]})
        assert gpus == [0, 1]  # every GPU busy
        for g in gpus:  # each GPU's copies carry one setting, both workloads
            assert share[f"high@{g}"] == share[f"low@{g}"]
        if share["low@0"] != share["low@1"]:  # two settings side by side
            for g in gpus:
                on.setdefault(_label(share[f"low@{g}"]), []).append(g)
        assert p["setting_values"] == {f"{w}@{g}": {SM: share[f"{w}@{g}"]}
                                       for g in gpus for w in ("high", "low")}
    assert [len(p["workloads"]) for p in phases[1:3]] == [4, 4]  # 2 settings; 1 on both
    assert all(len(v) == 2 and v[0] != v[1] for v in on.values()), on  # rotated
    # the answer: one step per setting, each from its own copies
    ans = {(a["step"], a["metric"]): a for a in doc["answer"]}
    for pct, way in ((100, "within"), (50, "slower"), (25, "within")):
        a = ans[(f"mps [{_label(pct)}]", "P99")]
        assert a["way"] == way and a["runs"] == 2, a
        assert a["workload"] == "high"  # the scenario's name: copies on both GPUs
    slow = ans[(f"mps [{_label(50)}]", "P99")]
    assert 4.0 < slow["estimate"] < 6.0, slow  # the whole 5 ms, not a mean with a neighbour
    rate = {pct: ans[(f"mps [{_label(pct)}]", "samples/s")]["value"] for pct in (100, 50, 25)}
    assert 1.6 < rate[100] / rate[50] < 2.4 and 1.6 < rate[50] / rate[25] < 2.4, rate
    # the report: a row per setting's run, its GPU named, from its own copy
    md = (out / "report.md").read_text()
    sweep = md.split("## Sweep: MPS settings against native", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in sweep.splitlines()
            if ln.startswith("| ") and "(GPU" in ln]
    assert sorted(rw[1] for rw in rows) == sorted([_label(p) for p in (100, 50, 25)] * 2)
    p99 = {rw[1]: float(rw[4]) for rw in rows}
    assert p99[_label(50)] > p99[_label(100)] + 4.0, rows
    assert "slower" in next(rw[6] for rw in rows if rw[1] == _label(50))
    assert "rotated every repeat" in sweep
    assert "Sweep on several GPUs" in r.stdout


@pytest.mark.skipif(not __import__("tests.helpers.fake_xsched", fromlist=["x"]).have_cc(),
                    reason="needs a C compiler for the fake shim")
def test_xsched_sweep_on_two_gpus_shares_one_xserver_per_phase(tmp_path: Path) -> None:
    """XSched thresholds differ per copy under one xserver (one policy): both settings
    in one phase, each copy its own threshold, swapped on the next repeat."""
    from tests.helpers.fake_xsched import make_install

    install = make_install(tmp_path / "xsched")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    f = scenarios.two(tmp_path, 1.5, top=f'[xsched]\nplatform = "hip"\nport = {port}')
    out = tmp_path / "out"
    r = run_xwatch("sweep", str(f), "--gpus", "0,1", "--xsched", str(install), "--set",
                   "low.threshold=2,8", "--repeat", "2", "--telemetry", "off",
                   "--export", str(out), env=_env(tmp_path), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((out / "snapshot.json").read_text())
    xs = [p for p in doc["phases"] if p["mode"] == "xsched"]
    assert len(xs) == 2  # one phase a repeat for both settings
    first = []
    for p in xs:
        th = {n: w["launch"]["env"].get("XSCHED_AUTO_XQUEUE_THRESHOLD")
              for n, w in p["workloads"].items() if n.startswith("low")}
        assert sorted(th.values()) == ["2", "8"], th
        assert len([ln for ln in p["xsched"]["log_tail"] if "xserver started" in ln]) == 1
        first.append(th["low@0"])
    assert first[0] != first[1]  # rotated
    steps = {a["step"] for a in doc["answer"]}
    assert steps == {"xsched [low.threshold=2]", "xsched [low.threshold=8]"}, steps
