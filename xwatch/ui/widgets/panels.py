"""Text panels: GPU/host telemetry, XSched engagement and queues."""

from __future__ import annotations

import time
from itertools import groupby
from typing import Any

from msgspec import UNSET
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

from xwatch.core import model as M
from xwatch.core.analysis.answer.stored import answer_lines, with_answer
from xwatch.core.analysis.calibrate import calibrate
from xwatch.core.analysis.gpu.attribution import attribute
from xwatch.core.analysis.gpu.gpus import gpu_roles, latest_samples
from xwatch.core.analysis.gpu.kernels import analyze, capture_cost, occupancy
from xwatch.core.engine.causes import clip
from xwatch.core.engine.snapshot import CaptureSnapshot, PhaseSnapshot, SessionSnapshot
from xwatch.core.xsched.engagement import EXIT_CRASH
from xwatch.core.xsched.report.sections import policy_label, xsched_version
from xwatch.ui.widgets.format import pct, text_key
from xwatch.ui.widgets.lines import LinePanel
from xwatch.ui.widgets.quiet import QuietStatic

LANE = {"suspended": ("█", "red"), "running": ("▆", "green"), "idle": ("·", "dim"),
        "none": (" ", "")}


def _v(v: float | None, unit: str, digits: int = 0) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}{unit}"


class GpuPanel(LinePanel):
    """The telemetry backend, its cost, and each GPU's latest sample (per-process
    figures under it); eight GPUs or more, a line each. Its figures change with every
    2 s snapshot: drawn through the line API, wrapped here at the panel's width (as a
    ``Static`` it cost 2 ms a repaint on the H100, a tenth of the dashboard's CPU).
    It keeps the tallest height it had (per-process lines come and go), so a line
    more or less asks for no layout pass of the screen."""

    _tallest = 0

    def _put(self, t: Text) -> None:
        width = max(10, self.size.width or 80)
        key = (width, text_key(t))
        if key == self._key:  # unchanged (most snapshots of a quiet GPU): no wrap
            return
        lines: list[Text] = list(t.wrap(self.app.console, width))
        self._tallest = max(self._tallest, len(lines))
        lines += [Text()] * (self._tallest - len(lines))
        self.set_lines(lines, key)

    def show(self, snap: SessionSnapshot) -> None:
        tel = snap.telemetry
        t = Text()
        backend = tel.backend if tel is not None else "off"
        t.append(f"telemetry: {backend}", style="bold magenta")
        if tel is not None and tel.reason:
            t.append(f"  ({tel.reason})", style="dim")
        for name, why in (tel.rejected if tel is not None else {}).items():
            # what to do (before the exception's own text), cut at a word, not mid-word
            t.append(f"\n  not {name}: {clip(why.split('; ', 1)[0], 100)}", style="dim")
        cost = tel.poll_cost_ms if tel is not None else M.PollCost()
        pcost = tel.proc_poll_cost_ms if tel is not None and tel.proc_poll_cost_ms \
            else M.PollCost()
        every = tel.interval_s if tel is not None else 0.5
        # older snapshots: no proc_interval_s (the default then)
        proc_every = tel.proc_interval_s if tel is not None and \
            tel.proc_interval_s is not UNSET else 2
        latest = latest_samples(tel)
        if len(latest) > 2 and cost.median is not None:  # one line for the costs
            t.append(f"  poll {cost.median:.2f} ms/{every:g} s"
                     + (f", per-process {pcost.median:.1f} ms/{proc_every:g} s"
                        if pcost.median is not None else ""), style="dim")
        elif cost.median is not None:
            t.append(f"\n  poll {cost.median:.2f} ms median, p99 {cost.p99:.2f} ms "
                     f"every {every:g} s", style="dim")
        if len(latest) <= 2 and pcost.median is not None:
            t.append(f"\n  + per-process {pcost.median:.2f} ms median every "
                     f"{proc_every:g} s", style="dim")
        pids = {w.pid: w.name for p in snap.phases[-1:] for w in p.workloads if w.pid}
        # ages: against the clock while live, against the newest sample in a replay
        newest = max((x.t for x in latest.values()), default=0.0)
        now = time.monotonic() if snap.taken_at > 0 else newest

        def age(ts: object) -> str:
            return "" if not isinstance(ts, (int, float)) else f"{max(0.0, now - ts):.0f} s old"

        if len(latest) > 2:  # eight GPUs: a line each, so the charts keep their room
            for dev, s in latest.items():
                t.append("\n" + _device_line(dev, s, age(s.t)))
            if backend == "nvml":
                t.append("\n  util = a kernel ran; per-process figures: in the snapshot",
                         style="dim italic")
            self._put(t)
            return
        for dev, s in latest.items():
            m = s.metrics
            mark = "" if s.ours else " (not ours)"
            t.append(f"\n{dev} {s.name}{mark}", style="bold")
            t.append(f"  {age(s.t)}", style="dim")
            if "util_pct" in m:
                t.append(f"\n  util {pct(m.get('util_pct'))}  mem-bw {pct(m.get('mem_util_pct'))}"
                         f"  mem {_v(m.get('mem_used_mib'), '')}/{_v(m.get('mem_total_mib'), ' MiB')}"
                         f"\n  power {_v(m.get('power_w'), ' W')}  temp {_v(m.get('temp_c'), '°C')}"
                         f"  clock {_v(m.get('clock_mhz'), ' MHz')}")
            else:
                t.append(f"\n  cpu {pct(m.get('cpu_pct'))}  mem {_v(m.get('mem_used_mib'), '')}"
                         f"/{_v(m.get('mem_total_mib'), ' MiB')}")
            if s.procs:
                t.append(f"\n  per process ({age(s.procs_t)}):", style="dim")
            for pid, pm in s.procs.items():
                who = pids.get(int(pid), pid)
                parts = [f"{k.replace('_', ' ')} {_v(v, '', 0)}" for k, v in pm.items()]
                t.append(f"\n  {who}: " + ", ".join(parts), style="cyan")
        if backend == "nvml":
            t.append("\n  util = share of time a kernel ran, not how full the GPU is",
                     style="dim italic")
        self._put(t)


