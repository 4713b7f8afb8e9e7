"""Braille line charts drawn straight into styled segments.

``Figure`` collects what a chart shows (lines, horizontal and vertical marks, ticks,
limits, a title, a centred message) through a small subset of plotext's method names,
so the chart widgets read as before; ``render_figure`` lays it out for a size and
returns one list of ``Segment`` per terminal row.

Why not plotext: plotext builds a character matrix, joins it into an ANSI string, and
rich then parses that string back into styled text (about 19 ms per chart on the H100,
a third of the dashboard's event-loop time). Drawing the dots here and cutting each row
into one segment per run of a colour does the same job in a few milliseconds.

Each terminal cell holds 2 x 4 braille dots; a cell takes the colour of the last line
drawn through it (as plotext does). Values outside the limits are clipped to the edge.
The legend takes rows of its own between the title and the plot (plotext drew it over
the top-left corner of the data).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.color import Color, ColorParseError
from rich.segment import Segment
from rich.style import Style

_DOT = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))  # [column][row] within a cell
_ALIASES = {"orange": "dark_orange"}  # plotext colour names rich does not know
_STYLES: dict[str | None, Style] = {}


def style_of(color: str | None) -> Style:
    """A rich Style for a plotext-style colour name (unknown names: no colour)."""
    st = _STYLES.get(color)
    if st is None:
        try:
            st = Style(color=Color.parse(_ALIASES.get(color or "", color or "default")))
        except ColorParseError:
            st = Style()
        _STYLES[color] = st
    return st


@dataclass
class Figure:
    """What one chart shows; the widgets fill it, ``render_figure`` draws it."""

    title_text: str = ""
    lines: list[tuple[list[float], list[float], str | None, str]] = field(default_factory=list)
    hlines: list[tuple[float, str]] = field(default_factory=list)
    vlines: list[tuple[float, str]] = field(default_factory=list)
    texts: list[tuple[str, float, float]] = field(default_factory=list)
    x_lim: tuple[float, float] | None = None
    y_lim: tuple[float, float] | None = None
    y_ticks: tuple[list[float], list[str]] | None = None
    x_label: str = ""

    # the plotext names the chart widgets use
    def clear_data(self) -> None:
        self.lines, self.hlines, self.vlines, self.texts = [], [], [], []

    def clear_figure(self) -> None:
        self.clear_data()
        self.title_text, self.x_label = "", ""
        self.x_lim = self.y_lim = self.y_ticks = None

    def title(self, text: str) -> None:
        self.title_text = text

    def plot(self, xs: Sequence[float], ys: Sequence[float], label: str | None = None,
             color: str = "default", marker: str = "braille") -> None:
        self.lines.append((list(xs), list(ys), label, color))

    def hline(self, y: float, color: str = "default") -> None:
        self.hlines.append((y, color))

    def vline(self, x: float, color: str = "default") -> None:
        self.vlines.append((x, color))

    def text(self, msg: str, x: float, y: float, alignment: str = "center") -> None:
        self.texts.append((msg, x, y))

    def xlim(self, lo: float, hi: float) -> None:
        self.x_lim = (lo, hi)

    def ylim(self, lo: float, hi: float) -> None:
        self.y_lim = (lo, hi)

    def yticks(self, ticks: Sequence[float], labels: Sequence[str]) -> None:
        self.y_ticks = (list(ticks), list(labels))

    def xlabel(self, text: str) -> None:
        self.x_label = text


def nice_ticks(lo: float, hi: float, most: int) -> list[float]:
    """At most ``most`` round values (1, 2, 2.5, 5 x 10^k apart) within [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo or most < 1:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / max(1, most - 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9)
    ticks = []
    k = first
    while k * step <= hi + 1e-9 * step:
        ticks.append(k * step)
        k += 1
    return ticks[:most] if ticks else [lo]


def tick_label(v: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step))) if step > 0 else 0
    if step > 0 and not math.isclose((step / 10 ** math.floor(math.log10(step))) % 1, 0,
                                     abs_tol=1e-9):
        decimals += 1  # 2.5 x 10^k
    return f"{v:.{decimals}f}"


def _limits(values: list[float], lim: tuple[float, float] | None) -> tuple[float, float]:
    if lim is not None and lim[1] > lim[0]:
        return lim
    vs = [v for v in values if math.isfinite(v)]
    lo, hi = (min(vs), max(vs)) if vs else (0.0, 1.0)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def legend_layout(entries: Sequence[tuple[str, str]], width: int, most: int
                  ) -> list[list[Segment]]:
    """The legend as at most ``most`` rows of ``▬ label`` entries in their colours,
    packed left to right; what does not fit ends in ``+N more``. No rows when there is
    nothing to name or no room."""
    if not entries or most < 1 or width < 8:
        return []
    rows: list[list[Segment]] = []
    used = 0
    row: list[Segment] = []
    for k, (label, c) in enumerate(entries):
        text = f"▬ {label}  "
        if used + len(text.rstrip()) > width and row:
            if len(rows) + 1 == most:  # the last row: say how many are left out
                left = len(entries) - k
                while row and used + len(f"+{left} more") > width:
                    used -= len(row.pop().text)
                    left += 1
                row.append(Segment(f"+{left} more", Style(dim=True)))
                rows.append(row)
                return rows
            rows.append(row)
            row, used = [], 0
        row.append(Segment(text[:width], style_of(c)))
        used += len(text)
    rows.append(row)
    return rows


