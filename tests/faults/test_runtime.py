"""Faults during a run never lose what was measured and leave nothing running:
a full disk at export and while spooling, xwatch itself stopped for 10 s,
workloads that daemonize, close their event pipe or flood it, and a hung MPS
daemon."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import DATA, PY, ROOT, WORKLOADS, run_xwatch
from tests.helpers.fake_mps import make_tool
from tests.helpers.procs import read_until, wait_gone
from tests.helpers.scenarios import one, tiny_models, two
from xwatch.core.model.events import Request


def marked(owner: int) -> list[int]:
    """Live processes carrying XWATCH_OWNER=owner."""
    out = []
    for p in psutil.process_iter(["pid"]):
        try:
            if p.environ().get("XWATCH_OWNER") == str(owner) and \
                    p.status() != psutil.STATUS_ZOMBIE:
                out.append(p.pid)
        except psutil.Error:
            continue
    return out


def wait_marked(owner: int, n: int, timeout: float = 60) -> list[int]:
    """``marked(owner)`` once it lists ``n`` processes (or at ``timeout``: what it lists
    then), instead of a fixed sleep that a loaded box outlasts."""
    end = time.monotonic() + timeout
    while True:
        found = marked(owner)
        if len(found) >= n or time.monotonic() > end:
            return found
        time.sleep(0.1)


# ------------------------------------------------------------ disk full
def test_disk_full_at_export_saves_the_snapshot_elsewhere_and_exits_non_zero(
        tmp_path: Path) -> None:
    """ENOSPC from the target folder (simulated in process: mounting a small tmpfs is
    not allowed everywhere): the snapshot lands in the sessions folder, the message
    says where, the exit is non-zero."""
    import asyncio

    from xwatch.core.export import snapshot as snapmod
    from xwatch.core.plans import driver as headless
    from xwatch.core.plans.options import Options
    from xwatch.scenario import load_scenario

    target = tmp_path / "full"
    real = snapmod.write_export

    def full_disk(prep, directory):  # type: ignore[no-untyped-def]
        if Path(directory) == target:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(prep, directory)

    state = tmp_path / "state"
    os.environ["XDG_STATE_HOME"] = str(state)
    scen = load_scenario(str(two(tmp_path)))
    args = Options(export=str(target), telemetry="off", spool_max_mb=64)
    mp = pytest.MonkeyPatch()
    mp.setattr(snapmod, "write_export", full_disk)
    try:
        rc = asyncio.run(headless.run_headless(scen, args, ["native"]))
    finally:
        mp.undo()
    assert rc == 1
    saved = list((state / "xwatch" / "sessions").glob("*-unsaved"))
    assert len(saved) == 1, saved
    doc = json.loads((saved[0] / "snapshot.json").read_text())
    assert doc["phases"][0]["workloads"]["high"]["count"] > 40


def test_disk_full_on_a_real_tmpfs_is_a_non_zero_exit(tmp_path: Path) -> None:
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
                       capture_output=True)
    if r.returncode != 0:
        pytest.skip("mounting a tmpfs is not allowed here (the in-process test covers it)")
    try:
        (mnt / "filler").write_bytes(b"x" * 60_000)
        out = run_xwatch("run", str(two(tmp_path)), "--headless", "--telemetry", "off",
                         "--export", str(mnt / "out"),
                         env={"XDG_STATE_HOME": str(tmp_path / "state")})
        assert out.returncode == 1, out.stdout + out.stderr
        assert "No space left on device" in out.stderr
        assert "snapshot saved instead to" in out.stderr
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_disk_full_while_spooling_keeps_the_statistics_exact(tmp_path: Path) -> None:
    from xwatch.core.engine.spool import EventSpool

    warnings: list[str] = []
    sp = EventSpool(str(tmp_path), on_full=warnings.append)

    class FullDisk:
        closed = False

        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self) -> None:
            pass

        def close(self) -> None:
            self.closed = True

    sp._f.close()
    sp._f = FullDisk()  # type: ignore[assignment]
    ev = [Request(seq=i, t=1.0 + i, latency_ms=2.0, service_ms=1.0, sched_delay_ms=0.0,
                  late=False, batch=1) for i in range(100)]
    sp.write_many(0, "w", ev)
    sp.flush()
    sp.write_many(0, "w", ev)
    assert sp.failed and "No space left" in sp.failed
    assert sp.dropped == 200 and sp.rows == 0
    assert len(warnings) == 1 and "statistics stay exact" in warnings[0]
    sp.close()


# ------------------------------------------------------------ xwatch itself stopped
def test_xwatch_stopped_for_10_s_does_not_blame_the_workloads(tmp_path: Path) -> None:
    out = tmp_path / "o"
    p = subprocess.Popen([PY, "-m", "xwatch", "run", str(two(tmp_path, duration=16)),
                          "--headless", "--telemetry", "off", "--export", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    assert len(wait_marked(p.pid, 2)) >= 2  # the phase runs: both workloads started
    assert p.stdout is not None
    said = read_until(p.stdout, "high running n=")  # and measure (however busy the box)
    p.send_signal(signal.SIGSTOP)
    time.sleep(10)  # the fault itself: xwatch stopped for 10 s
    p.send_signal(signal.SIGCONT)
    rest, _ = p.communicate(timeout=90)
    text = "".join(said) + rest
    assert p.returncode == 0, text
    doc = json.loads((out / "snapshot.json").read_text())
    ph = doc["phases"][0]
    assert ph["status"] == "done"
    assert all(not w["stalls"] for w in ph["workloads"].values())
    assert any("xwatch itself did not run" in m["text"] for m in doc["messages"])
    # nothing measured was lost: ~40/s for the whole phase, the paused time included
    assert ph["workloads"]["high"]["count"] >= 40 * 14


# ------------------------------------------------------------ workloads that misbehave
#: starts a child in a session of its own (it leaves the workload's process group and
#: would outlive it), then becomes the event producer
DAEMONIZING = (f'["{PY}", "-c", "import subprocess, os, sys; subprocess.Popen([sys.executable, '
               f'\'-c\', \'import time; time.sleep(300)\'], start_new_session=True); '
               f'os.execv(sys.executable, [sys.executable, \'{WORKLOADS}/pipe_producer.py\', '
               f'\'20\'])"]')
def test_a_workload_that_daemonizes_leaves_nothing_behind(tmp_path: Path) -> None:
    p = subprocess.Popen([PY, "-m", "xwatch", "run", str(two(tmp_path, duration=3, lo=DAEMONIZING)),
                          "--headless", "--telemetry", "off"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    during = wait_marked(p.pid, 3)
    text, _ = p.communicate(timeout=60)
    assert p.returncode == 0, text
    assert len(during) >= 3  # high, low and the daemon that left the group
    assert wait_gone(during, 10) == [], during


def test_stray_of_a_killed_xwatch_is_swept_by_the_next_one(tmp_path: Path) -> None:
    p = subprocess.Popen([PY, "-m", "xwatch", "run", str(two(tmp_path, duration=30, lo=DAEMONIZING)),
                          "--headless", "--telemetry", "off"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, cwd=ROOT)
    during = wait_marked(p.pid, 3)  # high, low and the daemon that left the group
    assert len(during) >= 3, during
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    time.sleep(1)
    left = [x for x in during if psutil.pid_exists(x) and
            psutil.Process(x).status() != psutil.STATUS_ZOMBIE]
    r = run_xwatch("run", str(two(tmp_path, duration=1)), "--headless", "--telemetry", "off")
    assert r.returncode == 0, r.stdout + r.stderr
    assert wait_gone(left, 10) == [], left


def test_a_workload_that_closes_its_event_pipe_at_once(tmp_path: Path) -> None:
    lo = (f'["{PY}", "-c", "import os,time; os.close(int(os.environ[\\"XWATCH_EVENT_FD\\"])); '
          f'time.sleep(30)"]')
    out = tmp_path / "o"
    r = run_xwatch("run", str(two(tmp_path, duration=3, lo=lo)), "--headless", "--telemetry",
                   "off", "--export", str(out), timeout=120)
    assert r.returncode == 1, r.stdout  # low never measured anything: said, not hidden
    doc = json.loads((out / "snapshot.json").read_text())
    assert doc["phases"][0]["workloads"]["high"]["count"] > 60  # high is not lost
    assert "low: measured nothing while the others ran (closed its event pipe" in r.stderr


FLOOD = r"""
import json, os, time
fd = int(os.environ["XWATCH_EVENT_FD"])
os.write(fd, b"\xff\xfe not utf8\n" + b"x" * 200000 + b"\n")  # garbage, over-long
os.write(fd, (json.dumps({"type": "ready", "t0": time.monotonic()}) + "\n").encode())
for i in range(1, 200001):  # as fast as Python writes
    os.write(fd, (json.dumps({"seq": i, "t": time.monotonic(), "latency_ms": 1.0}) + "\n").encode())
