"""The report's evidence of the modes: the XSched install's version and policy, the
XSched engagement per workload (what the shim logged, xserver's queues), the XSched
preflight, each phase's isolation (what was removed, what the maps showed), and the MPS
engagement; each with the legend of the verdicts it shows (``modes.verdicts``)."""

from __future__ import annotations

import msgspec
from msgspec import UNSET

from xwatch.core import model as M
from xwatch.core.engine.snapshot import SessionSnapshot
from xwatch.core.export.render.model import Section, Table
from xwatch.core.modes import verdicts


def xsched_version(xs: M.Xsched) -> str:
    """"XSched 1.2.0" as the install said (a snapshot from before versions were read:
    "XSched version not recorded")."""
    if xs.version is UNSET:
        return "XSched version not recorded"
    return f"XSched {xs.version}" if xs.version else \
        f"XSched version unknown ({xs.version_source or 'no XSchedConfig.cmake'})"


def policy_label(xs: M.Xsched) -> str:
    """"HPF (1)": the policy with the install's own number for it, when recorded."""
    num = xs.policy_number
    return f"{xs.policy}" + (f" ({num})" if num is not None and num is not UNSET else "")


def engagement_section(snap: SessionSnapshot) -> Section | None:
    """XSched engagement per workload: its status, scheduler, queues and the polls
    that saw them ready or suspended (None without an XSched phase)."""
    xs_rows = []
    for p in snap.phases:
        xs = p.xsched
        if not xs:
            continue
        for name, info in xs.workloads.items():
            st = info.stats
            xs_rows.append([p.name, name, str(info.status), str(info.scheduler),
                            f"{st.max_queues} (last {st.queues})",
                            f"{st.ready}/{st.polls}",
                            f"{st.suspended}/{st.polls}",
                            "; ".join(info.warnings) or "-"])
    if xs_rows:
        x = Section("XSched engagement (evidence, not settings)")
        x.paragraphs.append("scheduler = what the shim logged; ready/suspended = polls of "
                            "xserver's /xqueues in which this workload had a queue ready / "
                            "suspended. " + verdicts.legend(r[2] for r in xs_rows))
        listen = next((p.xsched.listen for p in snap.phases
                       if p.xsched is not None and p.xsched.listen), None)
        if listen:
            x.paragraphs.append(f"Note: {listen}.")
        x.tables.append(("", Table(["phase", "workload", "status", "scheduler", "queues max",
                                    "ready", "suspended", "warnings"], xs_rows)))
        return x
    return None


def preflight_section(snap: SessionSnapshot) -> Section | None:
    rows = []
    for p in snap.phases:
        for v in p.preflight.verdicts if p.preflight is not None else []:
            rows.append([p.name, f"{v.device} / {v.stream}", ", ".join(v.workloads),
                         str(v.status), str(v.detail) + (" (cached)" if v.cached else "")])
    if not rows:
        return None
    s = Section("XSched preflight")
    s.paragraphs.append("Before each XSched phase, a few seconds of tiny GPU work ran under the "
                        "shim with each workload's XSched environment, on a created and on the "
                        "default stream (stream 'graph': the same work captured once as a CUDA "
                        "graph and replayed, for workloads that capture graphs). A crash, hang "
                        "or 'not-scheduled' on the stream kind a workload uses fails the phase "
                        "before its model loads; 'crashed-at-exit' (the probe ran engaged to its "
                        "end, then died while exiting) lets it go on, warned.")
    s.paragraphs.append(verdicts.legend(r[3] for r in rows))
    s.tables.append(("", Table(["phase", "device / stream", "for", "verdict", "detail"], rows)))
    for p in snap.phases:
        lv = p.preflight.leave if p.preflight is not None else UNSET
        if isinstance(lv, M.ProbeLeave):
            s.paragraphs.append(f"**{p.name}** probes' leave: {lv.line()}.")
    return s


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
    s = Section("Isolation: each mode's environment, proven")
    s.paragraphs.append("Each phase starts from the user's environment minus the other modes' "
                        "traces; once each workload ran, its /proc/PID/maps (and its "
                        "children's) was read for XSched libraries. "
                        + verdicts.legend(r[2] for r in rows))
    if removed:
        s.tables.append(("Removed", Table(["phase", "variable", "why"], removed)))
    if rows:
        s.tables.append(("Proof", Table(["phase", "workload", "verdict", "XSched libraries "
                                         "mapped", "came from"], rows)))
    return s


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
