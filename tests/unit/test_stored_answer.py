"""The answer is computed once per session and stored in the snapshot (issue 66 goal 2):
the report, the gate and the Compare tab read the stored answer, never recompute it; a
snapshot written before it was stored gets it computed once, as it is loaded."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import msgspec
import pytest

from xwatch.core.analysis.answer.stored import answer_lines, gate, session_answer, stored, unjudged
from xwatch.core.analysis.metric_view import metric_view
from xwatch.core.export.render.markdown import render_markdown
from xwatch.core.export.report import build_report
from xwatch.core.export.snapshot import encode_document, load_snapshot, snapshot_document

ROOT = Path(__file__).resolve().parents[2]
#: a recorded compare (native, MPS, XSched; one run each), written before the box was stored
LLM = ROOT / "data/results/h100-2026-11-24-xsched12/llm"


def test_an_older_snapshot_gets_its_answer_when_loaded() -> None:
    snap = load_snapshot(LLM)
    assert b"answer_box" not in gzip.decompress((LLM / "snapshot.json.gz").read_bytes())
    assert snap.answer is not None
    # the current analysis of its phases, as every report of it always computed
    again = session_answer(msgspec.structs.replace(snap, answer=None))
    assert snap.answer == again
    assert [s.step for s in snap.answer.box.steps] == ["mps", "xsched"]
    assert all(r.text for r in snap.answer.records)


def _written(tmp_path: Path, edit: object = None) -> Path:
    """LLM written by this xwatch (its answer stored), ``edit`` applied to the JSON."""
    doc = json.loads(encode_document(snapshot_document(load_snapshot(LLM), None)))
    if callable(edit):
        edit(doc)
    f = tmp_path / "snapshot.json"
    f.write_text(json.dumps(doc))
    return f


def test_the_stored_answer_is_written_and_read_back_as_it_is(tmp_path: Path) -> None:
    written = load_snapshot(_written(tmp_path))
    assert written.answer == load_snapshot(LLM).answer
    doc = json.loads((tmp_path / "snapshot.json").read_text())
    assert doc["answer_box"]["steps"][0]["sentence"].startswith("MPS vs native (one run each)")


def test_readers_read_the_stored_answer_never_recompute_it(tmp_path: Path) -> None:
    """A planted answer (one the phases would never give) is what the report, the
    console's lines, the gate and the unjudged check say: none of them recomputes."""
    def plant(doc: dict) -> None:  # type: ignore[type-arg]
        box = doc["answer_box"]
        box["steps"][0]["sentence"] = "PLANTED sentence"
        box["steps"][1].update(took_part=False, no_verdict="no verdict: PLANTED why")
        box["notes"] = ["PLANTED note"]
        rec = next(r for r in doc["answer"] if r["step"] == "mps"
                   and r["metric"] == "tpot_ms:P99")
        rec.update(way="slower", text="PLANTED change")

    snap = load_snapshot(_written(tmp_path, plant))
    md = render_markdown(build_report(snap))
    assert "**PLANTED sentence**" in md and "PLANTED note" in md
    assert "MPS vs native (one run each)" not in md
    assert answer_lines(snap)[0] == "PLANTED sentence"
    assert gate(snap, "slower") == ["MPS: chat tpot_ms:P99 PLANTED change"]
    assert unjudged(snap) == ["MPS: not judged (one run each, no noise floor)",
                              "XSched: not judged: PLANTED why"]


def test_an_answer_never_settled_is_an_error_not_a_pass() -> None:
    """The gate never passes for want of an answer; a metric view drops the stored one
    (it judges the latency, the view another metric)."""
    snap = msgspec.structs.replace(load_snapshot(LLM), answer=None)
    with pytest.raises(ValueError, match="carries no answer"):
        gate(snap, "slower")
    with pytest.raises(ValueError, match="carries no answer"):
        stored(snap)
    assert answer_lines(snap) == []  # a live session's start: nothing to say yet
    view = metric_view(load_snapshot(LLM), "ttft_ms")
    assert view.answer is None and view.metric == "ttft_ms"
