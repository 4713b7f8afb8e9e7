"""One box, many sessions: two xwatch processes on one machine, against the fakes,
which hold their channels as the real daemons do (the fake xserver a System V message
queue of its install's key, taken over by a second xserver, after which the first
shuts down; the fake MPS daemon its pipe directory). A second session is refused
naming the first's daemon (exit 2), or joins it; the first runs on untouched either
way, and nothing is left behind."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DATA, PY, ROOT, WORKLOADS, run_xwatch
from tests.helpers import scenarios
from tests.helpers.fake_mps import commands, make_tool
from tests.helpers.fake_xsched import (
    calls,
    channel_key,
    have_cc,
    make_install,
    pid_alive,
    remove_channel,
    xserver_pid,
)
from xwatch.core.mps.neighbours import find_mps_daemons
from xwatch.core.procs import msg_queues
from xwatch.core.xsched.client import XserverClient
from xwatch.core.xsched.install import XschedError
from xwatch.core.xsched.meta import channel_key as install_key
from xwatch.core.xsched.rules.neighbours import find_xserver

FAKE_NVML = str(DATA / "fake_nvml")
#: each test races a second session against the first's planned end (6-9 s): under xdist
#: no other test takes the CPUs meanwhile
pytestmark = pytest.mark.alone


def xscen(folder: Path, duration: float, policy: str = "HPF") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / "x.toml"
    f.write_text(f"""
duration_s = {duration}
[xsched]
platform = "hip"
policy = "{policy}"
[[workload]]
name = "high"
priority = "high"
command = ["{PY}", "{WORKLOADS}/pipe_producer.py", "40"]
[[workload]]
name = "low"
priority = "low"
command = ["{PY}", "{WORKLOADS}/pipe_producer.py", "40", "--service-ms", "30"]
""")
    return f


def start(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    e = {**os.environ, **(env or {})}
    e.pop("XSCHED_HOME", None)
    return subprocess.Popen([PY, "-m", "xwatch", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=e, cwd=ROOT)


def finish(p: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str]:
    try:
        out, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    return p.returncode, out + err


def wait_for(what: Any, timeout: float = 30.0) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError("timed out")


def panel(text: str) -> str:
    """The error panel's words on one line (its borders and wrapping undone)."""
    rows = [ln.strip().strip("│┌┐└┘├┤─").strip() for ln in text.splitlines()]
    return " ".join(" ".join(r for r in rows if r).split())


def snap(out: Path) -> dict[str, Any]:
    return json.loads((out / "snapshot.json").read_text())  # type: ignore[no-any-return]


def first_is_untouched(rc: int, text: str, out: Path) -> dict[str, Any]:
    """Session 1 ended well: exit 0, its xserver never died, its workloads engaged."""
    assert rc == 0, text
    x = snap(out)["phases"][0]["xsched"]
    assert x.get("xserver_exit") is None, x.get("xserver_exit")
    assert x["workloads"]["high"]["status"] == "engaged", x["workloads"]["high"]
    assert "joined" not in x
    return x  # type: ignore[no-any-return]


def pids_of(out: Path) -> set[int]:
    """The workloads' pids of a session's first phase."""
    return {w["pid"] for w in snap(out)["phases"][0]["workloads"].values()}


def says_shared(text: str, out: Path, daemon: str, mode: str) -> None:
    """The session's log (once), its headless final lines and its report say that the
    phase shared its daemon, and that its numbers are not a clean measurement."""
    said_once = [m for m in snap(out)["messages"]
                 if f"another process joined this {daemon} at t=" in m["text"]]
    assert len(said_once) == 1 and said_once[0]["level"] == "warning", snap(out)["messages"]
    said = f"shared its {daemon} from t="
    assert f"! phase {snap(out)['phases'][0]['name']} {said}" in text, text
    assert f"not a clean {mode} measurement" in text
    report = (out / "report.md").read_text()
    assert said in report and f"not a clean {mode} measurement" in report


@pytest.fixture
def install(tmp_path: Path) -> Any:
    if not have_cc():
        pytest.skip("needs a C compiler for the fake shim")
    inst = make_install(tmp_path / "xsched")
    yield inst
    remove_channel(inst)


def xserver_up(inst: Path) -> Any:
    """The first session's xserver, once it holds the install's channel and answers."""
    def up() -> Any:
        x = find_xserver(channel_key(inst), install_key)[0]
        if x is None or x.channel is None:
            return None
        try:
            XserverClient(x.port).get_policy()
        except XschedError:
            return None
        return x
    return wait_for(up)


