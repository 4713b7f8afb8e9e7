"""XSched's dashboard panels, as data the dashboard draws (``modes.contract.View``,
``Lanes``; the core never imports textual): its tab (``Mode.tab_view``: the install,
xserver and policy, the preflight, the attribution of slow requests, each workload's
engagement, queues and scheduler lane, its XQueues), each workload's scheduler lane
under the latency chart (``Mode.lanes``) and calibrate's breakdown on the Compare tab
(``Mode.compare_view``). Styles are rich's style strings."""

from __future__ import annotations

import bisect
from itertools import groupby

from msgspec import UNSET

from xwatch.core import model as M
from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot
from xwatch.core.modes.contract import Lanes, Styled, View
from xwatch.core.xsched.engagement import EXIT_CRASH
from xwatch.core.xsched.report.sections import policy_label, xsched_version

#: a poll's state of a workload's queues: its mark and style
LANE = {"suspended": ("█", "red"), "running": ("▆", "green"), "idle": ("·", "dim"),
        "none": (" ", "")}


def legend() -> Styled:
    """The lane's marks explained."""
    out: list[tuple[str, str]] = [("lane: ", "dim")]
    for state, label in (("suspended", "suspended  "), ("running", "running/ready  "),
                         ("idle", "idle  ")):
        ch, sty = LANE[state]
        out += [(ch, sty), (" " + label, "dim")]
    out.append(("(one mark per /xqueues poll)\n", "dim"))
    return tuple(out)


def marks(info: M.XschedWorkload, width: int) -> Styled:
    """One mark per poll, the last ``width`` polls; a run of equal states is one piece
    (its marks change every poll: a piece per mark made it the costliest panel)."""
    out = []
    for state, run in groupby(s for _, s in info.lane[-width:]):
        ch, sty = LANE.get(state, ("?", ""))
        out.append((ch * sum(1 for _ in run), sty))
    return tuple(out)


def slow_marks(info: M.XschedWorkload, ends: list[float], width: int) -> str:
    """'▲' under the lane poll nearest to where each slow request ended."""
    times = [float(tp) for tp, _ in info.lane[-width:]]
    out = [" "] * len(times)
    for t_end in ends:
        i = bisect.bisect_left(times, t_end)
        if times and times[0] <= t_end <= times[-1] + 1.0:
            out[min(i, len(times) - 1)] = "▲"
    return "".join(out)


def lanes(p: PhaseSnapshot, width: int) -> Lanes:
    """Each workload's lane in an XSched phase (none in another)."""
    wls = p.xsched.workloads if p.xsched is not None else {}
    return Lanes(tuple((name, info.status, marks(info, width)) for name, info in wls.items()),
                 legend())


def tab(snap: SessionSnapshot, configured: str | None) -> View:
    """Engagement per workload, its XQueues, and the scheduler lane."""
    from xwatch.core.analysis.gpu.attribution import attribute

    p = snap.current
    xs = p.xsched if p is not None else None
    if p is None or xs is None:
        return View((("XSched is not active in this phase. ", ""),
                     (configured or "Press x to restart the workloads under XSched.", "")),
                    head_style="bold")
    t: list[tuple[str, str]] = []
    poll = f"  poll {xs.poll_ms} ms" if xs.poll_ms else ""
    # older snapshots: no version
    ver = f"{xsched_version(xs)}  " if xs.version is not UNSET else ""
    t.append((f"{ver}xserver {' '.join(xs.xserver_cmd or [])}  "
              f"policy {policy_label(xs)}{poll}\n", "bold"))
    if xs.xserver_exit:
        t.append((f"✖ {xs.xserver_exit.reason}\n", "bold red"))
    if xs.listen:
        t.append((f"note: {xs.listen}\n", "dim"))
    for v in p.preflight.verdicts if p.preflight is not None else []:
        ok = v.status == "engaged"
        t.append((f"preflight {v.device}/{v.stream}: ", "bold"))
        t.append((f"{v.status}", "green" if ok else "bold yellow"
                  if v.status == EXIT_CRASH else "bold red"))
        t.append((f" {v.detail}" + (" (cached)" if v.cached else "") + "\n", "dim"))
    slo = snap.scenario.slo
    att = attribute(p, slo.latency_ms if slo else None, slo.workload if slo else None)
    if att is not None:
        t.append((att.sentence() + "\n", "bold cyan"))
    for name, info in xs.workloads.items():
        status = info.status
        style = "bold green" if status == "engaged" else "bold red" \
            if status not in ("pending",) else "yellow"
        st = info.stats
        t.append((f"{name:<10} ", "bold"))
        t.append((f"{status:<15}", style))
        t.append((f" scheduler={info.scheduler} queues={st.queues} "
                  f"(max {st.max_queues}) "
                  f"ready {st.ready}/{st.polls} suspended "
                  f"{st.suspended}/{st.polls}\n", ""))
        t.append(("  lane ", ""))
        t += marks(info, 90)
        t.append(("\n", ""))
        if att is not None and name == att.workload and att.requests:
            t.append(("  slow ", ""))
            t.append((slow_marks(info, [r[0] for r in att.requests], 90), "bold red"))
            t.append((f"  ▲ = a request over {att.threshold_ms:.1f} ms ended here\n", "dim"))
        for w in info.warnings:
            t.append((f"  ⚠ {w}\n", "yellow"))
    t += legend()
    rows = tuple((name, f"{q.handle:x}", str(q.level), str(q.threshold), str(q.batch_size),
                  str(q.ready), str(q.suspended))
                 for name, info in xs.workloads.items() for q in info.queues[:8])
    return View(tuple(t), header=("workload", "handle", "level", "thr", "batch", "ready",
                                  "suspended"), rows=rows)


def calibration(snap: SessionSnapshot) -> View | None:
    """The calibrate decomposition of HIGH's latency, when the session has calibrate
    phases (``C`` in the dashboard, or ``xwatch calibrate``)."""
    from xwatch.core.analysis.calibrate import calibrate

    cal = calibrate(snap)
    if cal is None:
        return None

    def f(v: float) -> str:
        return "-" if v != v else f"{v:.2f}"

    return View(
        ((f"Calibration of {cal.workload}: ", ""), (cal.verdict + "\n", "bold cyan")),
        head_style="bold",
        header=("", "alone native", "alone XSched", "together native", "together XSched",
                "shim overhead", "contention", "XSched recovers"),
        rows=tuple((r.pct, f(r.alone_native), f(r.alone_xsched), f(r.together_native),
                    f(r.together_xsched), f(r.shim_overhead), f(r.contention),
                    f(r.recovered)) for r in cal.rows),
        foot=(("ms; shim overhead = alone XSched - alone native; contention = together "
               "native - alone native; recovers = together native - together XSched. "
               f"LOW samples/s {f(cal.low_native_sps)} -> {f(cal.low_xsched_sps)}", ""),),
        foot_style="dim", key=str(cal.rows))
