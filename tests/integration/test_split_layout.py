"""``xwatch compare --gpus 0,1 --layout split`` end to end with real processes, the fake
NVML (two GPUs), the fake MPS control tool and the fake xserver and shim: each phase
runs the modes at once, one GPU each, swapped every repeat (a Latin square); each
copy's environment and isolation proof are its own mode's (a native copy: no shim, a
private MPS pipe folder, no client; an MPS copy: a client of a daemon started for its
GPU alone; an XSched copy: the shim, engaged); the answer pairs the modes inside each
phase."""

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


def _env(tmp_path: Path) -> dict[str, str]:
    return {"XWATCH_MPS_CONTROL": str(make_tool(tmp_path / "bin")),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "PYTHONPATH": FAKE_NVML + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _modes_by_gpu(p: dict) -> dict[int, str]:  # type: ignore[type-arg]
    out: dict[int, str] = {}
    for name, mode in p["copy_modes"].items():
        g = int(name.split("@")[1])
        assert out.setdefault(g, mode) == mode  # every workload of a GPU in one mode
    return out


def test_split_native_and_mps_pair_inside_each_phase(tmp_path: Path) -> None:
    """native,mps on GPUs 0,1, two repeats: one phase a repeat holding both modes, the
    modes swapped between the GPUs; the MPS daemon serves the MPS copies' GPU alone and
    they pin themselves by its place in that list; the native copies are no clients
    and map no shim; HIGH is 5 ms slower where it is an MPS client (a planted effect):
    the answer says so over 2 paired runs, from the MPS copies alone."""
    hi = scenarios.producer(60, "--add-ms-if-env", "CUDA_MPS_CLIENT_PRIORITY=0:5")
    f = scenarios.two(tmp_path, 4.0, hi=hi)
    out = tmp_path / "out"
    r = run_xwatch("compare", str(f), "--gpus", "0,1", "--modes", "native,mps",
                   "--layout", "split", "--repeat", "2", "--telemetry", "off",
                   "--export", str(out), env=_env(tmp_path), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "modes side by side in each phase" in r.stdout
    doc = json.loads((out / "snapshot.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    phases = doc["phases"]
    assert [p["mode"] for p in phases] == ["native+mps"] * 2
    assert all(p["status"] == "done" for p in phases)
    square = [_modes_by_gpu(p) for p in phases]
    assert square == [{0: "native", 1: "mps"}, {0: "mps", 1: "native"}]  # a Latin square
    for p, placed in zip(phases, square):
        assert "no-mps" in p["isolation"]["mps_pipe"]  # the native copies' empty folder
        mps_gpu = next(g for g, m in placed.items() if m == "mps")
        mps = p["mps"]
        # its daemon was started for the MPS copies' GPU alone
        log = "\n".join(mps["control_log"])
        assert f"CUDA_VISIBLE_DEVICES={mps_gpu})" in log, log
        assert f"GPUs {mps_gpu} only" in mps["topology"]
        # only the MPS copies got the client variables, pinned within the daemon's list
        assert sorted(mps["env"]) == [f"high@{mps_gpu}", f"low@{mps_gpu}"]
        assert all(e["CUDA_VISIBLE_DEVICES"] == "0" for e in mps["env"].values())
        assert {n: w["status"] for n, w in mps["workloads"].items()} == {
            f"high@{mps_gpu}": "in-mps", f"low@{mps_gpu}": "in-mps"}
        proofs = p["isolation"]["workloads"]
        assert {n: v["verdict"] for n, v in proofs.items()} == {
            n: "clean" for n in p["workloads"]}  # no shim anywhere
        for n, w in p["workloads"].items():
            env = w["launch"]["env"]
            if placed[int(n.split("@")[1])] == "native":  # the base's private pipe folder
                assert not any(k.startswith("CUDA_MPS_") for k in env), env
                assert env["CUDA_VISIBLE_DEVICES"] == n.split("@")[1]
            else:
                assert env["CUDA_MPS_PIPE_DIRECTORY"] == mps["pipe_dir"]
    ans = {a["metric"]: a for a in doc["answer"] if a["workload"] == "high"}
    p99 = ans["P99"]
    assert p99["step"] == "mps" and p99["runs"] == 2 and p99["way"] == "slower", p99
    assert 4.0 < p99["estimate"] < 6.0, p99  # its own copies, paired inside the phases
    assert "MPS vs native (2 runs" in r.stdout


def test_split_needs_a_gpu_per_mode(tmp_path: Path) -> None:
    f = scenarios.two(tmp_path, 1.0)
    r = run_xwatch("compare", str(f), "--gpus", "0", "--modes", "native,mps", "--layout",
                   "split", "--telemetry", "off", env=_env(tmp_path), timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    err = " ".join(r.stderr.replace("│", " ").split())
    assert "SPLIT LAYOUT CANNOT BE HONOURED" in err and "one GPU per mode" in err, err


@pytest.mark.skipif(not __import__("tests.helpers.fake_xsched", fromlist=["x"]).have_cc(),
                    reason="needs a C compiler for the fake shim")
def test_split_native_beside_xsched_one_xserver_for_its_copies(tmp_path: Path) -> None:
    """native,xsched on GPUs 0,1: the XSched copies get the shim and are engaged under
    one xserver; the native copies beside them map no shim and carry no XSched
    variable; the modes swap GPUs on the next repeat."""
    from tests.helpers.fake_xsched import make_install

    install = make_install(tmp_path / "xsched")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    f = scenarios.two(tmp_path, 1.5, top=f'[xsched]\nplatform = "hip"\nport = {port}')
    out = tmp_path / "out"
    r = run_xwatch("compare", str(f), "--gpus", "0,1", "--modes", "native,xsched",
                   "--layout", "split", "--xsched", str(install), "--repeat", "2",
                   "--telemetry", "off", "--export", str(out), env=_env(tmp_path),
                   timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((out / "snapshot.json").read_text())
    phases = doc["phases"]
    assert [p["mode"] for p in phases] == ["native+xsched"] * 2
    square = [_modes_by_gpu(p) for p in phases]
    assert square == [{0: "native", 1: "xsched"}, {0: "xsched", 1: "native"}]
    for p, placed in zip(phases, square):
        assert len([ln for ln in p["xsched"]["log_tail"] if "xserver started" in ln]) == 1
        xs_gpu = next(g for g, m in placed.items() if m == "xsched")
        mine = {f"high@{xs_gpu}", f"low@{xs_gpu}"}
        assert set(p["xsched"]["env"]) == mine
        assert set(p["xsched"]["workloads"]) == mine
        assert all(w["status"] == "engaged" for w in p["xsched"]["workloads"].values()), \
            p["xsched"]["workloads"]
        proofs = {n: v["verdict"] for n, v in p["isolation"]["workloads"].items()}
        for n, w in p["workloads"].items():
            env = w["launch"]["env"]
            if n in mine:
                assert proofs[n] == "shim-loaded"
            else:
                assert proofs[n] == "clean"
                assert not any(k.startswith("XSCHED_") for k in env), env
                assert "shim" not in env.get("LD_PRELOAD", "")
    steps = {a["step"] for a in doc["answer"]}
    assert steps == {"xsched"} and all(a["runs"] == 2 for a in doc["answer"]), doc["answer"]
