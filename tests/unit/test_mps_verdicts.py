"""The MPS client-list verdicts at a phase's end: a workload a list was read for while it
ran and never found is ``not-in-mps``; one that exited before any list was read while it
ran is ``unverified`` (no evidence either way), not accused of running outside MPS; the
runner's last look before it stops the workloads reads a list while they still run."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from types import SimpleNamespace

from xwatch.core import model as M
from xwatch.core.mps.controller import MpsController
from xwatch.scenario import load_scenario


def _controller(clients: dict[int, list[int]]) -> MpsController:
    ctl = MpsController("/nonexistent/nvidia-cuda-mps-control", load_scenario("demo"))
    ctl.clients = lambda: clients  # type: ignore[method-assign]
    ctl.phase = SimpleNamespace(  # type: ignore[assignment]
        mps=M.Mps(tool="t", pipe_dir="p", log_dir="l"),
        session=SimpleNamespace(log=lambda *a: None))
    return ctl


def _run(pid: int, count: int = 0) -> SimpleNamespace:
    return SimpleNamespace(pid=pid, state="running", spec=SimpleNamespace(name="low"),
                           rec=SimpleNamespace(count=count))


def _gone_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_gone_before_any_list_is_unverified() -> None:
    ctl = _controller({100: []})
    ctl._pending = {"low": (_run(_gone_pid()), 0.0)}  # type: ignore[dict-item]
    asyncio.run(ctl._judge_pending(final=True))
    assert ctl.phase is not None and ctl.phase.mps is not None
    rec = ctl.phase.mps.workloads["low"]
    assert rec.status == "unverified" and "exited before" in rec.warnings[0]


def test_looked_for_while_alive_and_never_found_is_not_in_mps() -> None:
    ctl = _controller({100: []})
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        ctl._pending = {"low": (_run(proc.pid), 1e12)}  # type: ignore[dict-item]
        asyncio.run(ctl._judge_pending(final=False))  # alive, not listed: still pending
        assert ctl.phase is not None and ctl.phase.mps is not None
        assert "low" not in ctl.phase.mps.workloads
    finally:
        proc.kill()
        proc.wait()
    asyncio.run(ctl._judge_pending(final=True))  # gone now, but it was looked for
    rec = ctl.phase.mps.workloads["low"]
    assert rec.status == "not-in-mps" and "not in MPS" in rec.warnings[0]


def test_served_before_a_read_and_unlisted_at_the_next_is_not_in_mps_at_once() -> None:
    """A workload that completed requests has its CUDA context, so it had joined MPS
    before them if it ever will: unlisted at the read after one that saw it serve, it is
    not-in-mps within seconds of its first requests, not after ``JOIN_GRACE_S``."""
    ctl = _controller({100: []})
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        run = _run(proc.pid)
        ctl._pending = {"low": (run, 1e12)}  # type: ignore[dict-item]  # grace far off
        asyncio.run(ctl._judge_pending(final=False))  # no request yet: pending
        run.rec.count = 3
        asyncio.run(ctl._judge_pending(final=False))  # served before this read: pending
        assert ctl.phase is not None and ctl.phase.mps is not None
        assert "low" not in ctl.phase.mps.workloads
        asyncio.run(ctl._judge_pending(final=False))  # still unlisted at the next
        rec = ctl.phase.mps.workloads["low"]
        assert rec.status == "not-in-mps" and "not in MPS" in rec.warnings[0]
    finally:
        proc.kill()
        proc.wait()


def test_the_last_look_before_the_stop_proves_a_client_the_watch_had_not_reached() -> None:
    """On a busy machine a short phase can end before the watch read a list for a
    workload: the runner's ``last_look``, before it stops the workloads, reads one while
    they still run, so the proof does not depend on how fast the box is."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        ctl = _controller({100: [proc.pid]})
        ctl._servers = set()  # as ``enter`` leaves it
        ctl._pending = {"low": (_run(proc.pid), 1e12)}  # type: ignore[dict-item]
        other = SimpleNamespace()  # a phase this controller does not run: nothing read
        asyncio.run(ctl.last_look(other))  # type: ignore[arg-type]
        assert ctl.phase is not None and ctl.phase.mps is not None
        assert "low" not in ctl.phase.mps.workloads
        asyncio.run(ctl.last_look(ctl.phase))
        rec = ctl.phase.mps.workloads["low"]
        assert rec.status == "in-mps" and rec.client_pids == [proc.pid] and not ctl._pending
    finally:
        proc.kill()
        proc.wait()
    asyncio.run(ctl._judge_pending(final=True))  # the stop's own judgement keeps it
    assert ctl.phase.mps.workloads["low"].status == "in-mps"
