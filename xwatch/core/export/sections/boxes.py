"""The report's account of a plan run over a Ray cluster's boxes (``--ray``,
docs/fleet.md): each box (host, Ray node id), the phases it ran and their HIGH P99,
and the per-box findings (``analysis.answer.boxes.box_findings``, as the plan says them:
boxes of different GPU models, a box slower than every other). A snapshot whose phases
name no box has no such section, and the phases table no box column (``box_cell``)."""

from __future__ import annotations

from collections import defaultdict

from xwatch.core import model as M
from xwatch.core.analysis.answer import boxes as box_analysis
from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot
from xwatch.core.export.render.model import Section, Table, num


def has_boxes(snap: SessionSnapshot) -> bool:
    """Whether any phase names the box it ran on."""
    return any(p.box is not None for p in snap.phases)


def box_cell(p: PhaseSnapshot) -> str:
    """``host/1a2b3c`` of the phase's box, ``-`` where it names none."""
    return p.box.short if p.box is not None else "-"


def _high_p99(p: PhaseSnapshot) -> str:
    """The phase's highest-priority workload (over its copies: the worst) P99, in ms."""
    ws = [w for w in p.workloads if w.count]
    if not ws:
        return "-"
    top = max(w.priority for w in ws)
    vals = [w.phase.p99 for w in ws if w.priority == top and w.phase.p99 is not None]
    return f"{num(max(vals))} ms" if vals else "-"


def boxes_section(snap: SessionSnapshot) -> Section | None:
    """Each box and its phases, then the per-box findings (None: no phase names a box)."""
    if not has_boxes(snap):
        return None
    by: dict[tuple[str, str], list[PhaseSnapshot]] = defaultdict(list)
    boxes: dict[tuple[str, str], M.Box] = {}
    unplaced = []
    for p in snap.phases:
        if p.box is None:
            unplaced.append(p)
            continue
        key = (p.box.host, p.box.node_id)
        boxes[key] = p.box
        by[key].append(p)
    s = Section("Boxes")
    s.paragraphs.append(
        f"The plan ran over {len(boxes)} box{'es' if len(boxes) != 1 else ''} of a Ray "
        "cluster (`--ray`); each phase names the box it ran on (its host and Ray node id). "
        "The answer pools every box's runs; a box that differs is named in the per-box line.")
    rows = []
    for key in sorted(boxes):
        b = boxes[key]
        for p in by[key]:
            rows.append([b.host, f"`{b.node_id}`", p.name, p.mode, p.status,
                         num(p.elapsed_s, 1), _high_p99(p)])
    s.tables.append(("", Table(["host", "Ray node id", "phase", "mode", "status",
                                "measured (s)", "HIGH P99"], rows)))
    if unplaced:
        s.paragraphs.append("No box took " + ", ".join(f"**{p.name}**" for p in unplaced)
                            + " (see Failures).")
    findings = box_analysis.box_findings(snap.phases)
    s.paragraphs.append("Per box: " + ("; ".join(findings) if findings else
                                       box_analysis.NO_BOX_DIFFERS) + ".")
    return s
