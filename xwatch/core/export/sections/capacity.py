"""The report's section for ``xwatch capacity``: every candidate's bracket (the highest
load that met the SLO with confidence, the lowest that missed it), its shares of a
dedicated GPU's work with intervals, the consolidation lines, the best candidate where
the intervals separate, each search's loads, and the TOML to paste. The frontier is an
SVG chart in the HTML (``render.charts``)."""

from __future__ import annotations

from xwatch.core.analysis.capacity.lines import (
    bracket_text,
    consolidation,
    share_text,
    toml_lines,
)
from xwatch.core.engine.snapshot import SessionSnapshot
from xwatch.core.export.render.model import Section, Table


def capacity_section(snap: SessionSnapshot) -> Section | None:
    rec = snap.capacity
    if rec is None:
        return None
    slo = rec.slo
    s = Section("Capacity")
    state = "Decided" if rec.decided else "Not decided within the budget" if rec.final \
        else "Running"
    s.paragraphs.append(f"**{state}**: {slo.workload} {slo.metric} < {slo.latency_ms:g} ms, "
                        f"load from {rec.rates[0]:g} to {rec.rates[1]:g} req/s; {rec.runs} "
                        f"runs over {rec.rounds} rounds in {rec.seconds / 60:.1f} min.")
    rows = [[r.candidate, str(r.runs), bracket_text(r),
             "1 (itself)" if r.dedicated else share_text(r.high_share),
             "-" if r.dedicated else share_text(r.low_share),
             "-" if r.dedicated else share_text(r.total), r.status, r.reason]
            for r in rec.records]
    s.tables.append((f"Candidates ({rec.intervals})", Table(
        ["candidate", "runs", "bracket (req/s)", f"{slo.workload} capacity share",
         "LOW throughput share", "GPUs of work", "status", "why"], rows)))
    lines = consolidation(rec)
    if rec.best is not None:
        lines.append(f"Best: {rec.best} (its GPUs of work lie above every other candidate's "
                     "with confidence).")
    elif sum(1 for r in rec.records if not r.dedicated) > 1:
        lines.append("Best: none named: the candidates' intervals overlap.")
    if rec.low_workloads and rec.low_alone.estimate is not None:
        lines.append(f"{' and '.join(rec.low_workloads)} alone: "
                     f"{share_text(rec.low_alone)} samples/s.")
    if lines:
        s.paragraphs.append("  \n".join(lines))
    loads = [[r.candidate, f"{ld.rate:g}", str(ld.runs),
              share_text(ld.slo_metric), share_text(ld.low), ld.verdict]
             for r in rec.records for ld in r.loads]
    if loads:
        s.tables.append(("Loads probed (the SLO metric's interval over runs)", Table(
            ["candidate", "req/s", "runs", f"{slo.metric} (ms)", "LOW samples/s", "verdict"],
            loads)))
    toml = toml_lines(rec)
    if toml:
        s.code = "\n".join(toml)
    return s
