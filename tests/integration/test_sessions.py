"""Never lose a session: the real dashboard on a pseudo-terminal, quit with q, closed
with SIGHUP, or killed with SIGKILL; what lands in the sessions folder, what is
printed at the end, ``xwatch sessions``, ``replay``/``report last`` and recovery."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_xwatch
from tests.helpers import scenarios
from tests.helpers.procs import wait_gone
from xwatch.core.export import sessions


class Dash:
    """The dashboard as a user runs it: a real terminal (pty) of 120x36."""

    def __init__(self, tmp: Path, *extra: str) -> None:
        f = scenarios.two(tmp, duration=600, top='name = "kept"')
        self.state = tmp / "state"
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
        env = {**os.environ, "XDG_STATE_HOME": str(self.state), "TERM": "xterm-256color"}
        self.proc = subprocess.Popen([sys.executable, "-m", "xwatch", "run", str(f),
                                      "--telemetry", "host", *extra],
                                     stdin=slave, stdout=slave, stderr=slave, env=env,
                                     cwd=ROOT, start_new_session=True)
        os.close(slave)
        self.out = bytearray()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.out += data

    def workers(self, n: int = 2, timeout: float = 60) -> list[int]:
        import psutil

        end = time.monotonic() + timeout
        while time.monotonic() < end:
            kids = [c.pid for c in psutil.Process(self.proc.pid).children(recursive=True)]
            if len(kids) >= n:
                return kids
            time.sleep(0.2)
        raise AssertionError(f"workers did not start: {self.text()[-2000:]}")

    def spooled(self, workload: str) -> int:
        """How many of ``workload``'s requests the live session spooled so far (its
        events file, flushed every 2 s)."""
        from xwatch.core.engine.spool import read_rows

        return sum(1 for f in (self.state / "xwatch" / "sessions").glob(
            f"*{sessions.LIVE}/events.csv.gz") for row in read_rows(f) if row[1] == workload)

    def wait_spooled(self, workload: str, n: int, timeout: float = 120) -> None:
        """Until ``n`` of ``workload``'s requests are spooled: the session measured them,
        however long a busy machine took (a fixed sleep assumed an idle one)."""
        end = time.monotonic() + timeout
        while self.spooled(workload) < n:
            if time.monotonic() > end or self.proc.poll() is not None:
                raise AssertionError(f"{self.spooled(workload)} of {n} {workload} requests "
                                     f"spooled: {self.text()[-2000:]}")
            time.sleep(0.3)

    def text(self) -> str:
        return self.out.decode("utf-8", "replace")

    def wait(self, timeout: float = 60) -> int:
        rc = self.proc.wait(timeout=timeout)
        self.reader.join(5)
        return rc


def test_q_keeps_the_session_prints_the_table_and_sessions_lists_it(tmp_path: Path) -> None:
    d = Dash(tmp_path)
    kids = d.workers()
    d.wait_spooled("high", 70)
    os.write(d.master, b"q")
    assert d.wait() == 0, d.text()[-3000:]
    out = d.text()
    assert "phase native-1 (native" in out and "95% intervals" in out
    assert "session kept: " in out
    kept = [x for x in (d.state / "xwatch" / "sessions").iterdir()]
    assert len(kept) == 1 and not kept[0].name.endswith(".live")
    for f in ("snapshot.json", "report.md", "report.html", "events.csv.gz", "meta.json"):
        assert (kept[0] / f).is_file(), f
    doc = json.loads((kept[0] / "snapshot.json").read_text())
    assert doc["phases"][0]["workloads"]["high"]["count"] > 50  # 70 spooled before q (warm-up too)
    assert wait_gone(kids, 10) == []
    env = {"XDG_STATE_HOME": str(d.state)}
    r = run_xwatch("sessions", env=env)
    assert r.returncode == 0 and "kept" in r.stdout and "1 phase(s) (native)" in r.stdout
    r = run_xwatch("report", "last", env=env)
    assert r.returncode == 0 and r.stdout.startswith("# xwatch report: kept")
    r = run_xwatch("report", "0", "--format", "md", env=env)
    assert r.returncode == 0


def test_closing_the_terminal_keeps_the_session(tmp_path: Path) -> None:
    d = Dash(tmp_path)
    kids = d.workers()
    d.wait_spooled("high", 1)  # measuring
    os.killpg(d.proc.pid, signal.SIGHUP)
    d.wait()
    assert wait_gone(kids, 10) == []
    kept = list((d.state / "xwatch" / "sessions").iterdir())
    assert len(kept) == 1 and (kept[0] / "snapshot.json").is_file(), kept


def test_sigkill_leaves_an_interrupted_session_that_can_be_recovered(tmp_path: Path) -> None:
    d = Dash(tmp_path)
    d.workers()
    d.wait_spooled("high", 110)  # flushed to disk (every 2 s) before the kill
    os.kill(d.proc.pid, signal.SIGKILL)
    d.wait()
    env = {"XDG_STATE_HOME": str(d.state)}
    r = run_xwatch("sessions", env=env)
    assert "INTERRUPTED" in r.stdout and "--recover 0" in r.stdout, r.stdout
    r = run_xwatch("sessions", "--recover", "0", env=env)
    assert r.returncode == 0 and "recovered:" in r.stdout, r.stdout + r.stderr
    path = Path(r.stdout.split("recovered:", 1)[1].strip())
    doc = json.loads((path / "snapshot.json").read_text())
    ph = doc["phases"][0]
    assert ph["status"] == "interrupted" and "recovered" in ph["error"]
    assert ph["workloads"]["high"]["count"] >= 100  # 110 spooled before the kill
    assert ph["workloads"]["high"]["latency_ms"]["p50"] is not None
    r = run_xwatch("replay", "nope-not-a-session", env=env)
    assert r.returncode == 2


def test_no_keep_writes_nothing(tmp_path: Path) -> None:
    d = Dash(tmp_path, "--no-keep")
    d.workers()
    time.sleep(2)
    os.write(d.master, b"q")
    assert d.wait() == 0
    assert not (d.state / "xwatch" / "sessions").exists() or \
        not list((d.state / "xwatch" / "sessions").iterdir())
    assert "session kept" not in d.text()


def test_prune_keeps_the_newest_within_count_and_size(tmp_path: Path) -> None:
    base = tmp_path / "s"
    base.mkdir()
    for i in range(25):
        x = base / f"20261123-1000{i:02d}-demo"
        x.mkdir()
        (x / "events.csv.gz").write_bytes(b"x" * 1000)
    (base / "20261123-0900-demo.live").mkdir()  # running or interrupted: never pruned
    gone = sessions.prune(base, keep_n=20, max_bytes=1 << 30)
    assert len(gone) == 5 and all(g.name < "20261123-100005" for g in gone)
    gone = sessions.prune(base, keep_n=20, max_bytes=5500)
    left = sorted(x.name for x in base.iterdir())
    assert len(left) == 6 and left[-1] == "20261123-100024-demo"
    assert "20261123-0900-demo.live" in left


@pytest.mark.parametrize("ref", ["last", "0"])
def test_nothing_kept_yet_is_a_clear_error(tmp_path: Path, ref: str) -> None:
    r = run_xwatch("replay", ref, env={"XDG_STATE_HOME": str(tmp_path)})
    assert r.returncode == 2 and ("no kept session" in r.stderr or "no session 0" in r.stderr)
