"""The header line and the alert bar.

The header changes with every 2 s snapshot (its clock): it is drawn through the line
API (``LinePanel``), its one line cut into segments once per change. As a ``Static``
each repaint turned it into a ``Content``, wrapped and re-styled it: 1 ms a repaint
on the H100 for one line, as much as the workload table.
"""

from __future__ import annotations

from rich.text import Text

from xwatch.core.engine.causes import clip
from xwatch.core.engine.snapshot import FAILED, STALLED, SessionSnapshot
from xwatch.core.modes import participation
from xwatch.ui.widgets.format import text_key
from xwatch.ui.widgets.lines import LinePanel
from xwatch.ui.widgets.quiet import QuietStatic


class StatusLine(LinePanel):
    """Scenario, mode, phase and its clock, devices, telemetry backend: one line, its
    height 1 (the style's). Wider than the screen, it is cut at a word as a ``Static``
    wraps it (what follows the first line was never seen)."""

    _text: Text | None = None

    def show(self, snap: SessionSnapshot, duration_s: float, replay: str | None,
             paused: bool, metric: str | None = None) -> None:
        """``metric``: the named per-request metric the widgets show (``M``), None for
        the latency."""
        p = snap.current
        t = Text()
        t.append(" xwatch ", style="bold reverse")
        t.append(f" {snap.scenario.name} ", style="bold")
        if replay:
            t.append(" REPLAY ", style="bold black on yellow")
        if p is None:
            t.append(" starting…")
        else:
            style = "bold white on dark_green" if p.mode == "native" else "bold white on blue"
            t.append(f" {p.mode.upper()} ", style=style)
            planned = f"{duration_s:.0f}s" if duration_s != float("inf") else "∞"
            secs = p.elapsed_s
            clock = f"{secs:5.0f}/{planned}" if p.measuring else "loading"
            t.append(f" phase {p.index + 1} {p.name} {clock} [{p.status}] ")
            devs = sorted({str(w.hello.get("device_name")) for w in p.workloads
                           if w.hello.get("device_name")})
            if devs:
                t.append(" · " + ", ".join(devs)[:48], style="cyan")
        tel = snap.telemetry
        t.append(f" · telemetry {tel.backend if tel is not None else 'off'}", style="magenta")
        if metric:  # M: a named per-request metric instead of the latency
            t.append(f" · metric {metric}", style="bold yellow")
        if paused:
            t.append("  CHARTS PAUSED", style="bold yellow")
        self._text = t
        self._put()

    def _put(self) -> None:
        t = self._text
        if t is None:
            return
        width = self.size.width or 80  # before the first layout: redone on resize
        key = (width, text_key(t))
        if key == self._key:
            return  # the same line: no wrap, no repaint
        line = t
        if t.cell_len > width:  # as Static wraps: the first line, its trailing space cut
            line = t.wrap(self.app.console, width)[0]
            line.rstrip()
        self.set_lines([line], key)
        self.plain = t.plain  # the whole line (tests, screen readers), as it was given

    def on_resize(self) -> None:
        self._put()

    def render(self) -> Text:
        """What the line says (the screen is drawn through ``render_line``)."""
        return Text(self.plain)


class AlertBar(QuietStatic):
    """Failures, stalls, the workloads that take no part in the phase's mode (XSched,
    MPS: ``participation.absent``, with what to do) and XSched's other warnings,
    visible on every tab without opening the logs."""

    def show(self, snap: SessionSnapshot) -> None:
        p = snap.current
        lines: list[Text] = []
        if p is not None:
            if p.error:
                lines.append(Text(clip(f"✖ phase {p.name} failed: {p.error}", 400),
                                  style="bold red"))
            for w in p.workloads:
                if w.state == STALLED:
                    why = w.stalls[-1].why if w.stalls else ""
                    lines.append(Text(f"⏸ {w.name} STALLED since {w.stalled_since or 0:.1f} s: "
                                      f"{why}", style="bold black on yellow"))
                elif w.state == FAILED and w.exit is not None:
                    said = w.exit.describe()
                    t = Text(clip(f"✖ {w.name}: {said}", 300), style="bold red")
                    for ln in w.stderr_tail[-3:]:
                        if ln.strip() and ln.strip() not in said:  # not the cause again
                            t.append("\n    " + clip(ln, 200), style="red")
                    lines.append(t)
                elif w.malformed:
                    lines.append(Text(f"! {w.name}: {w.malformed} malformed event lines ignored",
                                      style="yellow"))
            # who takes no part in the phase's mode, and what to do (the evidence: the
            # XSched tab and the logs); XSched's other warnings as they are
            absent = participation.absent(p)
            told = {(a.mode, a.workload) for a in absent}
            for a in absent:
                lines.append(Text(clip(f"⚠ {a.line()}", 400),
                                  style="yellow" if a.provisional else "bold yellow"))
            for name, info in (p.xsched.workloads if p.xsched is not None else {}).items():
                if ("xsched", name) in told:
                    continue
                for warn in info.warnings:
                    lines.append(Text(clip(f"⚠ XSched {name}: {warn}", 300), style="bold yellow"))
        self.set_display(bool(lines))
        self.plain = ""  # what it says (tests, screen readers)
        if lines:
            t = Text("\n").join(lines)
            self.plain = t.plain
            self.set_content(t, text_key(t), t.plain)
