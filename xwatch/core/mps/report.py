"""MPS's part of the report (``Mode.report_sections``, ``Mode.report_environment``):
each phase's control daemon, its clients' settings and the proof that every workload
joined it, with the legend of the verdicts it shows (``modes.verdicts``); and a daemon
joined from another session, in the environment. It sits at the export stage (it
renders as the report does); the declaration (``xwatch.core.mps.MODE``) names it by
``module:attr`` reference."""

from __future__ import annotations

import msgspec

from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot
from xwatch.core.export.render.model import Section, Table
from xwatch.core.export.sections.session import joined_note
from xwatch.core.modes import verdicts


def mps_section(snap: SessionSnapshot) -> Section | None:
    rows = []
    notes = []
    for p in snap.phases:
        m = p.mps
        if m is None:
            continue
        pf = m.preflight
        # the daemon's exit as the snapshot's JSON has it
        dx = msgspec.to_builtins(m.daemon_exit) if m.daemon_exit else None
        notes.append(f"**{p.name}**: daemon `{' '.join(m.daemon_cmd)}` (pid "
                     f"{m.daemon_pid}), pipe directory `{m.pipe_dir}`, servers "
                     f"{m.servers or '-'}; preflight {pf.verdict if pf else '-'}"
                     + (f" ({pf.detail})" if pf and pf.detail else "")
                     + (f"; daemon exit {dx}" if dx else ""))
        for name, w in m.workloads.items():
            env = m.env.get(name) or {}
            rows.append([p.name, name, str(w.status), str(w.server or "-"),
                         ", ".join(f"`{k}={v}`" for k, v in sorted(env.items())
                                   if k.startswith("CUDA_MPS_") and "DIRECTORY" not in k),
                         "; ".join(w.warnings) or "-"])
    if not notes:
        return None
    s = Section("MPS engagement (evidence, not settings)")
    s.paragraphs += notes
    s.paragraphs.append(verdicts.legend([r[2] for r in rows]
                                        + [p.mps.preflight.verdict for p in snap.phases
                                           if p.mps is not None and p.mps.preflight]))
    s.tables.append(("", Table(["phase", "workload", "status", "server", "client settings",
                                "warnings"], rows)))
    return s


def environment(p: PhaseSnapshot) -> tuple[list[list[str]], list[tuple[str, Table]]]:
    """A daemon of another session that a phase joined (a row)."""
    if p.mps and p.mps.joined:
        return [[f"MPS ({p.name})", "control daemon" + joined_note(p.mps.joined)]], []
    return [], []
