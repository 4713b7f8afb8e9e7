"""Modes as one concept, with real processes: native phases are clean by construction
(the user's XSched shim folder, XSCHED_* and CUDA_MPS_* are removed) and by proof
(a shim forced in through the workload's own env fails the phase, naming it), and
MPS mode against a faithful fake ``nvidia-cuda-mps-control`` (tests/helpers/fake_mps.py):
private daemon, client env, client-list proof, not-in-mps, a killed daemon, nothing
left behind, and the refusals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import DATA, PY, run_xwatch
from tests.helpers import scenarios
from tests.helpers.fake_mps import commands, make_tool
from tests.helpers.fake_xsched import have_cc, make_install
from tests.helpers.procs import read_until
from tests.helpers.scenarios import tiny_models

FAKE_NVML = str(DATA / "fake_nvml")


def two(tmp_path: Path, hi_env: str = "", lo_env: str = "", duration: float = 2.0) -> Path:
    return scenarios.two(tmp_path, duration, hi_extra=hi_env, lo_extra=lo_env)


def snap(out: Path) -> dict:
    return json.loads((out / "snapshot.json").read_text())


def leftovers(marker: str) -> list[str]:
    found = []
    for p in psutil.process_iter(["cmdline", "environ"]):
        try:
            cmd = " ".join(p.info.get("cmdline") or [])
            envs = p.info.get("environ") or {}
        except Exception:
            continue
        if marker in cmd or any(marker in v for v in envs.values()):
            found.append(f"{p.pid} {cmd}")
    return found


# ------------------------------------------------------------ native is clean
@pytest.mark.skipif(not have_cc(), reason="needs a C compiler for the fake shim")
def test_native_phase_drops_the_users_xsched_and_mps_environment(tmp_path: Path) -> None:
    inst = make_install(tmp_path / "xs", ("cuda", "hip"))
    (inst / "lib" / "libcuda.so.1").symlink_to(inst / "lib" / "libshimcuda.so")  # as installed
    out = tmp_path / "out"
    env = {"LD_LIBRARY_PATH": f"{inst}/lib:/usr/local/keep", "XSCHED_POLICY": "HPF",
           "XSCHED_SCHEDULER": "GLB", "CUDA_MPS_PIPE_DIRECTORY": "/tmp/somebody-elses-mps",
           "LD_PRELOAD": f"{inst}/lib/libshimhip.so"}
    r = run_xwatch("run", str(two(tmp_path)), "--headless", "--duration", "2",
                   "--telemetry", "off", "--export", str(out), env=env)
    assert r.returncode == 0, r.stderr
    doc = snap(out)
    phase = doc["phases"][0]
    iso = phase["isolation"]
    removed = {x["name"]: x for x in iso["removed"]}
    assert set(removed) == {"LD_LIBRARY_PATH", "XSCHED_POLICY", "XSCHED_SCHEDULER",
                            "CUDA_MPS_PIPE_DIRECTORY", "LD_PRELOAD"}
    assert "holds the XSched shim" in removed["LD_LIBRARY_PATH"]["why"]
    assert iso["mps_pipe"] and iso["mps_pipe"].endswith("no-mps")
    for name in ("high", "low"):
        assert iso["workloads"][name]["verdict"] == "clean", iso["workloads"][name]
        assert iso["workloads"][name]["libraries"] == []
    # xwatch restarted itself without the shim folders, and says so in every phase
    assert "xwatch's own environment" in removed["LD_LIBRARY_PATH"]["why"]
    assert "xwatch's own environment" in removed["LD_PRELOAD"]["why"]
    assert any("removed LD_LIBRARY_PATH" in m["text"] for m in doc["messages"])
    # what the workloads really got: the kept entry stays, the shim folder is gone
    got = phase["workloads"]["high"]["hello"]
    assert phase["workloads"]["high"]["launch"]["env"].get("LD_LIBRARY_PATH") in (
        None, "/usr/local/keep"), got


@pytest.mark.skipif(not have_cc(), reason="needs a C compiler for the fake shim")
def test_a_shim_forced_into_a_native_phase_fails_it_naming_the_library(tmp_path: Path) -> None:
    inst = make_install(tmp_path / "xs", ("cuda", "hip"))
    shim = f"{inst}/lib/libshimhip.so"
    out = tmp_path / "out"
    f = two(tmp_path, hi_env=f'env = {{ LD_PRELOAD = "{shim}" }}', duration=4)
    r = run_xwatch("run", str(f), "--headless", "--telemetry", "off", "--export", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "libshimhip.so is mapped" in r.stderr
    assert "not a clean native baseline" in r.stderr
    assert f"LD_PRELOAD={shim} (set by the workload's own env in the scenario)" in r.stderr
    w = snap(out)["phases"][0]["isolation"]["workloads"]
    assert w["high"]["verdict"] == "shim-mapped" and shim in w["high"]["libraries"]
    # the phase stops at once: low may not have been running long enough to be read
    assert w.get("low", {"verdict": "clean"})["verdict"] == "clean"


# ------------------------------------------------------------ MPS against the fake
@pytest.fixture
def mps_env(tmp_path: Path) -> dict[str, str]:
    tool = make_tool(tmp_path / "bin")
    return {"XWATCH_MPS_CONTROL": str(tool), "FAKE_MPS_RECORD": str(tmp_path / "cmds.txt"),
            "PYTHONPATH": FAKE_NVML + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_mps_phase_runs_its_own_daemon_and_proves_every_client(
        tmp_path: Path, mps_env: dict[str, str]) -> None:
    out = tmp_path / "out"
    f = two(tmp_path, lo_env='[workload.mps]\nactive_thread_percentage = 50\n'
                             'pinned_mem_limit = "0=2G"')
    r = run_xwatch("run", str(f), "--headless", "--mode", "mps", "--duration", "4",
                   "--telemetry", "off", "--export", str(out), env=mps_env)
    assert r.returncode == 0, r.stdout + r.stderr
    ph = snap(out)["phases"][0]
    assert ph["mode"] == "mps" and ph["status"] == "done"
    m = ph["mps"]
    assert m["pipe_dir"].endswith("/pipe") and "mps-0" in m["pipe_dir"]
    assert m["workloads"]["high"]["status"] == "in-mps", m["workloads"]
    assert m["workloads"]["low"]["status"] == "in-mps"
    assert m["servers"], m
    assert "shared" not in m  # its clients were this session's workloads alone
    assert m["env"]["high"]["CUDA_MPS_CLIENT_PRIORITY"] == "0"
    assert m["env"]["low"]["CUDA_MPS_CLIENT_PRIORITY"] == "1"
    assert m["env"]["low"]["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "50"
    assert m["env"]["low"]["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=2G"
    assert any("Starting new server" in ln for ln in m["control_log"])
    cmds = commands(mps_env["FAKE_MPS_RECORD"])
    assert cmds[0] == "get_server_list" and cmds[-1] == "quit"
    assert any(c.startswith("get_client_list ") for c in cmds)
    # the workloads' environment really carried the daemon's pipe directory
    launch = ph["workloads"]["low"]["launch"]["env"]
    assert launch["CUDA_MPS_PIPE_DIRECTORY"] == m["pipe_dir"]
    assert not leftovers(m["pipe_dir"])


def test_a_workload_outside_mps_gets_its_verdict_and_an_alert(
        tmp_path: Path, mps_env: dict[str, str]) -> None:
    out = tmp_path / "out"
    f = two(tmp_path, lo_env='[workload.mps]\nenv = { FAKE_MPS_OUTSIDE = "1" }')
    r = run_xwatch("run", str(f), "--headless", "--mode", "mps", "--duration", "4",
                   "--telemetry", "off", "--export", str(out), env=mps_env)
    m = snap(out)["phases"][0]["mps"]
    assert m["workloads"]["high"]["status"] == "in-mps"
    assert m["workloads"]["low"]["status"] == "not-in-mps", m["workloads"]["low"]
    assert "not in MPS" in m["workloads"]["low"]["warnings"][0]
    assert r.returncode == 0  # a verdict and an alert, like not-scheduled under XSched
    assert any("not in MPS" in x["text"] for x in snap(out)["messages"])
    # the console says so once, with what to do (modes.participation)
    said = [ln for ln in r.stderr.splitlines() if "low: MPS is not serving it" in ln]
    assert len(said) == 1 and "CUDA_MPS_PIPE_DIRECTORY" in said[0], r.stderr


def _mps_phase_and(tmp_path: Path, mps_env: dict[str, str], match: Any
                   ) -> tuple[subprocess.Popen[str], psutil.Process]:
    """A 30 s headless MPS phase, and the first of its descendants whose argv
    ``match``es (the fake control daemon, its server)."""
    f = two(tmp_path, duration=30)
    proc = subprocess.Popen([PY, "-m", "xwatch", "run", str(f), "--headless", "--mode", "mps",
                             "--telemetry", "off", "--export", str(tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **mps_env})
    end = time.monotonic() + 30
    while time.monotonic() < end:
        time.sleep(0.2)
        for c in psutil.Process(proc.pid).children(recursive=True):
            try:
                if match(c.cmdline()):
                    return proc, c
            except psutil.NoSuchProcess:
                pass
    proc.kill()
    raise AssertionError("the MPS process never appeared")


def test_a_killed_mps_daemon_fails_the_phase_and_leaves_nothing(
        tmp_path: Path, mps_env: dict[str, str]) -> None:
    proc, daemon = _mps_phase_and(tmp_path, mps_env, lambda cmd: "-f" in cmd and any(
        "nvidia-cuda-mps-control" in a for a in cmd))
    time.sleep(2.0)
    daemon.send_signal(signal.SIGKILL)
    outs, errs = proc.communicate(timeout=60)
    assert proc.returncode == 1, outs + errs
    assert "MPS control daemon" in errs and "died (killed by signal 9)" in errs
    doc = snap(tmp_path / "out")
    assert doc["phases"][0]["status"] == "failed"
    assert not leftovers(doc["phases"][0]["mps"]["pipe_dir"])


def test_a_killed_mps_server_is_named_as_the_cause(
        tmp_path: Path, mps_env: dict[str, str]) -> None:
    """The server (not the control daemon) SIGKILLed mid-phase: the phase fails naming
    the server and the clients it took down, not only what CUDA tells them."""
    proc, server = _mps_phase_and(tmp_path, mps_env,
                                  lambda cmd: any("time.sleep(1e6)" in a for a in cmd))
    # the clients are proven on it first, however busy the box: both measure, then the
    # watch reads the client lists over a whole round after that (its lists for the
    # strangers, then its own for the pending workloads: three reads cover one)
    assert proc.stdout is not None
    said: list[str] = []
    while not said or not ("high running n=" in said[-1] and "low running n=" in said[-1]):
        more = read_until(proc.stdout, "running n=", timeout=60)
        assert more, "".join(said)
        said += more
    reads = len([c for c in commands(mps_env["FAKE_MPS_RECORD"]) if "get_client_list" in c])
    end = time.monotonic() + 60
    while len([c for c in commands(mps_env["FAKE_MPS_RECORD"])
               if "get_client_list" in c]) < reads + 3 and time.monotonic() < end:
        time.sleep(0.1)
    server.send_signal(signal.SIGKILL)
    outs, errs = proc.communicate(timeout=60)
    outs = "".join(said) + outs
    assert proc.returncode == 1, outs + errs
    assert f"the MPS server (pid {server.pid}) died" in errs, errs
    assert "its clients high, low lost their GPU context" in errs
    doc = snap(tmp_path / "out")
    assert doc["phases"][0]["status"] == "failed"
    assert not leftovers(doc["phases"][0]["mps"]["pipe_dir"])


def test_mps_is_refused_before_anything_starts_where_it_cannot_run(tmp_path: Path) -> None:
    f = two(tmp_path)
    r = run_xwatch("run", str(f), "--headless", "--mode", "mps", "--telemetry", "off",
                   env={"XWATCH_MPS_CONTROL": str(tmp_path / "missing"), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 2
    assert "MPS CONTROL TOOL MISSING" in r.stderr
    tool = make_tool(tmp_path / "bin")
    r = run_xwatch("compare", str(f), "--modes", "native,mps", "--telemetry", "off",
                   env={"XWATCH_MPS_CONTROL": str(tool), "PYTHONPATH": ""})
    # no NVIDIA GPU here (real NVML, or none): a titled error, nothing started
    assert r.returncode == 2, r.stdout + r.stderr
    assert "NO NVIDIA GPU FOR MPS" in r.stderr or "MPS" in r.stderr
    r = run_xwatch("compare", str(f), "--modes", "native,gpu", "--telemetry", "off")
    assert r.returncode == 2 and "allowed: native, xsched, mps" in r.stderr


def test_compare_three_ways_pools_repeats_and_gives_the_answer(
        tmp_path: Path, mps_env: dict[str, str]) -> None:
    out = tmp_path / "out"
    f = two(tmp_path)
    r = run_xwatch("compare", str(f), "--modes", "native,mps", "--repeat", "2", "--duration",
                   "2", "--telemetry", "off", "--export", str(out), env=mps_env, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    phases = snap(out)["phases"]
    assert [(p["mode"], p["repeat"]) for p in phases] == [
        ("native", 1), ("mps", 1), ("native", 2), ("mps", 2)]
    assert "=== answer" in r.stdout
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("MPS vs native"))
    assert "(2 runs each, paired)" in line and "high P99" in line and "low samples/s" in line
    report = (out / "report.md").read_text()
    assert report.index("## Answer") < report.index("## Scenario")


def test_mps_preflight_runs_beside_the_load_and_holds_the_gate(
        tmp_path: Path, mps_env: dict[str, str]) -> None:
    """Issue 41 goal 1: the preflight probe no longer delays the workloads' spawn; it
    is stopped once seen as a client, and no workload measures before it passed."""
    f = tmp_path / "s.toml"
    f.write_text(tiny_models("mps-probe", 2))
    out = tmp_path / "out"
    r = run_xwatch("run", str(f), "--headless", "--mode", "mps", "--telemetry", "off",
                   "--export", str(out), env=mps_env, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    ph = snap(out)["phases"][0]
    pre = ph["mps"]["preflight"]
    assert pre["verdict"] == "in-mps", pre
    assert pre["seconds"] < 5.0 + 30.0  # it did not wait out probe_s + 2 after being seen
    for name in ("high", "low"):
        st = ph["workloads"][name]["stages"]
        assert st["daemon"] <= st["spawn"] < st["mode"], st  # spawned before it settled
        assert st["gate"] >= st["mode"], st  # released only once it passed
        assert ph["mps"]["workloads"][name]["status"] == "in-mps"
    assert not leftovers(ph["mps"]["pipe_dir"])


def test_a_failed_mps_preflight_stops_the_workloads_already_loading(
        tmp_path: Path, mps_env: dict[str, str]) -> None:
    f = tmp_path / "s.toml"
    f.write_text(tiny_models("mps-probe", 2).replace(
        'threads = 1\n', 'threads = 1\n[workload.mps]\nenv = { FAKE_MPS_OUTSIDE = "1" }\n', 1))
    out = tmp_path / "out"
    r = run_xwatch("run", str(f), "--headless", "--mode", "mps", "--telemetry", "off",
                   "--export", str(out), env=mps_env, timeout=240)
    assert r.returncode != 0
    assert "MPS preflight not-in-mps" in r.stdout + r.stderr, r.stdout + r.stderr
    ph = snap(out)["phases"][0]
    assert ph["status"] == "failed" and ph["t_measure"] is None
    assert ph["mps"]["preflight"]["verdict"] == "not-in-mps"
    for w in ph["workloads"].values():
        assert "spawn" in w["stages"] and "gate" not in w["stages"], w["stages"]
    assert not leftovers(ph["mps"]["pipe_dir"])
