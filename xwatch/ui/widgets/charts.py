"""Line charts fed from session snapshots (never from raw events), drawn by ``plot``.

- ``LatencyChart``: per-second P50 and P99 of every workload over the session,
  phase starts marked, the SLO's line and share within (on the chart of the metric the
  SLO judges only, labelled with it: "chat TTFT ≤200ms 99.0%"); on several GPUs the roll-up
  (HIGH's worst and best GPU) until ``g`` picks one GPU.
- ``ThroughputChart``: low-priority samples/s per second (the cost side); on several
  GPUs their total.
- ``CdfChart``: the top-priority workload's latency CDF, this phase vs the one before.
- ``UtilChart``: GPU utilization (or host CPU) over the session.

Over a Ray cluster's boxes (``run --ray``) a chart carries notes (``note``): a line for
each box whose phase runs, until its numbers arrive; alone, in place of empty axes,
while no phase has ended.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from xwatch.core.analysis.gpu.gpus import gpu_groups, gpu_roles, rollup_series
from xwatch.core.analysis.metric_view import judges
from xwatch.core.analysis.metric_view import label as metric_label
from xwatch.core.analysis.timeline import SessionClock, phase_offsets, workload_series
from xwatch.core.engine.snapshot import SessionSnapshot
from xwatch.ui.widgets.plot import Figure, render_figure

COLORS = ("cyan", "red", "green", "orange", "magenta", "blue", "yellow", "white")
VISIBLE_S = 300.0
_LOG_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000,
              5000, 10000, 20000, 50000)


def _segments(pts: Sequence[tuple[float, float]]) -> list[tuple[list[float], list[float]]]:
    out: list[tuple[list[float], list[float]]] = [([], [])]
    for x, y in pts:
        if math.isfinite(y):
            out[-1][0].append(x)
            out[-1][1].append(y)
        elif out[-1][0]:
            out.append(([], []))
    return [s for s in out if s[0]]


class _Chart(Widget):
    """A chart widget: ``show`` fills ``self.plt`` (a ``Figure``); the rows are drawn
    once per change or resize, then served through the line API."""

    DEFAULT_CSS = "_Chart { width: 1fr; height: 1fr; }"
    KIND = "chart"  # the title over notes alone (no data yet)

    def __init__(self) -> None:
        super().__init__()
        self.plt = Figure()
        #: lines under the chart (``note``); alone while it has no data
        self.notes: tuple[str, ...] = ()
        self.draws = 0  # how often the rows were drawn (tests, benchmarks)
        self._version = 0
        self._built: tuple[object, ...] | None = None
        self._strips: list[Strip] = []
        self._blank = Strip.blank(0)

    def render_lines(self, crop: Region) -> list[Strip]:
        self._build()  # once per repaint, not once per row
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        if 0 <= y < len(self._strips):
            return self._strips[y]
        return self._blank

    def _build(self) -> None:
        """The rows as strips, drawn again when the data, the size or the style changed;
        each strip carries the widget's style already (Textual adds nothing to it)."""
        width, height = self.size
        style = self.rich_style
        key = (self._version, width, height, style)
        if key == self._built:
            return
        self._built = key
        self.draws += 1
        self._blank = Strip.blank(width, style)
        notes = self._note_strips(width, style)
        if notes and not self.plt.lines:  # no data yet: the notes alone, no empty axes
            title = Segment((self.plt.title_text or self.KIND)[:width].center(width),
                            Style(bold=True))
            self._strips = [Strip([title]).crop_extend(0, width, style).apply_style(style),
                            self._blank, *notes]
            return
        notes = notes[:max(1, height // 3)]  # under data: a third of the rows at most
        try:
            self._strips = [Strip(r, width) for r in render_figure(
                self.plt, width, height - len(notes), style)] + notes
        except Exception as e:  # a chart that cannot draw says so, the app goes on
            row = [Segment(f"(chart not drawable: {type(e).__name__}: {e})", Style(dim=True))]
            self._strips = [Strip(row).crop_extend(0, width, style).apply_style(style)]

    def _note_strips(self, width: int, style: Style) -> list[Strip]:
        """The notes, each wrapped to ``width`` less a cell each side (its wrapped lines
        indented)."""
        cyan = Style(color="cyan")
        return [Strip([Segment(" " + ln, cyan)]).crop_extend(0, width, style).apply_style(style)
                for note in self.notes
                for ln in textwrap.wrap(note, max(width - 2, 8), subsequent_indent="  ")]

    def note(self, lines: Sequence[str]) -> None:
        """Lines under the chart (over a fleet: each running box, until its phase's
        numbers arrive), or alone with the chart's title where it has no data yet."""
        notes = tuple(lines)
        if notes != self.notes:
            self.notes = notes
            self._version += 1
            self.refresh()

    def _begin(self, title: str) -> None:
        self._version += 1  # drawn again at the next repaint
        plt = self.plt
        plt.clear_figure()
        plt.title(title)

    def _lines(self, series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
               x_from: float | None = None, marker: str = "braille") -> float:
        top = 0.0
        for i, (label, pts) in enumerate(series):
            first = True
            for xs, ys in _segments([(x, y) for x, y in pts if x_from is None or x >= x_from]):
                self.plt.plot(xs, ys, label=label if first else None,
                              color=COLORS[i % len(COLORS)], marker=marker)
                first = False
                top = max(top, max(ys))
        return top

    def _marks(self, snap: SessionSnapshot, offsets: Sequence[float], x_from: float) -> None:
        for o in offsets[1:]:
            if o >= x_from:
                self.plt.vline(o, "white")

    def _annotations(self, snap: SessionSnapshot, offsets: Sequence[float],
                     x_from: float) -> None:
        """Live XSched changes (priority, policy, config) as yellow marks."""
        for o, p in zip(offsets, snap.phases):
            for a in p.annotations:
                x = o + a.t  # seconds after the phase start
                if x >= x_from:
                    self.plt.vline(x, "yellow")

    def show_message(self, title: str, msg: str) -> None:
        self._begin(title)
        self.plt.text(msg, 0.5, 0.5, alignment="center")
        self.plt.xlim(0, 1)
        self.plt.ylim(0, 1)
        self.refresh()


class LatencyChart(_Chart):
    """Every workload's per-second P50 and P99; on several GPUs (``--gpus``) the
    roll-up by default (HIGH's P99 on the worst and the best GPU each second, P50 on
    the worst), and one GPU's copies after ``g``."""

    KIND = "latency"

    gpu: int | None = None  # multi-GPU runs: only this GPU's copies (``g`` cycles)

    def show(self, snap: SessionSnapshot) -> None:
        if not snap.phases:
            return self.show_message("latency", "waiting for the first phase")
        offsets = phase_offsets(snap.phases)
        end = offsets[-1] + max(snap.phases[-1].elapsed_s, 1.0)
        x_from = max(0.0, end - VISIBLE_S)
        # the SLO's line and share within: only on the chart of the metric it judges
        slo = snap.scenario.slo if judges(snap.scenario, snap.metric) else None
        roles = gpu_roles(snap.scenario.workloads)
        rolled = len(roles.gpus) > 1 and self.gpu is None
        # M: a named per-request metric ("TTFT ms"), by default the SLO's
        what = f"{metric_label(snap.metric)} ms" if snap.metric else "latency ms"
        if rolled:
            title = f"HIGH {what}, per second · {len(roles.gpus)} GPUs · g: one GPU"
        else:
            title = f"{what}, per second P50 · P99"
            if self.gpu is not None:
                title += f" · GPU {self.gpu}"
        cur = snap.current
        if slo and cur:
            w = cur.workload(slo.workload)
            if w and w.goodput is not None and not math.isnan(w.goodput):
                named = f"{metric_label(slo.named)} " if slo.named else ""
                title += (f" · {slo.workload} {named}≤{slo.latency_ms:g}ms "
                          f"{w.goodput * 100:.1f}%")
        self._begin(title)
        if rolled:
            highs = list(roles.high.values())
            series = [(label, rollup_series(snap.phases, offsets, highs, k, how))
                      for label, k, how in (("P99 worst GPU", "p99", "max"),
                                            ("P99 best GPU", "p99", "min"),
                                            ("P50 worst GPU", "p50", "max"))]
        else:
            series = [(f"{w.name} {k}", workload_series(snap.phases, offsets, w.name, k))
                      for w in snap.scenario.workloads for k in ("p50", "p99")
                      if self.gpu is None or w.gpu == self.gpu]
        ys = [y for _, pts in series for x, y in pts if x >= x_from and math.isfinite(y) and y > 0]
        log = bool(ys) and max(ys) / min(ys) > 20  # e.g. HIGH 5 ms next to LOW 500 ms
        if log:  # log10 by hand: plotext's own log axis breaks on small plots
            self.plt.title(title + " · log")
            series = [(label, [(x, math.log10(y) if y > 0 else math.nan) for x, y in pts])
                      for label, pts in series]
        top = self._lines(series, x_from)
        if slo:
            level = math.log10(slo.latency_ms) if log else slo.latency_ms
            self.plt.hline(level, "red")
            top = max(top, level)
        self._marks(snap, offsets, x_from)
        self._annotations(snap, offsets, x_from)
        if log:
            lo, hi = math.log10(min(ys)), max(top, math.log10(max(ys)))
            ticks = [t for t in _LOG_TICKS if lo - 0.1 <= math.log10(t) <= hi + 0.1]
            rows = max(2, (self.size.height - 4) // 2)  # two ticks never share a row
            if len(ticks) > rows:
                ticks = [t for t in ticks if math.log10(t).is_integer()]
            while len(ticks) > rows:
                ticks = ticks[::2]
            self.plt.yticks([math.log10(t) for t in ticks], [f"{t:g}" for t in ticks])
            self.plt.ylim(lo - 0.1, hi + 0.1)
        else:
            self.plt.ylim(0, top * 1.1 if top > 0 else 1)
        self.plt.xlabel("session s")
        self.refresh()


class ThroughputChart(_Chart):
    """The lower-priority workloads' samples/s (the price of protecting HIGH); on
    several GPUs their total over all GPUs, or one GPU's after ``g``."""

    KIND = "throughput"

    gpu: int | None = None

    def show(self, snap: SessionSnapshot) -> None:
        if not snap.phases:
            return self.show_message("throughput", "waiting")
        offsets = phase_offsets(snap.phases)
        end = offsets[-1] + max(snap.phases[-1].elapsed_s, 1.0)
        x_from = max(0.0, end - VISIBLE_S)
        roles = gpu_roles(snap.scenario.workloads)
        if len(roles.gpus) > 1 and self.gpu is None:
            names = [n for g in roles.gpus for n in roles.lows.get(g, ())]
            self._begin(f"low-priority samples/s, all {len(roles.gpus)} GPUs (the price)")
            top = self._lines([("LOW total", rollup_series(snap.phases, offsets, names,
                                                           "samples", "sum"))], x_from)
            self._marks(snap, offsets, x_from)
            self.plt.ylim(0, top * 1.1 if top > 0 else 1)
            self.refresh()
            return
        ws = sorted((w for w in snap.scenario.workloads
                     if self.gpu is None or w.gpu == self.gpu), key=lambda w: w.priority_value)
        lows = [w for w in ws if w.priority_value < ws[-1].priority_value] or ws[:1]
        self._begin("low-priority samples/s (the price)"
                    + (f" · GPU {self.gpu}" if self.gpu is not None else ""))
        top = self._lines([(w.name, workload_series(snap.phases, offsets, w.name, "samples"))
                           for w in lows], x_from)
        self._marks(snap, offsets, x_from)
        self.plt.ylim(0, top * 1.1 if top > 0 else 1)
        self.refresh()


class CdfChart(_Chart):
    """The top-priority workload's latency CDF, this phase against the one before; on
    several GPUs the HIGH copy with the worst P99 (or the GPU ``g`` picked)."""

    KIND = "distribution"

    gpu: int | None = None

    def show(self, snap: SessionSnapshot) -> None:
        ws = sorted(snap.scenario.workloads, key=lambda w: -w.priority_value)
        if not snap.phases or not ws:
            return self.show_message("distribution", "waiting")
        name, why = ws[0].name, ""
        roles = gpu_roles(snap.scenario.workloads)
        if len(roles.gpus) > 1:
            if self.gpu is not None and self.gpu in roles.high:
                name = roles.high[self.gpu]
            elif snap.phases[-1].workloads:
                p99 = {w.name: w.phase.p99 or 0.0 for w in snap.phases[-1].workloads
                       if w.name in roles.high.values() and w.phase.p99 is not None}
                if p99:
                    name, why = max(p99, key=lambda n: p99[n]), " (worst P99)"
        phases = [p for p in snap.phases if (w := p.workload(name)) and w.cdf]
        shown = phases[-2:]
        what = metric_label(snap.metric) if snap.metric else "latency"
        if not shown:
            return self.show_message(f"{name} {what} CDF", "no requests yet")
        self._begin(f"{name}{why} {what} CDF: " + " vs ".join(p.name for p in shown))
        series = []
        for p in shown:
            w = p.workload(name)
            assert w is not None
            series.append((p.name, [(v, f * 100) for v, f in w.cdf]))
        self._lines(series)
        slo = snap.scenario.slo
        if slo and slo.workload == name and judges(snap.scenario, snap.metric):
            self.plt.vline(slo.latency_ms, "red")
        self.plt.ylim(0, 100)
        self.plt.xlabel("ms")
        self.refresh()


class UtilChart(_Chart):
    """Utilization per telemetry device; with more than two devices the mean, lowest
    and highest over them each second (or the device of the GPU ``g`` picked)."""

    KIND = "utilization"

    gpu: int | None = None

    def show(self, snap: SessionSnapshot) -> None:
        tel = snap.telemetry
        samples = tel.samples if tel is not None else []
        if tel is None or not samples or not snap.phases:
            return self.show_message("utilization",
                                     f"telemetry: {tel.backend if tel is not None else 'off'}")
        offsets = phase_offsets(snap.phases)
        gpu = tel.backend in ("nvml", "amdsmi")
        metric = "util_pct" if gpu else "cpu_pct"
        by_dev: dict[str, list[tuple[float, float]]] = {}
        clock = SessionClock(snap.phases, offsets)
        for s in samples:
            if not s.ours:
                continue
            x = clock(s.t)
            v = s.metrics.get(metric)
            if x is not None:
                by_dev.setdefault(s.device, []).append(
                    (x, float(v) if v is not None else math.nan))
        label = {"nvml": "GPU util % (a kernel ran)", "amdsmi": "GPU gfx activity %"}.get(
            tel.backend, "host CPU % (no GPU telemetry)")
        end = offsets[-1] + max(snap.phases[-1].elapsed_s, 1.0)
        series = sorted(by_dev.items())
        if self.gpu is not None and snap.current is not None:
            dev = next((g.telemetry_device for g in gpu_groups(snap.current, tel)
                        if g.gpu == self.gpu), "")
            series = [(d, pts) for d, pts in series if d == dev]
            label += f" · GPU {self.gpu}" + ("" if series else ": no telemetry device matched")
        elif len(series) > 2:
            label += f" · {len(series)} devices"
            series = _spread(series)
        self._begin(label)
        self._lines(series, max(0.0, end - VISIBLE_S))
        self.plt.ylim(0, 100)
        self.refresh()


def _spread(series: list[tuple[str, list[tuple[float, float]]]]
            ) -> list[tuple[str, list[tuple[float, float]]]]:
    """Many devices' samples as three lines: the mean, lowest and highest device in
    each whole second of the session axis."""
    bins: dict[int, dict[str, list[float]]] = {}
    for dev, pts in series:
        for x, v in pts:
            if v == v:
                bins.setdefault(int(x), {}).setdefault(dev, []).append(v)
    mean, lo, hi = [], [], []
    last = None
    for sec in sorted(bins):
        if last is not None and sec > last + 1:  # a gap (between phases): no line across
            for out in (mean, lo, hi):
                out.append((last + 1.0, math.nan))
        per_dev = [sum(v) / len(v) for v in bins[sec].values()]
        mean.append((sec + 0.5, sum(per_dev) / len(per_dev)))
        lo.append((sec + 0.5, min(per_dev)))
        hi.append((sec + 0.5, max(per_dev)))
        last = sec
    return [("mean", mean), ("lowest", lo), ("highest", hi)]
