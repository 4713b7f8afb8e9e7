"""The boxes of a plan over a Ray cluster (``xwatch run --ray``, or the replay of a
snapshot whose phases name their box), as groups of GPUs: each box's title (its host
and Ray node id, its GPUs), what it does now, and under it each finished phase's
numbers per GPU (``box_views``, ``box_text``: pure; ``BoxesPanel``: the widget); and
what the charts say of each running box until its numbers arrive (``waiting_lines``).

A box agent answers with finished phases only: while a phase runs, what travels from
the box is its progress line (the highest-priority workload's requests and P99 so
far, as the console's progress line has it); the per-GPU numbers come when the phase
ends, and the panel says so."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

from xwatch.core.analysis.answer.boxes import box_findings
from xwatch.core.analysis.gpu.gpus import gpu_groups
from xwatch.core.engine.snapshot import PhaseSnapshot
from xwatch.ui.widgets.quiet import QuietStatic

#: how many characters of a Ray node id the group's title shows
NODE_CHARS = 12


@dataclass(frozen=True)
class BoxView:
    """One box as the panel shows it: host, Ray node id, its GPUs (Ray's count; None:
    not known, a replay), its state (``idle``, ``running``, ``lost``, ``done``), the
    run it has now (``mps r2``), that run's progress line from the box, its measured
    seconds so far (None: loading, or not heard yet) and the phase's planned ones."""

    host: str
    node_id: str
    gpus: int | None = None
    state: str = "done"
    doing: str | None = None
    progress: str | None = None
    measured_s: float | None = None
    planned_s: float | None = None

    @property
    def short(self) -> str:
        """``host/1a2b3c``, as the console and the report name the box."""
        return f"{self.host}/{self.node_id[:6]}"


def box_views(phases: Sequence[PhaseSnapshot]) -> list[BoxView]:
    """The boxes that ``phases`` name (a replay: each box done), by host and node id."""
    seen = {(p.box.host, p.box.node_id) for p in phases if p.box is not None}
    return [BoxView(host=h, node_id=n) for h, n in sorted(seen)]


def _ms(v: float | None) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.2f}"


def _phase_rows(p: PhaseSnapshot) -> list[tuple[int, Text]]:
    """A finished phase's lines, each with its GPU (-1: the phase's one device): per
    GPU its HIGH copy's P50/P99 and the LOW copies' samples/s; a failed phase: why."""
    if p.status == "failed" and not any(w.count for w in p.workloads):
        return [(1 << 30, Text(f"    {p.name:<10} {p.mode:<7} failed: "
                               f"{p.error or 'no workload measured'}", style="red"))]
    groups = gpu_groups(p)
    if groups:
        return [(g.gpu, Text(f"    GPU {g.gpu:<3} {p.name:<10} {p.mode:<7} "
                             f"{g.high.name if g.high else '-':<9} P50 {_ms(g.high_p50)} ms  "
                             f"P99 {_ms(g.high_p99)} ms  LOW {g.low_samples_per_s:.1f} "
                             "samples/s")) for g in groups]
    ws = [w for w in p.workloads if w.count]
    if not ws:
        return [(-1, Text(f"    {p.name:<10} {p.mode:<7} {p.status}: no request measured",
                          style="yellow"))]
    top = max(ws, key=lambda w: (w.priority, w.name))
    lows = sum(w.throughput.samples_per_s or 0.0 for w in ws if w.priority < top.priority)
    return [(-1, Text(f"    GPU -   {p.name:<10} {p.mode:<7} {top.name:<9} P50 "
                      f"{_ms(top.phase.p50)} ms  P99 {_ms(top.phase.p99)} ms  LOW "
                      f"{lows:.1f} samples/s"))]


def _title(b: BoxView, phases: Sequence[PhaseSnapshot]) -> Text:
    """``vm · node c60f1da3afa5 · 2 GPUs`` and what the box does now."""
    gpus = sorted({w.gpu for p in phases for w in p.workloads if w.gpu is not None})
    ray = "" if b.gpus is None else f" of {b.gpus}" if b.gpus else \
        " (no GPU in Ray: an xwatch_box)"
    if gpus:  # the GPUs its phases ran on (--gpus), of those Ray gave its agent
        what = f"GPUs {','.join(map(str, gpus))}{ray}"
    elif b.gpus:
        what = f"{b.gpus} GPU{'s' if b.gpus != 1 else ''}"
    else:
        what = ("1 device" if phases else "no phase yet") + ray
    t = Text(f"▾ box {b.host} · node {b.node_id[:NODE_CHARS]} · {what}", style="bold")
    if b.state == "lost":
        t.append("  lost: its run failed and is named; the plan goes on", style="bold red")
    elif b.state == "running":
        t.append(f"  box {b.short}: {b.doing or 'a phase'} running, results when it ends",
                 style="cyan")
    elif b.state == "idle":
        t.append("  idle", style="dim")
    return t


def box_text(boxes: Sequence[BoxView], phases: Sequence[PhaseSnapshot]) -> Text:
    """Every box as a group: its title, its running phase's progress (live), then its
    GPUs, each with its finished phases' numbers; last, the per-box findings
    (``analysis.answer.boxes.box_findings``, as the plan says them)."""
    out = Text()
    for i, b in enumerate(boxes):
        mine = [p for p in phases if p.box is not None and p.box.node_id == b.node_id]
        if i:
            out.append("\n")
        out.append_text(_title(b, mine))
        if b.state == "running":
            out.append("\n    so far: " + (b.progress or "starting"), style="cyan")
        rows = [(gpu, k, row) for k, p in enumerate(mine) for gpu, row in _phase_rows(p)]
        for _, _, row in sorted(rows, key=lambda r: (r[0], r[1])):
            out.append("\n")
            out.append_text(row)
        if not mine and b.state != "running":
            out.append("\n    no phase finished here yet", style="dim")
    for line in box_findings(phases):
        out.append(f"\nper box: {line}", style="bold yellow")
    return out


def waiting_lines(boxes: Sequence[BoxView]) -> list[str]:
    """A line for each running box, in the charts until its phase's numbers arrive (a
    box agent answers with finished phases only): ``running on host/1a2b3c: numbers
    arrive when the phase ends (12 s of 30 s)``; ``loading`` before its measured time."""
    out = []
    for b in boxes:
        if b.state != "running":
            continue
        of = f" of {b.planned_s:g} s" if b.planned_s is not None and \
            math.isfinite(b.planned_s) else ""
        when = f"{b.measured_s:.0f} s{of}" if b.measured_s is not None else \
            f"loading, 0 s{of}" if b.progress else f"starting, 0 s{of}"
        out.append(f"running on {b.short}: numbers arrive when the phase ends ({when})")
    return out


class BoxesPanel(QuietStatic):
    """The boxes as groups of GPUs (see the module)."""

    DEFAULT_CLASSES = "boxes"

    def show(self, boxes: Sequence[BoxView], phases: Sequence[PhaseSnapshot]) -> None:
        text = box_text(boxes, phases)
        self.border_title = f"{len(boxes)} boxes (Ray)"
        self.set_content(text, text.plain, text.plain)
