"""The XSched preflight judges a probe ``hung`` by its own progress, not the wall clock:
once one probe crashed, another that waits on nothing (its CPU time standing still) is
hung after ``CRASH_GRACE_S``, while one that keeps working (as a probe importing torch on
a busy machine does) is waited for past it and judged on what it did. The probes are
stand-in programs (``Probe.python``), not the smoke, so the test needs no XSched and
no torch: what it shows is the rule, on real processes."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

from xwatch.core.xsched import preflight
from xwatch.core.xsched.preflight import Probe

GRACE_S = 1.5

#: a stand-in for the probe's interpreter, by FAKE_PROBE: crash at once (as a shim that
#: segfaults at load), wait on nothing (a probe blocked on a stalled xserver), or work
#: for over three graces (a slow probe on a busy machine), then say done as the smoke does
PROBE = r"""#!/bin/sh
case "$FAKE_PROBE" in
  crash) kill -SEGV $$ ;;
  wait) exec sleep 60 ;;
  work) end=$(( $(date +%s) + WORK_S ))
        while [ "$(date +%s)" -lt "$end" ]; do :; done
        echo '{"type": "start", "pid": '$$'}'
        echo '{"type": "done", "iters": 3, "early": false, "median_ms": 1.0}' ;;
esac
"""


class NoQueues:
    """An xserver that lists no XQueue (the verdicts here are about the processes)."""

    def xqueues(self) -> dict[str, Any]:
        return {"xqueues": []}


def probe(python: Path, kind: str, name: str) -> Probe:
    env = {**os.environ, "FAKE_PROBE": kind, "WORK_S": str(int(3 * GRACE_S) + 2)}
    return Probe(str(python), "cuda", "cpu", "n/a", env, {"FAKE_PROBE": kind}, (name,))


def test_after_a_crash_a_probe_is_hung_by_its_progress_not_the_clock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight, "CRASH_GRACE_S", GRACE_S)
    python = tmp_path / "python"
    python.write_text(PROBE)
    python.chmod(0o755)
    todo = [(0, probe(python, "crash", "a")), (1, probe(python, "wait", "b")),
            (2, probe(python, "work", "c"))]
    t0 = time.monotonic()
    (crashed, waited, worked), _ = asyncio.run(preflight._run(
        todo, NoQueues(), seconds=1.0, timeout_s=60.0))  # type: ignore[arg-type]
    took = time.monotonic() - t0
    assert crashed.status == "crashed" and "SIGSEGV" in crashed.detail
    # waited on nothing: hung once its CPU time stood still for the grace, long before
    # the 60 s limit
    assert waited.status == "hung", waited
    assert "no progress (its CPU time stood still) for 1.5 s after another probe " \
        "crashed" in waited.detail, waited.detail
    # worked for over three graces after the crash: not hung, it ended and said done (its
    # exit status is the let-go signal's, SIGUSR2, which the stand-in does not handle)
    assert worked.status != "hung" and worked.finished, worked
    assert 3 * GRACE_S <= took < 30, took