def test_second_xsched_session_is_refused_and_the_first_runs_on(
        tmp_path: Path, install: Path) -> None:
    out1 = tmp_path / "o1"
    p1 = start("run", str(xscen(tmp_path / "a", 6)), "--headless", "--mode", "xsched",
               "--xsched", str(install), "--telemetry", "off", "--export", str(out1))
    try:
        first = xserver_up(install)
        assert first.proc is not None and first.channel is not None
        r2 = run_xwatch("run", str(xscen(tmp_path / "b", 2)), "--headless", "--mode",
                        "xsched", "--xsched", str(install), "--telemetry", "off", timeout=60)
        assert r2.returncode == 2, r2.stdout + r2.stderr
        err = panel(r2.stderr)
        assert "XSERVER ALREADY RUNNING" in err and f"xserver pid {first.pid}" in err
        assert f"port {first.port}" in err and "--join-xserver" in err
        assert f"Stop it (`kill -INT {first.pid}` as {first.proc.user})" in err
        assert f"key {channel_key(install)}" in err and str(install / "bin" / "xserver") in err
        assert xserver_pid(install) == first.pid  # no second xserver was started
    finally:
        rc, text = finish(p1)
    x1 = first_is_untouched(rc, text, out1)
    assert "shared" not in x1 and "shared its" not in text  # its own processes only
    assert not pid_alive(first.pid)
    assert not [q for q in msg_queues() if q.key == channel_key(install)]  # removed at stop


def test_second_xsched_session_joins_and_counts_only_its_own_queues(
        tmp_path: Path, install: Path) -> None:
    out1, out2 = tmp_path / "o1", tmp_path / "o2"
    p1 = start("run", str(xscen(tmp_path / "a", 7)), "--headless", "--mode", "xsched",
               "--xsched", str(install), "--telemetry", "off", "--export", str(out1))
    try:
        first = xserver_up(install)
        r2 = run_xwatch("run", str(xscen(tmp_path / "b", 2)), "--headless", "--mode",
                        "xsched", "--xsched", str(install), "--telemetry", "off",
                        "--join-xserver", "--export", str(out2), timeout=60)
        assert r2.returncode == 0, r2.stdout + r2.stderr
        assert pid_alive(first.pid)  # the joiner never stops it
        assert p1.poll() is None
    finally:
        rc, text = finish(p1)
    x1 = first_is_untouched(rc, text, out1)
    # the first session noticed the joiner: its XQueues, not the first's own, named
    theirs = pids_of(out2)
    assert theirs <= set(x1["shared"]["pids"]) and not pids_of(out1) & set(x1["shared"]["pids"])
    assert x1["shared"]["queues"] == 4 and x1["shared"]["devices"] == [0]
    says_shared(text, out1, "xserver", "XSched")
    ph = snap(out2)["phases"][0]
    x = ph["xsched"]
    assert pids_of(out1) <= set(x["shared"]["pids"])  # the joiner shared it from its start
    assert x["joined"]["pid"] == first.pid and x["joined"]["port"] == first.port
    assert x["joined"]["policy_change"] is None and x["port"] == first.port
    mine = {ph["workloads"][n]["pid"] for n in ("high", "low")}
    assert x["workloads"]["high"]["status"] == "engaged"
    # the first session's queues were in the same /xqueues answers: not counted
    for n in ("high", "low"):
        assert {q["pid"] for q in x["workloads"][n]["queues"]} <= mine
        assert x["workloads"][n]["stats"]["max_queues"] == 2  # its own process's two
    assert not any(c["call"] == "policy" for c in calls(install))


def test_joining_another_policy_is_refused_unless_asked_to_set_it(
        tmp_path: Path, install: Path) -> None:
    out1, out2 = tmp_path / "o1", tmp_path / "o2"
    p1 = start("run", str(xscen(tmp_path / "a", 7)), "--headless", "--mode", "xsched",
               "--xsched", str(install), "--telemetry", "off", "--export", str(out1))
    try:
        first = xserver_up(install)
        cfs = xscen(tmp_path / "b", 2, policy="CFS")
        base = ("run", str(cfs), "--headless", "--mode", "xsched", "--xsched", str(install),
                "--telemetry", "off")
        r2 = run_xwatch(*base, "--join-xserver", timeout=60)
        assert r2.returncode == 2, r2.stdout + r2.stderr
        assert "JOINED XSERVER RUNS ANOTHER POLICY" in r2.stderr and "HPF" in panel(r2.stderr)
        assert not any(c["call"] == "policy" for c in calls(install))
        r3 = run_xwatch(*base, "--join-xserver=set-policy", "--export", str(out2), timeout=60)
        assert r3.returncode == 0, r3.stdout + r3.stderr
    finally:
        rc, text = finish(p1)
    assert rc == 0, text  # the first ran on, under the policy the second set (said loudly)
    x = snap(out2)["phases"][0]["xsched"]
    assert x["joined"]["pid"] == first.pid and "CFS" in x["joined"]["policy_change"]
    assert [c["call"] for c in calls(install)].count("policy") == 1
    assert "CHANGES ITS POLICY" in r3.stderr and f"xserver pid {first.pid}" in r3.stderr
    assert "this session set its policy" in (out2 / "report.md").read_text()


