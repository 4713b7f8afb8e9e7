"""The fork server with real torch workers on the CPU (issue 41 goal 1): the first
phase starts its workers by exec while the server imports; later phases fork them
(no imports paid), they measure like the others, and nothing outlives xwatch, not
even after a SIGKILL. On several GPUs (issue 51 goal 5) every copy is forked, each
seeing its own GPU's variables where its GPU runtime would read them. XSched's copies
and its preflight's probes fork from a server of their own, waiting for its imports
(issue 58 goal 4)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import psutil

from tests.conftest import PY, ROOT, run_xwatch
from tests.helpers.procs import wait_gone
from tests.helpers.scenarios import tiny_models
from xwatch.core.engine.worker import DEVICE_ENV

FAKE_NVML = str(ROOT / "tests" / "data" / "fake_nvml")  # a machine with two GPUs


def _noise(tmp_path: Path, repeat: int, env: dict[str, str] | None = None,
           scenario: str | None = None) -> dict:
    f = tmp_path / "s.toml"
    f.write_text(scenario or tiny_models("forks", 2))
    out = tmp_path / "out"
    r = run_xwatch("noise", str(f), "--repeat", str(repeat), "--telemetry", "off",
                   "--export", str(out), timeout=300,
                   env={"XDG_STATE_HOME": str(tmp_path / "state"), **(env or {})})
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads((out / "snapshot.json").read_text())


def test_later_phases_fork_their_workers_which_measure_like_the_first(tmp_path: Path) -> None:
    doc = _noise(tmp_path, 3)
    p1, *later = doc["phases"]
    assert p1["workloads"]["high"]["launch"]["start"].startswith("exec (the fork server is "
                                                                 "still importing")
    servers = set()
    for p in later:
        for name, w in p["workloads"].items():
            m = re.fullmatch(r"fork \(fork server pid (\d+)\)", w["launch"]["start"])
            assert m, (p["name"], name, w["launch"])
            servers.add(int(m.group(1)))
            st = w["stages"]
            assert st["imports"] - st["python"] < 0.5, st  # imported once, in the server
            assert w["hello"]["pid"] not in servers and w["count"] > 0
            assert w["hello"]["threads"] == 1  # its own settings still apply
    assert len(servers) == 1
    pids = [w["hello"]["pid"] for p in doc["phases"] for w in p["workloads"].values()]
    assert len(set(pids)) == len(pids)  # a fresh process per workload and phase
    assert wait_gone([*servers, *pids], 5) == []


def test_copies_on_two_gpus_are_forked_each_seeing_its_own_gpu(tmp_path: Path) -> None:
    """``gpus = [0, 1]`` (two fake NVML GPUs; the workers run on the CPU): the copies on
    both GPUs are forked, and each copy's worker read its own CUDA_VISIBLE_DEVICES /
    HIP_VISIBLE_DEVICES from the C library just before its first GPU call (the hello's
    ``gpu_init_env``: what CUDA or HIP would have read). LOW's copies set OMP_NUM_THREADS,
    read at ``import torch``: exec'd, and the launch says which variable kept them."""
    scen = tiny_models("gpus", 2, top="gpus = [0, 1]", low='env = { OMP_NUM_THREADS = "1" }')
    doc = _noise(tmp_path, 2, {"PYTHONPATH": FAKE_NVML + os.pathsep
                               + os.environ.get("PYTHONPATH", "")}, scen)
    first, second = doc["phases"]
    assert list(second["workloads"]) == ["high@0", "low@0", "high@1", "low@1"]
    servers = set()
    for name, w in second["workloads"].items():
        g = name.split("@")[1]
        start = w["launch"]["start"]
        seen = w["hello"]["gpu_init_env"]
        assert {k: v for k, v in seen.items() if k in DEVICE_ENV} == {
            "CUDA_VISIBLE_DEVICES": g, "HIP_VISIBLE_DEVICES": g,
            "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, (name, seen)
        assert seen["CUDA_MPS_PIPE_DIRECTORY"].endswith("no-mps")  # natively: no daemon
        assert w["hello"]["env"]["CUDA_VISIBLE_DEVICES"] == g and w["count"] > 0
        if name.startswith("high"):
            m = re.fullmatch(r"fork \(fork server pid (\d+)\)", start)
            assert m, (name, start)
            servers.add(int(m.group(1)))
            assert w["stages"]["imports"] - w["stages"]["python"] < 0.5  # nothing imported
        else:
            assert start == ("exec (its environment differs from the fork server's in "
                             "OMP_NUM_THREADS)"), (name, start)
    assert len(servers) == 1
    for name, w in first["workloads"].items():  # the server was still importing
        assert w["launch"]["start"].startswith("exec"), (name, w["launch"])
        assert w["hello"]["gpu_init_env"]["CUDA_VISIBLE_DEVICES"] == name.split("@")[1]
    pids = [w["hello"]["pid"] for p in doc["phases"] for w in p["workloads"].values()]
    assert wait_gone([*servers, *pids], 5) == []


def test_off_switch_starts_every_worker_by_exec(tmp_path: Path) -> None:
    doc = _noise(tmp_path, 2, {"XWATCH_FORK_SERVER": "0"})
    assert {w["launch"]["start"] for p in doc["phases"] for w in p["workloads"].values()} \
        == {"exec"}


def test_sigkill_of_xwatch_leaves_no_forked_worker_nor_server(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    f.write_text(tiny_models("forks", 4))
    p = subprocess.Popen([PY, "-m", "xwatch", "noise", str(f), "--repeat", "4",
                          "--telemetry", "off"], cwd=ROOT, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL,
                         env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")})
    server = forked = None
    end = time.monotonic() + 240
    while time.monotonic() < end and not forked:
        for c in psutil.Process(p.pid).children():
            try:  # a phase's workers may exit while they are listed
                if "xwatch.core.engine.worker.zygote" in " ".join(c.cmdline()):
                    server = c
                    forked = [k.pid for k in c.children()]
            except psutil.Error:
                continue
        time.sleep(0.2)
    assert server is not None and forked, "no forked worker seen"
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=10)
    assert wait_gone([server.pid, *forked], 10) == []


def test_xsched_copies_fork_from_a_server_under_the_shim_each_registering_itself(
        tmp_path: Path) -> None:
    """Issue 58 goal 4 against the fake XSched 1.2 (``softlink``: its ``libcuda.so.1`` is
    the shim, which torch's cuBLASLt opens at import, as on the GPU box): XSched phases
    fork their copies from a server of their own, started with the shim's environment
    less ``XSCHED_*`` (app-managed at load: it never registered itself); each forked
    copy switched to the global scheduler itself and registered its own pid with the
    settings of its own environment, and is engaged on the proof of its own pid."""
    import socket

    from tests.helpers.fake_xsched import have_cc, make_install

    if not have_cc():
        import pytest

        pytest.skip("needs a C compiler for the fake shim")
    inst = make_install(tmp_path / "xs", platforms=("cuda",), softlink=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    scen = tiny_models("xfork", 1.5, top=f'[xsched]\nplatform = "cuda"\nport = {port}')
    f = tmp_path / "s.toml"
    f.write_text(scen)
    out = tmp_path / "out"
    r = run_xwatch("compare", str(f), "--modes", "native,xsched", "--repeat", "2",
                   "--xsched", str(inst), "--telemetry", "off", "--export", str(out),
                   timeout=400, env={"XDG_STATE_HOME": str(tmp_path / "state")})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    doc = json.loads((out / "snapshot.json").read_text())
    xs = [p for p in doc["phases"] if p["mode"] == "xsched"]
    native = {m.group(1) for p in doc["phases"] if p["mode"] == "native"
              for w in p["workloads"].values()
              if (m := re.fullmatch(r"fork \(fork server pid (\d+)\)", w["launch"]["start"]))}
    last = xs[-1]
    servers = set()
    for name, w in last["workloads"].items():
        m = re.fullmatch(r"fork \(fork server pid (\d+)\)", w["launch"]["start"])
        assert m, (name, w["launch"])
        servers.add(m.group(1))
        pid = w["hello"]["pid"]
        info = last["xsched"]["workloads"][name]
        assert info["status"] == "engaged", (name, info)
        assert {h // 16 for h in info["stats"]["handles"]} == {pid}  # its own XQueues
        assert any(x.endswith("libshimcuda.so") for x in info["libraries"]), info
        # it left xserver as it exited (its registration kept by the fake as .left)
        reg = json.loads((inst / "run" / f"{pid}.json.left").read_text())
        assert reg["scheduler"] == "GLB"
        assert reg["priority"] == ("1" if name == "high" else "0")  # its own environment
    assert len(servers) == 1 and not servers & native
    server = servers.pop()
    assert not any((inst / "run" / f"{server}{x}").exists() for x in (".json", ".json.left"))
    # the first XSched phase's preflight (the second's is cached): each probe forked from
    # that same server (no fresh interpreter's imports under the shim for the start gate
    # to wait for), a process of its own that registered its own pid with xserver
    probes = _forked_probes(xs[0], inst, server)
    assert probes and all(v["status"] == "engaged" for v in probes), probes
    assert wait_gone([int(server), *(v["pid"] for v in probes)], 5) == []


def _forked_probes(phase: dict, inst: Path, server: str) -> list[dict]:
    """The phase's preflight verdicts, each checked: forked from fork server ``server``,
    its own pid (not the server's) registered with xserver under the global scheduler
    (the fake shim's record of ``XHintSetScheduler``), listed with XQueues of its own,
    and left XSched itself when the preflight let it go (``probe_leave``: back to the
    app-managed scheduler, the fake's ``leave``; its record kept as ``N.json.left``)."""
    from tests.helpers.fake_xsched import calls

    left = {c["pid"] for c in calls(inst) if c["call"] == "leave"}
    verdicts = phase["preflight"]["verdicts"]
    for v in verdicts:
        assert v["pid"] in left, (v, left)
        assert v["start"] == f"fork (fork server pid {server})", v
        assert isinstance(v["pid"], int) and str(v["pid"]) != server, v
        reg = json.loads((inst / "run" / f"{v['pid']}.json.left").read_text())
        assert reg["scheduler"] == "GLB" and reg["pid"] == v["pid"], reg
        assert v["queues_max"] >= 1 and v["scheduler"] == "global", v
    return verdicts


def test_a_first_xsched_phase_forks_its_probes_and_copies_from_one_server(
        tmp_path: Path) -> None:
    """The session's first phase is XSched's (no earlier phase warmed its server): the
    server is started before xserver, and the preflight's probes and the copies wait
    for its imports and fork from it, instead of exec'ing interpreters under the shim
    beside it (issue 58 goal 4); when the run ends, none of them is left."""
    import socket

    from tests.helpers.fake_xsched import have_cc, make_install

    if not have_cc():
        import pytest

        pytest.skip("needs a C compiler for the fake shim")
    inst = make_install(tmp_path / "xs", platforms=("cuda",), softlink=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    f = tmp_path / "s.toml"
    f.write_text(tiny_models("xcold", 1.0, top=f"[xsched]\nport = {port}"))
    out = tmp_path / "out"
    r = run_xwatch("run", str(f), "--headless", "--mode", "xsched", "--xsched", str(inst),
                   "--telemetry", "off", "--export", str(out), timeout=300,
                   env={"XDG_STATE_HOME": str(tmp_path / "state")})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (phase,) = json.loads((out / "snapshot.json").read_text())["phases"]
    starts = {w["launch"]["start"] for w in phase["workloads"].values()}
    assert len(starts) == 1, starts
    m = re.fullmatch(r"fork \(fork server pid (\d+)\)", starts.pop())
    assert m
    probes = _forked_probes(phase, inst, m.group(1))
    assert probes and all(v["status"] == "engaged" for v in probes), probes
    pids = [w["hello"]["pid"] for w in phase["workloads"].values()]
    assert wait_gone([int(m.group(1)), *pids, *(v["pid"] for v in probes)], 5) == []