def _device_line(dev: str, s: M.Sample, age: str) -> str:
    """One device in one line (many devices): util, memory bandwidth, memory, power,
    temperature, clock, age of the sample."""
    m = s.metrics
    mark = "" if s.ours else " (not ours)"
    used, total = m.get("mem_used_mib"), m.get("mem_total_mib")
    mem = "n/a" if used is None or total is None else f"{used / 1024:.1f}/{total / 1024:.0f}G"
    if "util_pct" in m:
        return (f"{dev:<5} util {pct(m.get('util_pct')):>4} bw {pct(m.get('mem_util_pct')):>4}"
                f" mem {mem:>10} {_v(m.get('power_w'), 'W'):>5} {_v(m.get('temp_c'), '°C'):>4}"
                f" {_v(m.get('clock_mhz'), 'MHz'):>7} {age}{mark}")
    return f"{dev:<5} cpu {pct(m.get('cpu_pct')):>4} mem {mem:>10} {age}{mark}"


class CalibrationPanel(QuietStatic):
    """The calibrate decomposition of HIGH's latency (Compare tab), when the session
    has calibrate phases (``C`` in the dashboard, or ``xwatch calibrate``)."""

    plain = ""

    def show(self, snap: SessionSnapshot) -> None:
        cal = calibrate(snap)
        self.set_display(cal is not None)
        if cal is None:
            return
        t = Text(f"Calibration of {cal.workload}: ", style="bold")
        t.append(cal.verdict + "\n", style="bold cyan")
        tab = Table("", "alone native", "alone XSched", "together native", "together XSched",
                    "shim overhead", "contention", "XSched recovers", box=None, pad_edge=False)

        def f(v: float) -> str:
            return "-" if v != v else f"{v:.2f}"

        for r in cal.rows:
            tab.add_row(r.pct, f(r.alone_native), f(r.alone_xsched), f(r.together_native),
                        f(r.together_xsched), f(r.shim_overhead), f(r.contention),
                        f(r.recovered))
        t2 = Text("ms; shim overhead = alone XSched - alone native; contention = together "
                  "native - alone native; recovers = together native - together XSched. "
                  f"LOW samples/s {f(cal.low_native_sps)} -> {f(cal.low_xsched_sps)}",
                  style="dim")
        from rich.console import Group
        self.plain = t.plain
        self.set_content(Group(t, tab, t2), (text_key(t), str(cal.rows)))


