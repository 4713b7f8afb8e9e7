"""Text panels: GPU/host telemetry, the answer, the kernel lane, and what each mode
shows as data (``modes.contract.View``, ``Lanes``): its tab (``ViewPanel``), its panel
on the Compare tab (``CalibrationPanel``: calibrate's breakdown) and the scheduler lanes
under the latency chart (``LaneStrip``)."""

from __future__ import annotations

import time
from functools import cache
from typing import Any

from msgspec import UNSET
from rich.console import Group
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

from xwatch.core import model as M
from xwatch.core.analysis.answer.stored import answer_lines, with_answer
from xwatch.core.analysis.gpu.gpus import gpu_roles, latest_samples
from xwatch.core.analysis.gpu.kernels import analyze, capture_cost, occupancy
from xwatch.core.engine.causes import clip
from xwatch.core.engine.snapshot import CaptureSnapshot, PhaseSnapshot, SessionSnapshot
from xwatch.core.modes import registry
from xwatch.core.modes.contract import Lanes, Styled, View
from xwatch.ui.widgets.format import pct, text_key
from xwatch.ui.widgets.lines import LinePanel
from xwatch.ui.widgets.quiet import QuietStatic


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


def styled(pieces: Styled, style: str = "") -> Text:
    """A mode's styled text (``modes.contract.Styled``) as rich ``Text``, ``style``
    over all of it."""
    t = Text(style=style)
    for text, sty in pieces:
        t.append(text, style=sty)
    return t


def draw(view: View) -> tuple[Text, Any, tuple[object, ...]]:
    """A mode's ``View``: its text, what a panel shows (the text, the table, the text
    under it) and the key of its content."""
    t = styled(view.head, view.head_style)
    parts: list[Any] = [t]
    if view.header:
        tab = Table(*view.header, box=None, pad_edge=False)
        for row in view.rows:
            tab.add_row(*row)
        parts.append(tab)
    if view.foot:
        parts.append(styled(view.foot, view.foot_style))
    return t, Group(*parts) if len(parts) > 1 else t, (text_key(t), view.rows, view.key)


class ViewPanel(QuietStatic):
    """A mode's tab drawn from what the mode says of a snapshot (``Mode.tab_view``):
    the app names a mode's tab ``<mode>-panel``."""

    plain = ""

    def show(self, snap: SessionSnapshot, configured: str | None) -> None:
        mode = registry.get((self.id or "").removesuffix("-panel"))
        if mode.tab_view is None:
            return
        t, shown, key = draw(registry.load_ref(mode.tab_view)(snap, configured))
        self.plain = t.plain  # what the panel says, for tests and screen readers
        self.set_content(shown, key, t.plain if shown is t else None)


class CalibrationPanel(QuietStatic):
    """Each mode's panel on the Compare tab (``Mode.compare_view``: XSched's calibrate
    decomposition of HIGH's latency, when the session has calibrate phases)."""

    plain = ""

    def show(self, snap: SessionSnapshot) -> None:
        views = [v for m in registry.modes() if m.compare_view is not None
                 if (v := registry.load_ref(m.compare_view)(snap)) is not None]
        self.set_display(bool(views))
        if not views:
            return
        t, shown, key = draw(views[0])
        self.plain = t.plain
        self.set_content(shown, key)


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


@cache
def _style(style: str) -> Style:
    return Style.parse(style) if style else Style()


class LaneStrip(LinePanel):
    """The scheduler lane of every workload, under the latency chart (``Mode.lanes``:
    XSched's). Its marks change every poll: it draws through the line API
    (``LinePanel``). On several GPUs, the lanes of one GPU: the one ``g`` picked, else
    the one whose HIGH has the worst P99 (its room holds a GPU's copies, not sixteen
    lanes)."""

    def show(self, snap: SessionSnapshot, gpu: int | None = None) -> None:
        p = snap.current
        width = max(10, self.size.width - 26)
        found = [ln for m in registry.modes() if m.lanes is not None and p is not None
                 if (ln := registry.load_ref(m.lanes)(p, width)).lanes]
        self.set_display(bool(found))
        if not found or p is None:
            return
        lanes: Lanes = found[0]
        wls = lanes.lanes
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
            wls = tuple(lane for lane in wls if lane[0] in on)
            head = Text(f"lanes of GPU {gpu}{why} · g: another GPU", style="dim")
            lines.append(head)
            key.append(head.plain)
        for name, status, marks in wls:
            lane = [Segment(text, _style(sty)) for text, sty in marks]
            head = Text(f"{name[:10]:<10} {status[:13]:<13} ",
                        style="green" if status == "engaged" else "bold red"
                        if status not in ("pending",) else "yellow")
            lines.append([*head.render(self.app.console, end=""), *lane])
            key.append((head.plain, marks))
        legend = styled(lanes.legend)
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
