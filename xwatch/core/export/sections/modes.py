"""The report's section of every mode's isolation: what was removed from each phase's
environment (the other modes' traces) and what the workloads' maps showed of the
libraries the modes look for (``Mode.libraries``), with the legend of the verdicts it
shows (``modes.verdicts``). Each mode's own sections live in its package
(``Mode.report_sections``)."""

from __future__ import annotations

from xwatch.core.engine.snapshot import SessionSnapshot
from xwatch.core.export.render.model import Section, Table
from xwatch.core.modes import registry, verdicts


def isolation_section(snap: SessionSnapshot) -> Section | None:
    """What was removed from each phase's environment, and what the maps showed."""
    rows = []
    removed = []
    for p in snap.phases:
        iso = p.isolation
        if iso is None:
            continue
        for r in iso.removed:
            removed.append([p.name, f"`{r.name}`", str(r.why)])
        for name, w in iso.workloads.items():
            rows.append([p.name, name, str(w.verdict), ", ".join(w.libraries) or "none",
                         str(w.origin or "-")])
    if not rows and not removed:
        return None
    looked = " and ".join(lib for m in registry.modes() if (lib := m.libraries))
    s = Section("Isolation: each mode's environment, proven")
    s.paragraphs.append("Each phase starts from the user's environment minus the other modes' "
                        "traces; once each workload ran, its /proc/PID/maps (and its "
                        f"children's) was read for {looked}. "
                        + verdicts.legend(r[2] for r in rows))
    if removed:
        s.tables.append(("Removed", Table(["phase", "variable", "why"], removed)))
    if rows:
        s.tables.append(("Proof", Table(["phase", "workload", "verdict", f"{looked} mapped",
                                         "came from"], rows)))
    return s