time.sleep(5)
"""


def test_a_flooding_workload_is_read_and_counted(tmp_path: Path) -> None:
    script = tmp_path / "flood.py"
    script.write_text(FLOOD)
    flood = f'["{PY}", "{script}"]'
    out = tmp_path / "o"
    r = run_xwatch("run", str(two(tmp_path, duration=3, lo=flood)), "--headless",
                   "--telemetry", "off", "--export", str(out), timeout=120)
    doc = json.loads((out / "snapshot.json").read_text())
    lo = doc["phases"][0]["workloads"]["low"]
    assert lo["malformed"] >= 1  # garbage, non-UTF-8 and an over-long line: counted
    assert lo["count"] >= 100000, lo["count"]  # 200k events in well under 3 s: read
    assert doc["phases"][0]["workloads"]["high"]["count"] > 60, r.stdout


# ------------------------------------------------------------ hung daemons
def test_a_hung_mps_daemon_fails_the_phase_and_is_removed(tmp_path: Path) -> None:
    tool = make_tool(tmp_path / "bin")
    env = {**os.environ, "XWATCH_MPS_CONTROL": str(tool),
           "PYTHONPATH": str(DATA / "fake_nvml")}
    p = subprocess.Popen([PY, "-m", "xwatch", "run", str(two(tmp_path, duration=60)),
                          "--headless", "--mode", "mps", "--telemetry", "off",
                          "--export", str(tmp_path / "o")], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    daemon = None
    end = time.monotonic() + 30
    while daemon is None and time.monotonic() < end:
        time.sleep(0.2)
        for c in psutil.Process(p.pid).children(recursive=True):
            try:
                if "-f" in c.cmdline():
                    daemon = c
            except psutil.Error:
                pass
    assert daemon is not None
    time.sleep(2)
    daemon.suspend()  # SIGSTOP: alive, silent
    out, err = p.communicate(timeout=90)
    assert p.returncode == 1, out + err
    assert "has not answered" in err
    assert wait_gone([daemon.pid], 10) == []


STDOUT_GARBAGE = r"""
import os, sys, time
out = sys.stdout.buffer
out.write(b"\xff\xfe not utf8 at all\n")
out.write(b"y" * (3 << 20) + b"\n")  # one 3 MiB line
for i in range(400):  # a flood of matching lines, then a steady trickle
    out.write(b"Task %d completed in %d.5 ms\n" % (i, 3 + i % 4))