class AnswerPanel(QuietStatic):
    """The comparison's answer over runs (Compare tab): each mode against the first
    native one, judged over paired runs, against the recorded noise floor for one run
    each, or plainly unjudged. The session's stored answer (its host settles it as
    phases end); seen through another metric (``M``), that view's own answer, computed
    only when a phase starts or ends."""

    plain = ""
    _key: tuple[object, ...] = ()

    def show(self, snap: SessionSnapshot) -> None:
        adv, cap = snap.advice, snap.capacity
        # the stored answer itself: its host settles it just after a phase ends, and a
        # refresh between the two must not keep the older one
        key = (tuple((p.name, p.status) for p in snap.phases if p.ended_at is not None),
               adv.runs if adv is not None else None, adv.final if adv is not None else None,
               (cap.runs, cap.final) if cap is not None else None, snap.metric, snap.answer)
        if key == self._key:
            return
        self._key = key
        view = snap.metric is not None  # ``M``: the view's answer, not the session's
        lines = answer_lines(with_answer(snap) if view else snap) \
            if adv is None and cap is None else []
        self.set_display(bool(lines) or adv is not None or cap is not None)
        if cap is not None:  # a capacity session: its progress, table and consolidation
            from xwatch.core.analysis.capacity.lines import capacity_lines

            t = Text("\n".join(capacity_lines(cap)))
            self.plain = t.plain
            self.set_content(t, (text_key(t),))
            return
        if adv is not None:  # an advise session: its answer, table and frontier
            from xwatch.core.plans.advise import advice_lines

            t = Text("\n".join(advice_lines(adv)))
            self.plain = t.plain
            self.set_content(t, (text_key(t),))
            return
        if not lines:
            return
        t = Text("Answer (finished phases): ", style="bold")
        for i, line in enumerate(lines):
            style = "bold cyan" if i < len(lines) - 1 and " vs " in line else "dim"
            t.append(line + "\n", style=style)
        t.append("a: repeat the last A/B 3 more times, interleaved (intervals over runs)",
                 style="dim")
        self.plain = t.plain
        self.set_content(t, (text_key(t),))


def _legend(t: Text) -> None:
    t.append("lane: ", style="dim")
    for state, label in (("suspended", "suspended  "), ("running", "running/ready  "),
                         ("idle", "idle  ")):
        ch, sty = LANE[state]
        t.append(ch, style=sty)
        t.append(" " + label, style="dim")
    t.append("(one mark per /xqueues poll)\n", style="dim")


_LANE_STYLES = {state: Style.parse(sty) if sty else Style() for state, (_, sty) in LANE.items()}


def lane_segments(info: M.XschedWorkload, width: int) -> list[Segment]:
    """One mark per poll, the last ``width`` polls; a run of equal states is one
    segment (its marks change every poll: a span per mark made it the costliest panel)."""
    out: list[Segment] = []
    for state, run in groupby(s for _, s in info.lane[-width:]):
        ch = LANE.get(state, ("?", ""))[0]
        out.append(Segment(ch * sum(1 for _ in run), _LANE_STYLES.get(state)))
    return out


def lane_text(info: M.XschedWorkload, width: int) -> Text:
    """``lane_segments`` as a Text (the XSched tab's panel)."""
    return Text.assemble(*((seg.text, seg.style or "") for seg in lane_segments(info, width)))


def slow_marks(info: M.XschedWorkload, ends: list[float], width: int) -> Text:
    """'▲' under the lane poll nearest to where each slow request ended."""
    import bisect

    times = [float(tp) for tp, _ in info.lane[-width:]]
    marks = [" "] * len(times)
    for t_end in ends:
        i = bisect.bisect_left(times, t_end)
        if times and times[0] <= t_end <= times[-1] + 1.0:
            marks[min(i, len(times) - 1)] = "▲"
    return Text("".join(marks), style="bold red")


class LaneStrip(LinePanel):
    """The scheduler lane of every workload, under the latency chart (XSched only).
    Its marks change every poll: it draws through the line API (``LinePanel``). On
    several GPUs, the lanes of one GPU: the one ``g`` picked, else the one whose HIGH
    has the worst P99 (its room holds a GPU's copies, not sixteen lanes)."""

    def show(self, snap: SessionSnapshot, gpu: int | None = None) -> None:
        p = snap.current
        wls = p.xsched.workloads if p is not None and p.xsched is not None else {}
        self.set_display(bool(wls))
        if not wls or p is None:
            return
        width = max(10, self.size.width - 26)
        lines: list[Text | list[Segment]] = []
        key: list[object] = [width]
        roles = gpu_roles(snap.scenario.workloads)
        if len(roles.gpus) > 1:
            why = ""
            if gpu is None:
                p99 = {g: v for g, n in roles.high.items()
                       if (w := p.workload(n)) is not None and (v := w.phase.p99) is not None}
                gpu = max(p99, key=lambda g: p99[g]) if p99 else roles.gpus[0]
                why = " (worst HIGH P99)"
            on = {w.name for w in p.workloads if w.gpu == gpu}
            wls = {n: info for n, info in wls.items() if n in on}
            head = Text(f"lanes of GPU {gpu}{why} · g: another GPU", style="dim")
            lines.append(head)
            key.append(head.plain)
        for name, info in wls.items():
            status = info.status
            lane = lane_segments(info, width)
            head = Text(f"{name[:10]:<10} {status[:13]:<13} ",
                        style="green" if status == "engaged" else "bold red"
                        if status not in ("pending",) else "yellow")
            lines.append([*head.render(self.app.console, end=""), *lane])
            key.append((head.plain, tuple((s.text, s.style) for s in lane)))
        legend = Text()
        _legend(legend)
        legend.rstrip()
        lines.append(legend)
        self.set_lines(lines, tuple(key))