def render_figure(fig: Figure, width: int, height: int) -> list[list[Segment]]:
    """``fig`` laid out in ``width`` x ``height`` cells: one segment list per row."""
    plain = Style()
    bold = Style(bold=True)
    if width < 8 or height < 3:
        return [[Segment(fig.title_text[:width], bold)]]
    rows: list[list[Segment]] = [[Segment(fig.title_text[:width].center(width), bold)]]
    xs_all = [x for xs, _, _, _ in fig.lines for x in xs]
    ys_all = [y for _, ys, _, _ in fig.lines for y in ys] + [y for y, _ in fig.hlines]
    x0, x1 = _limits(xs_all, fig.x_lim)
    y0, y1 = _limits(ys_all, fig.y_lim)
    show_xlabel = bool(fig.x_label) and height >= 12
    plot_h = height - 1 - 2 - (1 if show_xlabel else 0)  # title, axis, tick labels, label
    # the legend has rows of its own under the title: it never covers a line
    legend_rows = legend_layout([(label, c) for _, _, label, c in fig.lines if label],
                                width, 2 if plot_h >= 12 else 1 if plot_h >= 4 else 0)
    plot_h -= len(legend_rows)
    if plot_h < 1:
        return rows
    rows += legend_rows
    # y ticks: given (a log axis) or round values, at most one every other row
    if fig.y_ticks is not None:
        yt = [(v, lab) for v, lab in zip(*fig.y_ticks) if y0 <= v <= y1]
    else:
        vals = nice_ticks(y0, y1, max(2, plot_h // 2 + 1))
        step = vals[1] - vals[0] if len(vals) > 1 else 1.0
        yt = [(v, tick_label(v, step)) for v in vals]
    label_w = max((len(lab) for _, lab in yt), default=1)
    plot_w = width - label_w - 2  # labels, the axis, one cell to the right
    if plot_w < 2:
        return rows
    dots_w, dots_h = plot_w * 2, plot_h * 4
    mask = [[0] * plot_w for _ in range(plot_h)]
    color: list[list[str | None]] = [[None] * plot_w for _ in range(plot_h)]
    sx = (dots_w - 1) / (x1 - x0)
    sy = (dots_h - 1) / (y1 - y0)

    def dot_x(x: float) -> int:
        return min(dots_w - 1, max(0, round((x - x0) * sx)))

    def dot_y(y: float) -> int:  # 0 = top row of dots
        return min(dots_h - 1, max(0, round((y1 - y) * sy)))

    def put(dx: int, dy: int, c: str) -> None:
        cy, cx = dy >> 2, dx >> 1
        mask[cy][cx] |= _DOT[dx & 1][dy & 3]
        color[cy][cx] = c

    for y, c in fig.hlines:
        if y0 <= y <= y1:
            dy = dot_y(y)
            for dx in range(0, dots_w, 2):
                put(dx, dy, c)
    for x, c in fig.vlines:
        if x0 <= x <= x1:
            dx = dot_x(x)
            for dy in range(0, dots_h, 2):
                put(dx, dy, c)
    for xs, ys, _, c in fig.lines:
        last: tuple[int, int] | None = None
        for x, y in zip(xs, ys):
            if not (math.isfinite(x) and math.isfinite(y)):
                last = None
                continue
            px, py = dot_x(x), dot_y(y)
            if last is None:
                put(px, py, c)
            else:
                lx, ly = last
                n = max(abs(px - lx), abs(py - ly))
                for i in range(1, n + 1):
                    put(lx + round((px - lx) * i / n), ly + round((py - ly) * i / n), c)
            last = (px, py)
    chars = [[chr(0x2800 + m) if m else " " for m in row] for row in mask]
    for msg, tx, ty in fig.texts:  # a centred message (no data) overwrites what is under it
        r = min(plot_h - 1, max(0, round((y1 - ty) / (y1 - y0) * (plot_h - 1))))
        start = max(0, round((tx - x0) / (x1 - x0) * (plot_w - 1)) - len(msg) // 2)
        for j, ch in enumerate(msg[: plot_w - start]):
            chars[r][start + j], color[r][start + j] = ch, None
    tick_rows = {min(plot_h - 1, max(0, round((y1 - v) / (y1 - y0) * (plot_h - 1)))): lab
                 for v, lab in yt}
    for r in range(plot_h):
        lab = tick_rows.get(r)
        segs = [Segment((lab or "").rjust(label_w) + ("┤" if lab is not None else "│"), plain)]
        run_c, run = color[r][0], [chars[r][0]]
        for ch, cc in zip(chars[r][1:], color[r][1:]):
            if cc == run_c:
                run.append(ch)
            else:
                segs.append(Segment("".join(run), style_of(run_c) if run_c else plain))
                run_c, run = cc, [ch]
        segs.append(Segment("".join(run), style_of(run_c) if run_c else plain))
        rows.append(segs)
    # x axis: round ticks, a label under each where it fits
    vals = nice_ticks(x0, x1, max(2, plot_w // 10))
    step = vals[1] - vals[0] if len(vals) > 1 else 1.0
    axis = ["─"] * plot_w
    under = [" "] * (plot_w + label_w + 2)
    free = 0
    for v in vals:
        col = round((v - x0) / (x1 - x0) * (plot_w - 1))
        if not 0 <= col < plot_w:
            continue
        axis[col] = "┬"
        lab = tick_label(v, step)
        at = max(0, label_w + 1 + col - len(lab) // 2)
        if at >= free and at + len(lab) <= len(under):
            under[at:at + len(lab)] = lab
            free = at + len(lab) + 1
    rows.append([Segment(" " * label_w + "└" + "".join(axis), plain)])
    rows.append([Segment("".join(under), plain)])
    if show_xlabel:
        rows.append([Segment(fig.x_label.center(width)[:width], plain)])
    return rows
