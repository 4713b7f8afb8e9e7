"""No orphans: SIGTERM to a headless xwatch, and even SIGKILL, leaves no workload."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.conftest import PY, ROOT
from tests.helpers.procs import wait_gone

SCEN = """
duration_s = 60
[[workload]]
name = "a"
priority = "high"
command = ["{py}", "{w}/pipe_producer.py", "20"]
[[workload]]
name = "b"
priority = "low"
command = ["sh", "-c", "{py} {w}/pipe_producer.py 20; sleep 100"]
"""


def _start(tmp_path: Path) -> tuple[subprocess.Popen[str], list[int]]:
    f = tmp_path / "s.toml"
    f.write_text(SCEN.format(py=PY, w=ROOT / "tests" / "data" / "workloads"))
    p = subprocess.Popen([sys.executable, "-m", "xwatch", "run", str(f), "--headless"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    kids: list[int] = []
    end = time.monotonic() + 30
    while time.monotonic() < end:
        kids = [c.pid for c in psutil.Process(p.pid).children(recursive=True)]
        if len(kids) >= 3:  # a, sh, and sh's python
            break
        time.sleep(0.2)
    time.sleep(1.0)
    kids = [c.pid for c in psutil.Process(p.pid).children(recursive=True)]
    assert len(kids) >= 3, kids
    return p, kids


def test_sigterm_stops_every_workload(tmp_path: Path) -> None:
    p, kids = _start(tmp_path)
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGTERM, out
    assert "interrupted by SIGTERM" in out
    assert wait_gone(kids, 5) == []


def test_sigkill_of_xwatch_still_leaves_no_workload(tmp_path: Path) -> None:
    """Direct children die by PR_SET_PDEATHSIG; the grandchild (sh's python) dies
    on its next event write, because the pipe's read end died with xwatch."""
    p, kids = _start(tmp_path)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=10)
    assert wait_gone(kids, 10) == []


def test_a_child_hears_the_stop_request_where_xwatch_was_started_ignoring_it() -> None:
    """A shell's ``cmd &`` starts xwatch with SIGINT ignored, and an ignored disposition
    survives exec: without ``child_setup`` undoing it an exec'd worker ignored xwatch's
    SIGINT and was stopped by SIGTERM 3 s later (seen on the H100)."""
    from xwatch.core.engine.supervisor import child_setup

    probe = ("import signal as s; g = s.getsignal; print(g(s.SIGINT) is s.default_int_handler, "
             "g(s.SIGINT) == s.SIG_IGN, g(s.SIGTERM) == s.SIG_DFL, g(s.SIGTERM) == s.SIG_IGN)")
    old = signal.signal(signal.SIGINT, signal.SIG_IGN), signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        plain = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        ours = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                              preexec_fn=child_setup())
    finally:
        signal.signal(signal.SIGINT, old[0])
        signal.signal(signal.SIGTERM, old[1])
    # KeyboardInterrupt on SIGINT? SIGINT ignored? SIGTERM default? SIGTERM ignored?
    assert plain.stdout.split() == ["False", "True", "False", "True"]  # inherited
    assert ours.stdout.split() == ["True", "False", "True", "False"], ours.stdout + ours.stderr
