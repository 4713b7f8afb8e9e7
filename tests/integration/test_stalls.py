"""A stall is a failure: a workload that stops completing requests is marked
stalled (and recovers), requests due but unfinished at the end are counted
exactly, a silent command fails the run, and a dead xserver fails its phase at
once - each with a non-zero exit and no process left behind."""

from __future__ import annotations

import asyncio
import csv
import gzip
import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import PY, WORKLOADS, run_xwatch
from tests.helpers.fake_xsched import have_cc, make_install, pid_alive, xserver_pid
from tests.helpers.procs import wait_gone
from tests.helpers.scenarios import one, producer
from xwatch.core.engine.live.session import Session
from xwatch.core.engine.snapshot import STALLED
from xwatch.core.plans.runner import Runner
from xwatch.scenario import parse_scenario


async def _until(cond, timeout: float, step: float = 0.05) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        await asyncio.sleep(step)
    return bool(cond())


@pytest.mark.slow
async def test_sigstop_worker_stalls_recovers_and_unfinished_is_exact(tmp_path: Path) -> None:
    scen = parse_scenario({"duration_s": 60, "workload": [{
        "name": "hi", "priority": "high", "model": "resnet18", "input": [3, 32, 32],
        "rate": 20, "warmup": 2, "threads": 1, "device": "cpu"}]}, "<test>")
    session = Session(scen, spool_dir=str(tmp_path / "spool"))
    runner = Runner(scen, session)
    runner.supervisor.grace = (0.5, 0.5)
    phase = await runner.start_phase("native")
    run = phase.runs["hi"]
    try:
        assert await _until(lambda: run.rec.count >= 10, 120), run.state
        pid = run.pid
        assert pid is not None
        # 1) frozen for 3 s: stalled (bound max(2 s, 20 x P99)), then it recovers
        os.kill(pid, signal.SIGSTOP)
        t_stop = time.monotonic()
        assert await _until(lambda: run.state == STALLED, 6)
        assert time.monotonic() - t_stop >= 1.5  # not before its bound
        await asyncio.sleep(max(0.0, 3.0 - (time.monotonic() - t_stop)))
        os.kill(pid, signal.SIGCONT)
        assert await _until(lambda: run.state == "running", 10)
        assert run.stalls and run.stalls[0].until is not None
        # the requests due while it was frozen were sent late, not dropped
        assert await _until(lambda: run.rec.count >= 10 + 55, 20)
        # 2) frozen again and the phase ends while it is stalled
        os.kill(pid, signal.SIGSTOP)
        assert await _until(lambda: run.state == STALLED, 6), (
            run.state, time.monotonic() - (run.last_progress or 0), run.stall_bound(),
            run.capture_grace_until, phase.t_stop)
        await asyncio.sleep(1.0)
    finally:
        await runner.stop_phase()
        runner.kill_now()
    snap = phase.snapshot(time.monotonic())
    w = snap.workload("hi")
    assert w is not None
    assert phase.status == "failed" and "hi stalled since" in (phase.error or "")
    assert w.stalled_since is not None and len(w.stalls) == 2
    # exact: every request due by the measured end that was not completed
    session.spool.flush()
    rows = [r for r in csv.DictReader(gzip.open(session.spool.path, "rt"))
            if r["workload"] == "hi"]
    completed = len(rows)
    assert completed == w.count and max(int(r["seq"]) for r in rows) == completed
    t0, cutoff = run.ready_t0, phase.t_stop
    assert t0 is not None and cutoff is not None
    due, i = 0, 0
    while t0 + i / 20 <= cutoff:
        due, i = due + 1, i + 1
    u = w.unfinished
    assert u is not None and u.count == due - completed and u.count >= 40
    oldest = t0 + completed / 20
    assert u.max_wait_ms == pytest.approx((cutoff - oldest) * 1e3, abs=0.01)
    assert w.phase.max is not None and u.max_wait_ms is not None
    assert u.in_percentiles and w.phase.max >= u.max_wait_ms - 0.01
    assert w.phase_count == completed + u.count  # censored waits are in the percentiles
    session.close()
    assert wait_gone([pid]) == []


