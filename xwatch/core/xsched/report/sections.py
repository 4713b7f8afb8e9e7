"""XSched's report sections (``Mode.report_sections``): the engagement per workload
(what the shim logged, xserver's queues), the preflight, calibrate's breakdown of the
latency, the attribution of slow requests to what xserver's polls showed; and its
lines of the environment (``Mode.report_environment``): the install's version and
policy, each phase's xserver and the workloads' XSched variables. Each with the legend
of the verdicts it shows (``modes.verdicts``)."""

from __future__ import annotations

from msgspec import UNSET

from xwatch.core import model as M
from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot
from xwatch.core.export.render.model import Section, Table, num
from xwatch.core.export.sections.session import joined_note
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
    num_ = xs.policy_number
    return f"{xs.policy}" + (f" ({num_})" if num_ is not None and num_ is not UNSET else "")


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


def calibrate_section(snap: SessionSnapshot) -> Section | None:
    """``xwatch calibrate``: HIGH alone and together, native and under XSched, and what
    the shim, the contention and XSched each did to its latency."""
    from xwatch.core.analysis.calibrate import calibrate

    cal = calibrate(snap)
    if cal is None:
        return None
    s = Section(f"Calibration: where {cal.workload}'s latency goes")
    s.paragraphs.append(f"**{cal.verdict}**")
    s.paragraphs.append("shim overhead = alone under XSched - alone native; contention = "
                        "together native - alone native; XSched recovers = together native - "
                        "together under XSched (positive = XSched helps). All in ms.")
    s.tables.append(("", Table(
        ["percentile", "alone native", "alone XSched", "together native", "together XSched",
         "shim overhead", "contention", "XSched recovers"],
        [[r.pct, num(r.alone_native), num(r.alone_xsched), num(r.together_native),
          num(r.together_xsched), num(r.shim_overhead), num(r.contention), num(r.recovered)]
         for r in cal.rows])))
    s.paragraphs.append(f"Low-priority throughput together: {num(cal.low_native_sps, 1)} "
                        f"samples/s native, {num(cal.low_xsched_sps, 1)} under XSched "
                        f"({num(cal.low_price_pct, 1)}%).")
    return s


def attribution_section(snap: SessionSnapshot) -> Section | None:
    """Each slow high-priority request, attributed to what the /xqueues polls taken
    while it was open showed."""
    from xwatch.core.analysis.gpu.attribution import CATEGORIES, attribute

    slo = snap.scenario.slo
    rows = []
    for p in snap.phases:
        a = attribute(p, slo.latency_ms if slo else None, slo.workload if slo else None)
        if a is None:
            continue
        rows.append([p.name, a.workload, f"> {a.threshold_ms:.2f} ms ({a.threshold_kind})"]
                    + [str(a.counts[c]) for c in a.counts] + [a.sentence()])
    if not rows:
        return None
    s = Section("Tail attribution under XSched")
    s.paragraphs.append("For each high-priority request slower than the SLO (else the phase "
                        "P99): what the /xqueues polls taken while it was open showed (the "
                        "nearest poll within 0.15 s when none fell inside it).")
    s.tables.append(("", Table(["phase", "workload", "slow =", *[f"while {c}" if c != "unknown"
                                                              else c for c in CATEGORIES],
                                "summary"], rows)))
    return s


def environment(p: PhaseSnapshot) -> tuple[list[list[str]], list[tuple[str, Table]]]:
    """A phase's XSched in the report's environment: the install, its policy and
    xserver (a row), the workloads' XSched variables (a table)."""
    xs = p.xsched
    if not xs:
        return [], []
    # older snapshots: as before
    ver = f"{xsched_version(xs)}, " if xs.version is not UNSET else ""
    row = [f"XSched ({p.name})", f"{ver}root `{xs.root}`, "
           f"policy {policy_label(xs)}, xserver "
           f"`{' '.join(xs.xserver_cmd or [])}`" + joined_note(xs.joined)]
    env_rows = []
    for name, wenv in xs.env.items():
        env_rows.append([name, "<br>".join(f"`{k}={v}`" for k, v in sorted(wenv.items())
                                           if k.startswith(("XSCHED_", "LD_")))])
    return [row], [(f"XSched settings in {p.name}", Table(["workload", "variables"], env_rows))]
