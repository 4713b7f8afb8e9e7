"""The session host (``core.host``) under a headless plan, with real processes: the
answer is computed once, at the plan's end; the console's answer, the ``--fail-if``
gate's lines, the snapshot's stored answer and its report all say that one answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.scenarios import two
from xwatch.core import host
from xwatch.core import model as M
from xwatch.core.analysis.answer.stored import gate, unjudged
from xwatch.core.engine.snapshot import SessionSnapshot
from xwatch.core.export.snapshot import load_snapshot
from xwatch.core.plans.driver import EXIT_GATE, EXIT_OK, Driver, Plan, Step
from xwatch.core.plans.options import Options
from xwatch.scenario import load_scenario


async def test_a_plan_computes_its_answer_once_and_everyone_reads_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    computed: list[int] = []
    real = host.session_answer

    def counted(snap: SessionSnapshot) -> M.SessionAnswer:
        computed.append(len(snap.phases))
        return real(snap)

    monkeypatch.setattr(host, "session_answer", counted)
    scen = load_scenario(str(two(tmp_path, 1)))
    out = tmp_path / "o"
    opts = Options(telemetry="off", export=str(out), repeat=2, fail_if="slower")
    driver = Driver(scen, opts)
    # an A/A of two labelled native steps, interleaved: a run-level answer to gate
    status = await driver.run(Plan([Step("native", label="a"), Step("native", label="b")]))
    assert computed == [4]  # once, at the plan's end, over its four phases
    printed = capsys.readouterr()
    snap = load_snapshot(out)
    assert snap.answer is not None and snap.answer.box.steps
    lines = snap.answer.box.lines()
    said = printed.out.split("=== answer " + "=" * 60 + "\n", 1)[1].splitlines()
    assert said[:len(lines)] == lines
    # the gate's lines are the stored answer's, whatever this A/A's chance outcome
    tripped = gate(snap, "slower") + unjudged(snap)
    assert [ln.removeprefix("GATE slower: ") for ln in printed.err.splitlines()
            if ln.startswith("GATE slower: ")] == tripped
    assert status == (EXIT_GATE if tripped else EXIT_OK)
    md = (out / "report.md").read_text()
    assert f"**{lines[0]}**" in md


async def test_a_plan_whose_answer_raises_still_exports_its_phases(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An analysis fault at the plan's end (on two H200s an OverflowError after seven
    minutes of capacity runs, when nothing was written) loses nothing: the snapshot and
    its report are written with every phase, the fault is said with its type, and the
    plan exits 1 (failed), not 0."""
    def broken(snap: SessionSnapshot) -> M.SessionAnswer:
        raise OverflowError("math range error")

    monkeypatch.setattr(host, "session_answer", broken)
    scen = load_scenario(str(two(tmp_path, 1)))
    out = tmp_path / "o"
    driver = Driver(scen, Options(telemetry="off", export=str(out)))
    status = await driver.run(Plan([Step("native", label="a"), Step("native", label="b")]))
    assert status == 1
    snap = load_snapshot(out)
    assert [p.status for p in snap.phases] == ["done", "done"]
    assert (out / "report.md").exists()
    err = capsys.readouterr().err
    assert "the answer could not be computed (OverflowError: math range error)" in err
