"""The report of a plan run over a Ray cluster's boxes: each phase's box in the phases
table, the Boxes section (each box by host and node id, its phases) and the per-box
findings (``analysis.answer.boxes.box_findings``, as ``fleet.merge`` says them) in it; a
snapshot without boxes has neither."""

from __future__ import annotations

from pathlib import Path

import pytest

from xwatch.core.export.render.markdown import render_markdown
from xwatch.core.export.report import build_report
from xwatch.core.export.snapshot import load_snapshot

ROOT = Path(__file__).resolve().parents[2]
FLEET = ROOT / "tests" / "data" / "fleet" / "three_boxes.json.gz"


def test_each_phase_names_its_box_and_each_box_is_listed() -> None:
    snap = load_snapshot(FLEET)
    md = render_markdown(build_report(snap))
    assert "| phase | mode | box | status |" in md
    boxes = {p.box.node_id: p.box for p in snap.phases if p.box is not None}
    assert len(boxes) == 3
    for p in snap.phases:
        assert p.box is not None
        assert f"| {p.name} | {p.mode} | {p.box.short} | {p.status} |" in md
        assert f"| {p.box.host} | `{p.box.node_id}` | {p.name} | {p.mode} |" in md
    assert "## Boxes" in md and "The plan ran over 3 boxes" in md
    assert "Per box: no box differs" in md


def test_the_per_box_findings_appear(monkeypatch: pytest.MonkeyPatch) -> None:
    from xwatch.core.analysis.answer import boxes

    seen = []

    def findings(phases: object) -> list[str]:
        seen.append(phases)
        return ["box vm/caa1df is slower for mps: every run's high P99 (2.10, 2.20 ms) is "
                "above every other box's (at most 1.90 ms)"]

    monkeypatch.setattr(boxes, "box_findings", findings)
    md = render_markdown(build_report(load_snapshot(FLEET)))
    assert seen, "the report did not ask box_findings"
    assert "Per box: box vm/caa1df is slower for mps: every run's high P99 (2.10, 2.20 ms)" in md


def test_a_snapshot_without_boxes_has_no_box_column_nor_section() -> None:
    md = render_markdown(build_report(load_snapshot(ROOT / "tests/data/snapshot_two_gpus.json")))
    assert "## Boxes" not in md and "| box |" not in md
