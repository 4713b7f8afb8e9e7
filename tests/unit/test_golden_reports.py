"""Recorded snapshots still load and report exactly as they did.

Each case is a snapshot written by some earlier xwatch (``data/results``, the test
fixtures, one with a kernel capture and its traces in ``tests/data/golden/capture``);
its Markdown and HTML reports (what ``xwatch report --format md|html`` writes) are
compared byte for byte with the files in ``tests/data/golden``, which were rendered by
xwatch at 90ad4d0, before the snapshot model became structs. Together they cover:
native, MPS and XSched phases; the oldest recorded snapshots (2026-11-21) and each
later era of the format; preflight verdicts; an xserver killed mid-phase (errors,
annotations); captures with and without their trace files; a compare with its answer;
an advise race (advice, candidates); a sweep (settings); calibrate; two GPUs; a
compare over a Ray cluster's three boxes (each phase's box, the Boxes section;
recorded by xwatch at issue 68).

After an intended report change: ``python -m tests.unit.test_golden_reports``
rewrites the golden files; review the diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from xwatch.core.export.render.charts import build_charts
from xwatch.core.export.render.html import render_html
from xwatch.core.export.render.markdown import render_markdown
from xwatch.core.export.report import build_report
from xwatch.core.export.snapshot import load_snapshot

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden"

#: case name -> recorded snapshot (a folder or a file), relative to the repository
CASES = {
    "native-2026-11-21": "data/results/h100-2026-11-21/bert",
    "xserver-kill-2026-11-22": "data/results/h100-2026-11-22/xserver-kill",
    "sweep-2026-11-22": "data/results/h100-2026-11-22/sweep",
    "two-gpus": "tests/data/snapshot_two_gpus.json",
    "mps-2026-11-23": "data/results/h200x2-2026-11-23-mps/mps2",
    "advise-2026-11-23": "data/results/h100-2026-11-23f/snapshot-seed1.json.gz",
    "compare-2026-11-24": "data/results/h100-2026-11-24-xsched12/llm",
    "calibrate-2026-11-24": "data/results/h100-2026-11-24-xsched12/calibrate",
    "kernel-lane-2026-11-24": "data/results/h100-2026-11-24-xsched12/kernel-lane",
    "capture": "tests/data/golden/capture",
    "fleet-three-boxes": "tests/data/fleet/three_boxes.json.gz",
}


def render(case: str) -> dict[str, str]:
    """The reports of one case, by file name."""
    snap = load_snapshot(ROOT / CASES[case])
    rep = build_report(snap)
    return {f"{case}.md": render_markdown(rep),
            f"{case}.html": render_html(rep, build_charts(snap))}


@pytest.mark.parametrize("case", sorted(CASES))
def test_recorded_snapshot_reports_as_before(case: str) -> None:
    for name, text in render(case).items():
        want = (GOLDEN / name).read_text(encoding="utf-8")
        assert text == want, f"{name} changed: review, then `python -m {__spec__.name}`"


if __name__ == "__main__":
    for c in sorted(CASES):
        for n, t in render(c).items():
            (GOLDEN / n).write_text(t, encoding="utf-8")
            print(GOLDEN / n)
