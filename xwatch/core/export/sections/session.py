"""The report's account of the session itself: the scenario, the environment it ran
in (host, devices, the modes' daemons and settings), the phases, what failed and how
to run it again."""

from __future__ import annotations

import shlex

from msgspec import UnsetType

from xwatch.core import model as M
from xwatch.core.analysis.phases import label, shared_lines
from xwatch.core.engine.causes import collapse
from xwatch.core.engine.snapshot import SessionSnapshot, WorkloadSnapshot
from xwatch.core.export.render.model import Section, Table, num
from xwatch.core.export.sections.boxes import box_cell, has_boxes
from xwatch.core.modes import registry

#: a failed workload's variables shown in the report, beside each mode's own
#: (``Mode.env_prefixes``)
SHOWN_ENV = ("LD_", "HIP_", "CUDA_")


def joined_note(j: M.Joined | UnsetType) -> str:
    """How a joined daemon (another session's) reads in the environment table."""
    if not isinstance(j, M.Joined):
        return ""
    change = f"; this session set its policy {j.policy_change}" if j.policy_change else ""
    return (f" (another session's, joined: pid {j.pid}, user {j.user}; not started or "
            f"stopped by this session{change})")


def scenario_section(snap: SessionSnapshot) -> Section:
    """What ran: the scenario, its workloads and its objective."""
    scen = snap.scenario
    s = Section("Scenario")
    s.paragraphs.append(f"**{scen.name}**: {scen.description or '(no description)'}  \n"
                        f"Source: `{scen.source}`; planned {scen.duration_s:g} s per phase; "
                        f"window for live percentiles {scen.window_s:g} s.")
    s.tables.append(("", Table(
        ["workload", "priority", "what", "batch", "target rate", "device", "stream"],
        [[w.name, str(w.priority), w.describe() if w.model else "`" + " ".join(
            w.command or w.server or ()) + "`", str(w.batch),
          f"{w.rate:g}/s" if w.rate else "closed loop", w.device if w.model else "-",
          w.stream if w.model else "-"]
         for w in scen.workloads])))
    if scen.slo:
        s.paragraphs.append(f"Objective (SLO): {scen.slo.workload} P{scen.slo.percentile:g} < "
                            f"{scen.slo.latency_ms:g} ms.")
    return s


def environment_section(snap: SessionSnapshot) -> Section:
    """Where it ran: host, devices, torch, driver, telemetry, and what each mode says of
    each phase (its daemons and settings)."""
    env = snap.environment
    tel = snap.telemetry
    e = Section("Environment")
    hellos = [w.hello for p in snap.phases for w in p.workloads if w.hello]
    gpus = sorted({str(h.get("device_name")) for h in hellos if h.get("device_name")})
    torch_v = sorted({str(h.get("torch")) for h in hellos if h.get("torch")})
    rows = [["host", f"{env.host} ({env.os}, {env.cpus} CPUs)" if env else "? (?, ? CPUs)"],
            ["python (xwatch)", env.python if env else "?"],
            ["device(s) used", ", ".join(gpus) or "-"],
            ["torch", ", ".join(torch_v) or "-"],
            ["driver", str(tel.info.driver or "-") if tel is not None else "-"],
            ["telemetry", f"{tel.backend} ({tel.reason})" if tel is not None else "off"]]
    # each mode's lines of each phase (``Mode.report_environment``): rows, then tables
    own = [registry.load_ref(m.report_environment) for m in registry.modes()
           if m.report_environment is not None]
    lines = [fn(p) for p in snap.phases for fn in own]
    rows += [r for mode_rows, _ in lines for r in mode_rows]
    e.tables.append(("", Table(["what", "value"], rows)))
    e.tables += [t for _, tables in lines for t in tables]
    return e