out.flush()
while True:
    out.write(b"Task x completed in 4.5 ms\n")
    out.flush()
    time.sleep(0.02)
"""


def test_garbage_and_a_flood_on_a_regex_workloads_stdout(tmp_path: Path) -> None:
    script = tmp_path / "noisy.py"
    script.write_text(STDOUT_GARBAGE)
    f = one(tmp_path, "noisy", f'["{PY}", "{script}"]',
            "regex = 'completed in (?P<latency_ms>[0-9.]+) ms'")
    out = tmp_path / "o"
    r = run_xwatch("run", str(f), "--headless", "--telemetry", "off", "--export", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    w = json.loads((out / "snapshot.json").read_text())["phases"][0]["workloads"]["noisy"]
    assert w["count"] >= 400 + 50  # the flood and the trickle after the garbage
    # the garbage neither stopped the reading nor became a latency
    assert w["latency_ms"]["min"] >= 3.5 and w["latency_ms"]["max"] <= 6.5


def test_a_hung_xserver_fails_the_phase(tmp_path: Path) -> None:
    from tests.helpers.fake_xsched import have_cc, make_install, xserver_pid

    if not have_cc():
        pytest.skip("needs a C compiler for the fake shim")
    inst = make_install(tmp_path / "xs", ("hip",))
    f = two(tmp_path, duration=60, top='[xsched]\nplatform = "hip"')
    p = subprocess.Popen([PY, "-m", "xwatch", "run", str(f), "--headless", "--mode", "xsched",
                          "--xsched", str(inst), "--telemetry", "off", "--no-preflight"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    end = time.monotonic() + 30
    pid = None
    while pid is None and time.monotonic() < end:
        time.sleep(0.3)
        pid = xserver_pid(inst)
    assert pid is not None
    time.sleep(3)
    os.kill(pid, signal.SIGSTOP)  # alive, but its HTTP API no longer answers
    out, err = p.communicate(timeout=90)
    assert p.returncode == 1, out + err
    assert "has not answered" in err
    assert wait_gone([pid], 10) == []


def test_a_killed_fork_server_fails_its_phase_and_the_next_starts_by_exec(
        tmp_path: Path) -> None:
    """The fork server SIGKILLed while its forked workers measure: they die with it
    (PR_SET_PDEATHSIG), their phase fails naming the server, the run goes on and the
    next phase's workers are started by exec; nothing is left running."""
    f = tmp_path / "s.toml"
    f.write_text(tiny_models("forks", 5))
    out = tmp_path / "out"
    p = subprocess.Popen([PY, "-m", "xwatch", "noise", str(f), "--repeat", "3", "--telemetry",
                          "off", "--export", str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True,
                         env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")})
    server = None
    forked: list[int] = []
    end = time.monotonic() + 240
    while time.monotonic() < end and len(forked) < 2:
        for c in psutil.Process(p.pid).children():
            try:  # a phase's workers may exit while they are listed
                if "xwatch.core.engine.worker.zygote" in " ".join(c.cmdline()):
                    server, forked = c, [k.pid for k in c.children()]
            except psutil.Error:
                continue
        time.sleep(0.2)
    assert server is not None and len(forked) == 2, "no forked workers seen"
    time.sleep(1.5)
    server.kill()
    text, _ = p.communicate(timeout=240)
    assert wait_gone([server.pid, *forked], 10) == []
    doc = json.loads((out / "snapshot.json").read_text())
    ph = doc["phases"]
    assert ph[1]["status"] == "failed", [x["status"] for x in ph]
    assert any("the fork server exited" in m["text"] for m in doc["messages"]), text
    assert ph[2]["status"] == "done"
    assert {w["launch"]["start"] for w in ph[2]["workloads"].values()} == \
        {"exec (the fork server exited)"}
    assert p.returncode != 0
