"""``procs.pid_alive``: the one "does this process still run" check, against
real processes (this one, a child running, a zombie child, a reaped one)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from xwatch.core.procs import pid_alive


def test_a_running_process_is_alive_and_no_pid_is_none() -> None:
    assert pid_alive(os.getpid())
    assert pid_alive(os.getpid(), zombie=False)
    # 0 would ask kill() about our own process group, -1 about every process
    assert not pid_alive(0) and not pid_alive(-1)


def test_a_zombie_is_alive_only_when_asked_and_a_reaped_child_is_gone() -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # exited, not yet reaped: a zombie
        with open(f"/proc/{p.pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.01)
    else:
        raise AssertionError("the child never became a zombie")
    assert pid_alive(p.pid)
    assert not pid_alive(p.pid, zombie=False)
    p.wait()
    assert not pid_alive(p.pid) and not pid_alive(p.pid, zombie=False)