def phases_section(snap: SessionSnapshot) -> Section:
    """Each phase: mode, status, start, measured time, kernel captures, and who
    shared its daemon."""
    ph = Section("Phases")
    rows = [[label(p), p.mode, p.status, p.started_at[:19].replace("T", " "),
             num(p.elapsed_s, 1),
             ", ".join(f"{c.seconds:g} s at {c.t:.1f} s" for c in p.captures if c.id) or "-"]
            for p in snap.phases]
    header = ["phase", "mode", "status", "started (UTC)", "measured (s)", "kernel captures"]
    if has_boxes(snap):  # a plan over a Ray cluster's boxes (--ray): where each ran
        header.insert(2, "box")
        for row, p in zip(rows, snap.phases, strict=True):
            row.insert(2, box_cell(p))
    ph.tables.append(("", Table(header, rows)))
    ph.paragraphs += [f"**{p.name}** {line}." for p in snap.phases for line in shared_lines(p)]
    for p in snap.phases:  # run again once: xserver died before its first measured second
        if p.retried is not None:
            died = p.retried.xserver_exit
            when = f"{died.t:.1f} s into its first attempt, " if died is not None else ""
            ph.paragraphs.append(
                f"**{p.name}** ran twice: xserver died {when}before its first measured second "
                f"({died.reason if died is not None else p.retried.error}); xserver was started "
                "again and these are the second attempt's numbers"
                + (" (it died again: the phase failed)." if p.status == "failed" else "."))
    return ph


def failures_section(snap: SessionSnapshot) -> Section | None:
    """Failed phases and workloads: why, their last stderr lines, the environment
    in force."""
    fails = []
    for p in snap.phases:
        if p.status == "failed" and p.error:
            fails.append(f"**{p.name}**: {p.error}")
        # the copies of a workload that failed alike (over the GPUs) are said once
        alike: dict[tuple[str, str, tuple[str, ...], tuple[str, ...]],
                    list[WorkloadSnapshot]] = {}
        for w in p.workloads:
            if w.state == "failed" or (w.exit and not w.exit.ran_to_end):
                said = w.exit.describe() if w.exit else w.state
                tail = tuple(collapse(ln for ln in w.stderr_tail[-12:] if ln.strip()))
                head = tuple(collapse(ln for ln in w.stderr_head if ln.strip()))
                alike.setdefault((said, w.error or "", head, tail), []).append(w)
        for (said, error, head, tail), ws in alike.items():
            who = ws[0].name if len(ws) == 1 else \
                f"{len(ws)} workloads ({', '.join(w.name for w in ws)})"
            lines = [f"**{p.name} / {who}**: {said}"]
            if error:
                lines.append(f"error: `{' / '.join(collapse(error.splitlines()))}`")
            fails.append("  \n".join(lines))
            if head:  # what it said as it started, before what it ended with
                fails.append("stderr (first lines):\n\n" + "\n".join("    " + ln for ln in head))
            if tail:
                fails.append("stderr (last lines):\n\n" + "\n".join("    " + ln for ln in tail))
            prefixes = (*(x for m in registry.modes() for x in m.env_prefixes), *SHOWN_ENV)
            for w in ws:
                shown = {k: v for k, v in w.launch.env.items() if k.startswith(prefixes)}
                if shown:
                    fails.append((f"{w.name}: " if len(ws) > 1 else "") + "environment in "
                                 "force: " + ", ".join(f"`{k}={v}`"
                                                       for k, v in sorted(shown.items())))
    if fails:
        return Section("Failures", paragraphs=fails)
    return None


def reproduce_section(snap: SessionSnapshot) -> Section:
    """The command line that runs the session again."""
    scen = snap.scenario
    env = snap.environment
    repro = Section("Reproduce")
    argv = env.argv if env else []
    cmd = "xwatch " + " ".join(shlex.quote(a) for a in argv[1:]) if len(argv) > 1 else \
        f"xwatch run {shlex.quote(scen.source)} --headless --duration {scen.duration_s:g} " \
        "--export OUT"
    repro.code = cmd
    return repro