_BLOCKS = " ▁▂▃▄▅▆▇█"


def latest_capture(snap: SessionSnapshot) -> tuple[PhaseSnapshot, CaptureSnapshot] | None:
    """(phase, capture) of the newest capture that has traces."""
    for p in reversed(snap.phases):
        for cap in reversed(p.captures):
            if cap.traces:
                return p, cap
    return None


class KernelLane(QuietStatic):
    """The newest kernel capture (``t``): one row of kernel occupancy per workload,
    HIGH's requests as brackets (the slowest in red), and what it shows. ``z`` zooms
    onto the slowest requests in turn."""

    zoom = 0  # 0: the whole window; k: around HIGH's k-th slowest request
    _cache: tuple[Any, Text, Any] | None = None  # (key, lanes and numbers, analysis)

    def show(self, snap: SessionSnapshot) -> None:
        found = latest_capture(snap)
        pending = any(c.id and not c.traces and not c.errors
                      for p in snap.phases[-1:] for c in p.captures)
        self.set_display(found is not None or pending)
        if found is None:
            if pending:
                t = Text("kernel capture running (torch.profiler in every built-in workload)...",
                         style="yellow")
                self.set_content(t, text_key(t), t.plain)
            return
        p, cap = found
        width = max(10, self.size.width - 14)
        # the analysis and the lanes only change with the capture, the zoom or the width
        # (about 60 ms for an H100 capture): drawn once, not on every refresh
        key = (p.index, cap.id, tuple(cap.traces), self.zoom, width)
        if self._cache is None or self._cache[0] != key:
            a = analyze(cap, {w.name: w.priority for w in p.workloads})
            if a is None:
                return
            self._cache = (key, self._lanes(cap, a, width), a)
        _, lanes, a = self._cache
        t = lanes.copy()
        hw = p.workload(a.high)
        if hw is not None:  # the capture's cost keeps changing for a second or two after it
            c = capture_cost(hw.series, cap)
            t.append(f"\ncapture cost on {a.high}: P50 {c['before_p50_ms']:.2f} -> "
                     f"{c['during_p50_ms']:.2f} ms, worst {c['during_max_ms']:.1f} ms "
                     "(profiler teardown)", style="dim yellow")
        self.set_content(t, (text_key(t), self.zoom), t.plain)

    def _lanes(self, cap: CaptureSnapshot, a: Any, width: int) -> Text:
        lo, hi, what = a.t0, a.t1, "whole window"
        if self.zoom and a.slowest:
            b = a.slowest[(self.zoom - 1) % len(a.slowest)]
            s0 = a.t0 + b.start
            pad = max(b.span_ms / 1000 * 0.5, 0.002)
            lo, hi = s0 - pad, s0 + b.span_ms / 1000 + pad
            what = f"slowest #{(self.zoom - 1) % len(a.slowest) + 1}: request {b.seq}, " \
                   f"{b.span_ms:.2f} ms"
        t = Text(f"kernels, capture {a.capture} ({cap.seconds:g} s) · {what} · "
                 f"{(hi - lo) * 1000:.1f} ms wide · z: zoom\n", style="bold")
        traces = cap.traces
        for i, n in enumerate((a.high, *a.lows)):
            occ = occupancy(traces[n], lo, hi, width)
            t.append(f"{n[:11]:<12}", style="bold")
            t.append("".join(_BLOCKS[min(8, max(1, round(x * 8)))] if x > 0 else " "
                             for x in occ) + "\n",
                     style="cyan" if i == 0 else "magenta")
        slow = {b.seq for b in a.slowest[:3]}
        row = [" "] * width
        hot = [False] * width
        for seq, s0, e0 in traces[a.high].get("requests") or []:
            if e0 < lo or s0 > hi:
                continue
            i0 = max(0, int((s0 - lo) / (hi - lo) * width))
            i1 = min(width - 1, int((e0 - lo) / (hi - lo) * width))
            for i in range(i0, i1 + 1):
                row[i] = "─"
                hot[i] = hot[i] or seq in slow
            row[i0], row[i1] = "[", "]"
        t.append(f"{'requests':<12}")
        for ch, h in zip(row, hot):
            t.append(ch, style="bold red" if h else "dim")
        low = ", ".join(a.lows) or "-"
        t.append(f"\n{a.high}: kernels {a.stretch:.2f}x their time alone, "
                 f"{a.overlap_share * 100:.0f}% alongside {low}; per request "
                 f"{a.queue_ms_mean:.2f} ms to the first kernel, {a.gap_ms_mean:.2f} ms with no "
                 f"kernel of it running; {low} idle {a.low_quiet_share * 100:.0f}% of that time; "
                 f"clock check {a.aligned * 100:.0f}%", style="dim")
        return t


