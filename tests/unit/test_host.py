"""The session host's answer (``core.host``): settled once and stored on the session;
reused while nothing it reads changed; for a snapshot taken while a phase runs (the
dashboard's ``s``), computed for that snapshot and not stored (the Compare tab's
answer is over finished phases)."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import pytest

from xwatch.core import host
from xwatch.core import model as M
from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.snapshot import SessionSnapshot
from xwatch.core.model.events import events_of
from xwatch.core.plans.console import Console
from xwatch.core.plans.options import Options
from xwatch.scenario import parse_scenario

SCEN = parse_scenario({"duration_s": 1, "workload": [
    {"name": "high", "priority": "high", "model": "resnet18", "rate": 20},
    {"name": "low", "priority": "low", "model": "resnet50"}]})


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each computation of the answer: how many phases it read."""
    calls: list[int] = []
    real = host.session_answer

    def count(snap: SessionSnapshot) -> M.SessionAnswer:
        calls.append(len(snap.phases))
        return real(snap)

    monkeypatch.setattr(host, "session_answer", count)
    return calls


@pytest.fixture
def h() -> Iterator[host.SessionHost]:
    sh = host.SessionHost(SCEN, Options(telemetry="off"), Console())
    sh.open()
    yield sh
    sh.end()


def _phase(h: host.SessionHost, label: str, shift: float, rng: random.Random) -> Phase:
    """A phase of the labelled step, its requests ``shift`` ms slower."""
    assert h.session is not None
    p = h.session.new_phase("native")
    p.step, p.setting = f"native [{label}]", label
    now = time.monotonic()
    for name in ("high", "low"):
        p.runs[name].on_events(events_of([{"seq": i, "t": now + i * 0.01,
                                           "latency_ms": 3.0 + shift + rng.random()}
                                          for i in range(1, 200)]))
    return p


def test_the_answer_is_settled_once_and_read_as_stored(
        h: host.SessionHost, counted: list[int]) -> None:
    rng = random.Random(1)
    session = h.session
    assert session is not None
    _phase(h, "a", 0.0, rng).finish()
    b = _phase(h, "b", 1.0, rng)
    running = h.settled()  # a phase runs: its numbers are in, and nothing is stored
    assert counted == [2] and session.answer is None
    assert running.answer is not None
    assert running.answer.box.steps[0].step == "native [b]"
    b.finish()
    settled = h.settle()
    assert counted == [2, 2] and settled.answer is session.answer is not None
    again = h.settled()  # nothing it reads changed: the stored one, not computed again
    assert counted == [2, 2] and again.answer is session.answer
    prep = h.prepared()
    assert counted == [2, 2] and prep.doc.answer_box == session.answer.box
    assert prep.doc.answer == session.answer.records
    _phase(h, "c", 2.0, rng).finish()
    after = h.settled()  # a phase more, every one ended: computed and stored
    assert counted == [2, 2, 3] and after.answer is session.answer
    assert [s.step for s in session.answer.box.steps] == ["native [b]", "native [c]"]


def test_an_analysis_fault_keeps_the_phases_and_says_so(
        h: host.SessionHost, monkeypatch: pytest.MonkeyPatch) -> None:
    """On two H200s a capacity run's answer raised an OverflowError at its end and the
    seven minutes measured were lost with it. The answer that raises is said once (its
    type, message and traceback in the session's log, a warning), kept in
    ``answer_error``, and the snapshot comes back without it, every phase in it."""
    rng = random.Random(2)
    session = h.session
    assert session is not None
    _phase(h, "a", 0.0, rng).finish()
    _phase(h, "b", 1.0, rng).finish()

    def broken(snap: object) -> None:
        raise OverflowError("math range error")

    monkeypatch.setattr(host, "session_answer", broken)
    snap = h.settle()
    assert [p.step for p in snap.phases] == ["native [a]", "native [b]"]
    assert snap.answer is None
    assert h.answer_error == "OverflowError: math range error"
    errors = [ln.text for ln in session.logs if ln.stream == "error"]
    assert len(errors) == 1 and "the answer could not be computed" in errors[0]
    assert "Traceback" in errors[0]
    assert h.settled().answer is None  # the dashboard's reading: no crash either
    assert len([ln for ln in session.logs if ln.stream == "error"]) == 1  # said once
