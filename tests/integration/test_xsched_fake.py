"""XSched mode against the faithful fake (tests/helpers/fake_xsched.py): env per
priority and overrides, xserver lifecycle (also on SIGTERM), port collision,
missing shim, app-managed and never-ready warnings, a workload that dies only
under XSched, live hints/policy/config, doctor, compare and sweep."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import PY, ROOT, WORKLOADS, run_xwatch
from tests.helpers.fake_xsched import calls, have_cc, make_install, pid_alive, xserver_pid
from tests.helpers.procs import wait_gone

pytestmark = pytest.mark.skipif(not have_cc(), reason="needs a C compiler for the fake shim")


def scen(tmp_path: Path, body: str = "", port: int | None = None, extra_hi: str = "",
         extra_lo: str = "", duration: float = 2.0) -> Path:
    f = tmp_path / "x.toml"
    port = port or _free_port()
    f.write_text(f"""
duration_s = {duration}
[xsched]
platform = "hip"
port = {port}
{body}
[[workload]]
name = "high"
priority = "high"
command = ["{PY}", "{WORKLOADS}/pipe_producer.py", "40"]
{extra_hi}
[[workload]]
name = "low"
priority = "low"
command = ["{PY}", "{WORKLOADS}/pipe_producer.py", "40", "--service-ms", "30"]
[workload.xsched]
threshold = 1
batch_size = 1
env = {{ FAKE_XQUEUE_READY = "never" }}
{extra_lo}
""")
    return f


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def install(tmp_path: Path) -> Path:
    return make_install(tmp_path / "xsched")


def test_compare_env_engagement_and_xserver_lifecycle(tmp_path: Path, install: Path) -> None:
    r = run_xwatch("compare", str(scen(tmp_path)), "--xsched", str(install),
                   "--export", str(tmp_path / "o"), timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "o" / "snapshot.json").read_text())
    native, xs = doc["phases"]
    assert (native["mode"], xs["mode"]) == ("native", "xsched")
    # the environment each workload saw (reported by the workload itself)
    assert not any(k.startswith("XSCHED_") for k in native["workloads"]["high"]["hello"]["env"])
    hi_env = xs["workloads"]["high"]["hello"]["env"]
    lo_env = xs["workloads"]["low"]["hello"]["env"]
    assert hi_env["XSCHED_SCHEDULER"] == "GLB" and hi_env["XSCHED_AUTO_XQUEUE"] == "ON"
    assert (hi_env["XSCHED_AUTO_XQUEUE_PRIORITY"], hi_env["XSCHED_AUTO_XQUEUE_THRESHOLD"],
            hi_env["XSCHED_AUTO_XQUEUE_BATCH_SIZE"], hi_env["XSCHED_AUTO_XQUEUE_LEVEL"]) == \
        ("1", "16", "8", "1")
    assert (lo_env["XSCHED_AUTO_XQUEUE_PRIORITY"], lo_env["XSCHED_AUTO_XQUEUE_THRESHOLD"],
            lo_env["XSCHED_AUTO_XQUEUE_BATCH_SIZE"]) == ("0", "1", "1")
    assert hi_env["LD_PRELOAD"] == str(install / "lib" / "libshimhip.so")
    assert hi_env["LD_LIBRARY_PATH"].startswith(str(install / "lib"))
    # recorded: env in force, xserver command, log, samples; engagement from evidence
    x = xs["xsched"]
    assert x["xserver_cmd"][1:] == ["HPF", str(x["port"])]
    assert any("xserver started" in ln for ln in x["log_tail"])
    assert x["samples"] and x["env"]["low"]["XSCHED_AUTO_XQUEUE_THRESHOLD"] == "1"
    assert x["workloads"]["high"]["scheduler"] == "global"
    assert x["workloads"]["high"]["status"] == "engaged"
    assert "shared" not in x  # its xserver served this session's workloads alone
    assert x["workloads"]["low"]["status"] == "not-scheduled"  # queues never ready
    assert any("never seen ready" in w for w in x["workloads"]["low"]["warnings"])
    # the console says so once, as it becomes known, with what to do (modes.participation)
    said = [ln for ln in r.stderr.splitlines() if "low: XSched is not scheduling it" in ln]
    assert len(said) == 1 and said[0].startswith("! phase xsched-1: low: "), r.stderr
    assert "CUDA stream it creates" in said[0] and "high: " not in r.stderr
    # the queue table survives the end of the phase (a stopping process loses its
    # queues before it exits), typed rows back as the documented fields
    q = x["workloads"]["low"]["queues"]
    assert q and set(q[0]) == {"handle", "device", "level", "pid", "threshold", "batch_size",
                               "ready", "suspended"}
    assert q[0]["threshold"] == 1 and q[0]["ready"] is False
    assert x["workloads"]["low"]["stats"]["handles"] == [r["handle"] for r in q]
    assert xs["workloads"]["high"]["launch"]["env"]["XSCHED_SCHEDULER"] == "GLB"
    # the shim saw xserver running: started before, stopped after
    pid = xserver_pid(install)
    assert pid is not None and not pid_alive(pid)
    report = (tmp_path / "o" / "report.md").read_text()
    assert "not-scheduled" in report and "XSched engagement" in report


def test_port_collision_picks_a_free_port(tmp_path: Path, install: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = run_xwatch("compare", str(scen(tmp_path, port=port, duration=1)), "--xsched",
                       str(install), "--export", str(tmp_path / "o"), timeout=60)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "o" / "snapshot.json").read_text())
    assert doc["phases"][1]["xsched"]["port"] != port
    assert any(f"port {port} is taken" in m["text"] for m in doc["messages"])


def test_missing_shim_is_refused_before_anything_starts(tmp_path: Path) -> None:
    inst = make_install(tmp_path / "cudaonly", platforms=("cuda",))
    r = run_xwatch("compare", str(scen(tmp_path, duration=1)), "--xsched", str(inst),
                   "--export", str(tmp_path / "o"), timeout=60)
    assert r.returncode == 2
    assert "libshimhip.so" in r.stderr and "HIP shim" in r.stderr
    assert "found libshimcuda.so" in r.stderr
    assert not (tmp_path / "o").exists()  # nothing ran, nothing to export


def test_app_managed_is_flagged(tmp_path: Path, install: Path) -> None:
    f = scen(tmp_path, duration=1.5,
             extra_hi='[workload.xsched]\nenv = { XSCHED_SCHEDULER = "APP" }')
    r = run_xwatch("compare", str(f), "--xsched", str(install), "--export",
                   str(tmp_path / "o"), timeout=60)
    doc = json.loads((tmp_path / "o" / "snapshot.json").read_text())
    info = doc["phases"][1]["xsched"]["workloads"]["high"]
    assert info["scheduler"] == "app-managed" and info["status"] == "app-managed"
    assert "no cross-process priority" in info["warnings"][0]
    assert r.returncode == 0


def test_cuda_shim_not_loaded_is_flagged(tmp_path: Path, install: Path) -> None:
    # with the CUDA platform only lib/ is put on LD_LIBRARY_PATH: a program that does not
    # load libcuda never loads the shim, so it is never scheduled
    f = scen(tmp_path, duration=2.5).read_text().replace('platform = "hip"', 'platform = "cuda"')
    (tmp_path / "c.toml").write_text(f)
    r = run_xwatch("compare", str(tmp_path / "c.toml"), "--xsched", str(install), "--export",
                   str(tmp_path / "o"), timeout=60)
    doc = json.loads((tmp_path / "o" / "snapshot.json").read_text())
    info = doc["phases"][1]["xsched"]["workloads"]["high"]
    assert info["status"] == "shim-not-loaded" and "not loaded" in info["warnings"][0]
    assert "/proc/PID/maps" in info["warnings"][0]  # the proof, not only the missing log line
    assert r.returncode == 0


def test_workload_dying_only_under_xsched(tmp_path: Path, install: Path) -> None:
    f = scen(tmp_path, duration=1.5).read_text().replace(
        '"pipe_producer.py", "40"]\n\n[[workload]]\nname = "low"',
        '"pipe_producer.py", "40"]\n\n[[workload]]\nname = "low"')
    f = f.replace(f'"{WORKLOADS}/pipe_producer.py", "40", "--service-ms", "30"]\n[workload.xsched]',
                  f'"{WORKLOADS}/pipe_producer.py", "40", "--crash-if-env", '
                  f'"XSCHED_SCHEDULER"]\n[workload.xsched]')
    (tmp_path / "d.toml").write_text(f)
    r = run_xwatch("compare", str(tmp_path / "d.toml"), "--xsched", str(install), "--export",
                   str(tmp_path / "o"), timeout=60)
    assert r.returncode == 1
    assert "FAILED xsched-1: low: failed (exit code 3)" in r.stderr
    doc = json.loads((tmp_path / "o" / "snapshot.json").read_text())
    native, xs = doc["phases"]
    assert native["status"] == "done" and xs["status"] == "failed"
    low = xs["workloads"]["low"]
    assert "miopenStatusUnknownError" in low["exit"]["message"]
    assert low["launch"]["env"]["LD_PRELOAD"].endswith("libshimhip.so")
    assert "miopenStatusUnknownError" in (tmp_path / "o" / "report.md").read_text()


def test_sigterm_during_xsched_phase_stops_xserver(tmp_path: Path, install: Path) -> None:
    f = scen(tmp_path, duration=60)
    p = subprocess.Popen([sys.executable, "-m", "xwatch", "run", str(f), "--headless",
                          "--mode", "xsched", "--xsched", str(install)], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    end = time.monotonic() + 30
    while xserver_pid(install) is None and time.monotonic() < end:
        time.sleep(0.1)
    time.sleep(1.5)
    pid = xserver_pid(install)
    assert pid is not None and pid_alive(pid)
    import psutil
    kids = [c.pid for c in psutil.Process(p.pid).children(recursive=True)]
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGTERM, out
    assert wait_gone([pid, *kids], 10) == []


@pytest.mark.parametrize("version,cfs", [("1.2.0", 10), ("1.0.0", 9)])
def test_live_hint_policy_and_config(tmp_path: Path, version: str, cfs: int) -> None:
    """Live control against an install of each numbering: CFS is 10 in 1.2 and 9 in
    49079bc's 1.0.0, read from the install, set and read back; SPUP, which 1.2 lists
    but cannot create, is refused before anything is sent."""
    from xwatch.core.plans.options import Backends
    from xwatch.core.plans.runner import Runner
    from xwatch.core.xsched.controller import XschedController
    from xwatch.core.xsched.install import XschedError, XschedInstall
    from xwatch.scenario import load_scenario

    install = make_install(tmp_path / f"xs-{version}", platforms=("hip",), version=version)
    sc = load_scenario(str(scen(tmp_path, duration=30)))

    async def go() -> dict[str, object]:
        ctl = XschedController(XschedInstall(install, "test"), sc, poll_s=0.1)
        runner = Runner(sc, backends=Backends.of(ctl))
        phase = await runner.start_phase("xsched")
        try:
            for _ in range(100):
                if all(ctl._handles(n) for n in ("high", "low")):
                    break
                await asyncio.sleep(0.1)
            low_pid = phase.runs["low"].pid
            assert await ctl.set_priority("low", 5) == 2
            await ctl.set_policy("CFS")
            assert phase.xsched is not None
            assert phase.xsched.policy_running == cfs
            assert phase.xsched.version == version
            with pytest.raises(XschedError, match="SPUP" if version == "1.2.0" else
                               "no policy 'SPUP'") as e:
                await ctl.set_policy("SPUP")
            if version == "1.2.0":
                assert "cannot create it" in str(e.value) and "HPF" in str(e.value)
            with pytest.raises(XschedError, match="must stay below threshold"):
                await ctl.configure("high", threshold=4, batch_size=4)  # refused before sending
            with pytest.raises(XschedError, match="level 3 is not supported"):
                await ctl.configure("high", level=3, threshold=8, batch_size=2)  # server says no
            assert await ctl.configure("high", threshold=8, batch_size=2) == 2
            await asyncio.sleep(0.3)
            return {"low_pid": low_pid, "high_pid": phase.runs["high"].pid,
                    "annotations": list(phase.annotations)}
        finally:
            await runner.stop_phase()
            runner.session.close()

    res = asyncio.run(go())
    got = calls(install)
    hints = [c for c in got if c["call"] == "hint"]
    assert {c["handle"] for c in hints} == {res["low_pid"] * 16, res["low_pid"] * 16 + 1}  # type: ignore[operator]
    assert all(c["hint_type"] == 1 and c["priority"] == 5 for c in hints)
    assert [c["policy"] for c in got if c["call"] == "policy"] == [cfs]
    cfg = [c for c in got if c["call"] == "config"]
    hp = res["high_pid"]
    assert sorted(c["hex"] for c in cfg) == sorted(f"{hp * 16 + k:x}" for k in (0, 1))  # type: ignore[operator]
    assert all(c["threshold"] == 8 and c["batch_size"] == 2 for c in cfg)
    texts = [a.text for a in res["annotations"]]  # type: ignore[union-attr]
    assert texts == ["low: priority -> 5", f"policy -> CFS ({cfs}, read back)",
                     "high: threshold=8, batch_size=2"]


def test_hung_xserver_is_named(tmp_path: Path, install: Path) -> None:
    """An xserver that stops answering HTTP while its process lives (1.2 did, after a
    policy it cannot create) is named hung, and the phase fails saying so. The policy
    check is bypassed (the install's table claims SPUP can be created) to get there."""
    import dataclasses

    from xwatch.core.plans.options import Backends
    from xwatch.core.plans.runner import Runner
    from xwatch.core.xsched.controller import XschedController
    from xwatch.core.xsched.install import XschedError, XschedInstall
    from xwatch.core.xsched.meta import read_meta
    from xwatch.scenario import load_scenario

    sc = load_scenario(str(scen(tmp_path, duration=30)))

    async def go() -> tuple[str, str | None, bool]:
        ctl = XschedController(XschedInstall(install, "test"), sc, poll_s=0.1)
        runner = Runner(sc, backends=Backends.of(ctl))
        await runner.start_phase("xsched")
        try:
            meta = read_meta(install)
            pols = tuple(dataclasses.replace(p, creatable=True) for p in meta.policies.policies)
            ctl.meta = dataclasses.replace(meta, policies=dataclasses.replace(
                meta.policies, policies=pols))
            with pytest.raises(XschedError) as e:
                await ctl.set_policy("SPUP")
            alive = ctl.proc is not None and ctl.proc.poll() is None
            return e.value.title, ctl.failure(), alive
        finally:
            await runner.stop_phase()
            runner.session.close()

    title, failure, alive = asyncio.run(go())
    assert title == "xserver hung" and alive
    assert failure is not None and "is hung: alive" in failure
    assert "invalid policy type: 6" in failure  # its log's last lines


def test_doctor_exit_codes(tmp_path: Path, install: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    noserver = make_install(tmp_path / "noxs", xserver=False)
    roots = [install, tmp_path / "nowhere", noserver]
    with ThreadPoolExecutor(3) as pool:  # each doctor imports torch: ~9 s, side by side
        ok, bad, r = pool.map(lambda root: run_xwatch("doctor", "--xsched", str(root),
                                                      timeout=180), roots)
    assert ok.returncode == 0, ok.stdout
    assert "PASS  xsched install" in ok.stdout and "PASS  xserver" in ok.stdout
    assert "GET /policy -> HPF (1), stopped" in ok.stdout
    assert "xsched version" in ok.stdout and "1.2.0 (lib/cmake/XSched/XSchedConfig.cmake)" in ok.stdout
    assert "SPUP 6 (listed, cannot be created)" in ok.stdout
    assert bad.returncode == 1 and "FAIL  xsched install" in bad.stdout
    assert r.returncode == 1 and "xserver" in r.stdout


def test_sweep_survives_a_crashing_setting(tmp_path: Path, install: Path) -> None:
    f = scen(tmp_path, duration=1.2).read_text().replace(
        f'"{WORKLOADS}/pipe_producer.py", "40", "--service-ms", "30"]\n[workload.xsched]',
        f'"{WORKLOADS}/pipe_producer.py", "40", "--crash-if-env", '
        f'"XSCHED_AUTO_XQUEUE_THRESHOLD=4"]\n[workload.xsched]')
    (tmp_path / "s.toml").write_text(f)
    r = run_xwatch("sweep", str(tmp_path / "s.toml"), "--xsched", str(install),
                   "--set", "low.threshold=2,4,8", "--set", "low.batch_size=1,2,4",
                   "--export", str(tmp_path / "o"), timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads((tmp_path / "o" / "snapshot.json").read_text())
    assert [p["mode"] for p in doc["phases"]] == ["native", "xsched", "xsched", "xsched"]
    assert [p["status"] for p in doc["phases"]] == ["done", "done", "failed", "done"]
    envs = [p["workloads"]["low"]["hello"]["env"].get("XSCHED_AUTO_XQUEUE_THRESHOLD")
            for p in doc["phases"][1:]]
    assert envs == ["2", "4", "8"]
    md = (tmp_path / "o" / "report.md").read_text()
    assert "Sweep: XSched settings against native" in md
    assert "low.threshold=4, low.batch_size=2 | FAILED" in md


def test_compare_on_two_gpus_one_xserver_for_every_copy(tmp_path: Path, install: Path) -> None:
    """--gpus 0,1: four copies, each pinned, each with its priority's XSched env, all
    scheduled by one xserver; engagement per copy; per-GPU sections for both phases."""
    fake_nvml = str(ROOT / "tests" / "data" / "fake_nvml")  # a machine with two GPUs
    r = run_xwatch("compare", str(scen(tmp_path)), "--xsched", str(install), "--gpus", "0,1",
                   "--export", str(tmp_path / "o"), timeout=120, env={"PYTHONPATH": fake_nvml})
    # low's queues are never ready (FAKE_XQUEUE_READY=never): not-scheduled, still exit 0
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "o" / "snapshot.json").read_text())
    native, xs = doc["phases"]
    names = ["high@0", "low@0", "high@1", "low@1"]
    assert list(xs["workloads"]) == names
    for n in names:
        env = xs["workloads"][n]["hello"]["env"]
        g = n.split("@")[1]
        launch = xs["workloads"][n]["launch"]["env"]
        assert launch["CUDA_VISIBLE_DEVICES"] == g and launch["HIP_VISIBLE_DEVICES"] == g
        assert env["XSCHED_AUTO_XQUEUE_PRIORITY"] == ("1" if n.startswith("high") else "0")
        assert xs["workloads"][n]["gpu"] == int(g)
    status = {n: w["status"] for n, w in xs["xsched"]["workloads"].items()}
    assert status == {"high@0": "engaged", "low@0": "not-scheduled",
                      "high@1": "engaged", "low@1": "not-scheduled"}
    started = [ln for ln in xs["xsched"]["log_tail"] if "xserver started" in ln]
    assert len(started) == 1  # one xserver for every copy
    for p in (native, xs):
        assert [g["gpu"] for g in p["gpus"]["groups"]] == [0, 1]
        assert p["gpus"]["rollup"]["high_requests"] == sum(
            p["workloads"][n]["count"] for n in ("high@0", "high@1"))


def test_a_stall_after_a_low_left_is_named_and_survived(tmp_path: Path, install: Path) -> None:
    """Issue 58 goal 5, within one session: LOW leaves mid-phase without telling
    xserver, which then answers nothing for 12 s (``FAKE_STALL_AFTER_EXIT_S``, as 1.2's
    scheduler thread was seen to after a neighbour's copies left). The phase goes on
    (it used to fail at 2 s: "xserver is hung") and the stall is named with who left."""
    f = tmp_path / "x.toml"
    f.write_text(f"""
duration_s = 22
[xsched]
platform = "hip"
port = {_free_port()}
[[workload]]
name = "high"
priority = "high"
command = ["{PY}", "{WORKLOADS}/pipe_producer.py", "40"]
[[workload]]
name = "low"
priority = "low"
command = ["{PY}", "{WORKLOADS}/pipe_producer.py", "40", "60", "--service-ms", "10"]
""")
    r = run_xwatch("run", str(f), "--headless", "--mode", "xsched", "--xsched", str(install),
                   "--export", str(tmp_path / "o"), timeout=120,
                   env={"FAKE_STALL_AFTER_EXIT_S": "12"})
    doc = json.loads((tmp_path / "o" / "snapshot.json").read_text())
    (p,) = doc["phases"]
    low_pid = p["workloads"]["low"]["hello"]["pid"]
    assert p["xsched"].get("xserver_exit") is None, p["xsched"]["xserver_exit"]
    stalls = [a["text"] for a in p["annotations"] if a.get("kind") == "stall"]
    assert len(stalls) == 1, p["annotations"]
    m = re.fullmatch(r"xserver stalled (\d+\.\d) s after pid (\d+) \(low's copy, 2 XQueues\) left",
                     stalls[0])
    assert m and int(m.group(2)) == low_pid and 10.0 <= float(m.group(1)) <= 15.0, stalls
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