class XschedPanel(QuietStatic):
    """Engagement per workload, its XQueues, and the scheduler lane."""

    plain = ""

    def show(self, snap: SessionSnapshot, configured: str | None) -> None:
        p = snap.current
        xs = p.xsched if p is not None else None
        if p is None or xs is None:
            msg = Text("XSched is not active in this phase. ", style="bold")
            msg.append(configured or "Press x to restart the workloads under XSched.")
            self.plain = msg.plain
            self.set_content(msg, text_key(msg), msg.plain)
            return
        t = Text()
        poll = f"  poll {xs.poll_ms} ms" if xs.poll_ms else ""
        # older snapshots: no version
        ver = f"{xsched_version(xs)}  " if xs.version is not UNSET else ""
        t.append(f"{ver}xserver {' '.join(xs.xserver_cmd or [])}  "
                 f"policy {policy_label(xs)}{poll}\n", style="bold")
        if xs.xserver_exit:
            t.append(f"✖ {xs.xserver_exit.reason}\n", style="bold red")
        if xs.listen:
            t.append(f"note: {xs.listen}\n", style="dim")
        for v in p.preflight.verdicts if p.preflight is not None else []:
            ok = v.status == "engaged"
            t.append(f"preflight {v.device}/{v.stream}: ", style="bold")
            t.append(f"{v.status}", style="green" if ok else "bold yellow"
                     if v.status == EXIT_CRASH else "bold red")
            t.append(f" {v.detail}" + (" (cached)" if v.cached else "") + "\n",
                     style="dim")
        slo = snap.scenario.slo
        att = attribute(p, slo.latency_ms if slo else None, slo.workload if slo else None)
        if att is not None:
            t.append(att.sentence() + "\n", style="bold cyan")
        for name, info in xs.workloads.items():
            status = info.status
            style = "bold green" if status == "engaged" else "bold red" \
                if status not in ("pending",) else "yellow"
            st = info.stats
            t.append(f"{name:<10} ", style="bold")
            t.append(f"{status:<15}", style=style)
            t.append(f" scheduler={info.scheduler} queues={st.queues} "
                     f"(max {st.max_queues}) "
                     f"ready {st.ready}/{st.polls} suspended "
                     f"{st.suspended}/{st.polls}\n")
            t.append("  lane ")
            t.append_text(lane_text(info, 90))
            t.append("\n")
            if att is not None and name == att.workload and att.requests:
                t.append("  slow ")
                t.append_text(slow_marks(info, [r[0] for r in att.requests], 90))
                t.append(f"  ▲ = a request over {att.threshold_ms:.1f} ms ended here\n",
                         style="dim")
            for w in info.warnings:
                t.append(f"  ⚠ {w}\n", style="yellow")
        _legend(t)
        tab = Table("workload", "handle", "level", "thr", "batch", "ready", "suspended",
                    box=None, pad_edge=False)
        for name, info in xs.workloads.items():
            for q in info.queues[:8]:
                tab.add_row(name, f"{q.handle:x}", str(q.level), str(q.threshold),
                            str(q.batch_size), str(q.ready), str(q.suspended))
        from rich.console import Group
        self.plain = t.plain  # what the panel says, for tests and screen readers
        rows = [(n, str(q)) for n, info in xs.workloads.items() for q in info.queues[:8]]
        self.set_content(Group(t, tab), (text_key(t), tuple(rows)))
