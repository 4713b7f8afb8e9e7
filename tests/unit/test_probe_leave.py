"""The preflight probes' leave and the phase retry, as pure logic (issue 64 goal 4): the
probes go one at a time inside the mode's hush, each after the previous one was logged
closed; pids xserver still lists at the limit are reported; the workloads count as quiet
only once held by the start gate; a phase is retried only when xserver died before its
first measured second; the retry records the first attempt and a snapshot with it
validates against the schema and reads back."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from xwatch.core import model as M
from xwatch.core.engine.live.session import Session
from xwatch.core.engine.snapshot import FAILED, WAITING, WARMING
from xwatch.core.export.document.schema import SCHEMA_PATH
from xwatch.core.export.snapshot import load_snapshot, write_snapshot
from xwatch.core.xsched.engagement import XserverLog
from xwatch.core.xsched.leave import probes as probe_leave
from xwatch.core.xsched.leave.probes import Held, leave
from xwatch.core.xsched.leave.quiet import XserverQuiet
from xwatch.core.xsched.leave.retry import failed_twice, first_attempt, xserver_died_early
from xwatch.scenario import load_scenario


class FakeQuiet:
    """A mode that logs each released probe "closed" a moment after its release."""

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.hushed = False
        self.closed_pids: set[int] = set()

    async def quiet(self) -> str:
        self.events.append("quiet")
        return "the workloads were held at the start gate"

    @contextlib.asynccontextmanager
    async def hush(self) -> AsyncIterator[None]:
        self.hushed = True
        self.events.append("hush")
        try:
            yield
        finally:
            self.hushed = False
            self.events.append("unhush")

    async def closed(self, pid: int, timeout_s: float) -> bool:
        await asyncio.sleep(0.01)
        self.events.append(f"closed {pid}")
        return pid in self.closed_pids

    def gone(self) -> str | None:
        return None


class FakeHeld(Held):
    def __init__(self, pid: int, events: list[str], quiet: FakeQuiet, says: bool = True) -> None:
        super().__init__(pid)
        self.events, self.q, self.says = events, quiet, says

    def release(self) -> None:
        assert self.q.hushed, "a probe let go outside the hush"
        self.events.append(f"release {self.pid}")
        if self.says:
            self.switched = True
            self.q.closed_pids.add(self.pid)
            asyncio.get_running_loop().call_later(0.01, self.said.set)


class FakeClient:
    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = answers

    def xqueues(self) -> dict[str, Any]:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


async def test_probes_go_one_at_a_time_inside_the_hush_each_after_the_last_closed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_leave, "SETTLE_S", 0.0)
    events: list[str] = []
    q = FakeQuiet(events)
    held = [FakeHeld(pid, events, q) for pid in (11, 12, 13)]
    # xserver lists probe 12 once more, then none of them
    client = FakeClient([{"xqueues": [{"pid": 12}], "processes": []},
                         {"xqueues": [{"pid": 99}], "processes": [{"pid": 99}]}])
    rec = await leave(held, client, q, ok=True)  # type: ignore[arg-type]
    # each leaves after the last one closed; they exit (a second release) once all left
    assert events == ["quiet", "hush", "release 11", "closed 11", "release 12", "closed 12",
                      "release 13", "closed 13", "release 11", "release 12", "release 13",
                      "unhush"]
    assert rec.wait and rec.listed == [] and rec.note == "" and rec.left_s is not None
    assert rec.quiet == "the workloads were held at the start gate"


async def test_a_probe_that_never_leaves_and_pids_still_listed_are_reported(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_leave, "SETTLE_S", 0.0)
    monkeypatch.setattr(probe_leave, "LEFT_TIMEOUT_S", 0.05)
    monkeypatch.setattr(probe_leave, "GONE_TIMEOUT_S", 0.1)
    events: list[str] = []
    q = FakeQuiet(events)
    held = [FakeHeld(21, events, q, says=False), FakeHeld(22, events, q)]
    client = FakeClient([{"xqueues": [{"pid": 21}], "processes": [{"pid": 21}]}])
    rec = await leave(held, client, q, ok=True)  # type: ignore[arg-type]
    assert "release 22" in events  # the next one still goes
    assert rec.listed == [21]
    assert "no leave from pid 21 within 0.05 s" in rec.note
    assert "xserver still listed pid 21 0.1 s after the last probe left" in rec.note
    assert "still listed pid 21" in rec.line()


async def test_a_failed_preflight_lets_its_probes_go_at_once() -> None:
    events: list[str] = []
    q = FakeQuiet(events)
    q.hushed = True  # (the fake's release asserts it; here no hush is taken)
    held = [FakeHeld(31, events, q), FakeHeld(32, events, q)]
    rec = await leave(held, FakeClient([{}]), q, ok=False)  # type: ignore[arg-type]
    # all at once, then (once each said it left) all again, to exit
    assert events == ["release 31", "release 32", "release 31", "release 32"]
    assert rec.left_s is None
    assert "let go at once" in rec.line()


async def test_the_workloads_are_quiet_once_held_by_the_gate() -> None:
    s = Session(load_scenario("demo"))
    ph = s.new_phase("xsched")
    quiet = XserverQuiet(XserverLog(maxlen=10), ph, lambda n: True, joined=False)
    for r in ph.runs.values():
        r.stage("spawn")
        r.state = WARMING
    waiting = asyncio.ensure_future(quiet.quiet())
    await asyncio.sleep(0.2)
    assert not waiting.done()  # still loading: the probes wait
    ph.runs["high"].state = WAITING
    ph.runs["low"].state = FAILED
    said = await asyncio.wait_for(waiting, 2)
    assert said.startswith("the workloads were held at the start gate (waited ")
    s.close()


async def test_closed_follows_xserver_log() -> None:
    s = Session(load_scenario("demo"))
    log = XserverLog(maxlen=10)
    quiet = XserverQuiet(log, s.new_phase("xsched"), lambda n: True, joined=False)
    asyncio.get_running_loop().call_later(
        0.05, log.append, "[INFO @ T1 @ 00:00:00.0] client process 4242 closed")
    assert await quiet.closed(4242, 2.0)
    assert not await quiet.closed(4343, 0.05)
    s.close()


def _failed(s: Session, t: float, measured: float | None = None) -> Any:
    ph = s.new_phase("xsched")
    ph.xsched = M.Xsched(root="/x", policy="HPF", xserver_exit=M.XserverExit(
        t=t, returncode=-6, reason="xserver (pid 7) died (killed by signal 6)"))
    if measured is not None:
        ph.t_measure = ph.t_start + measured
    ph.error = "XSched preflight failed"
    ph.finish("failed")
    return ph


def test_only_a_death_before_the_first_measured_second_is_retried() -> None:
    s = Session(load_scenario("demo"))
    assert xserver_died_early(_failed(s, 3.2)) is not None
    assert xserver_died_early(_failed(s, 4.5, measured=4.0)) is not None  # within its 1st s
    assert xserver_died_early(_failed(s, 9.0, measured=4.0)) is None
    ok = s.new_phase("xsched")
    ok.finish()
    assert xserver_died_early(ok) is None
    s.close()


def test_the_retry_records_the_first_attempt_and_reads_back(tmp_path: Path) -> None:
    s = Session(load_scenario("demo"))
    first_ph = _failed(s, 3.2)
    died = xserver_died_early(first_ph)
    assert died is not None
    first, line = first_attempt(first_ph, died, s)
    assert s.phases == [] and "running the phase once more" in line
    assert first.xserver_exit == died and first.error == "XSched preflight failed"
    again = s.new_phase("xsched")
    assert again.name == first_ph.name and again.index == first_ph.index
    again.retried = first
    again.preflight = M.Preflight(leave=M.ProbeLeave(quiet="held", left_s=0.4))
    again.finish("failed")
    failed_twice(again, first)
    assert again.error is not None
    assert again.error.endswith("in both attempts (the first: XSched preflight failed)")
    path = write_snapshot(s, tmp_path / "o")
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, json.loads(SCHEMA_PATH.read_text()))
    assert doc["phases"][0]["retried"]["xserver_exit"]["returncode"] == -6
    back = load_snapshot(str(path))
    assert back.phases[0].retried == first
    assert back.phases[0].preflight is not None
    assert back.phases[0].preflight.leave == M.ProbeLeave(quiet="held", left_s=0.4)
    s.close()