# ------------------------------------------------------------------- MPS
@pytest.fixture
def mps_env(tmp_path: Path) -> dict[str, str]:
    tool = make_tool(tmp_path / "bin")
    return {"XWATCH_MPS_CONTROL": str(tool), "FAKE_MPS_RECORD": str(tmp_path / "cmds1.txt"),
            "PYTHONPATH": FAKE_NVML + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_second_mps_session_is_refused_then_joins_and_the_first_runs_on(
        tmp_path: Path, mps_env: dict[str, str]) -> None:
    out1, out2 = tmp_path / "o1", tmp_path / "o2"
    tool = mps_env["XWATCH_MPS_CONTROL"]
    (tmp_path / "a").mkdir()
    p1 = start("run", str(scenarios.two(tmp_path / "a", 9)), "--headless", "--mode", "mps",
               "--telemetry", "off", "--export", str(out1), env=mps_env)
    try:
        daemon = wait_for(lambda: find_mps_daemons(tool))[0]
        (tmp_path / "b").mkdir()
        env2 = {**mps_env, "FAKE_MPS_RECORD": str(tmp_path / "cmds2.txt")}
        s2 = str(scenarios.two(tmp_path / "b", 3))
        base = ("run", s2, "--headless", "--mode", "mps", "--telemetry", "off")
        r2 = run_xwatch(*base, env=env2, timeout=60)
        assert r2.returncode == 2, r2.stdout + r2.stderr
        err = panel(r2.stderr)
        assert "MPS CONTROL DAEMON ALREADY RUNNING" in err
        assert f"pid {daemon.proc.pid}" in err and daemon.pipe_dir in err
        assert "--join-mps" in err
        r3 = run_xwatch(*base, "--join-mps", "--export", str(out2), env=env2, timeout=60)
        assert r3.returncode == 0, r3.stdout + r3.stderr
        assert pid_alive(daemon.proc.pid) and p1.poll() is None
    finally:
        rc, text = finish(p1)
    assert rc == 0, text
    m1 = snap(out1)["phases"][0]["mps"]
    assert m1["daemon_pid"] == daemon.proc.pid and "joined" not in m1
    assert m1["workloads"]["high"]["status"] == "in-mps"
    # the first session noticed the joiner's clients in its client lists
    assert pids_of(out2) <= set(m1["shared"]["pids"]), m1.get("shared")
    assert not pids_of(out1) & set(m1["shared"]["pids"]) and m1["shared"]["servers"]
    says_shared(text, out1, "MPS control daemon", "MPS")
    assert m1.get("server_exit") is None and m1["daemon_exit"] is None
    m2 = snap(out2)["phases"][0]["mps"]
    assert m2["joined"]["pid"] == daemon.proc.pid and m2["pipe_dir"] == daemon.pipe_dir
    assert m2["workloads"]["high"]["status"] == "in-mps", m2["workloads"]
    # only the first session ever told its daemon to quit, at its end
    cmds = commands(tmp_path / "cmds1.txt")
    assert cmds.count("quit") == 1 and cmds[-1] == "quit"
    assert not pid_alive(daemon.proc.pid)


def test_the_fake_xserver_keeps_the_channel_rule(install: Path) -> None:
    """What the old code did: a second xserver on the channel takes it over and the
    first shuts down (as XSched's does), so the tests above would fail without the
    refusal."""
    procs = []
    try:
        for _ in range(2):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                free = s.getsockname()[1]
            procs.append(subprocess.Popen([str(install / "bin" / "xserver"), "HPF", str(free)],
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
            wait_for(lambda: any(q.key == channel_key(install) for q in msg_queues()))
            time.sleep(0.3)
        assert procs[0].wait(10) == 0
        out = procs[0].stdout.read().decode() if procs[0].stdout else ""
        assert "recv_chan_ receive failed" in out
        assert procs[1].poll() is None
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(2)
                p.wait(10)
    assert not [q for q in msg_queues() if q.key == channel_key(install)]
