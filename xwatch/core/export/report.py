"""Shareable reports of a snapshot: builds the ``Report`` model and writes it as
Markdown and as one self-contained HTML file.

Both renderings come from the same model, so the numbers in the two are the same
by construction. Charts in the HTML are inline SVG (``charts``): no network, no
scripts. The sections are built in ``export/sections/``, by theme; ``build_report``
puts them in order, each mode's where it declares it (``Mode.report_sections``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from xwatch.core.engine.snapshot import SessionSnapshot
from xwatch.core.export.render.charts import build_charts
from xwatch.core.export.render.html import render_html
from xwatch.core.export.render.markdown import render_markdown
from xwatch.core.export.render.model import Report, Section
from xwatch.core.export.sections.answers import advice_section, answer_section, sweep_section
from xwatch.core.export.sections.boxes import boxes_section
from xwatch.core.export.sections.capacity import capacity_section
from xwatch.core.export.sections.gpu import capture_sections, gpu_section
from xwatch.core.export.sections.modes import isolation_section
from xwatch.core.export.sections.session import (
    environment_section,
    failures_section,
    phases_section,
    reproduce_section,
    scenario_section,
)
from xwatch.core.export.sections.workloads import slo_section, tradeoff_section, workload_sections
from xwatch.core.export.snapshot import atomic_write, load_snapshot
from xwatch.core.modes import registry

#: where the isolation section sits among the modes' own (``Mode.report_sections``)
ISOLATION_PLACE = 20


def mode_sections(snap: SessionSnapshot) -> list[Section | None]:
    """The modes' sections (each registered mode's, ``Mode.report_sections``) and the
    isolation section, by their places."""
    placed: list[tuple[int, Callable[[SessionSnapshot], Section | None]]] = [
        (ISOLATION_PLACE, isolation_section)]
    placed += [(at, registry.load_ref(ref)) for mode in registry.modes()
               for at, ref in mode.report_sections]
    return [fn(snap) for _, fn in sorted(placed, key=lambda p: p[0])]


def build_report(snap: SessionSnapshot) -> Report:
    """The report of a snapshot: its sections in order, those it has nothing for left out."""
    parts: list[Section | None] = [
        advice_section(snap), capacity_section(snap), answer_section(snap), scenario_section(snap),
        environment_section(snap), phases_section(snap), boxes_section(snap), gpu_section(snap),
        *capture_sections(snap), *workload_sections(snap), tradeoff_section(snap),
        slo_section(snap), *mode_sections(snap), sweep_section(snap), failures_section(snap),
        reproduce_section(snap)]
    return Report(f"xwatch report: {snap.scenario.name}", [s for s in parts if s is not None])


def write_reports(snapshot_path: str | os.PathLike[str]) -> list[Path]:
    """Write report.md and report.html next to a snapshot."""
    p = Path(snapshot_path)
    snap = load_snapshot(p)
    rep = build_report(snap)
    d = p.parent if p.is_file() else p
    md, hp = d / "report.md", d / "report.html"
    atomic_write(md, render_markdown(rep).encode())
    atomic_write(hp, render_html(rep, build_charts(snap)).encode())
    return [md, hp]


def write_report_cli(path: str, fmt: str, out: str | None) -> int:
    snap = load_snapshot(path)
    rep = build_report(snap)
    text = render_markdown(rep) if fmt == "md" else render_html(rep, build_charts(snap))
    if out is None and fmt == "html":
        base = Path(path)
        out = str((base if base.is_dir() else base.parent) / "report.html")
    if out is None or out == "-":
        sys.stdout.write(text)
        return 0
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    atomic_write(Path(out), text.encode())
    print(out)
    return 0