def test_silent_command_is_stalled_and_fails_the_run(scenario_file, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = scenario_file("""
        duration_s = 5
        [[workload]]
        name = "quiet"
        priority = "high"
        rate = 50
        command = ["@PY@", "@W@/pipe_producer.py", "50", "--hang-after", "20"]
    """)
    r = run_xwatch("run", str(f), "--headless", "--export", str(tmp_path / "o"), timeout=60)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "quiet stalled" in r.stdout and "FAILED" in r.stderr
    doc = json.loads((tmp_path / "o" / "snapshot.json").read_text())
    ph = doc["phases"][0]
    w = ph["workloads"]["quiet"]
    assert ph["status"] == "failed" and "quiet stalled since" in ph["error"]
    assert w["stalls"] and w["stalls"][0]["since"] < 2.0 and w["count"] == 20
    # a command with a rate: unfinished is estimated from it and says so
    assert w["unfinished"]["count"] >= 150 and not w["unfinished"]["in_percentiles"]
    assert "estimated from rate" in w["unfinished"]["note"]
    assert wait_gone([w["pid"]]) == []


@pytest.mark.skipif(not have_cc(), reason="needs a C compiler for the fake shim")
def test_killed_xserver_fails_the_phase_at_once(tmp_path: Path) -> None:
    install = make_install(tmp_path / "xsched")
    f = tmp_path / "s.toml"
    f.write_text(f"""
duration_s = 20
[xsched]
platform = "hip"
port = 0
[[workload]]
name = "high"
priority = "high"
command = ["{PY}", "{WORKLOADS}/pipe_producer.py", "40"]
[[workload]]
name = "low"
priority = "low"
command = ["{PY}", "{WORKLOADS}/pipe_producer.py", "40"]
""".replace("port = 0", "port = 50999"))
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "xwatch", "run", str(f), "--headless",
                             "--mode", "xsched", "--xsched", str(install), "--export",
                             str(tmp_path / "o")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    pid = None
    while time.monotonic() < deadline and pid is None:
        time.sleep(0.2)
        pid = xserver_pid(install)
    assert pid is not None
    time.sleep(3.0)
    t_kill = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=60)
    took = time.monotonic() - t_kill
    assert proc.returncode == 1, out + err
    assert took < 12  # detected at once, not at the planned end (20 s)
    assert "xserver (pid" in out + err and "died" in out + err
    doc = json.loads((tmp_path / "o" / "snapshot.json").read_text())
    ph = doc["phases"][0]
    assert ph["status"] == "failed" and "died (killed by signal 9)" in ph["error"]
    assert ph["xsched"]["xserver_exit"]["returncode"] == -9
    assert any(a.get("kind") == "failure" for a in ph["annotations"])
    pids = [w["pid"] for w in ph["workloads"].values()]
    assert all(w["state"] == "stopped" for w in ph["workloads"].values())
    assert wait_gone(pids) == [] and not pid_alive(pid)
    report = (tmp_path / "o" / "report.md").read_text()
    assert "## Failures" in report and "xserver (pid" in report


@pytest.mark.parametrize("stall, failed", [("false", False), ("0.6", True)])
def test_stall_s_per_workload(tmp_path: Path, stall: str, failed: bool) -> None:
    """A workload that pauses (here: stops completing after 20 requests) is a failure
    only where the scenario says so: ``stall_s = false`` never, ``stall_s = 0.6`` fast."""
    f = one(tmp_path, "trainer", producer(40, "--hang-after", "20"), f"stall_s = {stall}")
    out = tmp_path / "o"
    r = run_xwatch("run", str(f), "--headless", "--telemetry", "off", "--export", str(out))
    doc = json.loads((out / "snapshot.json").read_text())
    w = doc["phases"][0]["workloads"]["trainer"]
    assert doc["scenario"]["workloads"][0]["stall_s"] == (False if stall == "false" else 0.6)
    if failed:
        assert r.returncode == 1 and w["stalls"], r.stdout
        assert "stall_s 0.6 s" in w["stalls"][0]["why"] and w["stalls"][0]["bound_s"] == 0.6
    else:
        assert r.returncode == 0, r.stdout + r.stderr
        assert w["stalls"] == [] and doc["phases"][0]["status"] == "done"


def test_stall_s_rejects_true_and_nonsense(tmp_path: Path) -> None:
    for bad in ("true", "0", "\"soon\""):
        f = tmp_path / "s.toml"
        f.write_text(f"""
[[workload]]
name = "w"
priority = "high"
stall_s = {bad}
command = ["true"]
""")
        r = run_xwatch("run", str(f), "--headless")
        assert r.returncode == 2 and "stall_s" in r.stderr and "false" in r.stderr, r.stderr
